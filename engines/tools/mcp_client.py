"""Talking to MCP servers through the official ``mcp`` SDK client.

* :func:`list_server_tools` — what a check does: start (stdio) or connect to each server with a time
  limit, initialize, list its tools, close it. A failure is an :class:`McpServerError` naming the server
  and the cause (for a stdio server, the tail of its stderr).
* :class:`McpPool` — what a training process does: one client session per server, reused across
  rollouts, on an event loop of its own in a background thread (TRL calls tools synchronously from its
  rollout loop; verl from worker threads). A server that died is started (or reconnected) again once;
  when that fails too, the pool records a :class:`ToolServerError` and every later call to that server
  raises it at once (the engine then fails the run with cause "tool server error").
* A tool that reports an error (``isError``) raises :class:`McpToolError`: engines hand that back to
  the model as the tool's result, as they do for a Python tool that raises.

The ``mcp`` package is imported only when a server is reached (``import engines`` stays light). It is the
SDK's major version 1 (the one AWorld runs on, see requirements.txt); the client speaks the protocol, so
servers written for either SDK major answer it (a server's own imports need an interpreter that has its SDK).
"""

from __future__ import annotations

import builtins
import asyncio
import atexit
import os
import tempfile
import threading
import time
from contextlib import AsyncExitStack
from datetime import timedelta
from typing import Any, Callable, Iterable

from ..runs.causes import Cause
from .mcp_servers import SSE, STDIO, McpServer
from .mcp_stream_watch import NOT_MCP_TYPES, Watched

STDERR_TAIL_CHARS = 1500
#: the error code the SDK (1.x) gives a request that got no answer within its read timeout (HTTP's 408)
REQUEST_TIMEOUT = 408
#: how long closing one server may take (the SDK: stdin closed, 2 s grace, SIGTERM, 2 s, SIGKILL)
CLOSE_TIMEOUT_S = 10.0


class McpServerError(Exception):
    """A server did not start, answer or list tools. ``str()`` names the server and the cause."""

    def __init__(self, server: str | McpServer, cause: str, hint: str | None = None):
        if isinstance(server, McpServer):  # its secrets scrubbed from the cause (a stderr tail, a library's text)
            cause, server = server.redact(cause), server.name
        self.server, self.cause, self.hint = server, cause, hint
        super().__init__(f"MCP server '{server}' {cause}")


class McpToolError(Exception):
    """The tool ran and reported an error (the model sees the text as the tool's result)."""


class ToolServerError(RuntimeError):
    """A server died during training and could not be started again: the run fails with this cause."""

    cause = Cause.TOOL_SERVER_ERROR


#: Python 3.11's exception groups (anyio's backport on 3.10)
_GROUP = getattr(builtins, "BaseExceptionGroup", None) or __import__("exceptiongroup").BaseExceptionGroup


def _leaf(exc: BaseException) -> BaseException:
    """The first real exception inside anyio's exception groups."""
    while isinstance(exc, _GROUP) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _tail(errlog) -> str:
    if errlog is None:
        return ""
    try:
        errlog.flush()
        errlog.seek(0)
        text = errlog.read()
    except (OSError, ValueError):
        return ""
    text = text.strip()
    return text[-STDERR_TAIL_CHARS:] if text else ""


def describe_failure(
    server: McpServer,
    exc: BaseException,
    errlog=None,
    waited_s: float | None = None,
    seen: dict[str, Any] | None = None,
) -> McpServerError:
    """The failure of reaching ``server`` as a message a user can act on (``seen``: what
    :func:`open_session` observed, such as an HTTP error status the SDK does not pass on)."""
    exc = _leaf(exc)
    tail = _tail(errlog)
    stderr = (
        f"; its stderr ends with: {tail}"
        if tail
        else ("; it wrote nothing to stderr" if server.transport == STDIO else "")
    )
    target = server.target()
    name = type(exc).__name__
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        waited = f"{waited_s:g} s" if waited_s else "its time limit"
        how = f"started with `{target}`" if server.transport == STDIO else f"at {target}"
        if (seen or {}).get("not_mcp"):  # it answered, but not in MCP: say what came back, not only the wait
            return McpServerError(
                server,
                f"answered something that is not MCP ({how}): {seen['not_mcp']}{stderr}",
                "check that `command` starts an MCP server that writes nothing else to stdout (log to stderr)"
                if server.transport == STDIO
                else "check `url`: it should be the server's MCP endpoint (often ending in /mcp or /sse)",
            )
        return McpServerError(
            server,
            f"did not answer within {waited} ({how}){stderr}",
            "check that it starts and speaks MCP on its own (run the command in a terminal), "
            "or raise its startup_timeout",
        )
    if isinstance(exc, (FileNotFoundError, PermissionError)) and server.transport == STDIO:
        return McpServerError(
            server,
            f"cannot be started: `{server.command}`: {exc.strerror or exc}",
            "check `command` (installed? on PATH? executable?)",
        )
    if server.transport == STDIO and (_is_closed(exc) or name in ("EndOfStream", "BrokenResourceError")):
        from .mcp_aworld import sdk_mismatch_hint

        return McpServerError(
            server,
            f"exited before answering (started with `{target}`){stderr}",
            sdk_mismatch_hint(tail) or "run the command in a terminal to see why it stops",
        )
    if name in ("ConnectError", "ConnectTimeout", "RemoteProtocolError") or isinstance(exc, ConnectionError):
        return McpServerError(
            server, f"cannot be reached at {target}: {exc or name}", "is the server running? check `url`"
        )
    status = getattr(getattr(exc, "response", None), "status_code", None) or (seen or {}).get("http_status")
    if status is not None:
        hint = "check `headers` (a missing or wrong token?)" if status in (401, 403) else "check `url`"
        return McpServerError(server, f"answered HTTP {status} at {target}", hint)
    return McpServerError(server, f"failed: {name}: {exc}{stderr}")


def _is_closed(exc: BaseException) -> bool:
    from mcp.shared.exceptions import McpError
    from mcp.types import CONNECTION_CLOSED

    return isinstance(exc, McpError) and exc.error.code == CONNECTION_CLOSED


async def open_session(server: McpServer, stack: AsyncExitStack, errlog=None, seen: dict[str, Any] | None = None):
    """Start or connect to ``server`` and return its initialized ``ClientSession`` (closed with ``stack``).
    ``errlog`` receives a stdio server's stderr; ``seen`` records an HTTP error status."""
    from mcp import ClientSession

    async def record_status(response) -> None:
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if response.status_code < 400 and kind in NOT_MCP_TYPES and seen is not None:
            seen.setdefault("not_mcp", f"a {kind} page (HTTP {response.status_code})")
        if response.status_code >= 400 and seen is not None:
            seen["http_status"] = response.status_code
            if response.request.method == "POST" and callable(seen.get("on_post_error")):
                seen["on_post_error"]()  # the SDK 1.x leaves the request waiting: the pool ends it

    if server.transport == STDIO:
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(
            command=server.executable(), args=list(server.args), env=dict(server.env) or None, cwd=server.cwd
        )
        read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
        read = Watched(read, seen)
    else:
        from mcp.shared._httpx_utils import create_mcp_http_client

        def http_client(headers=None, timeout=None, auth=None):
            client = create_mcp_http_client(headers=headers, timeout=timeout, auth=auth)
            client.event_hooks["response"].append(record_status)
            return client

        if server.transport == SSE:
            from mcp.client.sse import sse_client

            read, write = await stack.enter_async_context(
                sse_client(
                    server.url,
                    headers=dict(server.headers) or None,
                    timeout=server.timeout,
                    sse_read_timeout=server.sse_read_timeout,
                    httpx_client_factory=http_client,
                )
            )
        else:
            from mcp.client.streamable_http import streamablehttp_client

            read, write, _ = await stack.enter_async_context(
                streamablehttp_client(
                    server.url,
                    headers=dict(server.headers) or None,
                    timeout=server.timeout,
                    sse_read_timeout=server.sse_read_timeout,
                    httpx_client_factory=http_client,
                )
            )
    # AWorld's client_session_timeout_seconds bounds each tool call (server.timeout); starting, initializing and
    # listing tools are bounded by startup_timeout (a server slow to import must not fail a short call limit)
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    return session


async def _list_tools(session) -> list[dict[str, Any]]:
    tools, cursor = [], None
    for _ in range(100):  # a paginator that never ends must not hang a check
        page = await session.list_tools(cursor=cursor) if cursor else await session.list_tools()
        tools += [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools]
        cursor = getattr(page, "nextCursor", None)
        if not cursor:
            break
    return tools


async def _list_one(server: McpServer) -> list[dict[str, Any]]:
    errlog = tempfile.TemporaryFile("w+") if server.transport == STDIO else None
    seen: dict[str, Any] = {}
    t0 = time.monotonic()
    try:
        try:
            import anyio

            with anyio.fail_after(server.startup_timeout):  # an anyio scope: the SDK's shutdown runs shielded
                async with AsyncExitStack() as stack:
                    session = await open_session(server, stack, errlog, seen)
                    tools = await _list_tools(session)
        except BaseException as e:  # noqa: BLE001 - every way of failing becomes one clear message
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            raise describe_failure(server, e, errlog, server.startup_timeout, seen) from None
        if not tools:
            raise McpServerError(
                server,
                f"lists no tools ({server.target()}, answered in {time.monotonic() - t0:.1f} s)",
                "check that the server registers its tools, or remove it from mcp_servers",
            )
        return tools
    finally:
        if errlog is not None:
            errlog.close()


def list_server_tools(servers: Iterable[McpServer]) -> dict[str, list[dict[str, Any]]]:
    """Every server's tools (as MCP ``Tool`` dicts: name, description, inputSchema, outputSchema), listed
    concurrently, each within its ``startup_timeout``. Raises the first :class:`McpServerError`."""
    servers = list(servers)

    async def all_of() -> list[Any]:
        return await asyncio.gather(*(_list_one(s) for s in servers), return_exceptions=True)

    results = _run_blocking(all_of)
    for _server, result in zip(servers, results):
        if isinstance(result, BaseException):
            raise result
    return {s.name: r for s, r in zip(servers, results)}


def _run_blocking(make_coro: Callable[[], Any]) -> Any:
    """``asyncio.run`` — in a helper thread when this thread already runs an event loop (a notebook)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make_coro())
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(make_coro())
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = e

    t = threading.Thread(target=target, name="mcp-list", daemon=True)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


# -- training: one session per server, reused ----------------------------------------------------------
class _Connection:
    """One live session, held open by a task of the pool's loop (anyio scopes must exit in their task)."""

    def __init__(self, server: McpServer):
        self.server = server
        self.errlog = tempfile.TemporaryFile("w+") if server.transport == STDIO else None
        self.seen: dict[str, Any] = {}
        self.ready: asyncio.Future = asyncio.get_running_loop().create_future()
        self.closing = asyncio.Event()
        self.task: asyncio.Task | None = None
        #: the tool calls waiting on this session; cancelled when it is found broken and replaced (the SDK 1.x
        #: leaves a request sent as the server died waiting until its read timeout)
        self.calls: set[asyncio.Task] = set()
        self.dropped = False
        #: set when the server answers a request with an HTTP error (a restarted server forgot the session)
        self.post_error = asyncio.Event()
        self.seen["on_post_error"] = self.post_error.set
        #: set when a stdio server's stdout ends (it died): a request sent after the SDK 1.x's reader ended is never
        #: answered and would wait out its read timeout
        self.stream_ended = asyncio.Event()
        self.seen["on_stream_end"] = self.stream_ended.set

    async def hold(self) -> None:
        import anyio

        try:
            # an anyio scope with a deadline until the session is up (asyncio's own cancellation could cut
            # the SDK's shielded shutdown short and leave a server process behind)
            with anyio.CancelScope(deadline=anyio.current_time() + self.server.startup_timeout) as scope:
                async with AsyncExitStack() as stack:
                    session = await open_session(self.server, stack, self.errlog, self.seen)
                    scope.deadline = float("inf")
                    self.ready.set_result(session)
                    await self.closing.wait()
            if scope.cancelled_caught and not self.ready.done():
                self.ready.set_exception(TimeoutError())
        except BaseException as e:  # noqa: BLE001 - reported through `ready` or on the next call
            if not self.ready.done():
                self.ready.set_exception(e)
            if isinstance(e, asyncio.CancelledError):
                raise
        finally:
            if not self.ready.done():
                self.ready.set_exception(ConnectionError("the session ended before it was ready"))

    async def close(self) -> None:
        self.closing.set()
        if self.task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self.task), CLOSE_TIMEOUT_S)
            except BaseException:  # noqa: BLE001 - a server that will not close is abandoned to the SDK
                self.task.cancel()
        if self.errlog is not None:
            self.errlog.close()


class McpPool:
    """The MCP servers of one process, each connected once and kept; see the module docstring."""

    def __init__(self, on_event: Callable[..., Any] | None = None):
        self.on_event = on_event
        self._pid = os.getpid()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp-client", daemon=True)
        self._thread.start()
        self._connections: dict[str, _Connection] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._failed: dict[str, ToolServerError] = {}
        self._closed = False

    @property
    def fatal(self) -> ToolServerError | None:
        """The first server failure that ends the run, if any."""
        return next(iter(self._failed.values()), None)

    def _event(self, kind: str, **fields: Any) -> None:
        if self.on_event is not None:
            try:
                self.on_event(kind, **fields)
            except Exception:  # noqa: BLE001 - reporting must never break a tool call
                pass

    def call(self, server: McpServer, tool: str, arguments: dict[str, Any]):
        """``tools/call`` on ``server`` (its session made or remade as needed); returns ``CallToolResult``."""
        if self._closed:
            raise ToolServerError(f"tool server error: the MCP client of this process is closed ({server.name})")
        future = asyncio.run_coroutine_threadsafe(self._call(server, tool, arguments), self._loop)
        limit = 2 * (server.startup_timeout + server.timeout) + 2 * CLOSE_TIMEOUT_S
        try:
            return future.result(timeout=limit)
        except TimeoutError:
            future.cancel()
            raise McpToolError(f"tool '{tool}' of MCP server '{server.name}' gave no result within {limit:g} s")

    async def _call(self, server: McpServer, tool: str, arguments: dict[str, Any]):
        from mcp.shared.exceptions import McpError

        stale: _Connection | None = None
        for attempt in (1, 2):
            conn = await self._connection(server, stale)
            call = asyncio.ensure_future(
                conn.ready.result().call_tool(tool, arguments, read_timeout_seconds=timedelta(seconds=server.timeout))
            )
            conn.calls.add(call)
            try:
                if server.transport != STDIO:
                    await _first_of(call, conn.post_error)
                    if not call.done():  # an HTTP error answered the call: the session is gone
                        call.cancel()
                        if attempt == 2:
                            raise self._fail(
                                server,
                                McpServerError(
                                    server, f"answered HTTP {conn.seen.get('http_status')} at {server.target()}"
                                ),
                            ) from None
                        stale = conn
                        self._event("tool_server_died", server=server.name, tool=tool)
                        continue
                else:
                    await _first_of(call, conn.stream_ended)
                    if not call.done():  # its stdout ended (the server died): the call would never be answered
                        call.cancel()
                        if attempt == 2:
                            raise self._fail(server, ConnectionError("the server exited during the call")) from None
                        stale = conn
                        self._event("tool_server_died", server=server.name, tool=tool)
                        continue
                return await call
            except asyncio.CancelledError:
                if not conn.dropped or asyncio.current_task().cancelling():
                    call.cancel()
                    raise
                if attempt == 2:  # the session this call waited on broke: as a transport failure
                    raise self._fail(server, ConnectionError("the session broke during the call")) from None
                stale = conn  # another call found it broken and is replacing it: go again, on the new one
                continue
            except McpError as e:
                if e.error.code == REQUEST_TIMEOUT:
                    raise McpToolError(
                        f"tool '{tool}' of MCP server '{server.name}' did not answer within {server.timeout:g} s"
                    ) from None
                # HTTP 404 on a session: the server forgot it (it restarted); MCP says: start a new session
                session_lost = conn.seen.get("http_status") == 404 and server.transport != STDIO
                if not (_is_closed(e) or session_lost):
                    raise McpToolError(
                        server.redact(f"MCP server '{server.name}' refused the call: {e.error.message}")
                    ) from None
                if attempt == 2:
                    raise self._fail(server, e) from None
            except (McpToolError, ToolServerError):
                raise
            except Exception as e:  # noqa: BLE001 - the transport broke (a dead process, a dropped connection)
                if attempt == 2:
                    raise self._fail(server, e) from None
            finally:
                conn.calls.discard(call)
            stale = conn
            self._event("tool_server_died", server=server.name, tool=tool)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _connection(self, server: McpServer, stale: _Connection | None) -> _Connection:
        """The server's live connection, made when there is none. ``stale``: the connection a call just found
        broken — replaced unless a concurrent call replaced it already (a server is restarted once, not once
        per caller). An HTTP server is reconnected to until its ``startup_timeout``; a stdio server is started
        again once."""
        if server.name in self._failed:
            raise self._failed[server.name]
        lock = self._locks.setdefault(server.name, asyncio.Lock())
        async with lock:
            if server.name in self._failed:
                raise self._failed[server.name]
            conn = self._connections.get(server.name)
            if conn is not None and conn is not stale:
                return conn
            restart = stale is not None
            if conn is not None:
                self._connections.pop(server.name, None)
                conn.dropped = True
                for call in conn.calls:  # calls that wait on the broken session go again on the new one
                    call.cancel()
                await conn.close()
            deadline = time.monotonic() + server.startup_timeout
            while True:
                conn = _Connection(server)
                conn.task = asyncio.create_task(conn.hold())
                try:  # hold() enforces startup_timeout itself; this bound is for a wedged SDK
                    async with asyncio.timeout(server.startup_timeout + CLOSE_TIMEOUT_S):
                        await asyncio.shield(conn.ready)
                    break
                except BaseException as e:  # noqa: BLE001
                    error = describe_failure(server, e, conn.errlog, server.startup_timeout, conn.seen)
                    await conn.close()
                    if restart and server.transport != STDIO and time.monotonic() + 1 < deadline:
                        await asyncio.sleep(1)  # an HTTP server coming back: try again
                        continue
                    raise self._fail(server, error)
            self._connections[server.name] = conn
            self._event(
                "tool_server_restarted" if restart else "tool_server_started",
                server=server.name,
                target=server.target(),
            )
            return conn

    def _fail(self, server: McpServer, error: BaseException) -> ToolServerError:
        if not isinstance(error, McpServerError):
            conn = self._connections.get(server.name)
            error = describe_failure(server, error, getattr(conn, "errlog", None), seen=getattr(conn, "seen", None))
        failure = ToolServerError(f"tool server error: {error}")
        self._failed.setdefault(server.name, failure)
        self._event("tool_server_failed", server=server.name, message=str(error))
        return self._failed[server.name]

    def close(self) -> None:
        """Close every session (stdio servers are stopped) and end the loop thread."""
        if self._closed or self._pid != os.getpid():
            return
        self._closed = True

        async def close_all() -> None:
            await asyncio.gather(*(c.close() for c in self._connections.values()), return_exceptions=True)
            self._connections.clear()

        try:
            asyncio.run_coroutine_threadsafe(close_all(), self._loop).result(timeout=CLOSE_TIMEOUT_S + 5)
        except Exception:  # noqa: BLE001
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)


async def _first_of(task: asyncio.Future, event: asyncio.Event) -> None:
    """Wait until ``task`` is done or ``event`` is set."""
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()


_POOL: McpPool | None = None
_POOL_LOCK = threading.Lock()


def default_pool() -> McpPool:
    """This process's pool (a fork gets a fresh one: threads do not survive ``fork``)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL._pid != os.getpid() or _POOL._closed:
            _POOL = McpPool()
        return _POOL


def close_default_pool() -> None:
    global _POOL
    with _POOL_LOCK:
        pool, _POOL = _POOL, None
    if pool is not None:
        pool.close()


atexit.register(close_default_pool)

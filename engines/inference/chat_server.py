"""A chat model in a process of its own: ``aworld-train chat-serve --run <run> --checkpoint <name> --state-dir D``.

It loads the model (a checkpoint or the agent's base model, an adapter over its base), applies the agent's
system prompt and tools, and serves on 127.0.0.1 (a free port) until it has been idle for
``--idle-timeout`` seconds, then exits and frees the memory. ``D/chat.json`` says where it listens, with a
random token every request must carry, whether it is ready, and why it failed if it did; ``D/chat.log``
holds its output.

``POST /chat`` with ``{"messages": [...], "temperature": 0.7, "max_new_tokens": 256}`` (the conversation
so far, without the system prompt: user turns, the model's replies and tool calls, the tools' results) answers
a stream of JSON lines: ``{"type": "context", "kept", "dropped", "limit"}`` (how many turns the model sees,
how many old ones no longer fit its context), ``{"type": "token", "text"}`` as the
model writes, ``{"type": "message"}`` per model turn, ``{"type": "tool", "message"}`` for each tool call's
result (tools really run), and ``{"type": "done"}`` (or ``{"type": "error", "message"}``).
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from .chat_context import ContextFull

STATE_FILE = "chat.json"
LOG_FILE = "chat.log"


def write_state(state_dir: Path, **fields) -> None:
    from ..runs.rundir import atomic_write_text

    path = state_dir / STATE_FILE
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        state = {}
    state.update(fields)
    atomic_write_text(path, json.dumps(state), durable=False)


class ChatModel:
    def __init__(self, run_dir: str, checkpoint: str | None):
        from ..agents.agent_spec import load_agent
        from .checkpoints import load, resolve
        from .rollout import AgentGenerator
        from ..runs.rundir import RunDir

        run = RunDir(run_dir)
        spec = run.read_spec()
        self.agent = load_agent(spec["agent"])
        self.ref = resolve(checkpoint, self.agent.model, run)
        model, tokenizer = load(self.ref)
        self.generator = AgentGenerator(
            model,
            tokenizer,
            self.agent.tool_callables() if self.agent.has_tools else [],
            self.agent.tool_schemas,
            self.agent.max_steps,
        )
        self.lock = threading.Lock()  # one generation at a time on this model

    def events(self, messages: list[dict], temperature: float, max_new_tokens: int | None):
        history = [m for m in messages if m.get("role") in ("user", "assistant", "tool")]
        if self.agent.system_prompt:
            history.insert(0, {"role": "system", "content": self.agent.system_prompt})
        with self.lock:
            yield from self.generator.stream(
                history, int(max_new_tokens or self.agent.max_tokens), temperature=temperature, top_p=self.agent.top_p
            )


def serve(run_dir: str, checkpoint: str | None, state_dir: Path, idle_timeout_s: float) -> int:
    state_dir.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(24)
    write_state(
        state_dir, pid=os.getpid(), ready=False, error=None, run_dir=run_dir, checkpoint=checkpoint, started=time.time()
    )
    t0 = time.time()
    try:
        chat = ChatModel(run_dir, checkpoint)
    except Exception as e:  # noqa: BLE001 - said in chat.json, for the studio to show
        message = getattr(getattr(e, "result", None), "message", None) or f"{type(e).__name__}: {e}"
        traceback.print_exc()
        write_state(state_dir, error=message, ended=time.time())
        return 2
    last_used = [time.time()]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # the log is for errors, not for every request
            pass

        def _authorized(self) -> bool:
            if self.headers.get("X-Chat-Token") != token:
                self.send_error(403, "bad token")
                return False
            return True

        def do_GET(self):
            if not self._authorized():
                return
            body = json.dumps({"ready": True, "model": chat.ref.label}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            if not self._authorized():
                return
            last_used[0] = time.time()
            try:
                req = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            except json.JSONDecodeError:
                self.send_error(400, "the body is not JSON")
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.end_headers()
            try:
                for event in chat.events(
                    req.get("messages") or [], float(req.get("temperature") or 0.0), req.get("max_new_tokens")
                ):
                    self.wfile.write((json.dumps(event, ensure_ascii=False, default=str) + "\n").encode())
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return
            except ContextFull as e:  # the user's to fix: said as it is
                self.wfile.write((json.dumps({"type": "error", "message": str(e)}) + "\n").encode())
            except Exception as e:  # noqa: BLE001 - the page shows it; the server keeps serving
                traceback.print_exc()
                self.wfile.write((json.dumps({"type": "error", "message": f"{type(e).__name__}: {e}"}) + "\n").encode())
            finally:
                last_used[0] = time.time()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    write_state(
        state_dir,
        ready=True,
        port=server.server_address[1],
        token=token,
        model=chat.ref.label,
        load_s=round(time.time() - t0, 2),
    )
    print(
        f"chat model {chat.ref.label} ready on 127.0.0.1:{server.server_address[1]} "
        f"(loaded in {time.time() - t0:.1f} s; exits after {idle_timeout_s:g} s idle)",
        flush=True,
    )

    def idle_watch():
        while True:
            time.sleep(min(5.0, idle_timeout_s / 4))
            if time.time() - last_used[0] > idle_timeout_s and not chat.lock.locked():
                write_state(state_dir, ready=False, ended=time.time(), error="exited after being idle")
                server.shutdown()
                return

    threading.Thread(target=idle_watch, daemon=True).start()
    server.serve_forever(poll_interval=1.0)
    return 0

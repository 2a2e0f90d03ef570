"""MCP servers in an agent config, in AWorld's form::

    mcp_config:                      # or the path of a JSON file holding the same mapping
      mcpServers:
        calculator: {command: python, args: [../mcp/calculator_server.py], env: {KEY: "${KEY}"}}
        search: {type: streamable-http, url: "http://localhost:8080/mcp",
                 headers: {Authorization: "Bearer ${TOKEN}"}, timeout: 600, sse_read_timeout: 600}
    mcp_servers: [calculator]        # the servers this agent uses (all enabled ones when left out)
    black_tool_actions: {calculator: [multiply]}   # AWorld's per-server list of tools to hide
    mcp_tool_prefix: false           # true: expose tools as "<server>__<tool>", as AWorld's runtime names them

Parsing only (no ``mcp`` import): what each server is, its ``${ENV}``-substituted values for use and
its public form (secrets masked, see :mod:`engines.env_values.secret_values`) for everything shown or written.

AWorld's ``mcp.json`` conventions are kept (:mod:`engines.tools.mcp_aworld`): a ``python -m <module>`` server
without ``cwd`` runs from the project root its config lives in (found by walking up to where the module
resolves), ``client_session_timeout_seconds`` is the session's read timeout, and a Node.js launcher
(``npx``) that is not installed is a clear error before anything starts.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..results.check_result import CheckError, did_you_mean
from ..env_values.env_invitation import SERVER_FIELDS, NotInvited, check_fields
from ..files.user_files import open_plain_file
from ..inputs.loading import resolve_path
from .mcp_aworld import module_root, require_launcher
from ..isolation import server_env
from ..isolation.user_env import is_credential
from ..env_values.secret_values import (
    ENV_RE,
    MASK,
    is_secret_key,
    literal_secrets,
    public_mapping,
    public_url,
    references_env,
    substitute_env,
)

STDIO, STREAMABLE_HTTP, SSE = "stdio", "streamable-http", "sse"
TRANSPORTS = {
    "stdio": STDIO,
    "streamable-http": STREAMABLE_HTTP,
    "streamable_http": STREAMABLE_HTTP,
    "streamablehttp": STREAMABLE_HTTP,
    "http": STREAMABLE_HTTP,
    "sse": SSE,
}
STDIO_KEYS = {"command", "args", "env", "cwd"}
HTTP_KEYS = {"url", "headers", "sse_read_timeout"}
COMMON_KEYS = {"type", "timeout", "startup_timeout", "disabled", "description", "client_session_timeout_seconds"}
#: seconds to start (or connect to) a server, initialize it and list its tools
DEFAULT_STARTUP_TIMEOUT_S = 30.0
#: seconds one tool call may take (a server entry's ``timeout`` overrides it, as in AWorld's configs)
DEFAULT_CALL_TIMEOUT_S = 60.0
#: `command: python` runs the server with the interpreter of the process that starts it
PYTHON_COMMANDS = ("python", "python3")
#: the most of a ``mcp_config`` file read
CONFIG_FILE_LIMIT = 4 << 20
AGENT_KEYS = ("mcp_config", "mcp_servers", "black_tool_actions", "mcp_tool_prefix")


@dataclass
class McpServer:
    """One MCP server: how to start or reach it (substituted) and what it was written as (``raw``)."""

    name: str
    transport: str
    raw: dict[str, Any] = field(repr=False)  # may hold a literal secret: never in a repr
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict, repr=False)
    cwd: str | None = None
    url: str | None = field(default=None, repr=False)
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    timeout: float = DEFAULT_CALL_TIMEOUT_S
    sse_read_timeout: float = 300.0
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT_S
    #: AWorld's ``client_session_timeout_seconds`` (its ClientSession's read timeout): each tool call's limit
    session_timeout: float | None = None
    #: how ``cwd`` was chosen when the config did not set it (shown by the check)
    cwd_note: str | None = None

    def public(self) -> dict[str, Any]:
        """The entry as written, ``env``/``headers`` in public form: safe to show and to write to run.yaml."""
        out = dict(self.raw)
        for key in ("env", "headers"):
            if isinstance(out.get(key), dict):
                out[key] = public_mapping(out[key])
        if "url" in out:
            out["url"] = public_url(out["url"])
        return out

    def secret_values(self) -> list[str]:
        """The substituted values of this server's secrets (to scrub from any message)."""
        out = [v for k, v in {**self.env, **self.headers}.items() if is_secret_key(k) and v]
        if self.url:
            from urllib.parse import parse_qsl, urlsplit

            parts = urlsplit(self.url)
            out += [parts.password or ""] + [v for k, v in parse_qsl(parts.query) if is_secret_key(k)]
        # a "Bearer <token>" header: the token alone too
        out += [v.split(None, 1)[1] for v in list(out) if " " in v.strip()]
        return sorted({v for v in out if len(v) >= 4}, key=len, reverse=True)

    def redact(self, text: str) -> str:
        """``text`` with this server's secret values replaced by the mask (a server's stderr, an error)."""
        for value in self.secret_values():
            text = text.replace(value, MASK)
        return text

    def executable(self) -> str:
        return sys.executable if self.command in PYTHON_COMMANDS else str(self.command)

    def target(self) -> str:
        """What the server is, for messages: its command line or its URL (never a secret)."""
        if self.transport == STDIO:
            return " ".join([str(self.raw.get("command"))] + [str(a) for a in self.raw.get("args") or []])
        return str(public_url(self.raw.get("url")))


@dataclass
class McpSelection:
    """The MCP part of an agent: the servers it uses, the tools it hides, how tools are named."""

    servers: list[McpServer]
    hidden: dict[str, list[str]] = field(default_factory=dict)
    prefix: bool = False

    def by_name(self) -> dict[str, McpServer]:
        return {s.name: s for s in self.servers}

    def to_dict(self) -> dict[str, Any]:
        """Public form for AgentSpec.to_dict (only the servers used)."""
        d: dict[str, Any] = {
            "mcp_config": {"mcpServers": {s.name: s.public() for s in self.servers}},
            "mcp_servers": [s.name for s in self.servers],
        }
        if self.hidden:
            d["black_tool_actions"] = {k: list(v) for k, v in self.hidden.items()}
        if self.prefix:
            d["mcp_tool_prefix"] = True
        return d

    def raw_dict(self) -> dict[str, Any]:
        """As :meth:`to_dict` but with secrets as written (to re-check an in-memory AgentSpec)."""
        return self.to_dict() | {"mcp_config": {"mcpServers": {s.name: dict(s.raw) for s in self.servers}}}


def _error(message: str, hint: str | None = None) -> CheckError:
    return CheckError("agent", message, hint)


def _read_config_file(value: str, base_dir: Path | None) -> tuple[Any, Path]:
    path = resolve_path(value, base_dir)
    if not path.exists():  # a FIFO or a device exists: refused below, as what it is
        raise _error(
            f"mcp_config file '{value}' does not exist (looked at {path})",
            'give the path of a JSON file holding {"mcpServers": {...}}, relative to the agent YAML',
        )
    try:  # a plain file only, never waited on (a FIFO, /proc/kmsg), and capped
        with open_plain_file(path) as (f, _):
            raw = f.read(CONFIG_FILE_LIMIT + 1)
    except OSError as e:
        raise _error(f"mcp_config file '{value}' {e}", 'give the path of a JSON file holding {"mcpServers": {...}}')
    if len(raw) > CONFIG_FILE_LIMIT:
        raise _error(f"mcp_config file {path.name} is over {CONFIG_FILE_LIMIT >> 20} MB: it is no server list")
    text = raw.decode("utf-8", errors="replace")
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as e:
        raise _error(
            f"mcp_config file {path.name} is not valid JSON at line {e.lineno}, column {e.colno}: {e.msg}",
            "fix the JSON syntax (quotes, commas, braces)",
        )
    except yaml.YAMLError as e:
        raise _error(f"mcp_config file {path.name} is not valid YAML: {e}")
    return data, path.parent


def _number(name: str, entry: dict, key: str, default: float) -> float:
    value = entry.get(key, default)
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise _error(f"MCP server '{name}': `{key}` must be a number of seconds, got {value!r}")
    if value <= 0:
        raise _error(f"MCP server '{name}': `{key}` must be positive, got {value:g}")
    return value


def _string_map(name: str, entry: dict, key: str) -> dict[str, str]:
    value = entry.get(key) or {}
    if not isinstance(value, dict):
        raise _error(f"MCP server '{name}': `{key}` must be a mapping of NAME: value, not {type(value).__name__}")
    return {str(k): "" if v is None else str(v) for k, v in value.items()}


def quote_mask(url: Any) -> bool:
    """Whether a URL holds the mask percent-encoded (``%2A%2A%2A%2A``)."""
    return isinstance(url, str) and "%2A%2A%2A%2A" in url.upper()


def _resolve_local(value: str, base_dirs: list[Path]) -> str:
    """A relative path that exists against one of ``base_dirs`` becomes absolute; anything else stays."""
    if not value or os.path.isabs(value) or value.startswith("-"):
        return value
    for base in base_dirs:
        candidate = base / value
        if candidate.exists():
            return str(candidate.resolve())
    return value


def _no_secret_on_the_command_line(name: str, entry: dict[str, Any]) -> None:
    """A credential's ``${NAME}`` in a stdio server's ``command`` or ``args`` would be on its command line,
    which every process on the machine reads (``/proc/<pid>/cmdline``, ``ps``): refused, ``env`` carries it."""
    args = entry.get("args")
    words = [entry.get("command"), *(args if isinstance(args, list) else [args])]
    for word in words:
        for var, _default in ENV_RE.findall(str(word or "")):
            if is_credential(var):
                ref = "${" + var + "}"
                raise _error(
                    f"MCP server '{name}': its command line passes {ref}, which every process on the machine "
                    "can read (ps, /proc/<pid>/cmdline), the reward's included",
                    f'pass it in the server\'s env instead (env: {{{var}: "{ref}"}}) and have the server read '
                    "it from its environment",
                )


def _server(name: str, entry: Any, base_dirs: list[Path], warnings: list[str], missing: list[str]) -> McpServer:
    if not isinstance(entry, dict):
        raise _error(
            f"MCP server '{name}' must be a mapping (command/args/env or type/url/headers), not {type(entry).__name__}"
        )
    kind = str(entry.get("type") or (STDIO if "command" in entry else STREAMABLE_HTTP if "url" in entry else ""))
    transport = TRANSPORTS.get(kind.lower().strip())
    if transport is None:
        if not kind:
            raise _error(
                f"MCP server '{name}' has neither `command` (a stdio server) nor `url` (an HTTP server)",
                "write command: ... args: [...] to start one, or type: streamable-http and url: ...",
            )
        raise _error(
            f"MCP server '{name}': unknown type '{kind}'{did_you_mean(kind, TRANSPORTS)}",
            "use stdio, streamable-http or sse",
        )
    allowed = COMMON_KEYS | (STDIO_KEYS if transport == STDIO else HTTP_KEYS)
    for key in entry:
        if key not in allowed:
            warnings.append(f"MCP server '{name}': unknown key '{key}'{did_you_mean(key, allowed)} — ignored")
    for key in ("env", "headers"):
        mapping = entry.get(key) if isinstance(entry.get(key), dict) else {}
        what = "header" if key == "headers" else "env variable"
        for k, v in mapping.items():
            if str(v) == MASK or f":{MASK}@" in str(v):
                raise _error(
                    f"MCP server '{name}': {what} '{k}' is masked ({MASK}): its secret was written "
                    "literally in the agent config, so it was not stored",
                    "write it as ${ENV_VAR} in the agent config and set the variable",
                )
        for k in literal_secrets(mapping):
            warnings.append(
                f"MCP server '{name}': {what} '{k}' holds a secret written literally; it is masked in "
                "run.yaml, so a run started from run.yaml cannot use it — write ${ENV_VAR} instead"
            )
    if MASK in str(entry.get("url", "")) or quote_mask(entry.get("url")):
        raise _error(
            f"MCP server '{name}': its url holds a masked secret ({MASK}): it was written literally in the "
            "agent config, so it was not stored",
            "write the secret as ${ENV_VAR} in the url",
        )
    if isinstance(entry.get("url"), str) and public_url(entry["url"]) != entry["url"]:
        warnings.append(
            f"MCP server '{name}': its url holds a secret written literally; it is masked in run.yaml, "
            "so a run started from run.yaml cannot use it — write ${ENV_VAR} instead"
        )
    raw = dict(entry)
    if transport == STDIO:
        _no_secret_on_the_command_line(name, raw)
    if transport == STDIO:  # local paths made absolute before substitution: run.yaml is read elsewhere
        if isinstance(raw.get("command"), str) and "/" in raw["command"] and not references_env(raw["command"]):
            raw["command"] = _resolve_local(raw["command"].strip(), base_dirs)
        if isinstance(raw.get("args"), list):
            raw["args"] = [a if references_env(a) else _resolve_local(str(a), base_dirs) for a in raw["args"]]
        if isinstance(raw.get("cwd"), str) and not references_env(raw["cwd"]):
            raw["cwd"] = _resolve_local(raw["cwd"], base_dirs)
    try:  # in a studio: ${NAME} only in env, headers and url, and only the names its operator invites
        check_fields(raw, SERVER_FIELDS, f"MCP server '{name}'")
        value = substitute_env(raw, missing, server_env.lookup())
    except NotInvited as e:
        raise _error(str(e)) from None
    timeouts = dict(
        timeout=_number(name, value, "timeout", DEFAULT_CALL_TIMEOUT_S),
        startup_timeout=_number(name, value, "startup_timeout", DEFAULT_STARTUP_TIMEOUT_S),
    )
    if value.get("client_session_timeout_seconds") not in (None, ""):
        # AWorld passes it to the ClientSession as the read timeout of every request: a tool call waits as long
        timeouts["session_timeout"] = timeouts["timeout"] = _number(
            name, value, "client_session_timeout_seconds", DEFAULT_CALL_TIMEOUT_S
        )
    if transport == STDIO:
        command = value.get("command")
        if not isinstance(command, str) or not command.strip():
            raise _error(f"MCP server '{name}': `command` must be the program to run, e.g. python or npx")
        require_launcher(name, command.strip())
        cwd_note = None
        if value.get("cwd") in (None, ""):
            found = module_root(command.strip(), value.get("args") or [], base_dirs)
            if found is not None:
                root, cwd_note = found
                raw["cwd"] = value["cwd"] = str(root)
        args = value.get("args") or []
        if isinstance(args, str):
            args = args.split()
        if not isinstance(args, list):
            raise _error(f"MCP server '{name}': `args` must be a list of strings")
        cwd = value.get("cwd")
        if cwd is not None and not os.path.isdir(str(cwd)):
            raise _error(f"MCP server '{name}': `cwd` '{cwd}' is not a folder")
        return McpServer(
            name,
            STDIO,
            raw,
            command=command.strip(),
            args=[str(a) for a in args],
            env=_string_map(name, value, "env"),
            cwd=None if cwd is None else str(cwd),
            cwd_note=cwd_note,
            **timeouts,
        )
    url = value.get("url")
    if not isinstance(url, str) or not url.strip().startswith(("http://", "https://")):
        raise _error(
            f"MCP server '{name}': `url` must be an http(s) URL, got {url!r}", "e.g. url: http://localhost:8080/mcp"
        )
    return McpServer(
        name,
        transport,
        raw,
        url=url.strip(),
        headers=_string_map(name, value, "headers"),
        sse_read_timeout=_number(name, value, "sse_read_timeout", 300.0),
        **timeouts,
    )


def parse_mcp(
    flat: dict[str, Any], base_dir: Path | None, warnings: list[str], missing: list[str]
) -> McpSelection | None:
    """The agent's MCP servers from its (unsubstituted) settings; None when it uses none."""
    config = flat.get("mcp_config")
    wanted = flat.get("mcp_servers")
    if config in (None, "", {}) and not wanted:
        return None
    if config in (None, "", {}):
        raise _error(
            f"mcp_servers names {wanted!r} but the agent has no mcp_config",
            "add mcp_config: {mcpServers: {<name>: {command: ..., args: [...]}}} (or a JSON file path)",
        )
    base_dirs = ([base_dir] if base_dir is not None else []) + [Path.cwd()]
    if isinstance(config, (str, os.PathLike)):
        config, folder = _read_config_file(str(config), base_dir)
        base_dirs.insert(0, folder)
    if not isinstance(config, dict) or not isinstance(config.get("mcpServers"), dict):
        raise _error(
            "mcp_config must hold an `mcpServers` mapping of server name → settings",
            "write mcp_config: {mcpServers: {calculator: {command: python, args: [server.py]}}}",
        )
    defined: dict[str, Any] = config["mcpServers"]
    if not defined:
        raise _error("mcp_config.mcpServers is empty", "define at least one server")
    if wanted is None or wanted == []:
        names = [n for n, e in defined.items() if not (isinstance(e, dict) and e.get("disabled"))]
        warnings.append(
            f"mcp_servers is not set: the agent uses every enabled server of mcp_config ({', '.join(names) or 'none'})"
        )
    else:
        names = (
            [wanted]
            if isinstance(wanted, str)
            else list(wanted)
            if isinstance(wanted, (list, tuple, set)) or type(wanted).__name__ == "dict_keys"
            else wanted
        )
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise _error("mcp_servers must be a list of server names from mcp_config")
        for n in names:
            if n not in defined:
                raise _error(
                    f"mcp_servers names '{n}', which mcp_config does not define{did_you_mean(n, defined)}",
                    f"servers defined: {', '.join(defined)}",
                )
        names = list(dict.fromkeys(names))
    servers = []
    for n in names:
        entry = defined[n]
        if isinstance(entry, dict) and entry.get("disabled"):
            warnings.append(f"MCP server '{n}' is disabled (disabled: true): skipped")
            continue
        servers.append(_server(n, entry, base_dirs, warnings, missing))
    hidden = flat.get("black_tool_actions") or {}
    if not isinstance(hidden, dict) or not all(isinstance(v, list) for v in hidden.values()):
        raise _error(
            "black_tool_actions must map a server name to the list of its tools to hide",
            "e.g. black_tool_actions: {calculator: [multiply]}",
        )
    prefix = flat.get("mcp_tool_prefix", False)
    if not isinstance(prefix, bool):
        raise _error(f"mcp_tool_prefix must be true or false, got {prefix!r}")
    return McpSelection(servers, {str(k): [str(t) for t in v] for k, v in hidden.items()}, prefix)

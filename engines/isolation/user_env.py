"""The environment user code sees: the process environment without credentials.

User code — tools, rewards, the checks that import them, and the run processes the studio starts —
gets :func:`user_code_env`:

* never the studio's own credentials (``AWORLD_STUDIO_*``: its login);
* no variable that looks like a credential — by name (``*_API_KEY``, ``*_TOKEN``, ``*SECRET*``,
  ``*PASSWORD*``, ``*CREDENTIALS*``, ``SSH_AUTH_SOCK``, ...) or by value (a URL carrying
  ``user:password@``);
* except the ones asked for by name: a ``${NAME}`` (or OmegaConf's ``${oc.env:NAME}``) in the agent
  config, the reward spec or the engine config, a judge's ``api_key_env: NAME`` (a judge without one
  reads ``OPENAI_API_KEY``), or a name listed in ``$AWORLD_USER_ENV_ALLOW`` (comma-separated,
  set by whoever starts the studio or the CLI).

A variable goes only to the process that names it: a ``${NAME}`` written only inside one MCP server's entry
(``mcp_config: {mcpServers: {<server>: ...}}``, or the ``mcp_config`` file) is not the process's
(:func:`referenced_names` leaves it out) but that server's (:func:`server_names`, :func:`server_values`):
its value is handed over beside the environment (:mod:`engines.isolation.server_env`).

Everything else (PATH, HOME, locale, CUDA/NCCL/HF settings, proxies without passwords) is kept.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

#: comma-separated names user code may see although they look like credentials
ALLOW_ENV = "AWORLD_USER_ENV_ALLOW"
#: the studio's own variables (its login): never given to user code, whatever asks for them
STUDIO_PREFIX = "AWORLD_STUDIO_"
_CREDENTIAL_PARTS = {
    "KEY",
    "APIKEY",
    "TOKEN",
    "SECRET",
    "SECRETS",
    "PASSWORD",
    "PASSWD",
    "PASS",
    "PWD",
    "CREDENTIAL",
    "CREDENTIALS",
    "AUTH",
    "COOKIE",
    "PRIVATE",
    "SESSION",
    "SIGNATURE",
}
_NOT_CREDENTIALS = {"PWD", "OLDPWD", "TOKENIZERS_PARALLELISM"}
_URL_PASSWORD = re.compile(r"://[^/\s:@]+:[^/\s@]+@")
_REF = re.compile(r"\$\{(?:oc\.env:)?([A-Za-z_][A-Za-z0-9_]*)(?:[:,][^}]*)?\}")
#: a judge reward names the variable its key is read from (engines.rewards.judge)
KEY_ENV_KEY = "api_key_env"
JUDGE_DEFAULT_KEY_ENV = "OPENAI_API_KEY"
_KEY_ENV_REF = re.compile(r"\b" + KEY_ENV_KEY + r"""["']?\s*[:=]\s*["']?([A-Za-z_][A-Za-z0-9_]*)""")
#: the most text scanned for ``${NAME}`` in one file
SCAN_LIMIT = 4 << 20


def is_credential(name: str, value: str = "") -> bool:
    """Whether a variable looks like it holds a credential (by its name's parts, or a password in a URL)."""
    upper = name.upper()
    if upper in _NOT_CREDENTIALS:
        return False
    if upper.startswith(STUDIO_PREFIX):
        return True
    parts = set(re.split(r"[^A-Z0-9]+", upper))
    if parts & _CREDENTIAL_PARTS or "APIKEY" in upper.replace("_", ""):
        return True
    return bool(_URL_PASSWORD.search(value or ""))


#: the key under which an agent config's MCP servers are defined (``mcp_config: {mcpServers: {...}}``)
SERVERS_KEY = "mcpServers"
#: the agent key that holds the servers, or the path of a JSON/YAML file holding them
SERVERS_CONFIG_KEY = "mcp_config"
_STRUCTURED_SUFFIXES = (".yaml", ".yml", ".json")


def _load_structured(text: str) -> Any:
    """A YAML/JSON document as data, or None when it is not a mapping or is not safe YAML (read with the one
    loader for user YAML: its depth, size and alias caps; PyYAML's own recursed past Python's limit on a deeply
    nested file, and the check crashed on it instead of saying what is wrong)."""
    from ..files.yaml_input import try_load_yaml

    data = try_load_yaml(text)
    return data if isinstance(data, Mapping) else None


def _scan_names(sources: Iterable[Any]) -> tuple[set[str], set[str]]:
    """(names the process itself asks for, names asked for inside an MCP server's entry only).

    A YAML/JSON file or text is read as data, so that what an ``mcpServers`` entry (or the file a
    ``mcp_config`` names, relative to the file that names it) asks for is told apart from the rest; any other
    text (a Python file) is scanned as a whole, for the process. The caller's strings may be file paths;
    strings read from a file are not opened, except a ``mcp_config`` path."""
    process: set[str] = set()
    servers: set[str] = set()
    seen: set[tuple[int, int]] = set()  # (container, target): YAML aliases share objects, each is walked once

    def scan_text(text: str, found: set[str], structured: bool, base: Path | None) -> None:
        data = _load_structured(text) if structured else None
        if data is not None:
            scan(data, found, base, opens=False)
            return
        found.update(_REF.findall(text))
        found.update(_KEY_ENV_REF.findall(text))

    def scan_file(text: str, found: set[str], base: Path | None) -> bool:
        if "\n" in text or len(text) >= 4096:
            return False
        path = Path(os.path.expanduser(text))
        path = path if base is None or path.is_absolute() else base / path
        try:
            if not path.is_file():
                return False
            with open(path, "rb") as f:
                data = f.read(SCAN_LIMIT).decode("utf-8", errors="replace")
        except OSError:
            return False
        scan_text(data, found, path.suffix.lower() in _STRUCTURED_SUFFIXES, path.parent)
        return True

    def scan(obj: Any, found: set[str], base: Path | None, opens: bool) -> None:
        if obj is None:
            return
        if isinstance(obj, (str, os.PathLike)):
            text = str(obj)
            if not (opens and scan_file(text, found, base)):
                scan_text(text, found, SERVERS_KEY in text, base)
        elif isinstance(obj, (Mapping, list, tuple, set)) and (id(obj), id(found)) in seen:
            return
        elif isinstance(obj, Mapping):
            seen.add((id(obj), id(found)))
            if isinstance(obj.get("judge"), Mapping) and not obj["judge"].get(KEY_ENV_KEY):
                found.add(JUDGE_DEFAULT_KEY_ENV)
            for k, v in obj.items():
                if k == KEY_ENV_KEY and isinstance(v, str) and v.isidentifier():
                    found.add(v)
                scan(k, found, base, opens=False)
                if k == SERVERS_KEY:
                    scan(v, servers, base, opens=False)  # the servers' own settings: theirs alone
                elif k == SERVERS_CONFIG_KEY and isinstance(v, (str, os.PathLike)):
                    scan(v, servers, base, opens=True)  # the file holding them
                else:
                    scan(v, found, base, opens)
        elif isinstance(obj, (list, tuple, set)):
            seen.add((id(obj), id(found)))
            for v in obj:
                scan(v, found, base, opens)
        else:
            for attr in ("source", "secret_refs"):  # an AgentSpec carries where its values came from
                scan(getattr(obj, attr, None), found, None, opens=True)

    for s in sources:
        scan(s, process, None, opens=True)
    return process, servers - process


def referenced_names(*sources: Any) -> set[str]:
    """Environment variable names that configs ask for, for the process that runs their user code:
    ``${NAME}``, ``${NAME:-default}``, ``${oc.env:NAME}``, ``api_key_env: NAME`` in text, nested dicts/lists,
    or files (paths; read up to a limit). A name asked for only inside an MCP server's entry is not one of
    them: it goes to that server alone (:func:`server_names`)."""
    return _scan_names(sources)[0]


def server_names(*sources: Any) -> set[str]:
    """The names asked for only inside MCP servers' entries (``env``, ``headers``, ``url``, ...), nowhere
    else: the process that starts the servers gets their values out of its environment
    (:mod:`engines.isolation.server_env`), and each server the ones its own entry names."""
    return _scan_names(sources)[1]


def server_values(*sources: Any, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The values of :func:`server_names` that are set in ``base`` (this process's servers' variables, then its
    environment: a run process hands on what it was handed); the studio's own variables never."""
    return named_values(server_names(*sources), base)


def named_values(names: Iterable[str], base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The values of ``names`` set in ``base`` (this process's servers' variables, then its environment) — in a
    studio only the invited ones; the studio's own variables never."""
    from .server_env import lookup

    base = lookup() if base is None else base
    return {n: base[n] for n in sorted(invited_only(names)) if n in base and not n.upper().startswith(STUDIO_PREFIX)}


def user_code_envs(*sources: Any, extra: Mapping[str, str] | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """For a process that runs the user code of ``sources`` (configs, spec files): (its environment,
    :func:`user_code_env` with the names they ask for and ``extra``; the variables only their MCP servers ask
    for, handed over beside it: :func:`server_values`), from one read of the sources."""
    process, servers = _scan_names([s for s in sources if s])
    env = user_code_env(allow=process)
    env.update(extra or {})
    return env, named_values(servers)


def allowed_names(extra: Iterable[str] = ()) -> set[str]:
    """``$AWORLD_USER_ENV_ALLOW`` and the names ``extra`` asks for — in a studio, those its operator invited
    (:mod:`engines.env_values.env_invitation`): a config cannot ask for the rest by naming them."""
    names = {n.strip() for n in os.environ.get(ALLOW_ENV, "").split(",") if n.strip()}
    return names | invited_only(extra)


def invited_only(names: Iterable[str]) -> set[str]:
    from ..env_values.env_invitation import invited

    allowed = invited()
    return set(names) if allowed is None else set(names) & allowed


def user_code_env(allow: Iterable[str] = (), base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (this process's environment) without credentials, except the names in ``allow`` and
    ``$AWORLD_USER_ENV_ALLOW``; the studio's own variables never."""
    base = os.environ if base is None else base
    wanted = allowed_names(allow)
    out = {}
    for name, value in base.items():
        if name.upper().startswith(STUDIO_PREFIX):
            continue
        if is_credential(name, value) and name not in wanted:
            continue
        out[name] = value
    return out


def hidden_names(allow: Iterable[str] = (), base: Mapping[str, str] | None = None) -> list[str]:
    """The variables :func:`user_code_env` leaves out (for documentation and tests)."""
    base = os.environ if base is None else base
    kept = user_code_env(allow, base)
    return sorted(n for n in base if n not in kept)


def env_for_files(*spec_files: Any, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a process that runs user code from spec files (an evaluation's ``eval.yaml``
    and its run's ``run.yaml``, a run for chat): :func:`user_code_env` with the names they ask for (what
    only their MCP servers ask for is :func:`server_values`, handed over beside it)."""
    return user_code_envs(*spec_files, extra=extra)[0]

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


def referenced_names(*sources: Any) -> set[str]:
    """Environment variable names that configs ask for: ``${NAME}``, ``${NAME:-default}``,
    ``${oc.env:NAME}``, ``api_key_env: NAME`` in text, nested dicts/lists, or files (paths; read up to a limit)."""
    found: set[str] = set()

    def scan(obj: Any) -> None:
        if obj is None:
            return
        if isinstance(obj, (str, os.PathLike)):
            text = str(obj)
            if "\n" not in text and len(text) < 4096:
                try:
                    p = Path(os.path.expanduser(text))
                    if p.is_file():
                        with open(p, "rb") as f:
                            text = f.read(SCAN_LIMIT).decode("utf-8", errors="replace")
                except OSError:
                    pass
            found.update(_REF.findall(text))
            found.update(_KEY_ENV_REF.findall(text))
        elif isinstance(obj, Mapping):
            if isinstance(obj.get("judge"), Mapping) and not obj["judge"].get(KEY_ENV_KEY):
                found.add(JUDGE_DEFAULT_KEY_ENV)
            for k, v in obj.items():
                if k == KEY_ENV_KEY and isinstance(v, str) and v.isidentifier():
                    found.add(v)
                scan(k)
                scan(v)
        elif isinstance(obj, (list, tuple, set)):
            for v in obj:
                scan(v)
        else:
            for attr in ("source", "secret_refs"):  # an AgentSpec carries where its values came from
                scan(getattr(obj, attr, None))

    for s in sources:
        scan(s)
    return found


def allowed_names(extra: Iterable[str] = ()) -> set[str]:
    names = {n.strip() for n in os.environ.get(ALLOW_ENV, "").split(",") if n.strip()}
    return names | set(extra)


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
    and its run's ``run.yaml``, a run for chat): :func:`user_code_env` with the names they ask for."""
    env = user_code_env(allow=referenced_names(*[f for f in spec_files if f]))
    env.update(extra or {})
    return env

"""The environment user code sees: what a Python/ML process needs to run, and the names it is given by invitation.

User code — tools, rewards, the checks that import them, and the run processes the studio starts —
gets :func:`user_code_env`, an allowlist (issue 41, "environment values by invitation only"):

* the variables a Python/ML process needs (:data:`RUNTIME_NAMES`, :data:`RUNTIME_PREFIXES`: ``PATH``, ``HOME``,
  locale, ``TMPDIR``, proxies, CA bundles, the interpreter's ``PYTHON*`` settings, ``CUDA_*``/``NCCL_*``/``OMP_*``/
  ``TORCH*``/``HF_*``/``TRANSFORMERS_*``/``RAY_*``/``WANDB_*`` ..., this project's own ``AWORLD_*``) — minus any that
  looks like a credential (:func:`is_credential`: ``HF_TOKEN``, ``WANDB_API_KEY``, ``HF_ENDPOINT`` with a
  ``user:pw@`` in it); ``PYTHONSTARTUP`` and ``PYTHONINSPECT`` (interactive code hooks no process of user code needs)
  neither;
* plus the names asked for by name: a ``${NAME}`` (or OmegaConf's ``${oc.env:NAME}``) in the agent
  config, the reward spec or the engine config, a judge's ``api_key_env: NAME`` (a judge without one
  reads ``OPENAI_API_KEY``) — in a studio only those its operator invited (:mod:`engines.env_values.env_invitation`)
  — or a name listed in ``$AWORLD_USER_ENV_ALLOW`` (comma-separated, set by whoever starts the studio or the CLI);
* never the studio's own variables (``AWORLD_STUDIO_*``: its login), whatever asks for them.

Any other variable (``MY_APP_SETTING``, ``PGPASSWORD``, ``REDIS_URL``, ``SENTRY_DSN``, ...) is not handed on.

A variable goes only to the process that names it: a ``${NAME}`` written only inside one MCP server's entry
(``mcp_config: {mcpServers: {<server>: ...}}``, or the ``mcp_config`` file) is not the process's
(:func:`referenced_names` leaves it out) but that server's (:func:`server_names`, :func:`server_values`):
its value is handed over beside the environment (:mod:`engines.isolation.server_env`).
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..files.user_files import NotPlainFile, open_plain_file

log = logging.getLogger(__name__)

#: comma-separated names user code may see beyond the allowlist (a plain setting, or one that looks like a credential)
ALLOW_ENV = "AWORLD_USER_ENV_ALLOW"
#: the studio's own variables (its login): never given to user code, whatever asks for them
STUDIO_PREFIX = "AWORLD_STUDIO_"
#: a name part that is a credential word itself (``GITHUB_PAT``, ``SENTRY_DSN``, ``MYSQL_PWD``, ``API_KEYS``)
_CREDENTIAL_PARTS = {
    "KEY",
    "KEYS",
    "PAT",
    "PWD",
    "DSN",
    "PRIVATE",
    "SIG",
    "SIGNATURE",
    "CRED",
    "CREDS",
    "JWT",
    "BEARER",
}
#: a word that makes any name part holding it one (``PGPASSWORD``, ``HFTOKEN``, ``DJANGO_SECRETKEY``, ``OAUTH``)
_CREDENTIAL_WORDS = ("PASS", "SECRET", "TOKEN", "CREDENTIAL", "AUTH", "COOKIE", "SESSION", "APIKEY", "WEBHOOK")
#: a name part ending so (``SSHKEY``, ``ACCESSKEYS``, ``DBPWD``, ``PGDSN``)
_CREDENTIAL_ENDINGS = ("KEY", "KEYS", "PWD", "DSN")
#: name parts that hold a credential word but are none
_NOT_CREDENTIAL_PARTS = {"TOKENIZER", "TOKENIZERS", "AUTHOR", "AUTHORS", "BYPASS", "PASSTHROUGH", "COMPASS"}
_NOT_CREDENTIALS = {"PWD", "OLDPWD"}
#: a URL with a user part: ``user:pw@``, ``:pw@``, ``token@`` (a DSN's key); bounded, so linear on any value
_URL_USER = re.compile(r"://[^\s/?#@]{1,1024}@")
#: a URL query's parameter names (``?password=``, ``&token=``, ``?sig=``: judged as names are)
_QUERY_NAME = re.compile(r"[?&;]([A-Za-z0-9_.\-]{1,64})=[^&;\s#]")
#: webhook URLs, whose path is the secret
_WEBHOOK = re.compile(r"hooks\.slack\.com/|discord(?:app)?\.com/api/webhooks/|\.webhook\.office\.com/", re.I)

#: the variables a Python/ML process needs to run, by name (compared upper-case: ``http_proxy`` too)
RUNTIME_NAMES = frozenset(
    """PATH HOME USER LOGNAME SHELL HOSTNAME PWD LANG LANGUAGE TZ TERM COLORTERM NO_COLOR FORCE_COLOR COLUMNS LINES
    TMPDIR TMP TEMP VIRTUAL_ENV XDG_CACHE_HOME XDG_CONFIG_HOME XDG_DATA_HOME HTTP_PROXY HTTPS_PROXY NO_PROXY ALL_PROXY
    SSL_CERT_FILE SSL_CERT_DIR REQUESTS_CA_BUNDLE CURL_CA_BUNDLE CC CXX CFLAGS CXXFLAGS LDFLAGS CPATH LIBRARY_PATH
    MAX_JOBS MASTER_ADDR MASTER_PORT RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE NODE_RANK GROUP_RANK NPROC_PER_NODE
    NNODES USE_HF""".split()
)
#: ... and by prefix: the interpreter, locale, GPUs and their libraries, the ML libraries' settings, this project's
RUNTIME_PREFIXES = (
    *("PYTHON", "LC_", "LD_", "CONDA_", "AWORLD_"),
    *("CUDA_", "CUDNN_", "CUBLAS_", "NVIDIA_", "NCCL_", "NVTE_", "ROCR_", "ROCM_", "HIP_", "HSA_"),
    *("OMP_", "MKL_", "OPENBLAS_", "KMP_", "GOMP_", "MALLOC_", "NUMEXPR_"),
    *("TORCH", "PYTORCH_", "TRITON_", "XLA_", "JAX_", "TF_"),
    *("HF_", "HUGGINGFACE_", "TRANSFORMERS_", "TOKENIZERS_", "DATASETS_", "SAFETENSORS_", "ACCELERATE_", "TRL_"),
    *("PEFT_", "BITSANDBYTES_", "DEEPSPEED_", "VLLM_", "SGLANG_", "RAY_", "WANDB_", "MLFLOW_", "MODELSCOPE_"),
    *("VERL_", "SWIFT_"),
)
#: runtime-looking names not handed on: code run only by an interactive interpreter, which user code never is
_NOT_RUNTIME = {"PYTHONSTARTUP", "PYTHONINSPECT"}
_REF = re.compile(r"\$\{(?:oc\.env:)?([A-Za-z_][A-Za-z0-9_]*)(?:[:,][^}]*)?\}")
#: a judge reward names the variable its key is read from (engines.rewards.judge)
KEY_ENV_KEY = "api_key_env"
JUDGE_DEFAULT_KEY_ENV = "OPENAI_API_KEY"
_KEY_ENV_REF = re.compile(r"\b" + KEY_ENV_KEY + r"""["']?\s*[:=]\s*["']?([A-Za-z_][A-Za-z0-9_]*)""")
#: the most text scanned for ``${NAME}`` in one file
SCAN_LIMIT = 4 << 20


def _credential_name(upper: str) -> bool:
    for part in re.split(r"[^A-Z0-9]+", upper):
        if not part or part in _NOT_CREDENTIAL_PARTS:
            continue
        if part in _CREDENTIAL_PARTS or part.endswith(_CREDENTIAL_ENDINGS) or any(w in part for w in _CREDENTIAL_WORDS):
            return True
    return False


def is_credential(name: str, value: str = "") -> bool:
    """Whether a variable looks like it holds a credential: by its name (a part that is, ends in or holds a
    credential word: ``GITHUB_PAT``, ``API_KEYS``, ``PGPASSWORD``, ``HFTOKEN``, ``SENTRY_DSN``,
    ``DB_PASSPHRASE``) or its value (a URL with a user part — ``user:pw@``, ``:pw@``, a DSN's ``token@`` — a
    query naming a credential — ``?password=``, ``&token=`` — or a webhook URL)."""
    upper = name.upper()
    if upper in _NOT_CREDENTIALS:
        return False
    if upper.startswith(STUDIO_PREFIX) or _credential_name(upper):
        return True
    value = value or ""
    if "://" in value and _URL_USER.search(value):
        return True
    if any(_credential_name(q.upper()) for q in _QUERY_NAME.findall(value)):
        return True
    return bool(_WEBHOOK.search(value))


def is_runtime(name: str) -> bool:
    """Whether a variable is one a Python/ML process needs to run (:data:`RUNTIME_NAMES`, :data:`RUNTIME_PREFIXES`;
    the studio's own never)."""
    upper = name.upper()
    if upper.startswith(STUDIO_PREFIX) or upper in _NOT_RUNTIME:
        return False
    return upper in RUNTIME_NAMES or upper.startswith(RUNTIME_PREFIXES)


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
        try:  # a plain file only, never waited on: /proc/kmsg or a FIFO named here held a studio thread for ever
            with open_plain_file(path) as (f, _):
                data = f.read(SCAN_LIMIT).decode("utf-8", errors="replace")
        except NotPlainFile as e:
            log.warning("%s %s (its ${NAME} are not looked for; the check says so)", path, e)
            return False
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
    """``base`` (this process's environment) by invitation only: the variables a Python/ML process needs
    (:func:`is_runtime`) that hold no credential (:func:`is_credential`), plus the names in ``allow`` (in a studio,
    the invited ones) and ``$AWORLD_USER_ENV_ALLOW``; the studio's own variables never."""
    base = os.environ if base is None else base
    wanted = allowed_names(allow)
    out = {}
    for name, value in base.items():
        if name.upper().startswith(STUDIO_PREFIX):
            continue
        if name in wanted or (is_runtime(name) and not is_credential(name, value)):
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

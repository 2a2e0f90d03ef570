"""The shipped demo choices and uploads (their labels, size limits, masking); :class:`SetupInputs` itself is in
check_inputs.py, which the check worker imports (this module's labels bring Gradio's translation markers).

Pure functions only: nothing here imports user code or heavy libraries, so the studio process
can call them freely.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path
from typing import Any

import yaml

from engines.results.check_result import CheckError
from engines.files.user_files import size_text
from engines.files.yaml_input import MAX_BYTES, load_user_file
from engines.runs.no_links import folder_beneath, plain_file_at, write_beneath
from engines.runs.rundir import atomic_write_text

from ..rendering.i18n import _
from .upload_guard import BINARY_PROBE, MASK_LIMIT, maskable, refused_size
from .upload_secrets import mask_bytes
from ..worker.check_inputs import DEMO_ENGINE, SetupInputs

REPO_ROOT = Path(__file__).resolve().parents[2]
ASSETS = REPO_ROOT / "assets"
AGENTS_DIR = ASSETS / "agents"
DATASETS_DIR = ASSETS / "datasets"
REWARDS_DIR = ASSETS / "rewards"

DEMO_AGENT = AGENTS_DIR / "letters_agent.yaml"
DEMO_TRAIN = DATASETS_DIR / "letters_train.jsonl"
DEMO_TEST = DATASETS_DIR / "letters_test.jsonl"
DEMO_REWARD = f"{REWARDS_DIR / 'letter_reward.py'}:letter_reward"
DEMO_CONFIG = ASSETS / "configs" / "letters_grpo.yaml"
#: each engine's config for the letters demo (an engine picked while Setup holds the last engine's demo config,
#: unchanged, starts from its own: swift on trl's demo config would have trained on ms-swift's defaults)
ENGINE_DEMO_CONFIGS = {"trl": DEMO_CONFIG, "swift": ASSETS / "configs" / "letters_swift.yaml"}
FALLBACK_DEMO_CONFIG = """\
# Overrides of the engine's defaults (the effective config is shown below).
learning_rate: 0.001
prompts_per_step: 8
num_generations: 16
max_steps: 400
"""

DATASET_SUFFIXES = (".jsonl", ".json", ".csv", ".tsv", ".parquet")
AGENT_SUFFIXES = (".yaml", ".yml")
UPLOADS = ".uploads"


def demo_config_text() -> str:
    """The shipped demo's config overrides (assets/configs/letters_grpo.yaml)."""
    try:
        return DEMO_CONFIG.read_text(encoding="utf-8")
    except OSError:
        return FALLBACK_DEMO_CONFIG


def engine_demo_configs() -> dict[str, str]:
    """Each engine's demo config text (ENGINE_DEMO_CONFIGS), for the engines that have one."""
    out = {}
    for engine, path in ENGINE_DEMO_CONFIGS.items():
        try:
            out[engine] = path.read_text(encoding="utf-8")
        except OSError:
            if engine == DEMO_ENGINE:
                out[engine] = FALLBACK_DEMO_CONFIG
    return out


def paired_test(train: str | None, test: str | None) -> bool:
    """Whether a shipped test set belongs with ``train``: ``<name>_test.*`` goes with ``<name>_train.*``
    in the shipped datasets folder. A test set the user uploaded or typed always counts as chosen."""
    if not test:
        return True
    t = Path(test)
    if t.parent.resolve() != DATASETS_DIR.resolve():
        return True
    stem = t.stem[: -len("_test")] if t.stem.endswith("_test") else None
    return (
        bool(train)
        and stem is not None
        and Path(train).stem in (f"{stem}_train", stem)
        and Path(train).parent.resolve() == DATASETS_DIR.resolve()
    )


def demo_inputs() -> SetupInputs:
    return SetupInputs(
        agent=str(DEMO_AGENT),
        train=str(DEMO_TRAIN),
        test=str(DEMO_TEST),
        rewards=[{"ref": DEMO_REWARD, "weight": 1.0}],
        config_text=demo_config_text(),
        engine=DEMO_ENGINE,
    )


# -- shipped choices -------------------------------------------------------------------------------
def shipped_agents() -> list[str]:
    return sorted(str(p) for p in AGENTS_DIR.glob("*.y*ml")) if AGENTS_DIR.is_dir() else []


def shipped_datasets() -> list[str]:
    if not DATASETS_DIR.is_dir():
        return []
    return sorted(str(p) for p in DATASETS_DIR.iterdir() if p.suffix.lower() in DATASET_SUFFIXES)


def shipped_reward_files() -> list[str]:
    return sorted(str(p) for p in REWARDS_DIR.glob("*.py")) if REWARDS_DIR.is_dir() else []


def file_choices(paths: list[str], extra: list[str] | None = None) -> list[tuple[str, str]]:
    """Dropdown (label, value) pairs: shipped files by name, others by their folder too."""
    out, seen = [], set()
    for p in [*(extra or []), *paths]:
        if not p or p in seen:
            continue
        seen.add(p)
        out.append((display_path(p), p))
    return out


def display_path(p: str) -> str:
    path = Path(p)
    try:
        path.resolve().relative_to(ASSETS)
        return f"{path.name} · {_('demo')}"
    except ValueError:
        pass
    if UPLOADS in path.parts:
        return f"{path.name.replace('.resolved', '')} · {_('uploaded')}"
    return str(path)


# -- uploads ---------------------------------------------------------------------------------------
#: an agent file larger than this is not read whole to be masked: it is refused by its check (1 MB cap)
AGENT_UPLOAD_MAX = 4 << 20


def store_upload(tmp_path: str, runs_dir: str | os.PathLike) -> str:
    """Copy a Gradio temp upload into ``<runs>/.uploads/<digest>/<name>`` so run specs that point at
    it stay valid after Gradio cleans its cache. Same content → same path. The literal secrets of any text that
    may be a config (an agent YAML under any name) are masked in the stored copy and in Gradio's (which Gradio
    serves): see upload_secrets."""
    src = Path(tmp_path)
    refused = refused_size(src) if not src.exists() else None
    if refused is not None:  # deleted at upload as too big to mask (core/upload_guard.py): say so, as a check would
        raise ValueError(
            f"the file '{src.name}' is {size_text(refused)}; at most {size_text(MAX_BYTES)} is read — "
            "is it the right file? a config this large is usually data by mistake"
        )
    size = src.stat().st_size
    if src.suffix.lower() in AGENT_SUFFIXES and size > AGENT_UPLOAD_MAX:
        # never stored, and not left in Gradio's cache (served) unmasked either
        src.unlink(missing_ok=True)
        raise ValueError(
            f"the agent file '{src.name}' is {size / (1 << 20):.1f} MB; an agent config is at most "
            f"{AGENT_UPLOAD_MAX >> 20} MB — upload the YAML itself"
        )
    # any text that may be a config is masked (an agent uploaded as agent.yaml.bak too): core/upload_guard.py
    data = src.read_bytes() if maskable(src) and size <= MASK_LIMIT else b"\0"
    if b"\0" not in data[:BINARY_PROBE]:
        masked, notes = mask_bytes(data)
        if notes:
            data = masked
            try:
                src.write_bytes(masked)  # Gradio's cached copy is served by its file route
            except OSError:
                pass
        digest = hashlib.sha1(data).hexdigest()[:12]
        chunks: Any = [data]
    else:  # streamed: an upload never costs its size in memory
        h = hashlib.sha1()
        with open(src, "rb") as f:
            while block := f.read(1 << 20):
                h.update(block)
        digest, chunks = h.hexdigest()[:12], None
    name = _safe_name(src.name)
    # made and written by descriptors, never through a link: user code can write into the runs folder, and a link
    # planted at .uploads/<digest> (the digest of a file about to be uploaded) had the studio, as root, write the
    # upload where the link pointed (issue 41, fifth probe)
    Path(runs_dir).mkdir(parents=True, exist_ok=True)  # the studio's own folder
    dir_fd = folder_beneath(runs_dir, UPLOADS, digest)
    try:
        if not plain_file_at(dir_fd, name):  # callers storing the same upload at once each write their own part
            if chunks is None:
                write_beneath(dir_fd, name, lambda f: _copy_from(src, f))
            else:
                write_beneath(dir_fd, name, lambda f: f.write(chunks[0]))
    finally:
        os.close(dir_fd)
    return str(Path(runs_dir).resolve() / UPLOADS / digest / name)


def _copy_from(src: Path, out) -> None:
    with open(src, "rb") as f:
        shutil.copyfileobj(f, out, 1 << 20)


def masked_secrets(path: str) -> list[str]:
    """Which literal secrets of an agent upload were masked (e.g. ``"api_key (line 4)"``): none are left
    in the stored copy, so this reads the ``"****"`` back."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    from .upload_secrets import SECRET_KEY

    notes = []
    for n, line in enumerate(text.splitlines(), 1):
        key, sep, value = line.partition(":")
        if sep and SECRET_KEY.search(key.strip(" -'\"")) and value.split("#")[0].strip().strip("'\"") == "****":
            notes.append(f"{key.strip(' -')} (line {n})")
    return notes


def _rel(p: Path) -> str:
    try:
        return str(p.relative_to(REPO_ROOT))
    except ValueError:
        return str(p)


MAX_NAME = 120


def _safe_name(name: str) -> str:
    """A file name safe to store: odd characters replaced, at most ``MAX_NAME`` characters, its extension
    kept (a long name is cut in its stem, so ``.jsonl`` stays ``.jsonl``)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(name).name).strip("._") or "upload"
    if len(name) <= MAX_NAME:
        return name
    stem, dot, suffix = name.rpartition(".")
    if dot and stem and 0 < len(suffix) <= 16:
        return stem[: MAX_NAME - len(suffix) - 1].rstrip("._-") + "." + suffix
    return name[:MAX_NAME]


def resolve_agent_upload(path: str, search_dirs: list[Path] | None = None) -> tuple[str, list[str]]:
    """An uploaded agent YAML loses its folder, so its relative paths (``model: ../models/x``,
    ``tools: [../tools/t.py:fn]``) no longer resolve. Rewrite each relative path that does not exist
    next to the upload to the first match under ``search_dirs`` (the studio's working folder, then the
    shipped agents folder). Returns (path of the YAML to use, notes shown to the user)."""
    p = Path(path)
    try:
        # the shared safe loader (size, encoding, aliases capped): this runs in the studio process
        data = load_user_file(p, module="agent", role="agent file")
    except (OSError, CheckError):
        return path, []  # the agent check reports it
    if not isinstance(data, dict):
        return path, []
    dirs = [p.parent, Path.cwd(), AGENTS_DIR, *(search_dirs or [])]
    notes: list[str] = []

    def fix(value: Any) -> Any:
        if not isinstance(value, str) or "${" in value:
            return value
        target, sep, attr = value.rpartition(":") if value.count(":") == 1 and ".py:" in value else (value, "", "")
        if not (target.startswith((".", "..")) or (sep and not os.path.isabs(target))):
            return value
        if os.path.isabs(os.path.expanduser(target)):
            return value
        for d in dirs:
            cand = d / target
            if cand.exists():
                if d != p.parent:
                    notes.append(f"'{target}' → {_rel(cand.resolve())}")
                return f"{cand.resolve()}{sep}{attr}"
        return value

    def fix_agent(conf: dict) -> None:
        if "model" in conf:
            conf["model"] = fix(conf["model"])
        llm = conf.get("llm_config")
        if isinstance(llm, dict) and "llm_model_name" in llm:
            llm["llm_model_name"] = fix(llm["llm_model_name"])
        tools = conf.get("tools")
        if isinstance(tools, list):
            conf["tools"] = [fix(t) for t in tools]
        elif isinstance(tools, str):
            conf["tools"] = fix(tools)
        mcp = conf.get("mcp_config")  # MCP: a JSON file, or stdio servers' script paths and folders
        if isinstance(mcp, str):
            conf["mcp_config"] = fix(mcp)
        elif isinstance(mcp, dict) and isinstance(mcp.get("mcpServers"), dict):
            for server in mcp["mcpServers"].values():
                if isinstance(server, dict):
                    for key in ("command", "cwd"):
                        if key in server:
                            server[key] = fix(server[key])
                    if isinstance(server.get("args"), list):
                        server["args"] = [fix(a) for a in server["args"]]

    agents = data.get("agents")
    if isinstance(agents, dict):
        for conf in agents.values():
            if isinstance(conf, dict):
                fix_agent(conf)
    elif isinstance(agents, list):
        for conf in agents:
            if isinstance(conf, dict):
                fix_agent(conf)
    else:
        fix_agent(data)
    if not notes:
        return path, []
    out = p.with_name(p.stem + ".resolved" + p.suffix)
    # the same upload resolved by several callers at once: each reads a whole file
    atomic_write_text(out, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return str(out), notes


# -- rewards -------------------------------------------------------------------------------------
def reward_label(key: str) -> str:
    """``exact_match`` → itself; ``/abs/letter_reward.py:letter_reward`` → ``letter_reward.py:letter_reward``."""
    if ":" in key:
        target, _sep, attr = key.rpartition(":")
        if target.endswith(".py"):
            return f"{Path(target).name}:{attr}" + (f" · {_('uploaded')}" if UPLOADS in Path(target).parts else "")
    return key


def upload_name(name: str) -> str:
    """The name Gradio gives an uploaded file: odd characters stripped, cut at 200 bytes (its extension
    kept), so a reward text naming a long file still finds its upload."""
    from gradio_client.utils import strip_invalid_filename_characters

    return strip_invalid_filename_characters(name)


def with_args(ref: str, args: dict[str, Any]) -> str:
    """``module:factory(a=1, b='x')``: the reference with its arguments, as the picker and CLI write it."""
    return f"{ref}({', '.join(f'{k}={v!r}' for k, v in (args or {}).items())})"


def parse_reward_text(text: str, uploaded: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """``exact_match@1, letter_reward.py:letter_reward@0.5`` (commas or new lines) → reward entries.
    ``file.py:fn`` whose file name matches an uploaded file (``uploaded``: name → stored path) binds
    to that upload. The same ``NAME@WEIGHT``, ``module:factory(k=v, ...)`` and inline
    ``{judge: {url: ..., model: ...}}@WEIGHT`` syntax as ``python -m engines --reward``. Split in one
    linear pass, size-capped (:mod:`engines.rewards.reward_text`); weights finite and bounded."""
    from engines.rewards.reward_text import checked_weight, split_items
    from engines.rewards.spec import parse_cli_reward

    out: list[dict[str, Any]] = []
    for raw in split_items(text or ""):  # a factory's arguments and an inline mapping keep their commas
        item = raw
        if item.startswith("{"):
            out.extend(parse_cli_reward(item))
            continue
        weight = 1.0
        if "@" in item and ")" not in item.rpartition("@")[2]:
            item, _sep, w = item.rpartition("@")
            weight = checked_weight(w, raw)
        item = item.strip()
        if ":" in item:
            target, _sep, attr = item.rpartition(":")
            name = Path(target).name
            stored = (
                uploaded and not Path(target).is_absolute() and (uploaded.get(name) or uploaded.get(upload_name(name)))
            )
            if stored:
                item = f"{stored}:{attr}"
            out.append({"ref": item, "weight": weight})
        else:
            out.append({"name": item, "weight": weight})
    return out

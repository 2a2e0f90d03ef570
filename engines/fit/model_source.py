"""Where a model comes from: a local folder, or a Hugging Face hub id resolved through the local
Hugging Face cache — without downloading anything and without hanging when there is no network.

* :func:`resolve_model` — a folder (``config.json`` inside) or a hub id → a local folder to load.
  An id that is not cached is an error that says how to get it, unless the hub answers within a few
  seconds (then the run downloads it, and the check says so).
* :func:`local_models` — models found in the project's ``assets/models`` and in the local cache
  (what the studio offers).
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from ..results.check_result import CheckError

ASSETS_MODELS = Path(__file__).resolve().parents[2] / "assets" / "models"
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
PROBE_TIMEOUT_S = 5.0


@dataclass
class ModelSource:
    name: str  # what the user wrote
    path: str  # what to load (a folder; the id itself when the run downloads it)
    kind: str  # folder | cache | hub
    warning: str | None = None

    def to_dict(self) -> dict:
        return {"name": self.name, "path": self.path, "kind": self.kind}


def hub_cache_dir() -> str:
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)


def _hub_reachable(repo_id: str, timeout_s: float = PROBE_TIMEOUT_S) -> bool:
    """Whether the hub answers for ``repo_id`` within ``timeout_s`` (a thread bounds it: DNS and
    proxies do not always honour a socket timeout)."""
    result: dict[str, bool] = {}

    def probe() -> None:
        try:
            from huggingface_hub import HfApi

            HfApi().model_info(repo_id, timeout=timeout_s)
            result["ok"] = True
        except Exception:  # noqa: BLE001 - any failure means: not reachable now
            result["ok"] = False

    t = threading.Thread(target=probe, daemon=True)
    t.start()
    t.join(timeout_s + 1.0)
    return result.get("ok", False)


def resolve_model(
    name: str, base_dir: str | os.PathLike | None = None, module: str = "config", key: str = "model"
) -> ModelSource:
    """A local folder for ``name`` (folder path, or hub id found in the local HF cache)."""
    text = str(name).strip()
    path = Path(os.path.expanduser(text))
    if not path.is_absolute() and base_dir is not None and (Path(base_dir) / path).exists():
        path = Path(base_dir) / path
    if path.exists():
        if not path.is_dir() or not (path / "config.json").is_file():
            raise CheckError(
                module,
                f"`{key}` '{text}' is not a model folder (no config.json in it)",
                "point it at a folder written by save_pretrained, or a hub id",
            )
        return ModelSource(text, str(path.resolve()), "folder")
    if text.startswith((".", "/", "~")) or not HUB_ID.match(text):
        raise CheckError(
            module,
            f"model folder '{text}' does not exist",
            "fix the path (relative paths are resolved against the working directory), or give a "
            "Hugging Face hub id such as Qwen/Qwen2.5-0.5B-Instruct",
        )
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        folder = snapshot_download(text, local_files_only=True)
    except (LocalEntryNotFoundError, FileNotFoundError, OSError, ValueError):
        folder = None
    if folder and (Path(folder) / "config.json").is_file():
        return ModelSource(text, folder, "cache")
    from huggingface_hub import constants

    fetch = f"hf download {text}"
    if constants.HF_HUB_OFFLINE:
        raise CheckError(
            module,
            f"model '{text}' is not in the local Hugging Face cache ({hub_cache_dir()}) and HF_HUB_OFFLINE is set",
            f"on a machine with network: `{fetch}` (same HF_HOME), or point `{key}` at a local folder",
        )
    if not _hub_reachable(text):
        raise CheckError(
            module,
            f"model '{text}' is not in the local Hugging Face cache ({hub_cache_dir()}) and the "
            "hub cannot be reached from here",
            f"download it where there is network (`{fetch}`, same "
            f"HF_HOME or copy the cache), or point `{key}` at a local folder",
        )
    return ModelSource(text, text, "hub", warning=f"model '{text}' is not cached: the run downloads it first")


def local_models(extra_dirs: list[str | os.PathLike] | None = None) -> list[dict]:
    """Models this machine has: folders under assets/models (and ``extra_dirs``) and models in the
    local Hugging Face cache. Each: ``{"name", "path", "source", "size_mb"}``."""
    out: list[dict] = []
    for base in [ASSETS_MODELS, *(Path(d) for d in extra_dirs or [])]:
        if not Path(base).is_dir():
            continue
        for p in sorted(Path(base).iterdir()):
            if (p / "config.json").is_file():
                size = sum(f.stat().st_size for f in p.iterdir() if f.is_file())
                out.append(
                    {"name": p.name, "path": str(p.resolve()), "source": "folder", "size_mb": round(size / 2**20, 1)}
                )
    try:
        from huggingface_hub import scan_cache_dir

        cache = scan_cache_dir(hub_cache_dir())  # read now: scan_cache_dir took its default at import
    except Exception:  # noqa: BLE001 - no cache yet, or unreadable: nothing to offer
        return out
    for repo in sorted(cache.repos, key=lambda r: r.repo_id):
        if repo.repo_type != "model":
            continue
        if any((Path(rev.snapshot_path) / "config.json").is_file() for rev in repo.revisions):
            out.append(
                {
                    "name": repo.repo_id,
                    "path": repo.repo_id,
                    "source": "hf-cache",
                    "size_mb": round(repo.size_on_disk / 2**20, 1),
                }
            )
    return out

"""Experiment trackers (``report_to``): which ones exist, whether each can start on this machine
(its package, its credentials — checked before launch), the environment a run gives them, and the
link to the tracker's run once training has started.

``tensorboard`` is always written by the engines themselves (the run directory's ``tensorboard/``), so
naming it asks for nothing more. ``wandb``, ``mlflow`` and ``swanlab`` go to the training library's
own integration (Hugging Face's ``report_to``). Credentials are read from the environment (or the
tracker's own login file) of the process that trains; they are never written to a run file — only
non-secret settings (mode, project, local folders) are.
"""

from __future__ import annotations

import importlib.util
import netrc
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ..results.check_result import CheckError, did_you_mean

TRACKERS = ("tensorboard", "wandb", "mlflow", "swanlab")
#: tracker → (package, install command)
PACKAGES = {
    "wandb": ("wandb", "pip install wandb"),
    "mlflow": ("mlflow", "pip install mlflow"),
    "swanlab": ("swanlab", "pip install swanlab"),
}
DEFAULT_PROJECT = "aworld-trainer"
TRACKERS_DIR = "trackers"  # inside the run directory: offline runs and local stores


def normalize(report_to: Any) -> list[str]:
    """``report_to`` as a list of tracker names (``none`` → [])."""
    if report_to is None:
        return []
    names = [report_to] if isinstance(report_to, str) else list(report_to)
    out: list[str] = []
    for name in names:
        if not isinstance(name, str):
            raise CheckError(
                "config", f"`report_to` holds {name!r}, not a tracker name", f"use names from: {', '.join(TRACKERS)}"
            )
        name = name.strip().lower()
        if name in ("none", ""):
            continue
        if name == "all":
            raise CheckError(
                "config",
                "`report_to: all` would start every tracker that happens to be installed",
                f"name the trackers you want: {', '.join(TRACKERS)}",
            )
        if name not in TRACKERS:
            raise CheckError(
                "config",
                f"`report_to` names '{name}', which this engine does not support{did_you_mean(name, TRACKERS)}",
                f"use one or more of: {', '.join(TRACKERS)}",
            )
        if name not in out:
            out.append(name)
    return out


def library_report_to(names: list[str]) -> list[str] | str:
    """What the training library's ``report_to`` gets: the trackers it starts itself (TensorBoard
    files are the engine's own, so it is left out)."""
    theirs = [n for n in names if n != "tensorboard"]
    return theirs or "none"


# -- checks ---------------------------------------------------------------------------------------
def _netrc_has(host: str) -> bool:
    try:
        return netrc.netrc().authenticators(host) is not None
    except (FileNotFoundError, netrc.NetrcParseError, OSError):
        return False


def _wandb_login(env: dict[str, str]) -> bool:
    if env.get("WANDB_API_KEY"):
        return True
    host = urlparse(env.get("WANDB_BASE_URL") or "https://api.wandb.ai").hostname or "api.wandb.ai"
    return _netrc_has(host)


def _swanlab_login(env: dict[str, str]) -> bool:
    if env.get("SWANLAB_API_KEY"):
        return True
    folder = Path(env.get("SWANLAB_SAVE_DIR") or Path.home() / ".swanlab")
    return (folder / ".netrc").is_file()


def check(names: list[str], mode: str = "online", env: dict[str, str] | None = None) -> list[str]:
    """Raise CheckError when a tracker cannot start here (package missing, no credentials in online
    mode); return warnings."""
    env = dict(os.environ if env is None else env)
    warnings: list[str] = []
    for name in names:
        if name == "tensorboard":
            continue
        package, install = PACKAGES[name]
        if importlib.util.find_spec(package) is None:
            raise CheckError(
                "config",
                f"`report_to` names {name}, but the {package} package is not installed",
                f"{install} (in the environment that trains), or remove {name} from report_to",
            )
        offline = mode == "offline"
        if (
            name == "wandb"
            and not offline
            and env.get("WANDB_MODE") not in ("offline", "disabled")
            and not _wandb_login(env)
        ):
            raise CheckError(
                "config",
                "wandb has no credentials: WANDB_API_KEY is not set and `wandb login` was not run",
                "export WANDB_API_KEY=... where the studio / CLI runs, run `wandb login`, "
                "or set tracker_mode: offline (sync later with `wandb sync`)",
            )
        if (
            name == "swanlab"
            and not offline
            and env.get("SWANLAB_MODE") not in ("offline", "local", "disabled")
            and not _swanlab_login(env)
        ):
            raise CheckError(
                "config",
                "swanlab has no credentials: SWANLAB_API_KEY is not set and `swanlab login` was not run",
                "export SWANLAB_API_KEY=..., run `swanlab login`, or set tracker_mode: offline",
            )
        if name == "mlflow" and not offline and not env.get("MLFLOW_TRACKING_URI"):
            warnings.append(
                "mlflow: MLFLOW_TRACKING_URI is not set; runs are stored in the run directory "
                f"({TRACKERS_DIR}/mlruns) — set it to log to an MLflow server"
            )
    return warnings


# -- the run's side ---------------------------------------------------------------------------------
def wandb_run_id(run_dir: str | os.PathLike) -> str:
    """The wandb run of a run directory: its own id (letters, digits, ``-``, ``_``; wandb allows 64 characters), the
    same in every attempt, so a resumed run goes on logging into the run it started (``WANDB_RESUME=allow``)."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", Path(run_dir).resolve().name)[-64:]


def environment(
    names: list[str],
    run_dir: str | os.PathLike,
    project: str | None = None,
    mode: str = "online",
    env: dict[str, str] | None = None,
    ids: dict[str, str] | None = None,
) -> dict[str, str]:
    """Environment variables (never secrets) that point the trackers at this run. ``ids``: the tracker runs an
    earlier attempt of it started (its status's ``tracker_ids``): mlflow resumes that run (``MLFLOW_RUN_ID``, which
    Hugging Face's callback reattaches to); wandb's run has the run directory's id in every attempt."""
    env = dict(os.environ if env is None else env)
    ids = ids or {}
    base = Path(run_dir) / TRACKERS_DIR
    out: dict[str, str] = {}
    if "wandb" in names:
        out["WANDB_DIR"] = str(base)
        out["WANDB_PROJECT"] = project or env.get("WANDB_PROJECT") or DEFAULT_PROJECT
        out["WANDB_RUN_ID"] = env.get("WANDB_RUN_ID") or wandb_run_id(run_dir)
        out["WANDB_RESUME"] = env.get("WANDB_RESUME") or "allow"
        if mode == "offline":
            out["WANDB_MODE"] = "offline"
    if "mlflow" in names:
        out["MLFLOW_EXPERIMENT_NAME"] = project or env.get("MLFLOW_EXPERIMENT_NAME") or DEFAULT_PROJECT
        if mode == "offline" or not env.get("MLFLOW_TRACKING_URI"):
            out["MLFLOW_TRACKING_URI"] = (base / "mlruns").resolve().as_uri()
        if ids.get("mlflow") and not env.get("MLFLOW_RUN_ID"):
            out["MLFLOW_RUN_ID"] = ids["mlflow"]
    if "swanlab" in names:
        out["SWANLAB_PROJECT"] = project or env.get("SWANLAB_PROJECT") or DEFAULT_PROJECT
        out["SWANLAB_LOG_DIR"] = str(base / "swanlab")
        if mode == "offline":
            out["SWANLAB_MODE"] = "offline"
    if out:
        base.mkdir(parents=True, exist_ok=True)
    return out


def run_ids(names: list[str]) -> dict[str, str]:
    """The ids of the tracker runs started in this process (what a resumed attempt reattaches to)."""
    out: dict[str, str] = {}
    if "wandb" in names and importlib.util.find_spec("wandb") is not None:
        import wandb

        if wandb.run is not None:
            out["wandb"] = wandb.run.id
    if "mlflow" in names and importlib.util.find_spec("mlflow") is not None:
        import mlflow

        active = mlflow.active_run()
        if active is not None:
            out["mlflow"] = active.info.run_id
    return out


def links(names: list[str]) -> dict[str, str]:
    """The tracker runs started in this process: name → URL (or, offline, the local folder)."""
    out: dict[str, str] = {}
    if "wandb" in names and importlib.util.find_spec("wandb") is not None:
        import wandb

        run = wandb.run
        if run is not None:
            folder = Path(run.dir).parent
            out["wandb"] = (
                f"offline run in {folder} (upload it with: wandb sync {folder})"
                if run.offline
                else run.url or f"run in {folder}"
            )
    if "mlflow" in names and importlib.util.find_spec("mlflow") is not None:
        import mlflow

        active = mlflow.active_run()
        if active is not None:
            uri = mlflow.get_tracking_uri()
            out["mlflow"] = (
                f"{uri.rstrip('/')}/#/experiments/{active.info.experiment_id}/runs/{active.info.run_id}"
                if uri.startswith("http")
                else f"run {active.info.run_id} in {uri}"
            )
    if "swanlab" in names and importlib.util.find_spec("swanlab") is not None:
        import swanlab

        get_url = getattr(swanlab, "get_url", None)
        url = get_url() if callable(get_url) else None
        if url:
            out["swanlab"] = url
    return out


def finish(names: list[str]) -> None:
    """End the tracker runs this process started (a process that goes on — a test, a notebook —
    must not keep logging into them)."""
    if "wandb" in names and importlib.util.find_spec("wandb") is not None:
        import wandb

        if wandb.run is not None:
            wandb.finish()
    if "mlflow" in names and importlib.util.find_spec("mlflow") is not None:
        import mlflow

        if mlflow.active_run() is not None:
            mlflow.end_run()
    if "swanlab" in names and importlib.util.find_spec("swanlab") is not None:
        import swanlab

        if callable(getattr(swanlab, "finish", None)):
            swanlab.finish()

"""ms-swift's own environment: where it is, whether it is usable, and ``python -m engines setup swift``.

ms-swift 4.6 pins ``trl<1.0``, ``datasets<4.8.5``, ``peft<0.21`` and ``gradio<6``, so it cannot share this
project's environment: it lives in a virtualenv of its own (``.venv-swift`` in the project by default, or any
Python that has ms-swift, named by ``$AWORLD_SWIFT_PYTHON``) and is only ever run as a process.

:func:`setup` builds that virtualenv with :data:`PINS` and writes a marker recording the pins, so a second call
returns at once. torch is pinned to the version this project's own requirements pin, from the same package
index: where that index serves the CPU build (as on these machines) that is what it gets. On plain PyPI for
Linux the pin is the CUDA build; ``--torch-index-url https://download.pytorch.org/whl/cpu`` (or
``$AWORLD_TORCH_INDEX_URL``) installs torch from that index first (:func:`install_commands`). Progress goes
to a JSON-lines file that any reader (the studio's setup button) polls — never to a pipe.

Importing this module imports neither torch nor ms-swift.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..plugins import interpreter_probe
from ..runs.json_lines import last_json_line

PYTHON_ENV = "AWORLD_SWIFT_PYTHON"
VENV_ENV = "AWORLD_SWIFT_VENV"
TORCH_INDEX_ENV = "AWORLD_TORCH_INDEX_URL"
VENV_NAME = ".venv-swift"
MARKER = "aworld-swift.json"
SETUP_LOG = "aworld-setup.log"
#: what the environment gets (versions this engine is tested with). msgspec is imported by ms-swift's GRPO
#: trainer but not declared by ms-swift; cloudpickle and pyyaml load the studio's rewards in the plugin;
#: math-verify scores TRL's accuracy rewards (and ms-swift's own `accuracy`) there. ms-swift brings openai (judges).
PINS = (
    "torch==2.13.0",
    "ms-swift==4.6.0",
    "msgspec==0.22.0",
    "transformers==5.19.0",
    "trl==0.29.1",
    "peft==0.20.0",
    "datasets==4.8.4",
    "accelerate==1.15.0",
    "cloudpickle==3.1.2",
    "pyyaml==6.0.3",
    "math-verify==0.9.0",
)
#: modules training needs, as the availability probe checks them (import name → the pip name to install)
REQUIRED = {
    "swift": "ms-swift",
    "torch": "torch==2.13.0",
    "msgspec": "msgspec",
    "trl": "trl<1.0",
    "cloudpickle": "cloudpickle",
    "yaml": "pyyaml",
}
SETUP_COMMAND = "python -m engines setup swift"
PROBED_DISTRIBUTIONS = ("ms-swift", "torch", "transformers", "trl", "msgspec")
_PROBES: dict[str, dict[str, Any]] = {}


def project_root() -> Path:
    """The source checkout this package runs from (where ``.venv-swift`` goes), else the working directory."""
    here = Path(__file__).resolve().parent.parent.parent
    return here if (here / "pyproject.toml").is_file() else Path.cwd()


def default_venv() -> Path:
    return Path(os.environ.get(VENV_ENV) or project_root() / VENV_NAME)


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def swift_python() -> str:
    """The interpreter that runs ms-swift: ``$AWORLD_SWIFT_PYTHON``, else the project's ``.venv-swift``."""
    return os.path.expanduser(os.environ.get(PYTHON_ENV) or str(venv_python(default_venv())))


def read_marker(venv: Path) -> dict | None:
    try:
        return json.loads((venv / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def environment_files() -> list[str]:
    """What :func:`availability` reads: the interpreter and, for the project's own virtualenv, its marker
    (written last by a setup) and ``pyvenv.cfg``."""
    python = swift_python()
    if os.environ.get(PYTHON_ENV):
        return [python]
    venv = default_venv()
    return [python, str(venv / MARKER), str(venv / "pyvenv.cfg")]


def fingerprint(python: str | None = None) -> str:
    """Identifies the environment's contents, for caching what was checked in it (changes on a new setup)."""
    python = python or swift_python()
    venv = Path(python).parent.parent
    parts = [os.path.realpath(python)]
    for name in (MARKER, "pyvenv.cfg"):
        try:
            parts.append(f"{name}:{(venv / name).stat().st_mtime_ns}")
        except OSError:
            pass
    return "|".join(parts)


# -- availability ------------------------------------------------------------------------------------
def probe(python: str) -> dict[str, Any]:
    """What ``python`` has (modules, versions), without importing them; once per interpreter and process."""
    key = os.path.realpath(python)
    if key in _PROBES:
        return _PROBES[key]
    try:
        request = {"modules": sorted(REQUIRED), "distributions": list(PROBED_DISTRIBUTIONS)}
        out = interpreter_probe.ask(python, request, timeout_s=60)
        out["swift_dir"] = out.pop("locations").get("swift")
    except Exception as e:  # a wrong path, a broken interpreter: not cached, the user may fix it
        return {"error": f"{type(e).__name__}: {e}"}
    _PROBES[key] = out
    return out


def forget_probes() -> None:
    _PROBES.clear()


def availability() -> tuple[bool, str]:
    """(usable, reason): what is missing and the command that fixes it, or the versions found."""
    override = os.environ.get(PYTHON_ENV)
    python = swift_python()
    if not override:
        venv = default_venv()
        if not Path(python).exists():
            return False, (
                f"not set up — run: {SETUP_COMMAND} (builds ms-swift's environment in {venv}; or set "
                f"${PYTHON_ENV} to a Python that has ms-swift)"
            )
        marker = read_marker(venv)
        if marker is None:
            return False, f"setup did not finish — run: {SETUP_COMMAND} (ms-swift's environment {venv} is incomplete)"
        if list(marker.get("pins") or []) != list(PINS):
            return False, (f"set up with other versions ({', '.join(marker.get('pins') or [])}) — run: {SETUP_COMMAND}")
        versions = marker.get("versions") or {}
        return True, f"ms-swift {versions.get('ms-swift', '?')}, torch {versions.get('torch', '?')} ({venv})"
    if not Path(python).exists():
        return (
            False,
            f"${PYTHON_ENV}={override} does not exist — point it at a Python with ms-swift, or unset it "
            f"and run: {SETUP_COMMAND}",
        )
    found = probe(python)
    if "error" in found:
        return False, f"cannot run ${PYTHON_ENV}={python}: {found['error']}"
    missing = [REQUIRED[m] for m, ok in sorted(found.get("modules", {}).items()) if not ok]
    if missing:
        return False, (
            f"{python} lacks {', '.join(missing)} — run: {python} -m pip install "
            f"{' '.join(repr(m) if '<' in m else m for m in missing)} (or unset ${PYTHON_ENV} and run: "
            f"{SETUP_COMMAND})"
        )
    v = found.get("versions") or {}
    return True, f"ms-swift {v.get('ms-swift')}, torch {v.get('torch')} ({python})"


# -- setup progress ------------------------------------------------------------------------------------
@dataclass
class Progress:
    """Appends one JSON line per stage to ``path`` (``None``: prints them)."""

    path: Path | None = None
    state: dict[str, Any] = field(default_factory=dict)

    def __call__(
        self, stage: str, message: str, fraction: float | None = None, state: str = "running", **extra: Any
    ) -> None:
        self.state = {
            "time": time.time(),
            "state": state,
            "stage": stage,
            "message": message,
            "fraction": fraction,
            "pid": os.getpid(),
            **extra,
        }
        line = json.dumps(self.state)
        if self.path is None:
            print(f"[{stage}] {message}", flush=True)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def read_progress(path: str | os.PathLike) -> dict[str, Any] | None:
    """The last complete line of a progress file (None when there is none yet)."""
    return last_json_line(path)


_PIP_STEP = re.compile(
    r"^(Collecting|Downloading|Using cached|Installing collected packages|Successfully installed)"
    r"\s*:?\s*(\S*)"
)


def _pip_line_progress(line: str, seen: int) -> tuple[str, float] | None:
    """A pip output line → (message, fraction) for the progress file."""
    m = _PIP_STEP.match(line.strip())
    if not m:
        return None
    what, name = m.group(1), m.group(2)
    if what == "Installing collected packages":
        return "installing the packages (unpacking torch and ms-swift takes a few minutes)", 0.75
    if what == "Successfully installed":
        return "packages installed", 0.9
    return f"{what.lower()} {name}".strip(), min(0.7, 0.1 + 0.006 * seen)


# -- setup ------------------------------------------------------------------------------------------
class SetupError(RuntimeError):
    pass


def _run_logged(argv: list[str], log_path: Path, progress: Progress | None, timeout_s: float) -> None:
    """Run ``argv`` with its output appended to ``log_path`` (a file, never a pipe), turning pip's lines into
    progress as they appear."""
    with open(log_path, "ab") as log:
        log.write(f"\n$ {' '.join(argv)}\n".encode())
        log.flush()
        start = log.tell()
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout_s
    offset, seen, partial = start, 0, b""
    while True:
        done = proc.poll() is not None
        if progress is not None:
            with open(log_path, "rb") as f:
                f.seek(offset)
                data = f.read()
            offset += len(data)
            lines = (partial + data).split(b"\n")
            partial = lines.pop()
            for raw in lines:
                found = _pip_line_progress(raw.decode(errors="replace"), seen)
                if found:
                    seen += 1
                    progress("install", found[0], found[1])
        if done:
            break
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            raise SetupError(f"`{' '.join(argv[:4])} …` did not finish within {timeout_s:.0f} s (see {log_path})")
        time.sleep(0.5)
    if proc.returncode != 0:
        tail = log_path.read_text(errors="replace").splitlines()[-15:]
        raise SetupError(f"`{' '.join(argv[:4])} …` failed with exit code {proc.returncode}:\n" + "\n".join(tail))


def setup(
    venv: str | os.PathLike | None = None,
    progress: Progress | None = None,
    force: bool = False,
    timeout_s: float = 3600.0,
    torch_index_url: str | None = None,
) -> dict[str, Any]:
    """Create (or complete) the ms-swift virtualenv with :data:`PINS`; returns its marker.

    Idempotent: when the marker records the same pins it returns at once. Two setups of one folder never
    run at the same time (a lock file beside it). Raises :class:`SetupError` on failure.
    """
    progress = progress or Progress()
    venv = Path(venv) if venv else default_venv()
    venv.parent.mkdir(parents=True, exist_ok=True)
    lock_path = venv.parent / f"{venv.name}.lock"
    with open(lock_path, "a") as lock:
        progress("lock", f"waiting for any other setup of {venv}", 0.0)
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            marker = read_marker(venv)
            python = venv_python(venv)
            if not force and marker and list(marker.get("pins") or []) == list(PINS) and python.exists():
                progress("done", f"ms-swift's environment is ready ({venv})", 1.0, state="done", venv=str(venv))
                return marker
            return _build(venv, progress, timeout_s, torch_index_url or os.environ.get(TORCH_INDEX_ENV) or None)
        except SetupError as e:
            progress("failed", str(e), None, state="failed", venv=str(venv))
            raise
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def install_commands(python: str, torch_index_url: str | None = None) -> list[list[str]]:
    """The pip commands that install :data:`PINS`: torch first from ``torch_index_url`` when one is given
    (e.g. PyTorch's CPU index), then everything from the configured index (torch then already satisfies its pin)."""
    pip = [python, "-m", "pip", "install", "--disable-pip-version-check"]
    torch = [p for p in PINS if p.startswith("torch==")]
    first = [[*pip, "--index-url", torch_index_url, *torch]] if torch_index_url else []
    return [*first, [*pip, *PINS]]


def _build(venv: Path, progress: Progress, timeout_s: float, torch_index_url: str | None = None) -> dict[str, Any]:
    python = venv_python(venv)
    log_path = venv.parent / f"{venv.name}-{SETUP_LOG}"
    (venv / MARKER).unlink(missing_ok=True)
    if not python.exists() or not (venv / "bin" / "pip").exists():
        progress("venv", f"creating the virtualenv {venv}", 0.02)
        base = getattr(sys, "_base_executable", None) or sys.executable
        _run_logged([base, "-m", "venv", "--clear", str(venv)], log_path, None, 600)
    progress("install", f"installing {', '.join(PINS[:3])} and their dependencies (about 2 GB; log: {log_path})", 0.05)
    for argv in install_commands(str(python), torch_index_url):
        _run_logged(argv, log_path, progress, timeout_s)
    progress("verify", "checking that ms-swift imports", 0.92)
    forget_probes()
    found = probe(str(python))
    missing = [m for m, ok in (found.get("modules") or {}).items() if not ok]
    if "error" in found or missing:
        raise SetupError(f"the environment was built but {found.get('error') or 'lacks ' + ', '.join(missing)}")
    marker = {
        "pins": list(PINS),
        "versions": found.get("versions"),
        "python": found.get("python"),
        "created": time.time(),
    }
    (venv / MARKER).write_text(json.dumps(marker, indent=1), encoding="utf-8")
    progress(
        "done", f"ms-swift {found['versions'].get('ms-swift')} is ready in {venv}", 1.0, state="done", venv=str(venv)
    )
    return marker


def setup_command_line(args: list[str]) -> int:
    """``python -m engines setup swift [--progress-file F] [--venv DIR] [--force]``."""
    import argparse

    p = argparse.ArgumentParser(prog="aworld-train setup swift", description=setup.__doc__)
    p.add_argument("--progress-file", help="append progress as JSON lines here (the studio reads it)")
    p.add_argument("--venv", help=f"where to build it (default: {default_venv()})")
    p.add_argument("--force", action="store_true", help="reinstall even when the marker says it is ready")
    p.add_argument(
        "--torch-index-url",
        help="install torch from this index first, e.g. "
        f"https://download.pytorch.org/whl/cpu for the CPU build (default: ${TORCH_INDEX_ENV}, else the "
        "configured index)",
    )
    a = p.parse_args(args)
    if os.environ.get(PYTHON_ENV) and not a.venv:
        ok, reason = availability()
        print(f"${PYTHON_ENV} is set: using {swift_python()} — {reason}", file=sys.stderr)
        return 0 if ok else 1
    progress = Progress(Path(a.progress_file) if a.progress_file else None)
    try:
        setup(a.venv, progress, force=a.force, torch_index_url=a.torch_index_url)
    except SetupError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0

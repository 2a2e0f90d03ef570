"""The project as an installed distribution: console scripts, engines found through the entry-point
group, no path injection in product code, a light ``import engines``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from importlib import metadata
from pathlib import Path

import psutil

from engines.core import shipped_demo
from engines.isolation.processes import free_port, terminate_tree
from engines.runs.lifecycle import list_run_dirs

ROOT = Path(__file__).resolve().parent.parent


def test_our_engines_are_registered_through_the_entry_point_group(clean_registry):
    api = clean_registry
    ours = {
        ep.name: ep.value
        for ep in metadata.entry_points(group=api.ENTRY_POINT_GROUP)
        if ep.dist is not None and ep.dist.name.replace("_", "-") == api.OWN_DISTRIBUTION
    }
    assert {
        "trl": "engines.trl:TrlProcessor",
        "verl": "engines.verl:VerlProcessor",
        "swift": "engines.swift:SwiftProcessor",
    }.items() <= ours.items()
    api._REGISTRY.clear()
    api._ENTRY_POINTS_LOADED = False
    assert {"trl", "verl", "swift"} <= set(api.registered_engines())  # nothing registered them but the group
    assert api._REGISTRY["trl"] == "engines.trl:TrlProcessor"  # kept as text until asked for
    assert api._REGISTRY["swift"] == "engines.swift:SwiftProcessor"
    assert api.get_processor_class("trl").__name__ == "TrlProcessor"
    assert api.get_processor_class("swift").__name__ == "SwiftProcessor"


def test_the_console_scripts_run():
    bin_dir = Path(sys.executable).parent
    for script, words in (("aworld-studio", "AWorld Trainer Studio"), ("aworld-train", "training engines")):
        out = subprocess.run([str(bin_dir / script), "--help"], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and words in out.stdout, out.stderr[-2000:]


def start_studio(tmp_path: Path) -> tuple[subprocess.Popen, Path, Path, str]:
    """The console script beside this interpreter, started outside the repository."""
    runs, port = tmp_path / "runs", free_port()
    log = tmp_path / "studio.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(Path(sys.executable).parent / "aworld-studio"), "--port", str(port), "--runs-dir", str(runs)],
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "GRADIO_ANALYTICS_ENABLED": "False"},
        )
    return proc, runs, log, f"http://127.0.0.1:{port}/"


def end_with_sigterm(proc: subprocess.Popen, log: Path) -> None:
    """SIGTERM ends it as Ctrl-C does: exit 0, its check worker (and anything else it started) gone."""
    children = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0, log.read_text()[-3000:]  # closed like Ctrl-C, not killed
    gone, alive = psutil.wait_procs(children, timeout=10)
    assert not alive, f"left behind after SIGTERM: {[p.cmdline() for p in alive]}"


def kill_what_is_left(proc: subprocess.Popen) -> None:
    terminate_tree(proc.pid, grace_s=2)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_the_installed_aworld_studio_serves_the_studio_and_ends_on_sigterm(tmp_path):
    """It answers HTTP on the port it was given with this studio (its runs directory is on the page)."""
    proc, runs, log, url = start_studio(tmp_path)
    try:
        page, deadline = None, time.monotonic() + 120
        while page is None and proc.poll() is None and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(url, timeout=2) as r:
                    page = r.read().decode("utf-8", errors="replace")
            except OSError:
                time.sleep(0.3)
        assert page is not None, f"no answer on {url} (exit code {proc.poll()}):\n{log.read_text()[-3000:]}"
        assert str(runs) in page  # this studio, not something else that took the port
        # its runs folder was empty: the trained demo is there as a finished run (Chat and Evaluate have a model)
        [demo] = list_run_dirs(runs)
        assert demo.read_label()["name"] == shipped_demo.LABEL and demo.read_status()["state"] == "finished"
        assert psutil.Process(proc.pid).children(recursive=True), "the studio has its check worker"
        end_with_sigterm(proc, log)
    finally:  # whatever happened: the studio, then what is left of its process group (its check worker)
        kill_what_is_left(proc)


def test_a_sigterm_while_the_studio_starts_ends_it_as_ctrl_c_does(tmp_path):
    """The handler used to be installed once the page was served: a SIGTERM before (a loaded machine made the
    window seconds wide) killed it outright and left its check worker behind."""
    proc, _runs, log, _url = start_studio(tmp_path)
    try:
        deadline = time.monotonic() + 120
        while "AWorld Trainer Studio on" not in log.read_text() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, log.read_text()[-3000:]
        end_with_sigterm(proc, log)
    finally:
        kill_what_is_left(proc)


def test_no_path_injection_in_product_code():
    out = subprocess.run(
        ["git", "grep", "-n", "-E", r"sys\.path|PYTHONPATH", "--", "engines", "aworld_gui", "app.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.stdout == "", out.stdout


def test_import_engines_stays_light():
    code = (
        "import sys, json, engines, engines.trl, engines.verl; "
        "print(json.dumps(sorted(m for m in ('torch', 'trl', 'verl', 'transformers', 'gradio', 'ray', 'datasets')"
        " if m in sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and json.loads(out.stdout) == [], out.stdout + out.stderr

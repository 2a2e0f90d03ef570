"""Shared fixtures and the test tiers. Keep this small: module-specific helpers live in their test files.

Tiers (markers, applied here and nowhere else; see docs/DEVELOPMENT.md):

* ``browser``   — drives the studio in headless Chromium (``test_browser_*.py``);
* ``swift_env`` — needs ms-swift's own virtualenv ``.venv-swift`` (``python -m engines setup swift``);
* ``train``     — trains a model (a run, or the session's trained demo);
* ``slow``      — took over 5 s in a full run (``tests/slow_tests.txt``, rewritten by
  ``python -m testing.slow_tests``); every ``browser``, ``swift_env`` and ``train`` test is ``slow`` too.

``pytest -m "not slow"`` is the developer's loop; the README's command runs everything, and there a skip is a
failure: no test hides behind a missing environment.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

# under pytest-xdist with several workers, torch with one thread in every process the suite starts (this one, its
# studios, their runs): the workers then train on a core each. Two trainings with two threads each on two cores
# collapsed to a tenth of their speed (1.1 steps/s against 11 for the demo). One worker keeps torch's default: the
# demo trains 30 steps in 6.4 s with two threads, 8.2 s with one. Set before torch is imported.
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parent.parent
SLOW_LIST = Path(__file__).with_name("slow_tests.txt")
#: each test file's seconds in a full run (python -m testing.slow_tests): the longest files are handed out first
FILE_SECONDS = Path(__file__).with_name("file_seconds.json")
SLOW_SECONDS = 5.0
#: the files whose tests need ms-swift's own virtualenv
SWIFT_ENV_FILES = {"test_swift_engine.py", "test_browser_swift.py", "test_cluster_runs.py"}
#: the files whose tests train (besides every test that uses the trained demo)
TRAIN_FILES = {
    "test_trl_engine.py",
    "test_grpo_groups_trl.py",
    "test_trl_peft.py",
    "test_trl_processes.py",
    "test_trl_tools.py",
    "test_mcp_trl.py",
    "test_swift_engine.py",
    "test_run_queue.py",
    "test_run_launcher.py",
    "test_shipped_demo.py",
    "test_cli_runs.py",
    "test_cluster_runs.py",
    "test_disk_full.py",
    "test_run_leftovers.py",
}
TRAINED_FIXTURES = {"trained_letters"}
#: where the session's test durations are written (``python -m testing.slow_tests`` reads it)
DURATIONS_ENV = "AWORLD_TEST_DURATIONS"
#: a folder where each pytest process writes the test it runs now (benchmarks/suite_cpu.py charges CPU to it)
NOW_ENV = "AWORLD_TEST_NOW"


def _slow_ids() -> set[str]:
    if not SLOW_LIST.is_file():
        return set()
    return {
        line.strip()
        for line in SLOW_LIST.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }


def _file_seconds() -> dict[str, float]:
    try:
        return {str(k): float(v) for k, v in json.loads(FILE_SECONDS.read_text(encoding="utf-8")).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def pytest_collection_modifyitems(config, items):
    # the longest files first (a file's tests keep their order): pytest-xdist (-n 2 --dist loadfile, the
    # developer's loop) hands out files in this order, so a long file is not left to the end, one worker on it and
    # the other idle
    seconds, position = _file_seconds(), {}
    for i, item in enumerate(items):
        position.setdefault(item.nodeid.split("::", 1)[0], i)
    items.sort(key=lambda it: (-seconds.get(it.nodeid.split("::", 1)[0], 0.0), position[it.nodeid.split("::", 1)[0]]))
    slow = _slow_ids()
    for item in items:
        name = item.path.name
        tiers = set()
        if name.startswith("test_browser_"):
            tiers.add("browser")
        if name in SWIFT_ENV_FILES:
            tiers.add("swift_env")
        if name in TRAIN_FILES or TRAINED_FIXTURES & set(getattr(item, "fixturenames", ())):
            tiers.add("train")
        if tiers or item.nodeid in slow:
            tiers.add("slow")
        for tier in sorted(tiers):
            item.add_marker(getattr(pytest.mark, tier))


_durations: dict[str, float] = {}
_marked_slow: set[str] = set()
_config = None  # pytest's config: its terminal reporter writes a failure when it happens
_started = time.monotonic()  # the session's start (pytest_configure), for the total printed at its end


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and not hasattr(report, "wasxfail"):
        # the full suite runs everything: an environment that is missing is a failure to fix, not a skip
        report.outcome = "failed"
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.longrepr = f"skipped, and a skip is a failure in this suite: {reason}"


def pytest_configure(config):
    global _config, _started
    _config = config
    _started = time.monotonic()


def pytest_runtest_logstart(nodeid, location):
    folder = os.environ.get(NOW_ENV)
    if folder:
        Path(folder, str(os.getpid())).write_text(nodeid, encoding="utf-8")


def pytest_runtest_logreport(report):
    """Each phase's report, in the process that shows the summary (with pytest-xdist, the reports its workers
    send; a report carries its test's markers as keywords). A failure is written out when it happens, not only
    in the summary at the end: a run of the whole suite takes most of an hour, and one stopped or cut off
    before its end would otherwise lose the cause."""
    _durations[report.nodeid] = _durations.get(report.nodeid, 0.0) + report.duration
    if "slow" in report.keywords:
        _marked_slow.add(report.nodeid)
    terminal = _config.pluginmanager.get_plugin("terminalreporter") if _config is not None else None
    if report.failed and terminal is not None:
        terminal.write_line("")
        terminal.write_sep("!", f"{report.nodeid} failed ({report.when}); its report, now:")
        for line in report.longreprtext.splitlines()[-60:] + report.capstdout.splitlines()[-20:]:
            terminal.write_line(line)
        terminal.write_sep("!", "the suite goes on")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not _durations:
        return
    files: dict[str, list[float]] = {}
    for nodeid, seconds in _durations.items():
        files.setdefault(nodeid.split("::", 1)[0], []).append(seconds)
    wall = time.monotonic() - _started
    terminalreporter.section(f"the suite's time: {wall:.0f} s ({wall / 60:.1f} min) wall; the ten slowest files")
    for path, times in sorted(files.items(), key=lambda kv: -sum(kv[1]))[:10]:
        terminalreporter.write_line(f"{sum(times):7.1f} s  {len(times):4d} tests  {path}")
    unmarked = sorted((d, n) for n, d in _durations.items() if d > SLOW_SECONDS and n not in _marked_slow)
    if unmarked:
        terminalreporter.section("tests over 5 s not marked slow (python -m testing.slow_tests adds them)")
        for d, n in reversed(unmarked):
            terminalreporter.write_line(f"{d:7.1f} s  {n}")
    path = os.environ.get(DURATIONS_ENV)
    if path:
        Path(path).write_text(json.dumps(_durations, indent=0, sort_keys=True), encoding="utf-8")


@pytest.fixture(scope="session", autouse=True)
def _user_code_writes_the_tests_folders(tmp_path_factory):
    """User code sees every file read-only but its own folders (engines.isolation.read_only_files); the tests' rewards
    and tools report what they saw in files under the session's temporary folder, as an operator's own scratch
    folder would be (``AWORLD_USER_CODE_WRITABLE``). What stays read-only (the installation, the source, any other
    folder) is tests/test_read_only_files.py's."""
    from engines.isolation.read_only_files import WRITABLE_ENV

    os.environ[WRITABLE_ENV] = str(tmp_path_factory.getbasetemp())
    yield


@pytest.fixture(autouse=True)
def _forget_user_modules():
    """User files imported by a test (``_aworld_user_*``, see engines.inputs.loading) are dropped afterwards, so
    tests that assert user code never ran in their process (the studio's) hold in a full run."""
    yield
    for name in [n for n in sys.modules if n.startswith("_aworld_user_")]:
        del sys.modules[name]


@pytest.fixture(scope="session")
def _session_studio(tmp_path_factory):
    from testing.studio import StudioProcess, remove_runs_since

    app = StudioProcess(tmp_path_factory.mktemp("shared-studio") / "runs").start(timeout_s=180)
    yield app
    app.stop()
    remove_runs_since(app.runs_dir, set())


@pytest.fixture(scope="module")
def shared_studio(_session_studio):
    """The session's studio (one per pytest-xdist worker), on its own runs folder, for a test file that needs a studio
    on the demo and nothing of its own: a studio takes 10 s and more to start (Gradio's import, the check worker's
    preload), which every such file paid. The runs the file made are stopped and deleted after it, so the next file
    finds the runs folder as this one did (its uploads, presets and exports stay). A file that restarts the studio,
    starts it with options or needs a runs folder of its own keeps a studio of its own and says why."""
    from testing.studio import run_ids, remove_runs_since

    app = _session_studio
    if app.proc is None or app.proc.poll() is not None:  # an earlier file's test stopped it
        app.start(timeout_s=180)
    before = run_ids(app.runs_dir)
    yield app
    remove_runs_since(app.runs_dir, before)


@pytest.fixture(scope="module")
def trained_in_studio(trained_letters, shared_studio):
    """The session's studio with the trained demo as a finished run of its own (copied without its evaluations;
    deleted with the file's other runs), its id as ``app.letters``: for the Evaluate and Chat tabs' browser tests."""
    import shutil

    app = shared_studio
    src = trained_letters.train_processor.run.path
    shutil.copytree(src, app.runs_dir / src.name, ignore=shutil.ignore_patterns("evals"))
    app.letters = src.name
    return app


@pytest.fixture(scope="module")
def ray_head():
    """A Ray head on 127.0.0.1 (2 CPUs) for a test file's cluster jobs: one per file, not per test, and not per
    session — an idle head's daemons take a tenth of a core, which the files between would lose."""
    from testing.ray_head import RayHead

    with RayHead(num_cpus=2) as head:
        yield head


@pytest.fixture
def clean_registry():
    """The engine registry (engines.core.registry._REGISTRY and the entry-point flag), restored after the test."""
    from engines.core import registry as api

    saved, loaded = dict(api._REGISTRY), api._ENTRY_POINTS_LOADED
    yield api
    api._REGISTRY.clear()
    api._REGISTRY.update(saved)
    api._ENTRY_POINTS_LOADED = loaded


@pytest.fixture
def demo() -> dict[str, str]:
    """Absolute paths of the shipped letters demo (agent, data, reward)."""
    from testing import letters_demo as d

    return {"agent": d.AGENT, "train": d.TRAIN, "test": d.TEST, "reward": d.REWARD, "model": d.MODEL}


@pytest.fixture(scope="session")
def trained_letters(tmp_path_factory):
    """The letters demo trained (300 GRPO steps: held-out greedy reward from ~0 to ≥ 0.8 on CPU) as the project ships
    it — ``assets/models/tiny-letters-trained``, installed as a finished run (engines/core/shipped_demo.py) — for the
    tests of inference, evaluation, export and chat. Returns its AgentTrainer. tests/test_shipped_demo.py trains the
    demo from scratch, once, and checks that it learns as the shipped one did."""
    from engines import AgentTrainer
    from engines.core import shipped_demo

    runs = tmp_path_factory.mktemp("trained") / "runs"
    run = shipped_demo.install(runs)
    return AgentTrainer(run_path=str(runs), run_dir=run.path, **shipped_demo.modules())

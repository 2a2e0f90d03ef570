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

ROOT = Path(__file__).resolve().parent.parent
SLOW_LIST = Path(__file__).with_name("slow_tests.txt")
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
    "test_cli_runs.py",
    "test_cluster_runs.py",
}
TRAINED_FIXTURES = {"trained_letters"}
#: where the session's test durations are written (``python -m testing.slow_tests`` reads it)
DURATIONS_ENV = "AWORLD_TEST_DURATIONS"


def _slow_ids() -> set[str]:
    if not SLOW_LIST.is_file():
        return set()
    return {
        line.strip()
        for line in SLOW_LIST.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }


def pytest_collection_modifyitems(config, items):
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
    global _config
    _config = config


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
    unmarked = sorted((d, n) for n, d in _durations.items() if d > SLOW_SECONDS and n not in _marked_slow)
    if unmarked:
        terminalreporter.section("tests over 5 s not marked slow (python -m testing.slow_tests adds them)")
        for d, n in reversed(unmarked):
            terminalreporter.write_line(f"{d:7.1f} s  {n}")
    path = os.environ.get(DURATIONS_ENV)
    if path:
        Path(path).write_text(json.dumps(_durations, indent=0, sort_keys=True), encoding="utf-8")


@pytest.fixture(autouse=True)
def _forget_user_modules():
    """User files imported by a test (``_aworld_user_*``, see engines.inputs.loading) are dropped afterwards, so
    tests that assert user code never ran in their process (the studio's) hold in a full run."""
    yield
    for name in [n for n in sys.modules if n.startswith("_aworld_user_")]:
        del sys.modules[name]


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
    """The letters demo trained once (300 GRPO steps: held-out greedy reward from ~0 to ≥ 0.8 on CPU), for the
    tests of inference, evaluation, export and chat. Returns its AgentTrainer, over a copy of the trained run.

    The trained run is kept in a cache keyed by everything that makes it (testing/trained_cache.py: the demo's
    files, the training code, the library versions, this checkout's path), so a second session in the same
    checkout reuses it; a fresh clone, or any change to what trains it, trains again."""
    import yaml

    from engines import AgentTrainer
    from testing.trained_cache import TrainedRunCache

    cfg = yaml.safe_load((ROOT / "assets/configs/letters_grpo.yaml").read_text())
    cfg.update(max_steps=300, save_steps=300, eval_steps=0)
    modules = dict(
        agent=str(ROOT / "assets/agents/letters_agent.yaml"),
        train_dataset=str(ROOT / "assets/datasets/letters_train.jsonl"),
        test_dataset=str(ROOT / "assets/datasets/letters_test.jsonl"),
        reward_func=str(ROOT / "assets/rewards/letter_reward.py") + ":letter_reward",
        config=cfg,
        train_engine_name="trl",
    )
    runs = tmp_path_factory.mktemp("trained") / "runs"
    cache = TrainedRunCache(ROOT, modules)
    cached = cache.restore(runs)
    if cached is not None:
        return AgentTrainer(run_path=str(runs), run_dir=cached, **modules)
    trainer = AgentTrainer(run_path=str(runs), **modules)
    started = time.time()
    assert trainer.train() == "finished"
    cache.store(trainer.train_processor.run.path, seconds=time.time() - started)
    return trainer

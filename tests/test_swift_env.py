"""ms-swift's own environment: the availability probe names what is missing and the fix; `setup swift` is
idempotent and reports progress (and failure) in its progress file; the helper that answers checks inside
the environment, and its cache; the column names ms-swift reserves, checked against the installed version."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engines.swift import environment as E
from engines.swift.dataset import SWIFT_RESERVED
from engines.swift.session import CheckCache, SwiftEnvError, SwiftHelper

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture()
def no_override(monkeypatch):
    monkeypatch.delenv(E.PYTHON_ENV, raising=False)
    E.forget_probes()
    yield monkeypatch
    E.forget_probes()


def fake_venv(folder: Path, marker: dict | None = None, python_script: str | None = None) -> Path:
    """A folder shaped like a virtualenv; its python is this interpreter (or a script standing in for one)."""
    (folder / "bin").mkdir(parents=True)
    python = folder / "bin" / "python"
    if python_script is None:
        python.symlink_to(sys.executable)
    else:
        python.write_text(python_script)
        python.chmod(0o755)
    (folder / "bin" / "pip").write_text("#!/bin/sh\n")
    if marker is not None:
        (folder / E.MARKER).write_text(json.dumps(marker))
    return folder


def test_availability_names_what_is_missing_and_the_command_that_fixes_it(tmp_path, no_override):
    no_override.setenv(E.VENV_ENV, str(tmp_path / "nowhere"))
    ok, reason = E.availability()
    assert not ok and reason.startswith("not set up — run: python -m engines setup swift")

    venv = fake_venv(tmp_path / "half")
    no_override.setenv(E.VENV_ENV, str(venv))
    ok, reason = E.availability()
    assert not ok and reason.startswith(f"setup did not finish — run: {E.SETUP_COMMAND}") and str(venv) in reason

    (venv / E.MARKER).write_text(json.dumps({"pins": ["ms-swift==3.0.0"], "versions": {}}))
    ok, reason = E.availability()
    assert not ok and reason.startswith("set up with other versions (ms-swift==3.0.0) — run")

    (venv / E.MARKER).write_text(
        json.dumps({"pins": list(E.PINS), "versions": {"ms-swift": "4.6.0", "torch": "2.13.0"}})
    )
    assert E.availability() == (True, f"ms-swift 4.6.0, torch 2.13.0 ({venv})")


def test_an_override_python_without_ms_swift_is_told_what_to_install(no_override):
    no_override.setenv(E.PYTHON_ENV, sys.executable)  # this project's Python: no ms-swift in it
    ok, reason = E.availability()
    assert not ok and f"{sys.executable} lacks " in reason and "ms-swift" in reason.split("lacks")[1]
    assert f"run: {sys.executable} -m pip install" in reason and "ms-swift" in reason.split("-m pip install")[1]
    no_override.setenv(E.PYTHON_ENV, "/no/such/python")
    ok, reason = E.availability()
    assert not ok and "does not exist" in reason


def test_setup_returns_at_once_when_the_marker_records_the_pins(tmp_path, no_override):
    venv = fake_venv(tmp_path / "ready", marker={"pins": list(E.PINS), "versions": {"ms-swift": "4.6.0"}})
    progress = tmp_path / "progress.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop(E.PYTHON_ENV, None)
    out = subprocess.run(
        [sys.executable, "-m", "engines", "setup", "swift", "--venv", str(venv), "--progress-file", str(progress)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    last = E.read_progress(progress)
    assert last["state"] == "done" and last["fraction"] == 1.0 and "ready" in last["message"]
    assert [json.loads(x)["stage"] for x in progress.read_text().splitlines()] == ["lock", "done"]  # no pip


def test_a_failed_setup_says_why_in_its_progress_file(tmp_path, no_override):
    # an interpreter whose pip fails the way a machine without the package index does
    script = (
        "#!/bin/sh\necho 'ERROR: Could not find a version that satisfies the requirement ms-swift==4.6.0'\nexit 1\n"
    )
    venv = fake_venv(tmp_path / "broken", python_script=script)
    progress = E.Progress(tmp_path / "progress.jsonl")
    with pytest.raises(E.SetupError, match="failed with exit code 1"):
        E.setup(venv, progress)
    last = E.read_progress(tmp_path / "progress.jsonl")
    assert last["state"] == "failed" and "Could not find a version" in last["message"]
    assert not (venv / E.MARKER).exists()


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_torch_comes_from_the_index_named_for_it_first(tmp_path, no_override, how):
    log = tmp_path / "pip-calls.txt"
    script = f"#!/bin/sh\necho \"$@\" >> {log}\necho 'ERROR: index unreachable'\nexit 1\n"
    venv = fake_venv(tmp_path / "venv", python_script=script)
    url = "https://download.pytorch.org/whl/cpu"
    if how == "environment":
        no_override.setenv(E.TORCH_INDEX_ENV, url)
    with pytest.raises(E.SetupError, match="index unreachable"):
        E.setup(venv, E.Progress(None), torch_index_url=url if how == "argument" else None)
    first = log.read_text().splitlines()[0]
    assert first == f"-m pip install --disable-pip-version-check --index-url {url} torch==2.13.0"
    plain = E.install_commands("python")  # without one: a single command from the configured index
    assert len(plain) == 1 and "--index-url" not in plain[0] and "torch==2.13.0" in plain[0]


def test_engines_without_an_environment_of_their_own_need_no_setup():
    out = subprocess.run(
        [sys.executable, "-m", "engines", "setup", "trl"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0 and "engine 'trl' needs no setup" in out.stderr
    out = subprocess.run(
        [sys.executable, "-m", "engines", "setup", "swfit"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 2 and 'did you mean "swift"' in out.stderr


def test_a_python_without_ms_swift_is_reported_not_hung(tmp_path):
    helper = SwiftHelper(sys.executable, log_path=tmp_path / "helper.log", cache=CheckCache(tmp_path / "cache"))
    with pytest.raises(SwiftEnvError) as err:
        helper.call("hello")
    assert err.value.kind == "import" and "ms-swift does not import" in str(err.value)
    assert "No module named 'swift'" in str(err.value) and helper.proc is None


def test_the_helper_answers_inside_ms_swift_and_the_cache_answers_again_without_a_process(tmp_path):
    ok, reason = E.availability()
    assert ok, reason
    cache = CheckCache(tmp_path / "cache")
    first = SwiftHelper(log_path=tmp_path / "helper.log", cache=cache)
    try:
        names = first.call("arg_names", cache_key=["rlhf"], command="rlhf")
        assert {"learning_rate", "num_generations", "reward_funcs", "tuner_type"} <= set(names)
        with pytest.raises(SwiftEnvError) as err:  # ms-swift's own parser, its message kept
            first.call(
                "validate",
                command="sft",
                argv=[
                    "--model",
                    str(ROOT / "assets/models/tiny-letters"),
                    "--model_type",
                    "qwen2",
                    "--template",
                    "qwen",
                    "--num_train_epochs",
                    "many",
                ],
            )
        assert err.value.kind == "arguments" and "invalid float value: 'many'" in str(err.value)
        reserved = first.call("hello")
        assert reserved["ms-swift"] == "4.6.0" and first.calls == 3
    finally:
        first.close()
    second = SwiftHelper(log_path=tmp_path / "helper2.log", cache=cache)
    assert second.call("arg_names", cache_key=["rlhf"], command="rlhf") == names
    assert second.calls == 0 and second.proc is None


def test_the_reserved_column_names_match_the_installed_ms_swift():
    ok, reason = E.availability()
    assert ok, reason
    code = (
        "import json; from swift.dataset.preprocessor.core import RowPreprocessor, MessagesPreprocessor\n"
        "m = MessagesPreprocessor()\n"
        "print(json.dumps(sorted(set(RowPreprocessor.standard_keys) | set(m.columns))))"
    )
    out = subprocess.run([E.swift_python(), "-c", code], capture_output=True, text=True, timeout=300)
    theirs = set(json.loads(out.stdout.strip().splitlines()[-1]))
    assert theirs | {"solution"} == set(SWIFT_RESERVED)

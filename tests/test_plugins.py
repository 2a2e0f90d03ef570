"""The programs ms-swift and verl import by path (engines/plugins/), tested as the ordinary modules they are; their
installed copies are loaded by the engines' own loaders in test_verl_reward, test_mcp_verl, test_swift_engine and
test_rewards_ecosystem."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from engines.plugins import entry, files, install, snapshot, swift_rewards, verl_reward

ROOT = Path(__file__).resolve().parents[1]
LETTER_REWARD = str(ROOT / "assets/rewards/letter_reward.py") + ":letter_reward"


def test_an_installed_program_is_entry_py_beside_its_json_and_the_snapshot(tmp_path):
    path = install.install(tmp_path / "verl", "reward_bridge.py", "verl_reward", {"spec": []}, "a test")
    assert path.read_bytes() == Path(entry.__file__).read_bytes()
    assert json.loads(install.params_file(path).read_text()) == {"program": "verl_reward", "spec": []}
    copied = {p.name for p in (tmp_path / "verl" / snapshot.SNAPSHOT_DIR).iterdir()}
    assert "plugins" in copied and "rewards" in copied and not copied & snapshot.ENGINE_PACKAGES
    assert "a test" in (tmp_path / "verl" / snapshot.SNAPSHOT_DIR / "__init__.py").read_text()


def test_the_entry_starts_its_program_from_the_snapshot_beside_it_not_from_this_repository(tmp_path):
    """A copy moved to another machine's folder, the repository hidden: the entry imports the snapshot under a name
    of its own and takes the program's names as its own (what verl's load_extern_object looks up)."""
    spec = [{"name": "exact_match", "weight": 2.0}]
    params = {"spec": spec, "columns": [], "final_answer_only": True, "tokenizer": None}
    path = install.install(tmp_path / "run" / "verl", "reward_bridge.py", "verl_reward", params, "a test")
    code = (
        "import importlib.util, json, sys\n"
        "sys.modules['engines'] = None  # the repository is not on that node\n"
        f"spec = importlib.util.spec_from_file_location('bridge', {str(path)!r})\n"
        "bridge = importlib.util.module_from_spec(spec); spec.loader.exec_module(bridge)\n"
        "tool_turns = 'call</tool_call><tool_response>4</tool_response>assistant\\nC'\n"
        "print(json.dumps([bridge.compute_score('letters', s, 'C', {}) for s in ('C', 'B', tool_turns)]))\n"
        "print(sorted(m for m in sys.modules if m.startswith('_aworld_engines_') and m.count('.') == 0))\n"
    )
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    scores, packages = out.stdout.strip().splitlines()[-2:]
    assert [s["score"] if isinstance(s, dict) else s for s in json.loads(scores)] == [2.0, 0.0, 2.0]
    assert len(eval(packages)) == 1  # noqa: S307 - our own printed list


def test_imported_as_a_module_the_entry_starts_nothing():
    assert not os.path.exists(entry.params_path(entry.__file__))
    assert "compute_score" not in vars(entry)


def test_a_user_file_is_the_original_where_the_machine_has_it_else_the_copy(tmp_path):
    copy = tmp_path / "run" / "verl" / "reward_files" / "0_r.py"
    copy.parent.mkdir(parents=True)
    copy.write_text("def r(c, a, **kw):\n    return 1.0\n")
    item = {"ref": "/gone/r.py:r", "attr": "r", "copy": "verl/reward_files/0_r.py"}
    assert files.resolved(item, str(tmp_path / "run"))["ref"] == f"{copy}:r"
    here = tmp_path / "r.py"
    here.write_text("")
    assert files.resolved(dict(item, ref=f"{here}:r"), str(tmp_path / "run"))["ref"] == f"{here}:r"
    with pytest.raises(FileNotFoundError, match="/gone/r.py is not on this machine"):
        files.resolved(dict(item, copy="nothing.py"), str(tmp_path / "run"))


@pytest.mark.parametrize(
    "response, answer",
    [
        ("C", "C"),
        ("<tool_call>x</tool_call><tool_response>3</tool_response>assistant\nD ", "D"),
        ("<tool_response>1</tool_response>x<tool_response>2</tool_response>  assistantE", "E"),
        (None, ""),
    ],
)
def test_with_tools_the_answer_is_what_follows_the_last_tool_response(response, answer):
    assert verl_reward.final_answer(response) == answer


def test_an_orm_term_gets_the_answer_the_prompt_without_the_completion_and_the_row_s_columns(tmp_path):
    reward_file = tmp_path / "seen.py"
    reward_file.write_text(
        "def seen(completion, answer, prompt=None, difficulty=None, **kw):\n"
        "    return len(prompt) * 10 + (difficulty or 0) + (completion == answer)\n"
    )
    rewards = swift_rewards.Rewards(str(tmp_path), [{"ref": f"{reward_file}:seen"}], ["difficulty"])
    user = {"role": "user", "content": "Say C"}
    kwargs = {
        "solution": ["C", "C"],
        "messages": [[user, {"role": "assistant", "content": "C"}], [user]],
        "difficulty": [3, 4],
        "other": [1, 2],
    }
    assert rewards.score(0, ["C", "B"], kwargs) == [14.0, 14.0]
    orm = type("seen", (swift_rewards.Term,), {"index": 0, "rewards": rewards})()
    assert orm(["C"], messages=[[user]]) == [10.0]  # no answer in the row: None, not "None"


def test_a_reward_that_raises_names_itself_in_ms_swift_s_log(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def bad(completion, answer, **kw):\n    raise ValueError('no')\n")
    rewards = swift_rewards.Rewards(str(tmp_path), [{"ref": f"{bad}:bad"}], [])
    from engines.rewards import RewardError

    with pytest.raises(RewardError, match="reward function 'bad' raised ValueError: no"):
        rewards.score(0, ["C"], {})


def _model(pad, eos, suppress=None):
    config = SimpleNamespace(pad_token_id=pad, suppress_tokens=suppress)
    return SimpleNamespace(generation_config=config, config=SimpleNamespace(eos_token_id=eos))


def test_rollouts_never_sample_the_pad_token_unless_it_ends_completions():
    model = _model(0, 2, [5])
    assert swift_rewards.never_sample_pad(model, SimpleNamespace(pad_token_id=0, eos_token_id=2)) == 0
    assert model.generation_config.suppress_tokens == [5, 0]
    assert swift_rewards.never_sample_pad(model, SimpleNamespace(pad_token_id=0, eos_token_id=2)) == 0
    assert model.generation_config.suppress_tokens == [5, 0]  # not twice
    eos_pad = _model(2, [2, 7])
    assert swift_rewards.never_sample_pad(eos_pad, SimpleNamespace(pad_token_id=2, eos_token_id=None)) is None
    assert eos_pad.generation_config.suppress_tokens is None


def test_a_stop_file_or_a_gone_launcher_ends_training_after_this_step_with_a_checkpoint(tmp_path, monkeypatch):
    callback = type("C", (swift_rewards.StopRequests,), {"run_dir": str(tmp_path)})()
    control = SimpleNamespace(should_training_stop=False, should_save=False)
    state = SimpleNamespace(global_step=7)
    monkeypatch.delenv(swift_rewards.WATCH_PID_ENV, raising=False)
    assert callback.on_step_end(None, state, control).should_training_stop is False
    (tmp_path / "STOP").write_text("")
    assert callback.on_step_end(None, state, control).should_save is True
    gone = subprocess.Popen([sys.executable, "-c", ""])
    gone.wait()
    monkeypatch.setenv(swift_rewards.WATCH_PID_ENV, str(gone.pid))
    assert swift_rewards.launcher_gone() is True
    monkeypatch.setenv(swift_rewards.WATCH_PID_ENV, str(os.getpid()))
    assert swift_rewards.launcher_gone() is False


def test_another_interpreter_is_asked_what_it_has_without_this_repository(tmp_path):
    """The probe file runs in an interpreter that has none of this project (-I: isolated, like a bare venv's)."""
    from engines.plugins import interpreter_probe

    request = {"modules": ["json", "no_such_module_x"], "distributions": ["pip", "no-such-dist-x"], "gpus": True}
    got = interpreter_probe.ask(sys.executable, request, timeout_s=60)
    assert got["modules"] == {"json": True, "no_such_module_x": False}
    assert got["versions"]["pip"] and got["versions"]["no-such-dist-x"] is None
    assert got["python"] == sys.version.split()[0] and got["gpus"] == 0 and "json" in got["locations"]
    with pytest.raises(FileNotFoundError):
        interpreter_probe.ask(str(tmp_path / "no-python"), request, timeout_s=10)

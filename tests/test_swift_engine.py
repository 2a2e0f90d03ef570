"""The `swift` engine trains the shipped letters demo for real with ms-swift, in its own environment, on CPU,
and keeps the run-dir contract: GRPO and SFT, stop → stopped with a checkpoint, resume, a reward that raises,
settings ms-swift rejects, a pad token that ms-swift would drop kept out of rollouts. Needs ms-swift's
environment (`python -m engines setup swift`, which the README's test command runs first): without it these
tests fail, they do not skip."""

from __future__ import annotations

from engines.core.modules import Modules
from engines.runs.sample_groups import step_groups

import json
import shutil
from pathlib import Path

import pytest
import yaml

from engines import AgentTrainer, CheckError
from engines.core.prepare import prepare_run
from engines.runs.lifecycle import effective_status, kill_run, process_alive, spawn_run, stop_run
from engines.swift.environment import availability
from testing.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent
AGENT = str(ROOT / "assets/agents/letters_agent.yaml")
TRAIN = str(ROOT / "assets/datasets/letters_train.jsonl")
TEST = str(ROOT / "assets/datasets/letters_test.jsonl")
REWARD = str(ROOT / "assets/rewards/letter_reward.py") + ":letter_reward"
FAST = {
    "tuner_type": "full",
    "max_steps": 3,
    "learning_rate": 1e-3,
    "prompts_per_step": 1,
    "num_generations": 4,
    "save_steps": 2,
    "max_completion_length": 2,
}


@pytest.fixture(scope="module", autouse=True)
def swift_environment():
    ok, reason = availability()
    assert ok, f"ms-swift's environment is needed: {reason}"


def make_trainer(tmp_path, **overrides):
    kw = dict(
        agent=AGENT,
        train_dataset=TRAIN,
        test_dataset=TEST,
        reward_func=REWARD,
        config=dict(FAST),
        run_path=str(tmp_path / "runs"),
        train_engine_name="swift",
    )
    kw.update(overrides)
    return AgentTrainer(**kw)


def test_grpo_trains_the_letters_demo_with_ms_swifts_own_reward_beside_ours_and_writes_the_run_directory(tmp_path):
    """One run shows both (each was a run of its own): the letters demo trains on swift and keeps the run-dir contract,
    and ms-swift's own reward (``swift:format``, weighted) trains beside ours under its own name."""
    trainer = make_trainer(tmp_path, reward_func=[REWARD, {"ref": "swift:format", "weight": 0.5}])
    results = {r.module: r for r in trainer.check_results}
    assert "template qwen" in results["config"].message and "parser accepted it" in results["config"].message
    assert results["dataset"].details["rendered_prompt"].startswith("<|im_start|>system\nReply with one capital")
    check = results["reward"]
    assert check.status == "ok" and check.message.endswith("; ms-swift's own: swift:format×0.5"), check
    assert check.details["swift_plugin"]["reward_funcs"] == ["aworld_letter_reward", "format"]
    dry = check.details["swift_dry_run"]["values"]  # run by ms-swift: a letter is not <think>..</think><answer>..
    assert dry["format"] == [0.0] * len(dry["aworld_letter_reward"]) and 1.0 in dry["aworld_letter_reward"]
    assert trainer.train() == "finished"
    run = trainer.train_processor.run
    status = run.read_status()
    assert status["state"] == "finished" and status["step"] == 3 and status["total_steps"] == 3
    rows = [r for r in run.read_jsonl("metrics.jsonl") if "loss" in r and "reward" in r]
    assert [r["step"] for r in rows] == [1, 2, 3]
    for r in rows:  # canonical names next to ms-swift's own keys; ms-swift logs each reward under its class
        assert {"loss", "reward", "reward_std", "lr", "learning_rate", "completion_length", "kl", "time"} <= r.keys()
        assert r["rewards/letter_reward"] == r["rewards/letter_reward/mean"] and 0.0 <= r["reward"] <= 1.0
        assert r["rewards/Format"] == 0.0  # the total is the weighted sum
        assert r["reward"] == pytest.approx(r["rewards/letter_reward"] + 0.5 * r["rewards/Format"], abs=1e-6)
    # the test split, scored every save_steps (ms-swift's eval_steps default) and at the end
    assert [r["step"] for r in run.read_jsonl("metrics.jsonl") if "eval/reward" in r] == [2, 3]
    samples = run.read_jsonl("samples.jsonl")
    assert {s["step"] for s in samples} == {1, 2, 3}
    for step in (1, 2, 3):  # whole GRPO groups (samples_per_step: 2 of them), every completion of each
        groups = step_groups(run.file("samples.jsonl"), step)
        assert 1 <= len(groups) <= 2 and all(len(g) == g[0]["group_size"] for g in groups), groups
        assert sum(map(len, groups)) == sum(s["step"] == step for s in samples)
    s = samples[0]
    assert s["prompt"][0] == {"role": "system", "content": "Reply with one capital letter."}
    for s in samples:
        assert set(s["rewards"]) == {"letter_reward", "Format"}
        assert s["reward"] == pytest.approx(s["rewards"]["letter_reward"] + 0.5 * s["rewards"]["Format"])
    events = [e["event"] for e in run.read_jsonl("events.jsonl")]
    assert events[0] == "started" and events[-1] == "finished" and events.count("checkpoint") == 2
    assert [p.name for p in run.checkpoints()] == ["checkpoint-2", "checkpoint-3"]
    assert (run.checkpoints()[-1] / "model.safetensors").exists()
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tb = EventAccumulator(str(run.tensorboard_dir))
    tb.Reload()
    assert [e.step for e in tb.Scalars("train/reward")] == [1, 2, 3]
    spec = run.read_spec()
    assert spec["engine"] == "swift" and spec["config"]["max_steps"] == 3
    assert spec["reward"][1:] == [{"ref": "swift:format", "weight": 0.5}]
    command = (run.path / "swift" / "command.sh").read_text()
    # ms-swift's rlhf script itself: what `swift.cli.main rlhf` would start as a second interpreter
    assert "/swift/cli/rlhf.py " in command and "swift.cli.main" not in command
    assert " --temperature 1.0 " in command and " --max_completion_length 2 " in command  # agent, config


def test_sft_trains_on_the_reference_answers(tmp_path):
    cfg = {
        "mode": "sft",
        "tuner_type": "full",
        "max_steps": 3,
        "learning_rate": 1e-3,
        "prompts_per_step": 4,
        "save_steps": 3,
    }
    trainer = make_trainer(tmp_path, reward_func=None, config=cfg, test_dataset=None)
    assert "sft via swift sft" in trainer.check_results[-1].message
    assert trainer.train() == "finished"
    run = trainer.train_processor.run
    rows = [r for r in run.read_jsonl("metrics.jsonl") if "loss" in r]
    assert [r["step"] for r in rows] == [1, 2, 3] and all(r["loss"] > 0 for r in rows)
    assert run.read_status()["state"] == "finished"
    assert [p.name for p in run.checkpoints()] == ["checkpoint-3"]
    line = (run.path / "swift" / "train_sft.jsonl").read_text().splitlines()[0]
    assert '"role": "assistant", "content": "A"' in line


@pytest.fixture()
def long_run(tmp_path):
    run = prepare_run(
        Modules(AGENT, TRAIN, None, REWARD, {**FAST, "max_steps": 5000, "save_steps": 1000}, "swift"),
        runs_dir=str(tmp_path / "runs"),
    )
    yield run
    if process_alive(run.read_status()):
        kill_run(run.path)


def test_stop_ends_at_a_step_boundary_with_a_checkpoint_and_resume_continues(long_run, tmp_path):
    spawn_run(long_run.path)
    wait_for(lambda: (long_run.read_status().get("step") or 0) >= 2, 300, "two steps")
    stop_run(long_run.path)
    status = wait_for(
        lambda: (s := effective_status(long_run))["state"] in ("stopped", "failed") and s, 180, "the stop"
    )
    assert status["state"] == "stopped", status
    stopped_at = status["step"]
    assert 2 <= stopped_at < 5000
    assert [p.name for p in long_run.checkpoints()] == [f"checkpoint-{stopped_at}"]
    kinds = [e["event"] for e in long_run.read_jsonl("events.jsonl")]
    assert "stop_requested" in kinds and kinds[-1] == "stopped" and "checkpoint" in kinds
    log = long_run.log_path.read_text()
    assert f"[aworld] stop requested: ending after step {stopped_at}" in log and "Traceback" not in log

    # resumed in the same run (issue 45): ms-swift's resume_from_checkpoint, from the checkpoint the stop saved
    assert AgentTrainer.resume(long_run.path, max_steps=stopped_at + 2) == "finished"
    steps = [r["step"] for r in long_run.read_jsonl("metrics.jsonl") if "loss" in r]
    assert steps == list(range(1, stopped_at + 3)), steps
    status = long_run.read_status()
    assert status["state"] == "finished" and status["step"] == stopped_at + 2 and status["attempt"] == 2, status
    resumed = [e for e in long_run.read_jsonl("events.jsonl") if e["event"] == "resumed"]
    assert len(resumed) == 1 and resumed[0]["checkpoint"] == f"checkpoint-{stopped_at}", resumed


def test_a_reward_that_raises_fails_the_run_with_cause_reward_error(tmp_path):
    flaky = tmp_path / "flaky_reward.py"
    flaky.write_text(
        "calls = 0\n"
        "def flaky(completion, answer, **kw):\n"
        "    global calls\n"
        "    calls += 1\n"
        "    if calls > 10:\n"
        "        raise ZeroDivisionError('the judge went away')\n"
        "    return 1.0 if completion.strip()[:1] == answer else 0.0\n"
    )
    trainer = make_trainer(tmp_path, reward_func=f"{flaky}:flaky", test_dataset=None, config={**FAST, "max_steps": 6})
    with pytest.raises(Exception, match="the judge went away"):
        trainer.train()
    run = trainer.train_processor.run
    status = run.read_status()
    assert status["state"] == "failed" and status["cause"] == "reward error", status
    failed = [e for e in run.read_jsonl("events.jsonl") if e["event"] == "failed"][-1]
    assert "ZeroDivisionError: the judge went away" in failed["message"]


def test_a_misspelled_ms_swift_reward_gets_did_you_mean_before_any_process_starts(tmp_path):
    runs = tmp_path / "runs"
    with pytest.raises(CheckError) as err:
        prepare_run(Modules(AGENT, TRAIN, TEST, [REWARD, "swift:acuracy"], dict(FAST), "swift"), runs_dir=str(runs))
    assert "ms-swift has no reward 'acuracy' (did you mean \"accuracy\"?)" in str(err.value)
    assert "swift:soft_overlong" in str(err.value)  # the fix lists what there is
    assert not any(runs.iterdir())


def test_the_reward_catalog_lists_ms_swifts_rewards_as_the_installed_ms_swift_has_them():
    import subprocess

    from engines.rewards.catalog import catalog
    from engines.swift.environment import swift_python

    imported = json.loads(
        subprocess.run(
            [
                swift_python(),
                "-c",
                "import json; from swift.rewards import orms; "
                "print(json.dumps({k: v.__name__ for k, v in orms.items()}))",
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    listed = {e["key"]: e for e in catalog() if e["source"].startswith("ms-swift")}
    assert set(listed) == {f"swift:{k}" for k in imported} and "swift:accuracy" in listed
    accuracy = listed["swift:accuracy"]
    assert accuracy["source"] == "ms-swift 4.6.0" and accuracy["engines"] == ["swift"]
    assert "on the swift engine only" in accuracy["description"]
    assert "trl.rewards:accuracy_reward" in accuracy["description"]
    from engines.swift.orms import installed_orms

    assert {k: v["class"] for k, v in installed_orms()[0].items()} == imported


def test_a_misspelled_ms_swift_argument_gets_did_you_mean_before_any_process_starts(tmp_path):
    runs = tmp_path / "runs"
    with pytest.raises(CheckError) as err:
        prepare_run(
            Modules(AGENT, TRAIN, TEST, REWARD, {**FAST, "lr_sheduler_type": "constant"}, "swift"), runs_dir=str(runs)
        )
    assert "unknown setting 'lr_sheduler_type' in the config (did you mean \"lr_scheduler_type\"?)" in str(err.value)
    assert not any(runs.iterdir())  # no run directory, so no run process


def test_the_diagnoses_thresholds_are_taken_and_early_stopping_is_refused_not_ignored(tmp_path):
    """Issue 33: the run settings went to ms-swift as unknown arguments (diagnostics refused, though the watcher
    acts on every engine's run); early stopping, which only the trl engine acts on, is refused by name."""
    runs = tmp_path / "runs"
    run = prepare_run(
        Modules(AGENT, TRAIN, TEST, REWARD, {**FAST, "diagnostics": {"kl_bound": 2.0}}, "swift"), runs_dir=str(runs)
    )
    assert run.read_spec()["config"]["diagnostics"] == {"kl_bound": 2.0}
    with pytest.raises(CheckError) as err:
        prepare_run(
            Modules(AGENT, TRAIN, TEST, REWARD, {**FAST, "early_stopping_patience": 2}, "swift"), runs_dir=str(runs)
        )
    assert "early_stopping_patience: the swift engine does not act on this setting" in str(err.value)


def test_values_ms_swift_rejects_are_reported_against_the_key(tmp_path):
    config = tmp_path / "swift.yaml"
    config.write_text("tuner_type: full\nmax_steps: 2\nwarmup_ratio: lots\n")
    with pytest.raises(CheckError) as err:
        make_trainer(tmp_path, config=str(config))
    assert "ms-swift rejects `warmup_ratio` = 'lots' in config file swift.yaml" in str(err.value)
    assert "invalid float value" in str(err.value)
    with pytest.raises(CheckError) as err:
        make_trainer(tmp_path, config={**FAST, "tuner_type": "fulll"})
    assert "ms-swift rejects `tuner_type` = 'fulll'" in str(err.value) and 'did you mean "full"' in str(err.value)
    with pytest.raises(CheckError) as err:
        make_trainer(tmp_path, config={**FAST, "vllm_mode": "colocate"})
    assert "ms-swift rejects `vllm_mode` = 'colocate'" in str(err.value)
    assert "vllm_mode is not supported when use_vllm is false" in str(err.value)


def test_an_mcp_only_agents_tools_reach_the_swift_dataset_and_the_rendered_prompt(tmp_path):
    """calc_mcp_agent.yaml has no Python tools: its MCP server's `add` still becomes the `tools` column."""

    from engines.swift import SwiftProcessor

    p = SwiftProcessor(str(tmp_path / "runs"))
    p.check_agent(str(ROOT / "assets/agents/calc_mcp_agent.yaml"))
    p.check_dataset(str(ROOT / "assets/datasets/calc_train.jsonl"))
    p.close()
    assert p.agent_spec.tools == [] and p.agent_spec.tool_servers == {"add": "calculator"}
    line = json.loads((p.run.path / "swift" / "train.jsonl").read_text().splitlines()[0])
    assert [t["function"]["name"] for t in json.loads(line["tools"])] == ["add"]
    rendered = next(r for r in p.check_results if r.module == "dataset").details["rendered_prompt"]
    assert '"name": "add"' in rendered and "What is 0 + 0?" in rendered  # the model is shown the tool


def test_a_judge_and_trls_accuracy_reward_dry_run_in_ms_swifts_environment(tmp_path, monkeypatch):
    """openai (ms-swift's own dependency) and math-verify (the setup's pins) are in ms-swift's environment: a
    judge on 127.0.0.1 and trl.rewards:accuracy_reward run there through the plugin and score as they do here.
    The judge's key reaches the helper process even when it was started before the key was set."""
    from engines.swift import SwiftProcessor
    from testing.gsm8k import write_gsm8k_parquet
    from testing.openai_server import ChatServer

    from engines.swift.session import shared_helper

    data = write_gsm8k_parquet(tmp_path / "train.parquet")
    shared_helper().call("hello")  # ms-swift's environment already running, as after an earlier check: the
    monkeypatch.setenv("AWORLD_TEST_JUDGE_KEY", "sk-test-0123456789abcdef")  # key set after it still reaches it
    prompt = "Question: {prompt}\nReference: {answer}\nReply: {completion}\nScore from 0 to 10:"
    judge = {
        "judge": {
            "url": None,
            "model": "tiny-judge",
            "prompt": prompt,
            "api_key_env": "AWORLD_TEST_JUDGE_KEY",
            "scale": 10,
        }
    }
    with ChatServer(key="sk-test-0123456789abcdef") as server:
        judge["judge"]["url"] = server.url
        p = SwiftProcessor(str(tmp_path / "runs"))
        p.check_agent(
            {
                "name": "gsm",
                "model": str(ROOT / "assets/models/tiny-calc"),
                "system_prompt": "Solve it.",
                "max_tokens": 8,
            }
        )
        p.check_dataset(data)
        p.check_reward([judge, "trl.rewards:accuracy_reward"])
        p.close()
    result = next(r for r in p.check_results if r.module == "reward")
    assert result.status == "ok", (result.message, result.warnings)  # no "scores differently" warning
    values = result.details["swift_dry_run"]["values"]
    assert values["aworld_judge"] == [1.0, 0.0, 1.0, 0.0]  # reference, wrong answer, for two rows: the judge's grades
    assert len(values["aworld_accuracy_reward"]) == 4
    swift_requests = [r for r in server.requests if "Reply: 20" in r["messages"][-1]["content"]]
    assert swift_requests  # the wrong answer the swift dry run sends ('20', row 3's answer) reached the judge


def pad_loving_agent(tmp_path: Path) -> str:
    """The letters agent on a copy of the demo model that samples its pad token (id 0) almost surely."""
    model = tmp_path / "pad-loving"
    shutil.copytree(ROOT / "assets/models/tiny-letters", model)
    gen = json.loads((model / "generation_config.json").read_text())
    assert gen["pad_token_id"] != gen["eos_token_id"]
    gen["sequence_bias"] = [[[gen["pad_token_id"]], 100.0]]
    (model / "generation_config.json").write_text(json.dumps(gen))
    agent = yaml.safe_load((ROOT / "assets/agents/letters_agent.yaml").read_text())
    agent["model"] = str(model)
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump(agent))
    return str(path)


def test_rollouts_never_sample_the_pad_token(tmp_path):
    """ms-swift 4.6 drops generated pad ids from completions, and a completion made only of them fails its
    GRPO step ("Size does not match at dimension 1"): the letters demo on swift died so at step 161. A demo
    model whose generation config all but forces the pad token fails at step 1 without the plugin's
    suppression, and trains with it."""
    trainer = make_trainer(
        tmp_path, agent=pad_loving_agent(tmp_path), test_dataset=None, config={**FAST, "max_steps": 2}
    )
    outcome = trainer.train()
    run = trainer.train_processor.run
    assert outcome == "finished", run.read_status()
    assert run.read_status()["step"] == 2
    assert "rollouts never sample the pad token (id 0)" in run.log_path.read_text()
    completions = [s["completion"][0]["content"] for s in run.read_jsonl("samples.jsonl")]
    assert completions and all(completions), completions  # no empty (pad-only) completion


def test_an_aworld_agent_object_trains_on_swift_and_the_check_says_what_its_tools_do_there(tmp_path, monkeypatch):
    """#30 §2: AWorld's own Agent object (AgentConfig, system_prompt, an mcp-1.x stdio server) on swift, as on trl
    (tests/test_aworld_agents.py): checked — the card says it is the AWorld form, and that ms-swift's rollouts do
    not call tools without its multi-turn scheduler (vLLM) — and trains."""
    from testing.aworld_agent import CALC_DATA, calc_agent, copy_project

    monkeypatch.chdir(copy_project(tmp_path))  # AWorld's servers start from its project root
    config = {"max_steps": 2, "prompts_per_step": 2, "num_generations": 4, "learning_rate": 1e-5, "save_steps": 2}
    t = AgentTrainer(
        agent=calc_agent(), **CALC_DATA, config=config, run_path=str(tmp_path / "runs"), train_engine_name="swift"
    )
    agent = next(r for r in t.check_results if r.module == "agent")
    assert "AWorld form: Agent object" in agent.message and "tools: add (calculator)" in agent.message
    assert any("tool calls are not executed during rollouts" in w for w in agent.warnings), agent.warnings
    assert t.train() == "finished", t.train_processor.run.log_path.read_text()[-3000:]
    assert t.train_processor.run.read_spec()["agent"]["system_prompt"] == "You are a calculator. Use the add tool."
    steps = [r["step"] for r in t.train_processor.run.read_jsonl("metrics.jsonl") if "loss" in r]
    assert steps == [1, 2]


@pytest.mark.parametrize(
    "terms, codes",
    [
        (["by_prompt"], {"no_reward_spread"}),
        (["letter", "same"], {"reward_term_constant", "completions_truncated"}),
    ],
)
def test_the_diagnoses_arise_in_a_real_ms_swift_run(tmp_path, terms, codes):
    """Issue 33 on swift, from ms-swift's own logging.jsonl keys (frac_reward_zero_std, rewards/<name>/std,
    completions/clipped_ratio): a reward that scores by the prompt only (its letter) leaves no spread in any group
    while the prompts differ (no_reward_spread, not reward_constant); a reward that gives every completion 0.5 beside
    the letters reward is a constant term of the mix, and 16-token completions of the tiny model are cut. (A reward
    constant over every prompt is reward_constant: tests/test_diagnostics_runs.py on trl.)"""
    same = tmp_path / "same_reward.py"
    same.write_text(
        "def same(completion, answer, **kw):\n    return 0.5\n\n\n"
        "def by_prompt(completion, answer, **kw):\n    return (ord(answer) - 64) / 10\n"
    )
    rewards = {"letter": REWARD, "same": f"{same}:same", "by_prompt": f"{same}:by_prompt"}
    trainer = make_trainer(
        tmp_path,
        test_dataset=None,
        reward_func=[rewards[t] for t in terms] if len(terms) > 1 else rewards[terms[0]],
        config={
            **FAST,
            "max_steps": 8,
            "prompts_per_step": 2,
            "save_steps": 100,
            "max_completion_length": 16,
            # by_prompt's maximum, 1.0, stated: its mean over two prompts never nears it (not a reward "learned")
            **({"diagnostics": {"reward_max": 1.0}} if terms == ["by_prompt"] else {}),
        },
    )
    assert trainer.train() == "finished"
    run = trainer.train_processor.run
    events = [e for e in run.read_jsonl("events.jsonl") if e.get("type") == "diagnosis" and e["state"] == "active"]
    active = {e["code"]: e for e in events}
    assert codes <= set(active), sorted(active)
    if "reward_term_constant" in codes:
        assert active["reward_term_constant"]["evidence"] == {"terms": {"same": 0.5}}
    if "no_reward_spread" in codes:
        assert set(active["no_reward_spread"]["evidence"]["zero_spread_groups"]) == {1.0}
        assert "reward_constant" not in active

"""Evaluate and export (issue #14): ``await trainer.inference()`` after training beats the base model with
real generation and the real reward; the same through the CLI; a tool-using agent's tools run during
evaluation; pass@k; bad input is a clear error before anything loads; an export reproduces the checkpoint."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from engines.core.modules import Modules
from engines import AgentTrainer, CheckError, TrainerProcessor
from engines.inference.checkpoints import resolve
from engines.inference.evaluation import list_evals, pass_at_k, prepare_eval, read_metrics
from engines.core.prepare import prepare_run
from engines.runs.rundir import RunDir

ROOT = Path(__file__).resolve().parent.parent
A = ROOT / "assets"


def test_inference_after_training_beats_the_base_model(trained_letters):
    trained = asyncio.run(trained_letters.inference())  # this trainer's latest checkpoint
    base = asyncio.run(trained_letters.inference(checkpoint="base"))
    assert trained.model == "checkpoint-300" and base.model == "base"
    assert base.metrics["reward"] <= 0.2 and trained.metrics["reward"] >= 0.8, (base.metrics, trained.metrics)
    assert trained.metrics["samples"] == 16 and trained.metrics["rewards/letter_reward"] == trained.metrics["reward"]
    p = trained.predictions[0]
    assert p["prompt"][-1]["role"] == "user" and p["answer"] and p["trajectory"][-1]["role"] == "assistant"
    assert p["reward"] == p["rewards"]["letter_reward"] and p["completion"] == p["trajectory"][-1]["content"]
    # the numbers come from real generation: a correct prediction says its letter
    right = [q for q in trained.predictions if q["reward"] == 1.0]
    assert right and all(q["completion"].strip().startswith(q["answer"]) for q in right)
    # written in the run's evaluation directory
    assert trained.path.parent.name == "evals" and (trained.path / "predictions.jsonl").exists()
    assert read_metrics(trained.path)["checkpoint-300"]["reward"] == trained.metrics["reward"]
    assert RunDir(trained.path).read_status()["state"] == "finished"


def test_the_cli_evaluates_several_models_side_by_side(trained_letters):
    run = trained_letters.train_processor.run
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "engines",
            "eval",
            "--run",
            str(run.path),
            "--checkpoint",
            "base",
            "--checkpoint",
            "checkpoint-300",
            "--samples",
            "4",
            "--temperature",
            "1.0",
            "--max-samples",
            "8",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = {ln.split(":", 1)[0]: json.loads(ln.split(":", 1)[1]) for ln in out.stdout.splitlines() if ln.strip()}
    assert set(lines) == {"base", "checkpoint-300"}
    for m in lines.values():
        assert m["samples"] == 32 and m["prompts"] == 8 and 0 <= m["pass@1"] <= m["pass@2"] <= m["pass@4"] <= 1
    assert lines["checkpoint-300"]["reward"] > lines["base"]["reward"]
    newest = list_evals(run.path)[0]
    rows = newest.read_jsonl("predictions.jsonl")
    assert len(rows) == 64 and {r["model"] for r in rows} == {"base", "checkpoint-300"}


def test_pass_at_k_is_the_unbiased_estimate():
    assert pass_at_k(4, 0, 1) == 0.0 and pass_at_k(4, 4, 1) == 1.0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25) and pass_at_k(4, 1, 2) == pytest.approx(0.5)
    assert pass_at_k(4, 1, 4) == 1.0 and pass_at_k(10, 3, 5) == pytest.approx(
        1 - (7 * 6 * 5 * 4 * 3) / (10 * 9 * 8 * 7 * 6)
    )


def test_a_tool_using_agents_tools_run_during_evaluation(tmp_path):
    trainer = AgentTrainer(
        agent=str(A / "agents/calc_agent.yaml"),
        train_dataset=str(A / "datasets/calc_train.jsonl"),
        test_dataset=str(A / "datasets/calc_test.jsonl"),
        reward_func=str(A / "rewards/calc_reward.py") + ":calc_reward",
        config={"max_steps": 2},
        run_path=str(tmp_path / "runs"),
        train_engine_name="trl",
    )
    result = asyncio.run(trainer.inference(max_samples=6))  # not trained: the base (warm-started) model
    assert result.model == "base" and result.metrics["tool_calls"] >= 1
    # the model's load is timed apart from generating and scoring (a big model's load is not its speed)
    m = result.metrics
    assert m["load_seconds"] > 0 and m["generate_seconds"] > 0
    assert abs(m["load_seconds"] + m["generate_seconds"] - m["seconds"]) <= 0.02
    executed = [p for p in result.predictions if any(m["role"] == "tool" for m in p["trajectory"])]
    assert executed, result.predictions[0]
    p = executed[0]
    call = next(m for m in p["trajectory"] if m.get("tool_calls"))["tool_calls"][0]["function"]
    tool = next(m for m in p["trajectory"] if m["role"] == "tool")
    assert call["name"] == "add" and tool["content"] == str(call["arguments"]["a"] + call["arguments"]["b"])
    assert p["trajectory"][-1]["role"] == "assistant" and result.metrics["reward"] > 0


def test_inference_before_initialization_and_engines_without_it(clean_registry, tmp_path):
    class NoInference(TrainerProcessor):
        def train(self): ...
        def check_agent(self, agent): ...
        def check_dataset(self, dataset=None, test_dataset=None): ...
        def check_reward(self, reward_func=None): ...
        def check_config(self, config=None): ...

    class AsyncInference(NoInference):
        async def inference(self, dataset=None, **kw):
            return {"async": dataset, **kw}

    class SyncInference(NoInference):
        def inference(self, dataset=None, **kw):
            return {"sync": dataset, **kw}

    for name, cls in (("noinf", NoInference), ("asyncinf", AsyncInference), ("syncinf", SyncInference)):
        AgentTrainer.register_processor(name, cls)
    trainer = AgentTrainer(agent="a.yaml", train_engine_name="noinf", run_path=str(tmp_path))
    with pytest.raises(NotImplementedError, match="the 'noinf' engine has no inference"):
        asyncio.run(trainer.inference())
    assert asyncio.run(AgentTrainer(agent="a.yaml", train_engine_name="asyncinf").inference("d", samples=2)) == {
        "async": "d",
        "samples": 2,
    }
    assert asyncio.run(AgentTrainer(agent="a.yaml", train_engine_name="syncinf").inference("d", checkpoint="x")) == {
        "sync": "d",
        "checkpoint": "x",
    }
    trainer.train_processor._initialized = False
    with pytest.raises(ValueError, match="Train engine noinf is not initialized"):
        asyncio.run(trainer.inference())


@pytest.fixture
def letters_run(tmp_path, demo):
    return prepare_run(
        Modules(demo["agent"], demo["train"], demo["test"], demo["reward"], {"max_steps": 2}, train_engine_name="trl"),
        runs_dir=str(tmp_path / "runs"),
    )


def test_bad_evaluation_input_is_a_clear_error_before_anything_loads(letters_run, tmp_path, monkeypatch):
    run = letters_run
    (run.checkpoints_dir / "checkpoint-10").mkdir(parents=True)
    with pytest.raises(CheckError, match=r"no checkpoint 'checkpoint-5'.*pruned.*pick one of: checkpoint-10, base"):
        prepare_eval(run.path, ["checkpoint-5"])
    with pytest.raises(CheckError, match="holds no model weights"):  # an unfinished checkpoint
        prepare_eval(run.path, ["checkpoint-10"])
    with pytest.raises(CheckError, match="another architecture than the agent's model"):
        prepare_eval(run.path, [str(A / "models/tiny-calc")])
    no_answers = tmp_path / "questions.jsonl"
    no_answers.write_text('{"prompt": "Say the letter A:"}\n{"prompt": "Say the letter B:"}\n')
    with pytest.raises(CheckError, match="no reference-answer column, and the reward letter_reward needs one"):
        prepare_eval(run.path, ["base"], dataset=str(no_answers))
    with pytest.raises(CheckError, match="temperature 0 are all the same"):
        prepare_eval(run.path, ["base"], samples=4)

    class Tiny:
        available = 1000

    monkeypatch.setattr(psutil, "virtual_memory", lambda: Tiny())
    with pytest.raises(CheckError, match="more than this machine's free memory"):
        prepare_eval(run.path, ["base"])
    assert list_evals(run.path) == []  # nothing was started for any of them


def test_ms_swifts_own_rewards_are_left_out_of_an_evaluation_and_said_so(letters_run):
    from engines.inference.evaluation import read_eval

    run = letters_run
    spec = run.read_spec()
    ours = list(spec["reward"])
    run.write_spec({**spec, "reward": ours + [{"ref": "swift:format", "weight": 0.5}]})  # as a swift run has it
    doc = read_eval(prepare_eval(run.path, ["base"]).path)
    assert doc["rewards_left_out"]["rewards"] == ["swift:format"]
    assert [t.get("ref") for t in doc["reward"]] == [t.get("ref") for t in ours]
    run.write_spec({**spec, "reward": [{"ref": "swift:format", "weight": 1.0}]})
    with pytest.raises(CheckError, match=r"rewards \(swift:format\) are ms-swift's own.*trl.rewards:think_format"):
        prepare_eval(run.path, ["base"])


def test_a_verl_checkpoint_in_fsdp_form_says_how_to_convert_it(letters_run, demo):
    ck = letters_run.checkpoints_dir / "global_step_10" / "actor"
    ck.mkdir(parents=True)
    (ck / "model_world_size_1_rank_0.pt").write_bytes(b"x")
    with pytest.raises(CheckError, match="verl.model_merger merge --backend fsdp"):
        resolve("global_step_10", demo["model"], letters_run)


def test_evaluating_an_mcp_agent_labels_its_calls_and_results_with_the_server(tmp_path):
    trainer = AgentTrainer(
        agent=str(A / "agents/calc_mcp_agent.yaml"),
        train_dataset=str(A / "datasets/calc_train.jsonl"),
        test_dataset=str(A / "datasets/calc_test.jsonl"),
        reward_func=str(A / "rewards/calc_reward.py") + ":calc_reward",
        config={"max_steps": 2},
        run_path=str(tmp_path / "runs"),
        train_engine_name="trl",
    )
    result = asyncio.run(trainer.inference(max_samples=6))  # the base model, its tool on the MCP server
    assert result.model == "base" and result.metrics["tool_calls"] >= 1
    # the model's load is timed apart from generating and scoring (a big model's load is not its speed)
    m = result.metrics
    assert m["load_seconds"] > 0 and m["generate_seconds"] > 0
    assert abs(m["load_seconds"] + m["generate_seconds"] - m["seconds"]) <= 0.02
    executed = [p for p in result.predictions if any(m["role"] == "tool" for m in p["trajectory"])]
    assert executed, result.predictions[0]
    for p in executed:  # every call went to the calculator server, which computed the result
        turns = p["trajectory"]
        for i, m in enumerate(turns):
            for call in m.get("tool_calls") or []:
                tool = next(t for t in turns[i + 1 :] if t["role"] == "tool")
                assert call["server"] == "calculator" and tool["server"] == "calculator", (call, tool)
                args = call["function"]["arguments"]
                assert call["function"]["name"] == "add" and tool["content"] == str(args["a"] + args["b"])
    # as written to the evaluation's predictions.jsonl (what the Monitor shows)
    written = [json.loads(line) for line in (result.path / "predictions.jsonl").read_text().splitlines()]
    assert any(m.get("server") == "calculator" for p in written for m in p["trajectory"] if m["role"] == "tool")
    # the server the evaluation started stopped with it (it outlived the call until this process exited)
    server = str(A / "mcp/calculator_server.py")
    left = [p for p in psutil.process_iter(["cmdline"]) if any(server in c for c in p.info["cmdline"] or [])]
    assert not left, [p.info["cmdline"] for p in left]


def test_the_studio_offers_and_evaluates_checkpoints_of_other_runs(tmp_path, demo):
    """The Evaluate tab's choices: the base model, this run's checkpoints, and every other run's, labelled with
    that run; one of another run evaluates beside this run's own (its own label in the results), and one of
    another architecture is refused with the reason before anything starts."""
    import shutil

    from aworld_gui.worker.check_worker import CheckWorker
    from aworld_gui.core.run_cache import RunCache
    from aworld_gui.core.studio import Studio
    from aworld_gui.rendering.i18n import localize
    from engines.runs.lifecycle import effective_status
    from testing.waiting import wait_for

    studio = Studio(tmp_path / "runs", worker=CheckWorker(), cache=RunCache())
    runs_dir = str(studio.runs_dir)
    mine = prepare_run(
        Modules(demo["agent"], demo["train"], demo["test"], demo["reward"], {"max_steps": 1}, train_engine_name="trl"),
        runs_dir=runs_dir,
    )
    other = prepare_run(
        Modules(demo["agent"], demo["train"], demo["test"], demo["reward"], {"max_steps": 1}, train_engine_name="trl"),
        runs_dir=runs_dir,
        name="letters again",
    )
    calc = prepare_run(
        Modules(
            str(A / "agents/calc_agent.yaml"),
            str(A / "datasets/calc_train.jsonl"),
            None,
            str(A / "rewards/calc_reward.py") + ":calc_reward",
            {"max_steps": 1},
            train_engine_name="trl",
        ),
        runs_dir=runs_dir,
    )
    for run, model, name in (
        (mine, "tiny-letters", "checkpoint-1"),
        (other, "tiny-letters", "checkpoint-2"),
        (calc, "tiny-calc", "checkpoint-3"),
    ):
        shutil.copytree(A / "models" / model, run.checkpoints_dir / name)  # real weights
    choices = studio.model_choices(mine.run_id)
    assert [(localize(label, "en"), value) for label, value in choices[:2]] == [
        ("base", "base"),
        ("checkpoint-1 · latest", "checkpoint-1"),
    ]
    shown = [(localize(label, "en"), value) for label, value in choices]
    assert ("letters again / checkpoint-2 · latest", f"{other.run_id}/checkpoint-2") in shown
    assert (f"{calc.run_id} / checkpoint-3 · latest", f"{calc.run_id}/checkpoint-3") in shown
    assert len(choices) == 4
    try:
        refused = studio.launch_eval(mine.run_id, [f"{calc.run_id}/checkpoint-3"])
        assert not refused["ok"] and "another architecture than the agent's model" in refused["error"]
        pruned = studio.launch_eval(mine.run_id, [f"{other.run_id}/checkpoint-9"])
        assert (
            not pruned["ok"]
            and pruned["error"]
            == f"run {other.run_id} has no checkpoint 'checkpoint-9' — pick one of: {other.run_id}/checkpoint-2"
        )
        res = studio.launch_eval(mine.run_id, ["checkpoint-1", f"{other.run_id}/checkpoint-2"], max_samples=2)
        assert res["ok"], res
        eval_dir = RunDir(res["eval_dir"])
        wait_for(lambda: effective_status(eval_dir).get("state") in ("finished", "failed"), 300, "the evaluation")
        assert effective_status(eval_dir)["state"] == "finished", (eval_dir.path / "eval.log").read_text()[-2000:]
        metrics = read_metrics(eval_dir.path)
        assert list(metrics) == ["checkpoint-1", f"{other.run_id}/checkpoint-2"]
        assert metrics["checkpoint-1"]["reward"] == metrics[f"{other.run_id}/checkpoint-2"]["reward"]  # same weights
        [listed] = studio.evaluations(mine.run_id)
        assert listed["models"] == ["checkpoint-1", f"{other.run_id}/checkpoint-2"]
        assert listed["filed_under"] is None and studio.eval_path(mine.run_id, listed["eval_id"]) == eval_dir.path
        # the other run lists it too, as the run it was launched from filed it (it showed under that run only)
        [theirs] = studio.evaluations(other.run_id)
        assert theirs["eval_id"] == f"{mine.run_id}/{listed['eval_id']}" and theirs["filed_under"] == mine.run_id
        assert (
            theirs["rewards"] == listed["rewards"]
            and studio.eval_path(other.run_id, theirs["eval_id"]) == eval_dir.path
        )
        # a run whose checkpoints it did not score neither lists it nor opens it by that id
        assert studio.evaluations(calc.run_id) == []
        with pytest.raises(ValueError, match="scored no checkpoint of run"):
            studio.eval_path(calc.run_id, theirs["eval_id"])
        with pytest.raises(ValueError, match="is not a run id"):
            studio.eval_path(other.run_id, f"{mine.run_id}/../{listed['eval_id']}")
        with pytest.raises(ValueError, match="no evaluation"):
            studio.eval_path(other.run_id, f"{mine.run_id}/..")
    finally:
        studio.close()


def test_the_list_of_evaluations_names_what_each_compared_not_a_state_that_goes_stale():
    """The list is filled when a run is picked or an evaluation launched, not as one runs: its label said
    "queued" beside the badge's "Finished" (seen in the browser walkthrough). The badge carries the state."""
    from aworld_gui.rendering.i18n import localize
    from aworld_gui.tabs.evaluate_tab import EvaluateTab

    queued = {
        "eval_id": "20261125-021338-eval-4873",
        "state": "queued",
        "models": ["base", "checkpoint-300"],
        "dataset": "letters_test.jsonl",
    }
    finished = {**queued, "state": "finished"}
    assert EvaluateTab._eval_choices([queued]) == EvaluateTab._eval_choices([finished])
    [(label, value)] = EvaluateTab._eval_choices([finished])
    assert value == "20261125-021338-eval-4873"
    assert localize(label, "en") == "20261125-021338-eval-4873 · base, checkpoint-300 · letters_test.jsonl"
    assert localize(label, "zh") == "20261125-021338-eval-4873 · 基座模型, checkpoint-300 · letters_test.jsonl"


def test_the_evaluate_tables_show_a_whitespace_or_empty_completion_as_such():
    """A completion of spaces showed as a blank cell, read as a missing answer (issue 32 §4)."""
    from aworld_gui.rendering.i18n import localize
    from aworld_gui.tabs.evaluate_tab import sample_rows, summary_html

    preds = [
        {"model": m, "index": 0, "sample": 0, "prompt": "hi", "answer": "a", "completion": c, "reward": 0.0}
        for m, c in (("base", " \n"), ("checkpoint-2", ""), ("best", "a"))
    ]
    rows, headers = sample_rows(preds)
    shown = [localize(c, "en") if isinstance(c, str) else c for c in rows[0][4:]]
    assert shown == ["(whitespace ' \\n')", 0.0, "(empty)", 0.0, "a", 0.0], (rows, headers)
    assert [localize(c, "zh") for c in rows[0][4::2]] == ["(空白 ' \\n')", "(空)", "a"]  # as the Chinese page shows
    table = summary_html({"base": {"reward": 0.5, "load_seconds": 1.5, "generate_seconds": 3.0, "seconds": 4.5}})
    assert table.index("load_seconds") < table.index("generate_seconds") < table.index("<th>seconds")

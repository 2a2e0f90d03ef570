"""A tool-using agent: the calc demo's GRPO rollouts really call the calculator tool through TRL, and the
held-out scoring during training runs the agent's tools too (it skipped tool-using agents before)."""

from __future__ import annotations

from pathlib import Path

from engines import AgentTrainer

ROOT = Path(__file__).resolve().parent.parent


def test_calc_agent_rollouts_call_the_tool(tmp_path):
    trainer = AgentTrainer(
        agent=str(ROOT / "assets/agents/calc_agent.yaml"),
        train_dataset=str(ROOT / "assets/datasets/calc_train.jsonl"),
        test_dataset=str(ROOT / "assets/datasets/calc_test.jsonl"),
        reward_func=str(ROOT / "assets/rewards/calc_reward.py") + ":calc_reward",
        config={
            "max_steps": 2,
            "prompts_per_step": 2,
            "num_generations": 4,
            "learning_rate": 1e-5,
            "save_steps": 2,
            "samples_per_step": 4,
            "eval_samples": 4,
        },
        run_path=str(tmp_path / "runs"),
        train_engine_name="trl",
    )
    agent_check = next(r for r in trainer.check_results if r.module == "agent")
    assert [s["function"]["name"] for s in agent_check.details["tool_schemas"]] == ["add"]
    dataset_check = next(r for r in trainer.check_results if r.module == "dataset")
    assert '"name": "add"' in dataset_check.details["rendered_prompt"]  # tools rendered into the prompt
    assert trainer.train() == "finished"
    run = trainer.train_processor.run
    rows = [r for r in run.read_jsonl("metrics.jsonl") if "loss" in r]
    assert len(rows) == 2 and all(r["tools/call_frequency"] > 0 for r in rows)
    samples = run.read_jsonl("samples.jsonl")
    turns = [m for s in samples for m in s["completion"]]
    calls = [m for m in turns if m.get("tool_calls")]
    results = [m for m in turns if m["role"] == "tool"]
    assert calls and calls[0]["tool_calls"][0]["function"]["name"] == "add"
    assert results  # the tool's output came back into the trajectory
    evals = [r for r in run.read_jsonl("metrics.jsonl") if "eval/reward" in r]
    assert [r["step"] for r in evals] == [0, 2]  # at step 0 and the end
    assert all(r["eval/samples"] == 4 and r["eval/tool_calls"] > 0 for r in evals), evals


def test_an_agent_whose_tool_always_fails_gets_tools_unused_in_a_real_run(tmp_path):
    """#33: tools_unused from a real run (it was shown on series only): the calc agent's add tool raises on every
    call — the model calls it (tools/call_frequency 1.0), every call fails (tools/failure_frequency 1.0), and the
    diagnosis says so after tools_steps logged steps, with the failing share as its evidence."""
    down = tmp_path / "down.py"
    down.write_text(
        (ROOT / "assets/tools/calculator.py")
        .read_text()
        .split("def multiply")[0]
        .replace("return int(a) + int(b)", 'raise RuntimeError("the calculator is down")')
    )
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        (ROOT / "assets/agents/calc_agent.yaml")
        .read_text()
        .replace("../models/tiny-calc", str(ROOT / "assets/models/tiny-calc"))
        .replace("../tools/calculator.py:add", f"{down}:add")
    )
    trainer = AgentTrainer(
        agent=str(agent),
        train_dataset=str(ROOT / "assets/datasets/calc_train.jsonl"),
        reward_func=str(ROOT / "assets/rewards/calc_reward.py") + ":calc_reward",
        config={
            "max_steps": 4,
            "prompts_per_step": 2,
            "num_generations": 4,
            "learning_rate": 1e-5,
            "save_steps": 100,
            "eval_steps": 0,
            "diagnostics": {"poll_seconds": 0.2, "tools_steps": 3},
        },
        run_path=str(tmp_path / "runs"),
        train_engine_name="trl",
    )
    assert trainer.train() == "finished"
    run = trainer.train_processor.run
    rows = [r for r in run.read_jsonl("metrics.jsonl") if "loss" in r]
    assert [(r["tools/call_frequency"] > 0, r["tools/failure_frequency"]) for r in rows] == [(True, 1.0)] * 4
    found = [e for e in run.read_jsonl("events.jsonl") if e.get("type") == "diagnosis" and e["code"] == "tools_unused"]
    assert found[0]["state"] == "active" and found[0]["step"] in (3, 4)  # (4: a poll that read two rows at once)
    assert found[0]["evidence"]["failing_share"] == [1.0, 1.0, 1.0]

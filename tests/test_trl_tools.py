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

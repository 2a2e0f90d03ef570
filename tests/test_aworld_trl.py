"""AWorld's TRL engine conventions (train/integration/trl/trl_trainer.py): config `model` and GRPOConfig keyword
arguments, its `fp16: True` default on a machine without a GPU, rewards `fn(completions, prompts, **kw)`, a
dataset given as a JSON path."""

from __future__ import annotations

import json
from pathlib import Path

from engines.core.modules import Modules
from engines.core.checks import check_all

ROOT = Path(__file__).resolve().parent.parent
MODEL = str(ROOT / "assets/models/tiny-calc")


def aworld_reward(completions, prompts, **kwargs):
    """AWorld's reward form: a list of completions and their prompts."""
    return [1.0 if str(a) in str(c) else 0.0 for c, a in zip(completions, kwargs["answer"])]


def test_an_aworld_trl_config_checks_on_a_cpu_machine_with_a_note_for_fp16(tmp_path):
    rows = [json.loads(line) for line in (ROOT / "assets/datasets/calc_train.jsonl").read_text().splitlines()]
    data = tmp_path / "train.json"
    data.write_text(json.dumps(rows[:16]))  # a JSON array: what AWorld's load_dataset("json") reads
    config = {
        "model": MODEL,
        "fp16": True,
        "num_generations": 2,
        "max_steps": 2,
        "max_completion_length": 128,
        "per_device_train_batch_size": 2,
        "learning_rate": 1e-6,
    }  # TRAIN_DEFAULT_CONFIG['trl'] and friends
    agent = {"name": "calc", "model": MODEL, "system_prompt": "Answer."}
    results = {
        r.module: r
        for r in check_all(
            Modules(agent, str(data), None, aworld_reward, config, train_engine_name="trl"),
            run_path=str(tmp_path / "runs"),
        )
    }
    assert all(r.status != "error" for r in results.values()), {m: r.message for m, r in results.items()}
    notes = results["config"].warnings
    assert any("`fp16: true` (AWorld form" in w and "fp32" in w for w in notes), notes
    assert "16" in results["dataset"].message, results["dataset"].message  # every row of the JSON array read
    assert results["reward"].status == "ok", results["reward"]


def test_with_no_reward_function_the_configs_reward_model_is_the_reward_as_aworld_reads_it(tmp_path):
    """AWorld's TRL trainer, given reward_func None, builds the reward from the config's reward_model
    (trl_trainer.check_config → build_reward_model_fn): the same inputs train the same way here, the reward check
    says where the reward came from, and run.yaml holds it as the reward, not in the config."""
    from engines import AgentTrainer
    from testing.reward_model import build_reward_model

    rm = build_reward_model(tmp_path / "tiny-rm", good="B")
    agent = str(ROOT / "assets/agents/letters_agent.yaml")
    data = str(ROOT / "assets/datasets/letters_train.jsonl")
    config = {"reward_model": rm, "max_steps": 2, "prompts_per_step": 2, "num_generations": 4}
    results = {r.module: r for r in check_all(Modules(agent, data, None, None, config, train_engine_name="trl"))}
    assert all(r.status != "error" for r in results.values()), {m: r.message for m, r in results.items()}
    assert any(f"the config's reward_model {rm} (AWorld form" in w for w in results["reward"].warnings)
    assert "reward_model" not in results["config"].details["effective"]

    t = AgentTrainer(agent, data, None, None, config, run_path=str(tmp_path / "runs"), train_engine_name="trl")
    p = t.train_processor
    p.write_run_spec()
    spec = p.run.read_spec()
    [term] = spec["reward"]
    assert term["reward_model"]["path"] == rm and term["weight"] == 1.0
    assert "reward_model" not in spec["config"]
    [reward] = [r for r in t.check_results if r.module == "reward"]
    assert reward.status == "warning" and "AWorld form" in reward.warnings[0]
    assert t.train() == "finished"
    last = [r for r in p.run.read_jsonl("metrics.jsonl") if "reward" in r][-1]
    assert last["step"] == 2 and any(k.startswith("rewards/rm_tiny_rm") for k in last)  # the model scored it
    # beside a reward function, reward_model in the config is refused, saying how to add the model to the reward
    bad = {r.module: r for r in check_all(Modules(agent, data, None, "exact_match", config, train_engine_name="trl"))}
    assert bad["config"].status == "error" and "reward_func=[<your reward>, {reward_model: <folder>}]" in (
        bad["config"].message
    )


def test_a_reward_given_as_a_models_path_is_that_reward_model_as_aworld_reads_it(tmp_path):
    """AWorld's TRL trainer reads a reward_func string as a reward model's path (check_reward →
    build_reward_model_fn); here such a string failed ("unknown reward"). A folder holding a model is that reward
    model, the check says so, and run.yaml holds it as the reward; a built-in's name stays a built-in."""
    from engines import AgentTrainer
    from testing.reward_model import build_reward_model

    rm = build_reward_model(tmp_path / "tiny-rm", good="B")
    agent = str(ROOT / "assets/agents/letters_agent.yaml")
    data = str(ROOT / "assets/datasets/letters_train.jsonl")
    config = {"max_steps": 2, "prompts_per_step": 2, "num_generations": 4}
    results = {r.module: r for r in check_all(Modules(agent, data, None, rm, config, train_engine_name="trl"))}
    assert all(r.status != "error" for r in results.values()), {m: r.message for m, r in results.items()}
    reward = results["reward"]
    assert reward.status == "warning" and f"the reward model at {rm} (AWorld form" in reward.warnings[0]
    assert [t["name"] for t in reward.details["terms"]] == ["rm_tiny_rm"]
    assert all("rm_tiny_rm" in row["reference"]["terms"] for row in reward.details["dry_run"])  # the model scored

    t = AgentTrainer(agent, data, None, rm, config, run_path=str(tmp_path / "runs"), train_engine_name="trl")
    t.train_processor.write_run_spec()
    [term] = t.train_processor.run.read_spec()["reward"]
    assert term["reward_model"]["path"] == rm
    builtin = {
        r.module: r for r in check_all(Modules(agent, data, None, "exact_match", config, train_engine_name="trl"))
    }
    assert builtin["reward"].status == "ok" and "AWorld form" not in " ".join(builtin["reward"].warnings)


def test_the_virtual_agent_trains_the_configs_model_as_aworld_reads_it(tmp_path):
    """AWorld's TRL trainer takes agent='virtual' as no agent: the config's model is trained. Here the agent check
    reads it so, says so, and a config without a model is named as what is missing."""
    from engines import AgentTrainer

    model = str(ROOT / "assets/models/tiny-letters")
    data = str(ROOT / "assets/datasets/letters_train.jsonl")
    reward = str(ROOT / "assets/rewards/letter_reward.py") + ":letter_reward"
    config = {"model": model, "max_steps": 2, "prompts_per_step": 2, "num_generations": 4}
    results = {r.module: r for r in check_all(Modules("virtual", data, None, reward, config, train_engine_name="trl"))}
    assert all(r.status != "error" for r in results.values()), {m: r.message for m, r in results.items()}
    assert any("the 'virtual' agent (AWorld form)" in w for w in results["agent"].warnings)
    t = AgentTrainer("virtual", data, None, reward, config, run_path=str(tmp_path / "runs"), train_engine_name="trl")
    spec = t.train_processor.spec["agent"]
    assert spec["name"] == "virtual" and spec["model"] == model and not spec.get("system_prompt")
    assert t.train() == "finished"
    no_model = {
        r.module: r
        for r in check_all(Modules("virtual", data, None, reward, {"max_steps": 2}, train_engine_name="trl"))
    }
    assert no_model["agent"].status == "error"
    assert any("the config names none: add model: <folder>" in w for w in no_model["agent"].warnings)


def test_a_model_in_the_config_says_it_replaces_the_agents(tmp_path):
    """AWorld's TRL trainer trains the config's model: the config check says which model is trained instead of the
    agent's (the Agent card names the agent's); the same model in both says nothing."""
    agent = str(ROOT / "assets/agents/letters_agent.yaml")
    data = str(ROOT / "assets/datasets/letters_train.jsonl")
    reward = str(ROOT / "assets/rewards/letter_reward.py") + ":letter_reward"
    other = {
        r.module: r for r in check_all(Modules(agent, data, None, reward, {"model": MODEL}, train_engine_name="trl"))
    }
    assert any(f"model: {MODEL} (AWorld form" in w and "replaces the agent's" in w for w in other["config"].warnings)
    same = str(ROOT / "assets/models/tiny-letters")
    own = {r.module: r for r in check_all(Modules(agent, data, None, reward, {"model": same}, train_engine_name="trl"))}
    assert not any("replaces the agent's" in w for w in own["config"].warnings), own["config"].warnings

"""Config composition: verl's own ppo_trainer (Hydra) + derived values + the user's YAML, checked by
verl's own validate_config; verl's errors come back as check errors naming the key."""

import json
import warnings
from pathlib import Path

import pandas as pd
import pytest
import yaml
from omegaconf import OmegaConf

from engines.results.check_result import CheckError
from engines.verl import VerlProcessor

ROOT = Path(__file__).resolve().parent.parent
LETTERS_AGENT = str(ROOT / "assets/agents/letters_agent.yaml")
MODEL = str(ROOT / "assets/models/tiny-letters")
CALC_MODEL = str(ROOT / "assets/models/tiny-calc")

# AWorld's train/examples/train_gaia_with_aworld_verl/grpo_trainer.yaml, verbatim
AWORLD_GRPO_TRAINER = """\
# NOTE:
# - train_files, val_files in data default is None, dynamically assign values;
# - path, name in custom_reward_function default is None, dynamically assign values;
# - agent_loop_config_path in actor_rollout_ref.rollout.agent default is None, dynamically assign values;
# - default_local_dir in trainer default is None, dynamically assign values;

# config data definition
data:
  train_files:
  val_files:
  max_prompt_length: 131072
  max_response_length: 131072
  return_raw_chat: true
  train_batch_size: 1
  filter_overlong_prompts: true
  truncation: error

# custom reward function definition
custom_reward_function:

  # The path to the file containing your customized reward function.
  # If not specified, pre-implemented reward functions will be used.
  path:

  # The name of the reward function within the specified file. Default is 'compute_score'.
  name:

# config for actor, rollout and reference model
actor_rollout_ref:
  model:
    path: Qwen/Qwen3-32B
    use_remove_padding: true
    enable_gradient_checkpointing: true
    use_fused_kernels: true

  actor:
    use_kl_loss: false
    kl_loss_coef: 0.0
    clip_ratio_low: 0.2
    clip_ratio_high: 0.28
    clip_ratio_c: 10.0
    optim:
      lr: 0.000006
    use_dynamic_bsz: false
    ppo_mini_batch_size: 1
    ppo_micro_batch_size_per_gpu: 1
    ppo_max_token_len_per_gpu: 131072
    ulysses_sequence_parallel_size: 8
    strategy: fsdp2
    fsdp_config:
      model_dtype: bf16
      param_offload: true
      optimizer_offload: true
      fsdp_size: -1

  ref:
    log_prob_micro_batch_size_per_gpu: 1

  rollout:
    name: vllm
    mode: async
    max_num_batched_tokens: 32768
    prompt_length: 122980
    response_length: 8192
    tensor_model_parallel_size: 8
    enforce_eager: true
    free_cache_engine: true
    gpu_memory_utilization: 0.8
    n: 8
    max_num_seqs: 8
    log_prob_micro_batch_size_per_gpu: 1
    temperature: 1.0
    top_p: 1.0
    top_k: 80
    dtype: bfloat16
    agent:
      agent_loop_config_path:
    multi_turn:
      enable: false
      max_user_turns: 8
      max_assistant_turns: 8
      tool_config_path: train/examples/train_gaia_with_aworld_verl/dummy_tool_config.json
      format: hermes
    val_kwargs:
      top_p: 0.6
      temperature: 1.0
      n: 1
    trace:
      backend: mlflow

# config for the algorithm
algorithm:
  adv_estimator: grpo
  use_kl_in_reward: false
  kl_ctrl:
    kl_coef: 0.0

# config for the trainer
trainer:
  logger: [ 'console' ]
  project_name: verl_train
  experiment_name: verl_experiment
  nnodes: 1
  n_gpus_per_node: 8
  default_local_dir:
  total_epochs: 1
  val_before_train: false
  log_val_generations: 0
  save_freq: 30
  test_freq: 0
"""


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("data")
    rows = [{"prompt": f"Say the letter {c}:", "answer": c} for c in "ABCDEFGHIJKLMNOP"]
    pd.DataFrame(rows).to_json(folder / "letters.jsonl", orient="records", lines=True)
    return str(folder / "letters.jsonl")


def composed(tmp_path, data_file, config, reward="exact_match", agent=LETTERS_AGENT) -> VerlProcessor:
    p = VerlProcessor(str(tmp_path / "runs"))
    p.check_agent(agent)
    p.check_dataset(data_file)
    p.check_reward(reward)
    p.check_config(config)
    return p


def config_error(tmp_path, data_file, config, **kw) -> CheckError:
    with pytest.raises(CheckError) as err:
        composed(tmp_path, data_file, config, **kw)
    assert err.value.module == "config"
    return err.value


def test_grpo_setup_passes_verls_validate_config(tmp_path, data_file):
    p = composed(
        tmp_path,
        data_file,
        {"algorithm": "grpo", "batch_size": 8, "num_generations": 4, "learning_rate": 1e-5, "epochs": 2},
    )
    cfg = OmegaConf.load(p.config_path)  # the saved final config, run again through verl's own checks
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Disabled critic as algorithm.adv_estimator != gae"
        validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    assert cfg.algorithm.adv_estimator == "grpo" and cfg.actor_rollout_ref.rollout.n == 4
    assert cfg.data.train_batch_size == 8 and cfg.actor_rollout_ref.actor.optim.lr == 1e-5
    assert cfg.trainer.total_epochs == 2 and p.total_steps == 4  # 16 rows // 8 × 2 epochs
    assert cfg.actor_rollout_ref.model.path == MODEL
    assert list(cfg.trainer.logger) == ["console", "file"]  # never wandb by default
    assert cfg.actor_rollout_ref.rollout.name in ("vllm", "sglang")
    assert cfg.trainer.default_local_dir == str(p.run.checkpoints_dir)
    # checkpoints in Hugging Face form too (what evaluation, chat and export load); resume reads the shards
    assert list(cfg.actor_rollout_ref.actor.checkpoint.save_contents) == ["model", "optimizer", "extra", "hf_model"]
    assert list(cfg.actor_rollout_ref.actor.checkpoint.load_contents) == ["model", "optimizer", "extra"]
    assert cfg.reward.custom_reward_function.path == str(p.run.path / "verl" / "reward_bridge.py")
    assert cfg.reward.custom_reward_function.name == "compute_score"
    assert cfg.actor_rollout_ref.rollout.temperature == 1.0 and cfg.data.max_response_length == 2  # the agent's
    assert cfg.data.max_prompt_length == 510  # tiny-letters has 512 positions: prompt + response must fit (vLLM)
    assert cfg.actor_rollout_ref.model.override_config.attn_implementation == "sdpa"  # no flash-attn here
    assert OmegaConf.missing_keys(cfg) <= {"reward.reward_model.rollout.name"}
    result = next(r for r in p.check_results if r.module == "config")
    assert result.status in ("ok", "warning") and "validate_config passed" in result.message
    assert result.details["filled"]["data.train_files"] == [str(p.parquets["train"])]
    assert p.spec["config"]["data"]["train_batch_size"] == 8  # run.yaml keeps what the user set
    assert p.uses_local_slot


def test_batch_not_divisible_by_gpus_names_the_keys(tmp_path, data_file):
    err = config_error(tmp_path, data_file, {"trainer": {"n_gpus_per_node": 3}, "batch_size": 8, "num_generations": 8})
    assert "real_train_batch_size (64) must be divisible by minimal possible batch size (3)" in str(err)
    assert "data.train_batch_size" in err.result.details["keys"]
    assert "trainer.n_gpus_per_node" in err.result.details["keys"]
    assert "trainer.n_gpus_per_node=3" in str(err)


@pytest.mark.parametrize(
    "config,needle,key",
    [
        (
            {"data": {"trian_files": "x.parquet"}},
            "'data.trian_files' (did you mean \"train_files\"?)",
            "data.trian_files",
        ),
        ({"trainr": {"total_epochs": 1}}, "'trainr' (did you mean \"trainer\"?)", "trainr"),
        (
            {"actor_rollout_ref": {"actor": {"optim": {"learning_rate": 1e-5}}}},
            "optim.learning_rate",
            "actor_rollout_ref.actor.optim.learning_rate",
        ),
    ],
)
def test_unknown_keys_are_check_errors_with_a_suggestion(tmp_path, data_file, config, needle, key):
    err = config_error(tmp_path, data_file, config)
    assert needle in str(err)
    assert key in err.result.details["keys"]


@pytest.mark.parametrize(
    "config,needle,key",
    [
        (
            {"batch_size": 4, "actor_rollout_ref": {"actor": {"ppo_mini_batch_size": 16}}},
            "must be >= actor.ppo_mini_batch_size (16)",
            "actor_rollout_ref.actor.ppo_mini_batch_size",
        ),
        (
            {"actor_rollout_ref": {"rollout": {"mode": "sync"}}},
            "Rollout mode 'sync' has been removed",
            "actor_rollout_ref.rollout.mode",
        ),
        (
            {"actor_rollout_ref": {"actor": {"ppo_micro_batch_size": 4}}},
            "You have set both",
            "actor_rollout_ref.actor.ppo_micro_batch_size",
        ),
        ({"rollout": "hf"}, "not a verl rollout backend", "actor_rollout_ref.rollout.name"),
        ({"algorithm": "grpoo"}, 'did you mean "grpo"', "algorithm.adv_estimator"),
        ({"batch_size": 64}, "larger than the training set (16 rows)", "data.train_batch_size"),
        ({"defaults": [{"model_engine": "nope"}]}, "Could not find 'model_engine/nope'", "model_engine"),
    ],
)
def test_verl_rejections_name_the_key(tmp_path, data_file, config, needle, key):
    if config.get("actor_rollout_ref", {}).get("actor", {}).get("ppo_micro_batch_size"):
        config["actor_rollout_ref"]["actor"]["ppo_micro_batch_size_per_gpu"] = 4
    err = config_error(tmp_path, data_file, config)
    assert needle in str(err), str(err)
    assert key in err.result.details["keys"], err.result.details


def test_aworld_grpo_trainer_yaml_works(tmp_path, data_file, monkeypatch):
    """AWorld's nested verl YAML, run from the AWorld checkout root as AWorld does."""
    checkout = tmp_path / "AWorld"
    example = checkout / "train/examples/train_gaia_with_aworld_verl"
    example.mkdir(parents=True)
    (example / "grpo_trainer.yaml").write_text(AWORLD_GRPO_TRAINER)
    (example / "dummy_tool_config.json").write_text(json.dumps({"tools": []}))
    monkeypatch.chdir(checkout)
    p = composed(tmp_path, data_file, str(example / "grpo_trainer.yaml"))
    cfg = OmegaConf.load(p.config_path)
    # filled where AWorld leaves keys empty
    assert list(cfg.data.train_files) == [str(p.parquets["train"])]
    assert cfg.trainer.default_local_dir == str(p.run.checkpoints_dir)
    # verl 0.9 reads the reward from reward.custom_reward_function; AWorld's key is the legacy one
    assert cfg.reward.custom_reward_function.path == str(p.run.path / "verl" / "reward_bridge.py")
    assert cfg.custom_reward_function.path is None
    # AWorld's own settings win
    assert cfg.actor_rollout_ref.model.path == "Qwen/Qwen3-32B" and cfg.trainer.n_gpus_per_node == 8
    assert cfg.actor_rollout_ref.actor.ulysses_sequence_parallel_size == 8
    assert cfg.actor_rollout_ref.rollout.multi_turn.tool_config_path == str(example / "dummy_tool_config.json")
    assert list(cfg.trainer.logger) == ["console", "file"]  # file added for the studio's curves
    warnings = next(r for r in p.check_results if r.module == "config").warnings
    assert any("actor_rollout_ref.model.path='Qwen/Qwen3-32B'" in w for w in warnings)


def test_legacy_reward_key_moves_to_the_key_this_verl_reads(tmp_path, data_file):
    user_fn = tmp_path / "my_score.py"
    user_fn.write_text(
        "def my_score(data_source, solution_str, ground_truth, extra_info=None):\n"
        "    return 3.0 if solution_str == ground_truth else 0.0\n"
    )
    p = composed(
        tmp_path, data_file, {"custom_reward_function": {"path": str(user_fn), "name": "my_score"}}, reward=None
    )
    cfg = OmegaConf.load(p.config_path)
    assert cfg.reward.custom_reward_function.path == str(user_fn)
    assert cfg.reward.custom_reward_function.name == "my_score"
    from verl.trainer.ppo.reward import get_custom_reward_fn

    fn = get_custom_reward_fn(cfg)
    assert fn(data_source="x", solution_str="A", ground_truth="A", extra_info={}) == 3.0
    warnings = next(r for r in p.check_results if r.module == "config").warnings
    assert any("moved to `reward.custom_reward_function`" in w for w in warnings)


def test_user_loggers_are_kept_and_the_file_logger_added(tmp_path, data_file):
    p = composed(tmp_path, data_file, {"trainer.logger": ["wandb"], "trainer.total_epochs": 3})
    cfg = OmegaConf.load(p.config_path)
    assert list(cfg.trainer.logger) == ["wandb", "console", "file"] and cfg.trainer.total_epochs == 3


def test_relative_paths_resolve_against_the_config_file(tmp_path, data_file):
    folder = tmp_path / "cfg"
    folder.mkdir()
    (folder / "tools.yaml").write_text("tools: []\n")
    (folder / "run.yaml").write_text(
        yaml.safe_dump({"actor_rollout_ref": {"rollout": {"multi_turn": {"tool_config_path": "tools.yaml"}}}})
    )
    p = composed(tmp_path, data_file, str(folder / "run.yaml"))
    assert OmegaConf.load(p.config_path).actor_rollout_ref.rollout.multi_turn.tool_config_path == str(
        folder / "tools.yaml"
    )
    (folder / "bad.yaml").write_text(
        yaml.safe_dump({"actor_rollout_ref": {"rollout": {"multi_turn": {"tool_config_path": "missing.yaml"}}}})
    )
    err = config_error(tmp_path, data_file, str(folder / "bad.yaml"))
    assert "actor_rollout_ref.rollout.multi_turn.tool_config_path" in err.result.details["keys"]


def test_tools_become_verl_function_tools_with_the_tool_agent_loop(tmp_path, data_file):
    # tiny-calc: the tool schemas make the prompt longer than tiny-letters' 512 positions
    agent = {
        "name": "calc-agent",
        "model": CALC_MODEL,
        "system_prompt": "You are a calculator.",
        "max_tokens": 48,
        "max_steps": 3,
        "tools": [f"{ROOT}/assets/tools/calculator.py:add", f"{ROOT}/assets/tools/calculator.py:multiply"],
    }
    p = composed(tmp_path, data_file, None, agent=agent)
    cfg = OmegaConf.load(p.config_path)
    mt = cfg.actor_rollout_ref.rollout.multi_turn
    assert mt.enable is True and mt.max_assistant_turns == 3
    assert mt.function_tool_path == str(p.run.path / "verl" / "function_tools.py")
    assert cfg.actor_rollout_ref.rollout.agent.default_agent_loop == "tool_agent"
    assert cfg.data.max_response_length == 48 * 3
    # verl's own tool loader (what the agent loop workers and RLHFDataset call)
    from verl.tools.tool_registry import load_all_tools

    tools = load_all_tools(tool_config_path=None, function_tool_path=mt.function_tool_path)
    by_name = {t.name: t for t in tools}
    assert set(by_name) == {"add", "multiply"}
    schema = by_name["add"].tool_schema.model_dump(exclude_unset=True, exclude_none=True)
    assert schema["function"]["parameters"]["properties"]["a"]["type"] == "integer"
    import asyncio

    assert asyncio.run(by_name["add"].call({"a": 3, "b": 4})) == 7


def test_cluster_address_turns_off_the_local_slot(tmp_path, data_file, monkeypatch):
    from testing import free_port

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    address = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    p = composed(
        tmp_path, data_file, {"ray_address": address, "n_gpus_per_node": 8, "env_vars": {"HF_HOME": "/shared/hf"}}
    )
    assert p.cluster_address == address and not p.uses_local_slot
    warnings = next(r for r in p.check_results if r.module == "config").warnings
    assert any("cannot reach the Ray cluster" in w for w in warnings)
    assert any("trainer.default_local_dir to shared storage" in w for w in warnings)
    assert p.env_vars == {"HF_HOME": "/shared/hf"}
    cfg = OmegaConf.load(p.config_path)
    assert cfg.trainer.n_gpus_per_node == 8
    assert "ray_address" not in cfg  # adapter settings never reach verl


def test_run_yaml_reproduces_the_same_verl_config(tmp_path, data_file):
    from engines import AgentTrainer
    from engines.core.prepare import trainer_from_run_dir

    t = AgentTrainer(
        LETTERS_AGENT,
        data_file,
        None,
        "exact_match",
        {"batch_size": 4, "num_generations": 2},
        run_path=str(tmp_path / "runs"),
        train_engine_name="verl",
    )
    p = t.train_processor
    p.write_run_spec()
    first = Path(p.config_path).read_text()
    again = trainer_from_run_dir(p.run.path).train_processor
    assert again.config_path == p.config_path and Path(again.config_path).read_text() == first


@pytest.mark.parametrize("key,value", [("early_stopping_patience", 3), ("metric_for_best", "eval/reward")])
def test_run_settings_verl_does_not_act_on_are_refused_not_ignored(tmp_path, data_file, key, value):
    """Issue 33: the best checkpoint and early stopping follow the trl engine's evaluations; on verl they were
    accepted and ignored (a setting shown that the run would not use). The diagnoses' thresholds are taken."""
    err = config_error(tmp_path, data_file, {key: value})
    assert f"{key}: the verl engine does not act on this setting" in str(err)
    assert "train with the trl engine" in str(err) and err.result.details["keys"] == [key]
    # the diagnoses' thresholds are taken: the watcher acts on every engine's run, and reads them from run.yaml
    p = composed(tmp_path / "diagnoses", data_file, {"diagnostics": {"kl_bound": 2.0}})
    assert p.spec["config"]["diagnostics"] == {"kl_bound": 2.0}


def test_verl_submits_its_own_driver_so_the_cluster_run_settings_for_other_engines_are_refused(tmp_path, data_file):
    """ray_address is verl's own setting (its driver becomes the job); ray_resources and ray_storage, which size and
    place the job of every other engine's cluster run, would be accepted and ignored: refused, saying why."""
    p = composed(tmp_path / "address", data_file, {"ray_address": "http://head:8265", "batch_size": 4})
    assert p.cluster_address == "http://head:8265" and p.uses_local_slot is False
    err = config_error(tmp_path / "resources", data_file, {"ray_resources": {"num_gpus": 1}})
    assert "ray_resources: the verl engine does not act on this setting" in str(err)
    assert "trainer.n_gpus_per_node" in str(err) and "train with the trl engine" not in str(err)

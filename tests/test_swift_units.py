"""The swift engine's pure parts, without ms-swift: its outputs → run-dir rows (recorded real output), the
data conversion, the plugin file, the config's names and multi-process variables, error → key mapping."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engines.results.check_result import CheckError
from engines.inputs.data import load_datasets
from engines.runs.rundir import RunDir
from engines.swift import arguments as A
from engines.swift.dataset import SOLUTION, write_split
from engines.swift.launch import SwiftWatcher, explain_exit, last_error
from engines.swift.metrics import PromptLookup, normalize, samples_from_completions
from engines.plugins import entry
from engines.swift.plugin import params_file, write_plugin
from engines.runs.causes import classify_failure

ROOT = Path(__file__).resolve().parent.parent

# Recorded from ms-swift 4.6.0 (`swift rlhf --rlhf_type grpo` on the letters demo, 3 steps, a test set):
# output_dir/logging.jsonl — a training step, an evaluation, the closing summary, the final line.
LOGGING = """\
{"loss": 0.0, "grad_norm": 4.90081644, "learning_rate": 0.00075, "completions/mean_length": 2.0, "completions/min_length": 2.0, "completions/max_length": 2.0, "completions/clipped_ratio": 1.0, "reward": 0.1, "reward_std": 0.11547006, "frac_reward_zero_std": 0.0, "rewards/letter_reward/mean": 0.1, "rewards/letter_reward/std": 0.11547006, "kl": 0.0, "clip_ratio/low_mean": 0.0, "clip_ratio/low_min": 0.0, "clip_ratio/high_mean": 0.0, "clip_ratio/high_max": 0.0, "clip_ratio/region_mean": 0.0, "step_time": 0.73916802, "epoch": 0.04166667, "global_step/max_steps": "1/3", "elapsed_time": "1s", "remaining_time": "2s", "train_speed(s/it)": 1.037178}
{"eval_loss": 0.00041287, "eval_runtime": 5.3182, "eval_samples_per_second": 3.009, "eval_steps_per_second": 0.752, "eval_completions/mean_length": 1.96875, "eval_reward": 0.0375, "eval_reward_std": 0.05386752, "eval_rewards/letter_reward/mean": 0.0375, "eval_rewards/letter_reward/std": 0.05386752, "eval_kl": 0.01019582, "epoch": 0.08333333, "global_step/max_steps": "2/3", "elapsed_time": "8s", "remaining_time": "4s", "train_speed(s/it)": 4.046368}
{"train_runtime": 13.0624, "train_samples_per_second": 0.919, "train_steps_per_second": 0.23, "total_flos": 0.0, "train_loss": 0.00032874, "epoch": 0.125, "global_step/max_steps": "3/3", "elapsed_time": "13s", "remaining_time": "0s", "train_speed(s/it)": 4.351398}
{"model_parameter_info": "Qwen2ForCausalLM: 0.0841M Params", "last_model_checkpoint": "/r/checkpoints/checkpoint-3", "best_model_checkpoint": null, "global_step": 3, "log_history": [], "memory": 0}
"""
# output_dir/completions.jsonl (--log_completions true): one object of lists per logged step
COMPLETIONS = (
    '{"step": ["1", "1", "1", "1"], "prompt": ["<|im_start|>system\\nReply with one capital letter.<|im_end|>\\n'
    '<|im_start|>user\\nSay the letter H:<|im_end|>\\n<|im_start|>assistant\\n", "p", "p", "p"], '
    '"completion": ["YC", "NV", "g!", "2I"], "letter_reward": [0.20000000298023224, 0.20000000298023224, 0.0, 0.0], '
    '"advantages": [0.865276038646698, 0.865276038646698, -0.865276038646698, -0.865276038646698], '
    '"solution": ["H", "H", "H", "H"]}'
)


def test_recorded_logging_lines_become_metric_rows_with_canonical_names():
    records = [json.loads(line) for line in LOGGING.splitlines()]
    step, total, row = normalize(records[0])
    assert (step, total) == (1, 3)
    assert row["loss"] == 0.0 and row["reward"] == 0.1 and row["reward_std"] == 0.11547006
    assert row["lr"] == row["learning_rate"] == 0.00075 and row["completion_length"] == 2.0
    assert row["rewards/letter_reward"] == row["rewards/letter_reward/mean"] == 0.1
    assert row["train_speed(s/it)"] == 1.037178 and "elapsed_time" not in row and "global_step/max_steps" not in row
    step, _, row = normalize(records[1])
    assert step == 2 and row["eval/reward"] == 0.0375 and row["eval/loss"] == 0.00041287
    assert row["eval/rewards/letter_reward"] == 0.0375 and "reward" not in row
    assert normalize(records[2]) is None and normalize(records[3]) is None


def test_recorded_completions_become_samples_with_each_reward_and_the_rows_messages():
    record = json.loads(COMPLETIONS)
    messages = [
        {"role": "system", "content": "Reply with one capital letter."},
        {"role": "user", "content": "Say the letter H:"},
    ]
    lookup = PromptLookup([[{"role": "user", "content": "Say the letter G:"}], messages])
    samples = samples_from_completions(record, [("letter_reward", 0.5)], 2, lookup)
    assert len(samples) == 2
    s = samples[0]
    assert s["step"] == 1 and s["answer"] == "H" and s["prompt"] == messages
    assert s["completion"] == [{"role": "assistant", "content": "YC"}]
    assert s["rewards"] == {"letter_reward": pytest.approx(0.2)} and s["reward"] == pytest.approx(0.1)
    assert s["rendered_prompt"].startswith("<|im_start|>system")
    assert samples[1]["prompt"] == "p"  # a prompt no row matches stays as ms-swift rendered it


def test_the_watcher_mirrors_output_once_and_skips_evaluation_rollouts(tmp_path):
    run = RunDir(tmp_path / "run")
    out = run.path / "checkpoints"
    out.mkdir(parents=True)
    (out / "logging.jsonl").write_text(LOGGING)
    record = json.loads(COMPLETIONS)
    eval_record = dict(record, completion=["E1", "E2", "E3", "E4"])
    (out / "completions.jsonl").write_text(json.dumps(record) + "\n" + json.dumps(eval_record) + "\n")
    (out / "checkpoint-2").mkdir()
    (out / "checkpoint-3").mkdir()
    (out / "checkpoint-3" / "trainer_state.json").write_text("{}")
    (out / "last-checkpoint").symlink_to("checkpoint-3")
    watcher = SwiftWatcher(run, out, reward_terms=[("letter_reward", 1.0)], samples_per_step=2)
    assert watcher.poll() == 2 and watcher.poll() == 0
    assert [r["step"] for r in run.read_jsonl("metrics.jsonl")] == [1, 2]
    assert [s["completion"][0]["content"] for s in run.read_jsonl("samples.jsonl")] == ["YC", "NV"]
    events = run.read_jsonl("events.jsonl")
    assert [(e["event"], e.get("step")) for e in events] == [("summary", None), ("checkpoint", 3)]  # 2 unfinished
    summary = events[0]  # measured figures only: not ms-swift's planned-steps rates
    assert "train_steps_per_second" not in summary and summary["steps"] == 2
    rate, seconds = summary["steps_per_second"], summary["seconds"]  # rounded to 4 and 3 decimals
    assert abs(rate * seconds - 2) <= rate * 0.0005 + seconds * 0.00005 + 1e-9
    st = run.read_status()
    assert st["step"] == 2 and st["total_steps"] == 3 and st["last_reward"] == 0.1
    assert [p.name for p in run.checkpoints()] == ["checkpoint-2", "checkpoint-3"]  # not last-checkpoint


def test_exit_explanations_classify_as_the_other_engines_do():
    reward_log = (
        "Traceback (most recent call last):\n  File x\nZeroDivisionError: the judge went away\n\n"
        "The above exception was the direct cause of the following exception:\n\n"
        "_aworld_engines_0123.rewards.RewardError: reward function 'flaky' raised ZeroDivisionError: the "
        "judge went away\n[rank0]: other noise\n"
    )
    assert last_error(reward_log).startswith("_aworld_engines_0123.rewards.RewardError")
    assert classify_failure(explain_exit(1, reward_log)) == "reward error"
    assert classify_failure(explain_exit(1, "ModuleNotFoundError: No module named 'msgspec'")) == "missing dependency"
    assert classify_failure(explain_exit(-9, "")) == "killed"
    assert classify_failure(explain_exit(1, "torch.OutOfMemoryError: CUDA out of memory.")) == "out of memory"
    assert classify_failure(explain_exit(1, "ValueError: dataset column 'messages' is empty")) == "bad data"


def test_every_input_format_becomes_messages_jsonl_with_the_answer_in_solution(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("question,ground_truth,difficulty,system\nAdd 2 and 3,5,easy,x\n   ,7,hard,y\n")
    bundle = load_datasets(str(csv))
    info = write_split(
        bundle.train,
        tmp_path / "train.jsonl",
        bundle.columns,
        "Be brief.",
        [{"type": "function", "function": {"name": "add"}}],
    )
    lines = [json.loads(x) for x in (tmp_path / "train.jsonl").read_text().splitlines()]
    assert info["rows"] == 1 and info["skipped"] == 1 and info["not_passed"] == ["system"]
    assert lines[0]["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Add 2 and 3"},
    ]
    assert lines[0][SOLUTION] == "5" and lines[0]["ground_truth"] == 5 and lines[0]["difficulty"] == "easy"
    assert "system" not in lines[0] and json.loads(lines[0]["tools"])[0]["function"]["name"] == "add"
    write_split(bundle.train, tmp_path / "sft.jsonl", bundle.columns, None, None, sft=True)
    sft = json.loads((tmp_path / "sft.jsonl").read_text().splitlines()[0])
    assert sft["messages"] == [{"role": "user", "content": "Add 2 and 3"}, {"role": "assistant", "content": "5"}]


def test_chat_messages_and_verl_nested_answers_convert_too(tmp_path):
    rows = tmp_path / "chat.jsonl"
    rows.write_text(
        json.dumps({"prompt": [{"role": "user", "content": "Say B"}], "reward_model": {"ground_truth": "B"}}) + "\n"
    )
    bundle = load_datasets(str(rows))
    write_split(bundle.train, tmp_path / "out.jsonl", bundle.columns, "sys", None)
    line = json.loads((tmp_path / "out.jsonl").read_text())
    assert line["messages"] == [{"role": "system", "content": "sys"}, {"role": "user", "content": "Say B"}]
    assert line[SOLUTION] == "B"


def test_the_plugin_file_is_the_same_for_the_same_setup_in_any_run_dir(tmp_path):
    """The plugin is entry.py copied, its parameters a JSON file beside it: neither holds the run's path, so the
    same setup gives the same files (the checks are cached by their content)."""
    spec = [
        {"ref": str(ROOT / "assets/rewards/letter_reward.py") + ":letter_reward", "weight": 0.7},
        {"name": "exact_match", "weight": 0.3},
    ]
    a = write_plugin(tmp_path / "a" / "swift", spec, ["letter_reward", "exact_match"], ["solution"])
    b = write_plugin(tmp_path / "b" / "swift", spec, ["letter_reward", "exact_match"], ["solution"])
    assert a.read_text() == b.read_text() == Path(entry.__file__).read_text()
    assert params_file(a).read_text() == params_file(b).read_text() and str(tmp_path) not in params_file(a).read_text()
    params = json.loads(params_file(a).read_text())
    assert params["program"] == "swift_rewards" and params["names"] == ["letter_reward", "exact_match"]
    assert params["spec"][0]["copy"] == "reward_files/0_letter_reward.py"
    assert (a.parent / "reward_files" / "0_letter_reward.py").is_file()
    assert (a.parent / "aworld_engines" / "rewards" / "calling.py").is_file()
    assert (a.parent / "aworld_engines" / "plugins" / "swift_rewards.py").is_file()


KNOWN = {
    "learning_rate": None,
    "lr_scheduler_type": "cosine",
    "num_generations": 8,
    "per_device_train_batch_size": 1,
    "output_dir": None,
    "num_train_epochs": 3.0,
    "warmup_ratio": 0.0,
    "max_steps": -1,
}


def test_a_misspelled_setting_gets_did_you_mean_among_ms_swift_names_and_ours():
    with pytest.raises(
        CheckError, match="unknown setting 'lr_sheduler_type' in the config \\(did you mean \"lr_scheduler_type\"\\?\\)"
    ):
        A.split_config({"lr_sheduler_type": "constant"}, KNOWN)
    with pytest.raises(CheckError, match='did you mean "prompts_per_step"'):
        A.split_config({"prompt_per_step": 2}, KNOWN)


def test_engine_owned_keys_and_double_settings_are_refused():
    with pytest.raises(CheckError, match="`output_dir` in x.yaml is set by the engine"):
        A.split_config({"output_dir": "/tmp/o"}, KNOWN, "x.yaml")
    with pytest.raises(CheckError, match="`prompts_per_step` and `per_device_train_batch_size`"):
        A.split_config({"prompts_per_step": 2, "per_device_train_batch_size": 8}, KNOWN)
    with pytest.raises(CheckError, match="`mode` = 'ppo' is not one of grpo, sft"):
        A.split_config({"mode": "ppo"}, KNOWN)


def test_multi_process_variables_are_checked():
    ok = A.split_config({"env": {"NPROC_PER_NODE": 2, "CUDA_VISIBLE_DEVICES": "0,1"}}, KNOWN)
    assert ok.ours["env"] == {"NPROC_PER_NODE": 2, "CUDA_VISIBLE_DEVICES": "0,1"}
    for env, message in (
        ({"NPROC_PER_NOD": 2}, 'did you mean "NPROC_PER_NODE"'),
        ({"NNODES": 2}, "needs `env.MASTER_ADDR`"),
        ({"NNODES": 2, "MASTER_ADDR": "10.0.0.1", "NODE_RANK": 2}, "must be below NNODES"),
        ({"NPROC_PER_NODE": "two"}, "must be an integer"),
        ({"NPROC_PER_NODE": 4, "CUDA_VISIBLE_DEVICES": "0,1"}, "more than the 2 device"),
    ):
        with pytest.raises(CheckError, match=message):
            A.split_config({"env": env}, KNOWN)


def test_ms_swift_errors_are_blamed_on_the_key_the_user_wrote():
    err = "argument --warmup_ratio/--warmup-ratio: invalid float value: 'lots'"
    assert A.blame(err, ["model", "warmup_ratio", "max_steps"], ["warmup_ratio"]) == "warmup_ratio"
    err = "ValueError: generation_batch_size (3) must be evenly divisible by num_generations (2)."
    assert A.blame(err, ["num_generations", "per_device_train_batch_size"], ["num_generations"]) == "num_generations"
    split = A.SplitConfig(ours={}, swift={}, raw={"prompts_per_step": 3})
    assert split.key_for("per_device_train_batch_size") == "prompts_per_step"
    assert (
        A.choices_hint("invalid choice: 'fulll' (choose from ['adalora', 'full', 'lora'])", "fulll")
        == ' (did you mean "full"?)'
    )
    assert A.to_cli("callbacks", ["a", "b"]) == ["--callbacks", "a", "b"]
    assert A.to_cli("add_version", False) == ["--add_version", "false"]
    assert A.to_cli("vllm_engine_kwargs", {"x": 1}) == ["--vllm_engine_kwargs", '{"x": 1}']


def test_a_folders_digest_covers_its_subfolders(tmp_path):
    """The swift environment's answers are cached by these digests: a change in the snapshot's rewards/
    package must not hit a cached answer of the old code."""
    from engines.swift.session import file_digest

    (tmp_path / "rewards").mkdir()
    (tmp_path / "rewards" / "calling.py").write_text("A = 1\n")
    before = file_digest(tmp_path)
    (tmp_path / "rewards" / "calling.py").write_text("A = 2\n")
    assert file_digest(tmp_path) != before


@pytest.mark.parametrize(
    "spec",
    [
        "verl.utils.reward_score.gsm8k:compute_score",
        ["exact_match", {"ref": "verl.utils.reward_score:default_compute_score", "weight": 0.5}],
    ],
)
def test_verls_scorers_are_refused_on_swift_naming_the_reward_and_what_to_do(tmp_path, spec):
    from engines.swift import SwiftProcessor

    p = SwiftProcessor(str(tmp_path / "runs"))
    with pytest.raises(CheckError) as err:  # before anything runs in ms-swift's environment
        p.check_reward(spec)
    text = str(err.value)
    assert "cannot run on the swift engine: it needs verl" in text and "transformers<5.11" in text
    assert (
        "'verl.utils.reward_score.gsm8k:compute_score'"
        if isinstance(spec, str)
        else "'verl.utils.reward_score:default_compute_score'"
    ) in text
    assert "trl or verl engine" in text and "math_match" in text
    from engines.rewards.builtins import math_match

    assert math_match("3 + 4 = 7\n#### 7", "7") == 1.0  # the counterpart named scores verl's gsm8k format


def test_recorded_completions_become_whole_groups_with_ms_swifts_advantages():
    record = json.loads(COMPLETIONS)  # one prompt's 4 completions (num_generations 4)
    samples = samples_from_completions(record, [("letter_reward", 1.0)], 2, None, group_size=4)
    assert [s["group"] for s in samples] == [0, 0, 0, 0] and {s["group_size"] for s in samples} == {4}
    assert [s["advantage"] for s in samples] == pytest.approx([0.8653, 0.8653, -0.8653, -0.8653], abs=1e-4)
    assert samples[0]["step_groups"] == {
        "groups": 1,
        "zero_spread": 0,
        "group_size": 4,
        "rewards": [0.2, 0.2, 0.0, 0.0],
    }
    assert "step_groups" not in samples[1]
    assert samples_from_completions(record, [("letter_reward", 1.0)], 2, None, group_size=8) == []  # no whole group

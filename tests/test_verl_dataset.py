"""Every dataset format the API accepts → verl's RL parquet, read back by verl's own dataset class."""

import json
from pathlib import Path

import pandas as pd
import pytest

from engines.results.check_result import CheckError
from engines.verl import VerlProcessor
from engines.verl.dataset import read_rows

ROOT = Path(__file__).resolve().parent.parent
LETTERS_AGENT = ROOT / "assets/agents/letters_agent.yaml"
MODEL = ROOT / "assets/models/tiny-letters"
CALC_AGENT = {
    "name": "calc-agent",
    "model": str(MODEL),
    "system_prompt": "You are a calculator. Use the add tool.",
    "max_tokens": 48,
    "max_steps": 3,
    "tools": [f"{ROOT}/assets/tools/calculator.py:add"],
}
SYSTEM = "Reply with one capital letter."
ROWS = [{"prompt": f"Say the letter {c}:", "answer": c, "difficulty": i % 3} for i, c in enumerate("ABCDEFGH")]


def write_format(kind: str, folder: Path):
    """The ROWS in one accepted input form; returns what to pass to check_dataset."""
    df = pd.DataFrame(ROWS)
    if kind == "csv":
        df.to_csv(folder / "letters.csv", index=False)
        return str(folder / "letters.csv")
    if kind == "tsv":
        df.to_csv(folder / "letters.tsv", index=False, sep="\t")
        return str(folder / "letters.tsv")
    if kind == "jsonl":
        df.to_json(folder / "letters.jsonl", orient="records", lines=True)
        return str(folder / "letters.jsonl")
    if kind == "json":
        (folder / "letters.json").write_text(json.dumps(ROWS))
        return str(folder / "letters.json")
    if kind == "parquet":
        df.to_parquet(folder / "letters.parquet")
        return str(folder / "letters.parquet")
    import datasets

    ds = datasets.Dataset.from_list(ROWS)
    if kind == "save_to_disk":
        ds.save_to_disk(str(folder / "letters"))
        return str(folder / "letters")
    if kind == "dataset":
        return ds
    if kind == "datasetdict":
        return datasets.DatasetDict({"train": ds})
    if kind == "list":
        return list(ROWS)
    if kind == "messages":
        rows = [
            {
                "messages": [{"role": "user", "content": r["prompt"]}],
                "answer": r["answer"],
                "difficulty": r["difficulty"],
            }
            for r in ROWS
        ]
        pd.DataFrame(rows).to_json(folder / "letters_chat.jsonl", orient="records", lines=True)
        return str(folder / "letters_chat.jsonl")
    raise AssertionError(kind)


def checked(tmp_path, agent=LETTERS_AGENT, train=None, test=None) -> VerlProcessor:
    p = VerlProcessor(str(tmp_path / "runs"))
    p.check_agent(agent if isinstance(agent, dict) else str(agent))
    p.check_dataset(train, test)
    return p


@pytest.mark.parametrize(
    "kind", ["csv", "tsv", "jsonl", "json", "parquet", "save_to_disk", "dataset", "datasetdict", "list", "messages"]
)
def test_every_input_format_round_trips_to_verl_rows(tmp_path, kind):
    src = write_format(kind, tmp_path)
    p = checked(tmp_path, train=src)
    out = p.run.path / "verl" / "train.parquet"
    assert p.parquets["train"] == out and out.is_file()
    rows = read_rows(out)
    assert len(rows) == len(ROWS)
    for i, (row, want) in enumerate(zip(rows, ROWS)):
        assert row["prompt"] == [{"role": "system", "content": SYSTEM}, {"role": "user", "content": want["prompt"]}]
        assert row["reward_model"] == {"style": "rule", "ground_truth": want["answer"]}
        assert row["extra_info"]["index"] == i and row["extra_info"]["split"] == "train"
        assert row["extra_info"]["difficulty"] == want["difficulty"]  # other columns reach the reward
        assert row["ability"] == "aworld" and isinstance(row["data_source"], str) and row["data_source"]
        assert "agent_name" not in row  # no tools: verl's default single-turn loop
    if kind in ("csv", "jsonl", "parquet"):
        assert rows[0]["data_source"] == "letters"


def test_test_set_is_converted_and_missing_test_falls_back_to_train_with_a_warning(tmp_path):
    train = write_format("jsonl", tmp_path)
    (tmp_path / "t").mkdir()
    test = write_format("csv", tmp_path / "t")
    p = checked(tmp_path, train=train, test=test)
    assert read_rows(p.parquets["test"])[0]["extra_info"]["split"] == "test"

    p2 = checked(tmp_path, train=train)
    assert "test" not in p2.parquets
    result = next(r for r in p2.check_results if r.module == "dataset")
    assert result.status == "warning" and any("falls back to the training set" in w for w in result.warnings)
    assert "validation uses the training set" in result.details["verl_test"]


def test_tool_agent_rows_name_the_tool_agent_loop(tmp_path):
    rows = [{"question": "What is 3 + 4?", "answer": "7"}, {"question": "What is 2 + 2?", "answer": "4"}]
    pd.DataFrame(rows).to_json(tmp_path / "calc.jsonl", orient="records", lines=True)
    p = checked(tmp_path, agent=CALC_AGENT, train=str(tmp_path / "calc.jsonl"))
    out = read_rows(p.parquets["train"])
    assert [r["agent_name"] for r in out] == ["tool_agent", "tool_agent"]
    assert out[0]["prompt"][0] == {"role": "system", "content": "You are a calculator. Use the add tool."}


def test_empty_prompts_are_dropped_and_keep_their_row_index(tmp_path):
    rows = [
        {"prompt": "Say the letter A:", "answer": "A"},
        {"prompt": "  ", "answer": "B"},
        {"prompt": "Say the letter C:", "answer": "C"},
    ]
    pd.DataFrame(rows).to_json(tmp_path / "gaps.jsonl", orient="records", lines=True)
    p = checked(tmp_path, train=str(tmp_path / "gaps.jsonl"))
    out = read_rows(p.parquets["train"])
    assert [r["extra_info"]["index"] for r in out] == [0, 2]


def test_verl_native_parquet_is_taken_as_is(tmp_path):
    native = [
        {
            "data_source": "openai/gsm8k",
            "ability": "math",
            "agent_name": "tool_agent",
            "prompt": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": f"Say {c}"}],
            "reward_model": {"style": "rule", "ground_truth": c},
            "extra_info": {"index": i, "split": "train"},
        }
        for i, c in enumerate("ABCD")
    ]
    src = tmp_path / "native.parquet"
    pd.DataFrame(native).to_parquet(src)
    p = checked(tmp_path, train=str(src))
    assert p.native_data
    assert p.parquets["train"].read_bytes() == src.read_bytes()


def test_a_dataset_without_prompts_is_a_check_error(tmp_path):
    pd.DataFrame([{"text_x": "a", "answer": "A"}]).to_json(tmp_path / "bad.jsonl", orient="records", lines=True)
    with pytest.raises(CheckError, match="no prompt column"):
        checked(tmp_path, train=str(tmp_path / "bad.jsonl"))


def test_verls_own_dataset_class_reads_the_parquet(tmp_path):
    """verl's create_rl_dataset (RLHFDataset) with the run's composed data config and the model's tokenizer."""
    from omegaconf import OmegaConf, open_dict
    from transformers import AutoTokenizer
    from verl.trainer.ppo.utils import create_rl_dataset

    src = write_format("csv", tmp_path)
    p = checked(tmp_path, train=src)
    p.check_reward("exact_match")
    p.check_config({"batch_size": 4})
    data_cfg = OmegaConf.load(p.config_path).data
    with open_dict(data_cfg):  # also run verl's own prompt-length filter (chat template + tokenizer)
        data_cfg.filter_overlong_prompts = True
        data_cfg.filter_overlong_prompts_workers = 1
        data_cfg.dataloader_num_workers = 0
    tok = AutoTokenizer.from_pretrained(str(MODEL))
    ds = create_rl_dataset(data_cfg.train_files, data_cfg, tok, None, is_train=True)
    assert len(ds) == len(ROWS)
    item = ds[2]
    assert item["raw_prompt"][1]["content"] == "Say the letter C:"
    assert item["reward_model"]["ground_truth"] == "C" and item["index"] == 2
    assert item["data_source"] == "letters"
    val = create_rl_dataset(data_cfg.val_files, data_cfg, tok, None, is_train=False)
    assert len(val) == len(ROWS)  # no test set: validation reads the training parquet

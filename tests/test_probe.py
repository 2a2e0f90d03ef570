"""The probe (issue 44, engines/probe/): the shipped demo's random-init model sampled through the trl engine's
rollout, scored with real rewards (the demo's letter reward from its file, the built-in length_penalty), its report
recomputed from the samples it stores, reused without sampling, the difficulty filter's rows, the provenance a run
records, the CLI's summary and its refusal of a bad argument."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from engines import AgentTrainer
from engines.probe import run as probe_run
from engines.probe.filtering import filter_rows
from engines.results.check_result import CheckError
from testing import letters_demo as d

ROOT = Path(__file__).resolve().parent.parent
CONFIG = str(ROOT / "assets/configs/letters_grpo.yaml")
PROMPTS, SAMPLES = 12, 6


def _trainer(runs: Path, reward, train: str = d.TRAIN, config=CONFIG) -> AgentTrainer:
    return AgentTrainer(
        agent=d.AGENT,
        train_dataset=train,
        reward_func=reward,
        config=config,
        run_path=str(runs),
        train_engine_name="trl",
    )


@pytest.fixture(scope="module")
def letters(tmp_path_factory):
    """The demo with a reward mix: the letter reward (depends on the completion) and length_penalty (0 for any
    completion of the demo's 2 tokens), probed once."""
    runs = tmp_path_factory.mktemp("probe") / "runs"
    trainer = _trainer(runs, [d.REWARD, "length_penalty"])
    return trainer, trainer.probe(prompts=PROMPTS, samples=SAMPLES, seed=3), runs


def test_pass_rates_and_terms_match_a_recomputation_from_the_stored_samples(letters):
    letter_reward = _demo_letter_reward()
    _, result, _ = letters
    report = json.loads(Path(result.path).read_text(encoding="utf-8"))
    rows = [json.loads(line) for line in Path(d.TRAIN).read_text(encoding="utf-8").splitlines()]
    by_row = defaultdict(list)
    for s in report["sample_rows"]:
        # the stored reward is the letter reward of the stored completion, as the demo's file computes it
        assert s["rewards"]["letter_reward"] == letter_reward(s["completion"], rows[s["row"]]["answer"])
        assert s["rewards"]["length_penalty"] == 0.0
        by_row[s["row"]].append(s["reward"])
    assert len(by_row) == PROMPTS and all(len(v) == SAMPLES for v in by_row.values())
    assert sorted(by_row) == report["rows"]
    for p in report["prompts"]:
        rewards = by_row[p["row"]]
        assert p["pass_rate"] == pytest.approx(sum(r >= 1.0 for r in rewards) / SAMPLES)
        assert p["mean"] == pytest.approx(sum(rewards) / SAMPLES)
        assert p["all_equal"] == (len(set(rewards)) == 1)
    zs = report["zero_spread"]
    assert zs["observed"] == pytest.approx(sum(len(set(v)) == 1 for v in by_row.values()) / PROMPTS)
    assert zs["group_size"] == SAMPLES and set(zs["estimated"]) == {"12", "16", "24"}  # 2k, 4k, the config's 16
    assert report["terms"]["length_penalty"]["constant"] and not report["terms"]["letter_reward"]["constant"]
    codes = {v["code"]: v for v in report["verdicts"]}
    assert codes["reward_term_constant"]["evidence"]["term"] == "length_penalty"
    # every completion is cut at the demo's 2 tokens, but a 2-token limit is a short-answer task by design
    assert report["lengths"]["truncated_share"] == 1.0 and "completions_truncated" not in codes
    assert report["settings"]["engine"] == "trl" and "trl engine" in report["settings"]["generation"]
    fc = {i["what"]: i for i in report["forecast"]["items"]}
    assert fc["generation rate (tokens/s)"]["basis"] == "measured" and fc["one step"]["basis"] == "extrapolated"
    assert report["forecast"]["run_seconds"] > report["forecast"]["first_evaluation_seconds"] > 0
    json.dumps(result.to_dict())  # serialisable as it is


def _demo_letter_reward():
    """The demo's reward function, read from its file."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("demo_letter_reward", d.REWARD.rpartition(":")[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.letter_reward


def test_the_stored_report_is_read_back_without_sampling(letters, monkeypatch):
    trainer, first, runs = letters
    path = Path(first.path)
    mtime = path.stat().st_mtime_ns

    def no_sampling(*a, **k):
        raise AssertionError("sampled again")

    monkeypatch.setattr(probe_run, "run_isolated", no_sampling)
    again = trainer.probe(prompts=PROMPTS, samples=SAMPLES, seed=3)
    assert again.reused and again.key == first.key and path.stat().st_mtime_ns == mtime
    assert again.report["prompts"] == first.report["prompts"]
    assert path.parent == runs / ".probes"
    with pytest.raises(AssertionError, match="sampled again"):  # another seed is another probe
        trainer.probe(prompts=PROMPTS, samples=SAMPLES, seed=4)


def test_a_constant_reward_has_every_group_without_spread(tmp_path):
    result = _trainer(tmp_path / "runs", "length_penalty").probe(prompts=4, samples=4)
    assert result["zero_spread"]["observed"] == 1.0
    assert all(v == 1.0 for v in result["zero_spread"]["estimated"].values())
    verdict = result.verdicts[0]
    assert verdict["code"] == "reward_constant" and verdict["setting"] == "reward"
    assert "num_generations" in verdict["message"] and "reward" in verdict["advice"]
    assert "reward_constant" in result.summary()


def test_filtering_writes_exactly_the_rows_in_the_band_and_a_run_records_where_they_came_from(letters, tmp_path):
    _, result, runs = letters
    rows = Path(d.TRAIN).read_text(encoding="utf-8").splitlines()
    rates = result.pass_rates()
    out = tmp_path / "filtered.jsonl"
    band = (0.0, 0.5)
    expect = [json.loads(rows[i]) for i in sorted(rates) if 0.0 < rates[i] < 0.5]
    if not expect:  # this seed's samples put no prompt inside the band: the filter says so
        with pytest.raises(CheckError, match="no training row"):
            result.write_filtered(out, band)
        band = (0.0, 1.0)
        expect = [json.loads(rows[i]) for i in sorted(rates) if rates[i] < 1.0]
    summary = result.write_filtered(out, band)
    written = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert written == expect
    assert summary["kept"] == len(expect) and summary["rows"] == len(rows)
    assert summary["dropped"]["not probed"] == len(rows) - PROMPTS  # 12 of the 24 rows probed
    assert sum(summary["dropped"].values()) + summary["kept"] == len(rows)
    chosen = filter_rows(result.report, len(rows), band)
    assert [json.loads(rows[i]) for i in chosen["kept"]] == written
    side = json.loads(Path(f"{out}.provenance.json").read_text(encoding="utf-8"))
    assert side["source"] == d.TRAIN and side["probe"] == result.key and side["band"] == list(band)
    # a run trained on the filtered file records where it came from in its run.yaml
    import yaml

    trainer = _trainer(tmp_path / "runs2", d.REWARD, train=str(out), config={"prompts_per_step": 1, "max_steps": 2})
    spec = yaml.safe_load(trainer.train_processor.write_run_spec().read_text(encoding="utf-8"))
    assert spec["data"]["provenance"]["probe"] == result.key and spec["data"]["provenance"]["band"] == list(band)
    assert spec["data"].get("test") is None  # the test set is never filtered (none given here)


def test_bad_arguments_are_refused_with_what_to_do(letters):
    trainer, result, _ = letters
    with pytest.raises(CheckError, match=r"prompts must be a whole number from 1"):
        trainer.probe(prompts=0)
    with pytest.raises(CheckError, match=r"samples must be a whole number"):
        trainer.probe(samples=-2)
    with pytest.raises(CheckError, match=r"LOW < HIGH"):
        result.write_filtered("/tmp/never-written.jsonl", "0.9,0.1")
    with pytest.raises(CheckError, match=r"JSON lines"):
        result.write_filtered("/tmp/never-written.csv")


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "engines", "probe", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )


def test_the_cli_prints_a_readable_summary_and_refuses_a_bad_band(tmp_path):
    common = ["--engine", "trl", "--agent", d.AGENT, "--train", d.TRAIN, "--config", CONFIG]
    done = _cli(*common, "--reward", "length_penalty", "--prompts", "3", "--samples", "2", "--runs-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "zero-spread groups: 100 % at 2" in done.stdout and "reward_constant:" in done.stdout
    assert "3 prompts × 2 samples" in done.stdout and list((tmp_path / ".probes").glob("*.json"))
    bad = _cli(*common, "--reward", "length_penalty", "--band", "1,0", "--runs-dir", str(tmp_path))
    assert bad.returncode == 2 and "band 1.0,0.0 is not a range of pass rates" in bad.stderr
    assert "LOW < HIGH" in bad.stderr and "Traceback" not in bad.stderr

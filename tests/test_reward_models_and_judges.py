"""Reward models and LLM judges as rewards: a tiny sequence-classification model built here scores
completions in a real `trl` run; a judge served on 127.0.0.1 (OpenAI chat API) scores a real run and logs
its cost; a judge that times out or replies garbage is a clear check error, or a classified run failure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from engines import AgentTrainer, CheckError, load_reward
from engines.trl import TrlProcessor
from testing.openai_server import ChatServer
from testing.reward_model import build_reward_model

ROOT = Path(__file__).resolve().parent.parent
MODEL = str(ROOT / "assets/models/tiny-calc")
AGENT = {"name": "calc", "model": MODEL, "system_prompt": "Add.", "max_tokens": 6}
FAST = {
    "max_steps": 2,
    "prompts_per_step": 2,
    "num_generations": 4,
    "save_steps": 100,
    "eval_steps": 0,
    "eval_samples": 2,
}
KEY_ENV = "AWORLD_TEST_JUDGE_KEY"
KEY = "sk-test-0123456789abcdef"
TEMPLATE = "Question: {prompt}\nReference: {answer}\nReply: {completion}\nScore from 0 to 10:"


@pytest.fixture
def data(tmp_path) -> str:
    rows = [{"prompt": f"What is {a} + {b}?", "answer": str(a + b)} for a, b in [(3, 4), (2, 5), (1, 6), (0, 7)]]
    path = tmp_path / "sums.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.fixture(scope="module")
def reward_model(tmp_path_factory) -> str:
    return build_reward_model(tmp_path_factory.mktemp("rm") / "tiny-rm", good="7")


def reward_result(p):
    return next(r for r in p.check_results if r.module == "reward")


def judge_spec(url: str, **extra) -> dict:
    return {
        "judge": {"url": url, "model": "tiny-judge", "prompt": TEMPLATE, "api_key_env": KEY_ENV, "scale": 10, **extra}
    }


# -- reward models ---------------------------------------------------------------------------------------
def test_a_reward_model_dry_runs_in_the_check(tmp_path, data, reward_model):
    p = TrlProcessor(str(tmp_path / "runs"))
    p.check_agent(AGENT)
    p.check_dataset(data)
    p.check_reward({"reward_model": reward_model, "kwargs": {"batch_size": 2}})
    result = reward_result(p)
    assert result.status == "ok", result.warnings
    rows = result.details["dry_run"]
    assert [r["reference"]["completion"] for r in rows] == ["7", "7", "7"]
    assert all(r["reference"]["total"] > 0 > r["wrong"]["total"] for r in rows)
    (name,) = p.reward.names
    assert name == "rm_tiny_rm"
    assert "chat template" in result.details["calls"][name]["args"]["texts"]
    spec = p.spec["reward"]
    assert spec == [
        {
            "reward_model": {
                "path": reward_model,
                "batch_size": 2,
                "max_length": 1024,
                "device": "auto",
                "name": "rm_tiny_rm",
            },
            "weight": 1.0,
        }
    ]
    assert load_reward(spec).to_spec() == spec


def test_reward_model_batches_give_the_same_scores(reward_model):
    prompts = [[{"role": "user", "content": f"What is {i} + 3?"}] for i in range(5)]  # no 7 in the prompt
    completions = ["7", "8", "it is 7", "no", "77"]
    one = load_reward({"reward_model": {"path": reward_model, "batch_size": 1}})
    many = load_reward({"reward_model": {"path": reward_model, "batch_size": 4}})
    (f1,), (f4,) = one.trl_functions(None), many.trl_functions(None)
    chat = [[{"role": "assistant", "content": c}] for c in completions]
    a, b = f1(prompts=prompts, completions=chat), f4(prompts=prompts, completions=chat)
    assert a == pytest.approx(b, abs=1e-4)
    assert [v > 0 for v in a] == [True, False, True, False, True]


@pytest.mark.parametrize(
    "spec, what",
    [
        ({"reward_model": "/no/such/model"}, "is neither a model folder nor a model in the local Hugging Face cache"),
        ({"reward_model": MODEL}, "is a Qwen2ForCausalLM, not a sequence-classification model"),
        ({"reward_model": {"path": MODEL, "batchsize": 2}}, "unknown reward_model option 'batchsize' (did you mean"),
    ],
)
def test_bad_reward_models_are_clear(spec, what):
    with pytest.raises(CheckError) as err:
        load_reward(spec)
    assert what in str(err.value)


def test_a_reward_model_scores_completions_in_a_real_training_run(tmp_path, data, reward_model):
    trainer = AgentTrainer(
        AGENT,
        data,
        None,
        [{"reward_model": reward_model, "kwargs": {"batch_size": 3}}],
        dict(FAST),
        run_path=str(tmp_path / "runs"),
        train_engine_name="trl",
    )
    assert trainer.train() == "finished"
    run = trainer.train_processor.run
    rows = [r for r in run.read_jsonl("metrics.jsonl") if "loss" in r]
    assert [r["step"] for r in rows] == [1, 2]
    assert all("rewards/rm_tiny_rm/mean" in r for r in rows)
    samples = run.read_jsonl("samples.jsonl")
    # the values the run recorded are the reward model's on those very completions
    rescored = load_reward({"reward_model": reward_model})
    for s in samples:
        assert s["rewards"]["rm_tiny_rm"] == pytest.approx(
            rescored.score(s["completion"], s["answer"], s["prompt"])[0], abs=1e-3
        )


# -- judges ----------------------------------------------------------------------------------------------
def test_a_judge_dry_runs_in_the_check_with_the_key_masked(tmp_path, data, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    with ChatServer(key=KEY) as server:
        p = TrlProcessor(str(tmp_path / "runs"))
        p.check_agent(AGENT)
        p.check_dataset(data)
        p.check_reward(judge_spec(server.url, concurrency=3))
    result = reward_result(p)
    assert result.status == "ok", (result.message, result.warnings)
    rows = result.details["dry_run"]
    assert all(r["reference"]["total"] == 1.0 and r["wrong"]["total"] == 0.0 for r in rows)
    assert len(server.requests) == 6 and server.requests[0]["model"] == "tiny-judge"
    sent = sorted(r["messages"][-1]["content"] for r in server.requests)  # concurrent: any order
    assert "Question: What is 3 + 4?\nReference: 7\nReply: 7\nScore from 0 to 10:" in sent
    assert "Question: What is 3 + 4?\nReference: 7\nReply: a wrong answer\nScore from 0 to 10:" in sent
    assert {h["authorization"] for h in server.headers} == {f"Bearer {KEY}"}
    calls = result.details["calls"]["judge"]
    assert calls["args"]["api_key"] == f"${KEY_ENV} (set, ***)"
    assert set(calls["logged"]) == {
        "log_metric judge/judge/calls",
        "log_metric judge/judge/latency_mean_s",
        "log_metric judge/judge/latency_max_s",
        "log_metric judge/judge/seconds",
    }
    everything = json.dumps([r.to_dict() for r in p.check_results], default=str) + json.dumps(p.spec, default=str)
    assert KEY not in everything
    assert p.spec["reward"][0]["judge"]["api_key_env"] == KEY_ENV


def test_a_judge_scores_a_real_run_and_logs_its_cost(tmp_path, data, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    with ChatServer(key=KEY) as server:
        trainer = AgentTrainer(
            AGENT,
            data,
            None,
            [judge_spec(server.url, concurrency=4)],
            dict(FAST),
            run_path=str(tmp_path / "runs"),
            train_engine_name="trl",
        )
        assert trainer.train() == "finished"
    run = trainer.train_processor.run
    rows = [r for r in run.read_jsonl("metrics.jsonl") if "loss" in r]
    assert [r["step"] for r in rows] == [1, 2]
    for r in rows:
        assert r["judge/judge/calls"] == 8.0  # 2 prompts × 4 generations
        assert 0 < r["judge/judge/latency_mean_s"] <= r["judge/judge/latency_max_s"]
        assert r["rewards/judge/mean"] in (0.0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0)
    assert len(server.requests) >= 6 + 16  # the check's dry run, then 8 per step
    run_text = "".join(
        f.read_text(errors="ignore")
        for f in run.path.rglob("*")
        if f.is_file() and f.suffix in (".yaml", ".json", ".jsonl", ".log")
    )
    assert KEY not in run_text
    assert yaml.safe_load(run.file("run.yaml").read_text())["reward"][0]["judge"]["api_key_env"] == KEY_ENV


@pytest.mark.parametrize(
    "mode, extra, what",
    [
        ("garbage", {}, "judge reply 'I would rather not say.' has no score"),
        ("slow", {"timeout": 0.5, "retries": 0}, "judge tiny-judge at http://127.0.0.1"),
        ("status", {"retries": 0}, "answered HTTP 500"),
    ],
)
def test_a_failing_judge_is_a_clear_check_error(tmp_path, data, monkeypatch, mode, extra, what):
    monkeypatch.setenv(KEY_ENV, KEY)
    with ChatServer(mode=mode, key=KEY, delay=3.0) as server:
        p = TrlProcessor(str(tmp_path / "runs"))
        p.check_agent(AGENT)
        p.check_dataset(data)
        with pytest.raises(CheckError) as err:
            p.check_reward(judge_spec(server.url, **extra))
    text = str(err.value)
    assert what in text and "check the judge's url" in text
    if mode == "slow":
        assert "timed out (0.5 s per request, 1 tries)" in text
    assert KEY not in text


@pytest.mark.parametrize(
    "mode, what", [("garbage", "has no score"), ("slow", "timed out (0.5 s per request, 1 tries)")]
)
def test_a_judge_failing_during_a_run_is_a_classified_failure(tmp_path, data, monkeypatch, mode, what):
    monkeypatch.setenv(KEY_ENV, KEY)
    with ChatServer(key=KEY, delay=3.0) as server:
        trainer = AgentTrainer(
            AGENT,
            data,
            None,
            [judge_spec(server.url, timeout=0.5, retries=0)],
            dict(FAST),
            run_path=str(tmp_path / "runs"),
            train_engine_name="trl",
        )
        server.mode = mode  # fine at check time, broken once training runs
        with pytest.raises(Exception):  # noqa: B017
            trainer.train()
    run = trainer.train_processor.run
    status = run.read_status()
    assert status["state"] == "failed" and status["cause"] == "reward error"
    assert what in status["error"] and KEY not in status["error"]
    failed = [e for e in run.read_jsonl("events.jsonl") if e["event"] == "failed"]
    assert failed and failed[-1]["cause"] == "reward error"


def test_a_reward_model_and_a_judge_score_through_the_verl_bridge(tmp_path, data, reward_model, monkeypatch):
    import subprocess
    import sys

    from engines.verl import VerlProcessor

    monkeypatch.setenv(KEY_ENV, KEY)
    with ChatServer(key=KEY) as server:
        p = VerlProcessor(str(tmp_path / "runs"))
        p.check_agent(AGENT)
        p.check_dataset(data)
        p.check_reward([{"reward_model": reward_model}, judge_spec(server.url)])
        p.check_config({"batch_size": 4})
        bridge = p.run.path / "verl" / "reward_bridge.py"
        code = (
            "import json, sys\n"
            "sys.modules['engines'] = sys.modules['aworld_gui'] = None\n"
            "from verl.utils.import_utils import load_extern_object\n"
            f"fn = load_extern_object({str(bridge)!r}, 'compute_score')\n"
            "print(json.dumps([fn(data_source='sums', solution_str=c, ground_truth='7', extra_info={'index': 0})"
            " for c in ('7', '8')]))\n"
        )
        res = subprocess.run(
            [sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=300, cwd=str(tmp_path)
        )
    assert res.returncode == 0, res.stderr[-3000:]
    right, wrong = json.loads(res.stdout.strip().splitlines()[-1])
    assert right["reward_rm_tiny_rm"] > 0 > wrong["reward_rm_tiny_rm"]
    assert right["reward_judge"] == 1.0 and wrong["reward_judge"] == 0.0
    assert KEY not in bridge.read_text()


@pytest.mark.parametrize(
    "judge, what",
    [
        (
            {"url": "http://x/v1", "model": "m", "prompt": "{completion}", "api_key": "sk-1"},
            "api_key is given in the spec",
        ),
        ({"url": "http://x/v1", "model": "m", "prompt": "{completion} {question}"}, "unknown placeholder {question}"),
        ({"url": "http://x/v1", "model": "m", "prompt": "Rate it"}, "never shows the completion"),
        (
            {"url": "http://x/v1", "model": "m", "prompt": "{completion}", "api_key_env": "AWORLD_NO_SUCH_KEY_VAR"},
            "key variable AWORLD_NO_SUCH_KEY_VAR is not set",
        ),
        ({"url": "http://x/v1", "prompt": "{completion}"}, "the judge needs `model`"),
        (
            {"url": "http://x/v1", "model": "m", "prompt": "{completion}", "timeuot": 3},
            "unknown judge option 'timeuot'",
        ),
    ],
)
def test_bad_judge_specs_are_clear(judge, what):
    with pytest.raises(CheckError) as err:
        load_reward({"judge": judge})
    assert what in str(err.value)
    assert "sk-1" not in str(err.value)


def test_a_reward_model_from_the_local_hub_cache_by_its_id(tmp_path, reward_model):
    """A hub id already in the local cache (the layout huggingface_hub writes) loads without a network."""
    import os
    import shutil
    import subprocess
    import sys

    snapshot = tmp_path / "hub" / "models--acme--tiny-rm" / "snapshots" / "0123abcd"
    shutil.copytree(reward_model, snapshot)
    (tmp_path / "hub" / "models--acme--tiny-rm" / "refs").mkdir()
    (tmp_path / "hub" / "models--acme--tiny-rm" / "refs" / "main").write_text("0123abcd")
    code = (
        "from engines import load_reward\n"
        "r = load_reward({'reward_model': 'acme/tiny-rm'})\n"
        "p = [{'role': 'user', 'content': 'What is 3 + 4?'}]\n"
        "print(r.names[0], r.score('7', '7', p)[0] > 0 > r.score('8', '7', p)[0])\n"
    )
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"}
    res = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300, cwd=str(ROOT)
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip().splitlines()[-1] == "rm_tiny_rm True"


def test_a_judge_key_variable_a_studio_does_not_invite_points_at_the_invitation(monkeypatch):
    """The fourth probe: in a studio that invites no variable, a judge's ``api_key_env`` that the studio has was told
    "not set — export it", which it was; the fix is the operator's invitation, as for a ``${NAME}``."""
    from engines.env_values.env_invitation import INVITED_ENV

    monkeypatch.setenv(INVITED_ENV, "HF_TOKEN")  # what the studio sets for itself and its children
    monkeypatch.delenv("AWORLD_JUDGE_KEY_HELD", raising=False)  # user code's environment never has an uninvited one
    judge = {"url": "http://x/v1", "model": "m", "prompt": "{completion}", "api_key_env": "AWORLD_JUDGE_KEY_HELD"}
    with pytest.raises(CheckError) as err:
        load_reward({"judge": judge})
    text = str(err.value)
    assert "not one this studio hands to rewards (it invites HF_TOKEN)" in text, text
    assert "aworld-studio --env-allow AWORLD_JUDGE_KEY_HELD" in text and "export" not in text, text

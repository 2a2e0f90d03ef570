"""Model choice: a local folder, or a hub id resolved through the local Hugging Face cache; an id that is
not cached is a clear error, quickly, when the hub cannot be reached (never a hang). The memory
estimate shows in ``aworld-train check``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engines.results.check_result import CheckError
from engines.fit.model_source import local_models, resolve_model
from testing import free_port

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "assets/models/tiny-letters"
DEMO = [
    "--agent",
    str(ROOT / "assets/agents/letters_agent.yaml"),
    "--train",
    str(ROOT / "assets/datasets/letters_train.jsonl"),
    "--reward",
    str(ROOT / "assets/rewards/letter_reward.py") + ":letter_reward",
    "--engine",
    "trl",
]


def fake_hub_cache(base: Path, repo_id: str = "aworld/tiny-letters") -> Path:
    """The layout huggingface_hub writes: models--org--name/{refs/main, snapshots/<commit>/...}."""
    repo = base / f"models--{repo_id.replace('/', '--')}"
    commit = "0123456789abcdef0123456789abcdef01234567"
    shutil.copytree(TINY, repo / "snapshots" / commit)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    return repo / "snapshots" / commit


def cli_check(tmp_path: Path, config: dict, **env: str) -> subprocess.CompletedProcess:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(json.dumps(config))
    full_env = dict(os.environ, **env)
    return subprocess.run(
        [sys.executable, "-m", "engines", "check", *DEMO, "--config", str(cfg)],
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_local_folder_resolves_and_a_missing_one_says_where_it_looked(tmp_path):
    src = resolve_model(str(TINY))
    assert src.kind == "folder" and src.path == str(TINY)
    with pytest.raises(CheckError, match="model folder './nowhere' does not exist"):
        resolve_model("./nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckError, match="is not a model folder \\(no config.json in it\\)"):
        resolve_model(str(tmp_path / "empty"))


def test_a_hub_id_in_the_local_cache_trains_from_the_cache(tmp_path):
    snapshot = fake_hub_cache(tmp_path / "hub")
    res = cli_check(
        tmp_path,
        {"model": "aworld/tiny-letters", "max_steps": 2, "save_steps": 2},
        HF_HUB_CACHE=str(tmp_path / "hub"),
        HF_HUB_OFFLINE="1",
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "memory estimate: ≈ " in res.stdout and "GB peak per process of" in res.stdout
    # the id trains: the run loads the cached snapshot (the hub is offline), two steps
    env = dict(os.environ, HF_HUB_CACHE=str(tmp_path / "hub"), HF_HUB_OFFLINE="1")
    train = subprocess.run(
        [
            sys.executable,
            "-m",
            "engines",
            "train",
            *DEMO,
            "--config",
            str(tmp_path / "config.yaml"),
            "--run-path",
            str(tmp_path / "runs"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert train.returncode == 0, train.stdout + train.stderr
    run = Path(next(x for x in train.stderr.splitlines() if x.startswith("run directory: ")).split(": ", 1)[1])
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    assert next(e for e in events if e["event"] == "model")["path"] == str(snapshot)
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics if "loss" in m] == [1, 2]
    assert (run / "checkpoints" / "checkpoint-2" / "model.safetensors").is_file()


@pytest.mark.parametrize(
    "env", [{"HF_HUB_OFFLINE": "1"}, {"HF_ENDPOINT": "http://127.0.0.1:{port}"}], ids=["offline", "hub-unreachable"]
)
def test_an_id_that_is_not_cached_is_a_clear_error_not_a_hang(tmp_path, env):
    env = {k: v.format(port=free_port()) for k, v in env.items()}  # a closed port: the hub does not answer
    t0 = time.monotonic()
    res = cli_check(tmp_path, {"model": "Qwen/Qwen2.5-0.5B-Instruct"}, HF_HUB_CACHE=str(tmp_path / "empty-hub"), **env)
    assert res.returncode == 1
    line = next(x for x in res.stdout.splitlines() if x.startswith("config"))
    assert "model 'Qwen/Qwen2.5-0.5B-Instruct' is not in the local Hugging Face cache" in line
    assert "hf download Qwen/Qwen2.5-0.5B-Instruct" in line
    assert ("HF_HUB_OFFLINE is set" in line) if "HF_HUB_OFFLINE" in env else ("cannot be reached" in line)
    assert time.monotonic() - t0 < 240  # generous for a loaded machine; a hang would hit the subprocess timeout


def test_local_models_lists_the_assets_and_the_cache(tmp_path, monkeypatch):
    fake_hub_cache(tmp_path / "hub")
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    found = {m["name"]: m for m in local_models()}
    assert found["tiny-letters"]["source"] == "folder" and found["tiny-calc"]["path"].endswith(
        "assets/models/tiny-calc"
    )
    assert found["aworld/tiny-letters"]["source"] == "hf-cache"

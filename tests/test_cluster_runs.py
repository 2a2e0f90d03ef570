"""Any engine's run on a Ray cluster (engines/cluster/): a real Ray head started here on 127.0.0.1 (CPU), the run
submitted as a Ray job through Ray's JobSubmissionClient, trained there by the same ``run`` command, and mirrored
back through the job's log into the run directory the studio reads; Stop reaches the job at a step boundary."""

from __future__ import annotations

import threading

import pytest

from engines import AgentTrainer
from engines.cluster.mirror import TAG
from engines.cluster.ray_jobs import job_client, stop_marker_id
from engines.runs.rundir import RunDir
from testing.letters_demo import AGENT, REWARD, TEST, TRAIN
from testing.waiting import wait_for

FAST = {
    "max_steps": 4,
    "learning_rate": 1e-3,
    "prompts_per_step": 2,
    "num_generations": 4,
    "save_steps": 2,
    "eval_steps": 2,
    "eval_samples": 4,
}
LIFE = {"started", "submitted", "finished", "stopped", "failed"}


@pytest.fixture(scope="module")
def head(ray_head):
    return ray_head


def cluster_trainer(tmp_path, head, monkeypatch, storage, **config) -> AgentTrainer:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    cfg = {**FAST, "ray_address": head.address, "ray_storage": str(storage), **config}
    return AgentTrainer(AGENT, TRAIN, TEST, REWARD, cfg, run_path=str(tmp_path / "runs"), train_engine_name="trl")


def job_side(run: RunDir) -> RunDir:
    """The job's copy of the run on the cluster (this machine here), from ``ray_run_dir`` (host:path)."""
    return RunDir(run.read_status()["ray_run_dir"].split(":", 1)[1])


def test_a_trl_run_trains_as_a_ray_job_and_its_run_dir_mirrors_the_jobs(tmp_path, head, monkeypatch):
    t = cluster_trainer(tmp_path, head, monkeypatch, tmp_path / "cluster")
    assert t.train_processor.uses_local_slot is False and t.train_processor.run_spec()["machine_slot"] is False
    run = t.train_processor.run
    assert t.train() == "finished", run.log_path.read_text()[-3000:]
    status = run.read_status()
    assert status["state"] == "finished" and status["ray_job_status"] == "SUCCEEDED"
    assert status["step"] == 4 and status["total_steps"] == 4 and "last_reward" in status
    info = job_client(head.address).get_job_info(status["ray_job_id"])
    assert info.status == "SUCCEEDED" and info.metadata == {"aworld_run": run.run_id}
    assert info.entrypoint == "python3 -m engines.cluster.job_main"
    # the job trained in its own copy, kept in ray_storage with its checkpoints
    there = job_side(run)
    assert there.path.parent == tmp_path / "cluster" and there.path.name == run.run_id
    assert [p.name for p in there.checkpoints()] == ["checkpoint-2", "checkpoint-4"]
    # this machine sees the cluster's folder (the head is here): Evaluate, Chat and Export read its checkpoints
    assert not run.checkpoints_dir.exists() and run.checkpoints() == there.checkpoints()
    assert run.checkpoints_unreachable() is None
    assert status["last_checkpoint"] == str(there.path / "checkpoints/checkpoint-4")
    # every row the engine wrote there is here, as written; the run's life is this machine's
    for name in ("metrics.jsonl", "samples.jsonl"):
        assert run.read_jsonl(name) == there.read_jsonl(name) and run.read_jsonl(name)
    assert [r["step"] for r in run.read_jsonl("metrics.jsonl") if "eval/reward" in r] == [0, 2, 4]
    here = run.read_jsonl("events.jsonl")
    assert [e for e in here if e["event"] not in LIFE] == [
        e for e in there.read_jsonl("events.jsonl") if e["event"] not in LIFE
    ]
    kinds = [e["event"] for e in here]
    assert kinds[:2] == ["started", "submitted"] and kinds[-1] == "finished" and kinds.count("finished") == 1
    assert "checkpoint" in kinds and "summary" in kinds
    [submitted] = [e for e in here if e["event"] == "submitted"]
    assert REWARD.split(":")[0] in submitted["reads_on_cluster"]  # read at the same path there
    log = run.log_path.read_text()
    assert "step 4/4" in log and TAG not in log  # the job's output, without the mirror's lines


def test_a_second_job_stops_at_a_step_boundary_when_the_studio_asks(tmp_path, head, monkeypatch):
    t = cluster_trainer(tmp_path, head, monkeypatch, tmp_path / "cluster", max_steps=5000, eval_steps=0)
    run = t.train_processor.run
    outcome = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("value", t.train()), daemon=True)
    thread.start()
    wait_for(lambda: len(run.read_jsonl("metrics.jsonl")) >= 3, timeout=240, what="three steps mirrored")
    run.request_stop("user")  # what the studio's Stop button writes
    thread.join(120)
    assert outcome.get("value") == "stopped", run.log_path.read_text()[-3000:]
    status = run.read_status()
    assert status["state"] == "stopped" and status["cause"] == "user"
    # the job ended by itself after its checkpoint (Ray's stop signal was not needed)
    assert status["ray_job_status"] == "SUCCEEDED"
    client = job_client(head.address)
    assert client.get_job_info(stop_marker_id(status["ray_job_id"])).metadata == {"reason": "user"}
    there = job_side(run)
    assert there.stop_reason() == "user" and there.read_status()["state"] == "stopped"
    stopped_at = status["step"]
    assert 3 <= stopped_at < 5000 and [p.name for p in there.checkpoints()][-1] == f"checkpoint-{stopped_at}"
    kinds = [e["event"] for e in run.read_jsonl("events.jsonl")]
    assert kinds[-1] == "stopped" and "stop_requested" in kinds and kinds.count("stopped") == 1


def test_a_run_whose_files_are_not_on_the_cluster_fails_naming_them(tmp_path, head, monkeypatch):
    from engines.cluster import ray_run

    t = cluster_trainer(tmp_path, head, monkeypatch, tmp_path / "cluster")
    run = t.train_processor.run
    real = ray_run.outside_paths
    monkeypatch.setattr(ray_run, "outside_paths", lambda spec, root: [*real(spec, root), "/nowhere/model"])
    with pytest.raises(Exception, match="/nowhere/model"):
        t.train()
    status = run.read_status()
    assert status["state"] == "failed" and status["cause"] == "missing dependency"
    assert "/nowhere/model" in status["error"] and "docs/CLUSTER.md" in status["error"]


def test_a_swift_run_on_the_cluster_is_mirrored_and_stops_at_a_step_boundary(tmp_path, head, monkeypatch):
    """The same path for the swift engine: its own environment (.venv-swift, at the same path on this cluster)
    and its own watcher of ms-swift's output, inside the job; this machine sees the rows and stops it."""
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    cfg = {
        "tuner_type": "full",
        "max_steps": 1000,
        "learning_rate": 1e-3,
        "prompts_per_step": 1,
        "num_generations": 4,
        "save_steps": 1000,
        "max_completion_length": 2,
        "ray_address": head.address,
        "ray_storage": str(tmp_path / "cluster"),
    }
    t = AgentTrainer(AGENT, TRAIN, TEST, REWARD, cfg, run_path=str(tmp_path / "runs"), train_engine_name="swift")
    run = t.train_processor.run
    assert t.train_processor.run_spec()["machine_slot"] is False
    outcome = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("value", t.train()), daemon=True)
    thread.start()
    wait_for(
        lambda: len([r for r in run.read_jsonl("metrics.jsonl") if "loss" in r]) >= 2,
        timeout=300,
        what="two swift steps mirrored",
    )
    run.request_stop("user")
    thread.join(180)
    assert outcome.get("value") == "stopped", run.log_path.read_text()[-3000:]
    status = run.read_status()
    assert status["state"] == "stopped" and status["cause"] == "user" and status["ray_job_status"] == "SUCCEEDED"
    there = job_side(run)
    assert run.read_jsonl("metrics.jsonl") == there.read_jsonl("metrics.jsonl")
    assert run.read_jsonl("samples.jsonl") == there.read_jsonl("samples.jsonl") != []
    stopped_at = status["step"]
    assert [p.name for p in there.checkpoints()][-1] == f"checkpoint-{stopped_at}" and 2 <= stopped_at < 1000
    [submitted] = [e for e in run.read_jsonl("events.jsonl") if e["event"] == "submitted"]
    assert any(p.endswith("/bin/python") for p in submitted["reads_on_cluster"])  # ms-swift's interpreter


#: a sweep's tiny trial on each engine (the held-out reward scored at the end)
TINY_TRIAL = {
    "trl": {"max_steps": 2, "prompts_per_step": 2, "num_generations": 4, "eval_steps": 0, "eval_samples": 4},
    "swift": {"tuner_type": "full", "max_steps": 2, "prompts_per_step": 1, "num_generations": 4},
}


@pytest.mark.parametrize("engine", ["trl", "swift"])
def test_a_sweep_runs_its_trials_as_ray_jobs_two_at_a_time(tmp_path, head, monkeypatch, engine):
    """A sweep whose base config names a cluster: each trial is a run submitted there; parallel trials are jobs the
    cluster schedules (not one per GPU of this machine, which has none). The same for both engines; the third trial,
    started when one of the first two ends, on trl alone (when a trial starts is the sweep driver's, not the
    engine's: swift's trial costs a minute more, and two show its trials side by side as well)."""
    from engines.sweeps import AgentSweep

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    runs, trials = tmp_path / "runs", 3 if engine == "trl" else 2
    tiny = {
        **TINY_TRIAL[engine],
        "save_steps": 100,
        "samples_per_step": 0,
        "ray_address": head.address,
        "ray_storage": str(tmp_path / "cluster"),
    }
    sweep = AgentSweep(
        agent=AGENT,
        train_dataset=TRAIN,
        test_dataset=TEST,
        reward_func=REWARD,
        config=tiny,
        run_path=str(runs),
        train_engine_name=engine,
        name="on-ray",
        sweep={
            "trials": trials,  # two side by side, then (trl) the third when one ends
            "parallel": 2,
            "sampler": "random",
            "seed": 0,
            "pruner": "none",
            "objective": {"metric": "eval/reward", "direction": "maximize"},
            "params": {"learning_rate": {"low": 1e-4, "high": 1e-2, "log": True}},
        },
    )
    sweep.start()
    summary = wait_for(
        lambda: (
            (s := sweep.summary())
            and len(s.get("trials") or []) == trials
            and all(t["state"] != "running" for t in s["trials"])
            and s
        ),
        timeout=600,
        what=f"{trials} trials ended",
    )
    assert [t["state"] for t in summary["trials"]] == ["complete"] * trials, summary
    jobs = {j.submission_id: j for j in job_client(head.address).list_jobs()}
    starts = []
    for t in summary["trials"]:
        run = RunDir(runs / t["run_id"])
        status = run.read_status()
        assert status["state"] == "finished" and jobs[status["ray_job_id"]].status == "SUCCEEDED"
        evals = [r["eval/reward"] for r in run.read_jsonl("metrics.jsonl") if "eval/reward" in r]
        assert evals[-1] == t["value"]  # the objective, from the mirrored metrics
        starts.append((status["started"], status["ended"]))
    assert summary["best"]["value"] == max(t["value"] for t in summary["trials"])
    # two at a time: some trial started before another one ended
    assert any(a[0] < b[1] and b[0] < a[1] for i, a in enumerate(starts) for b in starts[i + 1 :]), starts


def test_a_swift_run_sent_by_ray_address_in_the_environment_records_it_in_run_yaml(tmp_path, monkeypatch):
    """RAY_ADDRESS is read at the check (the run process reads only run.yaml): swift's spec keeps it, and the
    config check's line says where the run trains."""
    from testing import free_port

    address = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("RAY_ADDRESS", address)
    cfg = {"tuner_type": "full", "max_steps": 2, "prompts_per_step": 1, "num_generations": 4}
    t = AgentTrainer(AGENT, TRAIN, TEST, REWARD, cfg, run_path=str(tmp_path / "runs"), train_engine_name="swift")
    p = t.train_processor
    assert p.spec["config"]["ray_address"] == address and p.run_spec()["machine_slot"] is False
    [config] = [r for r in t.check_results if r.module == "config"]
    assert f"on the Ray cluster at {address}" in config.message
    assert any("(RAY_ADDRESS)" in w for w in config.warnings)


def test_a_runs_values_reach_its_job_and_not_what_the_dashboard_shows_of_it(head):
    """The values a run asks for by ${NAME} travel in a py_modules package of their own (job_secrets): the job on
    the cluster reads them; the job's info (what Ray's dashboard and `ray job list` show) holds none of them."""
    import json
    from pathlib import Path

    from engines.cluster.job_secrets import secrets_package

    client = job_client(head.address)
    engines = Path(__file__).resolve().parent.parent / "engines"
    with secrets_package({"LETTERS_TOKEN": "t0ken-ray"}) as package:
        job_id = client.submit_job(
            entrypoint="python3 -c \"from engines.cluster.job_secrets import read_secrets; print('got', read_secrets())\"",
            runtime_env={"py_modules": [str(engines), package]},
        )
    assert not Path(package).exists()  # on this machine only for the upload
    wait_for(lambda: str(client.get_job_status(job_id)).endswith("SUCCEEDED"), 120, "the job to end")
    assert "got {'LETTERS_TOKEN': 't0ken-ray'}" in client.get_job_logs(job_id)
    assert "t0ken-ray" not in json.dumps(client.get_job_info(job_id).model_dump(), default=str)

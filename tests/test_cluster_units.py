"""The pieces of a cluster run without a cluster: the mirror's lines, what is mirrored and what is this machine's,
the cluster settings' checks, where a run trains, and what the job needs on the cluster."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engines import AgentTrainer, CheckError
from engines.cluster import job_main
from engines.cluster.mirror import TAG, JobMirror, LocalMirror, parse
from engines.cluster.ray_jobs import LineBuffer
from engines.cluster.job_secrets import read_secrets, secrets_package
from engines.cluster.ray_run import job_variables, outside_paths, submission
from engines.runs.rundir import RunDir
from testing import free_port
from testing.letters_demo import AGENT, REWARD, TRAIN

ROOT = Path(__file__).resolve().parent.parent
NOWHERE = f"http://127.0.0.1:{free_port()}"  # nothing listens there


def test_log_chunks_become_whole_lines_even_when_a_chunk_ends_inside_one():
    buf = LineBuffer()
    assert buf.feed('one\n@aworld-mirror {"file": "metr') == ["one"]
    assert buf.feed('ics.jsonl", "rows": []}\r\ntwo') == ['@aworld-mirror {"file": "metrics.jsonl", "rows": []}']
    assert buf.flush() == ["two"] and buf.flush() == []


def test_a_mirror_line_is_found_behind_a_progress_bar_and_other_output_is_not_one():
    assert parse("Loading weights: 100%|██| " + TAG + '{"end": {"state": "finished"}}') == {
        "end": {"state": "finished"}
    }
    assert parse("step 3/4 · reward 0.05") is None and parse(TAG + "{not json") is None and parse(TAG + "[1]") is None


def test_the_job_mirror_carries_rows_and_progress_and_leaves_the_runs_life_to_this_machine(tmp_path):
    job, here = RunDir(tmp_path / "job"), RunDir(tmp_path / "here")
    job.path.mkdir()
    here.path.mkdir()
    lines: list[str] = []
    mirror = JobMirror(job.path, lines.append)
    job.mark_process("running", started=1.0)
    job.event("started", engine="trl")
    job.append_metrics(1, {"reward": 0.5})
    job.append_samples([{"step": 1, "reward": 0.5}, {"step": 1, "reward": 0.0}])
    job.write_status(step=1, last_reward=0.5)
    mirror.poll()
    job.append_metrics(2, {"reward": 0.75})
    job.event("checkpoint", step=2, path="/there/checkpoints/checkpoint-2")
    job.end("finished", dict(step=2), state="finished", ended=2.0)
    mirror.poll()
    mirror.poll()  # nothing new: nothing sent twice
    mirror.close()
    here.write_status(state="running", pid=4242)
    local = LocalMirror(here)
    for text in lines:
        local.apply(parse(text))
    assert here.read_jsonl("metrics.jsonl") == job.read_jsonl("metrics.jsonl")
    assert here.read_jsonl("samples.jsonl") == job.read_jsonl("samples.jsonl")
    assert [e["event"] for e in here.read_jsonl("events.jsonl")] == ["checkpoint"]  # started/finished: this machine's
    status = here.read_status()
    assert status["state"] == "running" and status["pid"] == 4242 and status["step"] == 1
    assert status["last_reward"] == 0.5 and "ended" not in status
    assert local.end == {"state": "finished", "cause": None, "error": None, "step": 1}
    # metrics, samples, status; then metrics, the checkpoint event; the end: nothing sent twice, nothing empty
    assert sum(TAG in t for t in lines) == len(lines) == 6


def test_cluster_settings_are_checked_and_a_run_with_an_address_leaves_the_machine_slot(tmp_path, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)

    def trainer(**cfg):
        return AgentTrainer(
            AGENT,
            TRAIN,
            None,
            REWARD,
            {"max_steps": 2, **cfg},
            run_path=str(tmp_path / "runs"),
            train_engine_name="trl",
        )

    with pytest.raises(CheckError, match=r"ray_resources: unknown key 'gpus' — use num_cpus, num_gpus, memory"):
        trainer(ray_address=NOWHERE, ray_resources={"gpus": 1})
    with pytest.raises(CheckError, match=r"ray_resources.num_gpus must be a number >= 0, not -1"):
        trainer(ray_address=NOWHERE, ray_resources={"num_gpus": -1})
    here = trainer()
    assert here.train_processor.uses_local_slot and here.train_processor.effective_config.get("ray_address") is None
    # RAY_ADDRESS sends a run without ray_address to that cluster: the check says so, run.yaml records it
    monkeypatch.setenv("RAY_ADDRESS", NOWHERE)
    there = trainer(ray_resources={"num_gpus": 1, "num_cpus": 4})
    p = there.train_processor
    assert p.uses_local_slot is False and p.run_spec()["machine_slot"] is False
    assert p.spec["config"]["ray_address"] == NOWHERE
    [config] = [r for r in there.check_results if r.module == "config"]
    assert any(f"Ray cluster at {NOWHERE} (RAY_ADDRESS)" in w for w in config.warnings)
    assert any(f"cannot reach the Ray cluster at {NOWHERE}" in w for w in config.warnings)
    [outside] = [w for w in config.warnings if "same paths on the cluster" in w]
    assert AGENT not in outside and str(ROOT / "assets/rewards/letter_reward.py") in outside
    # inside the job the run trains where it is: the job's own RAY_ADDRESS (Ray sets it) sends nothing on
    monkeypatch.setenv("AWORLD_IN_RAY_JOB", "1")
    assert trainer().train_processor.uses_local_slot is True


def test_the_submission_ships_the_run_dir_and_studio_code_asks_for_resources_and_lists_outside_files(
    tmp_path, monkeypatch
):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("LETTERS_TOKEN", "t0ken")
    monkeypatch.setenv("AWORLD_STUDIO_SECRET", "never")
    t = AgentTrainer(
        AGENT,
        TRAIN,
        None,
        REWARD,
        {
            "max_steps": 2,
            "ray_address": NOWHERE,
            "ray_resources": {"num_gpus": 1, "memory": 2e9},
            "ray_storage": "/shared/runs",
            "report_to": "none",
        },
        run_path=str(tmp_path / "runs"),
        train_engine_name="trl",
    )
    p = t.train_processor
    p.write_run_spec()
    spec_text = p.run.file("run.yaml").read_text()
    p.run.file("run.yaml").write_text(spec_text + "\nextra: ${LETTERS_TOKEN}\n")  # a credential the run asks for
    values = job_variables(p.run.file("run.yaml"))
    assert values == {"LETTERS_TOKEN": "t0ken"}  # what the run asks for, no studio variable
    with secrets_package(values) as package:
        sub = submission(p.run, NOWHERE, p.effective_config, secrets=package)
        assert sub["runtime_env"]["py_modules"] == [str(ROOT / "engines"), package]
        assert Path(package).name == "aworld_job_secrets" and oct(Path(package).parent.stat().st_mode)[-3:] == "700"
        assert json.loads((Path(package) / "values.json").read_text()) == {"LETTERS_TOKEN": "t0ken"}
    assert not Path(package).parent.exists()  # only for the upload
    env = sub["runtime_env"]["env_vars"]
    # the credential is not in what the Ray dashboard shows of the job (its env_vars, its metadata, the entrypoint)
    assert "t0ken" not in json.dumps({k: v for k, v in sub.items() if k != "runtime_env"} | {"env": env})
    assert sub["runtime_env"]["working_dir"] == str(p.run.path)
    assert {"/metrics.jsonl", "/status.json", "/STOP", "/checkpoints/"} <= set(sub["runtime_env"]["excludes"])
    assert (sub["entrypoint_num_cpus"], sub["entrypoint_num_gpus"], sub["entrypoint_memory"]) == (1, 1, 2_000_000_000)
    assert env["AWORLD_IN_RAY_JOB"] == "1" and env[job_main.STORAGE] == "/shared/runs"
    assert env[job_main.RUN_ID] == p.run.run_id and env[job_main.SUBMISSION_ID] == sub["submission_id"]
    assert "LETTERS_TOKEN" not in env and "AWORLD_STUDIO_SECRET" not in env
    assert submission(p.run, NOWHERE, p.effective_config)["runtime_env"]["py_modules"] == [str(ROOT / "engines")]
    needs = json.loads(env[job_main.NEEDS])
    assert str(ROOT / "assets/rewards/letter_reward.py") in needs and TRAIN in needs
    assert not any(n.startswith(str(p.run.path)) for n in needs)
    assert outside_paths({"a": [str(p.run.path / "run.yaml")], "b": "/nowhere/x"}, p.run.path) == []


def test_the_job_finds_a_folder_of_its_own_and_names_what_the_node_lacks(tmp_path):
    env = {job_main.RUN_ID: "r1", job_main.STORAGE: str(tmp_path), job_main.NEEDS: json.dumps([str(tmp_path), "/no"])}
    assert job_main.run_folder(env) == tmp_path / "r1"
    (tmp_path / "r1").mkdir()
    assert job_main.run_folder(env) == tmp_path / "r1.2"  # submitted again: beside the first
    assert job_main.missing_paths(env) == ["/no"]


def test_a_dashboard_that_stops_answering_is_waited_for_then_named_lost(monkeypatch):
    from engines.cluster import ray_jobs

    answers = iter([RuntimeError("connection refused"), "RUNNING", RuntimeError("503"), RuntimeError("503")])

    class Client:
        def get_job_status(self, job_id):
            answer = next(answers)
            if isinstance(answer, Exception):
                raise answer
            return answer

    monkeypatch.setattr(ray_jobs, "job_client", lambda address: Client())
    job = ray_jobs.RayJob(NOWHERE)
    job.job_id = "j1"
    job.LOST_AFTER_S = 0.05
    assert job.status_or_none() is None  # a blip: the job goes on
    assert job.status_or_none() == "RUNNING"  # answered again: the clock starts over
    assert job.status_or_none() is None
    import time

    time.sleep(0.06)
    with pytest.raises(
        ray_jobs.ClusterLost,
        match=r"lost contact with the Ray cluster .* \(job j1 may still run: `ray job stop j1`\): 503",
    ):
        job.status_or_none()


def test_how_the_job_ended_becomes_how_the_run_ended():
    from engines.cluster.ray_run import ClusterRunError, job_outcome

    class Job:
        job_id = "j1"

    # the job's end record decides; an early stop keeps its cause (the run's finished state says why it ended early)
    assert job_outcome(Job(), "SUCCEEDED", {"state": "finished", "cause": "early_stopped"}, False) == (
        "finished",
        "early_stopped",
    )
    assert job_outcome(Job(), "SUCCEEDED", {"state": "stopped", "cause": "pruned"}, True) == ("stopped", "pruned")
    with pytest.raises(ClusterRunError, match="on the Ray cluster \\(job j1\\): RewardError: boom") as e:
        job_outcome(Job(), "FAILED", {"state": "failed", "cause": None, "error": "RewardError: boom"}, False)
    assert e.value.failure_cause == "reward error"  # classified from the job's error when it named no cause
    # no end record: Ray's state — stopped by the studio, or by someone else
    assert job_outcome(Job(), "STOPPED", None, True) == ("stopped", None)
    with pytest.raises(ClusterRunError, match="stopped outside the studio") as e:
        job_outcome(Job(), "STOPPED", None, False)
    assert e.value.failure_cause == "killed"


def a_cluster_run(tmp_path: Path, where: str) -> RunDir:
    """A run trained as a Ray job whose folder there is ``where`` (status.json ``ray_run_dir``, host:path)."""
    run = RunDir(tmp_path / "runs" / "20261126-000000-trl-aaaa")
    run.path.mkdir(parents=True)
    run.write_spec({"engine": "trl", "run_id": run.run_id})
    run.write_status(state="finished", ray_run_dir=where)
    return run


def test_a_cluster_runs_checkpoints_are_read_where_the_job_kept_them_when_this_machine_sees_them(tmp_path):
    """Evaluate, Chat and Export of a run trained on a cluster: its checkpoints stay in the job's folder there
    (ray_storage). When this machine sees that path (a head here, storage shared with the cluster) they are the
    run's; "latest" is the newest of them, not the base model."""
    import shutil

    from engines.inference.checkpoints import resolve

    there = tmp_path / "cluster" / "20261126-000000-trl-aaaa"
    for step in (2, 4):
        shutil.copytree(ROOT / "assets/models/tiny-letters", there / "checkpoints" / f"checkpoint-{step}")
    run = a_cluster_run(tmp_path, f"node-1:{there}")
    assert [p.name for p in run.checkpoints()] == ["checkpoint-2", "checkpoint-4"]
    assert run.checkpoints_unreachable() is None and not run.checkpoints_dir.exists()
    base = str(ROOT / "assets/models/tiny-letters")
    assert Path(resolve("latest", base, run).path) == there / "checkpoints" / "checkpoint-4"
    assert Path(resolve("checkpoint-2", base, run).path) == there / "checkpoints" / "checkpoint-2"
    # copied here, they are read here (the cluster's folder no longer needed)
    shutil.copytree(there / "checkpoints" / "checkpoint-4", run.checkpoints_dir / "checkpoint-4")
    assert [p.parent for p in run.checkpoints()] == [run.checkpoints_dir]


def test_a_cluster_runs_checkpoints_this_machine_does_not_see_are_named_not_replaced_by_the_base_model(tmp_path):
    """A run with no checkpoint yet is evaluated as its base model ("latest" falls back). A cluster run's
    checkpoints are elsewhere: "latest" on the base model would be a wrong answer, so the check says where they
    are and what to do; the Runs tab says the same instead of "no checkpoint yet"."""
    from aworld_gui.core.studio import Studio
    from aworld_gui.rendering.i18n import localize
    from aworld_gui.tabs.runs_tab import RunsTab
    from engines.inference.checkpoints import resolve

    run = a_cluster_run(tmp_path, "node-7:/data/aworld-runs/20261126-000000-trl-aaaa")
    there = "node-7:/data/aworld-runs/20261126-000000-trl-aaaa/checkpoints"
    assert run.checkpoints() == [] and run.checkpoints_unreachable() == there
    base = str(ROOT / "assets/models/tiny-letters")
    for name in ("latest", "checkpoint-4"):
        with pytest.raises(CheckError) as e:
            resolve(name, base, run)
        assert f"trained on a Ray cluster: its checkpoints are at {there}" in str(e.value), name
    assert resolve("base", base, run).path == base  # the base model is still the base model
    studio = Studio(tmp_path / "runs")
    _, said = RunsTab(studio).on_export(run.run_id, None)
    assert f"its checkpoints are at `{there}`, which this machine does not see" in localize(str(said), "en")
    assert "此运行在 Ray 集群上训练" in localize(str(said), "zh")
    plain = RunDir(tmp_path / "runs" / "20261126-000001-trl-bbbb")  # trained here, no checkpoint yet
    plain.path.mkdir()
    plain.write_status(state="running")
    assert plain.checkpoints_unreachable() is None and resolve("latest", base, plain).path == base


def test_the_job_hands_the_carried_values_to_the_run_and_reads_none_when_none_came(tmp_path, monkeypatch):
    """On the cluster Ray puts each py_modules package on the job's path: job_main reads the values from there."""
    import sys

    assert read_secrets() == {}
    with secrets_package({"LETTERS_TOKEN": "t0ken"}) as package:
        copy = tmp_path / "modules"
        (copy / "aworld_job_secrets").mkdir(parents=True)
        for f in Path(package).iterdir():
            (copy / "aworld_job_secrets" / f.name).write_bytes(f.read_bytes())
    monkeypatch.syspath_prepend(str(copy))
    sys.modules.pop("aworld_job_secrets", None)
    assert read_secrets() == {"LETTERS_TOKEN": "t0ken"}
    with secrets_package({}) as none:
        assert none is None

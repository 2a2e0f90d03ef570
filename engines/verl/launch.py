"""Start, watch and stop a verl job — a local process or a Ray job — and mirror it into the run dir.

* :class:`Launcher` — a checked run's verl job from start to end: the command line and environment,
  then :meth:`Launcher.train_local` (a :class:`LocalJob` on this machine) or :meth:`Launcher.train_cluster`
  (a :class:`RayJob`: the run dir as its ``working_dir``, the config with paths made relative), both
  watched until verl ends or the run's STOP file asks for a stop.
* :class:`LocalJob` — ``python -m verl.trainer.main_ppo`` in its own process session, its output
  appended to ``train.log`` (never a pipe); stopped by signalling its whole session.
* :class:`~engines.cluster.ray_jobs.RayJob` — Ray's ``JobSubmissionClient`` (shared with every engine's
  cluster runs): the run dir is the job's ``working_dir``, status/logs/stop map to the run dir's status,
  ``train.log`` and STOP file.
* :class:`MetricsWatcher` — tails verl's ``file`` logger JSONL (or, when that file is on another
  node, the console lines in the job's log) into ``metrics.jsonl`` with canonical names, turns
  verl's rollout dumps into ``samples.jsonl`` and its ``global_step_N`` folders into checkpoint events.
"""

from __future__ import annotations

import os
import re
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cluster.ray_jobs import ClusterLost, RayJob
from ..isolation import server_env
from ..isolation.processes import spawn_detached, terminate_tree
from ..runs.rundir import FINISHED, STOPPED, STOPPING, RunDir
from ..runs.json_lines import JsonlTail, TextTail, iter_jsonl
from ..runs.sample_groups import groups_by_prompt, groups_summary, marked_groups
from .availability import with_install_hint
from .compose import select
from .layout import CLUSTER_CONFIG_FILE, CONFIG_FILE, METRICS_FILE, ROLLOUTS_DIR, VERL_DIR
from .resume import set_aside_outputs
from .metrics import clean_log_line, normalize_record, parse_console_line

FILE_LOGGER_RE = re.compile(r"Creating file logger at (\S+)")
_ERROR_RE = re.compile(r"^(?:[\w.]+\.)?\w*(?:Error|Exception|Interrupt)(?:\([\w.]+\))?(?::\s.*)?$")
_STEP_DIR_RE = re.compile(r"^global_step_(\d+)$")
#: run-dir entries a Ray job never needs (the live files of this run, outputs)
RAY_EXCLUDES = [
    "/train.log",
    "/metrics.jsonl",
    "/samples.jsonl",
    "/events.jsonl",
    "/status.json",
    "/STOP",
    "/checkpoints/",
    "/tensorboard/",
    "/verl/hydra/",
    f"/verl/{ROLLOUTS_DIR}/",
    f"/verl/{METRICS_FILE}",
    "/.*.tmp",
]
POLL_S = 1.0
STOP_GRACE_S = 15.0  # then SIGKILL; within runs.enforce_stop_timeout's 30 s


class VerlRunError(RuntimeError):
    """verl ended with an error; the message carries verl's own last error line."""


def last_error(text: str) -> str | None:
    """The last ``SomeError: message`` line of a log (Ray prefixes and colours removed)."""
    for raw in reversed(text.splitlines()):
        line = clean_log_line(raw).strip()
        if _ERROR_RE.match(line):
            return line[:500]
    return None


def log_tail(path: Path) -> str:
    """The end of a log (the last 256 KiB, as the run dir's TextTail reads it)."""
    tail = TextTail(Path(path), keep=2000)
    tail.read_new()
    return tail.text()


# -- metrics, samples, checkpoints ----------------------------------------------------------------
class MetricsWatcher:
    """Mirrors verl's outputs into the run directory; call :meth:`poll` regularly."""

    def __init__(
        self,
        run: RunDir,
        total_steps: int | None = None,
        metrics_file: str | Path | None = None,
        rollouts_dir: str | Path | None = None,
        checkpoints_dir: str | Path | None = None,
        samples_per_step: int = 2,
        decide_after_s: float = 10.0,
        resumed_at: int = 0,
    ):
        self.run = run
        self.total_steps = total_steps
        self.samples_per_step = samples_per_step
        self.rollouts_dir = Path(rollouts_dir) if rollouts_dir else None
        self.checkpoints_dir = Path(checkpoints_dir) if checkpoints_dir else None
        self.decide_after_s = decide_after_s
        self.mode = "file" if metrics_file else "auto"  # file | console | auto (decided from the job's log)
        self.tail = JsonlTail(Path(metrics_file)) if metrics_file else None
        self._candidate: tuple[str, float] | None = None
        self._console: list[dict] = []
        self.last_step: int | None = None
        self.rows = 0
        #: a resumed run's rows, samples and checkpoints up to its checkpoint's step are the run's already (the
        #: resumed attempt's verl validates at that step before it trains again: that row is in train.log only)
        self.resumed_at = resumed_at
        self._samples_done: set[int] = set(range(resumed_at + 1))
        self._checkpoints: set[int] = set(range(resumed_at + 1))

    # fed by a job's log (cluster mode) -----------------------------------------------------------
    def feed_log_line(self, line: str) -> None:
        line = clean_log_line(line)
        m = FILE_LOGGER_RE.search(line)
        if m and self.mode == "auto":
            self._candidate = (m.group(1), time.time())
            return
        if self.mode == "file":
            return
        rec = parse_console_line(line)
        if rec is None:
            return
        if self.mode == "auto" and self._candidate is None:
            self.mode = "console"  # verl announces its file logger before the first step: there is none
        if self.mode == "console":
            self._emit(rec)
        else:
            self._console.append(rec)

    def _decide(self, final: bool = False) -> None:
        """Cluster mode: the file logger's JSONL when this machine can read it, else console lines."""
        if self.mode != "auto":
            return
        if self._candidate is not None:
            path, seen = self._candidate
            if os.path.exists(path):  # same machine or a shared filesystem: the exact values
                self.mode = "file"
                self.tail = JsonlTail(Path(path))
                self._console.clear()
                if self.rollouts_dir is None:  # the cluster config puts verl's rollout dumps next to it
                    self.rollouts_dir = Path(path).parent / "rollouts"
                return
            if not final and time.time() - seen < self.decide_after_s:
                return
        elif not final:
            return
        self.mode = "console"
        buffered, self._console = self._console, []
        for rec in buffered:
            self._emit(rec)

    # the loop ---------------------------------------------------------------------------------
    def poll(self, final: bool = False) -> int:
        """Mirror what is new; returns how many metric rows were written."""
        before = self.rows
        self._decide(final)
        if self.tail is not None:
            for rec in self.tail.read_new():
                self._emit(rec)
        self._samples(final)
        self._scan_checkpoints()
        return self.rows - before

    def _emit(self, record: dict) -> None:
        row = normalize_record(record)
        if row is None:
            return
        step, values = row
        if self.resumed_at and step <= self.resumed_at:
            return
        self.run.append_metrics(step, values)
        self.rows += 1
        self.last_step = step if self.last_step is None else max(self.last_step, step)
        status: dict[str, Any] = {"step": self.last_step}
        if self.total_steps:
            status["total_steps"] = self.total_steps
        if "reward" in values:
            status["last_reward"] = values["reward"]
        if "loss" in values:
            status["last_loss"] = values["loss"]
        self.run.write_status(**status)

    def _samples(self, final: bool) -> None:
        if self.samples_per_step <= 0 or self.rollouts_dir is None or not self.rollouts_dir.is_dir():
            return
        for path in sorted(self.rollouts_dir.glob("*.jsonl")):
            try:
                step = int(path.stem)
            except ValueError:
                continue
            # a dump is complete once a later step was logged (verl writes it in a background thread)
            if step in self._samples_done or not (final or (self.last_step is not None and self.last_step > step)):
                continue
            self._samples_done.add(step)
            self._write_groups([sample_from_dump(row, step) for row in iter_jsonl(path)])

    def _write_groups(self, samples: list[dict]) -> None:
        """The first ``samples_per_step`` prompt groups of a step's dump, whole. verl's dump has no group id
        and no advantage, and verl may reorder the batch (``trainer.balance_batch``): a group is the rows
        with the same prompt."""
        groups = groups_by_prompt(samples)
        summary = groups_summary([[s.get("reward") for s in g] for g in groups])
        self.run.append_samples(marked_groups(groups[: self.samples_per_step], summary))

    def _scan_checkpoints(self) -> None:
        if self.checkpoints_dir is None or not self.checkpoints_dir.is_dir():
            return
        for p in self.checkpoints_dir.iterdir():
            m = _STEP_DIR_RE.match(p.name)
            if m and p.is_dir() and int(m.group(1)) not in self._checkpoints:
                step = int(m.group(1))
                self._checkpoints.add(step)
                self.run.event("checkpoint", step=step, path=str(p))
                self.run.write_status(last_checkpoint=str(p))


def sample_from_dump(row: dict, step: int) -> dict:
    """A line of verl's rollout dump (``trainer.rollout_data_dir/<step>.jsonl``) → a samples.jsonl row."""
    terms = {k[len("reward_") :]: v for k, v in row.items() if k.startswith("reward_") and isinstance(v, (int, float))}
    return {
        "step": int(row.get("step", step)),
        "time": time.time(),
        "prompt": row.get("input"),
        "completion": row.get("output"),
        "answer": row.get("gts"),
        "rewards": terms,
        "reward": row.get("score"),
    }


# -- a local process ---------------------------------------------------------------------------------
class LocalJob:
    """A command in its own session, its stdout/stderr appended to ``log_path``."""

    def __init__(self, argv: list[str], cwd: str | Path, env: dict[str, str], log_path: str | Path):
        self.proc = spawn_detached(argv, log_path, env=env, cwd=cwd)
        self.pid = self.proc.pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        self.returncode = self.proc.poll()
        return self.returncode

    def stop(self, grace_s: float = 20.0) -> None:
        """SIGTERM the job's whole session (verl, its local Ray processes), SIGKILL what is left."""
        terminate_tree(self.pid, grace_s=grace_s)
        self.proc.wait(timeout=5)
        self.poll()


# -- a run's verl job ----------------------------------------------------------------------------------
@dataclass
class Launcher:
    """A checked run's verl job: started locally or submitted to a Ray cluster, watched to its end."""

    run: RunDir
    verl_config: Any  # the composed DictConfig saved as ``<run>/verl/verl_config.yaml``
    python: str  # the interpreter that runs verl locally
    main_entry: list[str]  # what follows the interpreter: ``-m verl.trainer.main_ppo`` (tests: a stand-in)
    total_steps: int | None = None
    cluster_address: str | None = None
    env_vars: dict[str, str] = field(default_factory=dict)
    resumed_at: int = 0  # a resumed run's checkpoint step (engines/verl/resume.py): mirrored up to it already

    @property
    def verl_dir(self) -> Path:
        return self.run.path / VERL_DIR

    def train(self) -> str:
        """Run verl to its end: ``"finished"``, ``"stopped"`` (the run's Stop), or :class:`VerlRunError`."""
        return self.train_cluster() if self.cluster_address else self.train_local()

    def command(self, cluster: bool = False) -> list[str]:
        """The verl command line: ``main_entry`` (``-m verl.trainer.main_ppo``) with the saved config.
        On a cluster it runs in the job's working_dir (a copy of the run dir) with the cluster's python3."""
        if cluster:
            return [
                "python3",
                *self.main_entry,
                "--config-path",
                "$PWD/" + VERL_DIR,
                "--config-name",
                Path(CLUSTER_CONFIG_FILE).stem,
                f"hydra.run.dir={VERL_DIR}/hydra",
            ]
        return [
            self.python,
            *self.main_entry,
            "--config-path",
            str(self.verl_dir),
            "--config-name",
            Path(CONFIG_FILE).stem,
            f"hydra.run.dir={self.verl_dir / 'hydra'}",
        ]

    def job_env(self, metrics_path: str) -> dict[str, str]:
        env = {
            "VERL_FILE_LOGGER_PATH": metrics_path,
            "PYTHONUNBUFFERED": "1",
            "HYDRA_FULL_ERROR": "1",
            "TENSORBOARD_DIR": str(self.run.tensorboard_dir),
            "WANDB_MODE": os.environ.get("WANDB_MODE", ""),
        }
        env = {k: v for k, v in env.items() if v}
        env.update(self.env_vars)
        return env

    # -- this machine -----------------------------------------------------------------------------------
    def train_local(self) -> str:
        run = self.run
        env = dict(os.environ)
        # verl's rollout workers start the agent's MCP servers from mcp_servers.json, substituting from their
        # environment: the servers' variables (engines.isolation.server_env) go there, as on a cluster env_vars
        env.update(server_env.values())
        env.pop("RAY_ADDRESS", None)  # a bare ray.init() would join that cluster
        env.update(self.job_env(str(self.verl_dir / METRICS_FILE)))
        argv = self.command(cluster=False)
        if self.resumed_at:
            set_aside_outputs(run, self.resumed_at, int(run.read_status().get("attempt") or 2) - 1)
        job = LocalJob(argv, cwd=run.path, env=env, log_path=run.log_path)
        run.write_status(verl_pid=job.pid)
        run.event("launched", engine="verl", pid=job.pid, command=" ".join(shlex.quote(a) for a in argv))
        cfg = self.verl_config
        watcher = MetricsWatcher(
            run,
            self.total_steps,
            metrics_file=env["VERL_FILE_LOGGER_PATH"],
            rollouts_dir=select(cfg, "trainer.rollout_data_dir"),
            checkpoints_dir=select(cfg, "trainer.default_local_dir"),
            resumed_at=self.resumed_at,
        )
        stopping = False
        while job.poll() is None:
            watcher.poll()
            if run.stop_requested() and not stopping:
                stopping = True
                run.write_status(state=STOPPING)
                run.event("stop_requested", step=watcher.last_step)
                job.stop(STOP_GRACE_S)
                break
            run.write_status()
            time.sleep(POLL_S)
        watcher.poll(final=True)
        if stopping:
            return STOPPED
        if job.returncode == 0:
            return FINISHED
        err = last_error(log_tail(run.log_path)) or "no error line in train.log"
        raise VerlRunError(f"verl exited with code {job.returncode}: {with_install_hint(err)}")

    # -- a Ray cluster ----------------------------------------------------------------------------------
    def cluster_config(self) -> Path:
        """The saved config with paths inside the run dir made relative (the job's working_dir)."""
        from omegaconf import OmegaConf

        data = OmegaConf.to_container(self.verl_config, resolve=False)
        root = str(self.run.path)

        def rel(value: Any) -> Any:
            if isinstance(value, dict):
                return {k: rel(v) for k, v in value.items()}
            if isinstance(value, list):
                return [rel(v) for v in value]
            if isinstance(value, str) and value.startswith(root + os.sep) and os.path.isfile(value):
                return os.path.relpath(value, root)
            return value

        data = rel(data)
        dump = data["trainer"].get("rollout_data_dir")
        if isinstance(dump, str) and dump.startswith(root + os.sep):  # next to the file logger's JSONL
            data["trainer"]["rollout_data_dir"] = os.path.relpath(dump, root)
        path = self.verl_dir / CLUSTER_CONFIG_FILE
        OmegaConf.save(OmegaConf.create(data), str(path), resolve=False)
        return path

    def train_cluster(self) -> str:
        run = self.run
        self.cluster_config()
        job = RayJob(self.cluster_address)
        argv = self.command(cluster=True)
        entrypoint = " ".join(f'"{a}"' if a.startswith("$PWD") else shlex.quote(a) for a in argv)
        runtime_env = {
            "working_dir": str(run.path),
            "excludes": RAY_EXCLUDES,
            "env_vars": self.job_env(f"{VERL_DIR}/{METRICS_FILE}"),
        }
        runtime_env["env_vars"].pop("TENSORBOARD_DIR", None)
        job_id = job.submit(entrypoint, runtime_env, metadata={"aworld_run": run.run_id})
        run.write_status(ray_job_id=job_id, ray_address=self.cluster_address)
        run.event("submitted", engine="verl", ray_job_id=job_id, address=self.cluster_address, entrypoint=entrypoint)
        log = open(run.log_path, "a", encoding="utf-8")

        def sink(chunk: str) -> None:
            log.write(chunk)
            log.flush()

        job.follow_logs(sink)
        # verl's outputs are on the node running its trainer: readable here on the same machine or a shared
        # filesystem (rollout dumps: a user's absolute path, else next to the file logger's JSONL)
        dump = select(self.verl_config, "trainer.rollout_data_dir")
        shared = isinstance(dump, str) and os.path.isabs(dump) and not Path(dump).is_relative_to(run.path)
        watcher = MetricsWatcher(
            run,
            self.total_steps,
            rollouts_dir=dump if shared else None,
            checkpoints_dir=select(self.verl_config, "trainer.default_local_dir"),
            resumed_at=self.resumed_at,
        )
        stopping, state = False, "PENDING"
        try:
            while True:
                for line in job.drain_lines():
                    watcher.feed_log_line(line)
                watcher.poll()
                try:
                    answer = job.status_or_none()
                except ClusterLost as e:
                    raise VerlRunError(str(e)) from e
                if answer is None:  # the dashboard restarting, a network blip: the job itself goes on
                    time.sleep(POLL_S)
                    continue
                state = answer
                if state in RayJob.TERMINAL:
                    break
                if run.stop_requested() and not stopping:
                    stopping = True
                    run.write_status(state=STOPPING)
                    run.event("stop_requested", step=watcher.last_step, ray_job_id=job_id)
                    job.stop()
                run.write_status(ray_job_status=state)
                time.sleep(POLL_S)
            job.join_logs()
            for line in job.drain_lines():
                watcher.feed_log_line(line)
            watcher.poll(final=True)
        finally:
            log.close()
        info = job.info()
        run.write_status(ray_job_status=state)
        if state == "SUCCEEDED":
            return FINISHED
        if state == "STOPPED" and stopping:
            return STOPPED
        err = last_error(job.logs()) or (info.message or "")
        if state == "STOPPED":
            err = "the Ray job was stopped outside the studio (killed)"
        raise VerlRunError(f"Ray job {job_id} {state.lower()}: {with_install_hint(err)}")

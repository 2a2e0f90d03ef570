"""Test helpers for machines without a GPU (used by tests/test_verl_*.py and the docs' smoke test).

* :data:`FAKE_MAIN_PPO` — a stand-in for ``python -m verl.trainer.main_ppo`` that takes the same
  command line, reads the same saved config, and logs through verl's own ``Tracking`` (console +
  file backends, so the lines are verl's real format), dumps rollouts like verl and writes
  ``global_step_N`` checkpoint folders. Only the GPU work is missing.
* :class:`RayHead` — a throwaway local Ray head on 127.0.0.1 in its own process session, stopped
  by signalling only the processes it started (never ``ray stop``, which stops every Ray on the machine).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from engines.isolation.processes import spawn_detached, terminate_tree
from testing import free_port

FAKE_MAIN_PPO = r'''
"""Fake verl.trainer.main_ppo: verl's config, logger and dump formats without the GPU work.
Knobs (environment): FAKE_VERL_STEPS (3), FAKE_VERL_PAUSE seconds per step (0.2), FAKE_VERL_FAIL=1."""
import json, os, sys, time

args = sys.argv[1:]
config_dir = args[args.index("--config-path") + 1]
config_name = args[args.index("--config-name") + 1]
from omegaconf import OmegaConf

cfg = OmegaConf.load(os.path.join(config_dir, config_name + ".yaml"))
print("[validate_config] fake main_ppo read", config_name, flush=True)
from verl.utils.tracking import Tracking

tracking = Tracking(cfg.trainer.project_name, cfg.trainer.experiment_name, default_backend=list(cfg.trainer.logger))
steps = int(os.environ.get("FAKE_VERL_STEPS", "3"))
pause = float(os.environ.get("FAKE_VERL_PAUSE", "0.2"))
tracking.log({"val-core/fake/reward/mean@1": 0.1}, step=0)
for step in range(1, steps + 1):
    time.sleep(pause)
    if cfg.trainer.rollout_data_dir:
        os.makedirs(cfg.trainer.rollout_data_dir, exist_ok=True)
        with open(os.path.join(cfg.trainer.rollout_data_dir, f"{step}.jsonl"), "w") as f:
            for i in range(3):
                f.write(json.dumps({"input": "Say the letter C:", "output": "C", "gts": "C", "score": 1.0,
                                    "step": step, "reward_letter_reward": 1.0}) + "\n")
    tracking.log({"critic/score/mean": 0.1 * step, "actor/pg_loss": -0.01 * step, "actor/lr": 1e-6,
                  "response_length/mean": 1.5, "timing_s/step": pause, "training/global_step": step}, step=step)
    if step == steps:
        os.makedirs(os.path.join(cfg.trainer.default_local_dir, f"global_step_{step}"), exist_ok=True)
if os.environ.get("FAKE_VERL_FAIL"):
    raise ValueError("fake verl failure: bad value in the batch")
print("fake main_ppo done", flush=True)
'''


def write_fake_main_ppo(folder: str | os.PathLike) -> Path:
    path = Path(folder) / "fake_main_ppo.py"
    path.write_text(FAKE_MAIN_PPO, encoding="utf-8")
    return path


class RayHead:
    """``ray start --head --block`` on 127.0.0.1 with free ports and a private temp dir."""

    def __init__(self, num_cpus: int = 1, timeout_s: float = 90.0):
        self.num_cpus = num_cpus
        self.timeout_s = timeout_s
        self.temp_dir = tempfile.mkdtemp(prefix="rh", dir="/tmp")  # short: Ray's socket paths must fit
        self.port = free_port()
        self.dashboard_port = free_port()
        self.address = f"http://127.0.0.1:{self.dashboard_port}"
        self.proc: subprocess.Popen | None = None
        self.log_path = Path(self.temp_dir) / "ray_start.log"

    def start(self) -> "RayHead":
        ray_exe = str(Path(sys.executable).parent / "ray")
        cmd = [
            ray_exe,
            "start",
            "--head",
            "--block",
            f"--port={self.port}",
            "--node-ip-address=127.0.0.1",
            "--dashboard-host=127.0.0.1",
            f"--dashboard-port={self.dashboard_port}",
            "--include-dashboard=true",
            f"--num-cpus={self.num_cpus}",
            "--num-gpus=0",
            f"--temp-dir={self.temp_dir}",
            f"--ray-client-server-port={free_port()}",
            f"--dashboard-agent-listen-port={free_port()}",
            f"--runtime-env-agent-port={free_port()}",
            f"--metrics-export-port={free_port()}",
            "--disable-usage-stats",
        ]
        env = dict(os.environ)
        env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
        env.pop("RAY_ADDRESS", None)
        self.proc = spawn_detached(cmd, self.log_path, env=env)
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        from engines.verl.launch import enable_ray_token_auth

        enable_ray_token_auth()
        from ray.job_submission import JobSubmissionClient

        deadline = time.time() + self.timeout_s
        last = None
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ray start exited ({self.proc.returncode}): {self.log_path.read_text()[-2000:]}")
            try:
                JobSubmissionClient(self.address).list_jobs()
                return
            except Exception as e:  # not up yet
                last = e
                time.sleep(1.0)
        self.stop()
        raise RuntimeError(f"the Ray head did not come up in {self.timeout_s}s: {last}")

    def stop(self) -> None:
        if self.proc is not None:
            terminate_tree(self.proc.pid, grace_s=3)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        shutil.rmtree(self.temp_dir, ignore_errors=True)

    def __enter__(self) -> "RayHead":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

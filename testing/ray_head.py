"""A Ray head on 127.0.0.1 for tests: ``ray start --head --block`` with free ports and a private temp dir, the
cluster that verl's and every engine's cluster runs are submitted to here (CPU only)."""

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
        from engines.cluster.ray_jobs import enable_ray_token_auth

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

"""One Ray job through Ray's ``JobSubmissionClient``: submit, status, live log lines, stop — what the verl engine
(verl's own driver as the job) and every other engine's cluster runs (:mod:`engines.cluster.ray_run`) share."""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from typing import Callable

TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")
STOP_SUFFIX = "-stop"


def enable_ray_token_auth() -> None:
    """Ray >= 2.5x clusters may require a token; use the local one (~/.ray/auth_token, RAY_AUTH_TOKEN)
    the way Ray's own CLI does when RAY_AUTH_MODE is not set."""
    try:
        from ray._private.authentication.authentication_token_setup import maybe_enable_token_auth_if_token_available
    except ImportError:  # older Ray: no token auth
        return
    try:
        maybe_enable_token_auth_if_token_available(warn_if_disabled=False)
    except Exception:  # never let the probe take the launcher down
        pass


def unreachable(address: str, timeout_s: float = 3.0) -> str | None:
    """Why the dashboard of ``http(s)://host:port`` does not accept a connection, or None."""
    import socket
    from urllib.parse import urlparse

    url = urlparse(address)
    if url.scheme not in ("http", "https") or not url.hostname:
        return None  # "auto", a GCS address, ray://: Ray resolves those itself
    try:
        with socket.create_connection(
            (url.hostname, url.port or (443 if url.scheme == "https" else 80)), timeout=timeout_s
        ):
            return None
    except OSError as e:
        return f"{type(e).__name__}: {e}"


def job_client(address: str | None):
    """Ray's ``JobSubmissionClient`` for ``address`` (``http://<head>:8265``)."""
    enable_ray_token_auth()
    from ray.job_submission import JobSubmissionClient

    return JobSubmissionClient(address)


class LineBuffer:
    """Text chunks → whole lines: a chunk may end inside a line (a long sample row in the log)."""

    def __init__(self) -> None:
        self._rest = ""

    def feed(self, chunk: str) -> list[str]:
        text = self._rest + chunk
        lines = text.split("\n")
        self._rest = lines.pop()
        return [line.rstrip("\r") for line in lines]

    def flush(self) -> list[str]:
        rest, self._rest = self._rest, ""
        return [rest] if rest else []


class ClusterLost(RuntimeError):
    """The cluster's dashboard did not answer for too long (the job itself may still run)."""


class RayJob:
    """One Ray job: submit, status, live logs, stop."""

    TERMINAL = TERMINAL
    LOST_AFTER_S = 120.0

    def __init__(self, address: str | None):
        self.address = address
        self.client = job_client(address)
        self.job_id: str | None = None
        self._lost_since: float | None = None
        self._log_thread: threading.Thread | None = None
        self.lines: "queue.Queue[str]" = queue.Queue()

    def submit(
        self,
        entrypoint: str,
        runtime_env: dict,
        metadata: dict | None = None,
        submission_id: str | None = None,
        **resources,
    ) -> str:
        """Submit; ``resources`` are Ray's ``entrypoint_num_cpus``, ``entrypoint_num_gpus``, ``entrypoint_memory``."""
        self.job_id = self.client.submit_job(
            entrypoint=entrypoint,
            runtime_env=runtime_env,
            metadata=metadata or {},
            submission_id=submission_id,
            **{k: v for k, v in resources.items() if v},
        )
        return self.job_id

    def status(self) -> str:
        status = self.client.get_job_status(self.job_id)
        return getattr(status, "value", str(status))

    def status_or_none(self) -> str | None:
        """Ray's state of the job; None while the dashboard does not answer (a restart, a network blip: the job goes
        on); :class:`ClusterLost` once it has not answered for :attr:`LOST_AFTER_S`."""
        try:
            state = self.status()
        except Exception as e:  # noqa: BLE001 - any failure to ask is a missed answer
            self._lost_since = self._lost_since or time.time()
            if time.time() - self._lost_since > self.LOST_AFTER_S:
                raise ClusterLost(
                    f"lost contact with the Ray cluster at {self.address} for {self.LOST_AFTER_S:.0f} s (job "
                    f"{self.job_id} may still run: `ray job stop {self.job_id}`): {e}"
                ) from e
            return None
        self._lost_since = None
        return state

    def info(self):
        return self.client.get_job_info(self.job_id)

    def logs(self) -> str:
        return self.client.get_job_logs(self.job_id)

    def stop(self) -> bool:
        return bool(self.client.stop_job(self.job_id))

    def follow_logs(self, sink: Callable[[str], None]) -> None:
        """A daemon thread streaming the job's log into ``sink`` (text chunks) and :attr:`lines` (whole lines)."""
        lines = LineBuffer()

        def emit(chunk: str) -> None:
            sink(chunk)
            for line in lines.feed(chunk):
                self.lines.put(line)

        def run() -> None:
            sent = 0
            try:

                async def follow() -> None:
                    nonlocal sent
                    async for chunk in self.client.tail_job_logs(self.job_id):
                        sent += len(chunk)
                        emit(chunk)

                asyncio.run(follow())
            except Exception:  # the websocket failed: fall back to polling the whole log
                while True:
                    try:
                        text = self.logs()
                        if len(text) > sent:
                            emit(text[sent:])
                            sent = len(text)
                        if self.status() in self.TERMINAL:
                            text = self.logs()
                            if len(text) > sent:
                                emit(text[sent:])
                            break
                    except Exception:
                        break
                    time.sleep(2.0)
            for line in lines.flush():
                self.lines.put(line)

        self._log_thread = threading.Thread(target=run, name=f"ray-logs-{self.job_id}", daemon=True)
        self._log_thread.start()

    def join_logs(self, timeout: float = 10.0) -> None:
        if self._log_thread is not None:
            self._log_thread.join(timeout)

    def drain_lines(self) -> list[str]:
        out = []
        while True:
            try:
                out.append(self.lines.get_nowait())
            except queue.Empty:
                return out


# -- Stop at a step boundary, through the job API alone ---------------------------------------------------
# Ray's stop_job signals the job's processes and kills them a few seconds later; a run stops at a step boundary
# with a checkpoint instead when asked through its STOP file. The job cannot see this machine's run directory, so
# the request travels as a second, empty job with a known id: the job watches for it (job_main) and writes STOP.
def stop_marker_id(job_id: str) -> str:
    return job_id + STOP_SUFFIX


def request_stop(client, job_id: str, reason: str) -> None:
    """Ask the run in job ``job_id`` to stop at its next step boundary (``reason``: the run's stop cause)."""
    client.submit_job(entrypoint="true", submission_id=stop_marker_id(job_id), metadata={"reason": reason})


def stop_requested(client, job_id: str) -> str | None:
    """The reason of a stop asked for the run in job ``job_id``, or None."""
    try:
        info = client.get_job_info(stop_marker_id(job_id))
    except Exception:  # no such job (yet): no stop asked; the dashboard unreachable: asked later, or by signal
        return None
    return (info.metadata or {}).get("reason") or "user"

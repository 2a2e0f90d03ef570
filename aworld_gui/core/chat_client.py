"""The studio's side of chat: it starts the chat model as a process of its own
(``aworld-train chat-serve``, see engines/inference/chat_server.py), one loaded model at a time, talks to it over
HTTP on 127.0.0.1 with the token the process wrote to ``chat.json``, and never imports torch. A model
process that died (or exited after its idle time) is started again with the next message, and that reply
says so with the cause (from its state file, else how it ended and what it logged after it was ready)."""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterator

import psutil

from engines.isolation.processes import spawn_detached, terminate_tree
from engines.runs.launcher import Launcher
from engines.runs.lifecycle import process_alive

CHAT_DIR = ".chat"
LOAD_TIMEOUT_S = 300.0


class ChatError(RuntimeError):
    pass


def _tail(path: Path, n: int = 1500) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return "\n".join(lines[-6:])[-n:]


def _log_since_ready(path: Path, n: int = 1500) -> str:
    """The last lines the model process logged after it said it was ready (its crash output, if any)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    mark = text.rfind(" ready on 127.0.0.1:")
    if mark >= 0:
        text = text[text.find("\n", mark) + 1 :] if "\n" in text[mark:] else ""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return "\n".join(lines[-6:])[-n:]


class ModelProcess:
    """The chat model's process as ``Popen`` shows one (``pid``, ``poll``, ``wait``), wherever it was started: a fresh
    interpreter (its ``Popen``), or a fork of the studio's fork server, which reaps it and so is the one that knows
    its exit code (``Launcher.returncode``)."""

    #: the exit code of a forked process that is gone when its fork server is gone too (nobody can say)
    UNKNOWN = "unknown"

    def __init__(self, pid: int, popen=None, launcher: Launcher | None = None):
        self.pid, self.popen, self.launcher = pid, popen, launcher
        try:
            created = psutil.Process(pid).create_time()
        except psutil.Error:
            created = None
        self._status = {"pid": pid, "pid_create_time": created}  # as a run's status.json names its process

    def poll(self):
        """None while it runs; then its exit code (minus the signal that killed it), or :attr:`UNKNOWN`."""
        if self.popen is not None:
            return self.popen.poll()
        if process_alive(self._status):
            return None
        # a zombie or gone: the fork server reaps it as it answers. A zombie whose other threads (torch's) still exit
        # cannot be reaped yet: asked again for up to a second. None from a fork server that is gone: nobody can say
        for _ in range(20):
            code = self.launcher.returncode(self.pid) if self.launcher is not None else None
            if code is not None or self.launcher is None or not self.launcher.ready():
                return self.UNKNOWN if code is None else code
            time.sleep(0.05)
        return self.UNKNOWN

    def wait(self, timeout: float):
        if self.popen is not None:
            return self.popen.wait(timeout=timeout)
        deadline = time.monotonic() + timeout
        while (code := self.poll()) is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the chat model's process {self.pid} still runs")
            time.sleep(0.05)
        return code


class ChatService:
    """``launcher``: the chat model's process is forked from its preloaded fork server where it can (the model loads
    without importing torch and Transformers first), else a fresh interpreter."""

    def __init__(self, runs_dir: str | Path, idle_timeout_s: float = 600.0, launcher: Launcher | None = None):
        self.dir = Path(runs_dir) / CHAT_DIR
        self.idle_timeout_s = idle_timeout_s
        self.launcher = launcher
        self._proc: ModelProcess | None = None
        self._key: tuple[str, str] | None = None
        self._lock = threading.Lock()
        self.restarts = 0
        self.last_cause: str | None = None

    # -- the model process ------------------------------------------------------------------------
    def _state(self) -> dict:
        try:
            return json.loads((self.dir / "chat.json").read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return {}

    def _alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _exit_cause(self, state: dict) -> str:
        """Why the model process is gone: what it wrote in its state file (an idle exit, a load error), else
        how it ended (exit code or signal) and what it logged after it was ready."""
        if state.get("error") and state.get("pid") == getattr(self._proc, "pid", None):
            return str(state["error"])
        rc = self._proc.poll() if self._proc is not None else None
        try:
            if rc is None or rc == ModelProcess.UNKNOWN:
                how = "it ended"
            else:
                how = f"killed by {signal.Signals(-rc).name}" if rc < 0 else f"exit code {rc}"
        except ValueError:
            how = f"killed by signal {-rc}"
        logged = _log_since_ready(self.dir / "chat.log")
        return how + (f": {logged}" if logged else "")

    def stop(self) -> None:
        with self._lock:
            self._stop()

    def _stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            terminate_tree(self._proc.pid, grace_s=2)
        if self._proc is not None:
            try:
                self._proc.wait(timeout=5)
            except Exception:  # noqa: BLE001
                pass
        self._proc, self._key = None, None

    def ensure(self, run_dir: str, checkpoint: str) -> dict:
        """The model process for (run, checkpoint), started (and loaded) if it is not already; another
        model is stopped first. Raises :class:`ChatError` with the cause when it cannot load. When the
        process of this same model had died (or exited after its idle time), the state returned carries
        ``restarted_after``: why it had stopped."""
        key = (str(run_dir), checkpoint or "latest")
        restarted = None
        with self._lock:
            state = self._state()
            if self._key == key and self._alive() and state.get("ready"):
                return state
            if self._key == key and self._key is not None and not self._alive():
                self.restarts += 1
                restarted = self.last_cause = self._exit_cause(state)
            self._stop()
            self.dir.mkdir(parents=True, exist_ok=True)
            (self.dir / "chat.json").unlink(missing_ok=True)
            cmd = [
                sys.executable,
                "-m",
                "engines",
                "chat-serve",
                "--run",
                key[0],
                "--checkpoint",
                key[1],
                "--state-dir",
                str(self.dir),
                "--idle-timeout",
                str(self.idle_timeout_s),
            ]
            # the agent's tools run there: no credential it does not name, its MCP servers' beside its environment
            from engines.isolation.user_env import user_code_envs

            env, servers = user_code_envs(Path(key[0]) / "run.yaml")
            if self.launcher is not None:
                spawned = self.launcher.spawn(cmd[3:], self.dir / "chat.log", env=env, server_env=servers)
                self._proc = ModelProcess(spawned.pid, spawned.popen, self.launcher)
            else:
                popen = spawn_detached(cmd, self.dir / "chat.log", env=env, server_env=servers)
                self._proc = ModelProcess(popen.pid, popen)
            self._key = key
            deadline = time.monotonic() + LOAD_TIMEOUT_S
            while time.monotonic() < deadline:
                state = self._state()
                if state.get("ready") and state.get("pid") == self._proc.pid:
                    return {**state, "restarted_after": restarted} if restarted else state
                if state.get("error") or not self._alive():
                    cause = state.get("error") or _tail(self.dir / "chat.log") or "the process exited"
                    self._stop()
                    raise ChatError(f"the chat model could not load: {cause}")
                time.sleep(0.1)
            self._stop()
            raise ChatError(f"the chat model did not load within {LOAD_TIMEOUT_S:.0f} s")

    # -- a reply ------------------------------------------------------------------------------------
    def stream(
        self,
        run_dir: str,
        checkpoint: str,
        messages: list[dict],
        temperature: float = 0.7,
        max_new_tokens: int | None = None,
    ) -> Iterator[dict]:
        """The model's events for a reply (see engines/inference/chat_server.py), led by ``{"type": "restarted",
        "cause"}`` when the model's process had stopped since the last message and was started again."""
        state = self.ensure(run_dir, checkpoint)
        if state.get("restarted_after"):
            yield {"type": "restarted", "cause": state["restarted_after"]}
        body = json.dumps({"messages": messages, "temperature": temperature, "max_new_tokens": max_new_tokens}).encode()
        req = urllib.request.Request(
            f"http://127.0.0.1:{state['port']}/chat",
            data=body,
            method="POST",
            headers={"Content-Type": "application/json", "X-Chat-Token": state["token"]},
        )
        try:
            with urllib.request.urlopen(req, timeout=600) as resp:
                for line in resp:
                    if line.strip():
                        yield json.loads(line)
        except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError) as e:
            time.sleep(0.2)
            if not self._alive():
                cause = self._exit_cause(self._state()) or str(e)
                self.last_cause = cause
                raise ChatError(f"the chat model's process died ({cause}); it starts again with your next message")
            raise ChatError(f"the chat model did not answer: {e}")

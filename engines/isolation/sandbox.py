"""User code in a child process: its own session, a scrubbed environment, a deadline, the whole
process group killed when it is over.

Every place that runs user code before training (the studio's check worker, ``aworld-train
check``/``train``, :class:`~engines.core.agent_trainer.AgentTrainer`'s checks) runs it through
:class:`IsolatedCall` (or :func:`run_isolated`, its blocking form):

* the call runs in a ``fork()`` that starts a session and process group of its own and is the
  "child subreaper" of whatever it starts, so nothing it forks can slip away: when the call ends,
  times out or is cancelled, every descendant is killed (SIGKILL), those that started sessions of
  their own included;
* it may have at most :func:`~engines.isolation.process_tree.max_processes` processes at once
  (``$AWORLD_USER_CODE_MAX_PROCESSES``, 128), counted by its supervisor (:mod:`engines.isolation.process_tree`):
  over the limit, every other descendant is killed and ``TooManyProcesses`` raised in the user code; code
  that swallows it and goes on forking is killed outright (``kind`` "processes");
* its result comes back as one length-prefixed frame on a pipe, read with a deadline, so a
  grandchild that inherited the pipe cannot keep the reader waiting for an end of file;
* its environment is the one :mod:`engines.isolation.user_env` allows (no studio credentials); the
  variables only its MCP servers may see are in :mod:`engines.isolation.server_env`'s table, not in it;
* what ends it is said plainly: an exception (type, message, traceback), ``sys.exit(n)``,
  ``os._exit(n)`` ("exited with status n"), a signal ("killed by signal 11 (SIGSEGV)"), the time
  limit, or a cancellation — with the last :func:`report_progress` stage of the call (e.g. the
  module being checked), so a message can name whose code it was.

Linux and macOS (``fork``); the subreaper and ``pidfd`` are used where the kernel has them.
"""

from __future__ import annotations

import mmap
import os
import pickle
import select
import shutil
import signal
import struct
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping


from . import forking, process_tree, read_only_files, server_env as server_env_table
from .pids_cgroup import PidsCgroup
from .process_tree import TooManyProcesses, max_processes  # noqa: F401 - re-exported
from .call_result import ForgedResult, describe, load_result, whose  # noqa: F401 - (describe, whose) re-exported
from .privileges import close_inherited_fds, drop_privileges, set_parent_death_signal

DEFAULT_TIMEOUT_S = 60.0
#: seconds; overrides the default time limit of the CLI's and AgentTrainer's checks
TIMEOUT_ENV = "AWORLD_CHECK_TIMEOUT_S"
OUTPUT_TAIL = 4000
_HDR = struct.Struct(">Q")
#: the supervisor keeps the deadline itself this long after the caller's (whose timeout is reported first)
SUPERVISOR_GRACE_S = 2.0

_progress_fd: int | None = None  # in a call's child: where report_progress writes
_stage: str | None = None  # in a call's child: the stage last reported
_inside = False  # True in a call's child


def default_timeout_s() -> float:
    """The time limit of one isolated check: ``$AWORLD_CHECK_TIMEOUT_S``, else 60 s."""
    return seconds_from_env(TIMEOUT_ENV, DEFAULT_TIMEOUT_S)


def seconds_from_env(name: str, default: float) -> float:
    """A time limit from the variable ``name``: its value when a positive number, else ``default``."""
    try:
        value = float(os.environ.get(name, "") or default)
    except ValueError:
        return default
    return value if value > 0 else default


def inside() -> bool:
    """Whether this process is an isolated call's child (its work is already isolated)."""
    return _inside


def report_progress(stage: str, doing: str | None = None) -> None:
    """Called by the work (in its child) as it moves on, e.g. to the next module's check: a call that
    then times out or crashes is reported with this stage. ``doing`` says which user code runs now
    (e.g. "calling score() from reward.py on 3 sample row(s) of train.jsonl"): the failure's message
    ends with it."""
    global _stage
    _stage = str(stage)
    if _progress_fd is not None:
        line = str(stage) + (f"\t{doing}" if doing else "")
        try:
            os.write(_progress_fd, (line.replace("\n", " ") + "\n").encode())
        except OSError:
            pass


def report_doing(doing: str | None) -> None:
    """Say which user code runs now within the current stage (e.g. "importing reward.py"), or ``None``
    once it is done: a call that hangs or dies there is reported with it."""
    if _progress_fd is not None and _stage is not None:
        report_progress(_stage, doing)


@dataclass
class Outcome:
    """How an isolated call ended. ``ok``: ``value`` is the function's return value. Otherwise
    ``kind`` is exception | exit | crash | processes | timeout | cancelled | bug and ``error`` says what happened."""

    ok: bool
    value: Any = None
    kind: str = ""
    error: str = ""
    stage: str | None = None
    output: str = ""
    traceback: str = ""
    exit_status: int | None = None
    signal: int | None = None
    seconds: float = 0.0
    killed: list[int] = field(default_factory=list)  # descendants killed when the call ended

    def failure(self) -> dict[str, Any]:
        """The failure as plain data (what the check worker sends to the studio)."""
        return {
            "error": self.error,
            "kind": self.kind,
            "stage": self.stage,
            "output": self.output,
            "traceback": self.traceback,
            "exit_status": self.exit_status,
            "signal": self.signal,
        }


def signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


#: the supervisor's pids cgroup for its call, where one could be made (engines.isolation.pids_cgroup)
_cgroup: PidsCgroup | None = None
#: the supervisor's private temporary folder for its call (engines.isolation.read_only_files), removed when it ends
_temp: str | None = None


def _end_supervision() -> None:
    if _cgroup is not None:
        _cgroup.remove()
    if _temp is not None:
        shutil.rmtree(_temp, ignore_errors=True)


def _end_everything(signum, frame) -> None:  # noqa: ARG001 - a signal handler
    """The supervisor's caller died (parent-death signal), its deadline passed (SIGALRM) or it was told
    to stop: nothing it supervises outlives it."""
    process_tree.kill_descendants(os.getpid())
    _end_supervision()
    os._exit(128 + signum)


def _supervise(
    fn: Callable[..., Any],
    kwargs: Mapping[str, Any],
    w: int,
    pw: int,
    out_fd: int,
    env: Mapping[str, str] | None,
    parent: int = 0,
    timeout_s: float = 0.0,
    limit: int = 0,
    shm: mmap.mmap | None = None,
    writable: tuple[str, ...] = (),
) -> None:
    """The call's first child: leads a new session, is the subreaper of everything below it, forks the
    worker, and when the worker ends kills whatever it left behind, then ends the way the worker did
    (its exit status, or the signal that killed it). Never runs user code itself. It dies with its
    caller (a parent-death signal: a CLI killed from outside leaves nothing running) and keeps the
    deadline itself (``timeout_s`` + :data:`SUPERVISOR_GRACE_S`), whatever becomes of the caller."""
    global _cgroup, _temp
    try:
        os.setsid()
        process_tree.become_subreaper()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGALRM):
            signal.signal(sig, _end_everything)
        set_parent_death_signal(signal.SIGTERM)
        if parent and os.getppid() != parent:  # the caller died before the signal was set
            os._exit(128 + signal.SIGTERM)
        if timeout_s > 0:
            signal.setitimer(signal.ITIMER_REAL, timeout_s + SUPERVISOR_GRACE_S)
        _cgroup = PidsCgroup.make(limit)  # the kernel's cap on a burst of forks, where the machine allows one
        _temp = read_only_files.private_temp_folder()
        worker = forking.fork()
        if worker == 0:
            _work(fn, kwargs, w, pw, out_fd, env, limit, shm, writable, _temp)
        os.close(w)
        os.close(pw)
        status = process_tree.watch(worker, limit, shm)  # orphans re-parented to us are reaped there too
        signal.setitimer(signal.ITIMER_REAL, 0)
        process_tree.kill_descendants(os.getpid())
        while True:
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                break
        _end_supervision()
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            for step in (
                lambda: __import__("resource").setrlimit(__import__("resource").RLIMIT_CORE, (0, 0)),
                lambda: signal.signal(sig, signal.SIG_DFL),  # (not for SIGKILL: it needs none)
                lambda: signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig]),
                lambda: os.kill(os.getpid(), sig),
            ):
                try:
                    step()
                except (OSError, ValueError):
                    pass
            os._exit(128 + sig)
        os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 70)
    except BaseException:  # noqa: BLE001
        os._exit(70)


def _after_fork_torch() -> None:
    """A forked child of a process that already ran torch's intra-op thread pool (OpenMP) hangs in
    its first parallel torch op: the pool's threads did not come along with the fork. One thread in
    the child never enters the pool (a reward model dry-run on a few rows does not need more)."""
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "set_num_threads"):
        torch.set_num_threads(1)


def _work(
    fn: Callable[..., Any],
    kwargs: Mapping[str, Any],
    w: int,
    pw: int,
    out_fd: int,
    env: Mapping[str, str] | None,
    limit: int = 0,
    shm: mmap.mmap | None = None,
    writable: tuple[str, ...] = (),
    temp: str | None = None,
) -> None:
    """The worker: the environment it may see (and the folders it may write into), the work, one result frame."""
    global _progress_fd, _inside
    code = 0
    try:
        _inside = True
        _progress_fd = pw
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGHUP, signal.SIGALRM):
            signal.signal(sig, signal.SIG_DFL)
        set_parent_death_signal(signal.SIGKILL)  # the supervisor gone (killed): the worker goes too
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        # nothing the caller had open (the check worker's protocol, other calls' pipes, its log files)
        close_inherited_fds({w, pw})
        # whatever the parent made of them (a test runner's capture, a closed terminal): the fds above
        sys.stdin = os.fdopen(0, "r", encoding="utf-8", closefd=False)  # /dev/null
        sys.stdout = os.fdopen(1, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
        sys.stderr = os.fdopen(2, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
        import faulthandler  # a crash's trace goes to the call's output, never to the parent's terminal

        faulthandler.enable(file=sys.stderr)
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        if _cgroup is not None:  # before the capabilities go: cgroup.procs is root's to write
            _cgroup.join()
        # no capability: the caller's, the studio's and the shell's environment and memory cannot be read, and no file
        # written but in ``writable`` and the call's own temporary folder (read_only_files.py)
        drop_privileges(writable=writable, temp_folder=temp)
        _after_fork_torch()

        process_tree.raise_in_worker(limit, shm)  # TooManyProcesses in the user code, over the limit
        try:
            try:
                result: tuple[bool, Any] = (True, fn(**dict(kwargs)))
            finally:
                signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # the limit ends with the user code
        except SystemExit as e:
            result = (
                False,
                {
                    "kind": "exit",
                    "error": f"called sys.exit({e.code!r})",
                    "exit_status": e.code if isinstance(e.code, int) else 1,
                    "traceback": traceback.format_exc(limit=8),
                },
            )
        except BaseException as e:  # noqa: BLE001 - user code may raise anything
            result = (
                False,
                {"kind": "exception", "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc(limit=8)},
            )
        try:
            data = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:  # noqa: BLE001
            data = pickle.dumps((False, {"kind": "bug", "error": f"the result cannot be sent back: {e}"}))
        view = memoryview(_HDR.pack(len(data)) + data)
        while view:
            n = os.write(w, view)
            view = view[n:]
    except BaseException:  # noqa: BLE001 - a broken pipe: the parent gave up on this call
        code = 70
    finally:
        os._exit(code)


def _read_chunk(fd: int, size: int) -> bytes:
    """What a non-blocking pipe has now (b"" when nothing yet, at its end, or closed)."""
    try:
        return os.read(fd, size)
    except OSError:  # BlockingIOError included: nothing yet
        return b""


class IsolatedCall:
    """One call of ``fn(**kwargs)`` in a child (started at once). Drive it with :meth:`fds` /
    :meth:`pump` / :attr:`deadline` from an event loop (the studio's worker runs several at once),
    or call :meth:`wait`. :meth:`finish` returns the :class:`Outcome` and leaves nothing running."""

    def __init__(
        self,
        fn: Callable[..., Any],
        kwargs: Mapping[str, Any] | None = None,
        *,
        timeout_s: float | None = None,
        env: Mapping[str, str] | None = None,
        server_env: Mapping[str, str] | None = None,
        writable: Iterable[str | os.PathLike] = (),
    ):
        """``writable``: the folders the call may write into besides its own temporary folder (on Linux as root every
        other file is read-only to it, :mod:`engines.isolation.read_only_files`)."""
        self.timeout_s = float(timeout_s or default_timeout_s())
        self.started = time.monotonic()
        self.deadline = self.started + self.timeout_s
        self._out = tempfile.TemporaryFile()
        self.max_processes = process_tree.max_processes()
        self._shm = process_tree.shared()  # the supervisor says there what it found (MAP_SHARED)
        r, w = os.pipe()
        pr, pw = os.pipe()
        parent = os.getpid()
        pid = forking.fork()
        if pid == 0:
            os.close(r)
            os.close(pr)
            server_env_table.install(server_env)  # the call's MCP servers' variables, never in its environment
            writes = tuple(os.fspath(p) for p in writable)
            args = (w, pw, self._out.fileno(), env, parent, self.timeout_s, self.max_processes, self._shm, writes)
            _supervise(fn, kwargs or {}, *args)
        os.close(w)
        os.close(pw)
        os.set_blocking(r, False)
        os.set_blocking(pr, False)
        self.pid = pid
        self._r, self._pr = r, pr
        self._pidfd: int | None = None
        try:
            self._pidfd = os.pidfd_open(pid)  # readable once the child has exited
        except (AttributeError, OSError):
            pass
        self._buf = bytearray()
        self._progress = b""
        self._frame: bytes | None = None
        self._status: int | None = None  # waitpid status once reaped
        self._ended: str | None = None  # timeout | cancelled
        self._reason = ""
        self._killed: list[int] = []
        self._outcome: Outcome | None = None

    # -- event-loop interface ---------------------------------------------------------------------
    def fds(self) -> list[int]:
        """What to wait on: the result pipe, the progress pipe, and the child's pidfd."""
        if self.done:
            return []
        return [fd for fd in (self._r, self._pr, self._pidfd) if fd is not None]

    @property
    def done(self) -> bool:
        return self._frame is not None or self._status is not None or self._ended is not None

    @property
    def stage(self) -> str | None:
        return self._last_progress()[0]

    @property
    def doing(self) -> str | None:
        """What the call last said it was doing within its stage (``report_progress(stage, doing)``)."""
        return self._last_progress()[1]

    def _last_progress(self) -> tuple[str | None, str | None]:
        lines = self._progress.decode("utf-8", errors="replace").splitlines()
        if not lines:
            return None, None
        stage, _, doing = lines[-1].partition("\t")
        return stage, doing or None

    def pump(self, ready: Iterable[int] = ()) -> bool:
        """Read what is there (``ready``: fds that select() found readable; reading is non-blocking,
        so it may also be called blindly). Returns :attr:`done`."""
        if self.done:
            return True
        self._read_progress()
        self._read_result()
        if self._frame is None:
            self._poll_exit()
            if self._status is not None:
                self._read_result()  # written just before it exited
        if not self.done and time.monotonic() >= self.deadline:
            self.stop("timeout")
        return self.done

    def stop(self, why: str = "cancelled", reason: str = "") -> None:
        """End the call now (``why``: timeout | cancelled): its whole process tree is killed."""
        if self.done:
            return
        self._ended, self._reason = why, reason
        self._kill_tree()

    def wait(self) -> Outcome:
        """Block until the call ends (its result, its exit, or its deadline); then :meth:`finish`.
        Interrupted (Ctrl-C: KeyboardInterrupt, or any exception), it kills the call first."""
        try:
            while not self.done:
                left = max(0.0, self.deadline - time.monotonic())
                fds = self.fds()
                timeout = left if self._pidfd is not None else min(left, 0.05)
                ready, _, _ = select.select(fds, [], [], timeout)
                self.pump(ready)
        except BaseException:
            self.stop("cancelled", "interrupted")
            self.finish()
            raise
        return self.finish()

    # -- internals ----------------------------------------------------------------------------------
    def _read_progress(self) -> None:
        while chunk := _read_chunk(self._pr, 65536):
            self._progress = (self._progress + chunk)[-4096:]

    def _read_result(self) -> None:
        while self._frame is None and (chunk := _read_chunk(self._r, 1 << 20)):
            self._buf += chunk
            if len(self._buf) >= _HDR.size:
                (n,) = _HDR.unpack_from(self._buf)
                if len(self._buf) >= _HDR.size + n:
                    self._frame = bytes(self._buf[_HDR.size : _HDR.size + n])

    def _poll_exit(self) -> None:
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            pid, status = self.pid, 0
        if pid:
            self._status = status

    def _kill_tree(self) -> None:
        """SIGKILL the call's process group and every descendant (frozen first, so none forks away:
        the supervisor is their subreaper, so those that left the group are still below it)."""
        try:
            os.killpg(self.pid, signal.SIGSTOP)
        except (ProcessLookupError, PermissionError):
            pass
        self._killed += process_tree.kill_descendants(self.pid)
        for kill in (lambda: os.killpg(self.pid, signal.SIGKILL), lambda: os.kill(self.pid, signal.SIGKILL)):
            try:
                kill()
            except (ProcessLookupError, PermissionError):
                pass

    def finish(self) -> Outcome:
        """The outcome; reaps the child and kills whatever of its group is left. Idempotent."""
        if self._outcome is not None:
            return self._outcome
        if not self.done:
            self.stop("cancelled", "finished before it ended")
        if self._status is None and self._ended is None:
            # it wrote its result: its supervisor is ending the worker's leftovers; give it a moment
            deadline = time.monotonic() + 5.0
            while self._status is None and time.monotonic() < deadline:
                self._poll_exit()
                if self._status is None:
                    time.sleep(0.005)
            if self._status is None:
                self._kill_tree()
        try:
            os.killpg(self.pid, signal.SIGKILL)  # anything still in the call's group
        except (ProcessLookupError, PermissionError):
            pass
        if self._status is None:
            try:
                _, self._status = os.waitpid(self.pid, 0)
            except ChildProcessError:
                self._status = 0
        self._read_progress()
        for fd in (self._r, self._pr, self._pidfd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._out.seek(0, os.SEEK_END)
        size = self._out.tell()
        self._out.seek(max(0, size - OUTPUT_TAIL))
        output = self._out.read().decode("utf-8", errors="replace")
        self._out.close()
        seconds = round(time.monotonic() - self.started, 3)
        base = dict(stage=self.stage, output=output, seconds=seconds, killed=sorted(set(self._killed)))
        doing = f" while {self.doing}" if self.doing else ""
        most, _, hard = process_tree.read(self._shm)
        self._shm.close()
        if hard and self._frame is None and self._ended is None:
            self._outcome = Outcome(
                False,
                kind="processes",
                error=f"{process_tree.too_many(most, self.max_processes)}; it went on after {process_tree.MAX_VIOLATIONS} "
                "such errors, "
                f"so it was killed{doing}",
                **base,
            )
        elif self._frame is not None:
            try:
                ok, payload = load_result(self._frame)
            except ForgedResult as e:  # the call's own code wrote to its result pipe: nothing of it is run here
                ok, payload = False, {"kind": "forged", "error": f"sent back a result that was refused: {e}"}
            except Exception as e:  # noqa: BLE001
                ok, payload = False, {"kind": "bug", "error": f"the result could not be read: {e}"}
            if ok:
                self._outcome = Outcome(True, payload, **base)
            else:
                self._outcome = Outcome(
                    False,
                    kind=payload.get("kind", "exception"),
                    error=payload.get("error", ""),
                    traceback=payload.get("traceback", ""),
                    exit_status=payload.get("exit_status"),
                    **base,
                )
        elif self._ended == "timeout":
            self._outcome = Outcome(
                False,
                kind="timeout",
                error=f"timed out after {self.timeout_s:g} s{doing} (the call and everything it started were killed)",
                **base,
            )
        elif self._ended == "cancelled":
            self._outcome = Outcome(
                False, kind="cancelled", error="cancelled" + (f": {self._reason}" if self._reason else ""), **base
            )
        else:
            status = self._status or 0
            if os.WIFSIGNALED(status):
                sig = os.WTERMSIG(status)
                self._outcome = Outcome(
                    False,
                    kind="crash",
                    signal=sig,
                    error=f"was killed by signal {sig} ({signal_name(sig)}){doing}",
                    **base,
                )
            else:
                code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
                self._outcome = Outcome(
                    False,
                    kind="exit",
                    exit_status=code,
                    error=f"exited with status {code} (os._exit or a crash in native code) "
                    f"before it returned{',' if doing else ''}{doing}",
                    **base,
                )
        return self._outcome


def run_isolated(
    fn: Callable[..., Any],
    kwargs: Mapping[str, Any] | None = None,
    *,
    timeout_s: float | None = None,
    env: Mapping[str, str] | None = None,
    server_env: Mapping[str, str] | None = None,
    writable: Iterable[str | os.PathLike] = (),
) -> Outcome:
    """``fn(**kwargs)`` in an :class:`IsolatedCall`; blocks until it ends. Never raises for what the
    call does (see :class:`Outcome`)."""
    return IsolatedCall(fn, kwargs, timeout_s=timeout_s, env=env, server_env=server_env, writable=writable).wait()


if sys.platform == "win32":  # pragma: no cover
    raise ImportError("engines.isolation.sandbox needs fork() (Linux or macOS)")

"""The run directory: the only channel between a training process and any UI.

Layout of ``<runs>/<run_id>/`` (written by the training process, append-only, flushed per write):

- ``run.yaml``      the complete run spec (agent, data, reward, engine, config) that reproduces the run
- ``metrics.jsonl`` one object per logged step: ``step``, ``time`` and canonical keys
                    (``loss, reward, reward_std, rewards/<name>, kl, lr, completion_length, step_time``)
                    plus every engine-specific key
- ``samples.jsonl`` a few rollouts per step: prompt, trajectory (turns, tool calls/results), rewards
- ``status.json``   ``state`` (queued/running/stopping/stopped/finished/failed), pid, heartbeat, step/total
- ``events.jsonl``  started, checkpoint, stop_requested, finished, stopped, failed (with ``cause``)
- ``train.log``     the process's stdout and stderr
- ``checkpoints/``  checkpoints;  ``tensorboard/`` TensorBoard event files
- ``STOP``          a stop request: any process may create it; training stops at the next step boundary
- ``label.json``    the run's name and note, the user's to set and change (studio, CLI); engines never read it

A write the run directory refuses (an immutable file, a read-only mount, a full disk, a file replaced by a
directory) raises :class:`RunDirWriteError` ("cannot write metrics.jsonl: [Errno 1] Operation not permitted"):
the training process ends the run ``failed`` with that cause. When status.json itself refuses the final status,
the run process writes it to ``<runs>/.fallback/<run_id>/status.json`` (and a checkpoint it could not save in the
run directory to ``.../checkpoints/``): the run process stays the one writer of its status, and every reader of
:meth:`RunDir.read_status` (the studio, ``aworld-train runs``) sees the newer of the two.
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import functools
import json
import math
import os
import re
import secrets
import socket
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from ..files.yaml_input import load_yaml_text
from ..results.check_result import CheckError
from .append_watch import AppendWatch
from .json_lines import dumps_json, dumps_line, iter_jsonl, read_json_object
from .no_links import read_no_link, replacing

_THREAD_LOCKS: dict[str, threading.Lock] = {}  # a run directory's lock, per process (RunDir.locked)
_THREAD_LOCKS_GUARD = threading.Lock()
_LOCAL = threading.local()


def _after_fork_in_child() -> None:  # a lock another thread held at the fork would never be released here
    global _THREAD_LOCKS, _THREAD_LOCKS_GUARD, _LOCAL
    _THREAD_LOCKS, _THREAD_LOCKS_GUARD, _LOCAL = {}, threading.Lock(), threading.local()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _held_locks() -> set[str]:
    """The run directories whose lock this thread holds."""
    if not hasattr(_LOCAL, "held"):
        _LOCAL.held = set()
    return _LOCAL.held


SPEC_FILE = "run.yaml"
METRICS_FILE = "metrics.jsonl"
SAMPLES_FILE = "samples.jsonl"
STATUS_FILE = "status.json"
EVENTS_FILE = "events.jsonl"
LOG_FILE = "train.log"
STOP_FILE = "STOP"
LABEL_FILE = "label.json"
#: the most of run.yaml read; of label.json and STOP (user code in the run can write any of them)
SPEC_MAX_BYTES, SMALL_FILE_MAX_BYTES = 4 << 20, 64 << 10
LOCK_FILE = ".lock"  # serializes read-modify-write of status.json between processes
_NO_LINK = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # a link or a pipe planted at a run's lock is refused
#: <runs>/.fallback/<run_id>/: the final status (and checkpoint) a refusing run dir did not take
FALLBACK_DIR = ".fallback"
CHECKPOINTS_DIR = "checkpoints"
TENSORBOARD_DIR = "tensorboard"

QUEUED, RUNNING, STOPPING, STOPPED, FINISHED, FAILED = "queued", "running", "stopping", "stopped", "finished", "failed"
ACTIVE_STATES = (QUEUED, RUNNING, STOPPING)
TERMINAL_STATES = (STOPPED, FINISHED, FAILED)

# Canonical metric names: every engine writes these to metrics.jsonl (when it has them), next to its
# own keys, so that any reader (the studio, the CLI) plots them without knowing the engine.
LOSS, REWARD, REWARD_STD, KL, LR = "loss", "reward", "reward_std", "kl", "lr"
COMPLETION_LENGTH, STEP_TIME, ENTROPY, GRAD_NORM = "completion_length", "step_time", "entropy", "grad_norm"
CANONICAL_METRICS = (LOSS, REWARD, REWARD_STD, KL, LR, COMPLETION_LENGTH, STEP_TIME, ENTROPY, GRAD_NORM) + (
    "reward_max", "reward_min", "epoch", "num_turns", "tool_calls", "critic_loss"
)  # fmt: skip
REWARD_TERM_PREFIX = "rewards/"  # rewards/<name>: one reward function's mean
EVAL_REWARD = "eval/reward"  # reward on the test set, scored during training
EVAL_TRAIN_REWARD = "eval_train/reward"  # the same on training rows, when there is no test set
#: the log keys of Transformers' Trainer and TRL's GRPO (TRL and ms-swift log through them) → canonical names
TRAINER_LOG_KEYS = {
    "loss": LOSS,
    "reward": REWARD,
    "reward_std": REWARD_STD,
    "kl": KL,
    "learning_rate": LR,
    "completions/mean_length": COMPLETION_LENGTH,
    "step_time": STEP_TIME,
    "entropy": ENTROPY,
    "grad_norm": GRAD_NORM,
}


def canonical_row(logs: dict[str, Any], names: dict[str, str], skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """A trainer's log → a metrics row: every numeric value under its own key (but ``skip``), plus its canonical
    name (``names``: log key → canonical), a reward term's mean as ``rewards/<term>`` and its evaluation's as
    ``eval/rewards/<term>``."""
    out: dict[str, Any] = {}
    for key, value in logs.items():
        if key in skip or not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        out[key] = value
        if key in names:
            out[names[key]] = value
        elif key.startswith("rewards/") and key.endswith("/mean"):
            out[REWARD_TERM_PREFIX + key[len("rewards/") : -len("/mean")]] = value
        elif key.startswith("eval_rewards/") and key.endswith("/mean"):
            out["eval/" + key[len("eval_") : -len("/mean")]] = value
    return out


def step_log_line(step: int, total: int | None, values: dict[str, Any], steps_per_s: float | None = None) -> str:
    """The line a run prints to train.log per logged step, as trainers usually do:
    ``step 12/400 · reward 0.512 · loss 0.0213 · kl 0.0012 · 3.21 steps/s``."""
    parts = [f"step {step}/{total}" if total else f"step {step}"]
    for key, digits in ((REWARD, 3), (LOSS, 4), (KL, 4), (EVAL_REWARD, 3)):
        value = values.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            parts.append(f"{key} {value:.{digits}f}")
    if steps_per_s:
        parts.append(f"{steps_per_s:.2f} steps/s")
    return " · ".join(parts)


def new_run_id(engine: str, label: str | None = None) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    parts = [stamp, engine]
    if label:
        parts.append("".join(c if c.isalnum() or c in "-_" else "-" for c in label)[:32])
    parts.append(secrets.token_hex(2))
    return "-".join(parts)


def atomic_write_text(path: Path, text: str, durable: bool = True) -> None:
    """Readers see the old or the new text, never a mix. ``durable`` also syncs it to disk first
    (survives a power cut); a per-step heartbeat skips that. A failed write leaves no temporary file, and no write
    goes through a link planted where the file or its temporary one goes (:func:`~.no_links.replacing`)."""
    with replacing(path, durable=durable) as f:
        f.write(text.encode("utf-8"))


@functools.lru_cache(maxsize=64)
def _parsed_spec(text: str) -> tuple[dict, str | None]:
    """run.yaml's text → (its mapping, or {} and what is wrong): parsed once per process for a text (the run process
    reads its spec for the slot, the trainer's arguments and the resume; the studio each run's for its table), the
    callers given copies (:meth:`RunDir.read_spec`)."""
    try:  # the one loader for user YAML: its depth cap (3000 levels recursed past Python's limit), size, aliases
        data = load_yaml_text(text, module="run", where=SPEC_FILE) if text else None
    except CheckError as e:  # what is wrong, and where
        return {}, " ".join(str(e).removeprefix("[run] ").split(" — ")[0].split())[:300]
    except Exception as e:  # anything else is this file's problem too, never the list's
        return {}, f"{SPEC_FILE} cannot be read: {type(e).__name__}: {' '.join(str(e).split())[:200]}"
    if data is None:
        return {}, None
    if not isinstance(data, dict):
        return {}, f"{SPEC_FILE} is not a mapping of settings (it holds a {type(data).__name__})"
    return data, None


class RunDirWriteError(OSError):
    """A write the run directory refused: ``str()`` is "cannot write <file>: [Errno N] <reason>" (the file
    relative to the run directory), the run's failure cause; :attr:`detail` adds where and how to fix it."""

    def __init__(self, name: str, error: OSError, run_path: Path):
        super().__init__(error.errno, error.strerror or str(error))
        self.file, self.error, self.run_path = name, error, run_path

    def __str__(self) -> str:
        why = f"[Errno {self.errno}] {self.strerror}" if self.errno is not None else str(self.error)
        return f"cannot write {self.file}: {why}"

    @property
    def detail(self) -> str:
        return (
            f"{self} (in {self.run_path}): the run directory stopped taking writes — an immutable flag "
            "(lsattr, chattr -i), a read-only mount, a full disk (df) or a file replaced by a folder; make it "
            "writable, then resume from the last checkpoint"
        )


def run_dir_write_error(e: BaseException | None, run_path: Path) -> RunDirWriteError | None:
    """The refused run-directory write behind ``e`` (itself, its cause or context): a :class:`RunDirWriteError`,
    or an OSError naming a file inside ``run_path`` (a checkpoint the trainer could not save); None otherwise."""
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, RunDirWriteError):
            return e
        name = getattr(e, "filename", None) if isinstance(e, OSError) else None
        if name:
            try:
                rel = Path(os.fsdecode(name)).resolve().relative_to(run_path)
            except ValueError:
                rel = None
            if rel is not None:
                return RunDirWriteError(str(rel), e, run_path)
        e = e.__cause__ or e.__context__
    return None


class RunDir:
    """Reader and writer of one run directory."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path).resolve()
        self._appended = AppendWatch()  # the jsonl files this process appended to (one deleted is said)

    # -- creation -------------------------------------------------------------------------
    @classmethod
    def create(cls, runs_dir: str | os.PathLike, engine: str, label: str | None = None) -> "RunDir":
        base = Path(runs_dir)
        base.mkdir(parents=True, exist_ok=True)
        while True:
            path = base / new_run_id(engine, label)
            try:
                path.mkdir()
                break
            except FileExistsError:  # pragma: no cover - 16 bits of randomness per second
                continue
        return cls(path)

    @property
    def run_id(self) -> str:
        return self.path.name

    def file(self, name: str) -> Path:
        return self.path / name

    @property
    def checkpoints_dir(self) -> Path:
        """Where the run's trainer writes its checkpoints (readers use :attr:`checkpoints_source`)."""
        return self.path / CHECKPOINTS_DIR

    @property
    def cluster_checkpoints(self) -> str | None:
        """``host:path`` of the checkpoints of a run trained as a Ray job (status.json ``ray_run_dir``: its folder
        on the cluster, where they stay), else None."""
        where = self.read_status().get("ray_run_dir")
        return f"{where}/{CHECKPOINTS_DIR}" if isinstance(where, str) and ":" in where else None

    @property
    def checkpoints_source(self) -> Path:
        """Where the run's checkpoints are read from (Evaluate, Chat, Export, the ``checkpoint`` argument): its
        checkpoints/, or — for a run trained on a Ray cluster — that folder's on the cluster when this machine sees
        its path (a head on this machine, storage the cluster shares); else its checkpoints/ still (none there:
        :meth:`checkpoints_unreachable` says where they are)."""
        # a link is no checkpoints folder (user code can plant one: the studio then listed and zipped any folder)
        if (
            not self.checkpoints_dir.is_symlink()
            and self.checkpoints_dir.is_dir()
            and any(self.checkpoints_dir.iterdir())
        ):
            return self.checkpoints_dir
        there = self.cluster_checkpoints
        if there is not None:
            folder = Path(there.split(":", 1)[1])
            if folder.is_dir() and not folder.is_symlink():
                return folder
        return self.checkpoints_dir

    def checkpoints_unreachable(self) -> str | None:
        """``host:path`` of a cluster run's checkpoints when this machine has none of them and does not see that
        path (what to say instead of "no checkpoint yet"), else None."""
        there = self.cluster_checkpoints
        if there is None or Path(there.split(":", 1)[1]).is_dir() or _checkpoints_in(self.checkpoints_dir):
            return None
        return there

    @property
    def tensorboard_dir(self) -> Path:
        return self.path / TENSORBOARD_DIR

    @property
    def log_path(self) -> Path:
        return self.path / LOG_FILE

    def exists(self) -> bool:
        return (self.path / SPEC_FILE).exists() or (self.path / STATUS_FILE).exists()

    # -- spec -----------------------------------------------------------------------------
    def write_spec(self, spec: dict) -> None:
        atomic_write_text(self.path / SPEC_FILE, yaml.safe_dump(spec, sort_keys=False, allow_unicode=True))

    def read_spec(self) -> dict:
        """run.yaml as a mapping; {} when it is missing or malformed (:meth:`spec_problem` says how)."""
        spec, _ = self._spec_and_problem()
        return spec

    def spec_problem(self) -> str | None:
        """Why run.yaml cannot be read as a run's spec (None when it can, or when there is none)."""
        return self._spec_and_problem()[1]

    def spec_text(self) -> str:
        """run.yaml's text ("" when there is none): a plain file of at most :data:`SPEC_MAX_BYTES`, never through a
        link or waited on (user code in the run can put a pipe there); ``OSError`` or ``UnicodeDecodeError`` else."""
        try:
            return read_no_link(self.path / SPEC_FILE, SPEC_MAX_BYTES).decode("utf-8")
        except FileNotFoundError:
            return ""

    def _spec_and_problem(self) -> tuple[dict, str | None]:
        try:
            text = self.spec_text()
        except (OSError, UnicodeDecodeError) as e:
            return {}, f"{SPEC_FILE} cannot be read: {e}"
        data, problem = _parsed_spec(text)
        return copy.deepcopy(data), problem

    # -- status ---------------------------------------------------------------------------
    @property
    def fallback_dir(self) -> Path:
        """``<runs>/.fallback/<run_id>/``: where the run process puts the final status (and a checkpoint) its
        run directory refused."""
        return self.path.parent / FALLBACK_DIR / self.run_id

    def read_status(self) -> dict:
        """status.json, or the fallback status the run process wrote when status.json refused it (the newer of
        the two by heartbeat, merged over the other)."""
        status = read_json_object(self.path / STATUS_FILE)
        fallback = read_json_object(self.fallback_dir / STATUS_FILE)
        if fallback and (fallback.get("heartbeat") or 0) >= (status.get("heartbeat") or 0):
            return {**status, **fallback}
        return status

    def write_status(self, durable: bool = True, **fields: Any) -> dict:
        """Merge ``fields`` into status.json atomically, under the run directory's lock (a read-modify-write
        by two writers at once lost one's fields: a thread's progress update put ``running`` back over the
        ``stopping`` another had just written); always refreshes the heartbeat. Pass ``durable=False`` for
        progress-only updates (no fsync: see :func:`atomic_write_text`)."""
        with self.locked():
            status = self.read_status()
            status.update(fields)
            status["heartbeat"] = time.time()
            status.setdefault("run_id", self.run_id)
            with self._writing(STATUS_FILE):
                atomic_write_text(self.path / STATUS_FILE, dumps_json(status, indent=1), durable=durable)
        return status

    def end(self, kind: str, event: dict[str, Any] | None = None, **fields: Any) -> dict:
        """Record how the run ended, by its own process: the ``kind`` event, then ``fields`` in status.json. When
        status.json refuses them, the status goes to :attr:`fallback_dir` (with ``fallback_reason``), which
        :meth:`read_status` reads; an events.jsonl that refuses the event is named there too. Raises only when
        neither place takes the status."""
        refused: list[str] = []
        try:
            self.event(kind, **(event or {}))
        except RunDirWriteError as e:
            refused.append(str(e))
        try:
            return self.write_status(**fields)
        except RunDirWriteError as e:
            refused.append(str(e))
        status = {**self.read_status(), **fields, "heartbeat": time.time(), "fallback_reason": "; ".join(refused)}
        status.setdefault("run_id", self.run_id)
        self.fallback_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.fallback_dir / STATUS_FILE, dumps_json(status, indent=1))
        return status

    @contextlib.contextmanager
    def _writing(self, name: str):
        """A refused write of ``name`` (in this run directory) raised as :class:`RunDirWriteError`."""
        try:
            yield
        except RunDirWriteError:
            raise
        except OSError as e:
            raise RunDirWriteError(name, e, self.path) from e

    @contextlib.contextmanager
    def locked(self):
        """An exclusive lock on this run directory (``.lock``): hold it to read status.json, decide and
        write it without another process, or another thread of this one, doing the same in between.
        Re-entrant within a thread (a holder may call :meth:`write_status`)."""
        key = str(self.path.resolve())
        held = _held_locks()
        if key in held:
            yield self
            return
        with _THREAD_LOCKS_GUARD:
            thread_lock = _THREAD_LOCKS.setdefault(key, threading.Lock())
        with thread_lock:  # flock excludes other processes; within one process, this excludes other threads
            try:
                # never through a link planted there (the studio, as root, created the link's target)
                fd = os.open(self.path / LOCK_FILE, os.O_RDWR | os.O_CREAT | _NO_LINK, 0o644)
            except FileNotFoundError:
                raise
            except OSError as e:  # an immutable or read-only .lock still locks (flock needs no write access)
                try:
                    fd = os.open(self.path / LOCK_FILE, os.O_RDONLY | _NO_LINK)
                except OSError:
                    raise RunDirWriteError(LOCK_FILE, e, self.path) from e
            held.add(key)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield self
            finally:
                held.discard(key)
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)

    def mark_process(self, state: str, **fields: Any) -> dict:
        """Record that *this* process owns the run (pid, its start time and host) in ``state``."""
        import psutil

        me = psutil.Process()
        return self.write_status(
            state=state, pid=me.pid, pid_create_time=me.create_time(), host=socket.gethostname(), **fields
        )

    # -- append-only streams --------------------------------------------------------------
    def _append(self, name: str, *rows: dict) -> None:
        """``rows`` appended to ``name`` in one write (a step's sample groups: one open, not one per row)."""
        path = self.path / name
        lost = self._appended.lost(path)
        if lost:  # deleted, truncated or replaced behind the writer's back: say what is gone
            self.event("warning", **lost)
        with self._writing(name), open(path, "a", encoding="utf-8") as f:
            before = os.fstat(f.fileno()).st_size
            f.write("".join(dumps_line(row) for row in rows))
            f.flush()
            self._appended.wrote(path, f.fileno(), before, list(rows))

    def append_metrics(self, step: int, values: dict[str, Any], when: float | None = None) -> dict:
        row = {"step": int(step), "time": when if when is not None else time.time()}
        row.update({k: v for k, v in values.items() if k not in ("step", "time")})
        self._append(METRICS_FILE, row)
        return row

    def append_sample(self, sample: dict) -> None:
        self._append(SAMPLES_FILE, sample)

    def append_samples(self, samples: list[dict]) -> None:
        """Several samples (a step's prompt groups) in one write."""
        if samples:
            self._append(SAMPLES_FILE, *samples)

    def append_rows(self, name: str, rows: list[dict]) -> None:
        """Rows written elsewhere (a cluster job's copy of this run) appended as they are, in one write."""
        if name not in (METRICS_FILE, SAMPLES_FILE, EVENTS_FILE):
            raise ValueError(f"{name} is not one of the run's row files")
        if rows:
            self._append(name, *rows)

    def event(self, kind: str, **fields: Any) -> dict:
        row = {"time": time.time(), "event": kind, **fields}
        self._append(EVENTS_FILE, row)
        return row

    def read_jsonl(self, name: str) -> list[dict]:
        return list(iter_jsonl(self.path / name))

    # -- the user's name and note ------------------------------------------------------------
    def read_label(self) -> dict:
        """``{"name": str, "note": str}`` (empty strings when never set, or when label.json is no small JSON object
        file: user code in the run can write it)."""
        data = read_json_object(self.path / LABEL_FILE, SMALL_FILE_MAX_BYTES)
        return {"name": str(data.get("name") or ""), "note": str(data.get("note") or "")}

    def write_label(self, name: str | None = None, note: str | None = None) -> dict:
        """Set the name and/or the note (None keeps what is there)."""
        with self.locked():
            label = self.read_label()
            for key, value in (("name", name), ("note", note)):
                if value is not None:
                    label[key] = " ".join(str(value).split()) if key == "name" else str(value).strip()
            atomic_write_text(self.path / LABEL_FILE, json.dumps(label, ensure_ascii=False))
        return label

    # -- stop requests ----------------------------------------------------------------------
    def request_stop(self, reason: str = "user") -> None:
        p = self.path / STOP_FILE
        if not p.exists():
            atomic_write_text(p, json.dumps({"time": time.time(), "reason": reason}))

    def stop_requested(self) -> bool:
        return (self.path / STOP_FILE).exists()

    def _stop_request(self) -> dict:
        return read_json_object(self.path / STOP_FILE, SMALL_FILE_MAX_BYTES)  # {} for none, a pipe, a link, junk

    def stop_reason(self) -> str | None:
        """Why a stop was asked for (``user``, ``cli``, ``SIGTERM``, ``pruned`` by a sweep, ...), None when not."""
        reason = self._stop_request().get("reason")
        return None if reason is None else str(reason)

    def stop_request_time(self) -> float | None:
        when = self._stop_request().get("time")
        return float(when) if isinstance(when, (int, float)) and not isinstance(when, bool) else None

    # -- checkpoints ----------------------------------------------------------------------
    def checkpoints(self) -> list[Path]:
        """Checkpoint folders, oldest first (``checkpoint-<step>`` order), from :attr:`checkpoints_source`."""
        return _checkpoints_in(self.checkpoints_source)

    def checkpoint_named(self, name: str) -> Path:
        """One of :meth:`checkpoints` by its folder's name; ValueError for any other name (a path, a link)."""
        for path in self.checkpoints():
            if path.name == name:
                return path
        raise ValueError(f"no checkpoint '{name}' in run {self.run_id}")


def _checkpoints_in(folder: Path) -> list[Path]:
    """The checkpoint folders in ``folder``, oldest first (``checkpoint-<step>`` order); [] when it is none (or is
    a link: a run's folder is read without following one)."""
    if folder.is_symlink() or not folder.is_dir():
        return []

    def step_of(p: Path) -> int:
        """``checkpoint-<step>`` (TRL) or ``global_step_<step>`` (verl)."""
        tail = re.split(r"[-_]", p.name)[-1]
        return int(tail) if tail.isdigit() else -1

    # a trainer's link to its newest (ms-swift's last-checkpoint) is no checkpoint of its own
    return sorted((p for p in folder.iterdir() if p.is_dir() and not p.is_symlink()), key=step_of)

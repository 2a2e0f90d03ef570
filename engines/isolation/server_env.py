"""The variables only an MCP server may see, held outside the environment of the process that starts it.

A ``${NAME}`` written only inside one MCP server's entry of the agent config (its ``env``, ``headers``,
``url``; :func:`engines.isolation.user_env.server_names`) is that server's: the process that runs the
agent's user code (a check, a run, an evaluation, a chat) starts the server, so it must know the value, but
its user code (the reward, the Python tools, whatever they start) must not find it in ``os.environ``,
``/proc/<pid>/environ`` or a child's environment. So the value travels beside the environment:

* :func:`install` — into this process's private table (a check's fork gets it from its caller's memory);
* :func:`handover` / :func:`receive` — to a process started with ``exec`` (``python -m engines run``): an
  unlinked temporary file whose descriptor the child inherits and reads once at start, before any user
  code is imported, then closes; only the descriptor's number is in the child's environment
  (``$AWORLD_SERVER_ENV_FD``);
* :func:`handover_to_ranks` — to the ranks ``accelerate launch`` starts (it passes no descriptor on): a
  private folder with one file per local rank, read and deleted by the rank before any user code;
* :func:`lookup` — what :mod:`engines.tools.mcp_servers` substitutes a server's ``${NAME}`` from: this
  table first, then the environment. A stdio server then gets exactly the variables its own ``env`` names
  (the MCP SDK starts it with those and a few safe defaults, never the caller's environment).

Not protected: Python code in the same process can read this table (the trainer's process runs the reward
and starts the servers); verl's rollout workers read the values from their environment (engines.verl).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import ChainMap
from typing import Mapping

#: the number of the inherited descriptor :func:`receive` reads the values from
FD_ENV = "AWORLD_SERVER_ENV_FD"
#: a private folder holding one file per local rank (``accelerate launch`` passes no descriptor on)
DIR_ENV = "AWORLD_SERVER_ENV_DIR"

_values: dict[str, str] = {}


def install(values: Mapping[str, str] | None) -> None:
    """Make ``values`` the servers' variables of this process (replacing any before)."""
    _values.clear()
    _values.update({str(k): str(v) for k, v in (values or {}).items()})


def values() -> dict[str, str]:
    """A copy of this process's servers' variables (for a job whose own MCP client reads its environment)."""
    return dict(_values)


def lookup() -> Mapping[str, str]:
    """Where a server's ``${NAME}`` is looked up: the servers' variables, then the environment."""
    return ChainMap(_values, os.environ)


def handover(values: Mapping[str, str]) -> tuple[dict[str, str], int | None]:
    """``values`` ready for a child process: (its environment's addition, the descriptor it must inherit —
    pass it in ``pass_fds``, close it here once the child started). Nothing to hand over: ({}, None)."""
    if not values:
        return {}, None
    f = tempfile.TemporaryFile()  # unlinked at once: no other process finds it by name
    f.write(json.dumps(dict(values)).encode())
    f.flush()
    fd = os.dup(f.fileno())
    f.close()
    os.lseek(fd, 0, os.SEEK_SET)
    return {FD_ENV: str(fd)}, fd


def handover_to_ranks(world: int) -> tuple[dict[str, str], str | None]:
    """This process's values for the ``world`` ranks a launcher starts (it passes no descriptor on): a private
    folder (mode 0700) with one file per local rank, each read and deleted by its rank (:func:`receive`).
    Returns (the ranks' environment addition, the folder — remove it once they ended). Nothing: ({}, None)."""
    if not _values:
        return {}, None
    folder = tempfile.mkdtemp(prefix="aworld-server-env-")
    for rank in range(max(1, world)):
        fd = os.open(os.path.join(folder, str(rank)), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(_values, f)
    return {DIR_ENV: folder}, folder


def _receive_rank_file(folder: str) -> None:
    path = os.path.join(folder, os.environ.get("LOCAL_RANK", "0"))
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        os.unlink(path)
    except (OSError, ValueError) as e:
        raise RuntimeError(f"cannot read the MCP servers' variables from {path}: {e}") from None
    install(data if isinstance(data, dict) else {})


def receive() -> None:
    """In a child started with :func:`handover`'s descriptor (or a rank of :func:`handover_to_ranks`): read
    the values into this process's table, close the descriptor (delete the rank's file) and drop its name
    from the environment. A no-op when there is none."""
    folder = os.environ.pop(DIR_ENV, None)
    if folder:
        _receive_rank_file(folder)
    number = os.environ.pop(FD_ENV, None)
    if not number:
        return
    try:
        fd = int(number)
    except ValueError:
        raise RuntimeError(f"${FD_ENV} must be a file descriptor number, got {number!r}") from None
    try:
        with os.fdopen(fd, "rb") as f:
            f.seek(0)
            data = json.loads(f.read().decode() or "{}")
    except (OSError, ValueError) as e:
        raise RuntimeError(f"cannot read the MCP servers' variables from descriptor {fd}: {e}") from None
    install(data if isinstance(data, dict) else {})

"""The studio's login and credentials out of its environment and command line, for good.

Deleting a variable in Python (``del os.environ[...]``) does not clear the kernel's copy: the
environment a process was started with stays readable in ``/proc/<pid>/environ`` for its whole life,
and its command line in ``/proc/<pid>/cmdline`` (by every process). So the studio, when its login was
given on the command line (``--auth``), in ``AWORLD_STUDIO_AUTH`` or in a file (``--auth-file``), or its
environment holds a credential (``OPENAI_API_KEY``, ``GITHUB_TOKEN``, ... as :mod:`engines.isolation.user_env`
recognises them), starts itself again at once (``execve``, the same pid):

* with an environment without them, and a command line without ``--auth``/``--auth-file``;
* the login and the credentials handed over in an anonymous memory file (``memfd``) whose descriptor
  number is the only thing on the new command line (``--secrets-fd N``); the new process reads it,
  closes it, and keeps the credentials in memory only (``os.environ`` for the code that substitutes
  ``${NAME}``, never in the kernel's copy); the login never goes back into ``os.environ``.

Memory is guarded by the kernel's ptrace check: the studio is made non-dumpable, and user code gives
up every capability (:mod:`engines.isolation.privileges`), so even as root it cannot read the studio's memory.
Linux only (``memfd_create``, ``/proc``); elsewhere the studio keeps what it was started with.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Mapping, Sequence

from engines.isolation.user_env import is_credential

SECRETS_FD_OPTION = "--secrets-fd"
AUTH_ENV = "AWORLD_STUDIO_AUTH"
_SECRET_OPTIONS = ("--auth", "--auth-file")


def supported() -> bool:
    return sys.platform.startswith("linux") and hasattr(os, "memfd_create") and os.path.isdir("/proc/self")


def credential_names(environ: Mapping[str, str]) -> list[str]:
    """The variables of ``environ`` that are the login or look like credentials."""
    return sorted(n for n, v in environ.items() if n == AUTH_ENV or is_credential(n, v))


def without_secret_options(argv: Sequence[str]) -> list[str]:
    """``argv`` without ``--auth X``, ``--auth=X``, ``--auth-file X``, ``--auth-file=X``."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in _SECRET_OPTIONS:
            skip = True
            continue
        if any(arg.startswith(opt + "=") for opt in _SECRET_OPTIONS):
            continue
        out.append(arg)
    return out


def needed(argv: Sequence[str], environ: Mapping[str, str]) -> bool:
    """Whether the command line or the environment holds something to take out."""
    return without_secret_options(argv) != list(argv) or bool(credential_names(environ))


def restart_clean(argv: Sequence[str], auth: str | None, environ: Mapping[str, str] | None = None) -> None:
    """Start this studio again without its secrets in the environment or on the command line (never
    returns; raises OSError when the new program could not be started)."""
    environ = dict(os.environ if environ is None else environ)
    names = credential_names(environ)
    payload = json.dumps({"auth": auth, "env": {n: environ[n] for n in names if n != AUTH_ENV}}).encode()
    fd = os.memfd_create("aworld-studio-secrets", 0)
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    os.set_inheritable(fd, True)
    clean_env = {n: v for n, v in environ.items() if n not in names}
    args = [sys.executable, "-m", "aworld_gui.web.serve", *without_secret_options(argv), SECRETS_FD_OPTION, str(fd)]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, args, clean_env)


def take_secrets(fd: int) -> str | None:
    """In the restarted studio: the credentials back into ``os.environ`` (memory only), the descriptor
    closed; returns the login (``user:password`` or None)."""
    chunks = []
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    finally:
        os.close(fd)
    data = json.loads(b"".join(chunks).decode("utf-8") or "{}")
    for name, value in (data.get("env") or {}).items():
        os.environ[name] = value
    return data.get("auth")


def read_auth_file(path: str) -> str:
    """The login from the first line of a file (``user:password``)."""
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as f:
            line = f.readline(4096)
    except OSError as e:
        raise SystemExit(f"error: --auth-file {path}: cannot read it ({e.strerror or e})")
    value = line.strip()
    if not value:
        raise SystemExit(f"error: --auth-file {path}: the first line must be 'user:password' (it is empty)")
    return value

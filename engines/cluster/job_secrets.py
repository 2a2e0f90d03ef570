"""The values a run asks for by ``${NAME}`` (credentials, mostly), carried to its Ray job outside what the cluster
shows. A job's ``runtime_env.env_vars`` are shown to anyone who can read the Ray dashboard (a job's details,
``ray job list``); a ``py_modules`` package's content is not (the dashboard's package API answers whether a package
exists, never what it holds). So the values go into a package of their own, written to a private temporary folder
on this machine only for the submission's upload, and the job (job_main) hands them to the run's process."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

PACKAGE = "aworld_job_secrets"
VALUES = "values.json"


@contextlib.contextmanager
def secrets_package(values: dict[str, str]) -> Iterator[str | None]:
    """A package holding ``values`` (None when there are none), for ``py_modules``; gone once the block ends."""
    if not values:
        yield None
        return
    folder = Path(tempfile.mkdtemp(prefix="aworld-job-"))  # 0700
    try:
        package = folder / PACKAGE
        package.mkdir(mode=0o700)
        (package / "__init__.py").write_text("")
        fd = os.open(package / VALUES, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(values, f)
        yield str(package)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def read_secrets() -> dict[str, str]:
    """On the cluster: the values the submission carried ({} when it carried none)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return {}
    path = Path(list(spec.submodule_search_locations)[0]) / VALUES
    try:
        values = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in values.items()} if isinstance(values, dict) else {}

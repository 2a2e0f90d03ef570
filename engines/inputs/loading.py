"""Resolve user references to Python objects: ``module:attr`` or ``path/to/file.py:attr``.

User code is imported here, so callers that must not run user code in their own process
(the studio) call this only inside a child process.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from ..isolation.sandbox import report_doing


class ReferenceError_(ValueError):
    pass


def split_ref(ref: str) -> tuple[str, str]:
    if not isinstance(ref, str) or ":" not in ref:
        raise ReferenceError_(f"'{ref}' is not a reference — write 'module:function' or 'path/to/file.py:function'")
    target, _, attr = ref.rpartition(":")
    if not target or not attr:
        raise ReferenceError_(f"'{ref}' is not a reference — write 'module:function' or 'file.py:function'")
    return target, attr


def resolve_path(path: str | os.PathLike, base_dir: str | os.PathLike | None = None) -> Path:
    """A relative path is tried against ``base_dir`` first, then the working directory."""
    p = Path(os.path.expanduser(str(path)))
    if p.is_absolute():
        return p
    if base_dir is not None and (Path(base_dir) / p).exists():
        return (Path(base_dir) / p).resolve()
    return p.resolve()


def load_module_from_file(path: Path):
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    name = f"_aworld_user_{path.stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ReferenceError_(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    report_doing(f"importing {path.name}")  # named if the import hangs or kills an isolated check
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    finally:
        report_doing(None)
    return module


def load_object(ref: str, base_dir: str | os.PathLike | None = None) -> Any:
    """Import and return the object a reference names, with a clear error on failure."""
    target, attr = split_ref(ref)
    if target.endswith(".py") or "/" in target or os.sep in target:
        path = resolve_path(target, base_dir)
        if not path.is_file():
            raise ReferenceError_(f"file '{target}' of reference '{ref}' does not exist (looked at {path})")
        try:
            module = load_module_from_file(path)
        except Exception as e:  # user code: report, never crash the caller
            raise ReferenceError_(f"importing {path} failed: {type(e).__name__}: {e}") from e
    else:
        try:
            module = importlib.import_module(target)
        except Exception as e:
            raise ReferenceError_(
                f"cannot import module '{target}' of reference '{ref}': {type(e).__name__}: {e}"
            ) from e
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = [n for n in dir(module) if not n.startswith("_")]
            from ..results.check_result import did_you_mean

            raise ReferenceError_(f"'{target}' has no attribute '{attr}'{did_you_mean(part, names)}")
        obj = getattr(obj, part)
    return obj


def object_ref(obj: Any) -> str | None:
    """An importable reference for a top-level function or class, or None (lambdas, closures, __main__)."""
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if not module or not qualname or "<" in qualname:
        return None
    if module == "__main__" or module.startswith("_aworld_user_"):
        src = getattr(sys.modules.get(module), "__file__", None)
        if module.startswith("_aworld_user_") and src:
            return f"{src}:{qualname}"
        return None
    return f"{module}:{qualname}"

"""Uploads are masked before anyone can fetch them back.

Gradio writes each upload into its cache (``POST /gradio_api/upload``) and serves that cache
(``GET /gradio_api/file=<path>``) to whoever knows the path — which the upload's response tells. The
studio masked an agent's literal secrets only later, when a check stored it, and never for a file the
Setup rejected (a ``.json`` or ``.txt`` agent): ``GET`` returned the key. This ASGI middleware holds the
upload's response until every text file it names (any but :data:`LEFT_AS_IS`) has been masked in place
(:func:`aworld_gui.core.upload_secrets.mask_bytes`: literal secrets and URL passwords) — before its path is
known to the client; a YAML file too big to mask (over :data:`MASK_LIMIT`: no agent is that big) is
deleted. Left as they are: datasets (``.jsonl``, ``.csv``, ``.parquet``, ...), a reward's ``.py``, binary files
and any other file over the limit (a ``.json`` dataset, not a config).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from pathlib import Path
from typing import Any, Callable

log = logging.getLogger("aworld.studio")

#: uploads left as they are: datasets and code (a reward's .py), whose bytes are the user's own; every other file
#: that is text — an agent saved as ``agent.yaml.bak`` or ``agent.conf`` — is masked (binary files are left)
LEFT_AS_IS = {".jsonl", ".csv", ".tsv", ".parquet", ".arrow", ".py"}
MASK_LIMIT = 4 << 20
BINARY_PROBE = 8192  # a NUL byte in the first bytes: a binary file, not a config


def maskable(path: str | os.PathLike) -> bool:
    """Whether an upload is masked: any file but a dataset's or code's suffix (a config may come under any name)."""
    return Path(path).suffix.lower() not in LEFT_AS_IS


def _is_upload(scope: dict) -> bool:
    return (
        scope.get("type") == "http"
        and scope.get("method") == "POST"
        and scope.get("path", "").rstrip("/").endswith("/upload")
    )


def refused_note(path: Path) -> Path:
    """Where the size of an upload deleted as too big to mask is noted (a number, nothing of the file)."""
    return path.with_name(path.name + ".refused")


def refused_size(path: str | os.PathLike) -> int | None:
    """The size of an upload this guard deleted as too big to mask, or None."""
    try:
        return int(refused_note(Path(path)).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def mask_uploaded_file(path: str) -> None:
    """Mask a just-uploaded text file in place (or delete it when it is too big to read)."""
    from .upload_secrets import mask_bytes

    p = Path(path)
    if not maskable(p) or not p.is_file():
        return
    size = p.stat().st_size
    if size > MASK_LIMIT:
        if p.suffix.lower() in (".yaml", ".yml"):
            # too big to mask, so never served: gone, with its size noted for the check's message
            refused_note(p).write_text(str(size), encoding="utf-8")
            p.unlink(missing_ok=True)
        return
    data = p.read_bytes()
    if b"\0" in data[:BINARY_PROBE]:
        return
    masked, notes = mask_bytes(data)
    if notes:
        tmp = p.with_name(p.name + ".masking")
        tmp.write_bytes(masked)
        os.replace(tmp, p)


class UploadGuard:
    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if not _is_upload(scope):
            await self.app(scope, receive, send)
            return
        held: list[dict] = []
        body = bytearray()

        async def hold(message: dict) -> None:
            held.append(message)
            if message.get("type") == "http.response.body":
                body.extend(message.get("body", b""))

        await self.app(scope, receive, hold)
        try:
            paths = json.loads(bytes(body)) if body else []
        except ValueError:
            paths = []
        for path in paths if isinstance(paths, list) else []:
            if isinstance(path, str):
                try:
                    await asyncio.to_thread(mask_uploaded_file, path)
                except Exception as e:  # noqa: BLE001 - never served unmasked: remove it
                    log.warning("upload %s could not be masked (%s); deleted", path, e)
                    Path(path).unlink(missing_ok=True)
        for message in held:
            await send(message)

"""Issue 29, item 7: an oversized upload is refused while it streams in (Gradio's ``max_file_size``),
before the studio holds it, and leaves no file behind; uploads are stored without being read whole;
an agent file too big to be masked is deleted from Gradio's cache (it is served) and refused."""

from __future__ import annotations

import os

import httpx
import pytest

from aworld_gui.core.inputs import store_upload
from testing.studio import StudioProcess

AGENT_UPLOAD_MAX = 4 << 20  # aworld_gui.core.inputs.AGENT_UPLOAD_MAX


def _files_at_least(folder, size):
    return [p for p in folder.rglob("*") if p.is_file() and p.stat().st_size >= size]


@pytest.fixture(scope="module")
def small_upload_studio(tmp_path_factory):
    base = tmp_path_factory.mktemp("uploads")
    cache = base / "gradio-cache"
    saved = os.environ.get("GRADIO_TEMP_DIR")
    os.environ["GRADIO_TEMP_DIR"] = str(cache)
    try:
        app = StudioProcess(base / "runs", extra=["--max-upload-mb", "1"]).start(timeout_s=240)
    finally:
        if saved is None:
            os.environ.pop("GRADIO_TEMP_DIR", None)
        else:
            os.environ["GRADIO_TEMP_DIR"] = saved
    yield app, base, cache
    app.stop()


def test_an_upload_over_the_cap_is_refused_and_leaves_nothing(small_upload_studio):
    app, base, cache = small_upload_studio
    big = b"x" * (3 << 20)
    for _attempt in range(2):  # and again: nothing piles up
        r = httpx.post(app.url + "gradio_api/upload", files={"files": ("train.jsonl", big)}, timeout=60)
        assert r.status_code == 413, (r.status_code, r.text[:300])
        assert "maximum allowed size" in r.text
    assert not _files_at_least(cache, 1 << 20) if cache.exists() else True
    assert not _files_at_least(base / "runs", 1 << 20)
    ok = httpx.post(app.url + "gradio_api/upload", files={"files": ("train.jsonl", b'{"prompt": "a"}\n')}, timeout=60)
    assert ok.status_code == 200, ok.text  # a small one is taken


def test_uploads_are_stored_streamed_and_a_huge_agent_is_deleted(tmp_path):
    data = tmp_path / "cache" / "train.jsonl"
    data.parent.mkdir()
    data.write_bytes(b'{"prompt": "p", "answer": "a"}\n' * 200_000)  # ~6 MB
    stored = store_upload(str(data), tmp_path / "runs")
    assert open(stored, "rb").read() == data.read_bytes()
    assert store_upload(str(data), tmp_path / "runs") == stored  # the same content, the same place
    agent = tmp_path / "cache" / "agent.yaml"
    agent.write_text("api_key: sk-literal-0001\n# " + "x" * (AGENT_UPLOAD_MAX + 10) + "\n")
    with pytest.raises(ValueError, match="an agent config is at most 4 MB"):
        store_upload(str(agent), tmp_path / "runs")
    assert not agent.exists()  # Gradio's copy is gone (it was served)
    assert not any(
        "sk-literal-0001" in p.read_text(errors="replace") for p in (tmp_path / "runs").rglob("*") if p.is_file()
    )

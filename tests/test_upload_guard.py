"""Issue 29, item 3: an upload is masked before its path is known — ``POST /gradio_api/upload`` of an agent
with a literal key, then ``GET /gradio_api/file=<path>``, returns no key; the same for the ``.json`` and
``.txt`` agents the Setup rejects (Gradio keeps and serves them all the same)."""

from __future__ import annotations

import os

import httpx
import pytest

from testing.studio import StudioProcess

KEY = "sk-literal-upload-key-7781"
URL_PW = "pw-inside-the-url-3319"
AGENT = f"name: a\nmodel: m\napi_key: {KEY}   # written out\nllm_base_url: http://u:{URL_PW}@gw/v1\n"


@pytest.fixture(scope="module")
def studio(tmp_path_factory):
    base = tmp_path_factory.mktemp("upload-guard")
    saved = os.environ.get("GRADIO_TEMP_DIR")
    os.environ["GRADIO_TEMP_DIR"] = str(base / "gradio-cache")
    try:
        app = StudioProcess(base / "runs").start(timeout_s=240)
    finally:
        if saved is None:
            os.environ.pop("GRADIO_TEMP_DIR", None)
        else:
            os.environ["GRADIO_TEMP_DIR"] = saved
    yield app, base
    app.stop()


@pytest.mark.parametrize(
    "name, text",
    [
        ("agent.yaml", AGENT),
        ("agent.txt", AGENT),
        ("agent.yaml.bak", AGENT),  # issue 41 item 7: a config under any name
        ("agent.orig", AGENT),
        ("agent.json", f'{{"name": "a", "model": "m", "api_key": "{KEY}", "llm_base_url": "http://u:{URL_PW}@gw/v1"}}'),
    ],
)
def test_an_upload_is_never_served_back_unmasked(studio, name, text):
    app, base = studio
    for _attempt in range(2):  # the same file twice (Gradio may reuse its cached copy)
        r = httpx.post(app.url + "gradio_api/upload", files={"files": (name, text.encode())}, timeout=60)
        assert r.status_code == 200, r.text
        [path] = r.json()
        served = httpx.get(app.url + f"gradio_api/file={path}", timeout=60)
        assert served.status_code == 200, served.text[:300]
        assert KEY not in served.text and URL_PW not in served.text, served.text
        assert "****" in served.text
    for p in (base / "gradio-cache").rglob("*"):
        if p.is_file():
            assert KEY.encode() not in p.read_bytes(), p


def test_datasets_code_and_binary_files_are_left_as_they_are_and_any_other_text_is_masked(tmp_path):
    """What the guard masks in place (the same rule store_upload applies to the copy it keeps): a dataset's rows,
    a reward's code and a binary file are the user's bytes; text under any other name may be a config."""
    from aworld_gui.core.inputs import store_upload
    from aworld_gui.core.upload_guard import mask_uploaded_file

    row = f'{{"prompt": "p", "answer": "a", "api_key": "{KEY}"}}\n'.encode()
    files = {
        "rows.jsonl": (row, False),
        "reward.py": (f'KEY = "{KEY}"\n'.encode(), False),
        "weights.bin": (b"\0\1" + f"api_key: {KEY}".encode(), False),
        "agent.yaml.bak": (AGENT.encode(), True),
        "agent.conf": (AGENT.encode(), True),
    }
    for name, (data, masked) in files.items():
        p = tmp_path / "cache" / name
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(data)
        mask_uploaded_file(str(p))
        assert (KEY.encode() not in p.read_bytes()) is masked, name
        p.write_bytes(data)  # store_upload on a copy the guard never saw (a direct call)
        stored = store_upload(str(p), tmp_path / "runs")
        assert (KEY.encode() not in open(stored, "rb").read()) is masked, name

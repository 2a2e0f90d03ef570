"""The same file uploaded by many callers at once (one gradio_client's concurrent /check calls upload the demo's
agent, data and reward each time): every caller gets a whole stored file. The stored copy and an agent's resolved
copy were written in place, or through one temporary name per process, so a caller could read an empty or half
written file while another wrote it ("agent file letters_agent.resolved.yaml is empty", 1 call in 20 under load)."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

from aworld_gui.core import inputs as inp

CALLERS = 16
ROUNDS = 12


def _together(fn, n: int = CALLERS) -> list:
    """``fn(i)`` in ``n`` threads let go at the same moment; their results (or exceptions) in order."""
    start, out = threading.Barrier(n), [None] * n

    def run(i: int) -> None:
        start.wait()
        try:
            out[i] = fn(i)
        except Exception as e:  # noqa: BLE001 - reported by the test
            out[i] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out


def test_an_agent_uploaded_by_many_callers_at_once_is_whole_for_each(tmp_path):
    want = inp.DEMO_AGENT.read_text(encoding="utf-8")
    for r in range(ROUNDS):
        runs = tmp_path / f"runs{r}"
        copies = []
        for i in range(CALLERS):  # each caller's own Gradio temp file, the same content
            copy = tmp_path / f"gradio{r}-{i}" / inp.DEMO_AGENT.name
            copy.parent.mkdir()
            shutil.copyfile(inp.DEMO_AGENT, copy)
            copies.append(copy)

        def caller(i: int, copies=copies, runs=runs) -> tuple[str, str, str]:
            stored = inp.store_upload(str(copies[i]), runs)
            stored_text = Path(stored).read_text(encoding="utf-8")
            resolved, _ = inp.resolve_agent_upload(stored)
            return stored_text, resolved, Path(resolved).read_text(encoding="utf-8")

        results = _together(caller)
        errors = [x for x in results if isinstance(x, Exception)]
        assert not errors, errors
        assert all(stored == want for stored, _, _ in results), "a caller read a partly stored upload"
        resolved = {text for _, _, text in results}
        assert len(resolved) == 1 and "" not in resolved, f"round {r}: resolved copies read {resolved!r}"
        assert all(path.endswith(".resolved.yaml") for _, path, _ in results)  # the demo agent names ../models
        assert not [p for p in (runs / inp.UPLOADS).rglob("*") if p.name.endswith((".part", ".tmp"))]

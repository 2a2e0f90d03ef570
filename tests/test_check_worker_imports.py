"""What a check costs in the check worker beyond the check itself.

Every check and launch in the studio runs in a fresh fork of the worker (aworld_gui/worker/zygote.py), so a module
the worker did not import at start is imported again on every call. Gradio was one: ``SetupInputs`` lived beside
the page's translated labels, and each check paid 2.3 s importing Gradio in its fork (0.2 s → 2.6 s per
check). These tests run the worker's own tasks in a fresh interpreter, after the worker's preload, the way
the zygote does.
"""

from __future__ import annotations

import json
import subprocess
import sys

from testing.studio import REPO_ROOT

_PROBE = r"""
import json, sys
from aworld_gui.worker import check_tasks
check_tasks.preload()
after_preload = set(sys.modules)
from testing import letters_demo as d
inputs = dict(agent=d.AGENT, train=d.TRAIN, test=d.TEST, rewards=[{"ref": d.REWARD, "weight": 1}], engine="trl")
report = check_tasks.check(inputs)
prepared = check_tasks.prepare(inputs, sys.argv[1])
print(json.dumps({
    "preload_gradio": any(m == "gradio" or m.startswith("gradio.") for m in after_preload),
    "new": sorted(set(sys.modules) - after_preload),
    "statuses": {m: r["status"] for m, r in report["results"].items()},
    "prepared": prepared["ok"],
}))
"""


def _probe(tmp_path) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, str(tmp_path / "runs")],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_check_and_a_launch_in_the_worker_import_no_gradio_and_nothing_of_the_page(tmp_path):
    seen = _probe(tmp_path)
    # the probe did the real work: the demo checked green and a run was prepared
    assert set(seen["statuses"].values()) == {"ok"}, seen["statuses"]
    assert seen["prepared"] is True
    assert seen["preload_gradio"] is False  # the worker itself holds no Gradio either
    page = [m for m in seen["new"] if m.split(".")[0] == "gradio" or m.startswith("aworld_gui.")]
    assert page == [], f"imported in every check's fork: {page}"

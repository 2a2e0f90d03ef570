"""The Monitor's numbers agree: the header's "Reward · latest" is in the reward chart's legend at the same
step — also once the curve is downsampled and smoothed (the raw line is no longer drawn, its number stays)."""

from __future__ import annotations

import re

import pytest

from aworld_gui.rendering.i18n import localize
from aworld_gui.tabs.monitor_tab import MonitorTab
from aworld_gui.core.run_cache import MAX_POINTS, RunCache
from aworld_gui.core.studio import Studio
from engines.runs.rundir import RunDir
from testing.fake_run import write_history


class NoWorker:
    def start(self):
        pass

    def close(self):
        pass


@pytest.mark.parametrize("steps, smoothing", [(30, 0.0), (30, 0.6), (MAX_POINTS * 3, 0.0), (MAX_POINTS * 3, 0.6)])
def test_the_headers_latest_reward_is_the_legends_number(tmp_path, steps, smoothing):
    run = RunDir.create(tmp_path, "fake")
    run.write_spec({"engine": "fake"})
    run.write_status(state="finished", step=steps, total_steps=steps)
    write_history(run, steps)
    tab = MonitorTab(Studio(tmp_path, worker=NoWorker(), cache=RunCache()))
    out = tab.live(run.run_id, "g", [], smoothing, {})
    header = localize(out["header"], "en")
    latest = re.search(r'data-testid="stat-reward">([^<]+)<', header).group(1)
    legend = localize(re.search(r'<div class="aw-legend">(.*?)</div>', out["charts"]["reward"]).group(1), "en")
    numbers = re.findall(r"<span class=\"aw-key\">.*?</i>([^<]*) <b>([^<]+)</b>", legend)
    assert ("train · latest", latest) in numbers, (latest, numbers)
    assert f'data-step="{steps}"' in header

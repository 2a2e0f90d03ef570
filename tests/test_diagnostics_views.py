"""Where the diagnoses are seen: the Monitor's header (above the curves, English and Chinese, with the
clone button; gone once cleared) and ``aworld-train runs``."""

from __future__ import annotations

import time

from aworld_gui.tabs.diagnoses_panel import diagnoses_html
from aworld_gui.tabs.monitor_tab import MonitorTab
from aworld_gui.core.run_cache import RunCache
from aworld_gui.core.studio import Studio
from engines.cli import main as cli
from engines.diagnostics.advice import ADVICE
from engines.diagnostics.watcher import Diagnoser
from engines.runs.rundir import RunDir


class NoWorker:
    def start(self):
        pass


def run_with_no_spread(tmp_path, steps: int = 5) -> RunDir:
    run = RunDir.create(tmp_path, "fake")
    run.write_spec({"engine": "fake", "config": {}})
    run.write_status(state="finished", step=steps, total_steps=steps)
    for s in range(1, steps + 1):
        run.append_metrics(s, {"loss": 0.1, "reward": 0.5, "reward_std": 0.0, "frac_reward_zero_std": 1.0})
    Diagnoser(run, log=lambda line: None).poll()
    return run


def test_the_monitor_shows_an_active_diagnosis_in_plain_words_in_both_languages(tmp_path):
    run = run_with_no_spread(tmp_path)
    tab = MonitorTab(Studio(tmp_path, worker=NoWorker(), cache=RunCache()))
    en = tab.live(run.run_id, "g", [], 0.0, {}, locale="en")["header"]
    assert 'data-testid="diagnosis" data-code="no_reward_spread"' in en
    assert ADVICE["no_reward_spread"].title in en and "num_generations" in en
    assert 'data-clone-setting="num_generations"' in en and "Clone into Setup" in en
    assert "zero_spread_groups" in en  # the evidence
    zh = tab.live(run.run_id, "g", [], 0.0, {}, locale="zh")["header"]
    assert "GRPO 没有可以学习的梯度" in zh and "复制到配置页" in zh and "Why it may" not in zh
    # the second time: it clears, and the header no longer shows it
    for s in range(6, 10):
        run.append_metrics(s, {"loss": 0.1, "reward": 0.5 + s / 100, "reward_std": 0.2, "frac_reward_zero_std": 0.1})
    diagnoser = Diagnoser(run, log=lambda line: None)
    diagnoser.active = {"no_reward_spread": 3}
    assert [e["state"] for e in diagnoser.poll()] == ["cleared"]
    time.sleep(0.25)
    assert 'data-testid="diagnosis"' not in tab.live(run.run_id, "g", [], 0.0, {}, locale="en")["header"]


def test_no_diagnosis_no_panel():
    assert diagnoses_html([]) == ""


def test_aworld_train_runs_lists_the_active_diagnoses(tmp_path, capsys):
    run_with_no_spread(tmp_path)
    assert cli(["runs", "--runs-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[-1] == "diagnoses" and out[1].split()[-1] == "no_reward_spread"

"""What the studio shows of the trl engine's run details: the memory estimate in the config card, and in
the Monitor's header the trainable/total parameters, the number of processes and the tracker links
(all read from the check result or status.json, never from the engine)."""

from __future__ import annotations

from aworld_gui.rendering import render
from aworld_gui.rendering.i18n import localize
from aworld_gui.rendering.progress import Progress


def test_the_monitor_header_shows_parameters_processes_and_tracker_links():
    status = {
        "trainable_params": 7168,
        "total_params": 91264,
        "peft": True,
        "world_size": 2,
        "trackers": {
            "wandb": "https://wandb.ai/team/aworld-trainer/runs/abc123",
            "mlflow": "run 42 in file:///runs/x/trackers/mlruns",
        },
    }
    html = render.run_header(
        "r1", Progress("running", 3, 10, 5.0, 10.0, 0.6), {"reward": 0.5}, {"engine": "trl"}, status, None, False
    )
    assert 'data-trainable="7168" data-total="91264">7.2k / 91.3k</span>' in html and "7.9 % · LoRA" in html
    assert '<span data-testid="stat-processes">2</span>' in html
    assert '<a href="https://wandb.ai/team/aworld-trainer/runs/abc123" target="_blank"' in html
    assert "mlflow: <code>run 42 in file:///runs/x/trackers/mlruns</code>" in html  # not a URL: shown, not linked
    plain = render.run_header("r2", Progress("running", 3, 10, 5.0, 10.0, 0.6), {}, {}, {"world_size": 1}, None, False)
    assert "stat-params" not in plain and "stat-processes" not in plain and "trackers" not in plain


def test_the_config_card_shows_the_estimate_and_its_parts():
    memory = {
        "status": "warning",
        "per_process": 3 * 2**30,
        "summary": "≈ 3.00 GB peak per process of 3.4 GB available RAM (88 %)",
        "parts": {"weights": 2**30, "optimizer": 2 * 2**30, "kv_cache": 300 * 2**10, "reference_model": 0},
        "total_params": 250_000_000,
        "trainable_params": 250_000_000,
    }
    html = localize(render.memory_estimate(memory, "warning"), "en")
    assert 'data-status="warning"' in html and "near the limit" in html and "(88 %)" in html
    assert "<b>weights</b> 1.00 GB" in html and "<b>optimizer</b> 2.00 GB" in html and "<b>kv cache</b> 0.3 MB" in html
    assert "reference model" not in html  # a part of zero is left out
    assert "250.0M trainable of 250.0M parameters" in html
    assert 'data-status="none"' in render.memory_estimate(None, "error")
    # issue 42 item 8: a config checked by an engine that estimates nothing (swift, verl) is not "waiting for it"
    checked = localize(render.memory_estimate(None, "ok"), "en")
    assert "no memory estimate before launch" in checked and "once the config checks" not in checked
    assert "once the config checks" in localize(render.memory_estimate(None, None), "en")

"""The studio's Sweeps view without a browser: what it reads from a sweep directory (summary.json, status.json,
the Optuna study) and draws — trials sorted by the objective, a scatter per setting, Optuna's importances."""

from __future__ import annotations

import re

import pytest

from aworld_gui.core import inputs as inp
from aworld_gui.rendering import sweep_render
from aworld_gui.core.sweep_core import SweepsCore, sweep_doc
from engines.sweeps.spec import parse_sweep
from engines.sweeps.summary import write_summary
from engines.sweeps.sweep_dir import SweepDir


def _sweep_with_trials(runs, values, direction="maximize"):
    """A sweep directory whose Optuna study holds finished trials (as a driver leaves them)."""
    import optuna
    from optuna.trial import TrialState, create_trial

    spec = parse_sweep(
        {
            "trials": len(values),
            "objective": {"metric": "eval/reward", "direction": direction},
            "params": {"learning_rate": {"low": 1e-4, "high": 1e-2, "log": True}, "beta": [0.0, 0.04]},
        }
    )
    sd = SweepDir.create_sweep(runs, label="view")
    spec.name = "view"
    sd.write_sweep({"sweep": spec.to_dict(), "base": {}, "base_config": {}})
    study = optuna.create_study(study_name=sd.study_name, storage=sd.storage_url, direction=direction)
    for i, (lr, beta, value, state) in enumerate(values):
        study.add_trial(
            create_trial(
                params={"learning_rate": lr, "beta": beta},
                distributions=dict(spec.params),
                value=value if state == TrialState.COMPLETE else None,
                state=state,
                intermediate_values={} if state == TrialState.COMPLETE else {1: value},
                user_attrs={"run_id": f"run-{i}"},
            )
        )
    sd.write_status(state="finished", trials=len(values))
    write_summary(sd, study, spec)
    return sd


def test_the_view_sorts_trials_by_the_objective_and_draws_each_setting(tmp_path):
    from optuna.trial import TrialState

    runs = tmp_path / "runs"
    C, P = TrialState.COMPLETE, TrialState.PRUNED
    sd = _sweep_with_trials(
        runs,
        [(1e-4, 0.0, 0.2, C), (1e-3, 0.04, 0.9, C), (5e-3, 0.0, 0.1, P), (1e-2, 0.04, 0.5, C), (3e-3, 0.0, 0.7, C)],
    )
    core = SweepsCore(runs)
    assert core.sweep_ids() == [sd.run_id]
    d = core.detail(sd.run_id)
    # complete trials best first, then the pruned one (its value is its last report, never best)
    assert [(t["number"], t["state"]) for t in d["trials"]] == [
        (1, "complete"),
        (4, "complete"),
        (3, "complete"),
        (0, "complete"),
        (2, "pruned"),
    ]
    assert d["best"] == {"number": 1, "run_id": "run-1", "params": {"learning_rate": 1e-3, "beta": 0.04}, "value": 0.9}
    headers, rows = sweep_render.table(d)
    assert headers == ["trial", "state", "value", "learning_rate", "beta", "run"] and rows[0][0] == 1
    charts = sweep_render.charts(d)
    assert re.findall(r'data-param="(\w+)"', charts) == ["learning_rate", "beta"]
    assert charts.count("<circle") == 10 and "(log)" in charts  # 5 trials × 2 settings; lr spans 100×
    assert 'data-state="pruned"' in charts
    # parallel coordinates: a line per trial across learning_rate, beta and the objective, the best bold and on top
    assert 'data-lines="5" data-axes="3"' in charts and charts.count("<polyline") == 5
    lines = re.findall(r'<polyline points="([^"]+)"[^>]*data-trial="(\d+)"', charts)
    assert [n for _p, n in lines][-1] == "1" and 'data-trial="1" data-state="complete" data-best' in charts
    assert all(len(pts.split()) == 3 for pts, _n in lines)  # 2 params + the value (the pruned one has its last report)
    assert (
        sweep_render.parallel_coordinates(d["trials"], ["beta"], "eval/reward") == ""
    )  # one param: the scatter says it
    # no translation marker inside an SVG: escaped in an attribute it kept the whole view from rendering in the page
    # (the Sweeps tab never showed its headline)
    assert not any("__i18n__" in svg for svg in re.findall(r"<svg.*?</svg>", charts, flags=re.S))
    head = sweep_render.headline(d)
    assert "4/5" in head or "5/5" in head
    # the table as the page gets it: every column named, the params by their names (an update's headers= was
    # dropped for the component's four, and the params' columns read "5", "6")
    import gradio as gr
    from gradio.blocks import postprocess_update_dict

    from aworld_gui.tabs.sweep_panel import SweepsTab, shown_headers

    with gr.Blocks():
        table_component = gr.Dataframe(headers=["trial", "state", "value", "run"], interactive=False)
    update = SweepsTab(core).view(sd.run_id)[1]
    shown = postprocess_update_dict(table_component, update, True)["value"]["headers"]
    assert shown == shown_headers(headers) and shown[3:5] == ["learning_rate", "beta"]
    # Optuna's importances once 4 trials are complete, for each setting
    imp = core.importances(sd.run_id)
    assert set(imp) == {"learning_rate", "beta"} and abs(sum(imp.values()) - 1.0) < 1e-6
    assert 'data-n="2"' in sweep_render.importance_bars(imp)


def test_minimised_objectives_sort_lowest_first_and_importances_wait_for_four_trials(tmp_path):
    from optuna.trial import TrialState

    runs = tmp_path / "runs"
    C = TrialState.COMPLETE
    sd = _sweep_with_trials(
        runs, [(1e-4, 0.0, 0.3, C), (1e-3, 0.04, 0.1, C), (1e-2, 0.0, 0.2, C)], direction="minimize"
    )
    core = SweepsCore(runs)
    assert [t["number"] for t in core.detail(sd.run_id)["trials"]] == [1, 2, 0]
    assert core.importances(sd.run_id) is None
    assert 'data-n="0"' in sweep_render.importance_bars(None)
    with pytest.raises(ValueError, match="no sweep"):
        core.detail("../../etc")


def test_the_setup_fields_make_a_sweep_and_a_bad_one_is_refused_before_any_process_starts(tmp_path):
    doc = sweep_doc(3, "grid", "none", "loss", "minimize", "beta: [0.0, 0.04]\nnum_generations: [4, 8]\n", "g")
    spec = parse_sweep(doc)
    assert (spec.trials, spec.sampler, spec.pruner, spec.metric, spec.direction, spec.name) == (
        3,
        "grid",
        "none",
        "loss",
        "minimize",
        "g",
    )
    core = SweepsCore(tmp_path / "runs")
    si = inp.SetupInputs(
        agent=str(inp.DEMO_AGENT),
        train=str(inp.DEMO_TRAIN),
        test=str(inp.DEMO_TEST),
        rewards=[{"ref": inp.DEMO_REWARD, "weight": 1.0}],
        engine="trl",
    )
    res = core.launch(si, sweep_doc(5, "grid", "none", "eval/reward", "maximize", "beta: [0.0, 0.04]"))
    assert res == {
        "ok": False,
        "error": "trials = 5 but the grid has only 2 point(s) — use trials: 2 (or fewer), or add values to the grid",
    }
    assert not (tmp_path / "runs" / "sweeps").exists()


def test_a_settings_close_values_are_not_labelled_over_each_other():
    """The studio's 6-trial sweep drew 0.0009013 and 0.001036 on top of each other under the learning_rate chart:
    a value too close to the label before it goes unlabelled (its point's title still says it), and no two labels
    drawn overlap."""
    values = [0.0001134, 0.0002606, 0.0009013, 0.001036, 0.003654, 0.005227]
    trials = [
        {"number": i, "params": {"learning_rate": v}, "value": 0.1 * i, "state": "complete"}
        for i, v in enumerate(values)
    ]
    svg = sweep_render.scatter(trials, "learning_rate", "eval/reward")
    below = [
        (float(x), text)
        for x, text in re.findall(
            r'<text x="([\d.]+)" y="\d+" text-anchor="middle" class="aw-tick">([^<]+)</text>', svg
        )
        if text != "learning_rate (log)"
    ]
    assert below[0][1] == "0.0001134" and 3 <= len(below) < len(values), below  # the lowest, and what fits
    for (x1, t1), (x2, t2) in zip(below, below[1:]):
        gap = (x2 - len(t2) * sweep_render.TICK_CHAR_W / 2) - (x1 + len(t1) * sweep_render.TICK_CHAR_W / 2)
        assert gap >= sweep_render.TICK_GAP, (t1, t2, gap)
    assert svg.count("<circle") == len(values) and "learning_rate=0.0009013" in svg  # every point, with its value

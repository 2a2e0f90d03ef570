"""The probe in the studio (issue 44): the check worker's ``probe`` task on the shipped demo (its random-init model,
its letter reward from the file, few prompts and samples), the report shown again for the same setup without
sampling, Cancel, and the difficulty filter: written beside the uploads with its provenance, and selected as the
train set by Setup's filter button."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aworld_gui.core import inputs as inp
from aworld_gui.core.probes import PROGRESS_DIR, Probes, fraction, setup_key
from aworld_gui.core.run_cache import RunCache
from aworld_gui.core.studio import Studio
from aworld_gui.tabs.probe_panel import ProbePanel
from testing import waiting

PROMPTS, SAMPLES = 24, 8


@pytest.fixture(scope="module")
def studio(tmp_path_factory):
    st = Studio(tmp_path_factory.mktemp("probe-studio") / "runs", cache=RunCache())
    st.worker.start(wait=True)
    yield st
    st.worker.close()


def _setup_values(si: inp.SetupInputs) -> list:
    """The Setup's input values (SetupUI.inputs' order) for ``si``."""
    picks = [r.get("ref") or r.get("name") for r in si.rewards]
    weights = [[p, r.get("weight", 1.0), ""] for p, r in zip(picks, si.rewards)]
    return [si.agent, si.train, si.test, None, None, picks, weights, si.config_text, si.engine, {}, "", ""]


def test_the_probe_task_reports_stores_and_shows_again(studio):
    probes = Probes(studio)
    si = inp.demo_inputs()
    job = probes.start(si, "page-1", PROMPTS, SAMPLES)
    assert job.done.wait(300), "the probe did not end"
    res = job.result
    assert res["ok"], res
    report = res["report"]
    assert report["pass_rates"]["prompts"] == PROMPTS and report["settings"]["samples"] == SAMPLES
    assert sum(report["pass_rates"]["histogram"]["counts"]) == PROMPTS
    assert "letter_reward" in report["terms"]
    assert any(v["code"] == "too_hard" for v in report["verdicts"])  # the random-init model rarely says the letter
    assert Path(report["path"]).is_file() and Path(report["path"]).parent == studio.runs_dir / ".probes"
    assert not list((studio.runs_dir / PROGRESS_DIR).glob("*.txt")), "the progress file is removed once it ended"
    # shown again for the same setup, without a press; a press samples nothing
    assert probes.shown(setup_key(si, PROMPTS, SAMPLES))["key"] == report["key"]
    assert probes.shown(setup_key(si, PROMPTS, SAMPLES + 1)) is None
    again = probes.start(si, "page-1", PROMPTS, SAMPLES)
    assert again.done.wait(120) and again.result["ok"] and again.result["reused"]
    assert fraction("12 of 64 completions sampled and scored") == 12 / 64 and fraction("loading x") is None


def test_the_filter_writes_beside_the_uploads_and_is_selected_as_the_train_set(studio):
    panel = ProbePanel(studio)
    si = inp.demo_inputs()
    values = _setup_values(si)
    job = panel.probes.start(si, "page-2", PROMPTS, SAMPLES)
    assert job.done.wait(300) and job.result["ok"], job.result
    report = job.result["report"]
    rates = {p["row"]: p["pass_rate"] for p in report["prompts"]}
    html, train = panel.on_filter(*values, PROMPTS, SAMPLES, 0.0, 1.0)
    path = Path(train["value"])
    assert path.parent.parent == studio.runs_dir / inp.UPLOADS and path.name.endswith(".pass-0-1.jsonl")
    kept = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    source = [json.loads(line) for line in Path(si.train).read_text(encoding="utf-8").splitlines()]
    assert kept == [source[i] for i in sorted(rates) if 0 < rates[i] < 1]
    provenance = json.loads(Path(f"{path}.provenance.json").read_text(encoding="utf-8"))
    assert provenance["probe"] == report["key"] and provenance["band"] == [0.0, 1.0]
    assert provenance["kept"] == len(kept) and 'data-state="written"' in html
    # fewer rows than one step takes (the demo's prompts_per_step, 8): the config check will refuse it, said here
    assert (
        ('data-testid="probe-filtered-short"' in html) == (len(kept) < 8) == (provenance.get("fewer_than_a_step") == 8)
    )
    assert any(value == str(path) for _label, value in train["choices"])
    # a band nothing is inside: said, and the train set is left as it was
    html, train = panel.on_filter(*values, PROMPTS, SAMPLES, 0.99, 1.0)
    assert 'data-state="failed"' in html and train == {"__type__": "update"}
    # another setup (not probed): nothing written
    other = _setup_values(inp.SetupInputs(**{**si.to_dict(), "train": str(path)}))
    html, train = panel.on_filter(*other, PROMPTS, SAMPLES, 0.0, 1.0)
    assert 'data-state="failed"' in html


def test_cancel_ends_a_running_probe(studio):
    probes = Probes(studio)
    si = inp.demo_inputs()
    job = probes.start(si, "page-3", 24, 64)  # more samples than the others: still running when cancelled
    waiting.wait_for(lambda: job.doing() or job.done.is_set(), 60, "the probe under way")
    assert probes.cancel("page-3")
    assert job.done.wait(60)
    assert not job.result["ok"] and job.result.get("cancelled"), job.result

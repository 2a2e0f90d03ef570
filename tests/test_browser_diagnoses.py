"""The newcomer's view in headless Chromium: a run whose reward scored each prompt's completions alike (the
prompts apart) shows ``no_reward_spread`` above its curves, in plain words, and its button clones the run into Setup naming the
setting to change. The run is prepared for real (checks, run.yaml) and its metrics are those the trl run of
tests/test_swift_engine.py's run with that reward logs (frac_reward_zero_std 1.0, the term's spread over the
batch above 0); the diagnosis is written by the watcher's
Diagnoser, as in a run. Screenshot: docs/screenshots/diagnosis-no-reward-spread.jpg."""

from __future__ import annotations

import os
from pathlib import Path

from playwright.sync_api import sync_playwright

from engines.core.modules import Modules
from engines.diagnostics.advice import ADVICE
from engines.diagnostics.watcher import Diagnoser
from engines.core.prepare import prepare_run
from testing import waiting
from testing.studio import CHROMIUM, launch_chromium

ROOT = Path(__file__).resolve().parent.parent
SHOT = ROOT / "docs" / "screenshots" / "diagnosis-no-reward-spread.jpg"


def test_a_reward_by_prompt_shows_no_reward_spread_in_the_monitor_and_its_button_clones_the_run(
    tmp_path, shared_studio
):
    same = tmp_path / "by_prompt_reward.py"
    same.write_text("def by_prompt(completion, answer, **kw):\n    return (ord(answer) - 64) / 10\n")
    app = shared_studio
    runs = app.runs_dir  # the newest run: the one the Monitor opens on
    run = prepare_run(
        Modules(
            str(ROOT / "assets/agents/letters_agent.yaml"),
            str(ROOT / "assets/datasets/letters_train.jsonl"),
            None,
            f"{same}:by_prompt",
            {"max_steps": 12, "num_generations": 4, "prompts_per_step": 2, "diagnostics": {"reward_max": 1.0}},
            "trl",
        ),
        runs_dir=str(runs),
    )
    run.write_status(state="finished", step=12, total_steps=12)
    for s in range(1, 13):
        reward = 0.3 + (s % 3) / 10  # the step's two prompts' mean
        run.append_metrics(
            s,
            {
                "loss": 0.0,
                "reward": reward,
                "reward_std": 0.0,
                "frac_reward_zero_std": 1.0,
                "rewards/by_prompt/mean": reward,
                "rewards/by_prompt/std": 0.1,
                "kl": 0.0,
            },
        )
    assert [e["code"] for e in Diagnoser(run, log=lambda line: None).poll()] == ["no_reward_spread"]
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get install -y chromium"
    with sync_playwright() as p:
        browser = launch_chromium(p)
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.goto(app.url)
        page.get_by_role("tab", name="Monitor").click()
        card = '#run-header [data-testid="diagnosis"][data-code="no_reward_spread"]'
        waiting.wait_for(lambda: page.is_visible(card), 120, "the diagnosis above the curves", retry_errors=True)
        text = page.inner_text(card)
        assert (
            ADVICE["no_reward_spread"].title in text and "num_generations" in text and "since step 12" in text
        )  # first seen at 12: it read them all at once
        page.screenshot(path=str(SHOT), type="jpeg", quality=80, full_page=False)
        page.click(f"{card} [data-testid=diagnosis-clone]")
        waiting.wait_for(
            lambda: (
                "Change first:" in page.inner_text("#launch-msg")
                and "num_generations" in page.inner_text("#launch-msg")
            ),
            60,
            "Setup with the clone, naming num_generations",
            retry_errors=True,
        )
        assert run.run_id in page.inner_text("#launch-msg")
        waiting.wait_for(
            lambda: page.evaluate("document.activeElement?.closest('[id^=cfg-]')?.id") == "cfg-num_generations",
            30,
            "the setting to change focused",
            retry_errors=True,
        )
        browser.close()

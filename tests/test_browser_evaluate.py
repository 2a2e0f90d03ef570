"""The Evaluate and Chat tabs in headless Chromium: the base model against a trained checkpoint side by
side, the per-sample table and a sample's trajectories; chat with the checkpoint (it answers with its
letter) and with the calc agent (its tool call and result show); the run's evaluations in the Runs tab."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from testing import waiting
from testing.calc_run import calc_run
from testing.studio import CHROMIUM, launch_chromium

SHOTS = Path(__file__).resolve().parent.parent / "artifacts" / "screenshots"


def wait_for(fn, timeout_s, what):
    return waiting.wait_for(fn, timeout_s, what, retry_errors=True)


def open_tab(page, name: str, runs: str) -> None:
    """Open a tab whose opening answers with its runs list and the latest run (on_open), and wait for that answer:
    a pick made before it arrives is overwritten by it (the pick's own answer comes first, then the late one
    puts the latest run back — a run made after the picked one, here the calc run)."""
    page.get_by_role("tab", name=name).click()
    wait_for(lambda: page.input_value(f"{runs} input"), 30, f"the {name} tab's runs listed")


def pick(page, dropdown: str, text: str) -> None:
    page.click(f"{dropdown} input")
    page.keyboard.press("Control+A")
    page.keyboard.type(text)
    page.keyboard.press("Enter")
    wait_for(lambda: text in page.input_value(f"{dropdown} input"), 10, f"{text} picked")


@pytest.fixture(scope="module")
def studio(trained_in_studio):
    app = trained_in_studio
    app.calc = calc_run(app.runs_dir).run_id
    return app


@pytest.fixture(scope="module")
def page(studio):
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get install -y chromium"
    with sync_playwright() as p:
        browser = launch_chromium(p)
        pg = browser.new_page(viewport={"width": 1440, "height": 1000})
        pg.goto(studio.url)
        yield pg
        browser.close()


def shot(page, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_evaluate_the_base_model_against_a_checkpoint(page, studio):
    open_tab(page, "Evaluate", "#eval-run")
    pick(page, "#eval-run", studio.letters)
    wait_for(lambda: page.locator("#eval-models input:checked").count() == 2, 30, "base and the checkpoint ticked")
    page.click("#eval-launch")
    wait_for(
        lambda: page.get_attribute("#eval-progress [data-testid=eval-state]", "data-state") == "finished",
        300,
        "the evaluation to finish",
    )
    summary = page.inner_text("#eval-summary")
    assert "base" in summary and "checkpoint-300" in summary and "rewards/letter_reward" in summary
    cells = page.locator("#eval-summary tbody tr").first.locator("td").all_inner_texts()
    base_reward, trained_reward = (float(x) for x in cells)
    assert trained_reward >= 0.8 and base_reward <= 0.2
    # Gradio's Dataframe draws its body rows as role=row elements of gridcells (a virtual list), not as <tr>s
    rows = page.locator("#eval-table [role=row]:has([role=gridcell])")
    # the table is filled by the event after the summary's: 8 prompts x 2 samples
    wait_for(lambda: rows.count() == 16, 30, "one row per sample")
    # columns: #, sample, prompt, answer, then each model's completion and reward
    table = page.eval_on_selector_all(
        "#eval-table [role=row]:has([role=gridcell])",
        "rows => rows.map(r => [...r.querySelectorAll('[role=gridcell]')].map(c => c.innerText.trim()))",
    )
    differ = sum(1 for r in table if float(r[5]) != float(r[7]))
    assert differ > 0  # the checkpoint scores >= 0.8 where the base scores <= 0.2
    page.get_by_label("models disagree").check()
    wait_for(lambda: rows.count() == differ, 30, f"only the {differ} rows where the models differ")
    rows.first.locator("[role=gridcell]").nth(2).click()
    wait_for(lambda: page.locator("#eval-trajectory .aw-eval-side").count() == 2, 30, "both models' trajectories")
    shot(page, "11-evaluate-base-vs-checkpoint")


def test_chat_with_the_checkpoint_and_the_calc_agent(page, studio):
    open_tab(page, "Chat", "#chat-run")
    pick(page, "#chat-run", studio.letters)
    wait_for(lambda: "checkpoint-300" in page.input_value("#chat-model input"), 30, "the latest checkpoint picked")
    page.fill("#chat-input textarea", "Say the letter C:")
    page.click("#chat-send")
    wait_for(
        lambda: (
            page.locator("#chat-box .message.bot, #chat-box [data-testid=bot]").count() >= 1
            and "ready" in page.inner_text("#chat-status")
        ),
        180,
        "the checkpoint's reply",
    )
    bot = page.locator("#chat-box [data-testid=bot]").last.inner_text().strip()
    assert bot.startswith("C"), bot
    pick(page, "#chat-run", studio.calc)
    wait_for(lambda: page.input_value("#chat-model input") == "base", 30, "the calc agent's base model")
    page.click("#chat-clear")
    page.fill("#chat-input textarea", "What is 3 + 4?")
    page.click("#chat-send")
    wait_for(
        lambda: "ready" in page.inner_text("#chat-status") and "🛠 add" in page.inner_text("#chat-box"),
        180,
        "the tool call in the chat",
    )
    text = page.inner_text("#chat-box")
    assert "result of add" in text and "The answer is 7" in text
    shot(page, "12-chat-calc-tool-call")


def test_the_runs_tab_lists_the_runs_evaluations(page, studio):
    from engines.inference.evaluation import list_evals
    from engines.runs.lifecycle import effective_status

    # the evaluation of the first test has ended (its process writes its status last; a loaded machine takes long)
    wait_for(
        lambda: (
            [effective_status(e).get("state") for e in list_evals(studio.runs_dir / studio.letters)] == ["finished"]
        ),
        120,
        "the evaluation's process to end",
    )
    page.get_by_role("tab", name="Runs").click()
    pick(page, "#runs-selected", studio.letters)
    wait_for(
        lambda: (
            "checkpoint-300" in page.inner_text("#runs-evals") and "finished" in page.inner_text("#runs-evals").lower()
        ),
        90,  # the Runs tab's answer waits in the studio's queue behind whatever the page asked before
        "the evaluation listed with its run",
    )

"""English left in the Chinese studio (issue 32 §4: "in the Chinese UI nothing is left in English").

:func:`page_texts` reads what a tab shows (its text nodes, the dropdowns' values, the buttons), skipping what is
code or the user's own data (``pre``/``code``, editors, the data previews' cells) and the full-settings editor's table
(TRL's own help of its fields: TRL's documentation, shown as written); :func:`english_runs` finds the
runs of English words in one text: words of Latin letters only, so identifiers (``max_completion_length``,
``eval/reward``), file names, numbers and units pass, and names in :data:`NAMES` pass. ``DEMO_DATA`` is what the
shipped demo itself says (its system prompt, its prompts, its reward's docstring): the user's words, shown as
they are.

    python -m testing.english_text [--port 7881] [--launch]   # every tab of a studio on the demo, in Chinese

visits Setup (the demo checked, every card and accordion open), trains the demo for 4 steps by the CLI
(:func:`train_short_demo`; ``--launch``: the whole demo launched from Setup) and visits the Monitor showing it
finished, Runs, Sweeps, Evaluate and Chat, and prints each tab's English runs with where they show;
``tests/test_browser_i18n.py`` runs the same on Setup, and on the Monitor, Runs, Evaluate and Chat.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from pathlib import Path

#: names and abbreviations that stay as they are in Chinese text, each with why
NAMES = {
    # the product and the projects it runs on: proper names
    "aworld",
    "trainer",
    "studio",
    "hugging",
    "face",
    "trl",
    "verl",
    "ms-swift",
    "swift",
    "ray",
    "vllm",
    "sglang",
    "tensorboard",
    "optuna",
    "wandb",
    "mlflow",
    "swanlab",
    "torch",
    "pytorch",
    "python",
    "accelerate",
    "transformers",
    "peft",
    "deepspeed",
    "qwen",
    # technical abbreviations a Chinese UI writes in Latin letters
    "grpo",
    "sft",
    "ppo",
    "dpo",
    "rl",
    "kl",
    "lora",
    "qlora",
    "cuda",
    "gpu",
    "gpus",
    "cpu",
    "ram",
    "vram",
    "mcp",
    "yaml",
    "json",
    "jsonl",
    "csv",
    "parquet",
    "api",
    "id",
    "url",
    "hub",
    "cli",
    "eta",
    "nan",
    "fp16",
    "bf16",
    "fp32",
    "ok",
    "token",
    "tokens",
    "rollout",
    "rollouts",
    "top_p",
    "pass@k",
    "http",
    "zip",
    "kv",
    "logits",
    "tpe",
    "tsv",
    "py",
    "nnodes",
    # config keys and Python types written as such (a setting's name, a reward argument's shape: str 'A')
    "beta",
    "temperature",
    "mode",
    "str",
    # units
    "gb",
    "mb",
    "kb",
    "gib",
    "mib",
    "b",
    "k",
    "m",
    "s",
    "ms",
    "min",
    "h",
    # the demo's names: its model folders, agent, files and columns
    "tiny-letters",
    "tiny-calc",
    "letters-agent",
    "calc-agent",
    "letters",
    "prompt",
    "answer",
    "completion",
    "demo",
    "fake",
}
#: the shipped demo's own words (the user's data, shown as written): a regex each, with where it comes from
DEMO_DATA = [
    r"Reply with one capital letter\.?",  # letters_agent.yaml's system prompt
    r"Say the letter [A-Z]:?",  # letters_train/test.jsonl's prompts
    r"Score one completion of the letters task\.?",  # letter_reward.py's docstring
    r"letters · lr 1e-3|a finished run",  # the stand-in runs' name and note (testing/tab_screenshots.py)
    r"python -m engines(?: [a-z]+)*",  # a command written in a sentence (swift's description): code, as written
]
_DEMO = re.compile("|".join(f"(?:{d})" for d in DEMO_DATA))
_WORD = re.compile(r"^[A-Za-z][A-Za-z]*(?:['’-][A-Za-z]+)*$")
_IDENTIFIER = re.compile(r"^[A-Za-z]+[a-z][A-Z][A-Za-z]*$")  # CamelCase: a class (ModelConfig), not a word
_EDGES = "()[]{}<>,;:.!?\"'“”‘’…—–·•×→=*"

#: page script: the visible text of an element, node by node, without code and the user's data; each text with where
#: it is (the id of its nearest element that has one)
COLLECT_JS = r"""
root => {
  const SKIP = 'pre, code, textarea, .cm-editor, .aw-rendered, [data-testid="rendered-prompt"], '
    + '.aw-settings-scroll, #setting-help, script, style, '  // the full-settings editor: TRL's own help
    + '.aw-group-text, .aw-group-prompt';  // a GRPO group's prompt and completions: the user's and the model's words
  const out = [];
  const where = el => { const owner = el.closest('[id]'); return owner ? owner.id : ''; };
  const visible = el => el && el.checkVisibility && el.checkVisibility({visibilityProperty: true});
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    const text = n.nodeValue.trim();
    if (!text || !visible(el) || el.closest(SKIP)) continue;
    // a trajectory's message is the user's prompt or the model's words (the turn's own text; what our markup
    // adds inside it, as '(empty)', is ours)
    if (el.matches('.aw-content')) continue;
    // a data preview's cells are the user's data; its column headers are ours (or the data's column names)
    const cell = el.closest('td, [role="gridcell"]');
    if (cell && cell.closest('.table-wrap, [data-testid="dataframe"], .gradio-dataframe')) continue;
    out.push([text, where(el)]);
  }
  for (const input of root.querySelectorAll('input[role="listbox"], .wrap-inner input, input[type="button"]')) {
    if (visible(input) && input.value.trim()) out.push([input.value.trim(), where(input)]);
  }
  return out;
}
"""


def _word(chunk: str) -> str | None:
    core = chunk.strip(_EDGES)
    return core if core and _WORD.match(core) and not _IDENTIFIER.match(core) else None


def english_runs(text: str) -> list[str]:
    """The runs of English words in ``text`` (each as written), leaving identifiers, numbers, names and the demo's
    own words out: a run counts when one of its words is not in NAMES."""
    text = _DEMO.sub(" ", text)
    runs, current = [], []
    for chunk in [*text.split(), ""]:
        word = _word(chunk) if chunk else None
        if word:
            current.append(word)
            continue
        if current and any(len(w) > 1 and w.lower() not in NAMES for w in current):  # a letter: a value
            runs.append(" ".join(current))
        current = []
    return runs


def page_texts(page, selector: str) -> list[tuple[str, str]]:
    """The visible texts under ``selector``, each with the id of its nearest element that has one (see COLLECT_JS)."""
    return [(text, where) for text, where in page.eval_on_selector(selector, COLLECT_JS)]


def english_in(page, selector: str, where: dict[str, set[str]] | None = None) -> dict[str, int]:
    """Each English run under ``selector`` with how often it shows; ``where`` gets the ids it shows under."""
    found: dict[str, int] = {}
    for text, owner in page_texts(page, selector):
        for run in english_runs(text):
            found[run] = found.get(run, 0) + 1
            if where is not None:
                where.setdefault(run, set()).add(owner)
    return found


def open_everything(page, selector: str) -> None:
    """Open every closed accordion and ``<details>`` under ``selector``."""
    page.eval_on_selector_all(f"{selector} details:not([open])", "els => els.forEach(d => d.open = true)")
    for _ in range(3):  # an accordion opened may hold closed ones
        closed = page.locator(f"{selector} button.label-wrap:not(.open)")
        if not closed.count():
            return
        for i in range(closed.count() - 1, -1, -1):
            try:
                closed.nth(i).click(timeout=2000)
            except Exception:  # noqa: BLE001 - hidden (another tab's), re-rendered: the next round
                pass
        page.wait_for_timeout(500)


def english_in_tab(page, tab: str, where: dict[str, set[str]] | None = None) -> dict[str, int]:
    """Open the tab (``monitor``, ``runs``, ``sweeps``, ``evaluate``, ``chat``: its elem_id without ``tab-``) with
    every accordion open, the Runs tab with its first run selected, and read its English runs (:func:`english_in`)."""
    page.click(f"#tab-{tab}-button")
    page.wait_for_timeout(2500)
    if tab == "runs":
        rows = page.locator("#tab-runs [role=row]")
        if rows.count() > 1:
            rows.nth(1).click()
            page.wait_for_timeout(2000)
    open_everything(page, f"#tab-{tab}")
    page.wait_for_timeout(1500)
    return english_in(page, f"#tab-{tab}", where)


HEADER = '#run-header [data-testid="run-header"]'


def train_short_demo(runs_dir: Path, tmp: Path, timeout_s: float = 240):
    """The demo trained for 4 GRPO steps by the CLI into ``runs_dir`` (its trajectories, a held-out evaluation, two
    checkpoints, the closing summary: a finished run as the Monitor, Runs, Evaluate and Chat show one); its RunDir."""
    import subprocess
    import sys

    import yaml

    from engines.runs.rundir import RunDir
    from testing.studio import REPO_ROOT

    demo = REPO_ROOT / "assets"
    config = yaml.safe_load((demo / "configs" / "letters_grpo.yaml").read_text(encoding="utf-8"))
    config.update(max_steps=4, save_steps=2, eval_steps=2, eval_samples=4)
    (tmp / "short_demo.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    before = {p.name for p in Path(runs_dir).iterdir()} if Path(runs_dir).is_dir() else set()
    done = subprocess.run(
        [sys.executable, "-m", "engines", "train", "--engine", "trl", "--run-path", str(runs_dir),
         "--agent", str(demo / "agents" / "letters_agent.yaml"),
         "--train", str(demo / "datasets" / "letters_train.jsonl"),
         "--test", str(demo / "datasets" / "letters_test.jsonl"),
         "--reward", f"{demo / 'rewards' / 'letter_reward.py'}:letter_reward",
         "--config", str(tmp / "short_demo.yaml")],
        cwd=str(REPO_ROOT), capture_output=True, text=True, timeout=timeout_s,
    )  # fmt: skip
    if done.returncode:
        raise RuntimeError(f"the short demo run failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    [made] = [p for p in Path(runs_dir).iterdir() if p.name not in before and (p / "run.yaml").exists()]
    return RunDir(made)


def open_finished_run(page, run) -> None:
    """The Monitor showing ``run`` (a RunDir) finished, its trajectories in."""
    from testing import waiting

    page.click("#tab-monitor-button")
    page.fill("#monitor-run input", run.run_id)
    page.keyboard.press("Enter")
    finished = lambda: page.get_attribute(HEADER, "data-state") == "finished"  # noqa: E731
    waiting.wait_for(finished, 60, "the run shown finished", retry_errors=True)
    waiting.wait_for(lambda: page.locator("#samples .aw-sample").count() > 0, 30, "its trajectories", retry_errors=True)


def main(argv: list[str] | None = None) -> int:
    from playwright.sync_api import sync_playwright

    from testing import waiting
    from testing.studio import StudioProcess, launch_chromium

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=7881)
    ap.add_argument("--locale", default="zh-CN")
    ap.add_argument("--launch", action="store_true", help="launch the whole demo from Setup (not a 4-step run)")
    ap.add_argument("--no-run", action="store_true", help="no demo run (Monitor, Runs show no run)")
    a = ap.parse_args(argv)
    t0 = time.monotonic()
    total: dict[str, dict[str, int]] = {}
    where: dict[str, dict[str, set[str]]] = {}
    with tempfile.TemporaryDirectory() as tmp, StudioProcess(Path(tmp) / "runs", port=a.port) as app:
        with sync_playwright() as p:
            browser = launch_chromium(p)
            page = browser.new_context(locale=a.locale, viewport={"width": 1440, "height": 1000}).new_page()
            page.goto(app.url)
            waiting.wait_for(lambda: page.is_enabled("#launch-btn"), 120, "the demo checked", retry_errors=True)
            page.wait_for_timeout(1500)
            open_everything(page, "#tab-setup")
            page.wait_for_timeout(1500)
            total["setup"] = english_in(page, "#tab-setup", where.setdefault("setup", {}))
            if a.launch:  # the whole demo from Setup (400 steps: minutes on a busy machine)
                page.click("#launch-btn")
                waiting.wait_for(
                    lambda: page.get_attribute("#tab-monitor-button", "aria-selected") == "true",
                    60,
                    "the Monitor",
                    retry_errors=True,
                )
                waiting.wait_for(
                    lambda: page.get_attribute(HEADER, "data-state") in ("finished", "failed", "stopped"),
                    600,
                    "the demo run's end",
                    retry_errors=True,
                )
                page.wait_for_timeout(2000)
            elif not a.no_run:
                open_finished_run(page, train_short_demo(app.runs_dir, Path(tmp)))
            for tab in ("monitor", "runs", "sweeps", "evaluate", "chat"):
                total[tab] = english_in_tab(page, tab, where.setdefault(tab, {}))
            browser.close()
    n = 0
    for tab, found in total.items():
        print(f"== {tab}: {len(found)} English strings")
        for run, count in sorted(found.items()):
            print(f"  {count:>3} × {run}    [{', '.join(sorted(where[tab].get(run, ())))}]")
        n += len(found)
    print(f"total {n} English strings in {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The studio in English and Chinese through Gradio's own i18n: the Chinese catalog (a gettext .po) is well formed,
every string given to ``_()`` has its Chinese there and every entry there is used; the Monitor's stream (which
bypasses Gradio) is translated for the page's language."""

from __future__ import annotations

import ast
import re
from html import unescape
from pathlib import Path

import jinja2.ext
from babel.messages.pofile import read_po

from aworld_gui.rendering import engine_text
from aworld_gui.rendering.i18n import CATALOG, _, catalog, key, localize, translations
from aworld_gui.rendering.templates import environment

GUI = Path(__file__).resolve().parent.parent / "aworld_gui"


def template_strings(source: str) -> list[tuple[int, str]]:
    """The literals a Jinja template (aworld_gui/templates/) passes to ``_()``, with their lines: Jinja's own
    extraction over the template as the studio's environment parses it."""
    found = jinja2.ext.extract_from_ast(environment().parse(source), gettext_functions=("_",))
    return [(line, text) for line, _name, text in found if isinstance(text, str)]


def ui_strings() -> dict[str, str]:
    """Every literal passed to ``_()`` (or to ``headers()``, a Dataframe's headers) in the studio's code and its
    templates, with where it is; the diagnoses' words, engine_text's templates and fixed words, the engines' texts."""
    found = {}
    for path in sorted((GUI / "templates").rglob("*")):
        if path.is_file() and path.suffix != ".md":
            for line, text in template_strings(path.read_text(encoding="utf-8")):
                found.setdefault(text, f"templates/{path.name}:{line}")
    for path in sorted(GUI.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("_", "headers"):
                for arg in node.args if node.func.id == "headers" else node.args[:1]:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        found.setdefault(arg.value, f"{path.name}:{node.lineno}")
    from engines.diagnostics.advice import ADVICE  # the diagnoses' words, which the Monitor passes to _()

    for code, advice in ADVICE.items():
        found.setdefault(advice.title, f"engines/diagnostics/advice.py:{code}")
        found.setdefault(advice.advice, f"engines/diagnostics/advice.py:{code}")
    for word in [*engine_text.words(), *engine_text.FIXED]:  # what engines say, as the studio shows it
        found.setdefault(word, "aworld_gui/rendering/engine_text.py")
    for name, text in engine_texts().items():
        found.setdefault(text, name)
    return found


def test_the_templates_strings_are_found():
    """A template's ``_("...")`` counts as the studio's code using that string (test_every_ui_string_has_its_chinese)."""
    assert {"checked in", "No run selected", "Probe", "parallel coordinates"} <= ui_strings().keys()


def engine_texts() -> dict[str, str]:
    """The fixed texts of this project's engines the studio shows through engine_text.known: each engine's
    description and its own settings' help (TRL's help of its fields is TRL's documentation, shown as written)."""
    from engines.core.registry import get_processor_class

    out = {}
    for engine in ("trl", "swift", "verl"):
        cls = get_processor_class(engine)
        out[f"{engine}.description"] = cls.description
        for f in cls.describe_config():
            if f.get("group") == "engine" or engine != "trl":
                out[f"{engine}.{f['name']}"] = f.get("help")
    return {k: v for k, v in out.items() if v}


def test_the_catalog_is_a_well_formed_po_file():
    """What every translator's tool reads: Babel parses it strictly, one entry per msgid (a second entry with the same
    msgid is merged away by readers, its Chinese lost), none fuzzy or empty (gettext shows those in English), and the
    studio's table is exactly its entries."""
    with CATALOG.open("rb") as f:
        po = read_po(f, abort_invalid=True)
    entries = [m for m in po if m.id]
    assert len(entries) > 600 and dict(po.mime_headers)["Language"] == "zh" and po.charset == "utf-8"
    written = re.findall(r'^msgid "', CATALOG.read_text(encoding="utf-8"), flags=re.M)
    assert len(written) - 1 == len(entries), "a msgid appears twice in the catalog"  # - 1: the header's
    assert [m.id for m in entries if m.fuzzy or not m.string or not isinstance(m.id, str)] == []
    assert catalog() == {m.id: m.string for m in entries}
    assert catalog()["Launch training"] == "开始训练"


def test_every_ui_string_has_its_chinese():
    strings = ui_strings()
    assert len(strings) > 150
    zh = catalog()
    missing = {text: where for text, where in strings.items() if text not in zh}
    assert missing == {}, f"add these to {CATALOG.relative_to(GUI.parent)}: {missing}"
    assert all(zh[t].strip() and zh[t] != t for t in strings if t not in ("OK", "CLI", "logits"))


def test_every_catalog_entry_is_used():
    """An entry no code shows (a string changed or removed from the code) is dead weight a translator keeps
    maintaining: remove it from the catalog."""
    unused = sorted(set(catalog()) - set(ui_strings()))
    assert unused == [], f"entries no code uses, remove them from {CATALOG.relative_to(GUI.parent)}: {unused}"


def test_a_templates_strings_are_found():
    """The finder reads the templates' ``_()`` literals (aworld_gui/templates/, as the views move to Jinja), not
    only the Python code's."""
    source = '{% macro x(v) %}<b>{{ _("Step") }}</b> {{ v }}{% endmacro %}\n{{ _("Reward · latest") }} {{ _(v) }}'
    assert template_strings(source) == [(1, "Step"), (2, "Reward · latest")]


def test_keys_are_unique_and_both_languages_complete():
    tables = translations()
    assert len({key(t) for t in catalog()}) == len(catalog())
    assert set(tables["en"]) == set(tables["zh"])
    assert (
        tables["en"][key("Launch training")] == "Launch training" and tables["zh"][key("Launch training")] == "开始训练"
    )


def test_the_streams_html_is_translated_for_the_pages_language():
    html = f'<div><b>{_("Step")}</b> 12 · {_("Reward · latest")} <span title="x&amp;y">0.5</span></div>'
    assert localize(html, "zh-CN") == '<div><b>步数</b> 12 · 奖励 · 最新 <span title="x&amp;y">0.5</span></div>'
    assert localize(html, "en") == '<div><b>Step</b> 12 · Reward · latest <span title="x&amp;y">0.5</span></div>'
    assert localize("no markers", "zh") == "no markers" and localize(None, "zh") is None


def test_every_tab_is_relabelled_when_the_language_changes():
    """Gradio relabels only the selected tab's button when the language changes; the page's script relabels
    the others from page.TABS, which must name every gr.Tab with its label."""
    from aworld_gui.web.page import TABS

    tabs = {}
    for path in sorted(GUI.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "Tab":
                label = node.args[0].args[0].value
                elem_id = next((k.value.value for k in node.keywords if k.arg == "elem_id"), None)
                tabs[elem_id] = label
    assert len(tabs) >= 7 and tabs == TABS


def test_no_literal_english_reaches_a_component():
    """A label, info, placeholder or button text given to Gradio as a plain literal stays English in the
    Chinese UI: it must go through ``_()``. (client_api.py's components are hidden: their labels name the
    endpoints' parameters for gradio_client.)"""
    literal = []
    for path in sorted(GUI.rglob("*.py")):
        if path.name == "client_api.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "gr"
            ):
                continue
            given = [k.value for k in node.keywords if k.arg in ("label", "info", "placeholder")]
            if node.func.attr in ("update", "Button"):
                given += [k.value for k in node.keywords if k.arg == "value"]
            if node.func.attr in ("Button", "Markdown", "Tab", "Accordion", "DownloadButton", "UploadButton"):
                given += node.args[:1]
            literal += [
                f"{path.name}:{node.lineno} {v.value!r}"
                for v in given
                if isinstance(v, ast.Constant) and isinstance(v.value, str) and any(c.isalpha() for c in v.value)
            ]
    assert literal == [], f"wrap these in _(): {literal}"


def test_a_charts_label_and_axis_are_in_the_pages_language():
    """The chart's aria-label holds a translation marker (double quotes inside): it must stay one attribute,
    and both the Monitor's stream (localize) and the page's script (which reads the attribute) translate it."""
    from html.parser import HTMLParser

    from aworld_gui.rendering.charts import Line, svg_chart

    class Svg(HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag == "svg":
                self.attrs = dict(attrs)

        def handle_data(self, data):
            self.texts = [*getattr(self, "texts", []), data]

    html = svg_chart([Line("run-a", [1, 2, 3], [0.1, 0.4, 0.3], "#000", markers=True)], "reward")
    raw = Svg()
    raw.feed(html)
    assert set(raw.attrs) == {"viewbox", "class", "role", "aria-label"}
    assert raw.attrs["aria-label"] == f"reward {_('by step')}"
    for locale, label, step in (("zh-CN", "reward 随步数变化", "步数"), ("en", "reward by step", "step")):
        page = Svg()
        page.feed(localize(html, locale))
        assert page.attrs["aria-label"] == label and step in page.texts and f"run-a @ {step} 2: 0.400" in page.texts


def test_engine_messages_are_shown_in_the_pages_language():
    """A check's summary stays English for the CLI and the API; the studio shows it through engine_text's
    templates: no English word left in Chinese (testing.english_text's finder), the English page unchanged."""
    from engines.fit.memory_estimate import MemoryEstimate
    from engines.trl.processor import TrlProcessor
    from testing.english_text import english_runs
    from aworld_gui.rendering.render import engine_html

    gb = 2**30
    memory = [
        MemoryEstimate(parts={}, per_process=gb // 2, processes=1, limit=22 * gb, limit_name="available RAM"),
        MemoryEstimate(parts={}, per_process=gb // 2, processes=2, limit=22 * gb, limit_name="available RAM"),
    ]
    messages = [
        "'letters-agent' on tiny-letters; tools: none; max turns 1",  # engines/agents/agent_spec.py
        "'calc-agent' on tiny-calc; tools: calc_add, calc_mul (mcp_calc); max turns 4",
        "train 24 rows, test 16 rows; prompt='prompt' (text), answer='answer'",  # engines/inputs/data.py
        "train 24 rows; prompt='messages' (messages), no answer column",
        "letter_reward×1; dry run on 3 row(s): reference → 1.00, 1.00; wrong → 0.20, 0.20",  # rewards/dry_run.py
        *(m.summary() for m in memory),
        TrlProcessor.availability()[1]
        if "CPU" in TrlProcessor.availability()[1]
        else "CPU (no CUDA GPU found; small models only)",
        "verl: no CUDA GPU found; no rollout backend (vllm or sglang) importable",  # verl/availability.py
        "trl: available",  # core/checks.py
    ]
    config_problems = [  # engines/inputs/config.py: one alone, and every one at once after the file's name
        "`learning_rate` must be float, got 'abc' (str) — e.g. learning_rate: 1e-05",
        "unknown config key 'frobnicate' — known keys: beta, learning_rate",
        "bad.yaml: 5 problems in the config: unknown config key 'lora' (did you mean \"lora_r\"?); unknown config key"
        " 'frobnicate'; `max_steps` = -2 is below its minimum 1 — use a value between 1 and 10000000; `learning_rate`"
        " must be float, got 'abc' (str) — e.g. learning_rate: 1e-05; `beta` must be float, got 'x' (str) — e.g. beta: 0.0",
        "2 problems in the config: `loss_type` = 'gpo' is not one of grpo, dr_grpo (did you mean \"grpo\"?) — set"
        " loss_type to one of: grpo, dr_grpo; `temperature` = inf is not a finite number — use a finite number",
        "`max_steps` must not be empty — set it, e.g. max_steps: 100",
        "`num_generations` = 99 is above its maximum 64 — use a value of at most 64",
        # engines/fit/data_fit.py: settings the data cannot feed
        "the training set has 24 usable row(s) but one optimizer step takes 64 prompts (prompts_per_step=64 ×"
        " gradient_accumulation_steps=1): training would run 0 steps — lower prompts_per_step so one step takes at"
        " most 24 prompt(s), or add rows",
    ]
    for text in messages:
        shown = engine_text.message(text)
        assert localize(shown, "en") == text
        assert english_runs(localize(shown, "zh")) == [], (text, localize(shown, "zh"))
    # a config's problems: their words in Chinese, the keys, values and types they name as code (as the page skips it)
    for text in config_problems:
        assert localize(engine_text.message(text), "en") == text
        html = localize(engine_html(text), "zh")
        words = unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<code>.*?</code>", " ", html)))
        assert english_runs(words) == [], (text, html)
    assert engine_text.message("a message no template knows") == "a message no template knows"
    assert localize(str(engine_text.known(TrlProcessor.description)), "zh").startswith("在本机运行 Hugging Face TRL")


def test_a_failed_runs_cause_and_a_lost_processs_message_are_shown_in_chinese():
    """The newcomer's walkthrough in zh: the Monitor's failure box read "失败 — 原因: killed" and "the training process
    is gone without a final status …"; Runs read "失败: killed". Every cause, and that message, in the page's language
    (in English as the engine wrote them)."""
    from engines.runs.causes import CAUSES
    from engines.runs.lifecycle import LOST_ERROR
    from testing.english_text import english_runs
    from aworld_gui.rendering import render
    from aworld_gui.rendering.render import engine_html

    for text in [*CAUSES, LOST_ERROR, "resumed from checkpoint-25 (step 25), attempt 2"]:  # and a resume's event
        assert localize(engine_text.message(text), "en") == text
        assert english_runs(localize(engine_text.message(text), "zh")) == [], text
        assert text not in localize(engine_html(text), "zh")
    assert localize(engine_text.message("killed"), "zh") == "被终止"
    # the Monitor's events: a queued run's message, beside its other fields
    events = render.events_html(
        [{"time": 0, "event": "queued", "message": "waiting for the running job to finish", "ahead": 1}]
    )
    assert "等待正在运行的任务结束 · ahead=1" in localize(events, "zh") and "message=" not in events
    assert "waiting for the running job to finish · ahead=1" in localize(events, "en")


def test_engine_setup_hints_show_their_commands_as_code_and_the_rest_in_the_pages_language():
    """The swift and verl engines' unavailability reasons (what to install, the command that sets it up): their words
    in the page's language, their commands, paths and variables as code (shown as written), the English page the
    engine's own text; a long reason folds after its first part, each part read whole."""
    import html
    import re

    from aworld_gui.rendering import render
    from aworld_gui.tabs.reward_card import shape_html
    from engines.verl.availability import INSTALL_HINT
    from testing.english_text import english_runs

    reasons = [
        "not set up — run: python -m engines setup swift (builds ms-swift's environment in /w/.venv-swift; or set "
        "$AWORLD_SWIFT_PYTHON to a Python that has ms-swift)",  # engines/swift/environment.py
        "setup did not finish — run: python -m engines setup swift (ms-swift's environment /w/.venv-swift is incomplete)",
        "no CUDA GPU found; no rollout backend (vllm or sglang) importable; verl's trainer dependencies are missing "
        f"(transfer_queue: extra verl-core) — {INSTALL_HINT}; or set ray_address / RAY_ADDRESS to a Ray cluster that "
        "has them",  # engines/verl/availability.py
        "verl is not installed in /usr/bin/python3; no CUDA GPU found",
    ]

    def text(shown: str, code: bool = True) -> str:
        shown = re.sub(r"<code>.*?</code>", " ", shown) if not code else shown
        return html.unescape(re.sub(r"<[^>]+>", "", shown))

    for reason in reasons:
        for shown in (render.engine_html(reason), render._reason(reason)):
            assert english_runs(text(localize(shown, "zh"), code=False)) == [], localize(shown, "zh")
        assert text(localize(render.engine_html(reason), "en")) == reason
    folded = localize(render._reason(reasons[0]), "zh")
    assert folded.startswith("<details><summary>未安装 …</summary>运行: <code>python -m engines setup swift</code>")
    shape = "list[6] of list[1] of {role, content}"  # engines/rewards/calling.shape
    assert text(localize(shape_html(shape), "en")) == shape  # its types and keys as code, its "of" translated
    assert text(localize(shape_html(shape), "zh")) == "list[6] 每项为 list[1] 每项为 {role, content}"
    assert text(localize(shape_html(shape), "zh"), code=False).split() == ["每项为", "每项为"]

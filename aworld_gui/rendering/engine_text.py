"""What engines say, shown in the page's language.

Engines write English: the CLI, the logs, ``--json`` and the API show their messages as written. The studio shows
them through ``_()`` like its own strings: a fixed text of an engine (an engine's description, its settings' help,
a diagnosis's words) by :func:`known`, and a check's summary, which carries values (names, counts, paths), by
:func:`message`: the message is cut into its parts (``"; "``, ``" — "``) and each part matched whole against
:data:`TEMPLATES`, whose words go through ``_()`` while the values they capture stay as written. A part no template
matches is shown as the engine wrote it. Every word here has its Chinese in the studio's catalog (``i18n.catalog``; tests/test_i18n.py).

Template syntax: ``[words]`` is translated (``[a|b]``: either one, translated), ``{}`` is a value kept as written,
everything else is matched and kept literally; what stands between backticks is a command, a path or a variable
(values and literal text), shown as code in HTML (:func:`pieces`, render.engine_html) and as written by
:func:`message`.
"""

from __future__ import annotations

import functools
import re

from engines.runs.causes import Cause

from .i18n import _, catalog

#: whole messages, tried before a message is cut into parts
WHOLE = [
    "CPU ([no CUDA GPU found]; [small models only])",
    # why a run failed (engines/runs/causes.py: status.json's cause, as the Monitor, Runs and Evaluate show it)
    *(f"[{cause}]" for cause in Cause),
    # a run whose process is gone without a final status (engines/runs/lifecycle.py LOST_ERROR)
    "[the training process is gone without a final status (killed, or the machine restarted)]",
    # a queued run's event (engines/runs/lifecycle.py)
    "[waiting for the running job to finish]",
    # a resumed run's event (engines/core/resume.py)
    "[resumed from] {} ([step] {}), [attempt] {}",
]
#: one part of a message each (engines/agents/agent_spec.py, data.py, rewards/dry_run.py, fit/memory_estimate.py,
#: the engines' availability, core/checks.py)
TEMPLATES = [
    # agent: "'letters-agent' on tiny-letters; tools: none; max turns 1"
    "'{}' [on] {}",
    "[tools:] [none]",
    "[tools:] {}",
    "[max turns] {}",
    # dataset: "train 24 rows, test 16 rows; prompt='prompt' (text), answer='answer'"
    "[train] {} [rows], [test] {} [rows]",
    "[train] {} [rows]",
    "prompt='{}' ([text|messages]), answer='{}'",
    "prompt='{}' ([text|messages]), [no answer column]",
    # reward: "letter_reward×1; dry run on 3 row(s): reference → 1.00, 1.00; wrong → 0.20, 0.20"
    "[dry run on] {} [row(s)]: [reference] → {}",
    "[wrong] → {}",
    # memory: "≈ 0.58 GB peak per process of 22.0 GB available RAM (3 %)"
    "≈ {} GB [peak per process of] {} GB [available RAM] ({} %)",
    "≈ {} GB [peak per process], {} GB [for] {} [processes of] {} GB [available RAM] ({} %)",
    "≈ {} GB [peak per process of] {} GB [free on each GPU] ({}) ({} %)",
    "≈ {} GB [peak per process]",
    # the engines' availability
    "{}: [available]",
    "{}: [no CUDA GPU found]",
    "[no CUDA GPU found]",
    "[no rollout backend (vllm or sglang) importable]",
    "[verl's trainer dependencies are missing] ({}: [extra] `{}`)",
    "[verl is not installed in] `{}`",
    # verl's install hint (engines/verl/availability.py INSTALL_HINT) and its cluster alternative
    "[on a CUDA machine, in an environment of its own:] `{}`[, then] `{}` ([see] {})",
    "[or set] `{}` [to a Ray cluster that has them]",
    # ms-swift's environment (engines/swift/environment.py)
    "[not set up]",
    "[setup did not finish]",
    "[set up with other versions] ({})",
    "[run:] `{}` ([builds ms-swift's environment in] `{}`",
    "[run:] `{}` ([ms-swift's environment] `{}` [is incomplete])",
    "[run:] `{}`",
    "[or set] `{}` [to a Python that has ms-swift])",
    # a config's values (engines/inputs/config.py, trl/settings.py): "`learning_rate` must be float, got 'abc' (str)"
    "`{}` [must not be empty]",
    "`{}` [must be] `{}`, [got] `{} ({})`",
    "`{}` [must be] `{}`, [got] `{}`",
    '`{}` = `{}` [is not one of] `{}` ([did you mean] `"{}"`?)',
    "`{}` = `{}` [is not one of] `{}`",
    "`{}` = `{}` [is not a finite number]",
    "`{}` = `{}` [is below its minimum] {}",
    "`{}` = `{}` [is above its maximum] {}",
    "[unknown config key] `'{}'` ([did you mean] `\"{}\"`?)",
    "[unknown config key] `'{}'`",
    # their fixes
    "[set it, e.g.] `{}`",
    "[e.g.] `{}`",
    "[set] `{}` [to one of:] `{}`",
    "[use a value between] {} [and] {}",
    "[use a value of at least] {}",
    "[use a value of at most] {}",
    "[use a finite number]",
    "[known keys:] `{}`",
    # settings the data cannot feed (engines/fit/data_fit.py)
    "[the training set has] {} [usable row(s) but one optimizer step takes] {} [prompts] (`{}`)[: training would run 0 steps]",
    "[lower] `{}` [so one step takes at most] {} [prompt(s), or add rows]",
    # the probe's verdict lines (engines/probe/verdicts.py)
    "[every term of the reward gave every one of the] {} [samples the same value] ({}): [zero spread in every group, at any num_generations]",
    "[change the reward]",
    "{} [of prompt groups give all] {} [completions the same reward] ([estimated] {}): [GRPO would learn nothing from those steps' groups]",
    "[the reward term] {} [gave every sample] {} [while] {} [varied]",
    "{} [of completions hit] `max_completion_length` = {} ([their length past it is unknown here: probe again with a higher one])",
    "[no completion called a tool] ({} [rollouts])",
    "{} [of the tool calls failed] ({} [rollouts])",
    "{} [of the] {} [prompts were never solved] ([reward] ≥ {}) [in] {} [samples]",
    "{} [of the] {} [prompts were solved in every one of] {} [samples]",
]
#: the head of a config's every problem at once (engines/inputs/config.py all_problems), the file's name before it
#: when it came from a file: "bad.yaml: 5 problems in the config: <problem>; <problem>; …"
_CONFIG_HEAD = re.compile(r"(?:(?P<file>[^:;`]+): )?(?P<count>\d+) problems in the config: ")
#: fixed words of engines shown through :func:`known` besides the engines' descriptions and settings' help: the
#: memory estimate's parts (engines/fit/memory_estimate.py, "_" read as a space) and a reward's calling convention
FIXED = [
    "weights",
    "gradients",
    "optimizer",
    "reference model",
    "kv cache",
    "logits",
    "activations",
    "runtime",
    "per sample",
]
_TOKEN = re.compile(r"\[([^\]]+)\]|\{\}|`")
_SPLIT = re.compile(r"(; | — )")


@functools.cache
def _compiled(template: str) -> tuple[re.Pattern, tuple[tuple[str, bool], ...]]:
    """The template's regex, a group for each piece, and each piece's kind (``l``: literal, ``w``: words to
    translate, ``v``: a value) with whether it is code (between backticks)."""
    pattern, kinds, at, code = [], [], 0, False

    def literal(text: str) -> None:
        if text:
            pattern.append(f"({re.escape(text)})")
            kinds.append(("l", code))

    for m in _TOKEN.finditer(template):
        literal(template[at : m.start()])
        if m.group(0) == "`":
            code = not code
        elif m.group(1):
            pattern.append("(" + "|".join(re.escape(w) for w in m.group(1).split("|")) + ")")
            kinds.append(("w", code))
        else:
            pattern.append("(.+?)")
            kinds.append(("v", code))
        at = m.end()
    literal(template[at:])
    return re.compile("".join(pattern) + r"\Z", re.S), tuple(kinds)


def words() -> list[str]:
    """Every word of the templates (what the catalog must translate)."""
    return list(
        dict.fromkeys(
            [
                *(
                    w
                    for t in [*WHOLE, *TEMPLATES]
                    for m in _TOKEN.finditer(t)
                    if m.group(1)
                    for w in m.group(1).split("|")
                ),
                "problems in the config",
            ]
        )
    )


#: a message's pieces: (text, code) — text with its words marked for translation, code whether it is shown as code
Pieces = list[tuple[str, bool]]


def _apply(template: str, text: str) -> Pieces | None:
    regex, kinds = _compiled(template)
    m = regex.match(text)
    if not m:
        return None
    return [(str(_(m.group(i))) if kind == "w" else m.group(i), code) for i, (kind, code) in enumerate(kinds, 1)]


def _part(text: str, templates: list[str]) -> Pieces:
    for template in templates:
        done = _apply(template, text)
        if done is not None:
            return done
    return [(text, False)]


def pieces(text: str) -> Pieces:
    """An engine's message as pieces: its known words marked for translation, each piece with whether it is code."""
    whole = _part(text, WHOLE)
    if whole != [(text, False)]:
        return whole
    head: Pieces = []
    m = _CONFIG_HEAD.match(text)
    if m:
        file = [(m["file"], True), (": ", False)] if m["file"] else []
        head = [*file, (f"{m['count']} ", False), (str(_("problems in the config")), False), (": ", False)]
        text = text[m.end() :]
    return head + [
        q for i, p in enumerate(_SPLIT.split(text)) for q in ([(p, False)] if i % 2 else _part(p, TEMPLATES))
    ]


def message(text: str | None) -> str:
    """An engine's message with its known words marked for translation (the values kept as written)."""
    if not text or "__i18n__" in text:
        return text or ""
    return "".join(piece for piece, _code in pieces(text))


def known(text: str | None):
    """A fixed text of an engine (a description, a setting's help): marked for translation when it has its
    Chinese, else as written (a plugin engine's own words)."""
    return _(text) if text and text in catalog() else (text or "")


__all__ = ["FIXED", "TEMPLATES", "WHOLE", "known", "message", "pieces", "words"]

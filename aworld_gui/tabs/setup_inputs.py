"""The Setup tab's components (:class:`SetupUI`) and the run inputs their values describe (:func:`collect`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..core import inputs as inp
from ..rendering.i18n import _

AUTO = "(auto-detect)"
NONE = "(none)"
#: the dropdowns' choices for them: the value as above, the label in the page's language
AUTO_CHOICE = (str(_("(auto-detect)")), AUTO)
NONE_CHOICE = (str(_("(none)")), NONE)


@dataclass
class SetupUI:
    strip: Any = None
    launch_btn: Any = None
    probe_btn: Any = None  # enabled as launch_btn is, by the check (tabs/probe_panel.py)
    probe_chip: Any = None  # the probe's verdict beside the strip
    launch_msg: Any = None
    agent: Any = None
    agent_upload: Any = None
    agent_note: Any = None
    agent_status: Any = None
    agent_spec: Any = None
    train: Any = None
    train_upload: Any = None
    test: Any = None
    test_upload: Any = None
    prompt_col: Any = None
    answer_col: Any = None
    data_status: Any = None
    train_preview: Any = None
    test_preview: Any = None
    rendered: Any = None
    reward_pick: Any = None
    reward_upload: Any = None
    reward_note: Any = None
    reward_weights: Any = None
    reward_status: Any = None
    reward_preview: Any = None
    reward_calls: Any = None
    engine: Any = None
    engines_table: Any = None
    config_status: Any = None
    config_yaml: Any = None
    effective: Any = None
    memory_estimate: Any = None  # the config check's memory estimate (HTML)
    checked: Any = None  # gr.State: the last check's effective config, tagged with its spec
    reward_docs: Any = None  # gr.State: {key: (label, description)}
    cli: Any = None
    problems: Any = None  # gr.State: {module: why its upload cannot be used}
    run_name: Any = None
    run_note: Any = None
    preset: Any = None
    preset_load: Any = None
    preset_name: Any = None
    preset_save: Any = None
    preset_msg: Any = None
    config_memory: Any = None
    config_note: Any = None
    data_note: Any = None

    def inputs(self) -> list:
        return [
            self.agent,
            self.train,
            self.test,
            self.prompt_col,
            self.answer_col,
            self.reward_pick,
            self.reward_weights,
            self.config_yaml,
            self.engine,
            self.problems,
            self.run_name,
            self.run_note,
        ]


def collect(
    agent, train, test, prompt_col, answer_col, picks, weights, config_text, engine, problems=None, name="", note=""
) -> inp.SetupInputs:
    """The SetupInputs the components describe."""
    weights_by_row = _weights(weights)
    rewards = []
    for i, key in enumerate(picks or []):
        w = weights_by_row[i] if i < len(weights_by_row) else 1.0
        rewards.append({"ref": key, "weight": w} if ":" in key else {"name": key, "weight": w})
    columns = {k: v for k, v in (("prompt", prompt_col), ("answer", answer_col)) if v and v != AUTO}
    return inp.SetupInputs(
        agent=agent or None,
        train=train or None,
        test=None if (not test or test == NONE) else test,
        rewards=rewards,
        config_text=config_text or "",
        engine=engine or inp.DEMO_ENGINE,
        columns=columns,
        problems=dict(problems or {}),
        name=(name or "").strip(),
        note=(note or "").strip(),
    )


def _weights(table: Any) -> list[float]:
    rows = table_rows(table)
    out = []
    for r in rows:
        try:
            w = float(r[1])
            out.append(w if math.isfinite(w) else 1.0)
        except (TypeError, ValueError, IndexError):
            out.append(1.0)
    return out


def table_rows(table: Any) -> list[list]:
    if table is None:
        return []
    if hasattr(table, "values") and hasattr(table, "columns"):  # pandas
        return table.values.tolist()
    if isinstance(table, dict) and "data" in table:
        return table["data"]
    return list(table)

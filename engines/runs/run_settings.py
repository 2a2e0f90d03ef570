"""Settings of the run itself, taken by every engine beside the engine's own config: the live diagnoses'
thresholds and the best checkpoint / early stopping (docs/DIAGNOSTICS.md). Split off the config before the
engine checks the rest."""
from __future__ import annotations

from typing import Any

from ..diagnostics.thresholds import thresholds
from ..inputs.config import ConfigField, load_config_input, validate_config

#: settings of the run itself, taken by every engine (beside the engine's own config): the live diagnoses
#: and the best checkpoint / early stopping (docs/DIAGNOSTICS.md)
RUN_FIELDS: list[ConfigField] = [
    ConfigField("diagnostics", dict, None, "thresholds of the live diagnoses, e.g. {zero_spread_fraction: 0.9}, "
                "or {enabled: false} (docs/DIAGNOSTICS.md lists them)", nullable=True),
    ConfigField("early_stopping_patience", int, None, "stop after this many evaluations without a better "
                "metric_for_best (cause early_stopped); empty = never", min=1, max=1_000_000, nullable=True),
    ConfigField("metric_for_best", str, None, "the metric that picks the best checkpoint (default: the held-out "
                "reward, eval/reward); TRL's metric_for_best_model is the same", nullable=True),
]
RUN_KEYS = {f.name for f in RUN_FIELDS}


def split_run_settings(config: Any) -> tuple[dict[str, Any], Any]:
    """(the run settings the user gave, checked; the engine's config). Without run settings the config
    goes on unchanged (a path stays a path)."""
    user = load_config_input(config)
    if not RUN_KEYS & set(user):
        return {}, config
    given = {k: v for k, v in user.items() if k in RUN_KEYS}
    checked, _ = validate_config(given, RUN_FIELDS)
    if checked.get("diagnostics") is not None:
        thresholds(checked["diagnostics"])     # its keys and values, named when wrong
    return {k: checked[k] for k in given}, {k: v for k, v in user.items() if k not in RUN_KEYS}

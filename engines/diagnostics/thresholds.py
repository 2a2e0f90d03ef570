"""Every threshold of the live diagnoses, in one place: a run's config changes any of them under its
``diagnostics:`` key (docs/DIAGNOSTICS.md lists them), e.g.::

    diagnostics:
      zero_spread_fraction: 0.9     # no_reward_spread only when 90 % of the groups have no spread
      enabled: false                # no diagnoses at all

Windows count *logged* steps (rows of metrics.jsonl), so ``logging_steps: 5`` makes them 5× longer in
optimizer steps.
"""

from __future__ import annotations

from dataclasses import field, make_dataclass
from typing import Any

from ..inputs.config import ConfigField, validate_config

FIELDS: list[ConfigField] = [
    ConfigField("enabled", bool, True, "diagnose the run while it trains (events.jsonl, Monitor, CLI)"),
    ConfigField("poll_seconds", float, 1.0, "how often the run directory is read for new rows", min=0.05, max=60),
    # no_reward_spread
    ConfigField(
        "zero_spread_fraction",
        float,
        0.75,
        "no_reward_spread: share of prompt groups whose completions all scored the same",
        min=0.0,
        max=1.0,
    ),
    ConfigField(
        "zero_spread_steps",
        int,
        3,
        "no_reward_spread and reward_constant: consecutive logged steps it must hold",
        min=1,
    ),
    # reward_flat
    ConfigField("flat_window", int, 100, "reward_flat: logged steps looked at", min=4),
    ConfigField(
        "flat_min_change",
        float,
        0.02,
        "reward_flat: the smallest change of the smoothed reward "
        "(mean of the window's last third minus its first third) that counts as moving",
        min=0.0,
    ),
    ConfigField(
        "flat_below_max",
        float,
        0.2,
        "reward_flat: only while the reward is at least this far below "
        "its maximum (a fraction of max(|maximum|, 1)); a run that has learned may sit still",
        min=0.0,
    ),
    # reward_saturated
    ConfigField(
        "reward_max",
        float,
        None,
        "reward_saturated: the reward's maximum (default: the best reward logged so far)",
        nullable=True,
    ),
    ConfigField(
        "saturated_margin",
        float,
        0.01,
        "reward_saturated: how close to the maximum counts as at it (a fraction of max(|maximum|, 1))",
        min=0.0,
        max=1.0,
    ),
    ConfigField(
        "saturated_steps",
        int,
        10,
        "reward_saturated: consecutive logged steps at the maximum, every group without spread",
        min=1,
    ),
    # completions_truncated
    ConfigField(
        "truncated_fraction",
        float,
        0.5,
        "completions_truncated: share of completions cut at max_completion_length",
        min=0.0,
        max=1.0,
    ),
    ConfigField("truncated_steps", int, 3, "completions_truncated: consecutive logged steps it must hold", min=1),
    ConfigField(
        "truncated_min_length",
        int,
        8,
        "completions_truncated: only when max_completion_length is at "
        "least this (a shorter limit is a short-answer task by design, e.g. one letter)",
        min=1,
    ),
    # kl_high
    ConfigField("kl_bound", float, 1.0, "kl_high: KL to the reference model above which rising is a problem", min=0.0),
    ConfigField("kl_steps", int, 5, "kl_high: consecutive logged steps above the bound, rising overall", min=2),
    # eval_diverges
    ConfigField(
        "diverge_evals",
        int,
        2,
        "eval_diverges: consecutive evaluations with the held-out reward down while the train reward is up",
        min=1,
    ),
    # reward_term_constant
    ConfigField(
        "term_constant_steps",
        int,
        5,
        "reward_term_constant: consecutive logged steps one term of a mix gives every sample the same value",
        min=1,
    ),
    # memory_rising
    ConfigField("memory_window", int, 10, "memory_rising: logged steps the trend is fitted on", min=3),
    ConfigField(
        "memory_rising_share",
        float,
        0.7,
        "memory_rising: share of those steps where peak memory grew",
        min=0.0,
        max=1.0,
    ),
    ConfigField(
        "memory_horizon_steps",
        int,
        1000,
        "memory_rising: predict running out within this many steps (or before the run's last step, if sooner)",
        min=1,
    ),
    # tools_unused
    ConfigField(
        "tools_steps",
        int,
        5,
        "tools_unused: consecutive logged steps without tool calls (or with most calls failing)",
        min=1,
    ),
    ConfigField(
        "tools_failure_fraction",
        float,
        0.5,
        "tools_unused: share of failing tool calls that counts as most",
        min=0.0,
        max=1.0,
    ),
]


#: the thresholds of one run, one attribute per field of :data:`FIELDS` (defaults from there)
Thresholds = make_dataclass("Thresholds", [(f.name, Any, field(default=f.default)) for f in FIELDS], frozen=True)


def thresholds(config: dict[str, Any] | None):
    """The thresholds a run's ``diagnostics:`` mapping gives (unknown keys and bad values are a
    CheckError that names the key)."""
    values, _ = validate_config(dict(config or {}), FIELDS)
    return Thresholds(**values)

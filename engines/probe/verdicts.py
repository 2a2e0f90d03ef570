"""The probe's verdict lines: a problem the samples show before the run, with the code, words and setting of the live
diagnosis of the same problem (engines/diagnostics/advice.py, docs/DIAGNOSTICS.md), the numbers behind it, and the
setting to change. ``too_hard`` / ``too_easy`` are the probe's own codes (most prompts never / always solved)."""

from __future__ import annotations

from typing import Any

from ..diagnostics.advice import ADVICE
from ..diagnostics.thresholds import thresholds

#: too_hard / too_easy: the share of prompts never / always solved that counts as most
DIFFICULTY_SHARE = 0.75


def _line(code: str, message: str, setting: str | None = None, **evidence: Any) -> dict[str, Any]:
    a = ADVICE[code]
    return {
        "code": code,
        "title": a.title,
        "message": message,
        "advice": a.advice,
        "setting": setting if setting is not None else a.setting,
        "evidence": evidence,
    }


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def verdicts(report: dict[str, Any], diagnostics: dict | None = None) -> list[dict[str, Any]]:
    """Verdict lines from a probe's statistics (``report``'s ``settings``, ``pass_rates``, ``zero_spread``,
    ``lengths``, ``terms``, ``tools``); thresholds as the run's ``diagnostics:`` sets them."""
    t = thresholds({k: v for k, v in (diagnostics or {}).items() if k != "enabled"})
    s, out = report["settings"], []
    terms = report["terms"]
    zs = report["zero_spread"]
    varying = [n for n, v in terms.items() if v.get("samples") and not v["constant"]]
    if terms and not varying:
        values = ", ".join(f"{n} = {v.get('min')}" for n, v in terms.items())
        out.append(
            _line(
                "reward_constant",
                f"every term of the reward gave every one of the {report['samples']} samples the same value "
                f"({values}): zero spread in every group, at any "
                "num_generations; change the reward",
                setting="reward",
                zero_spread=zs["observed"],
            )
        )
    elif zs["observed"] >= t.zero_spread_fraction:
        k = zs["group_size"]
        later = ", ".join(f"{_pct(v)} at {n}" for n, v in zs["estimated"].items())
        out.append(
            _line(
                "no_reward_spread",
                f"{_pct(zs['observed'])} of prompt groups give all {k} completions the same reward (estimated "
                f"{later}): GRPO would learn nothing from those steps' groups",
                zero_spread=zs["observed"],
                estimated=zs["estimated"],
            )
        )
    if len(terms) > 1 and varying:
        for name, v in terms.items():
            if v.get("samples") and v["constant"]:
                out.append(
                    _line(
                        "reward_term_constant",
                        f"the reward term {name} gave every sample {v['min']} while {', '.join(varying)} varied",
                        setting=f"reward: {name}",
                        term=name,
                    )
                )
    ln = report["lengths"]
    if ln["truncated_share"] >= t.truncated_fraction and s["max_completion_length"] >= t.truncated_min_length:
        out.append(
            _line(
                "completions_truncated",
                f"{_pct(ln['truncated_share'])} of completions hit max_completion_length = "
                f"{s['max_completion_length']} (their length past it is unknown here: probe again with a higher one)",
                truncated_share=ln["truncated_share"],
            )
        )
    tools = report.get("tools")
    if tools is not None and (tools["calls_per_rollout"] == 0 or tools["failing_share"] >= t.tools_failure_fraction):
        what = (
            "no completion called a tool"
            if tools["calls_per_rollout"] == 0
            else f"{_pct(tools['failing_share'])} of the tool calls failed"
        )
        out.append(_line("tools_unused", f"{what} ({report['samples']} rollouts)", **tools))
    pr = report["pass_rates"]
    if pr["share_pass_rate_zero"] >= DIFFICULTY_SHARE:
        out.append(
            _line(
                "too_hard",
                f"{_pct(pr['share_pass_rate_zero'])} of the {pr['prompts']} prompts were never solved (reward ≥ "
                f"{pr['pass_threshold']}) in {zs['group_size']} samples",
                setting="train_dataset",
                share=pr["share_pass_rate_zero"],
            )
        )
    if pr["share_pass_rate_one"] >= DIFFICULTY_SHARE:
        out.append(
            _line(
                "too_easy",
                f"{_pct(pr['share_pass_rate_one'])} of the {pr['prompts']} prompts were solved in every one of "
                f"{zs['group_size']} samples",
                setting="train_dataset",
                share=pr["share_pass_rate_one"],
            )
        )
    return out

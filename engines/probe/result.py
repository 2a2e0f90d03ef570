"""What a probe returns: its report (a JSON-serialisable dict, as stored in ``<runs>/.probes/<key>.json``), whether
it was read back instead of sampled, a readable summary (what ``aworld-train probe`` prints), and the difficulty
filter over it."""

from __future__ import annotations

import os
from typing import Any


def percent(x: float | None, none: str = "-") -> str:
    """A share as a whole percentage (``none`` where there is none): the CLI's summary and the studio's report."""
    return none if x is None else f"{100 * float(x):.0f} %"


def duration(x: float | None, none: str = "-") -> str:
    """Seconds as seconds, minutes or hours (``none`` where there are none)."""
    if x is None:
        return none
    if x < 120:
        return f"{x:.2f} s"
    return f"{x / 60:.1f} min" if x < 7200 else f"{x / 3600:.1f} h"


class ProbeResult:
    """A probe's report. ``report`` the dict, ``reused`` True when it was the stored one (nothing sampled)."""

    def __init__(self, report: dict[str, Any], reused: bool = False):
        self.report, self.reused = report, reused

    def __getitem__(self, key: str) -> Any:
        return self.report[key]

    @property
    def key(self) -> str:
        return self.report["key"]

    @property
    def path(self) -> str:
        return self.report["path"]

    @property
    def verdicts(self) -> list[dict]:
        return self.report["verdicts"]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.report)

    def pass_rates(self) -> dict[int, float]:
        """Training row index → its pass rate."""
        return {int(p["row"]): float(p["pass_rate"]) for p in self.report["prompts"]}

    def write_filtered(self, path: str | os.PathLike, band: Any = None) -> dict[str, Any]:
        """The training rows whose pass rate lies inside ``band`` (default strictly between 0 and 1) written to
        ``path`` (.jsonl) with ``<path>.provenance.json`` beside it (engines/probe/filtering.py)."""
        from ..inputs.data import load_table
        from .filtering import write_filtered

        source = self.report["inputs"]["dataset"]["source"]
        if not source:
            from ..results.check_result import CheckError

            raise CheckError("probe", "the probed training set is not a file", "probe a training set given as a file")
        return write_filtered(self.report, load_table(source), path, band)

    def __repr__(self) -> str:
        codes = [v["code"] for v in self.verdicts]
        return f"ProbeResult(key={self.key!r}, reused={self.reused}, verdicts={codes})"

    def summary(self) -> str:
        r, s = self.report, self.report["settings"]
        pr, zs, ln = r["pass_rates"], r["zero_spread"], r["lengths"]
        lines = [
            f"probe {r['key']}" + (" (stored: nothing sampled)" if self.reused else "") + f": {r['path']}",
            f"  {pr['prompts']} prompts × {s['samples']} samples from {s['model']} "
            f"(temperature {s['temperature']}, max_completion_length {s['max_completion_length']})",
            f"  generation: {s['generation']}",
            f"  pass rate (reward ≥ {pr['pass_threshold']}): never {percent(pr['share_pass_rate_zero'])}, always "
            f"{percent(pr['share_pass_rate_one'])}, mean reward {pr['mean_reward']:.3f}; mean reward 0: "
            f"{percent(pr['share_mean_at_zero'])}",
            "  mean reward per prompt: "
            + " ".join(
                f"[{lo:g},{hi:g}){c}"
                for lo, hi, c in zip(pr["histogram"]["edges"], pr["histogram"]["edges"][1:], pr["histogram"]["counts"])
                if c
            ),
            f"  zero-spread groups: {percent(zs['observed'])} at {zs['group_size']}, estimated "
            + ", ".join(f"{percent(v)} at {n}" for n, v in zs["estimated"].items())
            + f" ({zs['method']})",
            f"  completions: {percent(ln['truncated_share'])} cut at {ln['max_completion_length']} tokens; length p50 "
            f"{ln['p50']}, p95 {ln['p95']}, max {ln['max']}; "
            + (
                f"a limit of {ln['length_cutting_under_5_percent']} cuts under 5 %"
                if ln["length_cutting_under_5_percent"] is not None
                else "the limit that cuts under 5 % is above max_completion_length"
            ),
        ]
        for name, t in r["terms"].items():
            if t.get("samples"):
                lines.append(
                    f"  term {name}: mean {t['mean']:.3f}, std {t['std']:.3f}, range [{t['min']:g}, {t['max']:g}]"
                    + (" — constant" if t["constant"] else "")
                )
        if r.get("tools"):
            t = r["tools"]
            lines.append(
                f"  tools: {t['calls_per_rollout']:.2f} calls per rollout, {percent(t['failing_share'])} failing, "
                f"{t['turns_mean']:.2f} turns of {t['max_turns']}"
            )
        fc = r["forecast"]
        lines.append("  time:")
        for item in fc["items"]:
            value = (
                f"{item['seconds']:.1f} tokens/s"
                if "tokens/s" in item["what"] and item["seconds"] is not None
                else duration(item["seconds"])
            )
            lines.append(f"    {item['what']}: {value} ({item['basis']}: {item['how']})")
        if fc.get("note"):
            lines.append(f"    note: {fc['note']}")
        if r.get("memory"):
            lines.append(f"  memory estimate: {r['memory'].get('summary')}")
        if r["verdicts"]:
            lines.append("verdicts:")
            for v in r["verdicts"]:
                change = f" Change: {v['setting']}." if v.get("setting") else ""
                lines.append(f"  {v['code']}: {v['message']}. {v['advice']}.{change}")
        else:
            lines.append("verdicts: none — nothing in the samples predicts a problem this probe looks for")
        return "\n".join(lines)

"""A run's samples.jsonl with GRPO prompt groups, as the trl engine writes them (engines/runs/sample_groups.py):
two logged steps of the letters demo, 3 prompts × 4 completions each, 2 groups written per step; step 1's
first group gave every completion the same reward (zero spread). Advantages as TRL's ``scale_rewards: group``."""

from __future__ import annotations

import statistics

from engines.runs.rundir import RunDir
from engines.runs.sample_groups import grouped_rows, step_summary

G = 4
#: step -> per prompt (letter, its 4 completions); the third prompt of each step is not written, only counted
STEPS = {
    1: [("B", ["A", "C", "D", "E"]), ("F", ["F", "G", "F", "x"]), ("H", ["H", "H", "H", "H"])],
    2: [("C", ["C", "C", "D", "c"]), ("A", ["A", "B", "A", "A"]), ("E", ["Q", "R", "S", "T"])],
}


def write_group_samples(run: RunDir) -> None:
    for step, prompts in STEPS.items():
        rows, totals = [], []
        for letter, completions in prompts:
            scores = [float(c == letter) for c in completions]
            lengths = [0.5 * len(c) / 2 for c in completions]
            group_totals = [s + w for s, w in zip(scores, lengths)]
            mean, std = statistics.mean(group_totals), statistics.stdev(group_totals)
            for c, s, w, t in zip(completions, scores, lengths, group_totals):
                rows.append(
                    {
                        "step": step,
                        "prompt": [{"role": "user", "content": f"Say the letter {letter}:"}],
                        "completion": [{"role": "assistant", "content": c}],
                        "answer": letter,
                        "rewards": {"letter_reward": s, "short": w / 0.5},
                        "reward": t,
                        "advantage": (t - mean) / (std + 1e-4),
                    }
                )
                totals.append(t)
        for row in grouped_rows(rows, G, 2, step_summary(totals, G)):
            run.append_sample(row)

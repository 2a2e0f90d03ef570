"""What each diagnosis means and what to change, in the words written to events.jsonl and the train
log (the studio shows the same in English or Chinese: ``diag.<code>.*`` in aworld_gui/i18n*.py), and
the setting the studio's "clone into Setup" button focuses."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Advice:
    title: str
    advice: str
    setting: str | None  # the config key to change first (None: the reward, the data or the agent)


ADVICE: dict[str, Advice] = {
    "reward_constant": Advice(
        "Every completion of every prompt gets the same reward, step after step: the reward function returns a "
        "constant, so GRPO has nothing to learn from and no setting can change that",
        "check the reward function named in the evidence: that it reads the completion and the columns it needs, "
        "and that it can score a better answer higher (try it on sample rows in Setup's reward preview); more "
        "generations or a higher temperature cannot spread a constant",
        None,
    ),
    "no_reward_spread": Advice(
        "Most prompt groups give every completion the same reward, so GRPO has no gradient to learn from",
        "raise num_generations, raise the sampling temperature, make the reward graded (partial credit) instead of "
        "all-or-nothing, or use data that is neither too easy nor too hard for the model",
        "num_generations",
    ),
    "reward_flat": Advice(
        "The smoothed reward has not moved for many steps",
        "try another learning_rate (often higher), check that the reward can tell better answers from worse ones, "
        "and check the data",
        "learning_rate",
    ),
    "reward_saturated": Advice(
        "The reward sits at its maximum: there is nothing left to learn from this data",
        "use harder data, or stop the run early (it will not improve further)",
        "max_steps",
    ),
    "completions_truncated": Advice(
        "Most completions are cut off at max_completion_length",
        "raise max_completion_length, or add a length penalty to the reward",
        "max_completion_length",
    ),
    "kl_high": Advice(
        "The model drifts further and further from the reference model (the KL keeps rising past its bound)",
        "raise beta (a stronger pull to the reference) or lower the learning_rate",
        "beta",
    ),
    "loss_not_finite": Advice(
        "The loss or the gradient norm is NaN or infinite: training has broken down, so the run stops",
        "lower the learning_rate, or train in another precision (fp32, or bf16 instead of fp16)",
        "learning_rate",
    ),
    "eval_diverges": Advice(
        "The train reward rises while the held-out reward falls: the model may be exploiting the reward "
        "(reward hacking)",
        "check the reward for loopholes the model can exploit, and check that the held-out set matches the task",
        None,
    ),
    "reward_term_constant": Advice(
        "One term of the reward mix gives every sample the same value, so it teaches nothing",
        "check that term: its inputs (columns, format) and whether it can tell answers apart; or drop it",
        None,
    ),
    "memory_rising": Advice(
        "Peak memory grows step after step and, at this rate, runs out before the run ends",
        "lower max_completion_length or the batch (prompts_per_step), or train LoRA adapters (use_peft)",
        "max_completion_length",
    ),
    "tools_unused": Advice(
        "The agent has tools but does not call them (or most calls fail)",
        "say in the system prompt when and how to use the tools, and check the tool schemas (names, "
        "descriptions, argument types)",
        None,
    ),
    # the probe's (engines/probe/verdicts.py): read from the base model before a run, never by the live rules
    "too_hard": Advice(
        "Most prompts are never solved by the model: their groups give every completion the same low reward",
        "use easier data or filter it to the prompts the model solves sometimes (the probe's --write-filtered), "
        "start from a stronger model, or make the reward graded (partial credit)",
        None,
    ),
    "too_easy": Advice(
        "Most prompts are always solved by the model: there is little left to learn from them",
        "use harder data or filter it to the prompts the model solves sometimes (the probe's --write-filtered)",
        None,
    ),
}
#: the probe's own codes (engines/probe/verdicts.py): advice here, no live rule
PROBE_CODES = ("too_hard", "too_easy")
#: the live diagnoses' codes, one rule each (engines/diagnostics/rules.py)
CODES = tuple(c for c in ADVICE if c not in PROBE_CODES)

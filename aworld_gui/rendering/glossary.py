"""Words a newcomer meets in the studio, explained in a line or two each (shown in Setup's config card
and beside the Monitor's curves)."""

from __future__ import annotations

from .i18n import _

TRAINING_TERMS = [
    (
        "GRPO",
        _(
            "Group Relative Policy Optimization: for each prompt the model writes a group of completions, the reward scores each, and the model is pushed toward the completions that scored above their group's mean. No value model is needed."
        ),
    ),
    (
        "num_generations",
        _(
            "How many completions are sampled per prompt — the size of a GRPO group. Groups whose completions all score the same teach nothing (zero spread), so larger groups help."
        ),
    ),
    (
        "prompts_per_step",
        _(
            "How many different prompts go into one optimizer step. Each brings num_generations completions, so a step sees prompts_per_step × num_generations completions."
        ),
    ),
    ("max_steps", _("Optimizer steps to train (the trainer's steps). Not the agent's max turns.")),
    (
        _("max turns"),
        _(
            "On the Agent card: how many model turns one rollout may take — each tool call and its result add a turn. Not the trainer's steps."
        ),
    ),
    (
        "beta (KL)",
        _(
            "How strongly training is held close to the starting model: a penalty on the KL divergence between the two. 0 turns it off (no reference model is loaded)."
        ),
    ),
    (
        _("rollout / trajectory"),
        _(
            "One attempt by the agent on one prompt: the prompt, every model turn, the tool calls and their results, the final answer, and the rewards it earned. The Monitor shows the latest ones."
        ),
    ),
    ("learning_rate", _("How big each update is. Too high diverges; too low learns nothing.")),
    ("SFT", _("Supervised fine-tuning: learning to reproduce reference answers, no reward needed.")),
]

#: the metrics by the names they are logged under (metrics.jsonl, the curves' picker, the CLI): shown as code
METRIC_TERMS = [
    ("reward", _("The mean total reward of the step's completions (weighted sum of the reward functions).")),
    (
        "reward_std",
        _(
            "The spread of rewards within groups. Near 0 means every completion scored the same: nothing to learn from (try more generations, or a reward with partial credit)."
        ),
    ),
    ("rewards/<name>", _("One reward function's mean score, before weighting.")),
    (
        "loss",
        _(
            "GRPO's loss is not a goodness score: it is the advantage-weighted log-likelihood plus the KL term. It can rise while the reward rises (e.g. when the model grows confident on what scores well, or the KL term grows). Watch the reward."
        ),
    ),
    ("kl", _("How far the model has moved from the starting model (only with beta > 0).")),
    ("entropy", _("How uncertain the model's token choices are. Falling fast: it stops exploring.")),
    ("completion_length", _("Mean tokens per completion.")),
    ("eval/reward", _("The reward on the test set, scored during training with greedy decoding.")),
    ("grad_norm", _("The size of the gradient before clipping; spikes warn of instability.")),
]


def as_markdown(terms: list[tuple], keys: bool = False) -> str:
    """The terms as a Markdown list; ``keys``: each term is a name as logged (shown as code, not translated)."""
    return "\n".join(f"- **`{term}`** — {text}" if keys else f"- **{term}** — {text}" for term, text in terms)

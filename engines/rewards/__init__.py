"""Rewards: the studio's built-ins, the ecosystem's (TRL, verl, reward models, LLM judges), user
functions by reference, factories with arguments, and weighted mixes — each called the way its own
framework calls it, in the dry run and in training, on every engine.

Modules: ``builtins`` (our per-sample rewards), ``calling`` (calling conventions, the Batch a reward
receives, the Trace of what it received and returned), ``mix`` (``Reward``, ``RewardTerm``), ``spec``
(``load_reward``), ``catalog`` (the registry the studio lists), ``requirements`` (optional packages),
``reward_model`` and ``judge`` (scorers), ``dry_run``. Importing this package imports no torch.
"""

from .builtins import BUILTIN_REWARDS, builtin_descriptions, extract_answer
from .calling import ANSWER_NAMES, COMPLETION_NAMES, Batch, RewardError, Trace, message_text
from .dry_run import dry_run_reward
from .mix import Reward, RewardTerm
from .spec import format_call, load_reward, parse_call

__all__ = [
    "ANSWER_NAMES",
    "BUILTIN_REWARDS",
    "Batch",
    "COMPLETION_NAMES",
    "Reward",
    "RewardError",
    "RewardTerm",
    "Trace",
    "builtin_descriptions",
    "dry_run_reward",
    "extract_answer",
    "format_call",
    "load_reward",
    "message_text",
    "parse_call",
]

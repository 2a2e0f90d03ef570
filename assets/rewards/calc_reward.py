"""Reward for the calculator (tool-use) demo."""

import re


def calc_reward(completion: str, answer: str, **kwargs) -> float:
    """Score the agent's final answer to an arithmetic question.

    Args:
        completion: The agent's final answer text: the content of its last
            assistant message, i.e. after any tool calls and tool results (not
            the whole transcript, which contains the tool's result).
        answer: The expected number as text, e.g. "7".
        **kwargs: Other dataset columns and trainer info; ignored.

    Returns:
        1.0 if the final answer contains the expected number (as a whole number,
        so "17" does not count for "7"), else 0.0.
    """
    numbers = re.findall(r"-?\d+", completion or "")
    return 1.0 if str(answer).strip() in numbers else 0.0

"""Reward for the letters demo: say the requested capital letter."""


def letter_reward(completion: str, answer: str, **kwargs) -> float:
    """Score one completion of the letters task.

    Args:
        completion: The model's reply text (the assistant message content).
        answer: The expected capital letter, e.g. "C".
        **kwargs: Other dataset columns and trainer info; ignored.

    Returns:
        1.0 if the first non-space character of the reply is the expected letter,
        0.2 if it is some other capital letter A-Z (partial credit that gives the
        learner a gradient towards "answer with a capital letter"), 0.0 otherwise.
    """
    text = (completion or "").lstrip()
    if not text:
        return 0.0
    first = text[0]
    if first == str(answer).strip():
        return 1.0
    if "A" <= first <= "Z":
        return 0.2
    return 0.0

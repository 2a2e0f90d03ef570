"""Calculator tools for the tool-use demo.

Each tool has type hints and a Google-style docstring (Args:/Returns:) so that
transformers' ``get_json_schema`` can describe it to the model in the prompt.
"""


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.

    Returns:
        The sum of a and b.
    """
    return int(a) + int(b)


def multiply(a: int, b: int) -> int:
    """Multiply two integers.

    Args:
        a: The first number.
        b: The second number.

    Returns:
        The product of a and b.
    """
    return int(a) * int(b)

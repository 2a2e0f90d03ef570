"""Optional packages some ecosystem rewards need, and the install command when one is missing."""

from __future__ import annotations

import importlib
import re

#: import name → PyPI name, where they differ
PIP_NAMES = {
    "math_verify": "math-verify",
    "latex2sympy2_extended": "latex2sympy2-extended",
    "sklearn": "scikit-learn",
    "yaml": "pyyaml",
    "cv2": "opencv-python",
    "PIL": "pillow",
}
#: reward reference (or its module) → modules it imports when called
REQUIREMENTS: dict[str, tuple[str, ...]] = {
    "trl.rewards:accuracy_reward": ("math_verify",),
    "trl.rewards:reasoning_accuracy_reward": ("math_verify",),
    "trl.rewards:get_cosine_scaled_reward": ("math_verify",),
    "trl.rewards.accuracy_rewards": ("math_verify",),
    "verl.utils.reward_score.math_verify": ("math_verify",),
    "verl.utils.reward_score.geo3k": ("mathruler",),
}
_MISSING = re.compile(r"No module named '([\w.]+)'|install the `(\w+)` package|pip install ([\w\-\[\]]+)")


def pip_name(module: str) -> str:
    top = module.split(".")[0]
    return PIP_NAMES.get(top, top.replace("_", "-"))


def module_available(name: str) -> bool:
    """Importable here (a module hidden as ``sys.modules[name] = None`` counts as missing)."""
    try:
        importlib.import_module(name)
        return True
    except ImportError:
        return False


def requirements_of(ref: str) -> tuple[str, ...]:
    module = ref.rpartition(":")[0]
    return REQUIREMENTS.get(ref) or REQUIREMENTS.get(module) or ()


def missing_requirements(ref: str) -> list[tuple[str, str]]:
    """[(pip name, module)] of what ``ref`` needs and this interpreter lacks."""
    return [(pip_name(m), m) for m in requirements_of(ref) if not module_available(m)]


def install_hint(error: BaseException | str) -> str | None:
    """``pip install <package>`` for an ImportError (or its message) that names a missing module."""
    text = str(error)
    if isinstance(error, ModuleNotFoundError) and error.name:
        return f"pip install {pip_name(error.name)}"
    m = _MISSING.search(text)
    if not m:
        return None
    if m.group(3):
        return f"pip install {m.group(3)}"
    return f"pip install {pip_name(m.group(1) or m.group(2))}"

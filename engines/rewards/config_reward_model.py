"""AWorld's reward model named in the config: with ``reward_func`` None, AWorld's TRL trainer takes the config's
``reward_model`` (a model folder) and builds the reward from it (train/integration/trl/trl_trainer.py,
``check_config`` → ``build_reward_model_fn``). The same inputs here give the same run: the reward becomes
``{reward_model: <folder>}`` (engines/rewards/reward_model.py), the config goes on without the key, and the reward
check says where the reward came from."""

from __future__ import annotations

from typing import Any

from ..core.check_result import CheckError
from ..inputs.config import load_config_input

KEY = "reward_model"


def reward_from_config(reward_func: Any, config: Any) -> tuple[Any, Any, str | None]:
    """(the reward, the config, a note) — the config's ``reward_model`` as the reward when none is given."""
    if reward_func not in (None, [], ""):
        return reward_func, config, None
    try:
        cfg = load_config_input(config)
    except CheckError:  # the config check says what is wrong with it
        return reward_func, config, None
    model = cfg.get(KEY)
    if not model or not isinstance(model, str):
        return reward_func, config, None
    note = (
        f"the reward is the config's reward_model {model} (AWorld form: with no reward function given, AWorld's "
        "TRL trainer scores completions with the reward model the config names)"
    )
    return {KEY: model}, {k: v for k, v in cfg.items() if k != KEY}, note

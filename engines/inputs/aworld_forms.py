"""Input forms of AWorld's TRL trainer (train/integration/trl/trl_trainer.py) that lean on the config, read as it
reads them, so the same inputs give the same run here:

* ``agent='virtual'``: no agent — the config's ``model`` is trained, with no system prompt and no tools
  (``check_agent`` returns early, ``check_config`` pops ``model``);
* ``reward_func=None`` with ``reward_model`` in the config: the reward is that model (``check_config`` →
  ``build_reward_model_fn``); here ``{reward_model: <folder>}`` (engines/rewards/reward_model.py), the config goes on
  without the key;
* ``reward_func='<a model's folder>'``: a reward given as a string is a reward model's path (``check_reward`` →
  ``build_reward_model_fn``); here a string naming a folder that holds a model (its ``config.json``) — a
  ``file.py:function`` or a built-in's name is read as ours.

Each comes with a note for the module's check result, which says where its input came from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..results.check_result import CheckError
from .config import load_config_input

KEY = "reward_model"
VIRTUAL = "virtual"


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


def reward_from_path(reward_func: Any) -> tuple[Any, str | None]:
    """(the reward, a note) — AWorld's reward given as a reward model's path, as ``{reward_model: <path>}``."""
    if not isinstance(reward_func, str) or ":" in reward_func or not reward_func.strip():
        return reward_func, None
    folder = Path(reward_func.strip()).expanduser()
    if not (folder / "config.json").is_file():
        return reward_func, None
    note = (
        f"the reward is the reward model at {reward_func.strip()} (AWorld form: a reward given as a model's path "
        "is that model's score, as AWorld's TRL trainer reads it)"
    )
    return {KEY: reward_func.strip()}, note


def virtual_agent(agent: Any, config: Any) -> tuple[Any, str | None]:
    """(the agent, a note) — AWorld's ``'virtual'`` agent as an agent of the config's ``model`` (no system prompt,
    no tools). A config without ``model`` leaves an agent with none, which the agent check names."""
    if not (isinstance(agent, str) and agent.strip() == VIRTUAL):
        return agent, None
    try:
        model = load_config_input(config).get("model")
    except CheckError:  # the config check says what is wrong with it
        model = None
    note = (
        "the 'virtual' agent (AWorld form): the config's model is trained with no system prompt and no tools"
        if model
        else "the 'virtual' agent (AWorld form) trains the config's model, and the config names none: add "
        "model: <folder> to the config, or give an agent"
    )
    return ({"name": VIRTUAL, "model": model} if model else {"name": VIRTUAL}), note

"""Engine-neutral training API: ``from engines import AgentTrainer, TrainerProcessor``."""
from .agents import Agent, AgentSpec, load_agent
from .api import (ENTRY_POINT_GROUP, AgentTrainer, TrainerProcessor, get_processor_class, logger,
                  register_processor, registered_engines, unregister_processor)
from .checks import CheckError, CheckResult
from .rewards import BUILTIN_REWARDS, Reward, load_reward

__all__ = ["Agent", "AgentSpec", "AgentTrainer", "BUILTIN_REWARDS", "CheckError", "CheckResult",
           "ENTRY_POINT_GROUP", "Reward", "TrainerProcessor", "get_processor_class", "load_agent", "load_reward",
           "logger", "register_processor", "registered_engines", "unregister_processor"]

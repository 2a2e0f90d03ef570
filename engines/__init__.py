"""Engine-neutral training API: ``from engines import AgentTrainer, TrainerProcessor``."""
from .agent_trainer import AgentTrainer
from .agents import Agent, AgentSpec, load_agent
from .check_result import CheckError, CheckResult
from .registry import (DEFAULT_ENGINE, ENTRY_POINT_GROUP, get_processor_class, register_processor,
                       registered_engines, unregister_processor)
from .rewards import BUILTIN_REWARDS, Reward, load_reward
from .sweeps import AgentSweep
from .trainer_processor import TrainerProcessor, logger

__all__ = ["Agent", "AgentSpec", "AgentSweep", "AgentTrainer", "BUILTIN_REWARDS", "CheckError", "CheckResult", "DEFAULT_ENGINE",
           "ENTRY_POINT_GROUP", "Reward", "TrainerProcessor", "get_processor_class", "load_agent", "load_reward",
           "logger", "register_processor", "registered_engines", "unregister_processor"]

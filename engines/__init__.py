"""Engine-neutral training API: ``from engines import AgentTrainer, TrainerProcessor``."""

from .core.agent_trainer import AgentTrainer
from .agents.agent_spec import Agent, AgentSpec, load_agent
from .results.check_result import CheckError, CheckResult
from .core.registry import (
    DEFAULT_ENGINE,
    ENTRY_POINT_GROUP,
    get_processor_class,
    register_processor,
    registered_engines,
    unregister_processor,
)
from .rewards import BUILTIN_REWARDS, Reward, load_reward
from .sweeps import AgentSweep
from .core.trainer_processor import TrainerProcessor, logger

__all__ = [
    "Agent",
    "AgentSpec",
    "AgentSweep",
    "AgentTrainer",
    "BUILTIN_REWARDS",
    "CheckError",
    "CheckResult",
    "DEFAULT_ENGINE",
    "ENTRY_POINT_GROUP",
    "Reward",
    "TrainerProcessor",
    "get_processor_class",
    "load_agent",
    "load_reward",
    "logger",
    "register_processor",
    "registered_engines",
    "unregister_processor",
]

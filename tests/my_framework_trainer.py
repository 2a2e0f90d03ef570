# train/adapter/your_framework/my_trainer.py
#
# The AWorld Trainer spec's "Custom Training Processor" example, copied verbatim; only the import
# lines are changed (train.trainer.trainer_processor / aworld.* -> engines). tests/test_api.py
# registers it and trains it through AgentTrainer.

from engines import TrainerProcessor, Agent, logger
from typing import Union, Callable, Any
from datasets import Dataset


class MyFrameworkTrainer(TrainerProcessor):
    """My custom training framework adapter."""

    def __init__(self, run_path: str):
        super().__init__(run_path)
        self.framework_config = None

    def train(self):
        logger.info("Starting training with MyFramework...")
        # Your training logic:
        # - Load data
        # - Initialize model
        # - Training loop
        # - Save checkpoints
        logger.info("Training completed!")

    def check_agent(self, agent: Union[str, Agent]):
        if isinstance(agent, str):
            logger.info(f"Loading agent from {agent}")
            # ... loading logic
        else:
            logger.info("Validating Agent object")
            # ... validation logic

    def check_dataset(self, dataset: Union[str, Dataset] = None, test_dataset: Union[str, Dataset] = None):
        if dataset:
            if isinstance(dataset, str):
                logger.info(f"Loading dataset from {dataset}")
                # ... loading logic
            else:
                logger.info("Validating dataset format")
                # ... validation logic
        if test_dataset:
            # similar handling
            pass

    def check_reward(self, reward_func: Union[str, Callable[..., Any]] = None):
        if reward_func:
            if isinstance(reward_func, str):
                logger.info(f"Loading reward function from {reward_func}")
                # ... loading logic
            elif callable(reward_func):
                logger.info("Validating reward function")
                # ... validation logic
            else:
                raise ValueError("Reward func must be callable or file path")

    def check_config(self, config: Union[str, Any] = None):
        if config is None:
            config = self.get_default_config()
        elif isinstance(config, str):
            logger.info(f"Loading config from {config}")
            # ... loading logic
        self.framework_config = config
        return config

    @staticmethod
    def get_default_config():
        return {
            "learning_rate": 1e-4,
            "batch_size": 32,
            "epochs": 10,
            "warmup_steps": 1000,
        }

"""``AgentTrainer``: the unified training entry point of the AWorld Trainer spec.

``AgentTrainer(agent, train_dataset, test_dataset, reward_func, config, run_path, train_engine_name)``
checks ``agent → dataset → reward → config`` with the named engine, marks it initialized, and
``train()`` runs it.
"""

from __future__ import annotations

import os

from pathlib import Path
from typing import Any

from ..isolation import sandbox
from ..results.check_result import CheckResult
from .isolated_checks import check_all_isolated, first_error
from .modules import Modules
from .registry import DEFAULT_ENGINE, get_processor_class, register_processor, registered_engines, unregister_processor
from .trainer_processor import TrainerProcessor, logger


def _is_empty(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, (str, dict, list, tuple)) and len(value) == 0:
        return True
    return isinstance(value, str) and not value.strip()


class AgentTrainer:
    """The unified training entry point: validates agent, datasets, reward and config, then trains."""

    def __init__(
        self,
        agent: Any,
        train_dataset: Any = None,
        test_dataset: Any = None,
        reward_func: Any = None,
        config: Any = None,
        run_path: str = "runs",
        train_engine_name: str = DEFAULT_ENGINE,
        *,
        run_dir: str | Path | None = None,
        isolated_checks: bool = True,
        check_timeout_s: float | None = None,
    ):
        """``isolated_checks``: run every check first in an isolated child with a time limit
        (``check_timeout_s``, default ``$AWORLD_CHECK_TIMEOUT_S`` or 60 s; see engines.isolation.sandbox), so user
        code that hangs, exits or crashes is reported as a CheckError instead of taking this process
        down; only then are the modules loaded here for training."""
        # 1. parameter validation
        if _is_empty(agent):
            raise ValueError("agent is empty — pass an agent config path (YAML), a dict or an Agent object")
        self.agent = agent
        self.train_dataset = train_dataset
        self.test_dataset = test_dataset
        self.reward_func = reward_func
        self.config = config
        self.run_path = run_path
        self.train_engine_name = train_engine_name or DEFAULT_ENGINE
        # 2. fetch the engine class
        processor_cls = get_processor_class(self.train_engine_name)
        if isolated_checks and not sandbox.inside():
            modules = Modules(agent, train_dataset, test_dataset, reward_func, config, self.train_engine_name)
            results = check_all_isolated(modules, check_timeout_s)
            error = first_error(results)
            if error is not None:
                raise error
        # 3. instantiate it with run_path
        self.train_processor: TrainerProcessor = processor_cls(run_path)
        if run_dir is not None:
            self.train_processor.attach_run_dir(run_dir)
        # 4. module validation, in the spec's order
        p = self.train_processor
        if hasattr(p, "take_aworld_inputs"):  # an engine reading an AWorld trainer's input forms
            agent, reward_func, config = p.take_aworld_inputs(agent, reward_func, config)
        p.check_agent(agent)
        p.check_dataset(train_dataset, test_dataset)
        p.check_reward(reward_func)
        enhanced = p.check_config(config)
        if enhanced is not None:
            self.config = enhanced
        # 5. done
        p.mark_initialized()
        logger.info("AgentTrainer initialized with engine '%s'", self.train_engine_name)

    @property
    def check_results(self) -> list[CheckResult]:
        return list(self.train_processor.check_results)

    def train(self) -> Any:
        if self.train_processor is None or not self.train_processor.initialized:
            raise ValueError(
                "the training processor is not initialized — construct AgentTrainer with "
                "valid modules before calling train()"
            )
        return self.train_processor.train()

    @classmethod
    def resume(cls, run_dir: str | os.PathLike, checkpoint: str = "latest", max_steps: int | None = None) -> Any:
        """Continue a stopped, failed or finished run from one of its checkpoints (``latest``, ``best`` or
        ``checkpoint-N``), in its own run directory, and train it in this process (engines/core/resume.py; the CLI's
        ``aworld-train resume``). ``max_steps`` raises its end. Returns what :meth:`train` returns; CheckError when
        the run cannot resume (nothing changed then)."""
        from .resume import prepare_resume
        from .run_args import trainer_args

        prepare_resume(run_dir, checkpoint, max_steps)
        return cls(**trainer_args(run_dir)).train()

    async def inference(self, dataset: Any = None, checkpoint: str | None = None, **kwargs: Any) -> Any:
        """Batch inference with the engine (AWorld's ``await trainer.inference()``): the engine's
        ``inference`` may be a coroutine function or a plain one. Raises ValueError when the modules
        were not initialized."""
        import asyncio
        import inspect

        if self.train_processor is None or not self.train_processor.initialized:
            raise ValueError(f"Train engine {self.train_engine_name} is not initialized")
        fn = self.train_processor.inference
        kw = dict(kwargs)
        if checkpoint is not None:
            kw["checkpoint"] = checkpoint
        if inspect.iscoroutinefunction(fn):
            return await fn(dataset, **kw)
        return await asyncio.to_thread(fn, dataset, **kw)

    def probe(
        self,
        prompts: int = 64,
        samples: int | None = None,
        seed: int = 0,
        *,
        runs_dir: str | os.PathLike | None = None,
        timeout_s: float | None = None,
        refresh: bool = False,
        on_progress: Any = None,
    ) -> Any:
        """Sample ``samples`` completions (default: the config's ``num_generations``) for ``prompts`` training prompts
        (a random choice, ``seed``) from the base model through the agent's loop, score them with the reward, and
        report what the run would meet: pass rates, zero-spread groups now and at 2× and 4× the group, truncation,
        each reward term, tool use, a time forecast and verdict lines with the setting to change
        (engines/probe/). The sampling runs in an isolated child with a time limit (``timeout_s``, default
        ``$AWORLD_PROBE_TIMEOUT_S`` or 900 s). The report is stored in ``<runs_dir>/.probes/<key>.json`` (default:
        this trainer's ``run_path``) and read back, without sampling, for the same inputs unless ``refresh``.
        Returns an :class:`engines.probe.ProbeResult` (``.report``, ``.summary()``, ``.write_filtered(path,
        band)``); CheckError for a bad argument or a probe that failed. ``on_progress(doing)``: what the sampling is
        doing, each time that changes."""
        from ..probe import probe_processor

        if self.train_processor is None or not self.train_processor.initialized:
            raise ValueError(f"Train engine {self.train_engine_name} is not initialized")
        return probe_processor(
            self.train_processor,
            prompts=prompts,
            samples=samples,
            seed=seed,
            runs_dir=runs_dir,
            timeout_s=timeout_s,
            refresh=refresh,
            sources=(self.agent, self.reward_func, self.config),
            on_progress=on_progress,
        )

    @staticmethod
    def register_processor(train_engine_name: str, train_type: type) -> None:
        register_processor(train_engine_name, train_type)

    @staticmethod
    def unregister_processor(train_engine_name: str) -> None:
        unregister_processor(train_engine_name)

    @staticmethod
    def registered_engines() -> list[str]:
        return registered_engines()

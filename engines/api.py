"""AgentTrainer and TrainerProcessor, as the AWorld Trainer spec describes them.

Engines live in a registry. Built-ins (``trl``, ``verl``) are registered by reference so that
importing :mod:`engines` never imports torch, TRL or verl. Installed packages can add engines
through the Python entry-point group :data:`ENTRY_POINT_GROUP` (``aworld_trainer.engines``);
each entry point names a ``TrainerProcessor`` subclass, e.g. in ``pyproject.toml``::

    [project.entry-points."aworld_trainer.engines"]
    my_engine = "my_package.trainer:MyTrainer"
"""
from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Union

from .checks import CheckError, CheckResult
from .loading import load_object
from .rundir import RunDir

logger = logging.getLogger("aworld.trainer")
if not logger.handlers:
    _h = logging.StreamHandler()
    _h.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger.addHandler(_h)
    logger.setLevel(logging.INFO)
    logger.propagate = False

ENTRY_POINT_GROUP = "aworld_trainer.engines"
DEFAULT_ENGINE = "verl"


class TrainerProcessor(ABC):
    """Base class of every training engine.

    Subclasses implement :meth:`train` and the four ``check_*`` methods. The base keeps the
    run directory, the structured check results and the run spec that ``run.yaml`` records.
    """

    #: registry name, set by :func:`register_processor`
    engine_name: str = "custom"
    #: one-line description shown by the studio
    description: str = ""
    #: whether a local run takes the machine's training slot (cluster engines say False)
    uses_local_slot: bool = True

    def __init__(self, run_path: str = "runs"):
        self.run_path = str(run_path)
        self._initialized = False
        self._run: RunDir | None = None
        self.check_results: list[CheckResult] = []
        #: serializable inputs recorded by the checks; becomes run.yaml
        self.spec: dict[str, Any] = {}

    # -- state ---------------------------------------------------------------------------
    @property
    def initialized(self) -> bool:
        return self._initialized

    def mark_initialized(self) -> None:
        self._initialized = True

    @property
    def run(self) -> RunDir:
        """This run's directory, created under ``run_path`` on first use."""
        if self._run is None:
            self._run = RunDir.create(self.run_path, self.engine_name)
        return self._run

    @property
    def run_dir(self) -> Path:
        return self.run.path

    def attach_run_dir(self, path: str | Path) -> None:
        """Use an existing run directory (the run process re-reading its run.yaml)."""
        self._run = RunDir(path)
        self._run.path.mkdir(parents=True, exist_ok=True)

    def record(self, result: CheckResult) -> CheckResult:
        self.check_results = [r for r in self.check_results if r.module != result.module] + [result]
        return result

    def run_spec(self) -> dict[str, Any]:
        return {"engine": self.engine_name, "run_id": self.run.run_id, **self.spec}

    def write_run_spec(self) -> Path:
        self.run.write_spec(self.run_spec())
        return self.run.file("run.yaml")

    @staticmethod
    def get_default_config() -> dict[str, Any]:
        return {}

    @classmethod
    def availability(cls) -> tuple[bool, str]:
        """(available, reason) on this machine; the studio shows the reason when False."""
        return True, ""

    # -- the engine's work ---------------------------------------------------------------
    @abstractmethod
    def train(self) -> Any: ...

    @abstractmethod
    def check_agent(self, agent: Any) -> Any: ...

    @abstractmethod
    def check_dataset(self, dataset: Any = None, test_dataset: Any = None) -> Any: ...

    @abstractmethod
    def check_reward(self, reward_func: Union[str, Callable[..., Any], None] = None) -> Any: ...

    @abstractmethod
    def check_config(self, config: Any = None) -> Any: ...


# -- registry ----------------------------------------------------------------------------------
_BUILTIN_REFS: dict[str, str] = {
    "trl": "engines.trl:TrlProcessor",
    "verl": "engines.verl:VerlProcessor",
}
_REGISTRY: dict[str, Union[type, str]] = dict(_BUILTIN_REFS)
_ENTRY_POINTS_LOADED = False


def _load_entry_points() -> None:
    global _ENTRY_POINTS_LOADED
    if _ENTRY_POINTS_LOADED:
        return
    _ENTRY_POINTS_LOADED = True
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in _REGISTRY:
            _REGISTRY[ep.name] = ep.value


def register_processor(train_engine_name: str, train_type: type) -> None:
    if not isinstance(train_engine_name, str) or not train_engine_name.strip():
        raise ValueError("train_engine_name must be a non-empty string")
    if not (isinstance(train_type, type) and issubclass(train_type, TrainerProcessor)):
        raise ValueError(f"{train_type!r} is not a TrainerProcessor subclass — subclass "
                         "engines.TrainerProcessor and implement train() and the check_* methods")
    _load_entry_points()
    if train_engine_name in _REGISTRY:
        raise ValueError(f"a training engine named '{train_engine_name}' is already registered — "
                         "unregister_processor() it first or pick another name")
    if train_type.engine_name == TrainerProcessor.engine_name or train_type.engine_name != train_engine_name:
        train_type.engine_name = train_engine_name
    _REGISTRY[train_engine_name] = train_type


def unregister_processor(train_engine_name: str) -> None:
    _load_entry_points()
    if train_engine_name not in _REGISTRY:
        raise ValueError(f"no training engine named '{train_engine_name}' is registered "
                         f"(registered: {', '.join(sorted(_REGISTRY))})")
    del _REGISTRY[train_engine_name]


def registered_engines() -> list[str]:
    _load_entry_points()
    return sorted(_REGISTRY)


def get_processor_class(train_engine_name: str) -> type:
    _load_entry_points()
    entry = _REGISTRY.get(train_engine_name)
    if entry is None:
        from .checks import did_you_mean

        raise ValueError(f"unknown training engine '{train_engine_name}'{did_you_mean(train_engine_name, _REGISTRY)}"
                         f" — registered engines: {', '.join(sorted(_REGISTRY))}")
    if isinstance(entry, str):
        try:
            cls = load_object(entry)
        except ValueError as e:  # a plugin that does not import: say which engine, keep the cause
            raise ValueError(f"training engine '{train_engine_name}' ({entry}) cannot be loaded: {e} — install "
                             f"what it needs, or unregister_processor('{train_engine_name}')") from e
        if not (isinstance(cls, type) and issubclass(cls, TrainerProcessor)):
            raise ValueError(f"engine '{train_engine_name}' ({entry}) is not a TrainerProcessor subclass")
        cls.engine_name = train_engine_name
        _REGISTRY[train_engine_name] = cls
        entry = cls
    return entry


def _is_empty(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, (str, dict, list, tuple)) and len(value) == 0:
        return True
    return isinstance(value, str) and not value.strip()


class AgentTrainer:
    """The unified training entry point: validates agent, datasets, reward and config, then trains."""

    def __init__(self, agent: Any, train_dataset: Any = None, test_dataset: Any = None,
                 reward_func: Any = None, config: Any = None, run_path: str = "runs",
                 train_engine_name: str = DEFAULT_ENGINE, *, run_dir: str | Path | None = None):
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
        # 2. fetch the engine class;  3. instantiate it with run_path
        processor_cls = get_processor_class(self.train_engine_name)
        self.train_processor: TrainerProcessor = processor_cls(run_path)
        if run_dir is not None:
            self.train_processor.attach_run_dir(run_dir)
        # 4. module validation, in the spec's order
        p = self.train_processor
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
            raise ValueError("the training processor is not initialized — construct AgentTrainer with "
                             "valid modules before calling train()")
        return self.train_processor.train()

    @staticmethod
    def register_processor(train_engine_name: str, train_type: type) -> None:
        register_processor(train_engine_name, train_type)

    @staticmethod
    def unregister_processor(train_engine_name: str) -> None:
        unregister_processor(train_engine_name)

    @staticmethod
    def registered_engines() -> list[str]:
        return registered_engines()


__all__ = ["AgentTrainer", "TrainerProcessor", "CheckError", "CheckResult", "register_processor",
           "unregister_processor", "registered_engines", "get_processor_class", "ENTRY_POINT_GROUP", "logger"]

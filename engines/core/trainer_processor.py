"""``TrainerProcessor``: the base class of every training engine, as the AWorld Trainer spec has it.

An engine implements :meth:`~TrainerProcessor.train` and the four ``check_*`` methods; AWorld has
since added :meth:`~TrainerProcessor.inference`. The base keeps the run directory, the structured
check results and the run spec that ``run.yaml`` records.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Callable, Union

from ..results.check_result import CheckResult
from ..runs.rundir import RunDir

#: the engines' logger; ``import engines`` adds no handler (the application configures logging)
logger = logging.getLogger("aworld.trainer")


class TrainerProcessor(ABC):
    """Base class of every training engine."""

    #: registry name, set by :func:`engines.core.registry.register_processor`
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
        #: the machine's training slot when the run process already holds it (``aworld-train run``
        #: waits for it before loading the engine); else ``train()`` takes it itself
        self.held_slot = None

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
        """What run.yaml records; ``machine_slot`` tells the run process whether to queue for the
        machine's training slot before loading the engine."""
        return {
            "engine": self.engine_name,
            "run_id": self.run.run_id,
            "machine_slot": bool(self.uses_local_slot),
            **self.spec,
        }

    def write_run_spec(self) -> Path:
        self.run.write_spec(self.run_spec())
        return self.run.file("run.yaml")

    @staticmethod
    def get_default_config() -> dict[str, Any]:
        return {}

    @classmethod  # noqa: B027 - optional: an engine without heavy imports keeps it empty
    def preload(cls) -> None:
        """Import (and warm) what this engine's checks need, once, in a process that then runs each check
        in a fork (the studio's check worker; the CLI's and AgentTrainer's isolated checks): every fork
        starts with it done. Must not start threads or processes."""

    @classmethod
    def availability(cls) -> tuple[bool, str]:
        """(available, reason) on this machine; the studio shows the reason when False."""
        return True, ""

    @classmethod
    def environment_files(cls) -> list[str]:
        """Files whose change can change :meth:`availability` (an environment of the engine's own being set
        up): a reader that caches the availability asks again when one of them changes."""
        return []

    def inference(self, dataset: Any = None, **kwargs: Any) -> Any:
        """Batch inference: predictions and metrics on ``dataset`` (AWorld's ``TrainerProcessor.inference``).
        Not abstract, so an engine without it (the spec's own custom-engine example) keeps working."""
        raise NotImplementedError(
            f"the '{self.engine_name}' engine has no inference() — evaluate its checkpoints "
            "with an engine that has one, or implement inference(dataset, **kw) in it"
        )

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

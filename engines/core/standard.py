"""A TrainerProcessor whose checks use the shared loaders and whose ``train()`` keeps the run
directory's lifecycle (spec, queue slot, status, events, failure causes). An engine subclasses
it, declares ``config_fields`` and implements ``_train()``; see ``engines/trl`` for one.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from typing import Any, Callable

from ..agents.agent_spec import AgentSpec, agent_result, load_agent
from .trainer_processor import TrainerProcessor, logger
from ..results.check_result import CheckError, CheckResult
from ..inputs.config import ConfigField, validate_config
from .run_settings import (
    BEST_CHECKPOINT_WHY,
    CLUSTER_KEYS,
    REFUSED_WHY,
    cluster_address,
    environment_cluster_address,
    split_run_settings,
)
from ..inputs.data import DataBundle, load_datasets, save_for_spec
from ..fit.data_fit import DataFit, check_data_fit
from ..fit.model_folder import ModelFolder, require_model_folder
from ..rewards import Reward, RewardError, dry_run_reward, load_reward
from ..fit import disk_full
from ..runs.causes import Cause, classify_failure
from ..runs.rundir import FAILED, FINISHED, RUNNING, STOPPED, run_dir_write_error
from ..runs.lifecycle import Slot, wait_for_slot
from ..diagnostics.watcher import NO_DIAGNOSES, start_diagnoses

MODULE_CAUSE = {"dataset": Cause.BAD_DATA, "reward": Cause.REWARD_ERROR}


def check_error_cause(e: CheckError) -> str:
    """The failure cause of a run whose checks failed: an MCP server the agent check could not reach is a
    tool server error, a bad dataset bad data, ..."""
    if e.result.details.get("mcp_server"):
        return Cause.TOOL_SERVER_ERROR
    return MODULE_CAUSE.get(e.module, Cause.UNKNOWN)


def _split_dataset_arg(value: Any) -> tuple[Any, dict | None]:
    """``{"path": ..., "columns": {...}}`` → (path, columns); anything else → (value, None)."""
    if isinstance(value, dict) and ("path" in value or "train" in value):
        return value.get("path") or value.get("train"), value.get("columns")
    return value, None


def failure_cause(e: BaseException) -> str:
    """One of :class:`engines.runs.causes.Cause` for an exception raised while training."""
    if getattr(e, "failure_cause", None):  # already classified where it happened (e.g. another process)
        return e.failure_cause  # type: ignore[attr-defined]
    from ..tools.mcp_client import ToolServerError

    if isinstance(e, RewardError) or isinstance(e.__cause__, RewardError):
        return Cause.REWARD_ERROR
    if isinstance(e, ToolServerError):
        return Cause.TOOL_SERVER_ERROR
    if isinstance(e, CheckError):
        return check_error_cause(e)
    if isinstance(e, KeyboardInterrupt):
        return Cause.KILLED
    if isinstance(e, MemoryError):
        return Cause.OUT_OF_MEMORY
    if isinstance(e, ImportError):
        return Cause.MISSING_DEPENDENCY
    return classify_failure(f"{type(e).__name__}: {e}")


class StandardProcessor(TrainerProcessor):
    #: the engine's config schema (see engines.inputs.config.ConfigField)
    config_fields: list[ConfigField] = []
    #: False when the engine can train without a reward (e.g. supervised fine-tuning)
    reward_required: bool = True
    #: the run settings (engines/core/run_settings.py) this engine acts on: another one set is refused at the
    #: check, never accepted and ignored (the diagnoses watch every engine's run; best checkpoint and early
    #: stopping need the engine's own evaluation loop)
    run_settings_honored: frozenset[str] = frozenset({"diagnostics"}) | CLUSTER_KEYS

    def __init__(self, run_path: str = "runs"):
        super().__init__(run_path)
        #: where the run will write (its free space is checked against the run's checkpoints): the runs folder, or
        #: the studio's when a check runs in a scratch folder (engines.core.checks.check_all's ``disk_dir``)
        self.disk_dir = self.run_path
        self.agent_spec: AgentSpec | None = None
        self.data: DataBundle | None = None
        self.reward: Reward | None = None
        self.effective_config: dict[str, Any] | None = None
        self.model_folder: ModelFolder | None = None
        self.aworld_notes: dict[str, str] = {}  # module → how an AWorld input form was read (take_aworld_inputs)

    @classmethod
    def describe_config(cls) -> list[dict]:
        return [f.describe() for f in cls.config_fields]

    @classmethod
    def get_default_config(cls) -> dict[str, Any]:  # type: ignore[override]
        return {f.name: f.default for f in cls.config_fields}

    def _fail(self, err: CheckError) -> None:
        self.record(err.result)
        raise err

    # -- checks ------------------------------------------------------------------------------
    def check_agent(self, agent: Any) -> AgentSpec:
        try:
            spec = load_agent(agent)
            self.check_model(spec)
            self.convert_agent(spec)
        except CheckError as e:
            self._fail(e)
        self.agent_spec = spec
        self.spec["agent"] = spec.to_dict()
        self.record(agent_result(spec))
        return spec

    def check_dataset(self, dataset: Any = None, test_dataset: Any = None) -> DataBundle:
        train, columns = _split_dataset_arg(dataset)
        test, test_columns = _split_dataset_arg(test_dataset)
        try:
            bundle = load_datasets(train, test, columns or test_columns)
            extra = self.convert_dataset(bundle)
        except CheckError as e:
            self._fail(e)
        self.data = bundle
        data_dir = self.run.path / "data"
        self.spec["data"] = {
            "train": bundle.train_source or save_for_spec(bundle.train, data_dir, "train"),
            "test": (bundle.test_source or save_for_spec(bundle.test, data_dir, "test"))
            if bundle.test is not None
            else None,
            "columns": bundle.columns.to_dict(),
        }
        from ..probe.filtering import read_provenance

        if provenance := read_provenance(bundle.train_source):  # a probe's filtered set: where it came from
            self.spec["data"]["provenance"] = provenance
        result = bundle.result()
        if extra:
            result.details.update(extra)
        self.record(result)
        return bundle

    def check_reward(self, reward_func: Any = None) -> Reward | None:
        if not self.reward_required and (reward_func is None or reward_func == []):
            self.spec["reward"] = []
            self.record(
                CheckResult(
                    "reward", "warning", "no reward function", warnings=["no reward: only supervised modes can train"]
                )
            )
            return None
        try:
            reward = load_reward(reward_func)
            if self.data is not None:
                result = dry_run_reward(reward, self.data, **self.reward_context(reward))
            else:
                result = CheckResult(
                    "reward", "warning", ", ".join(reward.names), warnings=["dry run skipped: the dataset did not load"]
                )
            spec = reward.to_spec(pickle_dir=self.run.path / "code")
            extra = self.convert_reward(reward)
        except CheckError as e:
            self._fail(e)
        if extra:
            result.details.update(extra)
        self.reward = reward
        self.spec["reward"] = spec
        self.record(result)
        return reward

    def take_run_settings(self, config: Any) -> tuple[dict[str, Any], Any]:
        """(the run settings given, checked — one this engine does not act on is refused —; the engine's config)."""
        run_settings, config = split_run_settings(config)
        self._refuse_unhonored(run_settings)
        return run_settings, config

    def _refuse_unhonored(self, run_settings: dict[str, Any]) -> None:
        refused = sorted(k for k, v in run_settings.items() if v is not None and k not in self.run_settings_honored)
        if refused:
            why = sorted({REFUSED_WHY.get(k, BEST_CHECKPOINT_WHY) for k in refused})
            raise CheckError(
                "config",
                f"{', '.join(refused)}: the {self.engine_name} engine does not act on "
                f"{'this setting' if len(refused) == 1 else 'these settings'} ({'; '.join(why)})",
                f"remove {' and '.join(refused)}"
                + ("" if CLUSTER_KEYS.issuperset(refused) else ", or train with the trl engine"),
                keys=refused,
            )

    def check_config(self, config: Any = None) -> dict[str, Any]:
        try:
            run_settings, config = self.take_run_settings(config)
            effective, warnings = self.validate_settings(config)
            effective.update(run_settings)
            warnings = warnings + self.adopt_cluster(effective)
            extra = self.convert_config(effective) or {}
            fit = self.data_fit(effective)
            if fit is not None:
                folder = self.model_folder
                extra["data_fit"] = check_data_fit(
                    fit,
                    self.data,
                    self.prompt_token_counter(),
                    context=folder.context if folder else None,
                    context_source=folder.context_source if folder else "",
                )
            resources, resource_warnings = self.check_resources(effective)
            extra.update(resources)
            warnings = warnings + resource_warnings
        except CheckError as e:
            self._fail(e)
        self.effective_config = effective
        self.spec["config"] = effective
        main = {f.name: effective[f.name] for f in self.config_fields if f.main}
        self.record(
            CheckResult(
                "config",
                "warning" if warnings else "ok",
                ", ".join(f"{k}={v}" for k, v in main.items()) or "defaults",
                details={"effective": effective, **extra},
                warnings=warnings,
            )
        )
        return effective

    def aworld_inputs(self, agent: Any, reward_func: Any, config: Any) -> tuple[Any, Any, Any, dict[str, str]]:
        """(agent, reward, config, a note per module on what was read how) — an AWorld trainer's input forms this
        engine reads as the AWorld trainer does (trl: the ``'virtual'`` agent, the config's ``reward_model``)."""
        return agent, reward_func, config, {}

    def take_aworld_inputs(self, agent: Any, reward_func: Any, config: Any) -> tuple[Any, Any, Any]:
        """:meth:`aworld_inputs`, its notes kept for the modules' check results (each says where its input came
        from)."""
        agent, reward_func, config, notes = self.aworld_inputs(agent, reward_func, config)
        self.aworld_notes.update(notes)
        return agent, reward_func, config

    def record(self, result: CheckResult) -> CheckResult:
        note = self.aworld_notes.get(result.module)
        if note and note not in result.warnings:
            result.warnings = [note, *result.warnings]
            result.status = "warning" if result.status == "ok" else result.status
        return super().record(result)

    def adopt_cluster(self, effective: dict[str, Any]) -> list[str]:
        """Where the run trains, decided at the check and kept in run.yaml: a Ray cluster (``ray_address``, else
        ``RAY_ADDRESS`` — said in a warning, as the config does not show it) or this machine's training slot."""
        warnings = []
        if not effective.get("ray_address") and (address := environment_cluster_address()):
            effective["ray_address"] = address
            warnings.append(f"this run is submitted to the Ray cluster at {address} (RAY_ADDRESS); docs/CLUSTER.md")
        address = effective.get("ray_address")
        if address:
            from ..cluster.ray_jobs import unreachable
            from ..cluster.ray_run import outside_paths

            self.uses_local_slot = False
            problem = unreachable(address)
            if problem:
                warnings.append(
                    f"cannot reach the Ray cluster at {address} ({problem}): the run will fail to "
                    "submit unless it is up by then"
                )
            outside = outside_paths(self.spec, self.run.path)
            if outside:
                warnings.append(
                    "the job reads these files at the same paths on the cluster (shared storage; "
                    f"docs/CLUSTER.md): {', '.join(outside)}"
                )
        return warnings

    # -- inference --------------------------------------------------------------------------------
    def inference(self, dataset: Any = None, checkpoint: str | None = None, **kwargs: Any):
        """Evaluate this run's model on ``dataset`` (default: the test set, else the train set) with the
        agent's own generation loop and the reward: ``checkpoint`` ``None`` means this run's latest
        checkpoint, or the agent's base model when it has not trained; ``base``, ``checkpoint-N`` or a
        folder otherwise. Keyword arguments: ``reward``, ``samples``, ``temperature``, ``max_samples``,
        ``max_new_tokens``, ``columns``. Writes ``<run>/evals/<id>/`` and returns an
        :class:`engines.inference.evaluation.InferenceResult`."""
        from ..inference.evaluation import prepare_eval, run_eval

        if not self.run.file("run.yaml").exists():
            self.write_run_spec()
        eval_dir = prepare_eval(self.run.path, [checkpoint or "latest"], dataset=dataset, **kwargs)
        return run_eval(eval_dir.path)[0]

    # -- hooks an engine may override -----------------------------------------------------------
    def check_model(self, spec: AgentSpec) -> None:
        """A local model must be a folder with a config, weights and a tokenizer (named when missing);
        its config.json gives the context length the data checks use."""
        self.model_folder = require_model_folder(spec.model)

    def check_resources(self, cfg: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """What the run needs of the machine (details, warnings), checked once the data fits; raise
        :class:`CheckError` when it cannot run (the trl engine's memory estimate)."""
        return {}, []

    def data_fit(self, cfg: dict[str, Any]) -> DataFit | None:
        """How this engine's settings consume the data (optimizer steps, lengths, a memory floor), checked
        by :func:`engines.fit.data_fit.check_data_fit`; None: nothing to check."""
        return None

    def prompt_token_counter(self) -> Callable[[dict], int] | None:
        """Tokens of a training row's prompt as the engine renders it (chat template, system prompt,
        tools); None when the engine cannot tell (then prompt lengths are not checked)."""
        return None

    def convert_agent(self, spec: AgentSpec) -> None:
        """Engine-specific agent checks/conversion; raise CheckError on a problem."""

    def convert_dataset(self, bundle: DataBundle) -> dict | None:
        """Engine-specific dataset conversion; returns extra details for the check result."""
        return None

    def convert_reward(self, reward: Reward) -> dict | None:
        return None

    def reward_context(self, reward: Reward) -> dict[str, Any]:
        """What the reward's dry run needs to call it as training will: the agent's system prompt (the
        prompts are chat) and the model's tokenizer (completion_ids), which also serves training."""
        reward.tokenizer = getattr(self, "tokenizer", None)
        return {
            "system_prompt": self.agent_spec.system_prompt if self.agent_spec else None,
            "tokenizer": reward.tokenizer,
        }

    def validate_settings(self, config: Any) -> tuple[dict[str, Any], list[str]]:
        """(effective config, warnings) from the user's config: ``config_fields`` with defaults,
        ``derived_config()`` under the user's values, ``cross_check_config``. An engine whose settings
        come from a library's own schema overrides this."""
        return validate_config(config, self.config_fields, self.cross_check_config, base=self.derived_config())

    def derived_config(self) -> dict[str, Any]:
        """Defaults derived from the agent (e.g. its sampling settings); user values override."""
        return {}

    def cross_check_config(self, cfg: dict[str, Any]) -> list[str]:
        """Rules across keys; raise CheckError or return warnings."""
        return []

    def convert_config(self, cfg: dict[str, Any]) -> dict | None:
        return None

    # -- lifecycle ------------------------------------------------------------------------------
    def _train(self) -> str:
        """Train; return ``"finished"`` or ``"stopped"`` (a stop was requested)."""
        raise NotImplementedError

    def train(self) -> str:
        run = self.run
        if not run.file("run.yaml").exists():
            self.write_run_spec()
        restore = self._install_sigterm()
        slot = self.held_slot or (Slot(run.path.parent) if self.uses_local_slot else None)
        try:
            if slot is not None and self.held_slot is None and not wait_for_slot(run, slot):
                run.mark_process(STOPPED, ended=time.time())
                run.event("stopped", message="stopped while queued")
                return STOPPED
            run.mark_process(RUNNING, started=time.time(), engine=self.engine_name)
            run.event("started", engine=self.engine_name, pid=os.getpid())
            address = cluster_address(self.effective_config or {})
            # on a cluster the job watches its own run (its diagnoses come back with its events)
            watcher = start_diagnoses(run) if address is None else NO_DIAGNOSES
            try:
                outcome, ended_by = self._train_here_or_on_cluster(address)
            except BaseException as e:  # noqa: BLE001 - every failure is recorded, then re-raised
                watcher.stop()
                self._record_failure(e)
                raise
            watcher.stop()
            # the event first: whoever waits for the final state then finds the event written too (run.end: in
            # the fallback place when the run directory refuses the status)
            step = run.read_status().get("step")
            if outcome == STOPPED and watcher.fatal:
                message = "the loss or the gradient norm is not finite (NaN/inf)"
                run.end(
                    "failed",
                    dict(cause=watcher.fatal, message=message, step=step),
                    state=FAILED,
                    cause=watcher.fatal,
                    error=message,
                    ended=time.time(),
                )
                return FAILED
            if outcome == STOPPED:
                # who asked: the user, a sweep's pruner (``pruned``), SIGTERM; or the cluster job's own stop
                cause = run.stop_reason() or ended_by
                run.end(
                    "stopped",
                    dict(message="stopped at a step boundary", step=step, cause=cause),
                    state=STOPPED,
                    ended=time.time(),
                    cause=cause,
                )
            else:
                ended = {"cause": ended_by} if ended_by else {}  # a cluster job's own reason (early_stopped)
                run.end("finished", dict(step=step, **ended), state=FINISHED, ended=time.time(), **ended)
            return outcome
        finally:
            if slot is not None:
                slot.release()
            restore()

    def _train_here_or_on_cluster(self, address: str | None) -> tuple[str, str | None]:
        """(``"finished"`` or ``"stopped"``, the cause a cluster job stopped with) — trained here, or as a job on the
        Ray cluster at ``address`` with its run directory mirrored back (engines/cluster/ray_run.py)."""
        if address is None:
            return self._train(), None
        from ..cluster.ray_run import train_as_ray_job

        return train_as_ray_job(self.run, address, self.effective_config or {}, self.cluster_job_env())

    def cluster_job_env(self) -> dict[str, str]:
        """Variables a cluster job of this engine needs beyond the run's (where an engine's own environment is);
        a value that is a path is read at the same path on the cluster."""
        return {}

    def _record_failure(self, e: BaseException) -> None:
        """The run ends ``failed`` with its cause. A write the run directory refused is the cause ("cannot write
        metrics.jsonl: [Errno 1] Operation not permitted"): the engine then saves what it trained where it can
        (:meth:`save_elsewhere`) and the status goes to the fallback place when status.json refuses it too."""
        text = "".join(traceback.format_exception(type(e), e, e.__traceback__))
        refused = run_dir_write_error(e, self.run.path)
        extra: dict[str, Any] = {}
        if disk_full.caused_by_full_disk(e, self.run.path):
            # the fallback place is on the same disk as a rule: room is made by removing the unfinished checkpoint
            last_good, note = self.run.read_status().get("last_checkpoint"), disk_full.disk_full_note(self.run.path)
            removed = disk_full.free_room(self.run.path, last_good)
            cause, message = Cause.DISK_FULL, disk_full.full_disk_message(note, last_good, removed)
        elif refused is not None:
            cause, message = str(refused), refused.detail
            saved = self._save_elsewhere(refused)
            extra = {"fallback_checkpoint": saved[0]} if saved[0] else {}
            message += f"; {saved[1]}"
        else:
            cause, message = failure_cause(e), f"{type(e).__name__}: {e}"
        step = self.run.read_status().get("step")
        try:
            self.run.end(
                "failed",
                dict(cause=cause, message=message, traceback=text[-4000:], step=step, **extra),
                state=FAILED,
                cause=cause,
                error=message,
                ended=time.time(),
                **extra,
            )
        except OSError as nowhere:  # neither the run directory nor the fallback place takes it: say so in the log
            logger.error(
                "run %s: the final status could not be written to %s nor to %s (%s)",
                self.run.run_id,
                self.run.path,
                self.run.fallback_dir,
                nowhere,
            )
        logger.error("run %s failed (%s): %s", self.run.run_id, cause, message)

    def _save_elsewhere(self, refused: BaseException) -> tuple[str | None, str]:
        """(the folder the model was saved to, or None; what to say about it) after the run directory refused a write."""
        target = self.run.fallback_dir / "checkpoints"
        try:
            self._output_elsewhere()
            saved = self.save_elsewhere(target)
        except Exception as e:  # noqa: BLE001 - the run already failed: say why its model is not saved too
            logger.warning("run %s: saving the model to %s failed", self.run.run_id, target, exc_info=True)
            return None, f"the model could not be saved to {target} either ({type(e).__name__}: {e})"
        if saved is None:
            return None, "the steps since the last checkpoint are not saved"
        return str(saved), f"the model at this step was saved to {saved}"

    def _output_elsewhere(self) -> None:
        """This process's stdout and stderr go on in the fallback place's train.log when the run's train.log refuses
        them (a progress bar written there would fail the save too)."""
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            os.write(2, b"\n")
            return
        except OSError:
            pass
        self.run.fallback_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.run.fallback_dir / "train.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)

    def save_elsewhere(self, folder) -> Any:
        """Save the model being trained under ``folder`` (a checkpoint the run directory refused); returns the
        checkpoint's path, or None when the engine cannot (its weights live in another process)."""
        return None

    def _install_sigterm(self) -> Callable[[], None]:
        """SIGTERM → a stop request, so training ends at the next step boundary with a checkpoint."""
        if threading.current_thread() is not threading.main_thread():
            return lambda: None
        run = self.run

        def on_term(signum, frame):
            run.request_stop("SIGTERM")

        previous = signal.signal(signal.SIGTERM, on_term)
        return lambda: signal.signal(signal.SIGTERM, previous)

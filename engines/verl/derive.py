"""A run's verl config: verl's own ``ppo_trainer`` (composed by :mod:`.compose`) + what the studio derives
from the checked agent, datasets and reward + the user's settings, then the checks verl does not make.

In order:

* the adapter settings (``ray_address``, ``env_vars``, ``verl_python``) and the studio's short names,
  checked against their declared types;
* relative file paths in the user's config made absolute (verl runs with the run dir as its cwd);
* fills — model, data files, reward bridge, tools, sampling, GPUs, rollout backend, batch sizes and a
  prompt length that fit the data and the model — each only where the user left the key empty;
* forced keys — verl's ``console`` and ``file`` loggers — and what a Ray cluster needs to know;
* verl's own ``validate_config`` (:func:`.compose.run_verl_checks`), then what verl checks only once it
  runs: the batch against the data, a built-in scorer for every ``data_source`` when no reward is given,
  the longest rendered prompt (chat template + the agent's tool schemas) against ``data.max_prompt_length``.

Importing this module is cheap; OmegaConf, verl, pyarrow and transformers are imported inside the functions.
"""

from __future__ import annotations

import math
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..agents.agent_spec import AgentSpec, substitute_env
from ..env_values.env_invitation import NotInvited
from ..results.check_result import CheckError
from ..inputs.config import ConfigField, load_config_input, validate_config
from ..fit.data_fit import check_memory_floor
from ..inputs.row_location import locate_rows
from ..runs.rundir import RunDir
from . import compose as C
from ..cluster.ray_jobs import unreachable
from .availability import PYTHON_ENV, probe, verl_python
from .bridge import REWARD_FN
from .dataset import TOOL_AGENT_LOOP
from .layout import ROLLOUTS_DIR
from .resume import apply_resume

#: bytes: more than any one node of a cluster has (its size is not known here)
HOST_MEMORY_BOUND = 2 << 40
#: file paths a user's config may hold, made absolute before verl sees them
PATH_KEYS = (
    "actor_rollout_ref.rollout.multi_turn.tool_config_path",
    "actor_rollout_ref.rollout.multi_turn.function_tool_path",
    "actor_rollout_ref.rollout.agent.agent_loop_config_path",
    "reward.custom_reward_function.path",
    "custom_reward_function.path",
    "data.train_files",
    "data.val_files",
)


@dataclass
class CheckedInputs:
    """What the agent, dataset and reward checks left for the config."""

    run: RunDir
    verl_dir: Path
    agent: AgentSpec | None = None
    tokenizer: Any = None  # the agent's tokenizer (a local model folder with a chat template)
    parquets: dict[str, Path] = field(default_factory=dict)
    bridge_file: Path | None = None
    tool_file: Path | None = None
    train_source: str | None = None  # the training file the user gave (rows are named in its numbering)
    native_data: bool = False  # the training file is verl's own parquet (rows are numbered from 1)
    resume_from: Path | None = None  # a resumed run's global_step folder (engines/verl/resume.py)
    max_steps: int | None = None  # a resumed run's raised end


@dataclass
class DerivedConfig:
    """The final verl config and what the launch needs beside it."""

    cfg: Any  # the composed DictConfig, verl's checks passed
    user: C.UserConfig
    filled: dict[str, Any]
    warnings: list[str]
    cluster_address: str | None
    env_vars: dict[str, str]
    python: str
    total_steps: int | None
    resumed_at: int = 0  # the step of the checkpoint a resumed run continues from


def derive_config(config: Any, inputs: CheckedInputs, config_fields: list[ConfigField]) -> DerivedConfig:
    """The user's config (a YAML path, a dict, dotted keys, short names) → verl's final config.
    Raises :class:`CheckError` naming the key(s) at fault."""
    return _Derivation(inputs, config_fields).run(config)


class _Derivation:
    def __init__(self, inputs: CheckedInputs, config_fields: list[ConfigField]):
        self.inputs = inputs
        self.agent = inputs.agent
        self.run_dir = inputs.run
        self.config_fields = config_fields
        self.cluster_address: str | None = None
        self.env_vars: dict[str, str] = {}
        self.python = verl_python()
        self.total_steps: int | None = None
        self.longest_where = ""

    def run(self, config: Any) -> DerivedConfig:
        raw = self._checked_short_names(load_config_input(config))
        base_dir = None
        if isinstance(config, (str, os.PathLike)) and Path(os.path.expanduser(str(config))).is_file():
            base_dir = Path(os.path.expanduser(str(config))).resolve().parent
        user = C.split_user_config(raw, C.root_keys())
        warnings = list(user.warnings)
        self._adapter(user)
        _absolutize(user, base_dir)

        base = C.compose_base(user.groups)
        bad = C.unknown_keys(user.nested, base)
        if bad:
            raise CheckError(
                "config",
                "unknown verl key(s): " + ", ".join(f"'{k}'{hint}" for k, hint in bad),
                "fix the spelling; verl's keys are in verl/trainer/config/_generated_ppo_trainer.yaml",
                keys=[k for k, _ in bad],
            )
        cfg = C.merge_user(base, user)
        warnings += C.migrate_reward_key(cfg, user)
        filled: dict[str, Any] = {}

        def fill(path: str, value: Any, studio_input: bool = False) -> None:
            if user.sets(path):
                mine = C.select(cfg, path)
                if studio_input and value is not None and _norm(mine) != _norm(value):
                    warnings.append(f"the config sets {path}={mine!r}: it is used instead of the studio's {value!r}")
                return
            C.set_value(cfg, path, value)
            filled[path] = value

        self._fill(cfg, fill, warnings)
        self._force(cfg, user, warnings)
        resumed_at = 0
        if self.inputs.resume_from is not None:
            resumed_at = apply_resume(cfg, self.inputs.resume_from, self.inputs.max_steps, self._rows("train"))

        notes = C.run_verl_checks(cfg)
        warnings += [f"verl: {n}" for n in notes]
        warnings += self._check_against_data(cfg)
        return DerivedConfig(
            cfg=cfg,
            user=user,
            filled=filled,
            warnings=warnings,
            cluster_address=self.cluster_address,
            env_vars=self.env_vars,
            python=self.python,
            total_steps=self.total_steps,
            resumed_at=resumed_at,
        )

    # -- the user's settings ------------------------------------------------------------------------
    def _checked_short_names(self, raw: dict[str, Any]) -> dict[str, Any]:
        """The studio's short names (``batch_size``, ``ray_address``, ...): types and ranges as declared."""
        fields = {f.name for f in self.config_fields}
        # (a mapping under `algorithm` is verl's section of that name, not the short name)
        flat = {
            k: v
            for k, v in raw.items()
            if k in fields and v is not None and (k == "env_vars" or not isinstance(v, dict))
        }
        if not flat:
            return raw
        checked, _ = validate_config(flat, [f for f in self.config_fields if f.name in flat])
        return {**raw, **checked}

    def _adapter(self, user: C.UserConfig) -> None:
        address = user.adapter.get("ray_address") or os.environ.get("RAY_ADDRESS") or None
        self.cluster_address = str(address).strip() if address else None
        env = user.adapter.get("env_vars") or {}
        if not isinstance(env, dict):
            raise CheckError("config", "`env_vars` must be a mapping of NAME: value", keys=["env_vars"])
        missing: list[str] = []  # ${NAME} values come from the environment (a secret is never written in run.yaml)
        try:
            self.env_vars = {str(k): substitute_env(str(v), missing) for k, v in env.items()}
        except NotInvited as e:
            raise CheckError("config", str(e), keys=["env_vars"]) from None
        if missing:
            raise CheckError(
                "config",
                f"env_vars refers to environment variable(s) that are not set: {', '.join(sorted(set(missing)))}",
                "export them before starting",
                keys=["env_vars"],
            )
        self.python = verl_python(user.adapter.get("verl_python"))
        if not os.path.isfile(self.python) and shutil.which(self.python) is None:
            raise CheckError(
                "config",
                f"verl_python '{self.python}' does not exist",
                f"point it (or ${PYTHON_ENV}) at the python of an environment with verl[vllm]",
                keys=["verl_python"],
            )

    # -- fills --------------------------------------------------------------------------------------
    def _fill(self, cfg, fill, warnings: list[str]) -> None:
        """The studio's derived values, each applied only where the user left the key empty."""
        agent, run, inputs = self.agent, self.run_dir, self.inputs
        if agent is not None:
            fill("actor_rollout_ref.model.path", agent.model, studio_input=True)
        if inputs.parquets:
            train = str(inputs.parquets["train"])
            fill("data.train_files", [train], studio_input=True)
            fill("data.val_files", [str(inputs.parquets.get("test", train))], studio_input=True)
        if inputs.bridge_file is not None:
            key = C.reward_function_key(cfg)
            fill(f"{key}.path", str(inputs.bridge_file), studio_input=True)
            fill(f"{key}.name", REWARD_FN, studio_input=True)
        fill("trainer.project_name", "aworld")
        fill("trainer.experiment_name", run.run_id)
        fill("trainer.default_local_dir", str(run.checkpoints_dir))
        # checkpoints also in Hugging Face form (actor/huggingface), so evaluation, chat and export load them
        # as they are; loading a checkpoint to resume reads verl's own shards as before
        fill("actor_rollout_ref.actor.checkpoint.save_contents", ["model", "optimizer", "extra", "hf_model"])
        fill("actor_rollout_ref.actor.checkpoint.load_contents", ["model", "optimizer", "extra"])
        fill("trainer.rollout_data_dir", str(inputs.verl_dir / ROLLOUTS_DIR))
        fill("algorithm.adv_estimator", "grpo")
        # what the verl interpreter has (a cluster's nodes cannot be probed from here)
        env = probe(self.python) if self.cluster_address is None else {}
        if "error" in env:
            warnings.append(f"cannot probe the verl Python: {env['error']}")
            env = {}
        if self.cluster_address is None:
            fill("trainer.n_gpus_per_node", max(1, int(env.get("gpus") or 0)))
        fill("actor_rollout_ref.rollout.name", next((b for b in C.ROLLOUT_BACKENDS if env.get(b)), "vllm"))
        if env and not env.get("flash_attn"):  # transformers' default flash_attention_2 needs the flash-attn wheel
            fill("actor_rollout_ref.model.override_config.attn_implementation", "sdpa")
            fill("critic.model.override_config.attn_implementation", "sdpa")
        gpus = int(C.select(cfg, "trainer.n_gpus_per_node") or 1)
        tp = C.select(cfg, "actor_rollout_ref.rollout.tensor_model_parallel_size")
        if isinstance(tp, int) and tp > gpus:
            fill("actor_rollout_ref.rollout.tensor_model_parallel_size", gpus)
        if C.select(cfg, "algorithm.adv_estimator") != "gae":
            fill("actor_rollout_ref.rollout.n", C.GROUP_SIZE)
        if agent is not None:
            steps = max(1, agent.max_steps) if agent.has_tools else 1
            fill("data.max_response_length", int(agent.max_tokens) * steps)
            fill("actor_rollout_ref.rollout.temperature", float(agent.temperature))
            fill("actor_rollout_ref.rollout.top_p", float(agent.top_p))
        self._fill_batches(cfg, fill, gpus)
        if agent is not None and agent.has_tools and inputs.tool_file is not None:
            fill("actor_rollout_ref.rollout.multi_turn.enable", True)
            fill("actor_rollout_ref.rollout.multi_turn.function_tool_path", str(inputs.tool_file))
            fill("actor_rollout_ref.rollout.multi_turn.max_assistant_turns", int(agent.max_steps))
            fill("actor_rollout_ref.rollout.agent.default_agent_loop", TOOL_AGENT_LOOP)
        self._fill_lengths(cfg, fill, warnings)

    def _fill_lengths(self, cfg, fill, warnings: list[str]) -> None:
        """data.max_prompt_length: room for the longest prompt, within the model's context window."""
        if self.agent is None or C.select(cfg, "actor_rollout_ref.model.path") != self.agent.model:
            return  # the config trains another model than the agent's: its tokenizer is not ours to measure
        longest = self._longest_prompt()
        prompt = int(C.select(cfg, "data.max_prompt_length") or 0)
        if longest is not None and longest > prompt:
            fill("data.max_prompt_length", int(math.ceil(longest / 64) * 64))
        context = self._model_context()
        response = int(C.select(cfg, "data.max_response_length") or 0)
        where = self.longest_where
        if context and longest is not None and longest < context <= longest + response:
            raise CheckError(
                "config",
                f"data.max_response_length={response:,} plus the longest prompt ({longest:,} "
                f"tokens, {where}) exceeds the model's context of {context:,} tokens "
                "(max_position_embeddings)",
                f"set max_completion_length (data.max_response_length) to at most {context - longest:,}",
                keys=["data.max_response_length"],
            )
        if context and int(C.select(cfg, "data.max_prompt_length") or 0) + response > context:
            fill("data.max_prompt_length", max(1, context - response))
        prompt = int(C.select(cfg, "data.max_prompt_length") or 0)
        if longest is not None and context and longest >= context:
            raise CheckError(
                "config",
                f"the longest training prompt ({where}) has {longest:,} tokens: "
                f"more than the model's context of {context:,} tokens (max_position_embeddings)",
                "shorten or drop that row",
                keys=["data.max_prompt_length"],
            )
        if longest is not None and longest > prompt:
            if C.select(cfg, "data.truncation") == "error":
                raise CheckError(
                    "config",
                    f"the longest training prompt ({where}) has {longest:,} tokens "
                    f"but data.max_prompt_length={prompt:,}: verl stops on it (data.truncation=error)",
                    f"raise data.max_prompt_length to at least {longest:,}, shorten the row, or set "
                    "data.truncation: left",
                    keys=["data.max_prompt_length", "data.truncation"],
                )
            warnings.append(
                f"the longest prompt ({where}) has {longest} tokens but "
                f"data.max_prompt_length={prompt}: verl truncates it (data.truncation="
                f"{C.select(cfg, 'data.truncation')})"
            )
        if context and prompt + response > context:
            raise CheckError(
                "config",
                f"data.max_prompt_length + data.max_response_length = {prompt + response:,} "
                f"exceeds the model's context of {context:,} tokens (max_position_embeddings): vLLM "
                "refuses it",
                "lower data.max_prompt_length or max_completion_length (data.max_response_length)",
                keys=["data.max_prompt_length", "data.max_response_length"],
            )

    def _fill_batches(self, cfg, fill, gpus: int) -> None:
        """Batch sizes that fit the data and the GPUs, where the user set none (verl checks them)."""
        rows = self._rows("train")
        nnodes = int(C.select(cfg, "trainer.nnodes") or 1)
        n = int(C.select(cfg, "actor_rollout_ref.rollout.n") or 1)
        total_gpus = max(1, gpus * nnodes)
        unit = total_gpus // math.gcd(n, total_gpus)  # train_batch_size * n must divide by the GPU count
        if rows:
            tbs = int(C.select(cfg, "data.train_batch_size") or 1)
            want = min(tbs, rows)
            want = max(unit, want - want % unit)
            if want != tbs:
                fill("data.train_batch_size", want)
        tbs = int(C.select(cfg, "data.train_batch_size") or 1)
        mini = C.select(cfg, "actor_rollout_ref.actor.ppo_mini_batch_size")
        if isinstance(mini, int) and mini > tbs:
            fill("actor_rollout_ref.actor.ppo_mini_batch_size", tbs)
        for section, name in (
            ("actor_rollout_ref.actor", "ppo_micro_batch_size"),
            ("actor_rollout_ref.rollout", "log_prob_micro_batch_size"),
            ("actor_rollout_ref.ref", "log_prob_micro_batch_size"),
        ):
            if C.select(cfg, f"{section}.{name}") is None:
                fill(f"{section}.{name}_per_gpu", C.MICRO_BATCH_PER_GPU)

    # -- forced keys --------------------------------------------------------------------------------
    def _force(self, cfg, user: C.UserConfig, warnings: list[str]) -> None:
        """What the studio needs whatever the user wrote: verl's console and file loggers (train.log and the
        metrics curves); wandb only when the user lists it."""
        loggers = C.select(cfg, "trainer.logger")
        loggers = [loggers] if isinstance(loggers, str) else list(loggers or [])
        if not user.sets("trainer.logger"):
            loggers = ["console", "file"]
        for name in ("console", "file"):
            if name not in loggers:
                loggers.append(name)
        C.set_value(cfg, "trainer.logger", loggers)
        if "wandb" in loggers and not os.environ.get("WANDB_API_KEY"):
            warnings.append("trainer.logger has wandb but WANDB_API_KEY is not set")
        if self.cluster_address and not user.sets("trainer.default_local_dir"):
            warnings.append(
                f"checkpoints go to {C.select(cfg, 'trainer.default_local_dir')} on the node that runs "
                "verl's trainer: set trainer.default_local_dir to shared storage to keep them"
            )
        if self.cluster_address:
            problem = unreachable(self.cluster_address)
            if problem:
                warnings.append(
                    f"cannot reach the Ray cluster at {self.cluster_address} ({problem}): the run will "
                    "fail to submit unless it is up by then"
                )
        outside = self._outside_run_dir(cfg) if self.cluster_address else []
        if outside:
            warnings.append("on a multi-node cluster these files must exist on every node: " + ", ".join(outside))

    def _outside_run_dir(self, cfg) -> list[str]:
        out = []
        for key in PATH_KEYS + ("actor_rollout_ref.model.path",):
            value = _norm(C.select(cfg, key))
            for v in value if isinstance(value, list) else [value]:
                if (
                    isinstance(v, str)
                    and os.path.isabs(v)
                    and os.path.exists(v)
                    and not Path(v).resolve().is_relative_to(self.run_dir.path)
                ):
                    out.append(f"{key}={v}")
        return out

    # -- what verl checks only once it runs ---------------------------------------------------------
    def _check_against_data(self, cfg) -> list[str]:
        """What verl does not check before it starts: data vs batch size, no reward for the data sources."""
        warnings: list[str] = []
        rows = self._rows("train")
        tbs = int(C.select(cfg, "data.train_batch_size") or 1)
        epochs = int(C.select(cfg, "trainer.total_epochs") or 1)
        fixed = C.select(cfg, "trainer.total_training_steps")
        if rows is not None:
            per_epoch = rows // tbs
            if per_epoch == 0:
                raise CheckError(
                    "config",
                    f"data.train_batch_size={tbs} is larger than the training set "
                    f"({rows} rows): verl would train 0 steps",
                    f"set data.train_batch_size (batch_size) to at most {rows}",
                    keys=["data.train_batch_size"],
                )
            self.total_steps = int(fixed) if fixed else per_epoch * epochs
            if rows % tbs:
                warnings.append(
                    f"{rows % tbs} training row(s) per epoch are dropped (verl drops the last partial batch of {tbs})"
                )
        elif fixed:
            self.total_steps = int(fixed)
        # a floor on the driver's memory: the step's batch (ids, attention mask, positions: 8 bytes each per token)
        import psutil

        n = int(C.select(cfg, "actor_rollout_ref.rollout.n") or 1)
        tokens = int(C.select(cfg, "data.max_prompt_length") or 0) + int(C.select(cfg, "data.max_response_length") or 0)
        check_memory_floor(
            tbs * n,
            tokens,
            24,
            HOST_MEMORY_BOUND if self.cluster_address else psutil.virtual_memory().total,
            f"data.train_batch_size={tbs} × rollout.n={n:,}",
            "24 bytes (input_ids, attention_mask, position_ids)",
            "any node" if self.cluster_address else "this machine",
            ["actor_rollout_ref.rollout.n", "data.train_batch_size"],
        )
        key = C.reward_function_key(cfg)
        if not C.select(cfg, f"{key}.path"):
            self._check_builtin_scorer()
        return warnings

    def _check_builtin_scorer(self) -> None:
        """No custom reward: verl's default_compute_score must know every data_source."""
        if "train" not in self.inputs.parquets:
            return
        import pyarrow.parquet as pq

        sources = set(
            pq.read_table(str(self.inputs.parquets["train"]), columns=["data_source"]).column("data_source").to_pylist()
        )
        from verl.utils.reward_score import default_compute_score

        unknown = []
        for s in sorted(map(str, sources)):
            try:
                default_compute_score(s, "", "0")
            except NotImplementedError:
                unknown.append(s)
            except Exception:  # it knows the source (and failed on the dummy answer)
                pass
        if unknown:
            raise CheckError(
                "config",
                f"no reward function, and verl has no built-in scorer for data_source "
                f"{', '.join(repr(u) for u in unknown)}",
                "pick a reward (a built-in such as exact_match, or file.py:function)",
                keys=["reward.custom_reward_function.path"],
            )

    # -- measurements -------------------------------------------------------------------------------
    def _rows(self, split: str) -> int | None:
        path = self.inputs.parquets.get(split)
        if path is None or not path.exists():
            return None
        import pyarrow.parquet as pq

        return pq.ParquetFile(str(path)).metadata.num_rows

    def _longest_prompt(self, limit: int = 20000) -> int | None:
        """Tokens of the longest training prompt as verl renders it (chat template + tools)."""
        tokenizer = self.inputs.tokenizer
        if tokenizer is None or "train" not in self.inputs.parquets:
            return None
        import pyarrow.parquet as pq
        from verl.utils.tokenizer import normalize_token_ids  # a list, a BatchEncoding (transformers 5), ...

        # verl's tool agent loop and its dataset filter render the tool schemas into every prompt
        schemas = list(self.agent.tool_schemas) if self.agent is not None and self.agent.has_tools else []
        prompts = pq.read_table(str(self.inputs.parquets["train"]), columns=["prompt"]).column("prompt").to_pylist()
        longest, at = 0, 0
        for i, messages in enumerate(prompts[:limit]):
            try:
                ids = normalize_token_ids(
                    tokenizer.apply_chat_template(
                        messages, tools=schemas or None, add_generation_prompt=True, tokenize=True
                    )
                )
            except Exception:
                return None
            if len(ids) > longest:
                longest, at = len(ids), i
        source = self.inputs.train_source
        where = f"row {at + 1}" if self.inputs.native_data else locate_rows(source, [at])[at]
        self.longest_where = where + (f" of {Path(source).name}" if source else "")
        return longest

    def _model_context(self) -> int | None:
        """max_position_embeddings of a local model folder (config.json; no transformers import)."""
        if self.agent is None:
            return None
        path = Path(self.agent.model) / "config.json"
        try:
            import json

            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        value = data.get("max_position_embeddings") or (data.get("text_config") or {}).get("max_position_embeddings")
        return int(value) if isinstance(value, int) and value > 0 else None


def _absolutize(user: C.UserConfig, base_dir: Path | None) -> None:
    """Relative file paths in the user's config → absolute (verl runs with the run dir as its cwd);
    tried against the working directory, then the config file's folder."""
    paths = user.paths
    for key in PATH_KEYS:
        if key not in paths:
            continue
        value = paths[key]
        out = []
        for item in value if isinstance(value, list) else [value]:
            item = os.path.expanduser(str(item))
            if "://" in item:  # hdfs://, s3://: verl fetches it
                out.append(item)
                continue
            candidates = (
                [Path(item)] if os.path.isabs(item) else [Path.cwd() / item] + ([base_dir / item] if base_dir else [])
            )
            found = next((c for c in candidates if c.exists()), None)
            if found is None:
                raise CheckError(
                    "config",
                    f"{key}: file '{item}' not found (looked at {', '.join(str(c) for c in candidates)})",
                    "give an absolute path, or one relative to the config file",
                    keys=[key],
                )
            out.append(str(found.resolve()))
        new = out if isinstance(value, list) else out[0]
        if new != value:
            C.set_path(user.nested, key, new)
            C.set_path(user.raw, key, new)


def _norm(value: Any) -> Any:
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf

        if isinstance(value, (DictConfig, ListConfig)):
            return OmegaConf.to_container(value, resolve=True)
    except ImportError:  # pragma: no cover
        pass
    return value

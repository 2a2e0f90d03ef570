"""VerlProcessor: the studio's agent, datasets, reward and config → a verl job verl itself accepts.

Everything verl needs lands in ``<run>/verl/``:

=========================  ======================================================================
``train.parquet``          verl RL rows (``test.parquet`` too when a test set is given)
``reward_bridge.py``       ``compute_score(data_source, solution_str, ground_truth, extra_info, ...)``
``aworld_engines/``        snapshot of the studio's reward code the bridge imports
``function_tools.py``      the agent's tools as verl ``@function_tool`` s (tool-using agents only)
``verl_config.yaml``       the final config (verl's ``ppo_trainer`` + derived + the user's settings)
``verl_metrics.jsonl``     verl's ``file`` logger output, mirrored into ``metrics.jsonl``
``rollouts/``              verl's rollout dumps, mirrored into ``samples.jsonl``
=========================  ======================================================================

Importing this module imports neither verl, torch nor ray.
"""
from __future__ import annotations

import importlib.util
import math
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from ..agents import AgentSpec, substitute_env
from ..check_result import CheckError, CheckResult
from ..config import ConfigField, load_config_input, validate_config
from ..data import DataBundle
from ..data_fit import check_memory_floor
from ..row_location import locate_rows
from ..rundir import FINISHED, STOPPED, STOPPING
from ..standard import StandardProcessor
from . import compose as C
from .bridge import REWARD_FN, write_function_tools, write_reward_bridge
from .dataset import TOOL_AGENT_LOOP, convert_table, data_source_name, extra_columns, is_verl_native, place_native

CONFIG_FILE = "verl_config.yaml"
CLUSTER_CONFIG_FILE = "verl_config_cluster.yaml"
METRICS_FILE = "verl_metrics.jsonl"
ROLLOUTS_DIR = "rollouts"
VERL_DIR = "verl"
PYTHON_ENV = "AWORLD_VERL_PYTHON"
INSTALL_HINT = ("on a CUDA machine, in an environment of its own: python -m venv .venv-verl && "
                ".venv-verl/bin/pip install 'verl[vllm]==0.9.1' cloudpickle, then "
                f"export {PYTHON_ENV}=$PWD/.venv-verl/bin/python (see docs/VERL.md)")
PROBED_MODULES = ("verl", "vllm", "sglang", "transfer_queue", "cloudpickle", "flash_attn")
PROBE = ("import importlib.util as u, json\n"
         f"out = {{m: u.find_spec(m) is not None for m in {PROBED_MODULES!r}}}\n"
         "try:\n    import torch; out['gpus'] = torch.cuda.device_count()\nexcept Exception:\n    out['gpus'] = 0\n"
         "print(json.dumps(out))\n")
#: run-dir entries a Ray job never needs (the live files of this run, outputs)
RAY_EXCLUDES = ["/train.log", "/metrics.jsonl", "/samples.jsonl", "/events.jsonl", "/status.json", "/STOP",
                "/checkpoints/", "/tensorboard/", "/verl/hydra/", f"/verl/{ROLLOUTS_DIR}/", f"/verl/{METRICS_FILE}",
                "/.*.tmp"]
POLL_S = 1.0
CLUSTER_LOST_S = 120.0
STOP_GRACE_S = 15.0  # then SIGKILL; within runs.enforce_stop_timeout's 30 s
HOST_MEMORY_BOUND = 2 << 40  # bytes: more than any one node of a cluster has (its size is not known here)

CONFIG_FIELDS = [
    ConfigField("algorithm", str, "grpo", "advantage estimator (algorithm.adv_estimator): grpo, rloo, gae (PPO "
                "with a critic), reinforce_plus_plus, ...", main=True),
    ConfigField("epochs", int, None, "passes over the training set (trainer.total_epochs; verl's default 30)",
                min=1, nullable=True, main=True),
    ConfigField("total_steps", int, None, "stop after this many steps (trainer.total_training_steps)", min=1,
                nullable=True, main=True),
    ConfigField("batch_size", int, None, "prompts per step (data.train_batch_size; fitted to the data when "
                "empty)", min=1, nullable=True, main=True),
    ConfigField("num_generations", int, None, f"rollouts per prompt (actor_rollout_ref.rollout.n; {C.GROUP_SIZE} "
                "for GRPO when empty)", min=1, nullable=True, main=True),
    ConfigField("learning_rate", float, None, "actor learning rate (actor_rollout_ref.actor.optim.lr; verl's "
                "default 1e-6)", min=0.0, nullable=True, main=True),
    ConfigField("max_completion_length", int, None, "response tokens (data.max_response_length; the agent's "
                "max_tokens when empty)", min=1, nullable=True),
    ConfigField("max_prompt_length", int, None, "prompt tokens (data.max_prompt_length)", min=1, nullable=True),
    ConfigField("n_gpus_per_node", int, None, "GPUs per node (trainer.n_gpus_per_node; this machine's count "
                "when empty)", min=1, nullable=True, main=True),
    ConfigField("nnodes", int, None, "nodes (trainer.nnodes)", min=1, nullable=True),
    ConfigField("rollout", str, None, "rollout backend (actor_rollout_ref.rollout.name): vllm or sglang",
                nullable=True),
    ConfigField("save_freq", int, None, "checkpoint every N steps (trainer.save_freq; -1 = never)",
                nullable=True),
    ConfigField("test_freq", int, None, "validate every N steps (trainer.test_freq; -1 = never)", nullable=True),
    ConfigField("ray_address", str, None, "submit to this Ray cluster (http://<head>:8265); RAY_ADDRESS works too",
                nullable=True, main=True),
    ConfigField("env_vars", dict, None, "environment variables for the verl job", nullable=True),
    ConfigField("verl_python", str, None, f"the Python of an environment with verl[vllm] (${PYTHON_ENV} works "
                "too); this one when empty", nullable=True),
]


def _detect_gpus_cheap() -> int:
    """nvidia-smi when present (no torch import), else torch."""
    exe = shutil.which("nvidia-smi")
    if exe:
        try:
            out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=10)
            return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))
        except (OSError, subprocess.SubprocessError):
            pass
    if os.environ.get("CUDA_VISIBLE_DEVICES", "x").strip() in ("", "-1") or importlib.util.find_spec("torch") is None:
        return 0
    try:
        import torch

        return int(torch.cuda.device_count())
    except Exception:
        return 0


def verl_python(setting: str | None = None) -> str:
    """The interpreter that runs verl locally: the config's ``verl_python``, $AWORLD_VERL_PYTHON, or this one."""
    return os.path.expanduser(setting or os.environ.get(PYTHON_ENV) or sys.executable)


_PROBES: dict[str, dict[str, Any]] = {}


def probe(python: str | None = None) -> dict[str, Any]:
    """What the verl interpreter has: GPUs, rollout backends, verl's trainer extras (once per interpreter)."""
    python = verl_python(python)
    key = os.path.realpath(python)
    if key in _PROBES:
        return _PROBES[key]
    if key == os.path.realpath(sys.executable):
        out: dict[str, Any] = {m: importlib.util.find_spec(m) is not None for m in PROBED_MODULES}
        out["gpus"] = _detect_gpus_cheap()
    else:
        try:
            res = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, timeout=120)
            import json

            out = json.loads(res.stdout.strip().splitlines()[-1])
        except Exception as e:  # a wrong path, a broken environment: not cached, the user may fix it
            return {"error": f"{python}: {type(e).__name__}: {e}"}
    _PROBES[key] = out
    return out


class VerlProcessor(StandardProcessor):
    engine_name = "verl"
    description = "verl on Ray: GRPO/PPO across GPUs and nodes (vLLM or SGLang rollouts), local or on a cluster"
    config_fields = CONFIG_FIELDS
    reward_required = False  # without one, verl scores rows by data_source with its built-in scorers

    def __init__(self, run_path: str = "runs"):
        super().__init__(run_path)
        self.tokenizer = None
        self.tool_file: Path | None = None
        self.parquets: dict[str, Path] = {}
        self.native_data = False
        self._longest_where = ""
        self.bridge_file: Path | None = None
        self.verl_config = None  # the composed DictConfig
        self.config_path: Path | None = None
        self.cluster_address: str | None = None
        self.env_vars: dict[str, str] = {}
        self.total_steps: int | None = None
        self.python = verl_python()
        #: what follows the interpreter (tests without a GPU put a stand-in script here)
        self.main_entry: list[str] = ["-m", "verl.trainer.main_ppo"]

    @property
    def verl_dir(self) -> Path:
        d = self.run.path / VERL_DIR
        d.mkdir(parents=True, exist_ok=True)
        return d

    # -- availability ----------------------------------------------------------------------------
    @classmethod
    def preload(cls) -> None:
        """verl's config checks import verl's trainer modules and compose its Hydra config: do both once."""
        import transformers  # noqa: F401
        import verl.trainer.ppo.core_algos  # noqa: F401
        import verl.trainer.ppo.utils  # noqa: F401
        import verl.utils.config  # noqa: F401
        import verl.utils.reward_score  # noqa: F401
        import verl.workers.rollout.base  # noqa: F401

        C.compose_base()

    @classmethod
    def availability(cls) -> tuple[bool, str]:
        """CUDA GPUs, a rollout backend and verl's extra dependencies (or a Ray cluster to submit to)."""
        missing = [m for m in ("verl", "ray", "hydra", "omegaconf") if importlib.util.find_spec(m) is None]
        if missing:
            return False, f"missing {', '.join(missing)} — pip install -r requirements.txt"
        address = os.environ.get("RAY_ADDRESS")
        if address:
            return True, f"Ray cluster at {address}: jobs are submitted there (its GPUs and its verl[vllm])"
        found = probe()
        python = verl_python()
        if "error" in found:
            return False, f"cannot run the verl Python {found['error']} — check ${PYTHON_ENV}"
        problems = []
        if not found.get("verl"):
            problems.append(f"verl is not installed in {python}")
        if not found.get("gpus"):
            problems.append("no CUDA GPU found")
        backend = next((b for b in C.ROLLOUT_BACKENDS if found.get(b)), None)
        if backend is None:
            problems.append("no rollout backend (vllm or sglang) importable")
        if not found.get("transfer_queue"):
            problems.append("verl's trainer dependencies are missing (transfer_queue: extra verl-core)")
        if problems:
            return False, "; ".join(problems) + f" — {INSTALL_HINT}; or set ray_address / RAY_ADDRESS to a " \
                                                "Ray cluster that has them"
        return True, f"{found['gpus']} CUDA GPU(s), rollout backend {backend} ({python})"

    # -- agent -----------------------------------------------------------------------------------
    def convert_agent(self, spec: AgentSpec) -> None:
        model = Path(spec.model)
        if model.is_dir():
            from transformers import AutoTokenizer

            try:
                tok = AutoTokenizer.from_pretrained(str(model))
            except Exception as e:
                raise CheckError("agent", f"cannot load the tokenizer of model '{spec.model}': {type(e).__name__}: "
                                 f"{str(e)[:300]}", "point `model:` at a folder with tokenizer files")
            if not getattr(tok, "chat_template", None):
                raise CheckError("agent", f"the tokenizer of '{spec.model}' has no chat template",
                                 "verl renders chat prompts; give the model a chat template")
            self.tokenizer = tok
        if spec.tools:
            tools = []
            for ref in spec.tools:
                attr = ref.rpartition(":")[2]
                tools.append((attr.split(".")[-1], ref))
            names = [n for n, _ in tools]
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                raise CheckError("agent", f"two tools share the name {', '.join(dupes)}",
                                 "verl registers tools by function name; rename one")
            self.tool_file = write_function_tools(self.run.path, self.verl_dir, tools)
            if self.tokenizer is not None:
                self._check_tool_template(spec)

    def _check_tool_template(self, spec: AgentSpec) -> None:
        schemas = list(getattr(spec, "_schemas", []) or [])
        if not schemas:
            return
        try:
            text = self.tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], tools=schemas,
                                                      add_generation_prompt=True, tokenize=False)
        except Exception as e:
            raise CheckError("agent", f"the model's chat template cannot render tools: {type(e).__name__}: {e}",
                             "use a tool-calling chat template (e.g. Qwen2.5's)")
        name = schemas[0].get("function", {}).get("name", "")
        if name and name not in text:
            spec._warnings.append("the model's chat template ignores tools: the model will not see the tool list "  # type: ignore[attr-defined]
                                  "(use a tool-calling template such as Qwen2.5's, hermes format)")

    # -- datasets --------------------------------------------------------------------------------
    def convert_dataset(self, bundle: DataBundle) -> dict | None:
        agent = self.agent_spec
        tools = bool(agent and agent.tools)
        system = agent.system_prompt if agent else None
        details: dict[str, Any] = {}
        self.parquets = {}
        self.native_data = is_verl_native(bundle.train, bundle.columns)
        for split, ds, source in (("train", bundle.train, bundle.train_source),
                                  ("test", bundle.test, bundle.test_source)):
            if ds is None:
                continue
            out = self.verl_dir / f"{split}.parquet"
            if self.native_data and is_verl_native(ds, bundle.columns):
                info = place_native(source, ds, out)
            else:
                info = convert_table(ds, bundle.columns, system, data_source_name(bundle.train_source), split,
                                     tools, out)
            self.parquets[split] = out
            details[f"verl_{split}"] = info
        if self.native_data:
            first = bundle.train[0]["prompt"]
            if system and not any(m.get("role") == "system" for m in first):
                bundle.warnings.append("verl-native parquet used as is: its prompts have no system message, so "
                                       "the agent's system prompt is not sent")
            if tools and "agent_name" not in bundle.train.column_names:
                bundle.warnings.append(f"verl-native parquet without `agent_name`: every row runs verl's "
                                       f"'{TOOL_AGENT_LOOP}' loop (rollout.agent.default_agent_loop)")
        if "test" not in self.parquets:
            details["verl_test"] = "none: validation uses the training set"
        return details

    # -- reward ----------------------------------------------------------------------------------
    def check_reward(self, reward_func: Any = None):
        if reward_func is None or reward_func == [] or reward_func == "":
            self.reward = None
            self.bridge_file = None
            self.spec["reward"] = []
            self.record(CheckResult("reward", "warning", "no reward function: verl's own scorer for each row's "
                                    "data_source", warnings=[
                                        "no reward given: verl scores rows with its built-in scorer for their "
                                        "data_source (gsm8k, math, ...) unless the config names "
                                        "reward.custom_reward_function"]))
            return None
        reward = super().check_reward(reward_func)
        try:
            columns = extra_columns(self.data.train, self.data.columns) if self.data is not None else []
            tools = bool(self.agent_spec and self.agent_spec.tools)
            self.bridge_file = write_reward_bridge(self.run.path, self.verl_dir, self.spec["reward"], columns,
                                                   final_answer_only=tools)
        except CheckError as e:
            self._fail(e)
        result = next(r for r in self.check_results if r.module == "reward")
        result.details["verl_bridge"] = {"path": str(self.bridge_file), "name": REWARD_FN}
        return reward

    # -- config ----------------------------------------------------------------------------------
    def check_config(self, config: Any = None) -> dict[str, Any]:
        try:
            result = self._compose(config)
        except CheckError as e:
            self._fail(e)
        self.record(result)
        return self.effective_config

    def _compose(self, config: Any) -> CheckResult:
        raw = self._checked_short_names(load_config_input(config))
        base_dir = None
        if isinstance(config, (str, os.PathLike)) and Path(os.path.expanduser(str(config))).is_file():
            base_dir = Path(os.path.expanduser(str(config))).resolve().parent
        user = C.split_user_config(raw, C.root_keys())
        warnings = list(user.warnings)
        self._adapter(user)
        self._absolutize(user, base_dir)

        base = C.compose_base(user.groups)
        bad = C.unknown_keys(user.nested, base)
        if bad:
            raise CheckError("config", "unknown verl key(s): " + ", ".join(f"'{k}'{hint}" for k, hint in bad),
                             "fix the spelling; verl's keys are in verl/trainer/config/_generated_ppo_trainer.yaml",
                             keys=[k for k, _ in bad])
        cfg = C.merge_user(base, user)
        warnings += C.migrate_reward_key(cfg, user)
        filled: dict[str, Any] = {}

        def fill(path: str, value: Any, studio_input: bool = False) -> None:
            if user.sets(path):
                mine = C.select(cfg, path)
                if studio_input and value is not None and _norm(mine) != _norm(value):
                    warnings.append(f"the config sets {path}={mine!r}: it is used instead of the studio's "
                                    f"{value!r}")
                return
            C.set_value(cfg, path, value)
            filled[path] = value

        self._fill(cfg, fill, warnings)
        self._force(cfg, user, warnings)

        notes = C.run_verl_checks(cfg)
        warnings += [f"verl: {n}" for n in notes]
        warnings += self._check_against_data(cfg)
        self.verl_config = cfg
        self.config_path = C.save_config(cfg, self.verl_dir / CONFIG_FILE)
        self.uses_local_slot = self.cluster_address is None

        self.spec["config"] = user.raw
        self.effective_config = {"user": user.raw, "filled": filled, "verl_config": str(self.config_path),
                                 "cluster": self.cluster_address, "total_steps": self.total_steps}
        main = {k: C.select(cfg, k) for k in ("algorithm.adv_estimator", "data.train_batch_size",
                                              "actor_rollout_ref.rollout.n", "actor_rollout_ref.rollout.name",
                                              "trainer.n_gpus_per_node", "trainer.nnodes")}
        where = f"Ray cluster {self.cluster_address}" if self.cluster_address else "this machine"
        msg = ", ".join(f"{k.split('.')[-1]}={v}" for k, v in main.items()) + \
            f"; {self.total_steps} step(s); on {where}; verl's validate_config passed"
        return CheckResult("config", "warning" if warnings else "ok", msg,
                           details={"effective": self.effective_config, "filled": filled,
                                    "verl_config": str(self.config_path)}, warnings=warnings)

    def _checked_short_names(self, raw: dict[str, Any]) -> dict[str, Any]:
        """The studio's short names (``batch_size``, ``ray_address``, ...): types and ranges as declared."""
        fields = {f.name for f in self.config_fields}
        # (a mapping under `algorithm` is verl's section of that name, not the short name)
        flat = {k: v for k, v in raw.items()
                if k in fields and v is not None and (k == "env_vars" or not isinstance(v, dict))}
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
        missing: list[str] = []   # ${NAME} values come from the environment (a secret is never written in run.yaml)
        self.env_vars = {str(k): substitute_env(str(v), missing) for k, v in env.items()}
        if missing:
            raise CheckError("config", f"env_vars refers to environment variable(s) that are not set: "
                             f"{', '.join(sorted(set(missing)))}", "export them before starting", keys=["env_vars"])
        self.python = verl_python(user.adapter.get("verl_python"))
        if not os.path.isfile(self.python) and shutil.which(self.python) is None:
            raise CheckError("config", f"verl_python '{self.python}' does not exist",
                             f"point it (or ${PYTHON_ENV}) at the python of an environment with verl[vllm]",
                             keys=["verl_python"])

    PATH_KEYS = ("actor_rollout_ref.rollout.multi_turn.tool_config_path",
                 "actor_rollout_ref.rollout.multi_turn.function_tool_path",
                 "actor_rollout_ref.rollout.agent.agent_loop_config_path",
                 "reward.custom_reward_function.path", "custom_reward_function.path",
                 "data.train_files", "data.val_files")

    def _absolutize(self, user: C.UserConfig, base_dir: Path | None) -> None:
        """Relative file paths in the user's config → absolute (verl runs with the run dir as its cwd);
        tried against the working directory, then the config file's folder."""
        paths = user.paths
        for key in self.PATH_KEYS:
            if key not in paths:
                continue
            value = paths[key]
            out = []
            for item in (value if isinstance(value, list) else [value]):
                item = os.path.expanduser(str(item))
                if "://" in item:  # hdfs://, s3://: verl fetches it
                    out.append(item)
                    continue
                candidates = [Path(item)] if os.path.isabs(item) else \
                    [Path.cwd() / item] + ([base_dir / item] if base_dir else [])
                found = next((c for c in candidates if c.exists()), None)
                if found is None:
                    raise CheckError("config", f"{key}: file '{item}' not found (looked at "
                                     f"{', '.join(str(c) for c in candidates)})",
                                     "give an absolute path, or one relative to the config file", keys=[key])
                out.append(str(found.resolve()))
            new = out if isinstance(value, list) else out[0]
            if new != value:
                C.set_path(user.nested, key, new)
                C.set_path(user.raw, key, new)

    def _fill(self, cfg, fill, warnings: list[str]) -> None:
        """The studio's derived values, each applied only where the user left the key empty."""
        agent, run = self.agent_spec, self.run
        if agent is not None:
            fill("actor_rollout_ref.model.path", agent.model, studio_input=True)
        if self.parquets:
            train = str(self.parquets["train"])
            fill("data.train_files", [train], studio_input=True)
            fill("data.val_files", [str(self.parquets.get("test", train))], studio_input=True)
        if self.bridge_file is not None:
            key = C.reward_function_key(cfg)
            fill(f"{key}.path", str(self.bridge_file), studio_input=True)
            fill(f"{key}.name", REWARD_FN, studio_input=True)
        fill("trainer.project_name", "aworld")
        fill("trainer.experiment_name", run.run_id)
        fill("trainer.default_local_dir", str(run.checkpoints_dir))
        fill("trainer.rollout_data_dir", str(self.verl_dir / ROLLOUTS_DIR))
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
            steps = max(1, agent.max_steps) if agent.tools else 1
            fill("data.max_response_length", int(agent.max_tokens) * steps)
            fill("actor_rollout_ref.rollout.temperature", float(agent.temperature))
            fill("actor_rollout_ref.rollout.top_p", float(agent.top_p))
        self._fill_batches(cfg, fill, gpus)
        if agent is not None and agent.tools and self.tool_file is not None:
            fill("actor_rollout_ref.rollout.multi_turn.enable", True)
            fill("actor_rollout_ref.rollout.multi_turn.function_tool_path", str(self.tool_file))
            fill("actor_rollout_ref.rollout.multi_turn.max_assistant_turns", int(agent.max_steps))
            fill("actor_rollout_ref.rollout.agent.default_agent_loop", TOOL_AGENT_LOOP)
        self._fill_lengths(cfg, fill, warnings)

    def _fill_lengths(self, cfg, fill, warnings: list[str]) -> None:
        """data.max_prompt_length: room for the longest prompt, within the model's context window."""
        if self.agent_spec is None or C.select(cfg, "actor_rollout_ref.model.path") != self.agent_spec.model:
            return  # the config trains another model than the agent's: its tokenizer is not ours to measure
        longest = self._longest_prompt()
        prompt = int(C.select(cfg, "data.max_prompt_length") or 0)
        if longest is not None and longest > prompt:
            fill("data.max_prompt_length", int(math.ceil(longest / 64) * 64))
        context = self._model_context()
        response = int(C.select(cfg, "data.max_response_length") or 0)
        if context and longest is not None and longest < context <= longest + response:
            raise CheckError("config", f"data.max_response_length={response:,} plus the longest prompt ({longest:,} "
                             f"tokens, {self._longest_where}) exceeds the model's context of {context:,} tokens "
                             "(max_position_embeddings)", f"set max_completion_length (data.max_response_length) to "
                             f"at most {context - longest:,}", keys=["data.max_response_length"])
        if context and int(C.select(cfg, "data.max_prompt_length") or 0) + response > context:
            fill("data.max_prompt_length", max(1, context - response))
        prompt = int(C.select(cfg, "data.max_prompt_length") or 0)
        if longest is not None and context and longest >= context:
            raise CheckError("config", f"the longest training prompt ({self._longest_where}) has {longest:,} tokens: "
                             f"more than the model's context of {context:,} tokens (max_position_embeddings)",
                             "shorten or drop that row", keys=["data.max_prompt_length"])
        if longest is not None and longest > prompt:
            if C.select(cfg, "data.truncation") == "error":
                raise CheckError("config", f"the longest training prompt ({self._longest_where}) has {longest:,} tokens "
                                 f"but data.max_prompt_length={prompt:,}: verl stops on it (data.truncation=error)",
                                 f"raise data.max_prompt_length to at least {longest:,}, shorten the row, or set "
                                 "data.truncation: left", keys=["data.max_prompt_length", "data.truncation"])
            warnings.append(f"the longest prompt ({self._longest_where}) has {longest} tokens but "
                            f"data.max_prompt_length={prompt}: verl truncates it (data.truncation="
                            f"{C.select(cfg, 'data.truncation')})")
        if context and prompt + response > context:
            raise CheckError("config", f"data.max_prompt_length + data.max_response_length = {prompt + response:,} "
                             f"exceeds the model's context of {context:,} tokens (max_position_embeddings): vLLM "
                             "refuses it",
                             "lower data.max_prompt_length or max_completion_length (data.max_response_length)",
                             keys=["data.max_prompt_length", "data.max_response_length"])

    def _model_context(self) -> int | None:
        """max_position_embeddings of a local model folder (config.json; no transformers import)."""
        if self.agent_spec is None:
            return None
        path = Path(self.agent_spec.model) / "config.json"
        try:
            import json

            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        value = data.get("max_position_embeddings") or (data.get("text_config") or {}).get("max_position_embeddings")
        return int(value) if isinstance(value, int) and value > 0 else None

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
        for section, name in (("actor_rollout_ref.actor", "ppo_micro_batch_size"),
                              ("actor_rollout_ref.rollout", "log_prob_micro_batch_size"),
                              ("actor_rollout_ref.ref", "log_prob_micro_batch_size")):
            if C.select(cfg, f"{section}.{name}") is None:
                fill(f"{section}.{name}_per_gpu", C.MICRO_BATCH_PER_GPU)

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
            warnings.append(f"checkpoints go to {C.select(cfg, 'trainer.default_local_dir')} on the node that runs "
                            "verl's trainer: set trainer.default_local_dir to shared storage to keep them")
        if self.cluster_address:
            problem = _unreachable(self.cluster_address)
            if problem:
                warnings.append(f"cannot reach the Ray cluster at {self.cluster_address} ({problem}): the run will "
                                "fail to submit unless it is up by then")
        outside = self._outside_run_dir(cfg) if self.cluster_address else []
        if outside:
            warnings.append("on a multi-node cluster these files must exist on every node: " + ", ".join(outside))

    def _outside_run_dir(self, cfg) -> list[str]:
        out = []
        for key in self.PATH_KEYS + ("actor_rollout_ref.model.path",):
            value = _norm(C.select(cfg, key))
            for v in value if isinstance(value, list) else [value]:
                if isinstance(v, str) and os.path.isabs(v) and os.path.exists(v) and \
                        not Path(v).resolve().is_relative_to(self.run.path):
                    out.append(f"{key}={v}")
        return out

    def _rows(self, split: str) -> int | None:
        path = self.parquets.get(split)
        if path is None or not path.exists():
            return None
        import pyarrow.parquet as pq

        return pq.ParquetFile(str(path)).metadata.num_rows

    def _longest_prompt(self, limit: int = 20000) -> int | None:
        """Tokens of the longest training prompt as verl renders it (chat template + tools)."""
        if self.tokenizer is None or "train" not in self.parquets:
            return None
        import pyarrow.parquet as pq

        schemas = list(getattr(self.agent_spec, "_schemas", []) or []) if self.agent_spec else []
        prompts = pq.read_table(str(self.parquets["train"]), columns=["prompt"]).column("prompt").to_pylist()
        longest, at = 0, 0
        for i, messages in enumerate(prompts[:limit]):
            try:
                ids = self.tokenizer.apply_chat_template(messages, tools=schemas or None, add_generation_prompt=True,
                                                         tokenize=True)
            except Exception:
                return None
            if hasattr(ids, "keys"):   # a BatchEncoding (transformers 5): a Mapping, not a dict
                ids = ids["input_ids"]
            if len(ids) > longest:
                longest, at = len(ids), i
        source = self.data.train_source if self.data is not None else None
        where = locate_rows(source, [at])[at] if not self.native_data else f"row {at + 1}"
        self._longest_where = where + (f" of {Path(source).name}" if source else "")
        return longest

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
                raise CheckError("config", f"data.train_batch_size={tbs} is larger than the training set "
                                 f"({rows} rows): verl would train 0 steps",
                                 f"set data.train_batch_size (batch_size) to at most {rows}",
                                 keys=["data.train_batch_size"])
            self.total_steps = int(fixed) if fixed else per_epoch * epochs
            if rows % tbs:
                warnings.append(f"{rows % tbs} training row(s) per epoch are dropped (verl drops the last partial "
                                f"batch of {tbs})")
        elif fixed:
            self.total_steps = int(fixed)
        # a floor on the driver's memory: the step's batch (ids, attention mask, positions: 8 bytes each per token)
        n = int(C.select(cfg, "actor_rollout_ref.rollout.n") or 1)
        tokens = int(C.select(cfg, "data.max_prompt_length") or 0) + int(C.select(cfg, "data.max_response_length") or 0)
        check_memory_floor(tbs * n, tokens, 24, HOST_MEMORY_BOUND if self.cluster_address else
                           psutil.virtual_memory().total, f"data.train_batch_size={tbs} × rollout.n={n:,}",
                           "24 bytes (input_ids, attention_mask, position_ids)",
                           "any node" if self.cluster_address else "this machine",
                           ["actor_rollout_ref.rollout.n", "data.train_batch_size"])
        key = C.reward_function_key(cfg)
        if not C.select(cfg, f"{key}.path"):
            self._check_builtin_scorer()
        return warnings

    def _check_builtin_scorer(self) -> None:
        """No custom reward: verl's default_compute_score must know every data_source."""
        if "train" not in self.parquets:
            return
        import pyarrow.parquet as pq

        sources = set(pq.read_table(str(self.parquets["train"]), columns=["data_source"]).column(
            "data_source").to_pylist())
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
            raise CheckError("config", f"no reward function, and verl has no built-in scorer for data_source "
                             f"{', '.join(repr(u) for u in unknown)}",
                             "pick a reward (a built-in such as exact_match, or file.py:function)",
                             keys=["reward.custom_reward_function.path"])

    # -- training --------------------------------------------------------------------------------
    def command(self, cluster: bool = False) -> list[str]:
        """The verl command line: ``main_entry`` (``-m verl.trainer.main_ppo``) with the saved config.
        On a cluster it runs in the job's working_dir (a copy of the run dir) with the cluster's python3."""
        if cluster:
            return ["python3", *self.main_entry, "--config-path", "$PWD/" + VERL_DIR,
                    "--config-name", Path(CLUSTER_CONFIG_FILE).stem, f"hydra.run.dir={VERL_DIR}/hydra"]
        return [self.python, *self.main_entry, "--config-path", str(self.verl_dir),
                "--config-name", Path(CONFIG_FILE).stem, f"hydra.run.dir={self.verl_dir / 'hydra'}"]

    def _job_env(self, metrics_path: str) -> dict[str, str]:
        env = {"VERL_FILE_LOGGER_PATH": metrics_path, "PYTHONUNBUFFERED": "1", "HYDRA_FULL_ERROR": "1",
               "TENSORBOARD_DIR": str(self.run.tensorboard_dir), "WANDB_MODE": os.environ.get("WANDB_MODE", "")}
        env = {k: v for k, v in env.items() if v}
        env.update(self.env_vars)
        return env

    def _train(self) -> str:
        if self.config_path is None:
            raise CheckError("config", "check_config() has not run", "run the checks before train()")
        run = self.run
        run.write_status(total_steps=self.total_steps, engine="verl", step=0,
                         where=self.cluster_address or "local")
        if self.cluster_address:
            return self._train_cluster()
        return self._train_local()

    def _train_local(self) -> str:
        from .launch import LocalJob, MetricsWatcher, VerlRunError, last_error, log_tail

        run = self.run
        env = dict(os.environ)
        env.pop("RAY_ADDRESS", None)  # a bare ray.init() would join that cluster
        env.update(self._job_env(str(self.verl_dir / METRICS_FILE)))
        argv = self.command(cluster=False)
        job = LocalJob(argv, cwd=run.path, env=env, log_path=run.log_path)
        run.write_status(verl_pid=job.pid)
        run.event("launched", engine="verl", pid=job.pid, command=" ".join(shlex.quote(a) for a in argv))
        cfg = self.verl_config
        watcher = MetricsWatcher(run, self.total_steps, metrics_file=env["VERL_FILE_LOGGER_PATH"],
                                 rollouts_dir=C.select(cfg, "trainer.rollout_data_dir"),
                                 checkpoints_dir=C.select(cfg, "trainer.default_local_dir"))
        stopping = False
        while job.poll() is None:
            watcher.poll()
            if run.stop_requested() and not stopping:
                stopping = True
                run.write_status(state=STOPPING)
                run.event("stop_requested", step=watcher.last_step)
                job.stop(STOP_GRACE_S)
                break
            run.write_status()
            time.sleep(POLL_S)
        watcher.poll(final=True)
        if stopping:
            return STOPPED
        if job.returncode == 0:
            return FINISHED
        err = last_error(log_tail(run.log_path)) or "no error line in train.log"
        raise VerlRunError(f"verl exited with code {job.returncode}: {_with_hint(err)}")

    def cluster_config(self) -> Path:
        """The saved config with paths inside the run dir made relative (the job's working_dir)."""
        from omegaconf import OmegaConf

        data = OmegaConf.to_container(self.verl_config, resolve=False)
        root = str(self.run.path)

        def rel(value: Any) -> Any:
            if isinstance(value, dict):
                return {k: rel(v) for k, v in value.items()}
            if isinstance(value, list):
                return [rel(v) for v in value]
            if isinstance(value, str) and value.startswith(root + os.sep) and os.path.isfile(value):
                return os.path.relpath(value, root)
            return value

        data = rel(data)
        dump = data["trainer"].get("rollout_data_dir")
        if isinstance(dump, str) and dump.startswith(root + os.sep):  # next to the file logger's JSONL
            data["trainer"]["rollout_data_dir"] = os.path.relpath(dump, root)
        path = self.verl_dir / CLUSTER_CONFIG_FILE
        OmegaConf.save(OmegaConf.create(data), str(path), resolve=False)
        return path

    def _train_cluster(self) -> str:
        from .launch import MetricsWatcher, RayJob, VerlRunError, last_error

        run = self.run
        self.cluster_config()
        job = RayJob(self.cluster_address)
        argv = self.command(cluster=True)
        entrypoint = " ".join(f'"{a}"' if a.startswith("$PWD") else shlex.quote(a) for a in argv)
        runtime_env = {"working_dir": str(run.path), "excludes": RAY_EXCLUDES,
                       "env_vars": self._job_env(f"{VERL_DIR}/{METRICS_FILE}")}
        runtime_env["env_vars"].pop("TENSORBOARD_DIR", None)
        job_id = job.submit(entrypoint, runtime_env, metadata={"aworld_run": run.run_id})
        run.write_status(ray_job_id=job_id, ray_address=self.cluster_address)
        run.event("submitted", engine="verl", ray_job_id=job_id, address=self.cluster_address, entrypoint=entrypoint)
        log = open(run.log_path, "a", encoding="utf-8")

        def sink(chunk: str) -> None:
            log.write(chunk)
            log.flush()

        job.follow_logs(sink)
        # verl's outputs are on the node running its trainer: readable here on the same machine or a shared
        # filesystem (rollout dumps: a user's absolute path, else next to the file logger's JSONL)
        dump = C.select(self.verl_config, "trainer.rollout_data_dir")
        shared = isinstance(dump, str) and os.path.isabs(dump) and not Path(dump).is_relative_to(run.path)
        watcher = MetricsWatcher(run, self.total_steps, rollouts_dir=dump if shared else None,
                                 checkpoints_dir=C.select(self.verl_config, "trainer.default_local_dir"))
        stopping, lost_since, state = False, None, "PENDING"
        try:
            while True:
                for line in job.drain_lines():
                    watcher.feed_log_line(line)
                watcher.poll()
                try:
                    state, lost_since = job.status(), None
                except Exception as e:  # the dashboard restarting, a network blip: the job itself goes on
                    lost_since = lost_since or time.time()
                    if time.time() - lost_since > CLUSTER_LOST_S:
                        raise VerlRunError(f"lost contact with the Ray cluster at {self.cluster_address} for "
                                           f"{CLUSTER_LOST_S:.0f} s (job {job_id} may still run): {e}") from e
                    time.sleep(POLL_S)
                    continue
                if state in RayJob.TERMINAL:
                    break
                if run.stop_requested() and not stopping:
                    stopping = True
                    run.write_status(state=STOPPING)
                    run.event("stop_requested", step=watcher.last_step, ray_job_id=job_id)
                    job.stop()
                run.write_status(ray_job_status=state)
                time.sleep(POLL_S)
            job.join_logs()
            for line in job.drain_lines():
                watcher.feed_log_line(line)
            watcher.poll(final=True)
        finally:
            log.close()
        info = job.info()
        run.write_status(ray_job_status=state)
        if state == "SUCCEEDED":
            return FINISHED
        if state == "STOPPED" and stopping:
            return STOPPED
        err = last_error(job.logs()) or (info.message or "")
        if state == "STOPPED":
            err = "the Ray job was stopped outside the studio (killed)"
        raise VerlRunError(f"Ray job {job_id} {state.lower()}: {_with_hint(err)}")


def _unreachable(address: str, timeout_s: float = 3.0) -> str | None:
    """Why the dashboard of ``http(s)://host:port`` does not accept a connection, or None."""
    import socket
    from urllib.parse import urlparse

    url = urlparse(address)
    if url.scheme not in ("http", "https") or not url.hostname:
        return None  # "auto", a GCS address, ray://: Ray resolves those itself
    try:
        with socket.create_connection((url.hostname, url.port or (443 if url.scheme == "https" else 80)),
                                      timeout=timeout_s):
            return None
    except OSError as e:
        return f"{type(e).__name__}: {e}"


def _with_hint(error: str) -> str:
    if "No module named" in error or "ModuleNotFoundError" in error:
        return f"{error} — missing dependency: {INSTALL_HINT}"
    return error


def _norm(value: Any) -> Any:
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf

        if isinstance(value, (DictConfig, ListConfig)):
            return OmegaConf.to_container(value, resolve=True)
    except ImportError:  # pragma: no cover
        pass
    return value

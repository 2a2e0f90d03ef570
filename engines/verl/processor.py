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

from ..agents import AgentSpec
from ..checks import CheckError, CheckResult
from ..config import ConfigField, load_config_input
from ..data import DataBundle
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
PROBE = ("import importlib.util as u, json\n"
         "out = {m: u.find_spec(m) is not None for m in ('verl', 'vllm', 'sglang', 'transfer_queue', 'cloudpickle')}\n"
         "try:\n    import torch; out['gpus'] = torch.cuda.device_count()\nexcept Exception:\n    out['gpus'] = 0\n"
         "print(json.dumps(out))\n")
#: run-dir entries a Ray job never needs (the live files of this run, outputs)
RAY_EXCLUDES = ["/train.log", "/metrics.jsonl", "/samples.jsonl", "/events.jsonl", "/status.json", "/STOP",
                "/checkpoints/", "/tensorboard/", "/verl/hydra/", f"/verl/{ROLLOUTS_DIR}/", f"/verl/{METRICS_FILE}",
                "/.*.tmp"]
POLL_S = 1.0
STOP_GRACE_S = 20.0

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
    return C.cuda_gpus() if importlib.util.find_spec("torch") else 0


def verl_python(setting: str | None = None) -> str:
    """The interpreter that runs verl locally: the config's ``verl_python``, $AWORLD_VERL_PYTHON, or this one."""
    return os.path.expanduser(setting or os.environ.get(PYTHON_ENV) or sys.executable)


def probe(python: str | None = None) -> dict[str, Any]:
    """What the verl interpreter has: GPUs, rollout backends, verl's trainer extras."""
    python = verl_python(python)
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        out = {m: importlib.util.find_spec(m) is not None
               for m in ("verl", "vllm", "sglang", "transfer_queue", "cloudpickle")}
        out["gpus"] = _detect_gpus_cheap()
        return out
    try:
        res = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, timeout=120)
        import json

        return json.loads(res.stdout.strip().splitlines()[-1])
    except Exception as e:  # a wrong path, a broken environment
        return {"error": f"{python}: {type(e).__name__}: {e}"}


class VerlProcessor(StandardProcessor):
    description = "verl on Ray: GRPO/PPO across GPUs and nodes (vLLM or SGLang rollouts), local or on a cluster"
    config_fields = CONFIG_FIELDS
    reward_required = False  # without one, verl scores rows by data_source with its built-in scorers

    def __init__(self, run_path: str = "runs"):
        super().__init__(run_path)
        self.tokenizer = None
        self.tool_file: Path | None = None
        self.parquets: dict[str, Path] = {}
        self.native_data = False
        self.bridge_file: Path | None = None
        self.verl_config = None  # the composed DictConfig
        self.config_path: Path | None = None
        self.cluster_address: str | None = None
        self.env_vars: dict[str, str] = {}
        self.total_steps: int | None = None
        self.python = verl_python()

    @property
    def verl_dir(self) -> Path:
        d = self.run.path / VERL_DIR
        d.mkdir(parents=True, exist_ok=True)
        return d

    # -- availability ----------------------------------------------------------------------------
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
        raw = load_config_input(config)
        base_dir = None
        if isinstance(config, (str, os.PathLike)) and Path(os.path.expanduser(str(config))).is_file():
            base_dir = Path(os.path.expanduser(str(config))).resolve().parent
        user = C.split_user_config(raw, C.root_keys())
        warnings = list(user.warnings)
        self._adapter(user)
        warnings += self._absolutize(user, base_dir)

        base = C.compose_base(user.groups)
        bad = C.unknown_keys(user.nested, base)
        if bad:
            raise CheckError("config", f"unknown verl key(s): {', '.join(bad)}",
                             "fix the spelling; verl's keys are in verl/trainer/config/_generated_ppo_trainer.yaml",
                             keys=[b.split("'")[1] for b in bad])
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

    def _adapter(self, user: C.UserConfig) -> None:
        address = user.adapter.get("ray_address") or os.environ.get("RAY_ADDRESS") or None
        self.cluster_address = str(address).strip() if address else None
        env = user.adapter.get("env_vars") or {}
        if not isinstance(env, dict):
            raise CheckError("config", "`env_vars` must be a mapping of NAME: value", keys=["env_vars"])
        self.env_vars = {str(k): str(v) for k, v in env.items()}
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

    def _absolutize(self, user: C.UserConfig, base_dir: Path | None) -> list[str]:
        """Relative file paths in the user's config → absolute (verl runs with the run dir as cwd)."""
        warnings = []
        for key in self.PATH_KEYS:
            paths = user.paths
            if key not in paths:
                continue
            value = paths[key]
            items = value if isinstance(value, list) else [value]
            out = []
            for item in items:
                item = str(item)
                if "://" in item or os.path.isabs(os.path.expanduser(item)):
                    p = os.path.expanduser(item)
                    if "://" not in item and not os.path.exists(p):
                        raise CheckError("config", f"{key}: file '{item}' does not exist", "fix the path or clear it",
                                         keys=[key])
                    out.append(p)
                    continue
                candidates = [Path.cwd() / item] + ([base_dir / item] if base_dir else [])
                found = next((c for c in candidates if c.exists()), None)
                if found is None:
                    raise CheckError("config", f"{key}: file '{item}' not found (looked in "
                                     f"{', '.join(str(c.parent) for c in candidates)})",
                                     "give an absolute path, or a path relative to the config file", keys=[key])
                out.append(str(found.resolve()))
            new = out if isinstance(value, list) else out[0]
            if new != value:
                C.set_path(user.nested, key, new)
                C.set_path(user.raw, key, new)
        return warnings

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
        if self.cluster_address is None:
            fill("trainer.n_gpus_per_node", max(1, C.cuda_gpus()))
        fill("actor_rollout_ref.rollout.name", C.rollout_backend() or "vllm")
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
        longest = self._longest_prompt()
        if longest is not None:
            current = int(C.select(cfg, "data.max_prompt_length") or 0)
            if longest > current:
                fill("data.max_prompt_length", int(math.ceil(longest / 64) * 64))
                now = int(C.select(cfg, "data.max_prompt_length") or 0)
                if longest > now:
                    warnings.append(f"the longest prompt has {longest} tokens but data.max_prompt_length={now}: "
                                    "verl fails on longer prompts (data.truncation=error)")

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
        """What the studio needs whatever the user wrote: the file logger (metrics) and a rollout backend."""
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
        if self.cluster_address and self._outside_run_dir(cfg):
            warnings.append("on a multi-node cluster these files must exist on every node: "
                            + ", ".join(self._outside_run_dir(cfg)))

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
        longest = 0
        for messages in prompts[:limit]:
            try:
                ids = self.tokenizer.apply_chat_template(messages, tools=schemas or None, add_generation_prompt=True,
                                                         tokenize=True)
            except Exception:
                return None
            if isinstance(ids, dict):
                ids = ids.get("input_ids", [])
            longest = max(longest, len(ids))
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
        """The verl command line (``python -m verl.trainer.main_ppo`` with the saved config)."""
        if cluster:
            return ["python3", "-m", "verl.trainer.main_ppo", "--config-path", "$PWD/" + VERL_DIR,
                    "--config-name", Path(CLUSTER_CONFIG_FILE).stem, f"hydra.run.dir={VERL_DIR}/hydra"]
        return [self.python, "-m", "verl.trainer.main_ppo", "--config-path", str(self.verl_dir),
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
        from .launch import LocalJob, MetricsWatcher, VerlRunError, last_error, read_tail

        run = self.run
        metrics = self.verl_dir / METRICS_FILE
        env = dict(os.environ)
        env.pop("RAY_ADDRESS", None)
        env.update(self._job_env(str(metrics)))
        argv = self.command(cluster=False)
        job = LocalJob(argv, cwd=run.path, env=env, log_path=run.log_path)
        run.write_status(verl_pid=job.pid)
        run.event("launched", engine="verl", pid=job.pid, command=" ".join(shlex.quote(a) for a in argv))
        watcher = MetricsWatcher(run, self.total_steps, metrics_file=metrics,
                                 rollouts_dir=self.verl_dir / ROLLOUTS_DIR, checkpoints_dir=run.checkpoints_dir)
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
        err = last_error(read_tail(run.log_path)) or "no error line in train.log"
        raise VerlRunError(f"verl exited with code {job.returncode}: {err}")

    def cluster_config(self) -> Path:
        """The saved config with paths inside the run dir made relative (the job's working_dir)."""
        from omegaconf import OmegaConf

        data = OmegaConf.to_container(self.verl_config, resolve=False)
        root = str(self.run.path)
        shipped = {f"verl/{CONFIG_FILE}"}

        def rel(value: Any) -> Any:
            if isinstance(value, dict):
                return {k: rel(v) for k, v in value.items()}
            if isinstance(value, list):
                return [rel(v) for v in value]
            if isinstance(value, str) and value.startswith(root + os.sep) and os.path.isfile(value):
                r = os.path.relpath(value, root)
                shipped.add(r)
                return r
            return value

        path = self.verl_dir / CLUSTER_CONFIG_FILE
        OmegaConf.save(OmegaConf.create(rel(data)), str(path), resolve=False)
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
        watcher = MetricsWatcher(run, self.total_steps, checkpoints_dir=run.checkpoints_dir)
        stopping = False
        try:
            while True:
                for line in job.drain_lines():
                    watcher.feed_log_line(line)
                watcher.poll()
                state = job.status()
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
        raise VerlRunError(f"Ray job {job_id} {state.lower()}: {err}")


def _norm(value: Any) -> Any:
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf

        if isinstance(value, (DictConfig, ListConfig)):
            return OmegaConf.to_container(value, resolve=True)
    except ImportError:  # pragma: no cover
        pass
    return value

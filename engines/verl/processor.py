"""VerlProcessor: the studio's agent, datasets, reward and config → a verl job verl itself accepts.

The spec's checks and ``train``; what they write into ``<run>/verl/`` is listed in :mod:`.layout`.
The config is derived in :mod:`.derive`, the job launched and watched by :mod:`.launch`, and whether verl
can run here at all is :mod:`.availability`'s to say.

Importing this module imports neither verl, torch nor ray.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..agents.agent_spec import AgentSpec
from ..results.check_result import CheckError, CheckResult
from ..inputs.config import ConfigField
from ..inputs.data import DataBundle
from ..core.standard import StandardProcessor
from . import availability as A
from . import compose as C
from .bridge import REWARD_FN, write_function_tools, write_reward_bridge
from .mcp_config import write_mcp_tools
from .dataset import TOOL_AGENT_LOOP, convert_table, data_source_name, extra_columns, is_verl_native, place_native
from .derive import CheckedInputs, DerivedConfig, derive_config
from .layout import CONFIG_FILE, VERL_DIR

CONFIG_FIELDS = [
    ConfigField(
        "algorithm",
        str,
        "grpo",
        "advantage estimator (algorithm.adv_estimator): grpo, rloo, gae (PPO with a critic), reinforce_plus_plus, ...",
        main=True,
    ),
    ConfigField(
        "epochs",
        int,
        None,
        "passes over the training set (trainer.total_epochs; verl's default 30)",
        min=1,
        nullable=True,
        main=True,
    ),
    ConfigField(
        "total_steps",
        int,
        None,
        "stop after this many steps (trainer.total_training_steps)",
        min=1,
        nullable=True,
        main=True,
    ),
    ConfigField(
        "batch_size",
        int,
        None,
        "prompts per step (data.train_batch_size; fitted to the data when empty)",
        min=1,
        nullable=True,
        main=True,
    ),
    ConfigField(
        "num_generations",
        int,
        None,
        f"rollouts per prompt (actor_rollout_ref.rollout.n; {C.GROUP_SIZE} for GRPO when empty)",
        min=1,
        nullable=True,
        main=True,
    ),
    ConfigField(
        "learning_rate",
        float,
        None,
        "actor learning rate (actor_rollout_ref.actor.optim.lr; verl's default 1e-6)",
        min=0.0,
        nullable=True,
        main=True,
    ),
    ConfigField(
        "max_completion_length",
        int,
        None,
        "response tokens (data.max_response_length; the agent's max_tokens when empty)",
        min=1,
        nullable=True,
    ),
    ConfigField("max_prompt_length", int, None, "prompt tokens (data.max_prompt_length)", min=1, nullable=True),
    ConfigField(
        "n_gpus_per_node",
        int,
        None,
        "GPUs per node (trainer.n_gpus_per_node; this machine's count when empty)",
        min=1,
        nullable=True,
        main=True,
    ),
    ConfigField("nnodes", int, None, "nodes (trainer.nnodes)", min=1, nullable=True),
    ConfigField(
        "rollout", str, None, "rollout backend (actor_rollout_ref.rollout.name): vllm or sglang", nullable=True
    ),
    ConfigField("save_freq", int, None, "checkpoint every N steps (trainer.save_freq; -1 = never)", nullable=True),
    ConfigField("test_freq", int, None, "validate every N steps (trainer.test_freq; -1 = never)", nullable=True),
    ConfigField(
        "ray_address",
        str,
        None,
        "submit to this Ray cluster (http://<head>:8265); RAY_ADDRESS works too",
        nullable=True,
        main=True,
    ),
    ConfigField("env_vars", dict, None, "environment variables for the verl job", nullable=True),
    ConfigField(
        "verl_python",
        str,
        None,
        f"the Python of an environment with verl[vllm] (${A.PYTHON_ENV} works too); this one when empty",
        nullable=True,
    ),
]


class VerlProcessor(StandardProcessor):
    engine_name = "verl"
    description = "verl on Ray: GRPO/PPO across GPUs and nodes (vLLM or SGLang rollouts), local or on a cluster"
    config_fields = CONFIG_FIELDS
    reward_required = False  # without one, verl scores rows by data_source with its built-in scorers
    # verl is Ray's own: with ray_address its driver is the job (engines/verl/launch.py), its workers Ray actors
    run_settings_honored = frozenset({"diagnostics", "ray_address"})

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
        self.resume_from: Path | None = None  # a resumed run's checkpoint (engines/verl/resume.py)
        self.resume_max_steps: int | None = None
        self.resumed_at = 0
        self.python = A.verl_python()
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
        return A.availability()

    # -- agent -----------------------------------------------------------------------------------
    def convert_agent(self, spec: AgentSpec) -> None:
        model = Path(spec.model)
        if model.is_dir():
            from transformers import AutoTokenizer

            try:
                tok = AutoTokenizer.from_pretrained(str(model))
            except Exception as e:
                raise CheckError(
                    "agent",
                    f"cannot load the tokenizer of model '{spec.model}': {type(e).__name__}: {str(e)[:300]}",
                    "point `model:` at a folder with tokenizer files",
                )
            if not getattr(tok, "chat_template", None):
                raise CheckError(
                    "agent",
                    f"the tokenizer of '{spec.model}' has no chat template",
                    "verl renders chat prompts; give the model a chat template",
                )
            self.tokenizer = tok
        if spec.tools:
            tools = []
            for ref in spec.tools:
                attr = ref.rpartition(":")[2]
                tools.append((attr.split(".")[-1], ref))
            names = [n for n, _ in tools]
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                raise CheckError(
                    "agent",
                    f"two tools share the name {', '.join(dupes)}",
                    "verl registers tools by function name; rename one",
                )
            self.tool_file = write_function_tools(self.run.path, self.verl_dir, tools)
            if self.tokenizer is not None:
                self._check_tool_template(spec)
        if spec.mcp_tools:  # MCP servers: function tools too (engines/verl/mcp_config.py)
            self.tool_file = write_mcp_tools(self.run.path, self.verl_dir, spec, self.tool_file)
            if self.tokenizer is not None and not spec.tools:
                self._check_tool_template(spec)

    def _check_tool_template(self, spec: AgentSpec) -> None:
        """verl's tool agent loop renders the tool list through the chat template: it must show it."""
        schemas = list(spec.tool_schemas)
        if not schemas:
            return
        try:
            text = self.tokenizer.apply_chat_template(
                [{"role": "user", "content": "hi"}], tools=schemas, add_generation_prompt=True, tokenize=False
            )
        except Exception as e:
            raise CheckError(
                "agent",
                f"the model's chat template cannot render tools: {type(e).__name__}: {e}",
                "use a tool-calling chat template (e.g. Qwen2.5's)",
            )
        name = schemas[0].get("function", {}).get("name", "")
        if name and name not in text:
            spec.warnings.append(
                "the model's chat template ignores tools: the model will not see the tool list "
                "(use a tool-calling template such as Qwen2.5's, hermes format)"
            )

    # -- datasets --------------------------------------------------------------------------------
    def convert_dataset(self, bundle: DataBundle) -> dict | None:
        agent = self.agent_spec
        tools = bool(agent and agent.has_tools)
        system = agent.system_prompt if agent else None
        details: dict[str, Any] = {}
        self.parquets = {}
        self.native_data = is_verl_native(bundle.train, bundle.columns)
        for split, ds, source in (
            ("train", bundle.train, bundle.train_source),
            ("test", bundle.test, bundle.test_source),
        ):
            if ds is None:
                continue
            out = self.verl_dir / f"{split}.parquet"
            if self.native_data and is_verl_native(ds, bundle.columns):
                info = place_native(source, ds, out)
            else:
                info = convert_table(
                    ds, bundle.columns, system, data_source_name(bundle.train_source), split, tools, out
                )
            self.parquets[split] = out
            details[f"verl_{split}"] = info
        if self.native_data:
            first = bundle.train[0]["prompt"]
            if system and not any(m.get("role") == "system" for m in first):
                bundle.warnings.append(
                    "verl-native parquet used as is: its prompts have no system message, so "
                    "the agent's system prompt is not sent"
                )
            if tools and "agent_name" not in bundle.train.column_names:
                bundle.warnings.append(
                    f"verl-native parquet without `agent_name`: every row runs verl's "
                    f"'{TOOL_AGENT_LOOP}' loop (rollout.agent.default_agent_loop)"
                )
        if "test" not in self.parquets:
            details["verl_test"] = "none: validation uses the training set"
        return details

    # -- reward ----------------------------------------------------------------------------------
    def check_reward(self, reward_func: Any = None):
        if reward_func is None or reward_func == [] or reward_func == "":
            self.reward = None
            self.bridge_file = None
            self.spec["reward"] = []
            self.record(
                CheckResult(
                    "reward",
                    "warning",
                    "no reward function: verl's own scorer for each row's data_source",
                    warnings=[
                        "no reward given: verl scores rows with its built-in scorer for their "
                        "data_source (gsm8k, math, ...) unless the config names "
                        "reward.custom_reward_function"
                    ],
                )
            )
            return None
        reward = super().check_reward(reward_func)
        try:
            columns = extra_columns(self.data.train, self.data.columns) if self.data is not None else []
            tools = bool(self.agent_spec and self.agent_spec.has_tools)
            self.bridge_file = write_reward_bridge(
                self.run.path,
                self.verl_dir,
                self.spec["reward"],
                columns,
                final_answer_only=tools,
                tokenizer_path=self.agent_spec.model if self.agent_spec else None,
            )
        except CheckError as e:
            self._fail(e)
        result = next(r for r in self.check_results if r.module == "reward")
        result.details["verl_bridge"] = {"path": str(self.bridge_file), "name": REWARD_FN}
        return reward

    # -- config ----------------------------------------------------------------------------------
    def check_config(self, config: Any = None) -> dict[str, Any]:
        try:
            run_settings, config = self.take_run_settings(config)  # the diagnoses' thresholds: the watcher's
            config = self._take_resume(config)
            if run_settings.get("ray_address"):  # one of verl's own settings (derive.py): it submits verl's driver
                config = {**config, "ray_address": run_settings.pop("ray_address")}
            derived = derive_config(config, self.checked_inputs(), self.config_fields)
        except CheckError as e:
            self._fail(e)
        self.record(self._adopt(derived, run_settings))
        return self.effective_config

    def _take_resume(self, config: Any) -> Any:
        """A resumed run's ``resume_from_checkpoint`` and raised ``max_steps`` (engines/core/resume.py's, in every
        engine's terms) are kept for the derivation, which turns them into verl's keys; not the user's settings."""
        if not isinstance(config, dict) or not config.get("resume_from_checkpoint"):
            self.resume_from, self.resume_max_steps = None, None
            return config
        config = dict(config)
        self.resume_from = Path(str(config.pop("resume_from_checkpoint")))
        steps = config.pop("max_steps", None)
        self.resume_max_steps = int(steps) if steps else None
        return config

    def checked_inputs(self) -> CheckedInputs:
        """What the agent, dataset and reward checks left for the config."""
        return CheckedInputs(
            run=self.run,
            verl_dir=self.verl_dir,
            agent=self.agent_spec,
            tokenizer=self.tokenizer,
            parquets=dict(self.parquets),
            bridge_file=self.bridge_file,
            tool_file=self.tool_file,
            train_source=self.data.train_source if self.data is not None else None,
            native_data=self.native_data,
            resume_from=self.resume_from,
            max_steps=self.resume_max_steps,
        )

    def _adopt(self, derived: DerivedConfig, run_settings: dict[str, Any] | None = None) -> CheckResult:
        """Keep the derived config (saved beside the run's other verl files) and report it."""
        cfg = derived.cfg
        self.cluster_address, self.env_vars = derived.cluster_address, derived.env_vars
        self.python, self.total_steps = derived.python, derived.total_steps
        self.resumed_at = derived.resumed_at
        self.verl_config = cfg
        self.config_path = C.save_config(cfg, self.verl_dir / CONFIG_FILE)
        self.uses_local_slot = self.cluster_address is None

        self.spec["config"] = {**derived.user.raw, **(run_settings or {})}  # run.yaml: what the watcher reads too
        self.effective_config = {
            "user": self.spec["config"],
            "filled": derived.filled,
            "verl_config": str(self.config_path),
            "cluster": self.cluster_address,
            "total_steps": self.total_steps,
            **({"resumed_from": str(self.resume_from), "resumed_at": self.resumed_at} if self.resume_from else {}),
        }
        main = {
            k: C.select(cfg, k)
            for k in (
                "algorithm.adv_estimator",
                "data.train_batch_size",
                "actor_rollout_ref.rollout.n",
                "actor_rollout_ref.rollout.name",
                "trainer.n_gpus_per_node",
                "trainer.nnodes",
            )
        }
        where = f"Ray cluster {self.cluster_address}" if self.cluster_address else "this machine"
        msg = (
            ", ".join(f"{k.split('.')[-1]}={v}" for k, v in main.items())
            + f"; {self.total_steps} step(s); on {where}; verl's validate_config passed"
            + (f"; resumes from {self.resume_from.name} (step {self.resumed_at})" if self.resume_from else "")
        )
        return CheckResult(
            "config",
            "warning" if derived.warnings else "ok",
            msg,
            details={
                "effective": self.effective_config,
                "filled": derived.filled,
                "verl_config": str(self.config_path),
            },
            warnings=derived.warnings,
        )

    # -- training --------------------------------------------------------------------------------
    def _train(self) -> str:
        if self.config_path is None:
            raise CheckError("config", "check_config() has not run", "run the checks before train()")
        self.run.write_status(
            total_steps=self.total_steps, engine="verl", step=self.resumed_at, where=self.cluster_address or "local"
        )
        from .launch import Launcher

        return Launcher(
            self.run,
            self.verl_config,
            self.python,
            self.main_entry,
            total_steps=self.total_steps,
            cluster_address=self.cluster_address,
            env_vars=self.env_vars,
            resumed_at=self.resumed_at,
        ).train()

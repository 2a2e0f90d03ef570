"""TrlProcessor: the embedded engine. Checks use the shared loaders plus TRL's own dataclasses;
``_train`` runs TRL's GRPOTrainer or SFTTrainer in this process, or — with several processes or a
DeepSpeed/FSDP preset — starts them through ``accelerate launch`` (:mod:`engines.trl.launch`), each
rank running :meth:`TrlProcessor.train_here`."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from ..runs import trackers
from ..agents.agent_spec import AgentSpec
from ..results.check_result import CheckError
from ..inputs.data import DataBundle, preview_text, prompt_messages, prompt_text, row_answer
from ..fit.data_fit import gpu_memory_bytes
from ..fit.model_folder import require_model_folder
from ..fit.model_source import resolve_model
from ..runs.rundir import FINISHED, STOPPED
from ..core.run_settings import RUN_KEYS
from ..core.standard import StandardProcessor
from . import launch, peft_setup
from .config import FIELDS, validate
from .data_fit import trl_data_fit

#: rows whose rendered prompt length the checks measure (the memory estimate uses the longest)
PROMPT_ROWS_MEASURED = 64


class TrlProcessor(StandardProcessor):
    description = (
        "Hugging Face TRL on this machine (CPU, or one or several CUDA GPUs through accelerate): "
        "GRPO and SFT, every TRL setting, LoRA/QLoRA, tool-using agents"
    )
    config_fields = FIELDS
    reward_required = False  # SFT trains without one; check_config requires it for GRPO
    run_settings_honored = frozenset(RUN_KEYS)  # its callbacks keep the best checkpoint and stop early

    def aworld_inputs(self, agent: Any, reward_func: Any, config: Any) -> tuple[Any, Any, Any, dict[str, str]]:
        from ..inputs.aworld_forms import reward_from_config, reward_from_path, virtual_agent

        agent, agent_note = virtual_agent(agent, config)
        reward_func, reward_note = reward_from_path(reward_func)
        if reward_note is None:
            reward_func, config, reward_note = reward_from_config(reward_func, config)
        notes = {"agent": agent_note, "reward": reward_note}
        return agent, reward_func, config, {k: v for k, v in notes.items() if v}

    def __init__(self, run_path: str = "runs"):
        super().__init__(run_path)
        self.tokenizer = None
        self.model_path: str | None = None  # what the trainer loads (the agent's model, or config `model`)
        self.prompt_tokens = 0  # longest rendered prompt among the measured rows
        self.trainer = None  # the TRL trainer of the last train_here() (tests read its args)
        self._config_details: dict[str, Any] = {}
        self._memory_inputs: tuple = ()

    @classmethod
    def availability(cls) -> tuple[bool, str]:
        missing = [m for m in ("torch", "transformers", "trl") if importlib.util.find_spec(m) is None]
        if missing:
            return False, f"missing {', '.join(missing)} — pip install -r requirements.txt"
        from ..fit.gpus import cuda_devices

        gpus = cuda_devices()  # read without initializing CUDA here: this process may fork checks or runs after
        if gpus:
            n = len(gpus)
            return True, f"{n} CUDA GPU{'s' if n > 1 else ''}: {gpus[0]['name']}"
        return True, "CPU (no CUDA GPU found; small models only)"

    @classmethod
    def preload(cls) -> None:
        """Import what the checks use (TRL's dataclasses, peft): a checking process that forks
        per check (the studio's worker) imports them once."""
        import peft  # noqa: F401
        import trl  # noqa: F401
        from transformers import AutoTokenizer  # noqa: F401
        from trl import GRPOConfig, ModelConfig, SFTConfig  # noqa: F401

        from .settings import GRPO, SFT, trl_fields

        trl_fields(GRPO), trl_fields(SFT)

    @classmethod
    def preload_training(cls) -> None:
        """Import what training imports (TRL's trainers, Transformers' model classes): a process that forks runs
        (engines.fork_server) imports them once."""
        from transformers import AutoModelForCausalLM  # noqa: F401
        from trl import GRPOTrainer, SFTTrainer  # noqa: F401

        from . import build  # noqa: F401
        from ..inference import rollout  # noqa: F401

    @classmethod
    def describe_config(cls) -> list[dict]:
        from .catalog import describe

        return describe()

    # -- conversions -----------------------------------------------------------------------
    def _load_tokenizer(self, model: str, module: str, key: str, tools: bool):
        from transformers import AutoTokenizer

        try:
            tok = AutoTokenizer.from_pretrained(model)
        except Exception as e:
            raise CheckError(
                module,
                f"cannot load the tokenizer of model '{model}': {type(e).__name__}: {str(e)[:300]}",
                f"point `{key}` at a folder with tokenizer files (save_pretrained)",
            )
        if not tok.chat_template:
            raise CheckError(
                module,
                f"the tokenizer of '{model}' has no chat template",
                "training renders chat prompts; set one (e.g. TRL's chat_templates/qwen2_5.jinja)",
            )
        if tools:
            from trl.chat_template_utils import supports_tool_calling

            if importlib.util.find_spec("jmespath") is None:
                raise CheckError(
                    module,
                    "tool calling needs the jmespath package (TRL parses tool calls with it on transformers < 5.13)",
                    "pip install -r requirements.txt (or pip install jmespath)",
                )
            if not supports_tool_calling(tok):
                raise CheckError(
                    module,
                    "the model's chat template cannot render tool calls",
                    "use a tool-calling template such as TRL's chat_templates/qwen2_5.jinja",
                )
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        return tok

    def convert_agent(self, spec: AgentSpec) -> None:
        source = resolve_model(spec.model, module="agent", key="model")
        if source.warning:
            spec.warnings.append(source.warning)
        self.tokenizer = self._load_tokenizer(source.path, "agent", "model", spec.has_tools)
        self.model_path = source.path
        if self.model_folder is None:  # a hub id found in the local cache: its folder there
            self.model_folder = require_model_folder(source.path)

    def convert_dataset(self, bundle: DataBundle) -> dict | None:
        if self.tokenizer is None or self.agent_spec is None:
            return None
        rendered = self._render(bundle.train[0], bundle)
        n_tokens = len(self.tokenizer(rendered, add_special_tokens=False)["input_ids"])
        self.prompt_tokens = self._longest_prompt(bundle, n_tokens)
        return {
            "rendered_prompt": preview_text(rendered),
            "prompt_tokens": n_tokens,
            "longest_prompt_tokens": self.prompt_tokens,
        }

    def _render(self, row: dict, bundle: DataBundle) -> str:
        msgs = prompt_messages(row, bundle.columns, self.agent_spec.system_prompt)
        try:
            return self.tokenizer.apply_chat_template(
                msgs, tools=self.agent_spec.tool_schemas or None, add_generation_prompt=True, tokenize=False
            )
        except Exception as e:
            raise CheckError("dataset", f"the first prompt cannot be rendered by the model's chat template: {e}")

    def _longest_prompt(self, bundle: DataBundle, first: int) -> int:
        longest = first
        for i in range(1, min(PROMPT_ROWS_MEASURED, len(bundle.train))):
            try:
                text = self._render(bundle.train[i], bundle)
            except CheckError:
                continue
            longest = max(longest, len(self.tokenizer(text, add_special_tokens=False)["input_ids"]))
        return longest

    def prompt_token_counter(self):
        if self.tokenizer is None or self.agent_spec is None or self.data is None:
            return None
        tok, cols, agent = self.tokenizer, self.data.columns, self.agent_spec

        def count(row: dict) -> int:
            text = tok.apply_chat_template(
                prompt_messages(row, cols, agent.system_prompt),
                tools=agent.tool_schemas or None,
                add_generation_prompt=True,
                tokenize=False,
            )
            return len(tok(text, add_special_tokens=False)["input_ids"])

        return count

    def data_fit(self, cfg: dict[str, Any]):
        import psutil

        folder = self.model_folder
        gpu = gpu_memory_bytes() if cfg["device"] != "cpu" else None
        memory, where = (gpu, "the GPU") if gpu else (psutil.virtual_memory().total, "this machine's memory")
        group = int(cfg["num_generations"]) if cfg["mode"] == "grpo" else 1
        prompts = cfg["prompts_per_step"] or max(1, int(cfg.get("per_device_train_batch_size") or 1) // group)
        return trl_data_fit({**cfg, "prompts_per_step": prompts}, folder.vocab_size if folder else None, memory, where)

    def derived_config(self) -> dict[str, Any]:
        a = self.agent_spec
        if a is None:
            return {}
        return {"max_completion_length": a.max_tokens, "temperature": a.temperature, "top_p": a.top_p}

    # -- the config --------------------------------------------------------------------------
    def validate_settings(self, config: Any) -> tuple[dict[str, Any], list[str]]:
        """Our keys + TRL's (validated by constructing TRL's GRPOConfig/SFTConfig and ModelConfig), the
        model, LoRA/QLoRA, processes, vLLM, trackers (the memory estimate: :meth:`check_resources`)."""
        from . import arguments, config_checks

        cfg, warnings = validate(config, base=self.derived_config())
        warnings += self.cross_check_config(cfg)
        details: dict[str, Any] = {}
        if cfg.get("model"):
            agent_path = self.model_path  # the agent's, resolved by check_agent
            details["model"], warning = self._use_config_model(cfg["model"])
            warnings += [warning] if warning else []
            if (
                agent_path
                and self.agent_spec is not None
                and self.agent_spec.name != "virtual"
                and (os.path.realpath(agent_path) != os.path.realpath(self.model_path or ""))
            ):
                warnings.append(
                    f"model: {cfg['model']} (AWorld form: the config's model is the one trained) replaces the agent's "
                    f"{self.agent_spec.model}"
                )
        from ..fit import gpus

        cuda = gpus.cuda_available() and cfg["device"] != "cpu"  # never CUDA itself in a check (engines/fit/gpus.py)
        world = launch.world_size(cfg)
        warnings += launch.check(cfg, world, cuda)
        warnings += peft_setup.check(cfg, cuda)
        warnings += config_checks.vllm(cfg, cuda, world)
        names = trackers.normalize(cfg["report_to"])
        warnings += trackers.check(names, cfg["tracker_mode"])
        output_dir = str(self.run.checkpoints_dir)
        reward_weights = self.reward.weights if self.reward is not None and cfg["mode"] == "grpo" else None
        args = arguments.trainer_config(
            cfg,
            output_dir,
            world_size=world,
            reward_weights=reward_weights,
            tool_iterations=self._tool_iterations(),
            report_to=trackers.library_report_to(names),
        )
        model_cfg = arguments.model_config(cfg, self.model_path or "")
        details.update(
            world_size=world,
            launcher=launch.describe(cfg, world),
            trl_settings=len([k for k in cfg if k not in {f.name for f in FIELDS}]),
        )
        self._config_details = details
        self._memory_inputs = (args, model_cfg, world, cuda)
        return cfg, warnings

    def check_resources(self, cfg: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """The memory estimate (after the data fit: a config that trains 0 steps is told that first)."""
        from ..fit.disk_estimate import checkpoints_at_once, disk_warning
        from . import config_checks

        args, model_cfg, world, cuda = self._memory_inputs
        memory, warnings = config_checks.memory(cfg, args, model_cfg, self.model_path, self.prompt_tokens, world, cuda)
        if memory is not None:  # the checkpoints against the free space where the run will write them
            at_once = checkpoints_at_once(cfg["max_steps"], cfg["save_steps"], cfg["save_total_limit"])
            disk = disk_warning(memory["checkpoint_bytes"], at_once, self.disk_dir)
            warnings += [disk] if disk else []
        return ({"memory": memory} if memory is not None else {}), warnings

    def _use_config_model(self, name: str) -> tuple[dict, str | None]:
        """The config's ``model`` replaces the agent's: its tokenizer, and the prompt lengths it gives."""
        source = resolve_model(name)
        tools = self.agent_spec.has_tools if self.agent_spec is not None else False
        self.tokenizer = self._load_tokenizer(source.path, "config", "model", tools)
        self.model_path = source.path
        if self.data is not None and self.agent_spec is not None:
            first = self._render(self.data.train[0], self.data)
            self.prompt_tokens = self._longest_prompt(
                self.data, len(self.tokenizer(first, add_special_tokens=False)["input_ids"])
            )
        return source.to_dict(), source.warning

    def _tool_iterations(self) -> int | None:
        a = self.agent_spec
        return max(1, a.max_steps - 1) if a is not None and a.has_tools else None

    def cross_check_config(self, cfg: dict[str, Any]) -> list[str]:
        warnings: list[str] = []
        if cfg["mode"] == "grpo" and self.reward is None:
            raise CheckError("config", "GRPO needs a reward function", "pick a reward, or set mode: sft")
        if cfg["mode"] == "sft" and self.data is not None and not self.data.columns.answer:
            raise CheckError(
                "config",
                "SFT needs a reference-answer column to learn from",
                "add an answer/solution column, or use mode: grpo",
            )
        if cfg["mode"] == "sft" and self.agent_spec is not None and self.agent_spec.has_tools:
            warnings.append("SFT trains on the answer text only; tools are not called")
        ckpt = cfg.get("resume_from_checkpoint")
        if ckpt and not os.path.isfile(os.path.join(ckpt, "trainer_state.json")):
            raise CheckError(
                "config",
                f"resume_from_checkpoint '{ckpt}' is not a checkpoint folder",
                "point at a checkpoints/checkpoint-<step> folder of an earlier run",
            )
        return warnings

    def convert_config(self, cfg: dict[str, Any]) -> dict | None:
        return dict(self._config_details)

    # -- training ----------------------------------------------------------------------------
    def _train(self) -> str:
        cfg, run = self.effective_config, self.run
        names = trackers.normalize(cfg["report_to"])
        ids = run.read_status().get("tracker_ids")  # an earlier attempt's: a resumed run logs on into them
        env = trackers.environment(names, run.path, cfg["tracker_project"], cfg["tracker_mode"], ids=ids)
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)  # the trackers (and launched ranks) read these; put back afterwards
        try:
            world = launch.world_size(cfg)
            if launch.needs_launch(cfg, world):
                return launch.run_ranks(cfg, run, world)
            run.write_status(world_size=1)
            return self.train_here()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def train_here(self) -> str:
        """Train in this process: the whole run, or one rank of a launched one (only rank 0 writes
        metrics, samples and status)."""
        import transformers

        from .build import TrainerInputs, build_trainer, is_main_rank

        cfg, run = self.effective_config, self.run
        names = trackers.normalize(cfg["report_to"])
        inputs = TrainerInputs(
            cfg=cfg,
            run=run,
            agent=self.agent_spec,
            reward=self.reward,
            model_path=self.model_path,
            tokenizer=self.tokenizer,
            rows=lambda mode: self._rows(self.data.train, mode),
            tool_iterations=self._tool_iterations(),
            evaluate=self._evaluator() if is_main_rank() else None,
        )
        trainer, callback = build_trainer(inputs, names)
        self.trainer = trainer
        trainer.remove_callback(transformers.PrinterCallback)
        trainer.remove_callback(transformers.ProgressCallback)
        if trainer.is_world_process_zero():
            counts = peft_setup.parameter_counts(trainer.model)
            use_cpu = trainer.args.use_cpu
            run.write_status(
                device="cpu" if use_cpu else "cuda", mode=cfg["mode"], peft=bool(cfg["use_peft"]), **counts
            )
            run.event("model", path=self.model_path, peft=bool(cfg["use_peft"]), **counts)
        try:
            trainer.train(resume_from_checkpoint=cfg["resume_from_checkpoint"])
        finally:
            callback.close()  # TensorBoard's writer thread: flush what it holds
            trackers.finish(names)
            if self.agent_spec.mcp_tools:
                from ..tools.mcp_client import close_default_pool

                close_default_pool()  # stdio servers stopped, sessions closed
        return STOPPED if callback.stopped else FINISHED

    def save_elsewhere(self, folder):
        """The model in memory (and its tokenizer and trainer state) as ``folder/checkpoint-<step>``, when this
        process trained it (one process: a launched run's ranks hold theirs)."""
        trainer = getattr(self, "trainer", None)
        if trainer is None or trainer.args.world_size > 1:
            return None
        path = Path(folder) / f"checkpoint-{trainer.state.global_step}"
        trainer.save_model(str(path))
        trainer.state.save_to_json(str(path / "trainer_state.json"))
        return path

    # -- evaluation during training ----------------------------------------------------------
    def _rows(self, ds, mode: str):
        """The training table TRL expects: chat ``prompt`` (+ ``completion`` for SFT)."""
        from .callbacks import ANSWER_COLUMN

        cols, system = self.data.columns, self.agent_spec.system_prompt
        ds = ds.filter(lambda row: bool(prompt_text(row[cols.prompt]).strip()))

        def to_chat(row):
            out = {"prompt": prompt_messages(row, cols, system), ANSWER_COLUMN: row_answer(row, cols)}
            if mode == "sft":
                out["completion"] = [{"role": "assistant", "content": out[ANSWER_COLUMN] or ""}]
            return out

        drop = [c for c in ds.column_names if c in ("prompt", "completion", ANSWER_COLUMN)]
        return ds.map(to_chat, remove_columns=drop)

    def _evaluator(self):
        """Greedy rollouts on up to ``eval_samples`` test prompts through the agent's own loop (tools
        run, as in evaluation and chat: engines/inference/rollout.py), scored with the reward."""
        if self.reward is None:
            return None
        if self.effective_config["distributed"] in ("zero3", "fsdp1", "fsdp2"):
            return None  # sharded weights: one rank alone cannot generate
        from ..inference.checkpoints import ModelRef
        from ..inference.evaluation import evaluate_model, metrics_of

        cfg, agent = self.effective_config, self.agent_spec
        ds = self.data.test if self.data.test is not None else self.data.train
        rows = [ds[i] for i in range(min(cfg["eval_samples"], len(ds)))]
        label = "eval" if self.data.test is not None else "eval_train"
        tools = agent.tool_callables() if agent.has_tools else []

        def evaluate(model) -> dict[str, float]:
            from ..inference.rollout import AgentGenerator

            was_training = model.training
            model.eval()
            try:
                generator = AgentGenerator(model, self.tokenizer, tools, agent.tool_schemas, agent.max_steps)
                predictions = evaluate_model(
                    ModelRef("training", "", ""),
                    agent,
                    rows,
                    self.data.columns,
                    self.reward,
                    max_new_tokens=cfg["max_completion_length"],
                    generator=generator,
                )
            finally:
                if was_training:
                    model.train()
            m = metrics_of(predictions, self.reward.names, 1)
            out = {f"{label}/reward": m["reward"], f"{label}/samples": m["samples"]}
            if agent.has_tools:
                out[f"{label}/tool_calls"] = m["tool_calls"]
            return out

        return evaluate

"""TrlProcessor: the embedded engine. Checks use the shared loaders; ``_train`` runs TRL's
GRPOTrainer or SFTTrainer in this process and streams into the run directory."""
from __future__ import annotations

import importlib.util
import os
from typing import Any

from ..agents import AgentSpec
from ..check_result import CheckError
from ..data import DataBundle, prompt_messages, prompt_text, row_answer
from ..rundir import FINISHED, STOPPED
from ..standard import StandardProcessor
from .config import FIELDS, cross_check


class TrlProcessor(StandardProcessor):
    description = "Hugging Face TRL on this machine (CPU or one CUDA GPU): GRPO and SFT, tool-using agents"
    config_fields = FIELDS
    reward_required = False  # SFT trains without one; check_config requires it for GRPO

    def __init__(self, run_path: str = "runs"):
        super().__init__(run_path)
        self.tokenizer = None

    @classmethod
    def availability(cls) -> tuple[bool, str]:
        missing = [m for m in ("torch", "transformers", "trl") if importlib.util.find_spec(m) is None]
        if missing:
            return False, f"missing {', '.join(missing)} — pip install -r requirements.txt"
        import torch

        if torch.cuda.is_available():
            return True, f"CUDA GPU: {torch.cuda.get_device_name(0)}"
        return True, "CPU (no CUDA GPU found; small models only)"

    # -- conversions -----------------------------------------------------------------------
    def convert_agent(self, spec: AgentSpec) -> None:
        from transformers import AutoTokenizer

        try:
            tok = AutoTokenizer.from_pretrained(spec.model)
        except Exception as e:
            raise CheckError("agent", f"cannot load the tokenizer of model '{spec.model}': {type(e).__name__}: "
                             f"{str(e)[:300]}", "point `model:` at a folder with tokenizer files (save_pretrained)")
        if not tok.chat_template:
            raise CheckError("agent", f"the tokenizer of '{spec.model}' has no chat template",
                             "training renders chat prompts; set one (e.g. TRL's chat_templates/qwen2_5.jinja)")
        if spec.has_tools:
            from trl.chat_template_utils import supports_tool_calling

            if importlib.util.find_spec("jmespath") is None:
                raise CheckError("agent", "tool calling needs the jmespath package (TRL parses tool calls with it "
                                 "on transformers < 5.13)", "pip install -r requirements.txt (or pip install jmespath)")
            if not supports_tool_calling(tok):
                raise CheckError("agent", "the model's chat template cannot render tool calls",
                                 "use a tool-calling template such as TRL's chat_templates/qwen2_5.jinja")
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        self.tokenizer = tok

    def convert_dataset(self, bundle: DataBundle) -> dict | None:
        if self.tokenizer is None or self.agent_spec is None:
            return None
        msgs = prompt_messages(bundle.train[0], bundle.columns, self.agent_spec.system_prompt)
        try:
            rendered = self.tokenizer.apply_chat_template(msgs, tools=self.agent_spec.tool_schemas or None,
                                                          add_generation_prompt=True, tokenize=False)
        except Exception as e:
            raise CheckError("dataset", f"the first prompt cannot be rendered by the model's chat template: {e}")
        n_tokens = len(self.tokenizer(rendered, add_special_tokens=False)["input_ids"])
        return {"rendered_prompt": rendered, "prompt_tokens": n_tokens}

    def derived_config(self) -> dict[str, Any]:
        a = self.agent_spec
        if a is None:
            return {}
        return {"max_completion_length": a.max_tokens, "temperature": a.temperature, "top_p": a.top_p}

    def cross_check_config(self, cfg: dict[str, Any]) -> list[str]:
        warnings = cross_check(cfg)
        if cfg["mode"] == "grpo" and self.reward is None:
            raise CheckError("config", "GRPO needs a reward function", "pick a reward, or set mode: sft")
        if cfg["mode"] == "sft" and self.data is not None and not self.data.columns.answer:
            raise CheckError("config", "SFT needs a reference-answer column to learn from",
                             "add an answer/solution column, or use mode: grpo")
        if cfg["mode"] == "sft" and self.agent_spec is not None and self.agent_spec.has_tools:
            warnings.append("SFT trains on the answer text only; tools are not called")
        ckpt = cfg.get("resume_from_checkpoint")
        if ckpt and not os.path.isfile(os.path.join(ckpt, "trainer_state.json")):
            raise CheckError("config", f"resume_from_checkpoint '{ckpt}' is not a checkpoint folder",
                             "point at a checkpoints/checkpoint-<step> folder of an earlier run")
        return warnings

    # -- training ----------------------------------------------------------------------------
    def _device(self) -> tuple[bool, bool, bool]:
        """(use_cpu, bf16, fp16) from the device/precision settings."""
        import torch

        cfg = self.effective_config
        cuda = torch.cuda.is_available() and cfg["device"] != "cpu"
        precision = cfg["precision"]
        bf16 = precision == "bf16" or (precision == "auto" and cuda and torch.cuda.is_bf16_supported())
        return not cuda, bf16, precision == "fp16"

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
        run, as in evaluation and chat: engines/rollout.py), scored with the reward."""
        if self.reward is None:
            return None
        from ..checkpoints import ModelRef
        from ..evaluation import evaluate_model, metrics_of

        cfg, agent = self.effective_config, self.agent_spec
        ds = self.data.test if self.data.test is not None else self.data.train
        rows = [ds[i] for i in range(min(cfg["eval_samples"], len(ds)))]
        label = "eval" if self.data.test is not None else "eval_train"
        tools = agent.tool_callables() if agent.has_tools else []

        def evaluate(model) -> dict[str, float]:
            from ..rollout import AgentGenerator

            was_training = model.training
            model.eval()
            try:
                generator = AgentGenerator(model, self.tokenizer, tools, agent.tool_schemas, agent.max_steps)
                predictions = evaluate_model(ModelRef("training", "", ""), agent, rows, self.data.columns,
                                             self.reward, max_new_tokens=cfg["max_completion_length"],
                                             generator=generator)
            finally:
                if was_training:
                    model.train()
            m = metrics_of(predictions, self.reward.names, 1)
            out = {f"{label}/reward": m["reward"], f"{label}/samples": m["samples"]}
            if agent.has_tools:
                out[f"{label}/tool_calls"] = m["tool_calls"]
            return out

        return evaluate

    def _train(self) -> str:
        import transformers
        from trl import GRPOConfig, GRPOTrainer, SFTConfig, SFTTrainer

        from .callbacks import ANSWER_COLUMN, RunDirCallback, SampleRecorder, ToolServerCallback

        cfg, run, agent = self.effective_config, self.run, self.agent_spec
        use_cpu, bf16, fp16 = self._device()
        common = dict(
            output_dir=str(run.checkpoints_dir), max_steps=cfg["max_steps"], learning_rate=cfg["learning_rate"],
            lr_scheduler_type=cfg["lr_scheduler_type"], warmup_steps=cfg["warmup_steps"],
            gradient_accumulation_steps=cfg["gradient_accumulation_steps"], weight_decay=cfg["weight_decay"],
            max_grad_norm=cfg["max_grad_norm"], seed=cfg["seed"], use_cpu=use_cpu, bf16=bf16, fp16=fp16,
            gradient_checkpointing=cfg["gradient_checkpointing"], logging_steps=cfg["logging_steps"],
            save_strategy="steps", save_steps=cfg["save_steps"], save_total_limit=cfg["save_total_limit"],
            report_to="none", disable_tqdm=True, dataloader_num_workers=0,
        )
        evaluate = self._evaluator()
        pool = None
        if cfg["mode"] == "grpo" and agent.mcp_tools:  # one MCP session per server for this process
            from ..mcp_client import default_pool

            pool = default_pool()
            pool.on_event = run.event
        if cfg["mode"] == "grpo":
            tools = agent.tool_callables() if agent.has_tools else None
            args = GRPOConfig(
                **common, per_device_train_batch_size=cfg["prompts_per_step"] * cfg["num_generations"],
                num_generations=cfg["num_generations"], max_completion_length=cfg["max_completion_length"],
                temperature=cfg["temperature"], top_p=cfg["top_p"], beta=cfg["beta"],
                disable_dropout=cfg["disable_dropout"], mask_truncated_completions=cfg["mask_truncated_completions"],
                reward_weights=self.reward.weights,
                max_tool_calling_iterations=max(1, agent.max_steps - 1) if tools else None,
            )
            recorder = SampleRecorder(run, self.reward, cfg["samples_per_step"], agent.tool_servers)
            funcs = recorder.wrap(self.reward.trl_functions(ANSWER_COLUMN))
            callback = RunDirCallback(run, recorder, evaluate, cfg["eval_steps"])
            extra = [ToolServerCallback(pool)] if pool is not None else []
            trainer = GRPOTrainer(model=agent.model, reward_funcs=funcs, args=args,
                                  train_dataset=self._rows(self.data.train, "grpo"), processing_class=self.tokenizer,
                                  callbacks=[callback, *extra], tools=tools)
        else:
            args = SFTConfig(**common, per_device_train_batch_size=cfg["prompts_per_step"],
                             completion_only_loss=True)
            callback = RunDirCallback(run, None, evaluate, cfg["eval_steps"])
            trainer = SFTTrainer(model=agent.model, args=args, train_dataset=self._rows(self.data.train, "sft"),
                                 processing_class=self.tokenizer, callbacks=[callback])
        trainer.remove_callback(transformers.PrinterCallback)
        trainer.remove_callback(transformers.ProgressCallback)
        run.write_status(device="cpu" if use_cpu else "cuda", mode=cfg["mode"])
        try:
            trainer.train(resume_from_checkpoint=cfg["resume_from_checkpoint"])
        finally:
            callback.close()   # TensorBoard's writer thread: flush what it holds
            if pool is not None:
                from ..mcp_client import close_default_pool

                close_default_pool()  # stdio servers stopped, sessions closed
        return STOPPED if callback.stopped else FINISHED

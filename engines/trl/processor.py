"""TrlProcessor: the embedded engine. Checks use the shared loaders; ``_train`` runs TRL's
GRPOTrainer or SFTTrainer in this process and streams into the run directory."""
from __future__ import annotations

import importlib.util
import os
from typing import Any

from ..agents import AgentSpec
from ..check_result import CheckError
from ..data import DataBundle, preview_text, prompt_messages, prompt_text, row_answer
from ..rundir import FINISHED, STOPPED
from ..standard import StandardProcessor
from .config import FIELDS, cross_check
from ..data_fit import gpu_memory_bytes
from .data_fit import trl_data_fit


class TrlProcessor(StandardProcessor):
    description = "Hugging Face TRL on this machine (CPU or one CUDA GPU): GRPO and SFT, tool-using agents"
    config_fields = FIELDS
    reward_required = False  # SFT trains without one; check_config requires it for GRPO

    def __init__(self, run_path: str = "runs"):
        super().__init__(run_path)
        self.tokenizer = None

    @classmethod
    def preload(cls) -> None:
        import transformers  # noqa: F401
        from transformers import AutoTokenizer  # noqa: F401

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
        if spec.tools:
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
        return {"rendered_prompt": preview_text(rendered), "prompt_tokens": n_tokens}

    def prompt_token_counter(self):
        if self.tokenizer is None or self.agent_spec is None or self.data is None:
            return None
        tok, cols, agent = self.tokenizer, self.data.columns, self.agent_spec

        def count(row: dict) -> int:
            text = tok.apply_chat_template(prompt_messages(row, cols, agent.system_prompt),
                                           tools=agent.tool_schemas or None, add_generation_prompt=True, tokenize=False)
            return len(tok(text, add_special_tokens=False)["input_ids"])
        return count

    def data_fit(self, cfg: dict[str, Any]):
        import psutil

        folder = self.model_folder
        gpu = gpu_memory_bytes() if cfg["device"] != "cpu" else None
        memory, where = (gpu, "the GPU") if gpu else (psutil.virtual_memory().total, "this machine's memory")
        return trl_data_fit(cfg, folder.vocab_size if folder else None, memory, where)

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
        if cfg["mode"] == "sft" and self.agent_spec is not None and self.agent_spec.tools:
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
        """Greedy generation on up to ``eval_samples`` test prompts, scored with the reward."""
        if self.reward is None or (self.agent_spec and self.agent_spec.tools):
            return None  # tool-using agents are scored by their rollouts (samples.jsonl)
        import torch

        cfg, tok = self.effective_config, self.tokenizer
        ds = self.data.test if self.data.test is not None else self.data.train
        n = min(cfg["eval_samples"], len(ds))
        rows = [ds[i] for i in range(n)]
        cols, system = self.data.columns, self.agent_spec.system_prompt
        texts = [tok.apply_chat_template(prompt_messages(r, cols, system), add_generation_prompt=True, tokenize=False)
                 for r in rows]
        answers = [row_answer(r, cols) for r in rows]
        label = "eval" if self.data.test is not None else "eval_train"

        def evaluate(model) -> dict[str, float]:
            was_training = model.training
            model.eval()
            side = tok.padding_side
            tok.padding_side = "left"
            try:
                enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
                with torch.no_grad():
                    out = model.generate(**enc, max_new_tokens=cfg["max_completion_length"], do_sample=False,
                                         pad_token_id=tok.pad_token_id)
                completions = tok.batch_decode(out[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)
            finally:
                tok.padding_side = side
                if was_training:
                    model.train()
            scores = [self.reward.score(c, a, t)[0] for c, a, t in zip(completions, answers, texts)]
            return {f"{label}/reward": sum(scores) / max(1, len(scores)), f"{label}/samples": len(scores)}

        return evaluate

    def _train(self) -> str:
        import transformers
        from trl import GRPOConfig, GRPOTrainer, SFTConfig, SFTTrainer

        from .callbacks import ANSWER_COLUMN, RunDirCallback, SampleRecorder

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
        if cfg["mode"] == "grpo":
            tools = agent.tool_callables() if agent.tools else None
            args = GRPOConfig(
                **common, per_device_train_batch_size=cfg["prompts_per_step"] * cfg["num_generations"],
                num_generations=cfg["num_generations"], max_completion_length=cfg["max_completion_length"],
                temperature=cfg["temperature"], top_p=cfg["top_p"], beta=cfg["beta"],
                disable_dropout=cfg["disable_dropout"], mask_truncated_completions=cfg["mask_truncated_completions"],
                reward_weights=self.reward.weights,
                max_tool_calling_iterations=max(1, agent.max_steps - 1) if tools else None,
            )
            recorder = SampleRecorder(run, self.reward, cfg["samples_per_step"])
            funcs = recorder.wrap(self.reward.trl_functions(ANSWER_COLUMN))
            callback = RunDirCallback(run, recorder, evaluate, cfg["eval_steps"])
            trainer = GRPOTrainer(model=agent.model, reward_funcs=funcs, args=args,
                                  train_dataset=self._rows(self.data.train, "grpo"), processing_class=self.tokenizer,
                                  callbacks=[callback], tools=tools)
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
        return STOPPED if callback.stopped else FINISHED

"""A Hugging Face sequence-classification model as a reward, scored as TRL scores model rewards: the
prompt and the completion go through the reward model's own chat template (plain concatenation for
text prompts), right-padded, batched, and the score is ``logits[:, 0]``.

Spec: ``{reward_model: <local folder or cached hub id>}`` or ``{reward_model: {path, batch_size,
max_length, device}}``. Nothing is downloaded: a hub id must already be in the local cache. The model
loads on first use (in the check's dry run, then in training), on the training device
(``device: auto`` = CUDA when there is one).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from ..results.check_result import CheckError, did_you_mean
from .calling import Batch, is_messages, message_text

OPTIONS = {"path": None, "batch_size": 16, "max_length": 1024, "device": "auto", "name": None}


class RewardModelScorer:
    def __init__(
        self, path: str, batch_size: int = 16, max_length: int = 1024, device: str = "auto", name: str | None = None
    ):
        self.path, self.batch_size, self.max_length, self.device = path, int(batch_size), int(max_length), device
        self.name = name or "rm_" + Path(path.rstrip("/")).name.replace("-", "_")
        self._model = self._tokenizer = None
        self._check_config()

    @classmethod
    def from_spec(cls, spec: Any, kwargs: dict[str, Any] | None = None) -> "RewardModelScorer":
        options = dict(kwargs or {})
        if isinstance(spec, dict):
            options.update(spec)
        elif isinstance(spec, (str, os.PathLike)):
            options["path"] = str(spec)
        else:
            raise CheckError("reward", f"reward_model {spec!r} must be a folder, a cached hub id or a dict with path")
        unknown = [k for k in options if k not in OPTIONS]
        if unknown:
            raise CheckError(
                "reward",
                f"unknown reward_model option '{unknown[0]}'{did_you_mean(unknown[0], OPTIONS)}",
                f"options: {', '.join(OPTIONS)}",
            )
        if not options.get("path"):
            raise CheckError("reward", "reward_model needs a path (a model folder or a cached hub id)")
        path = os.path.expanduser(str(options.pop("path")))
        if os.path.isdir(path):
            path = str(Path(path).resolve())
        return cls(path, **{k: v for k, v in options.items() if v is not None})

    def to_spec(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "batch_size": self.batch_size,
            "max_length": self.max_length,
            "device": self.device,
            "name": self.name,
        }

    def _check_config(self) -> None:
        from transformers import AutoConfig

        try:
            config = AutoConfig.from_pretrained(self.path, local_files_only=True)
        except Exception as e:  # noqa: BLE001
            raise CheckError(
                "reward",
                f"reward model '{self.path}' is neither a model folder nor a model in the "
                f"local Hugging Face cache: {type(e).__name__}: {str(e)[:200]}",
                "point at a folder made by save_pretrained (nothing is downloaded here)",
            )
        archs = getattr(config, "architectures", None) or []
        if archs and not any(a.endswith("ForSequenceClassification") for a in archs):
            raise CheckError(
                "reward",
                f"reward model '{self.path}' is a {', '.join(archs)}, not a sequence-classification model",
                "use AutoModelForSequenceClassification with num_labels=1 (its logit is the reward)",
            )

    # -- scoring -----------------------------------------------------------------------------------
    def _load(self):
        if self._model is None:
            from transformers import AutoModelForSequenceClassification, AutoTokenizer

            device = self.device
            if device == "auto":  # a reward's dry run is a check, in a fork: never CUDA to decide (engines/fit/gpus.py)
                from ..fit.gpus import cuda_available

                device = "cuda" if cuda_available() else "cpu"
            tok = AutoTokenizer.from_pretrained(self.path, local_files_only=True)
            if tok.pad_token is None:
                tok.pad_token = tok.eos_token
            model = AutoModelForSequenceClassification.from_pretrained(self.path, local_files_only=True)
            if model.config.pad_token_id is None:
                model.config.pad_token_id = tok.pad_token_id
            self._model, self._tokenizer = model.to(device).eval(), tok
        return self._model, self._tokenizer

    def texts(self, batch: Batch) -> list[str]:
        """Prompt + completion as TRL renders them for a reward model."""
        _, tok = self._load()
        out = []
        for prompt, completion in zip(batch.prompt_list(), batch.completions):
            if is_messages(prompt) and getattr(tok, "chat_template", None):
                reply = (
                    completion
                    if is_messages(completion)
                    else [{"role": "assistant", "content": message_text(completion)}]
                )
                out.append(tok.apply_chat_template(list(prompt) + list(reply), tokenize=False))
            else:
                text = "".join(f"{m['content']}" for m in prompt) if is_messages(prompt) else (prompt or "")
                out.append(str(text) + message_text(completion))
        return out

    def describe_inputs(self, batch: Batch) -> dict[str, Any]:
        texts = self.texts(batch)
        return {
            "texts": f"list[{len(texts)}] of str (prompt + completion through the reward model's chat "
            f"template), e.g. {texts[0][-60:]!r}",
            "model": self.path,
        }

    def score_batch(self, batch: Batch) -> list[float]:
        import torch

        model, tok = self._load()
        texts = self.texts(batch)
        scores: list[float] = []
        t0 = time.perf_counter()
        for start in range(0, len(texts), self.batch_size):
            enc = tok(
                texts[start : start + self.batch_size],
                return_tensors="pt",
                padding=True,
                padding_side="right",
                truncation=True,
                max_length=self.max_length,
                add_special_tokens=False,
            ).to(model.device)
            with torch.inference_mode():
                scores += model(**enc).logits[:, 0].float().tolist()
        log_metric = batch.extras.get("log_metric")
        if log_metric is not None:
            log_metric(f"reward_model/{self.name}/seconds", time.perf_counter() - t0)
        return scores

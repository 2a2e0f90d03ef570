"""A local model folder (``save_pretrained`` output), read without loading weights: what it must
hold (config, weights, tokenizer), and what its ``config.json`` says (context length, vocabulary,
size) for the checks that compare settings and data against the model.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..results.check_result import CheckError

WEIGHT_GLOBS = (
    "*.safetensors",
    "model.safetensors.index.json",
    "pytorch_model*.bin",
    "pytorch_model.bin.index.json",
    "*.pt",
    "*.pth",
    "tf_model.h5",
    "flax_model.msgpack",
    "*.gguf",
)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json", "spiece.model")
CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "n_ctx", "max_seq_len")


@dataclass
class ModelFolder:
    path: Path
    config: dict[str, Any] = field(default_factory=dict)
    has_config: bool = False
    weights: list[str] = field(default_factory=list)
    has_tokenizer: bool = False

    @property
    def missing(self) -> list[str]:
        out = []
        if not self.has_config:
            out.append("config.json")
        if not self.weights:
            out.append("weights (*.safetensors or pytorch_model*.bin)")
        if not self.has_tokenizer:
            out.append("tokenizer files (tokenizer.json / tokenizer_config.json)")
        return out

    def _get(self, keys: tuple[str, ...]) -> Any:
        for section in (self.config, self.config.get("text_config") or {}, self.config.get("llm_config") or {}):
            if isinstance(section, dict):
                for k in keys:
                    v = section.get(k)
                    if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                        return v
        return None

    @property
    def context(self) -> int | None:
        """Tokens the model attends over (``max_position_embeddings`` or its equivalent)."""
        return self._get(CONTEXT_KEYS)

    @property
    def vocab_size(self) -> int | None:
        return self._get(("vocab_size", "padded_vocab_size"))

    @property
    def context_source(self) -> str:
        for k in CONTEXT_KEYS:
            if isinstance(self.config.get(k), int) or isinstance((self.config.get("text_config") or {}).get(k), int):
                return k
        return "config.json"


def read_model_folder(path: str | os.PathLike) -> ModelFolder:
    """What a model folder holds (no weights read). A config.json that does not parse is a CheckError."""
    p = Path(path)
    folder = ModelFolder(p)
    cfg = p / "config.json"
    if cfg.is_file():
        folder.has_config = True
        try:
            data = json.loads(cfg.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as e:
            raise CheckError("agent", f"the model's config.json ({cfg}) cannot be read: {e}", key="model")
        except json.JSONDecodeError as e:
            raise CheckError(
                "agent",
                f"the model's config.json ({cfg}) is not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}",
                "re-save the model with save_pretrained",
                key="model",
            )
        folder.config = data if isinstance(data, dict) else {}
    seen: list[str] = []
    for pattern in WEIGHT_GLOBS:
        seen += [f.name for f in p.glob(pattern) if f.is_file() and f.name not in seen]
    folder.weights = sorted(seen)
    folder.has_tokenizer = any((p / name).is_file() for name in TOKENIZER_FILES)
    return folder


def model_context(model: str | os.PathLike | None) -> int | None:
    """The context length of a local model folder from its config.json (None for a hub id or unknown)."""
    if not model or not Path(model).is_dir():
        return None
    try:
        return read_model_folder(model).context
    except CheckError:
        return None


def require_model_folder(model: str) -> ModelFolder | None:
    """A local model must be a folder with a config, weights and a tokenizer; says what is missing.
    Returns None for a model that is not a local path (a hub id)."""
    p = Path(model)
    if not p.exists():
        return None
    if not p.is_dir():
        raise CheckError(
            "agent",
            f"model '{model}' is a file, not a model folder",
            "point `model:` at a folder saved with save_pretrained (config.json, weights, tokenizer files)",
            key="model",
        )
    folder = read_model_folder(p)
    missing = folder.missing
    if missing:
        raise CheckError(
            "agent",
            f"model folder '{model}' has no {', no '.join(missing)}",
            "point `model:` at a folder saved with save_pretrained (model.save_pretrained(dir) and "
            "tokenizer.save_pretrained(dir))",
            key="model",
            missing=missing,
        )
    return folder


#: what a checkpoint's model shares with the model it resumes: a checkpoint of another shape cannot be loaded
SHAPE_KEYS = (
    "model_type",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "intermediate_size",
    "vocab_size",
)


def shape_mismatch(saved_config: str | os.PathLike, model: str | os.PathLike | None) -> str | None:
    """How the model whose ``config.json`` a checkpoint saved differs from ``model`` (a local folder): the keys of
    :data:`SHAPE_KEYS` that differ, as ``key saved → key now``; None when they agree or either cannot be read (a hub
    id, a checkpoint without the file)."""

    def read(path: Path) -> dict[str, Any] | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    saved = read(Path(saved_config))
    now = read(Path(model) / "config.json") if model else None
    if saved is None or now is None:
        return None
    differ = [k for k in SHAPE_KEYS if k in saved and k in now and saved[k] != now[k]]
    return ", ".join(f"{k} {saved[k]} → {now[k]}" for k in differ) or None

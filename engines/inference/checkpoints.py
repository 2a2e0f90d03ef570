"""Which model an evaluation, a chat or an export uses, checked before anything loads: the agent's
base model, a run's checkpoint by name (``checkpoint-400``; ``latest``; ``best``, by the held-out metric), a checkpoint of another run in the
same runs directory (``<run_id>/checkpoint-400``), or any folder — full weights or a LoRA adapter over the
base. A checkpoint of another run is labelled ``<run_id>/<checkpoint>``, so it never shares a label with
this run's own. Errors say what is wrong and what to pick instead (a pruned checkpoint,
another architecture than the agent's model, a model too large for this machine's memory)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..results.check_result import CheckError
from ..runs.json_lines import read_json_object
from ..runs.rundir import CHECKPOINTS_DIR, RunDir

WEIGHT_GLOBS = ("*.safetensors", "pytorch_model*.bin", "adapter_model.safetensors", "adapter_model.bin")
BASE = "base"
LATEST = "latest"
BEST = "best"  # the run's best checkpoint by its held-out metric


@dataclass
class ModelRef:
    """A model to load: ``path`` (full weights) or an adapter at ``path`` over ``base``."""

    label: str  # what the studio and the predictions call it: "base", "checkpoint-400", ...
    path: str
    base: str  # the agent's base model (tokenizer and chat template fall back to it)
    adapter: bool = False
    run_id: str | None = None

    def to_dict(self) -> dict:
        return {
            "label": self.label,
            "path": self.path,
            "base": self.base,
            "adapter": self.adapter,
            "run_id": self.run_id,
        }


def _weights(folder: Path) -> list[Path]:
    return sorted({p for g in WEIGHT_GLOBS for p in folder.glob(g)})


def _sibling_run(run: RunDir | None, name: str) -> tuple[RunDir, str] | None:
    """``<run_id>/<checkpoint>``: that other run beside ``run`` (same runs directory) and the checkpoint's
    name, when such a run exists (whether or not it kept that checkpoint)."""
    other, sep, ckpt = name.partition("/")
    if run is None or not sep or not other or not ckpt or "/" in ckpt or {other, ckpt} & {".", ".."}:
        return None
    sibling = RunDir(run.path.parent / other)
    return (sibling, ckpt) if sibling.file("run.yaml").is_file() else None


def _owning_run(folder: Path) -> Path | None:
    """The run directory whose ``checkpoints/`` holds ``folder``, if any."""
    folder = folder.resolve()
    if folder.parent.name == CHECKPOINTS_DIR and (folder.parent.parent / "run.yaml").is_file():
        return folder.parent.parent
    return None


def resolve(checkpoint: str | None, base_model: str, run: RunDir | None = None) -> ModelRef:
    """``None``/``latest``: the run's newest checkpoint (the base model when it has none); ``base``: the
    base model; a name: that checkpoint of the run; ``<run_id>/<name>``: a checkpoint of another run in the
    same runs directory; else a folder path."""
    run_id = run.run_id if run is not None else None
    name = (checkpoint or LATEST).strip()
    if name == BEST:
        name = best_name(run)
    if name == BASE:
        return check(ModelRef(BASE, base_model, base_model))
    if run is not None and os.sep not in name and "/" not in name and (there := run.checkpoints_unreachable()):
        raise CheckError(  # not the base model instead, as for a run with no checkpoint yet
            "checkpoint",
            f"run {run_id} trained on a Ray cluster: its checkpoints are at {there}, which this machine does not see",
            f"copy them into {run.checkpoints_dir}, or set ray_storage to storage this machine shares "
            "(docs/CLUSTER.md); 'base' is the base model",
        )
    if name == LATEST:
        found = run.checkpoints() if run is not None else []
        if not found:
            return check(ModelRef(BASE, base_model, base_model))
        folder = found[-1]
    elif run is not None and (run.checkpoints_source / name).is_dir():
        folder = run.checkpoints_source / name
    elif (sibling := _sibling_run(run, name)) is not None and (sibling[0].checkpoints_source / sibling[1]).is_dir():
        folder = sibling[0].checkpoints_source / sibling[1]
    elif os.sep in name or name.startswith((".", "~")) or Path(name).is_dir():
        folder = Path(os.path.expanduser(name)).resolve()
        if not folder.is_dir() and sibling is not None:
            other, ckpt = sibling[0].run_id, sibling[1]
            kept = [f"{other}/{p.name}" for p in sibling[0].checkpoints()]
            raise CheckError(
                "checkpoint",
                f"run {other} has no checkpoint '{ckpt}'",
                f"pick one of: {', '.join(kept)}" if kept else f"run {other} has no checkpoints yet",
            )
        if not folder.is_dir():
            raise CheckError(
                "checkpoint",
                f"checkpoint folder '{name}' does not exist",
                "give the folder of a checkpoint (checkpoints/checkpoint-<step> of a run) or an export",
            )
        run_id = None
    else:
        kept = [p.name for p in run.checkpoints()] if run is not None else []
        raise CheckError(
            "checkpoint",
            f"run {run_id} has no checkpoint '{name}'"
            + (" (older checkpoints are pruned: save_total_limit keeps the last few)" if kept else ""),
            f"pick one of: {', '.join(kept + [BASE])}" if kept else "train the run first, or use 'base'",
        )
    label = folder.name
    owner = _owning_run(folder)
    if owner is not None and (run is None or owner != run.path.resolve()):  # another run's checkpoint
        label, run_id = f"{owner.name}/{folder.name}", owner.name
    if (folder / "actor").is_dir():  # a verl checkpoint: its Hugging Face form, when it was saved
        hf = folder / "actor" / "huggingface"
        if not _weights(hf):
            raise CheckError(
                "checkpoint",
                f"verl checkpoint '{folder.name}' is in verl's sharded (FSDP) form, not Hugging Face's",
                f"convert it first: python -m verl.model_merger merge --backend fsdp "
                f"--local_dir {folder / 'actor'} --target_dir {hf}",
            )
        folder = hf
    adapter = (folder / "adapter_config.json").is_file()
    return check(ModelRef(label, str(folder), base_model, adapter=adapter, run_id=run_id))


def best_name(run: RunDir | None) -> str:
    """The name of the run's best checkpoint (status.json ``best_checkpoint``, see engines/runs/best_checkpoint.py)."""
    best = (run.read_status().get("best_checkpoint") or {}) if run is not None else {}
    if not best.get("name"):
        raise CheckError(
            "checkpoint",
            f"run {run.run_id if run is not None else ''} has no best checkpoint",
            "a run records one when an evaluation during training improves on the ones before "
            "(eval_steps > 0 and a test set); pick 'latest' or a checkpoint by name",
        )
    return str(best["name"])


def check(ref: ModelRef) -> ModelRef:
    """The folder has a config and weights, fits the agent's architecture, and fits in memory."""
    folder = Path(ref.path)
    if not folder.is_dir():
        if ref.label == BASE and "/" in ref.path and not ref.path.startswith(("/", ".", "~")):
            return ref  # a hub id: loaded through the Hugging Face cache (a clear error there when absent)
        raise CheckError("checkpoint", f"model folder '{ref.path}' does not exist", "check the agent's `model:`")
    weights = _weights(folder)
    if not weights:
        raise CheckError(
            "checkpoint",
            f"'{folder}' holds no model weights (*.safetensors / *.bin)",
            "it may be an unfinished checkpoint; pick another one",
        )
    if ref.adapter:
        adapter_base = read_json_object(folder / "adapter_config.json").get("base_model_name_or_path")
        if adapter_base and Path(adapter_base).name != Path(ref.base).name:
            raise CheckError(
                "checkpoint",
                f"the adapter in '{folder.name}' was trained on '{adapter_base}', not on "
                f"the agent's model '{ref.base}'",
                "evaluate it with the agent it was trained with",
            )
    else:
        mine, base = read_json_object(folder / "config.json"), read_json_object(Path(ref.base) / "config.json")
        if not mine:
            raise CheckError("checkpoint", f"'{folder}' has no config.json", "pick a checkpoint or an exported model")
        for key in ("model_type", "vocab_size", "hidden_size"):
            if base and key in base and key in mine and base[key] != mine[key]:
                raise CheckError(
                    "checkpoint",
                    f"'{folder.name}' is another architecture than the agent's model "
                    f"({key} {mine[key]} vs {base[key]} in {Path(ref.base).name})",
                    "evaluate a checkpoint of a run of this agent, or change the agent's model",
                )
    _fits_in_memory(ref, weights)
    return ref


def _fits_in_memory(ref: ModelRef, weights: list[Path]) -> None:
    import psutil

    size = sum(p.stat().st_size for p in weights)
    if ref.adapter:
        size += sum(p.stat().st_size for p in _weights(Path(ref.base))) if Path(ref.base).is_dir() else 0
    available = psutil.virtual_memory().available
    if size > 0.9 * available:
        gib = 2**30
        raise CheckError(
            "checkpoint",
            f"the model's weights take {size / gib:.1f} GiB, more than this machine's "
            f"free memory ({available / gib:.1f} GiB)",
            "evaluate on a machine with more memory or a GPU",
        )


def load(ref: ModelRef, device: str = "auto"):
    """(model, tokenizer) ready to generate: an adapter is applied over its base (not merged)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    use_cuda = torch.cuda.is_available() and device != "cpu"
    dtype = torch.bfloat16 if use_cuda and torch.cuda.is_bf16_supported() else torch.float32
    tok_source = ref.path if (Path(ref.path) / "tokenizer_config.json").is_file() else ref.base
    tokenizer = AutoTokenizer.from_pretrained(tok_source)
    if ref.adapter:
        from peft import PeftModel

        base = AutoModelForCausalLM.from_pretrained(ref.base, dtype=dtype)
        model = PeftModel.from_pretrained(base, ref.path)
    else:
        model = AutoModelForCausalLM.from_pretrained(ref.path, dtype=dtype)
    model.to("cuda" if use_cuda else "cpu")
    model.eval()
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer

"""Export a checkpoint as a standalone Hugging Face model folder: weights in safetensors (a LoRA adapter
merged into its base), the tokenizer with its chat template, the generation config, and a model card
(README.md) recording the run's spec and its latest evaluation. Optionally pushed to the Hub with the
token from the environment (never written anywhere)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

from ..results.check_result import CheckError
from .checkpoints import ModelRef, load, resolve
from .evaluation import list_evals, read_metrics
from ..runs.rundir import RunDir
from ..env_values.secret_values import mask_secrets, public_url

EXPORTS_DIR = "exports"
TOKEN_ENV = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")


def latest_evaluation(run: RunDir, label: str) -> tuple[str, dict] | None:
    """(eval id, metrics) of the newest evaluation of this run that scored the model ``label``."""
    for ev in list_evals(run.path):
        metrics = read_metrics(ev.path)
        if label in metrics:
            return ev.run_id, metrics[label]
    return None


def public_spec(spec: dict) -> dict:
    """run.yaml as it may be published: every secret written literally in it masked (run.yaml keeps them for
    the run's own process; a model card is served by the studio and pushed to the Hub)."""

    def urls(obj):
        if isinstance(obj, dict):
            return {k: urls(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [urls(v) for v in obj]
        return public_url(obj)

    return urls(mask_secrets(spec))


def model_card(run: RunDir, ref: ModelRef, evaluation: tuple[str, dict] | None) -> str:
    spec = public_spec(run.read_spec())
    agent = spec.get("agent") or {}
    lines = [
        f"# {agent.get('name', 'agent')} — {ref.label} of run {run.run_id}",
        "",
        f"Trained with AWorld Trainer Studio (engine `{spec.get('engine')}`) from `{Path(ref.base).name}`"
        + (" (LoRA adapter merged into the base)" if ref.adapter else "")
        + ".",
        "",
    ]
    if evaluation:
        eval_id, metrics = evaluation
        lines += [f"## Latest evaluation (`{eval_id}`)", "", "| metric | value |", "|---|---|"]
        lines += [f"| {k} | {v:.4g} |" if isinstance(v, float) else f"| {k} | {v} |" for k, v in metrics.items()]
        lines.append("")
    else:
        lines += ["## Evaluation", "", "Not evaluated yet (`aworld-train eval --run <run>`).", ""]
    lines += [
        "## The run that made it (run.yaml, secrets masked)",
        "",
        "```yaml",
        yaml.safe_dump(spec, sort_keys=False, allow_unicode=True).rstrip(),
        "```",
        "",
    ]
    return "\n".join(lines)


def export_checkpoint(
    run_dir: str | os.PathLike,
    checkpoint: str | None = None,
    out_dir: str | os.PathLike | None = None,
    push_to_hub: str | None = None,
) -> Path:
    """Write the model folder (default ``<run>/exports/<checkpoint>``) and return its path."""
    from ..agents.agent_spec import load_agent

    run = RunDir(run_dir)
    spec = run.read_spec()
    if not spec:
        raise CheckError("run", f"{run.path} has no run.yaml", "give the directory of a run")
    token = next((os.environ[k] for k in TOKEN_ENV if os.environ.get(k)), None)
    if push_to_hub and not token:
        raise CheckError(
            "export",
            f"pushing to {push_to_hub} needs a Hugging Face token",
            "set HF_TOKEN in the environment (it is never written to disk)",
        )
    agent = load_agent(spec["agent"], load_tools=False)
    ref = resolve(checkpoint, agent.model, run)
    out = Path(out_dir) if out_dir else run.path / EXPORTS_DIR / ref.label
    out.mkdir(parents=True, exist_ok=True)
    model, tokenizer = load(ref, device="cpu")
    if ref.adapter:
        model = model.merge_and_unload()
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    (out / "README.md").write_text(model_card(run, ref, latest_evaluation(run, ref.label)), encoding="utf-8")
    (out / "aworld_export.json").write_text(
        json.dumps({"run_id": run.run_id, "model": ref.to_dict()}, indent=1), encoding="utf-8"
    )
    if push_to_hub:
        _push(out, push_to_hub, token)
    return out


def _push(folder: Path, repo: str, token: str) -> None:
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    try:
        api.create_repo(repo, exist_ok=True, private=True)
        api.upload_folder(folder_path=str(folder), repo_id=repo, commit_message="Export from AWorld Trainer Studio")
    except Exception as e:  # noqa: BLE001 - network, auth, repo: say which, never the token
        message = str(e).replace(token, "****")
        raise CheckError(
            "export",
            f"pushing to the Hub repo {repo} failed: {type(e).__name__}: {message[:300]}",
            "check the network, the token's write access and the repo name",
        ) from None

"""The trained letters demo the project ships: how it is trained, written into ``assets/`` and installed as a run.

``assets/models/tiny-letters-trained`` is ``assets/models/tiny-letters`` after :data:`STEPS` GRPO steps of the demo
(``assets/configs/letters_grpo.yaml``, the ``trl`` engine, its seed) — a model folder any tool loads — with
``training/``, the record of the run that made it: its ``run.yaml`` (paths relative to ``assets/``), ``status.json``,
``metrics.jsonl``, ``events.jsonl`` and ``samples.jsonl`` (those of every 25th step).

* :func:`train` — that run, in a runs folder (what ``assets/build_demo.py --only trained`` calls, and the one test
  that shows the demo learns from scratch);
* :func:`ship` — a finished run of it written as the asset;
* :func:`install` — the asset as a finished run in a runs folder (its ``checkpoint-300`` the shipped model), so
  Evaluate, Chat and Export work on a trained demo before anything has trained here;
* :func:`install_if_empty` — that, in a runs folder that holds no run yet: what the studio does as it starts
  (``aworld-studio --no-demo-run`` does not), so a newcomer's first look at Chat or Evaluate has a model to try.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import yaml

from ..runs.rundir import FINISHED, RunDir

ASSETS = Path(__file__).resolve().parent.parent.parent / "assets"
TRAINED = ASSETS / "models" / "tiny-letters-trained"
RECORD = "training"
STEPS = 300
LABEL = "letters demo · trained (shipped)"
#: what a model folder needs (the checkpoint's optimizer, scheduler and RNG states are not shipped)
MODEL_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "chat_template.jinja",
)
RECORD_FILES = ("status.json", "metrics.jsonl", "events.jsonl", "samples.jsonl")
#: the record keeps the samples of every this many steps (and the last): 32 rows a step, 3.5 MB for all 300
SAMPLES_EVERY = 25
#: the run's own paths in its spec and status, written relative to assets/ in the record
_ROOT_MARK = "{assets}"


def modules() -> dict[str, Any]:
    """The demo's modules as ``AgentTrainer`` takes them, trained for :data:`STEPS` steps and saved once at the end."""
    config = yaml.safe_load((ASSETS / "configs" / "letters_grpo.yaml").read_text(encoding="utf-8"))
    config.update(max_steps=STEPS, save_steps=STEPS, eval_steps=0)
    return dict(
        agent=str(ASSETS / "agents" / "letters_agent.yaml"),
        train_dataset=str(ASSETS / "datasets" / "letters_train.jsonl"),
        test_dataset=str(ASSETS / "datasets" / "letters_test.jsonl"),
        reward_func=str(ASSETS / "rewards" / "letter_reward.py") + ":letter_reward",
        config=config,
        train_engine_name="trl",
    )


def train(runs_dir: str | Path) -> RunDir:
    """Train the demo from its base model in ``runs_dir``; returns the finished run."""
    from .agent_trainer import AgentTrainer

    trainer = AgentTrainer(run_path=str(runs_dir), **modules())
    outcome = trainer.train()
    run = trainer.train_processor.run
    if outcome != FINISHED:
        raise RuntimeError(f"the demo's training ended {outcome}: see {run.log_path}")
    return run


def _relative(text: str, run: RunDir) -> str:
    return text.replace(str(run.path), "{run}").replace(str(ASSETS), _ROOT_MARK)


def _absolute(text: str, run: RunDir) -> str:
    return text.replace("{run}", str(run.path)).replace(_ROOT_MARK, str(ASSETS))


def ship(run: RunDir, dest: Path = TRAINED) -> Path:
    """Write the finished ``run`` as the asset ``dest``: the last checkpoint's model files and the run's record."""
    checkpoint = run.checkpoints()[-1]
    if dest.exists():
        shutil.rmtree(dest)
    (dest / RECORD).mkdir(parents=True)
    for name in MODEL_FILES:
        if (checkpoint / name).exists():
            shutil.copyfile(checkpoint / name, dest / name)
    (dest / RECORD / "run.yaml").write_text(_relative(run.file("run.yaml").read_text(encoding="utf-8"), run))
    for name in RECORD_FILES:
        if run.file(name).exists():
            (dest / RECORD / name).write_text(_relative(run.file(name).read_text(encoding="utf-8"), run))
    last = max((int(r.get("step") or 0) for r in run.read_jsonl("samples.jsonl")), default=0)
    kept = [
        r for r in run.read_jsonl("samples.jsonl") if r.get("step") in (last,) or r.get("step", 1) % SAMPLES_EVERY == 0
    ]
    (dest / RECORD / "samples.jsonl").write_text(_relative("".join(json.dumps(r) + "\n" for r in kept), run))
    for f in dest.rglob("*"):
        if f.is_file():
            f.chmod(0o644)
    return dest


def shipped() -> bool:
    return (TRAINED / "model.safetensors").is_file() and (TRAINED / RECORD / "run.yaml").is_file()


def install(runs_dir: str | Path, source: Path = TRAINED) -> RunDir:
    """The shipped trained demo as a finished run under ``runs_dir`` (a fresh run id, labelled :data:`LABEL`): its
    spec names this checkout's demo files, its curves and events are the training's, its checkpoint is the
    shipped model."""
    record = source / RECORD
    spec = yaml.safe_load((record / "run.yaml").read_text(encoding="utf-8").replace(_ROOT_MARK, str(ASSETS)))
    run = RunDir.create(runs_dir, spec["engine"], label="demo-trained")
    checkpoint = run.checkpoints_dir / f"checkpoint-{STEPS}"
    checkpoint.mkdir(parents=True)
    for name in MODEL_FILES:
        if (source / name).exists():
            shutil.copyfile(source / name, checkpoint / name)
    old_id = spec["run_id"]
    for name in ("run.yaml", *RECORD_FILES):
        if (record / name).exists():
            text = _absolute((record / name).read_text(encoding="utf-8"), run).replace(old_id, run.run_id)
            run.file(name).write_text(text, encoding="utf-8")
    status = json.loads(run.file("status.json").read_text(encoding="utf-8"))
    now = time.time()  # listed by when it appeared here; its start and end stay those of the training
    status.update(pid=None, pid_create_time=None, installed_from=str(source), installed=now, created=now)
    run.file("status.json").write_text(json.dumps(status, indent=1), encoding="utf-8")
    run.write_label(LABEL, f"the demo trained {STEPS} steps when this project was built ({source.name})")
    return run


def install_if_empty(runs_dir: str | Path) -> RunDir | None:
    """:func:`install` into ``runs_dir`` when it holds no run (a first start; a folder with runs of its own, or whose
    user deleted the demo run after training their own, is left as it is); None when nothing was added."""
    from ..runs.lifecycle import list_run_dirs

    if not (TRAINED / RECORD / "run.yaml").exists() or list_run_dirs(runs_dir):
        return None
    return install(runs_dir)

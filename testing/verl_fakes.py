"""Test helpers for machines without a GPU (used by tests/test_verl_*.py and the docs' smoke test).

* :data:`FAKE_MAIN_PPO` — a stand-in for ``python -m verl.trainer.main_ppo`` that takes the same
  command line, reads the same saved config, and logs through verl's own ``Tracking`` (console +
  file backends, so the lines are verl's real format), dumps rollouts like verl and writes
  ``global_step_N`` checkpoint folders. Only the GPU work is missing.
* :class:`RayHead` — a throwaway local Ray head on 127.0.0.1 in its own process session, stopped
  by signalling only the processes it started (never ``ray stop``, which stops every Ray on the machine).
"""

from __future__ import annotations

import os
from pathlib import Path


FAKE_MAIN_PPO = r'''
"""Fake verl.trainer.main_ppo: verl's config, logger and dump formats without the GPU work.
Knobs (environment): FAKE_VERL_STEPS (3; trainer.total_training_steps when set), FAKE_VERL_PAUSE seconds per step
(0.2), FAKE_VERL_FAIL=1, FAKE_VERL_DIE_AT=N (SIGKILLs itself after logging step N; not when resuming).
Checkpoints as verl's _save_checkpoint lays them out when trainer.save_freq > 0 (actor/ shards and Hugging Face
config, data.pt last, then latest_checkpointed_iteration.txt); trainer.resume_mode=resume_path resumes as verl's
_load_checkpoint does: the step from the folder's name, validation at that step, training from the next."""
import json, os, shutil, signal, sys, time

args = sys.argv[1:]
config_dir = args[args.index("--config-path") + 1]
config_name = args[args.index("--config-name") + 1]
from omegaconf import OmegaConf

cfg = OmegaConf.load(os.path.join(config_dir, config_name + ".yaml"))
print("[validate_config] fake main_ppo read", config_name, flush=True)
from verl.utils.tracking import Tracking

tracking = Tracking(cfg.trainer.project_name, cfg.trainer.experiment_name, default_backend=list(cfg.trainer.logger))
steps = int(cfg.trainer.total_training_steps or os.environ.get("FAKE_VERL_STEPS", "3"))
pause = float(os.environ.get("FAKE_VERL_PAUSE", "0.2"))
start = 0
if cfg.trainer.resume_mode == "resume_path":
    start = int(cfg.trainer.resume_from_path.split("global_step_")[-1])
    print(f"Resuming from {cfg.trainer.resume_from_path}", flush=True)
die_at = 0 if start else int(os.environ.get("FAKE_VERL_DIE_AT", "0"))
save_freq = int(cfg.trainer.save_freq or -1)


def save(step):
    folder = os.path.join(cfg.trainer.default_local_dir, f"global_step_{step}")
    os.makedirs(os.path.join(folder, "actor", "huggingface"), exist_ok=True)
    gpus = int(cfg.trainer.n_gpus_per_node) * int(cfg.trainer.nnodes)
    for rank in range(gpus):
        with open(os.path.join(folder, "actor", f"model_world_size_{gpus}_rank_{rank}.pt"), "wb") as f:
            f.write(b"fake shard")
    shutil.copy(os.path.join(cfg.actor_rollout_ref.model.path, "config.json"), os.path.join(folder, "actor", "huggingface"))
    with open(os.path.join(folder, "data.pt"), "w") as f:
        json.dump({"step": step}, f)
    with open(os.path.join(cfg.trainer.default_local_dir, "latest_checkpointed_iteration.txt"), "w") as f:
        f.write(str(step))


tracking.log({"val-core/fake/reward/mean@1": 0.1 + 0.01 * start}, step=start)
for step in range(start + 1, steps + 1):
    time.sleep(pause)
    if cfg.trainer.rollout_data_dir:
        os.makedirs(cfg.trainer.rollout_data_dir, exist_ok=True)
        with open(os.path.join(cfg.trainer.rollout_data_dir, f"{step}.jsonl"), "w") as f:
            for i in range(3):
                f.write(json.dumps({"input": "Say the letter C:", "output": "C", "gts": "C", "score": 1.0,
                                    "step": step, "reward_letter_reward": 1.0}) + "\n")
    tracking.log({"critic/score/mean": 0.1 * step, "actor/pg_loss": -0.01 * step, "actor/lr": 1e-6,
                  "response_length/mean": 1.5, "timing_s/step": pause, "training/global_step": step}, step=step)
    if save_freq > 0 and (step % save_freq == 0 or step == steps):
        save(step)
    elif step == steps:
        os.makedirs(os.path.join(cfg.trainer.default_local_dir, f"global_step_{step}"), exist_ok=True)
    if step == die_at:
        os.kill(os.getpid(), signal.SIGKILL)
if os.environ.get("FAKE_VERL_FAIL"):
    raise ValueError("fake verl failure: bad value in the batch")
print("fake main_ppo done", flush=True)
'''


def write_fake_main_ppo(folder: str | os.PathLike) -> Path:
    path = Path(folder) / "fake_main_ppo.py"
    path.write_text(FAKE_MAIN_PPO, encoding="utf-8")
    return path

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
Knobs (environment): FAKE_VERL_STEPS (3), FAKE_VERL_PAUSE seconds per step (0.2), FAKE_VERL_FAIL=1."""
import json, os, sys, time

args = sys.argv[1:]
config_dir = args[args.index("--config-path") + 1]
config_name = args[args.index("--config-name") + 1]
from omegaconf import OmegaConf

cfg = OmegaConf.load(os.path.join(config_dir, config_name + ".yaml"))
print("[validate_config] fake main_ppo read", config_name, flush=True)
from verl.utils.tracking import Tracking

tracking = Tracking(cfg.trainer.project_name, cfg.trainer.experiment_name, default_backend=list(cfg.trainer.logger))
steps = int(os.environ.get("FAKE_VERL_STEPS", "3"))
pause = float(os.environ.get("FAKE_VERL_PAUSE", "0.2"))
tracking.log({"val-core/fake/reward/mean@1": 0.1}, step=0)
for step in range(1, steps + 1):
    time.sleep(pause)
    if cfg.trainer.rollout_data_dir:
        os.makedirs(cfg.trainer.rollout_data_dir, exist_ok=True)
        with open(os.path.join(cfg.trainer.rollout_data_dir, f"{step}.jsonl"), "w") as f:
            for i in range(3):
                f.write(json.dumps({"input": "Say the letter C:", "output": "C", "gts": "C", "score": 1.0,
                                    "step": step, "reward_letter_reward": 1.0}) + "\n")
    tracking.log({"critic/score/mean": 0.1 * step, "actor/pg_loss": -0.01 * step, "actor/lr": 1e-6,
                  "response_length/mean": 1.5, "timing_s/step": pause, "training/global_step": step}, step=step)
    if step == steps:
        os.makedirs(os.path.join(cfg.trainer.default_local_dir, f"global_step_{step}"), exist_ok=True)
if os.environ.get("FAKE_VERL_FAIL"):
    raise ValueError("fake verl failure: bad value in the batch")
print("fake main_ppo done", flush=True)
'''


def write_fake_main_ppo(folder: str | os.PathLike) -> Path:
    path = Path(folder) / "fake_main_ppo.py"
    path.write_text(FAKE_MAIN_PPO, encoding="utf-8")
    return path

"""Helpers for this project's tests and benchmarks (never imported by the product packages).

* :mod:`testing.studio` — the studio in a subprocess on a free port, stand-in runs, Chromium
* :mod:`testing.fake_run` — a stand-in run process (no torch) writing a run directory
* :mod:`testing.verl_fakes` — a fake ``verl.trainer.main_ppo`` and a throwaway local Ray head
* :mod:`testing.worker_tasks` — extra check-worker tasks (echo, sleep, crash) for worker tests
* :mod:`testing.waiting` — ``wait_for``, the one polling helper
* :mod:`testing.openai_server` — a tiny OpenAI-compatible chat-completions server (LLM judge tests)
* :mod:`testing.gsm8k` — a verl-format GSM8K-style parquet; :mod:`testing.grpo_rewards` — call reward
  functions exactly as GRPOTrainer does
* :mod:`testing.reward_model` — a tiny sequence-classification reward model built locally
"""

from engines.isolation.processes import free_port  # the one free_port (the trl engine's rendezvous uses it too)

__all__ = ["free_port"]

"""Build TRL's trainer from what a checked ``TrlProcessor`` hands over (:class:`TrainerInputs`): the mode's config
(every TRL setting), the model by path, LoRA / quantization from TRL's ModelConfig helpers, the reward functions
wrapped to record samples, the agent's tools, and the run-directory callback."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable

from ..runs.best_checkpoint import tracker_from_config
from ..runs.rundir import METRICS_FILE
from . import arguments
from .callbacks import ANSWER_COLUMN, RunDirCallback, SampleRecorder, ToolServerCallback
from .peft_setup import peft_and_quantization


@dataclass(frozen=True)
class TrainerInputs:
    """Everything :func:`build_trainer` needs of a checked run: its effective config, run directory, agent,
    reward, model, tokenizer, the training rows in TRL's shape, and the held-out scoring during training."""

    cfg: dict[str, Any]
    run: Any  # engines.runs.rundir.RunDir
    agent: Any  # engines.agents.agent_spec.AgentSpec
    reward: Any  # engines.rewards.Reward | None
    model_path: str
    tokenizer: Any
    rows: Callable[[str], Any]  # mode ("grpo" | "sft") -> the training dataset in TRL's shape
    tool_iterations: int | None
    evaluate: Callable[[Any], dict[str, float]] | None


def is_main_rank() -> bool:
    return int(os.environ.get("RANK", "0")) == 0


def build_trainer(p: TrainerInputs, tracker_names: list[str]) -> tuple[Any, RunDirCallback]:
    from trl import GRPOTrainer, SFTTrainer

    from .epoch_sampler import use_epoch_seeded_sampler

    from ..runs import trackers

    cfg, run, agent = p.cfg, p.run, p.agent
    main = is_main_rank()
    grpo = cfg["mode"] == "grpo"
    args = arguments.trainer_config(
        cfg,
        str(run.checkpoints_dir),
        reward_weights=p.reward.weights if grpo else None,
        tool_iterations=p.tool_iterations if grpo else None,
        report_to=trackers.library_report_to(tracker_names) if main else "none",
        run_name=run.run_id,
    )
    peft_config, quantization_config = peft_and_quantization(arguments.model_config(cfg, p.model_path))
    evaluate = p.evaluate if main else None
    extra = dict(peft_config=peft_config, quantization_config=quantization_config)
    # a resumed run's best so far and early stopping's count, from its rows up to the checkpoint (core/resume.py)
    best = tracker_from_config(cfg, run.read_jsonl(METRICS_FILE) if cfg.get("resume_from_checkpoint") else ())
    if grpo:
        callbacks: list[Any] = []
        if agent.mcp_tools:  # one MCP session per server for this process, reused by every rollout
            from ..tools.mcp_client import default_pool

            pool = default_pool()
            pool.on_event = run.event
            callbacks.append(ToolServerCallback(pool))
        tools = agent.tool_callables() if agent.has_tools else None
        recorder = SampleRecorder(run, p.reward, cfg["samples_per_step"] if main else 0, agent.tool_servers)
        funcs = recorder.wrap(p.reward.trl_functions(ANSWER_COLUMN))
        callback = RunDirCallback(run, recorder, evaluate, cfg["eval_steps"], tracker_names=tracker_names, best=best)
        trainer = GRPOTrainer(
            model=p.model_path,
            reward_funcs=funcs,
            args=args,
            train_dataset=p.rows("grpo"),
            processing_class=p.tokenizer,
            callbacks=[callback, *callbacks],
            tools=tools,
            **extra,
        )
        # whole prompt groups with TRL's own advantages (callbacks.SampleRecorder); TRL 1.16's scoring step
        recorder.group_size = trainer.num_generations
        trainer._generate_and_score_completions = recorder.wrap_scoring(trainer._generate_and_score_completions)
        use_epoch_seeded_sampler(trainer)  # a resumed run's prompts are the uninterrupted run's (epoch_sampler.py)
    else:
        callback = RunDirCallback(run, None, evaluate, cfg["eval_steps"], tracker_names=tracker_names, best=best)
        trainer = SFTTrainer(
            model=p.model_path,
            args=args,
            train_dataset=p.rows("sft"),
            processing_class=p.tokenizer,
            callbacks=[callback],
            **extra,
        )
    resumable_on_cpu_ranks(trainer.args)
    return trainer, callback


def resumable_on_cpu_ranks(args: Any) -> None:
    """Transformers 5.10 loads a checkpoint's optimizer state with ``map_location=args.device`` when several processes
    train, and Accelerate's device for a CPU rank is ``cpu:0``, a location ``torch.load`` refuses ("don't know how to
    restore data location of torch.storage.UntypedStorage (tagged with cpu:0)"): a run of several CPU processes could
    not resume. On CPU the device is plain ``cpu`` — the same memory. tests/test_resume.py checks that torch still
    refuses ``cpu:0`` (remove this when it stops) and that two processes resume step for step."""
    import torch

    if args.device.type == "cpu" and args.device.index is not None:
        args.__dict__["_setup_devices"] = torch.device("cpu")  # TrainingArguments.device's cached value

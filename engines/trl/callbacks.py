"""TRL callbacks and reward wrappers that write the run directory while training runs."""

from __future__ import annotations

import os
import time
from typing import Any, Callable

from transformers import TrainerCallback

from ..runs.run_summary import measured_summary
from ..rewards import Reward
from ..runs.best_checkpoint import BestTracker, record_best
from ..runs.sample_groups import grouped_rows, step_summary
from ..runs.causes import EARLY_STOPPED
from ..runs.rundir import STOPPING, RunDir, step_log_line
from ..runs.tensorboard_log import ScalarWriter
from .metrics import canonical_metrics, memory_metrics

ANSWER_COLUMN = "_ref_answer"


class SampleRecorder:
    """Wraps the per-term TRL reward functions and TRL's scoring so that, once a step's batch is scored, the
    first ``per_step`` prompt groups go whole to samples.jsonl (:mod:`..runs.sample_groups`): every
    completion (prompt, full trajectory, each reward term, the total, TRL's own advantage, the group id), and
    the whole step's group statistics. The advantages are those TRL computed (``scale_rewards``,
    ``multi_objective_aggregation``), read from its scoring's output; on the main process its slice is the
    batch's first completions, so group ``i // num_generations`` is TRL's group."""

    def __init__(
        self,
        run: RunDir,
        reward: Reward,
        per_step: int,
        tool_servers: dict[str, str] | None = None,
        group_size: int = 1,
    ):
        self.run, self.reward, self.per_step = run, reward, per_step
        self.group_size = group_size  # TRL's num_generations (build.py sets it from the trainer)
        self.tool_servers = dict(tool_servers or {})  # MCP tool name -> server: labelled in trajectories
        self.step = 0
        self._batch: dict[str, list[float]] = {}
        self._pending: dict | None = None  # the scored batch, until TRL's advantages for it are known
        self._written_step = -1

    def wrap(self, funcs: list[Callable]) -> list[Callable]:
        wrapped = []
        for term, fn in zip(self.reward.terms, funcs):

            def scored(prompts, completions, _fn=fn, _name=term.name, **kwargs):
                values = _fn(prompts, completions, **kwargs)
                self._collect(_name, prompts, completions, values, kwargs)
                return values

            scored.__name__ = fn.__name__
            wrapped.append(scored)
        return wrapped

    def wrap_scoring(self, score: Callable) -> Callable:
        """TRL's ``_generate_and_score_completions``, writing the pending batch with the advantages it returns."""

        def generate_and_score(*args, **kwargs):
            out = score(*args, **kwargs)
            if self._pending is not None:
                pending, self._pending = self._pending, None
                advantages = out.get("advantages") if isinstance(out, dict) else None
                self._write(pending, advantages.detach().float().cpu().tolist() if advantages is not None else None)
            return out

        return generate_and_score

    def _collect(self, name, prompts, completions, values, kwargs) -> None:
        self._batch[name] = list(values)
        if len(self._batch) < len(self.reward.terms):
            return
        batch, self._batch = self._batch, {}
        if self.per_step <= 0 or self._written_step == self.step:
            return
        self._written_step = self.step
        answers = kwargs.get(ANSWER_COLUMN) or [None] * len(completions)
        self._pending = {"step": self.step, "batch": batch, "prompts": prompts, "completions": completions}
        self._pending["answers"] = answers

    def _write(self, pending: dict, advantages: list | None) -> None:
        batch, prompts, completions = pending["batch"], pending["prompts"], pending["completions"]
        totals = []
        for i in range(len(completions)):
            terms = [batch[t.name][i] for t in self.reward.terms]
            scored = [v for v in terms if v is not None]
            totals.append(sum(t.weight * (v or 0.0) for t, v in zip(self.reward.terms, terms)) if scored else None)
        size = max(1, self.group_size)
        keep = min(self.per_step, len(completions) // size) * size
        now = time.time()
        rows = []
        for i in range(keep):
            row = {
                "step": pending["step"],
                "time": now,
                "prompt": prompts[i],
                "completion": label_servers(completions[i], self.tool_servers),
                "answer": pending["answers"][i],
                "rewards": {n: batch[n][i] for n in batch},
                "reward": totals[i],
            }
            if advantages is not None and i < len(advantages):
                a = advantages[i]
                row["advantage"] = a[0] if isinstance(a, list) else a  # (B, T) in subclasses: one per completion
            rows.append(row)
        self.run.append_samples(grouped_rows(rows, size, self.per_step, step_summary(totals, size)))


def label_servers(messages: Any, servers: dict[str, str]) -> Any:
    """A copy of a trajectory whose MCP tool calls and tool results carry ``server`` (the MCP server's name)."""
    if not servers or not isinstance(messages, list):
        return messages
    out = []
    for m in messages:
        if not isinstance(m, dict):
            out.append(m)
            continue
        m = dict(m)
        if m.get("role") == "tool" and m.get("name") in servers:
            m["server"] = servers[m["name"]]
        if m.get("tool_calls"):
            calls = []
            for tc in m["tool_calls"]:
                name = (tc.get("function") or {}).get("name") if isinstance(tc, dict) else None
                calls.append({**tc, "server": servers[name]} if name in servers else tc)
            m["tool_calls"] = calls
        out.append(m)
    return out


class ToolServerCallback(TrainerCallback):
    """Ends training at the step boundary after an MCP server died and could not be started again
    (TRL hands every tool exception back to the model, so the failure is raised here)."""

    def __init__(self, pool):
        self.pool = pool

    def on_step_end(self, args, state, control, **kw):
        if self.pool.fatal is not None:
            raise self.pool.fatal


def stop_agreed(asked: bool, device) -> bool:
    """Whether any process of the run was asked to stop (every rank must leave the loop at the
    same step, or the others wait forever in the next collective)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return asked
    import torch

    flag = torch.tensor([1.0 if asked else 0.0], device=device)
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return bool(flag.item() > 0)


class RunDirCallback(TrainerCallback):
    """Metrics (also as TensorBoard scalars), status (heartbeat, step/total), checkpoint events,
    stop requests, evaluation, tracker links. With several processes only the main one writes;
    all of them read the STOP file and agree on it. :meth:`close` ends the TensorBoard file (the
    processor calls it whatever way training ends)."""

    def __init__(
        self,
        run: RunDir,
        recorder: SampleRecorder | None = None,
        evaluate: Callable[[Any], dict[str, float]] | None = None,
        eval_steps: int = 0,
        tracker_names: list[str] | None = None,
        best: BestTracker | None = None,
    ):
        self.run, self.recorder = run, recorder
        self.best = best or BestTracker()
        self._best_pending: int | None = None  # the step of an improving evaluation, until its checkpoint
        self.early_stopped = False
        self._tensorboard: ScalarWriter | None = None
        self.evaluate, self.eval_steps = evaluate, eval_steps
        self.tracker_names = list(tracker_names or [])
        self.stopped = False
        self._t0 = time.time()
        self._last_log_t = None
        self._last_log_step = self._first_step = 0

    @property
    def tensorboard(self) -> ScalarWriter:
        if self._tensorboard is None:
            self._tensorboard = ScalarWriter(self.run.tensorboard_dir)
        return self._tensorboard

    def on_train_begin(self, args, state, control, **kw):
        self._t0 = self._last_log_t = time.time()
        self._last_log_step = self._first_step = state.global_step
        if not state.is_world_process_zero:
            return
        self.run.write_status(step=state.global_step, total_steps=state.max_steps, train_started=self._t0)
        self._record_tracker_links()
        if self.evaluate is not None and state.global_step == 0:
            self._eval(state, kw.get("model"))

    def _record_tracker_links(self) -> None:
        from ..runs import trackers

        try:
            links, ids = trackers.links(self.tracker_names), trackers.run_ids(self.tracker_names)
        except Exception as e:  # noqa: BLE001 - a link is a convenience, never a reason to fail
            links, ids = {}, {}
            self.run.event("tracker", error=f"{type(e).__name__}: {e}")
        if links:
            self.run.write_status(trackers=links, tracker_ids=ids)
            for name, url in links.items():
                self.run.event("tracker", tracker=name, url=url)

    def on_step_begin(self, args, state, control, **kw):
        if self.recorder is not None:
            self.recorder.step = state.global_step + 1

    def on_log(self, args, state, control, logs=None, **kw):
        if not state.is_world_process_zero:
            return
        logs = logs or {}
        if "train_runtime" in logs:  # the trainer's closing summary: what this process measured (run_summary.py)
            self.run.event(
                "summary", **measured_summary(logs, state.global_step - self._first_step, time.time() - self._t0)
            )
            return
        now = time.time()
        values = canonical_metrics(logs)
        values.update(memory_metrics(args.device))
        steps = max(1, state.global_step - self._last_log_step)
        if "step_time" not in values and self._last_log_t is not None:
            values["step_time"] = (now - self._last_log_t) / steps
        self._last_log_t, self._last_log_step = now, state.global_step
        self.run.append_metrics(state.global_step, values, when=now)
        self.tensorboard.add(state.global_step, logs, when=now)
        step_time = values.get("step_time")
        print(
            step_log_line(state.global_step, state.max_steps, values, 1.0 / step_time if step_time else None),
            flush=True,
        )
        self.run.write_status(
            step=state.global_step,
            total_steps=state.max_steps,
            elapsed=now - self._t0,
            last_reward=values.get("reward"),
            last_loss=values.get("loss"),
            durable=False,
        )

    def on_step_end(self, args, state, control, **kw):
        if self.evaluate is not None and self.eval_steps and state.global_step % self.eval_steps == 0:
            self._eval(state, kw.get("model"))
            if self._best_pending == state.global_step:
                control.should_save = True  # the best model so far gets its checkpoint now
        early = self.best.exhausted and not self.early_stopped
        if not self.stopped and not self.early_stopped and stop_agreed(self.run.stop_requested() or early, args.device):
            control.should_training_stop = True
            control.should_save = True
            if early:
                self.early_stopped = True
                self.run.write_status(cause=EARLY_STOPPED, step=state.global_step)
                self.run.event(
                    "early_stopped",
                    step=state.global_step,
                    metric=self.best.metric,
                    best_value=self.best.best_value,
                    best_step=self.best.best_step,
                    patience=self.best.patience,
                )
            else:
                self.stopped = True
                if state.is_world_process_zero:
                    self.run.write_status(state=STOPPING, step=state.global_step)
                    self.run.event("stop_requested", step=state.global_step)
        if state.global_step >= state.max_steps:
            control.should_save = True

    def on_save(self, args, state, control, **kw):
        if not state.is_world_process_zero:
            return
        path = f"{args.output_dir}/checkpoint-{state.global_step}"
        self.run.event("checkpoint", step=state.global_step, path=path)
        self.run.write_status(last_checkpoint=path)
        if self._best_pending == state.global_step:
            self._record_best(state, path)

    def on_train_end(self, args, state, control, **kw):
        if self.evaluate is not None and not (self.eval_steps and state.global_step % self.eval_steps == 0):
            self._eval(state, kw.get("model"))
            path = f"{args.output_dir}/checkpoint-{state.global_step}"
            if self._best_pending == state.global_step and os.path.isdir(path):  # the final save is this step's
                self._record_best(state, path)

    def _record_best(self, state, path: str) -> None:
        """The checkpoint at ``path`` is the best so far: Transformers keeps it from save_total_limit's pruning."""
        state.best_model_checkpoint = path
        record_best(self.run, os.path.basename(path), state.global_step, self.best.metric, self.best.best_value)
        self._best_pending = None

    def _eval(self, state, model) -> None:
        if model is None:
            return
        values = self.evaluate(model)
        if values:
            self.run.append_metrics(state.global_step, values)
            self.tensorboard.add(state.global_step, values)
            if self.best.observe(state.global_step, values) and state.global_step > 0:
                self._best_pending = state.global_step

    def close(self) -> None:
        if self._tensorboard is not None:
            self._tensorboard.close()

#!/usr/bin/env python
"""A training step's cost with the live diagnoses on vs off, within ONE run (target: ratio ≥ 0.99).

    python -m benchmarks.diagnostics_overhead [--pairs 20] [--phase 6] [--poll 1.0]

Trains the shipped letters demo on the trl engine in this process (a long ``max_steps``) with the
diagnoses watcher of engines/diagnostics (the same class a run uses, polling every ``--poll`` s), and
alternates phases in an A-B-B-A order: ``on`` (the watcher reads the run directory and applies every
rule at its pace) and ``off`` (the watcher thread sleeps). Steps/s per phase come from the run's own
metrics.jsonl timestamps (whole step intervals inside the phase). Reported: ``ratio`` (steps/s on ÷
off) with a 95 % bootstrap interval over the pairs, and ``median_step_ratio`` (the median step's
duration off ÷ on); and, independent of the machine's load, the watcher thread's own CPU time per poll
and its share of one core while on; and the steady-state CPU per poll with a full history
(``steady_poll_cpu_ms``), whose share of the poll interval bounds the ratio from below when the watcher
competes for a core (``bound_from_poll_cost`` = 1 − that share). Writes
benchmarks/results/diagnostics_overhead.json.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from pathlib import Path

import yaml

from benchmarks.results_file import bootstrap_ci, write_result

ROOT = Path(__file__).resolve().parent.parent
MIN_STEPS = 30  # steps per mode below which the ratio is noise (a busy machine): not reported


def phase_steps(rows: list[dict], t0: float, t1: float) -> list[float]:
    """Durations of the whole step intervals inside [t0, t1]."""
    times = [r["time"] for r in rows if "loss" in r and t0 <= r["time"] <= t1]
    return [b - a for a, b in zip(times, times[1:])]


def steady_poll_cpu_ms(polls: int = 200) -> dict[str, float]:
    """The watcher's CPU time per poll once it holds its full history (KEEP_ROWS rows of the recorded
    demo's keys) and one new row arrives per poll: the steady state of a long run."""
    import json

    from engines.diagnostics.watcher import KEEP_ROWS, Diagnoser
    from engines.runs.rundir import RunDir

    recorded = [json.loads(x) for x in (ROOT / "tests/recorded/letters_demo_metrics.jsonl").read_text().splitlines()]
    recorded = [r for r in recorded if "reward" in r]
    run = RunDir.create(tempfile.mkdtemp(prefix="diag-poll-"), "trl")
    run.write_spec({"config": {}})
    diagnoser = Diagnoser(run, log=lambda line: None)
    for step in range(1, KEEP_ROWS + 1):
        run.append_metrics(step, {**recorded[step % len(recorded)], "step": step})
    diagnoser.poll()
    cpu = []
    for step in range(KEEP_ROWS + 1, KEEP_ROWS + 1 + polls):
        run.append_metrics(step, {**recorded[step % len(recorded)], "step": step})
        c0 = time.thread_time()
        diagnoser.poll()
        cpu.append(1000 * (time.thread_time() - c0))
    return {"median": round(statistics.median(cpu), 3), "max": round(max(cpu), 3), "rows_kept": KEEP_ROWS}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--pairs", type=int, default=20)
    p.add_argument("--phase", type=float, default=6.0)
    p.add_argument("--poll", type=float, default=1.0)
    a = p.parse_args(argv)

    import engines.core.standard as standard
    from engines import AgentTrainer
    from engines.diagnostics.watcher import DiagnosisWatcher

    on = threading.Event()

    class Switchable(DiagnosisWatcher):
        cpu_s, polls = 0.0, 0  # the watcher thread's own CPU time in its polls (load-independent)

        def _loop(self):
            while not self._stop.wait(self.diagnoser.limits.poll_seconds):
                if on.is_set():
                    c0 = time.thread_time()
                    self._poll()
                    self.cpu_s += time.thread_time() - c0
                    self.polls += 1

    watchers: list[Switchable] = []
    standard.start_diagnoses = lambda run: watchers.append(Switchable(run).start()) or watchers[-1]
    cfg = yaml.safe_load((ROOT / "assets/configs/letters_grpo.yaml").read_text())
    cfg.update(
        max_steps=100_000,
        save_steps=100_000,
        eval_steps=0,
        diagnostics={**(cfg.get("diagnostics") or {}), "poll_seconds": a.poll},
    )
    trainer = AgentTrainer(
        agent=str(ROOT / "assets/agents/letters_agent.yaml"),
        train_dataset=str(ROOT / "assets/datasets/letters_train.jsonl"),
        reward_func=str(ROOT / "assets/rewards/letter_reward.py") + ":letter_reward",
        config=cfg,
        run_path=tempfile.mkdtemp(prefix="diag-bench-"),
        train_engine_name="trl",
    )
    run = trainer.train_processor.run
    worker = threading.Thread(target=trainer.train, daemon=True)
    worker.start()
    while not any("loss" in r for r in run.read_jsonl("metrics.jsonl")):  # warm: the first steps are logged
        time.sleep(1.0)
    time.sleep(a.phase)
    phases = []
    for i in range(a.pairs):
        for mode in ("on", "off") if i % 2 == 0 else ("off", "on"):
            (on.set if mode == "on" else on.clear)()
            t0 = time.time()
            time.sleep(a.phase)
            phases.append({"mode": mode, "t0": t0, "t1": time.time()})
    run.request_stop("benchmark done")
    worker.join(timeout=300)
    rows = run.read_jsonl("metrics.jsonl")
    for ph in phases:
        ph["step_s"] = phase_steps(rows, ph["t0"], ph["t1"])

    def rate(sel: list[dict]) -> float:
        steps = [s for ph in sel for s in ph["step_s"]]
        return len(steps) / sum(steps) if steps else 0.0

    pairs = [phases[i : i + 2] for i in range(0, len(phases), 2)]

    def ratio(ps: list[list[dict]]) -> float:
        flat = [ph for pair in ps for ph in pair]
        off = rate([ph for ph in flat if ph["mode"] == "off"])
        return rate([ph for ph in flat if ph["mode"] == "on"]) / off if off else 0.0

    med = {
        m: statistics.median([s for ph in phases if ph["mode"] == m for s in ph["step_s"]] or [0.0])
        for m in ("on", "off")
    }
    counts = {m: sum(len(ph["step_s"]) for ph in phases if ph["mode"] == m) for m in ("on", "off")}
    resolvable = min(counts.values()) >= MIN_STEPS
    poll = steady_poll_cpu_ms()
    summary = {
        "ratio": round(ratio(pairs), 4) if resolvable else None,
        "ratio_ci95": bootstrap_ci(pairs, ratio) if resolvable else None,
        "ratio_note": None
        if resolvable
        else f"fewer than {MIN_STEPS} steps per mode (the machine's load): "
        "no ratio; see steady_poll_cpu_ms and its bound",
        "steady_poll_cpu_ms": poll,
        "bound_from_poll_cost": round(1 - poll["median"] / 1000 / a.poll, 5),
        "median_step_ratio": round(med["off"] / med["on"], 4) if med["on"] else None,
        "steps_per_s": {m: round(rate([ph for ph in phases if ph["mode"] == m]), 3) for m in ("on", "off")},
        "steps": counts,
        "pairs": a.pairs,
        "phase_s": a.phase,
        "poll_s": a.poll,
        "watcher_cpu_ms_per_poll": round(1000 * watchers[0].cpu_s / max(1, watchers[0].polls), 3),
        "watcher_share_of_a_core": round(
            watchers[0].cpu_s / max(1e-9, sum(ph["t1"] - ph["t0"] for ph in phases if ph["mode"] == "on")), 6
        ),
        "metric_rows": len(rows),
        "diagnoses_written": [e["code"] for e in run.read_jsonl("events.jsonl") if e.get("type") == "diagnosis"],
    }
    out = write_result("diagnostics_overhead.json", summary)
    print(summary, "\n", out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

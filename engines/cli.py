"""Command line: ``aworld-train`` or ``python -m engines {check,train,run,runs,stop,engines}``.

    python -m engines check --agent A.yaml --train train.jsonl --test test.jsonl --reward exact_match --engine trl
    python -m engines train ...same arguments... [--run-path runs]
    python -m engines run runs/<run_id>          # what the studio launches, detached
    python -m engines rerun runs/<run_id>        # the same spec again, as a new run
    python -m engines runs [--runs-dir runs]
    python -m engines stop runs/<run_id> [--kill-after 30]
    python -m engines engines
    python -m engines setup swift [--progress-file F]   # an engine's own environment (ms-swift's virtualenv)
    python -m engines probe ...same arguments... [--prompts 64 --samples K --write-filtered F]   # before a run

``--reward`` may repeat; ``NAME@WEIGHT`` sets a weight (``--reward exact_match@1 --reward answer_format@0.2``);
``REF(k=v, ...)`` gives a factory its arguments; ``{judge: {...}}`` (inline YAML) or a rewards .yaml file.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
import time

from .core.registry import registered_engines
from .runs.causes import Cause
from .module_args import add_module_args, modules_from_args, parse_columns, parse_reward
from .results.check_result import ERROR, CheckError, format_table


def cmd_check(a: argparse.Namespace) -> int:
    from .core.isolated_checks import check_all_isolated

    results = check_all_isolated(modules_from_args(a), a.check_timeout)  # user code never runs in this process
    if a.json:
        print(json.dumps([r.to_dict() for r in results], default=str, indent=1))
    else:
        print(format_table(results))
        memory = next(
            (r.details.get("memory") for r in results if r.module == "config" and r.details.get("memory")), None
        )
        if memory:
            print(format_memory(memory))
    return 1 if any(r.status == ERROR for r in results) else 0


def format_memory(memory: dict) -> str:
    """The memory estimate an engine reported with its config check, one line per part."""
    parts = ", ".join(f"{k.replace('_', ' ')} {v:.2f}" for k, v in (memory.get("parts_gb") or {}).items() if v)
    return f"\nmemory estimate: {memory.get('summary')}\n  per process, GB: {parts}"


class _Progress(threading.Thread):
    """Renders status.json of the run being trained as a one-line progress bar on stderr."""

    def __init__(self, trainer):
        super().__init__(daemon=True)
        self.trainer, self.stop_flag = trainer, threading.Event()

    def run(self) -> None:
        from tqdm import tqdm

        bar = None
        while not self.stop_flag.wait(0.5):
            st = self.trainer.train_processor.run.read_status()
            total, step = st.get("total_steps"), st.get("step")
            if total and bar is None:
                bar = tqdm(total=total, desc=st.get("run_id", "train"), unit="step", file=sys.stderr)
            if bar is not None and step is not None:
                bar.n = step
                reward, loss = st.get("last_reward"), st.get("last_loss")
                bar.set_postfix(
                    {k: f"{v:.3f}" for k, v in (("reward", reward), ("loss", loss)) if v is not None}, refresh=True
                )
        if bar is not None:
            st = self.trainer.train_processor.run.read_status()
            bar.n = st.get("step") or bar.n
            bar.close()


def cmd_train(a: argparse.Namespace) -> int:
    from .core.agent_trainer import AgentTrainer

    try:
        trainer = AgentTrainer(**modules_from_args(a).as_kwargs(), run_path=a.run_path, check_timeout_s=a.check_timeout)
    except CheckError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    run = trainer.train_processor.run
    if a.name or a.note:
        run.write_label(a.name or "", a.note or "")
    print(f"run directory: {run.path}", file=sys.stderr)
    progress = _Progress(trainer)
    progress.start()
    try:
        outcome = trainer.train()
    except Exception as e:
        progress.stop_flag.set()
        progress.join()
        st = run.read_status()
        print(f"\ntraining failed ({st.get('cause', Cause.UNKNOWN)}): {e}", file=sys.stderr)
        return 1
    progress.stop_flag.set()
    progress.join()
    print(f"{outcome}: {run.path}", file=sys.stderr)
    return 0


def cmd_run(a: argparse.Namespace) -> int:
    from .isolation.privileges import without_privileges
    from .runs.rundir import RunDir

    from .isolation.process_tree import owning_what_it_starts

    run = RunDir(a.run_dir)
    # the run's user code (rewards, tools) cannot read other processes, nor write but in the runs folder (its run,
    # the slot's lock, the fallback status) (privileges.py), nor outlive the run (a daemon its reward started)
    with without_privileges([run.path.resolve().parent]), owning_what_it_starts():
        return execute_run(run)


def cmd_rerun(a: argparse.Namespace) -> int:
    """A new run directory with an earlier run's exact spec (a fresh run id), then train it."""
    from .core.prepare import rerun_dir

    try:
        run = rerun_dir(a.run_dir, a.runs_dir)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"run directory: {run.path}", file=sys.stderr)
    if a.detach:
        return _start_detached(run)
    return execute_run(run)


def _start_detached(run) -> int:
    """``--detach``: the prepared run started in the background, and how to follow it."""
    from .runs.lifecycle import spawn_run

    print(
        f"started in the background (pid {spawn_run(run.path)}); follow it with: "
        f"{shell_command('runs', '--runs-dir', str(run.path.parent))}",
        file=sys.stderr,
    )
    return 0


def cmd_resume(a: argparse.Namespace) -> int:
    """A stopped, failed or finished run continues from a checkpoint, in its own run directory (core/resume.py)."""
    from .core.resume import prepare_resume
    from .runs.rundir import RunDir

    try:
        r = prepare_resume(a.run_dir, a.checkpoint, a.max_steps)
    except CheckError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    run = RunDir(a.run_dir)
    print(
        f"resuming {r['run_id']} from {r['checkpoint']} (step {r['step']} of {r['max_steps']}), attempt {r['attempt']}",
        file=sys.stderr,
    )
    if a.detach:
        return _start_detached(run)
    return cmd_run(argparse.Namespace(run_dir=str(run.path)))


def shell_command(*args: str) -> str:
    """This CLI as a shell command that works without an activated virtualenv: the console script
    beside the running interpreter, else the interpreter itself with ``-m engines``."""
    import shlex
    from pathlib import Path

    script = Path(sys.executable).parent / "aworld-train"
    head = [str(script)] if script.exists() else [sys.executable, "-m", "engines"]
    return " ".join(shlex.quote(x) for x in [*head, *args])


def execute_run(run) -> int:
    """Execute a prepared run directory. A run that takes the machine's training slot waits for it
    first, as this small process (before the engine, torch or the model are loaded)."""
    from .core.prepare import trainer_from_run_dir
    from .runs.rundir import FAILED, SPEC_FILE, STOPPED
    from .runs.lifecycle import Slot, wait_for_slot

    if not (run.path / SPEC_FILE).is_file():  # no spec, no run: write nothing there (it would be listed)
        print(
            f"error: {run.path} has no {SPEC_FILE}, so it is not a prepared run; nothing was written to it "
            f"(`aworld-train train` prepares a run and trains it)",
            file=sys.stderr,
        )
        return 2
    slot = None
    if run.read_spec().get("machine_slot", True):
        slot = Slot(run.path.parent)
        if not wait_for_slot(run, slot):
            run.mark_process(STOPPED, ended=time.time())
            run.event("stopped", message="stopped while queued")
            return 0
    from .core.standard import check_error_cause

    try:
        trainer = trainer_from_run_dir(run.path)
    except CheckError as e:
        run.mark_process(FAILED, cause=check_error_cause(e), error=str(e), ended=time.time())
        run.event("failed", cause=check_error_cause(e), message=str(e))
        print(f"error: {e}", file=sys.stderr)
        if slot is not None:
            slot.release()
        return 2
    trainer.train_processor.held_slot = slot
    try:
        trainer.train()
    except Exception as e:  # already recorded in status.json/events.jsonl by the engine
        print(f"training failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


def cmd_probe(a: argparse.Namespace) -> int:
    """The setup checked, then its base model probed (engines/probe/): the report printed (or as JSON), stored under
    ``<runs-dir>/.probes/``; ``--write-filtered`` writes the training rows inside ``--band``."""
    import shutil
    import tempfile

    from .core.agent_trainer import AgentTrainer
    from .probe.filtering import parse_band

    try:
        band = parse_band(a.band)
        scratch = tempfile.mkdtemp(prefix="aworld-probe-")  # the checks' run folder: no run is made
        try:
            trainer = AgentTrainer(
                **modules_from_args(a).as_kwargs(), run_path=scratch, check_timeout_s=a.check_timeout
            )
            print(f"probing {a.prompts} prompts (seed {a.seed}) ...", file=sys.stderr)
            result = trainer.probe(
                a.prompts, a.samples, a.seed, runs_dir=a.runs_dir, timeout_s=a.timeout, refresh=a.refresh
            )
            filtered = result.write_filtered(a.write_filtered, band) if a.write_filtered else None
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    except CheckError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps({**result.to_dict(), "reused": result.reused, "filtered": filtered}, default=str, indent=1))
        return 0
    print(result.summary())
    if filtered:
        dropped = ", ".join(f"{n} {why}" for why, n in filtered["dropped"].items() if n) or "none"
        print(
            f"filtered: {filtered['kept']} of {filtered['rows']} rows kept ({filtered['rule']}) in {filtered['path']}; "
            + (
                f"fewer than one step takes (prompts_per_step {filtered['fewer_than_a_step']}): lower prompts_per_step "
                f"to {filtered['kept']} or fewer, or widen the band; "
                if filtered.get("fewer_than_a_step")
                else ""
            )
            + f"dropped: {dropped}; provenance: {filtered['path']}.provenance.json"
        )
    return 0


def cmd_label(a: argparse.Namespace) -> int:
    from .runs.rundir import RunDir

    run = RunDir(a.run_dir)
    if not run.exists():
        print(f"error: {run.path} is not a run directory", file=sys.stderr)
        return 2
    label = run.write_label(a.name, a.note)
    print(json.dumps(label, ensure_ascii=False))
    return 0


def cmd_runs(a: argparse.Namespace) -> int:
    from .runs.lifecycle import list_run_dirs, summarize

    from .diagnostics.reading import active_diagnoses
    from .runs.rundir import EVENTS_FILE

    rows = [
        [*summarize(r).as_row(), ",".join(e["code"] for e in active_diagnoses(r.read_jsonl(EVENTS_FILE))) or "-"]
        for r in list_run_dirs(a.runs_dir)
    ]
    header = ["run", "name", "state", "engine", "started", "step", "reward", "diagnoses"]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)] if rows else [len(h) for h in header]
    for row in [header, *rows]:
        print("  ".join(str(x).ljust(w) for x, w in zip(row, widths)))
    return 0


def cmd_stop(a: argparse.Namespace) -> int:
    from .runs.lifecycle import effective_status, kill_run, process_alive, stop_run
    from .runs.rundir import RunDir

    stop_run(a.run_dir, reason="cli")
    deadline = time.time() + a.kill_after
    run = RunDir(a.run_dir)
    while time.time() < deadline and process_alive(run.read_status()):
        time.sleep(0.5)
    if process_alive(run.read_status()):
        kill_run(a.run_dir)
    print(effective_status(run).get("state"))
    return 0


def cmd_eval(a: argparse.Namespace) -> int:
    """Prepare an evaluation of a run (checks first) and run it here, or in the background (--detach),
    or execute an evaluation directory that was prepared already (--dir)."""
    from .inference.evaluation import prepare_eval
    from .isolation.privileges import without_privileges

    if a.dir:
        # a prepared evaluation runs the reward: no capability, no write but in its folder (privileges.py)
        with without_privileges([a.dir]):
            return _run_eval_dir(a.dir)
    if not a.run:
        print("error: give --run <run_dir> (or --dir <eval_dir> of a prepared evaluation)", file=sys.stderr)
        return 2
    try:
        prepared = prepare_eval(
            a.run,
            a.checkpoint or None,
            dataset=a.dataset,
            columns=parse_columns(a.columns),
            reward=parse_reward(a.reward),
            samples=a.samples,
            temperature=a.temperature,
            max_samples=a.max_samples,
            max_new_tokens=a.max_new_tokens,
        )
    except (CheckError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    eval_dir = str(prepared.path)
    print(f"evaluation directory: {eval_dir}", file=sys.stderr)
    if a.detach:
        from .isolation.processes import spawn_detached
        from .isolation.user_env import user_code_envs

        specs = (os.path.join(eval_dir, "eval.yaml"), os.path.join(a.run, "run.yaml") if a.run else None)
        env, servers = user_code_envs(*specs, extra={"PYTHONUNBUFFERED": "1"})
        proc = spawn_detached(
            [sys.executable, "-m", "engines", "eval", "--dir", eval_dir],
            os.path.join(eval_dir, "eval.log"),
            env=env,
            server_env=servers,
        )
        prepared.write_status(pid=proc.pid, launched=time.time())
        print(json.dumps({"eval_dir": eval_dir, "pid": proc.pid}))
        return 0
    return _run_eval_dir(eval_dir)


def _run_eval_dir(eval_dir: str) -> int:
    from .inference.evaluation import run_eval

    try:
        results = run_eval(eval_dir)
    except Exception as e:  # recorded in the evaluation's status.json/events.jsonl
        print(f"evaluation failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    for r in results:
        shown = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.metrics.items()}
        print(f"{r.model}: {json.dumps(shown)}")
    return 0


def cmd_export(a: argparse.Namespace) -> int:
    from .inference.export import export_checkpoint

    try:
        out = export_checkpoint(a.run, a.checkpoint, a.out, push_to_hub=a.push_to_hub)
    except (CheckError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(out)
    return 0


def cmd_chat_serve(a: argparse.Namespace) -> int:
    from pathlib import Path

    from .inference.chat_server import serve
    from .isolation.privileges import without_privileges

    state_dir = Path(a.state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    # the agent's tools run here: no capability, no write but in its folder
    with without_privileges([state_dir]):
        return serve(a.run, a.checkpoint, state_dir, a.idle_timeout)


def cmd_engines(a: argparse.Namespace) -> int:
    from .core.checks import engine_result

    for name in registered_engines():
        _, result = engine_result(name)
        print(
            f"{name:10s} {'available' if result.status != ERROR else 'unavailable'}  {result.details.get('reason', '')}"
        )
    return 0


def cmd_setup(a: argparse.Namespace) -> int:
    """An engine that lives in an environment of its own builds it (``setup_environment(argv)``)."""
    from .core.registry import get_processor_class

    try:
        cls = get_processor_class(a.engine)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    build = getattr(cls, "setup_environment", None)
    if build is None:
        print(f"engine '{a.engine}' needs no setup: it runs in this environment", file=sys.stderr)
        return 0
    return int(build(a.rest) or 0)


def setup_logging() -> None:
    """The CLI and the run process are applications: they, not the library, configure logging (and their standard
    error is plain text unless it is a terminal: engines/core/plain_output.py)."""
    from .core.plain_output import plain_stderr

    plain_stderr()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def main(argv: list[str] | None = None) -> int:
    from .isolation.privileges import make_undumpable

    make_undumpable()  # this process may hold credentials (its environment): no ptrace, no core dump
    from .isolation import server_env

    server_env.receive()  # its MCP servers' variables, handed over by whoever started it, before any user code
    setup_logging()
    parser = argparse.ArgumentParser(prog="aworld-train", description="AWorld agent training engines")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("check", help="check every module and print one table")
    add_module_args(p)
    p.add_argument("--json", action="store_true", help="print results as JSON")
    p.set_defaults(func=cmd_check)
    p = sub.add_parser("train", help="check, create a run directory and train in the foreground")
    add_module_args(p)
    p.add_argument("--name", help="a name for the run (shown in listings; renamable with `label`)")
    p.add_argument("--note", help="a note: what this run tries")
    p.add_argument("--run-path", default=os.environ.get("AWORLD_RUNS_DIR", "runs"))
    p.set_defaults(func=cmd_train)
    p = sub.add_parser("run", help="execute a prepared run directory (reads only its run.yaml)")
    p.add_argument("run_dir")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("rerun", help="train again with an earlier run's exact spec, as a new run")
    p.add_argument("run_dir")
    p.add_argument("--runs-dir", help="where the new run goes (default: beside the earlier one)")
    p.add_argument("--detach", action="store_true", help="start it in the background and return")
    p.set_defaults(func=cmd_rerun)
    p = sub.add_parser("resume", help="continue a stopped, failed or finished run from a checkpoint, in the same run")
    p.add_argument("run_dir")
    p.add_argument("--checkpoint", default="latest", help="latest (default), best or checkpoint-N")
    p.add_argument("--max-steps", type=int, default=None, help="train to this step (past a finished run's end)")
    p.add_argument("--detach", action="store_true", help="start it in the background and return")
    p.set_defaults(func=cmd_resume)
    p = sub.add_parser("probe", help="sample the base model before a run: forecast, verdicts, difficulty filter")
    add_module_args(p)
    p.add_argument("--prompts", type=int, default=64, help="training prompts sampled (a seeded random choice)")
    p.add_argument("--samples", type=int, default=None, help="completions per prompt (default: num_generations)")
    p.add_argument("--seed", type=int, default=0, help="which prompts, and the sampling's seed")
    p.add_argument("--runs-dir", default=os.environ.get("AWORLD_RUNS_DIR", "runs"), help="reports go to .probes/ here")
    p.add_argument("--timeout", type=float, default=None, help="seconds ($AWORLD_PROBE_TIMEOUT_S, else 900)")
    p.add_argument("--refresh", action="store_true", help="sample again even when a report is stored")
    p.add_argument("--write-filtered", metavar="PATH", help="write the training rows inside --band here (.jsonl)")
    p.add_argument("--band", default=None, help="LOW,HIGH: rows kept when LOW < pass rate < HIGH (default 0,1)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_probe)
    p = sub.add_parser("label", help="name a run or change its note")
    p.add_argument("run_dir")
    p.add_argument("--name")
    p.add_argument("--note")
    p.set_defaults(func=cmd_label)
    p = sub.add_parser("runs", help="list runs")
    p.add_argument("--runs-dir", default=os.environ.get("AWORLD_RUNS_DIR", "runs"))
    p.set_defaults(func=cmd_runs)
    p = sub.add_parser("stop", help="stop a run at its next step boundary (kill after a timeout)")
    p.add_argument("run_dir")
    p.add_argument("--kill-after", type=float, default=30.0)
    p.set_defaults(func=cmd_stop)
    p = sub.add_parser("eval", help="evaluate a run's checkpoints (or its base model) on a dataset with the reward")
    p.add_argument("--run", help="the run whose agent, test set and reward are the defaults")
    p.add_argument(
        "--checkpoint",
        action="append",
        help="base, latest (default), checkpoint-N, <run_id>/checkpoint-N (another run in the same runs "
        "dir) or a folder; repeat to compare several",
    )
    p.add_argument("--dataset", help="dataset to evaluate on (default: the run's test set, else its train set)")
    p.add_argument("--columns", help="column mapping, e.g. prompt=question,answer=solution")
    p.add_argument("--reward", action="append", help="reward(s) as for train (default: the run's)")
    p.add_argument("--samples", type=int, default=1, help="completions per prompt (pass@k for k > 1)")
    p.add_argument("--temperature", type=float, default=0.0, help="0: greedy")
    p.add_argument("--max-samples", type=int, help="evaluate only the first N rows")
    p.add_argument("--max-new-tokens", type=int, help="default: the agent's max_tokens")
    p.add_argument("--detach", action="store_true", help="run in the background; print the evaluation directory")
    p.add_argument("--dir", help="execute an evaluation directory prepared already (what --detach starts)")
    p.set_defaults(func=cmd_eval)
    p = sub.add_parser("export", help="a checkpoint as a standalone Hugging Face model folder (LoRA merged)")
    p.add_argument("--run", required=True)
    p.add_argument("--checkpoint", help="latest (default), checkpoint-N, <run_id>/checkpoint-N, base or a folder")
    p.add_argument("--out", help="the folder to write (default: <run>/exports/<checkpoint>)")
    p.add_argument("--push-to-hub", help="also upload it to this Hub repo (token from HF_TOKEN)")
    p.set_defaults(func=cmd_export)
    p = sub.add_parser("chat-serve", help="serve a chat model on 127.0.0.1 (the studio's chat starts it)")
    p.add_argument("--run", required=True)
    p.add_argument("--checkpoint", default=None, help="base, latest (default), checkpoint-N or a folder")
    p.add_argument("--state-dir", required=True, help="where chat.json (port, token, readiness) is written")
    p.add_argument("--idle-timeout", type=float, default=600.0, help="exit after this many idle seconds")
    p.set_defaults(func=cmd_chat_serve)
    p = sub.add_parser("engines", help="list registered engines and their availability")
    p.set_defaults(func=cmd_engines)
    p = sub.add_parser("setup", help="build an engine's own environment (e.g. setup swift)")
    p.add_argument("engine")
    p.add_argument("rest", nargs=argparse.REMAINDER, help="the engine's setup options (--progress-file F, ...)")
    p.set_defaults(func=cmd_setup)
    from .sweeps.cli import add_parsers as add_sweep_parsers

    add_sweep_parsers(sub)
    a = parser.parse_args(argv)
    if a.cmd == "check":  # Ctrl-C ends a check at once (its isolated call is killed first): no traceback
        try:
            return a.func(a)
        except KeyboardInterrupt:
            print("interrupted: the check and everything it started were stopped", file=sys.stderr)
            return 130
    return a.func(a)


if __name__ == "__main__":
    sys.exit(main())

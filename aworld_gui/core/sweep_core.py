"""Sweeps for the studio, without components: start one from the Setup's inputs, list them, read one, stop, resume.

A sweep is started through ``aworld-train sweep --detach`` in a child process: its checks (which run user
code and load the engine) never run in the studio, and its driver is a process of its own, so a studio
restart never stops it. Everything shown is read from the sweep directory (``summary.json``,
``status.json``) and, for the parameter importances, from its Optuna study (``study.db``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from engines.results.check_result import CheckError
from engines.files.yaml_input import try_load_yaml
from engines.isolation.user_env import referenced_names, server_names, user_code_env
from engines.runs.lifecycle import effective_status
from engines.sweeps.spec import cluster_of, parse_sweep
from engines.sweeps.sweep_dir import SweepDir, list_sweeps, sweeps_root

from . import inputs as inp

#: how long preparing a sweep may take (its checks load the engine and check every range)
SWEEP_PREPARE_TIMEOUT_S = 600.0


def sweep_doc(
    trials: Any, sampler: str, pruner: str, metric: str, direction: str, params_text: str, name: str = ""
) -> dict[str, Any]:
    """The sweep the Setup's Sweep fields describe (parsed and checked by :func:`parse_sweep` later)."""
    params = yaml.safe_load(params_text or "") if (params_text or "").strip() else None
    doc: dict[str, Any] = {
        "trials": int(trials) if trials not in (None, "") else None,
        "sampler": sampler,
        "pruner": pruner,
        "objective": {"metric": (metric or "").strip() or "eval/reward", "direction": direction or "maximize"},
        "params": params,
    }
    if (name or "").strip():
        doc["name"] = name.strip()
    return {k: v for k, v in doc.items() if v is not None}


class SweepsCore:
    def __init__(self, runs_dir: str | Path):
        self.runs_dir = Path(runs_dir).resolve()

    # -- start ---------------------------------------------------------------------------------
    def launch(self, si: inp.SetupInputs, sweep: dict[str, Any]) -> dict[str, Any]:
        """Check and start a sweep of the Setup's inputs: ``{"ok", "sweep_id"|"error"}``."""
        if si.problems:
            return {"ok": False, "error": next(iter(si.problems.values()))}
        try:
            # the sweep's own errors, at once and in plain words (parallel trials on the config's Ray cluster)
            parse_sweep(sweep, gpus=None, cluster=cluster_of(try_load_yaml(si.config_text)))
        except CheckError as e:
            return {"ok": False, "error": e.result.message}
        except yaml.YAMLError as e:
            return {"ok": False, "error": f"params: {e}"}
        folder = self.runs_dir / inp.UPLOADS / f"sweep-{time.strftime('%Y%m%d-%H%M%S')}-{time.time_ns() % 10**6}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "sweep.yaml").write_text(yaml.safe_dump(sweep, sort_keys=False), encoding="utf-8")
        (folder / "config.yaml").write_text(si.config_text or "", encoding="utf-8")
        (folder / "rewards.yaml").write_text(yaml.safe_dump(list(si.rewards), sort_keys=False), encoding="utf-8")
        argv = [
            sys.executable,
            "-m",
            "engines",
            "sweep",
            "--agent",
            str(si.agent),
            "--engine",
            si.engine,
            "--config",
            str(folder / "config.yaml"),
            "--sweep",
            str(folder / "sweep.yaml"),
            "--run-path",
            str(self.runs_dir),
            "--detach",
        ]
        if si.train:
            argv += ["--train", str(si.train)]
        if si.test:
            argv += ["--test", str(si.test)]
        if si.rewards:
            argv += ["--reward", str(folder / "rewards.yaml")]
        if si.columns:
            argv += ["--columns", ",".join(f"{k}={v}" for k, v in si.columns.items())]
        try:
            # the sweep's checks and its driver run user code, and the driver outlives this call: the environment a
            # run gets (no credential but those the setup asks for by ${NAME} and the operator invited), never the
            # studio's own
            names = referenced_names(si.agent, si.rewards, si.config_text) | server_names(
                si.agent, si.rewards, si.config_text
            )
            out = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                timeout=SWEEP_PREPARE_TIMEOUT_S,
                stdin=subprocess.DEVNULL,
                env=user_code_env(allow=names),
            )
        except subprocess.TimeoutExpired:
            return {"ok": False, "error": f"checking the sweep took longer than {SWEEP_PREPARE_TIMEOUT_S:.0f} s"}
        if out.returncode != 0:
            lines = [ln for ln in out.stderr.splitlines() if ln.startswith("error:")]
            return {"ok": False, "error": (lines[-1][len("error:") :].strip() if lines else out.stderr.strip()[-800:])}
        started = json.loads(out.stdout.strip().splitlines()[-1])
        return {"ok": True, "sweep_id": Path(started["sweep_dir"]).name, "pid": started["pid"]}

    # -- read ----------------------------------------------------------------------------------
    def sweep_dir(self, sweep_id: str) -> SweepDir:
        path = (sweeps_root(self.runs_dir) / sweep_id).resolve()
        if path.parent != sweeps_root(self.runs_dir).resolve() or not (path / "sweep.yaml").is_file():
            raise ValueError(f"no sweep '{sweep_id}' under {sweeps_root(self.runs_dir)}")
        return SweepDir(path)

    def sweep_ids(self) -> list[str]:
        return [s.run_id for s in list_sweeps(self.runs_dir)]

    def detail(self, sweep_id: str) -> dict[str, Any]:
        """State, objective, trials sorted by the objective (best first; unfinished ones last), param names."""
        sd = self.sweep_dir(sweep_id)
        doc = sd.read_sweep().get("sweep") or {}
        summary = sd.read_summary()
        objective = doc.get("objective") or {}
        maximize = objective.get("direction", "maximize") == "maximize"
        trials = list(summary.get("trials") or [])

        def rank(t: dict) -> tuple:
            """Complete trials by their value (best first), then pruned ones by theirs, then the rest."""
            v = t.get("value")
            group = 0 if t.get("state") == "complete" and v is not None else 1 if v is not None else 2
            return group, (-v if maximize else v) if v is not None else 0.0

        trials.sort(key=rank)
        status = effective_status(sd)
        return {
            "id": sd.run_id,
            "name": doc.get("name") or sd.run_id,
            "state": status.get("state", "?"),
            "objective": objective,
            "trials_planned": doc.get("trials"),
            "trials": trials,
            "best": summary.get("best"),
            "params": list((doc.get("params") or {}).keys()),
            "sampler": doc.get("sampler"),
            "pruner": doc.get("pruner"),
        }

    def importances(self, sweep_id: str) -> dict[str, float] | None:
        """Optuna's parameter importances once 4 trials are complete (None before)."""
        import optuna

        from engines.sweeps.summary import importances

        sd = self.sweep_dir(sweep_id)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        study = optuna.load_study(study_name=sd.study_name, storage=sd.storage_url)
        return importances(study)

    # -- control -------------------------------------------------------------------------------
    def stop(self, sweep_id: str) -> dict[str, Any]:
        from engines.sweeps.launch import stop_sweep

        return stop_sweep(self.sweep_dir(sweep_id).path, reason="studio")

    def resume(self, sweep_id: str) -> int:
        from engines.sweeps.launch import resume_sweep

        return int(resume_sweep(self.sweep_dir(sweep_id).path, detach=True))

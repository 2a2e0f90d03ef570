"""An engine's own environment, set up from the studio (ms-swift's virtualenv, for the ``swift`` engine).

:class:`EngineSetups` (Gradio-free) starts ``python -m engines setup <engine> --progress-file <file>`` as a
detached process — its own session, output to a log file, never a pipe — and reads the progress file it
writes; a studio restart finds a setup still running and follows it. :class:`EngineSetupPanel` is the Setup
tab's part of it: shown while the chosen engine is unavailable and can set itself up, a button, a progress bar
fed by a timer, and — once the environment is ready — the engines' availability refreshed and the checks run.
The studio never imports the engine: it runs the CLI and reads a file.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

import gradio as gr
import psutil
from markupsafe import Markup

from engines.isolation.processes import spawn_detached
from engines.runs.json_lines import last_json_line

from ..rendering import render
from ..rendering.i18n import _
from ..rendering.templates import macro

SETUP_DIR = ".engine-setup"
RUNNING, DONE, FAILED = "running", "done", "failed"


class EngineSetups:
    """Background setups of engine environments, one per engine, tracked through files under the runs dir."""

    def __init__(self, runs_dir: str | os.PathLike):
        self.folder = Path(runs_dir) / SETUP_DIR

    def paths(self, engine: str) -> tuple[Path, Path, Path]:
        """(progress file, log file, pid file)."""
        return (self.folder / f"{engine}-progress.jsonl", self.folder / f"{engine}.log", self.folder / f"{engine}.pid")

    def _alive(self, engine: str) -> bool:
        _, _, pid_file = self.paths(engine)
        try:
            info = json.loads(pid_file.read_text())
            p = psutil.Process(int(info["pid"]))
            return p.status() != psutil.STATUS_ZOMBIE and abs(p.create_time() - info["created"]) < 1.0
        except (OSError, ValueError, KeyError, psutil.Error):
            return False

    def state(self, engine: str) -> dict[str, Any] | None:
        """The setup's last progress (``state``: running | done | failed), None when none was started."""
        progress, log, _ = self.paths(engine)
        last = last_json_line(progress)
        if last is None:
            return {"state": RUNNING, "message": "starting…", "fraction": 0.0} if self._alive(engine) else None
        if last.get("state") == RUNNING and not self._alive(engine):
            return {**last, "state": FAILED, "message": f"the setup process ended before finishing (see {log})"}
        return last

    def start(self, engine: str) -> dict[str, Any]:
        """Start the setup unless one is running; returns its state."""
        current = self.state(engine)
        if current and current.get("state") == RUNNING:
            return current
        self.folder.mkdir(parents=True, exist_ok=True)
        progress, log, pid_file = self.paths(engine)
        progress.unlink(missing_ok=True)
        proc = spawn_detached(
            [sys.executable, "-m", "engines", "setup", engine, "--progress-file", str(progress)],
            log,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )
        pid_file.write_text(
            json.dumps({"pid": proc.pid, "created": psutil.Process(proc.pid).create_time(), "started": time.time()})
        )
        return {"state": RUNNING, "message": "starting…", "fraction": 0.0}


def progress_html(engine: str, state: dict[str, Any] | None, reason: str = "") -> str:
    """What the panel shows: why the engine is unavailable, or how its setup is going."""
    if state is None:
        return macro("tabs/engine_setup.html", "idle")(engine, Markup(render.engine_html(reason)))  # render's HTML
    status = state.get("state", RUNNING)
    pct = 100.0 * float(state.get("fraction") or (1.0 if status == DONE else 0.0))
    bar = {"running": "running", "done": "finished", "failed": "failed"}.get(status, "running")
    label = {"running": _("setting up"), "done": _("ready"), "failed": _("setup failed")}.get(status, status)
    badge = Markup(render.badge(bar, label))  # render.badge's HTML
    return macro("tabs/engine_setup.html", "progress")(status, pct, badge, state.get("message", ""), bar)


class EngineSetupPanel:
    """The Setup tab's setup button and progress bar for the selected engine."""

    def __init__(self, studio, setups: EngineSetups | None = None):
        self.studio = studio
        self.setups = setups or EngineSetups(studio.runs_dir)

    def build(self) -> "EngineSetupPanel":
        with gr.Group(visible=False, elem_id="engine-setup") as self.group:
            self.status = gr.HTML("", elem_id="engine-setup-status")
            self.button = gr.Button(
                _("Set up its environment"), size="md", variant="primary", elem_id="engine-setup-btn"
            )
        self.timer = gr.Timer(1.0, active=False)
        self.ready = gr.Textbox(visible=False, elem_id="engine-setup-ready")  # changes once a setup is done
        return self

    def _info(self, engine: str) -> dict[str, Any]:
        return next((e for e in self.studio.catalog().get("engines", []) if e["name"] == engine), {})

    def _view(self, engine: str) -> list:
        """Panel visibility, text, button and timer for ``engine``."""
        info = self._info(engine)
        state = self.setups.state(engine) if info.get("setup") else None
        running = bool(state and state.get("state") == RUNNING)
        visible = bool(info.get("setup")) and (not info.get("available") or running)
        label = (
            _("Retry the setup")
            if state and state.get("state") == FAILED
            else f"{_('Set up the environment of')} {engine}"
        )
        return [
            gr.update(visible=visible),
            progress_html(
                engine, state if running or (state and state.get("state") == FAILED) else None, info.get("reason", "")
            ),
            gr.update(value=label, interactive=not running),
            gr.Timer(active=running),
        ]

    def on_engine(self, engine: str) -> list:
        return self._view(engine)

    def on_click(self, engine: str) -> list:
        self.setups.start(engine)
        return self._view(engine)

    def on_tick(self, engine: str, ready: str) -> list:
        state = self.setups.state(engine) or {}
        if state.get("state") == RUNNING:
            return [
                gr.update(),
                progress_html(engine, state),
                gr.update(interactive=False),
                gr.Timer(active=True),
                gr.update(),
            ]
        self.studio.catalog(refresh=True)  # the engine's availability has changed
        done = state.get("state") == DONE
        return [
            gr.update(visible=not done),
            progress_html(engine, state),
            gr.update(value=_("Retry the setup"), interactive=True),
            gr.Timer(active=False),
            f"{engine}:{state.get('time')}" if done else gr.update(),
        ]

    def wire(self, engine_dd, after_ready: Callable[[], list[dict]]) -> None:
        """``after_ready()``: the event kwargs to chain once an environment is ready (refresh, re-check)."""
        outs = [self.group, self.status, self.button, self.timer]
        engine_dd.change(
            self.on_engine, [engine_dd], outs, api_visibility="private", show_progress="hidden", queue=False
        )
        self.button.click(self.on_click, [engine_dd], outs, api_visibility="private", show_progress="hidden")
        self.timer.tick(
            self.on_tick, [engine_dd, self.ready], [*outs, self.ready], api_visibility="private", show_progress="hidden"
        )
        event = self.ready.change(lambda: None, [], [], api_visibility="private", queue=False)
        for kwargs in after_ready():
            event = event.then(**kwargs)

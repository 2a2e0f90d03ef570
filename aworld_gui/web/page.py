"""``build_app(runs_dir) -> gr.Blocks``: the studio's three tabs and its API endpoints."""

from __future__ import annotations

import functools
import os
from typing import Any

import gradio as gr
from markupsafe import Markup

from ..rendering.i18n import _, i18n, language_js, locale_probe, markers_js
from . import gradio_patches
from ..rendering import render
from ..rendering.templates import macro
from ..tabs.chat_tab import ChatTab, outbox_js
from ..tabs.config_form import yaml_edit_js
from .client_api import build_api
from ..tabs.evaluate_tab import EvaluateTab
from ..tabs.monitor_tab import MonitorTab
from ..tabs.runs_tab import RunsTab
from ..tabs.setup_inputs import collect
from ..tabs.setup_tab import SetupTab
from ..core.studio import Studio
from ..core.sweep_core import SweepsCore
from ..tabs.sweep_panel import SweepPanel, SweepsTab
from ..rendering.theme import CSS, theme

TITLE = "AWorld Trainer Studio"
#: every tab's elem_id and English label, as given to gr.Tab (the page's script keeps their buttons in the
#: page's language; tests/test_i18n.py checks this list against the gr.Tab calls)
TABS = {
    "tab-setup": "Setup",
    "tab-monitor": "Monitor",
    "tab-runs": "Runs",
    "tab-evaluate": "Evaluate",
    "tab-chat": "Chat",
    "tab-train-rows": "Train rows",
    "tab-test-rows": "Test rows",
    "tab-sweeps": "Sweeps",
}


#: The Monitor opens by itself when a page opened while a run trains has loaded, and when a launch is answered — unless
#: the user picked a tab meanwhile: those answers come seconds later under load, and pulled a user who had clicked Runs
#: back to the Monitor (issue 32 §2). The page decides: TAB_CHOICE_JS (the title's js_on_load) notes when a tab was
#: last picked by hand and when Launch was pressed; OPEN_MONITOR_JS switches only if no tab was picked since.
TAB_CHOICE_JS = """
document.addEventListener('click', e => {
  const at = e.isTrusted && e.target.closest ? e.target.closest('#tabs [role="tab"], #launch-btn') : null;
  if (at) window[at.id === 'launch-btn' ? 'awLaunchAt' : 'awTabPickedAt'] = performance.now();
}, true);
"""


def open_monitor_js(since: str, answered: str) -> str:
    """The page's step after an answer that asks for the Monitor (its one input, a flag): the switch, unless a tab was
    picked by hand after ``since`` (a page-side expression: a time of ``performance.now()``); sets ``answered``
    (tests wait on it)."""
    return f"""
(wanted) => {{
  window.{answered} = true;
  const picked = window.awTabPickedAt !== undefined && window.awTabPickedAt >= ({since});
  return wanted && !picked ? {{"__type__": "update", "selected": "monitor"}} : {{"__type__": "update"}};
}}
"""


OPEN_MONITOR_JS = open_monitor_js("0", "awLoadAnswered")  # since the page opened
OPEN_MONITOR_AFTER_LAUNCH_JS = open_monitor_js("window.awLaunchAt || 0", "awLaunchAnswered")  # since Launch


def title_html(runs_dir: str | os.PathLike) -> str:
    """The page's title, with the runs folder (i18n.locale_probe's fixed HTML first)."""
    return macro("web/page.html", "title")(Markup(locale_probe()), TITLE, str(runs_dir))


def launch_refused(error: Any) -> str:
    """Setup's message when the studio refused a launch."""
    return macro("tabs/common.html", "error")(error, _("Launch refused:"))


def diagnosis_clone_note(run_id: str, setting: str | None, msg: str) -> str:
    """Setup's message after a diagnosis's Clone into Setup: the run and the setting to change first, or why it was
    not cloned (``msg``, the Runs tab's clone's Markdown: ``**error**``)."""
    if str(msg).startswith("**"):
        return macro("tabs/common.html", "text")(str(msg).strip("*"))
    return macro("web/page.html", "cloned")(run_id, setting)


def build_app(runs_dir: str | os.PathLike = "runs", studio: Studio | None = None) -> gr.Blocks:
    studio = studio or Studio(runs_dir)
    studio.start()
    setup, monitor, runs = SetupTab(studio), MonitorTab(studio), RunsTab(studio)
    evaluate, chat = EvaluateTab(studio), ChatTab(studio)
    sweep_core = SweepsCore(studio.runs_dir)
    sweep_setup, sweeps = SweepPanel(sweep_core), SweepsTab(sweep_core)
    with gr.Blocks(title=TITLE, analytics_enabled=False) as demo:
        # the locale probe first: Gradio translates the first marker of a string, markers_js the rest
        gr.HTML(
            title_html(studio.runs_dir),
            js_on_load="\n".join([markers_js(TABS), language_js(), TAB_CHOICE_JS, outbox_js(), yaml_edit_js()]),
        )
        with gr.Tabs(selected="setup", elem_id="tabs") as tabs:
            with gr.Tab(_("Setup"), id="setup", elem_id="tab-setup") as setup_tab:
                sui = setup.build()
                swsetup = sweep_setup.build()
            with gr.Tab(_("Monitor"), id="monitor", elem_id="tab-monitor") as monitor_tab:
                mui = monitor.build()
            with gr.Tab(_("Runs"), id="runs", elem_id="tab-runs") as runs_tab:
                rui = runs.build()
            with gr.Tab(_("Sweeps"), id="sweeps", elem_id="tab-sweeps") as sweeps_tab:
                swui = sweeps.build()
            with gr.Tab(_("Evaluate"), id="evaluate", elem_id="tab-evaluate") as evaluate_tab:
                evaluate.build()
            with gr.Tab(_("Chat"), id="chat", elem_id="tab-chat") as chat_tab:
                chat.build()
        build_api(studio)

        setup.wire()
        monitor.wire()
        runs.wire(mui.run, runs_tab, [setup_tab, monitor_tab, evaluate_tab, chat_tab])
        evaluate.wire(evaluate_tab)
        chat.wire(chat_tab)
        sweeps.wire(sweeps_tab)
        swsetup.start_btn.click(
            functools.partial(sweep_setup.on_start, collect, len(sui.inputs())),
            [*sui.inputs(), *swsetup.fields()],
            [swsetup.msg, swui.pick],
            api_visibility="private",
            concurrency_limit=1,
        )

        # launch: worker prepares the run dir, the studio spawns the run process → Monitor
        def on_launch(*values):
            si = collect(*values)
            res = studio.launch(si)
            if not res.get("ok"):
                return launch_refused(res.get("error")), gr.update(), False
            msg = render.launch_note(res["run_id"], bool(res.get("queued")))
            # the Monitor on the launched run, queued or not: a queued one says its place in line and what it waits
            # for, and is shown training when its turn comes (it stayed on the run before it, finished, until a pick)
            return msg, gr.update(choices=studio.run_ids(), value=res["run_id"]), True

        launched = gr.Checkbox(False, visible=False)  # in the page: the js below reads it
        sui.launch_btn.click(
            on_launch, sui.inputs(), [sui.launch_msg, mui.run, launched], api_visibility="private", concurrency_limit=1
        ).then(None, [launched], [tabs], js=OPEN_MONITOR_AFTER_LAUNCH_JS, queue=False, api_visibility="private")

        # runs → monitor / setup
        def open_in_monitor(run_id):
            if not run_id:
                return [gr.update()] * 3
            # a programmatic tab switch fires no Tab.select: stop the Runs table's timer here
            return (
                gr.update(choices=studio.run_ids(), value=run_id),
                gr.Tabs(selected="monitor"),
                gr.Timer(active=False),
            )

        rui.open_btn.click(open_in_monitor, [rui.selected], [mui.run, tabs, rui.timer], api_visibility="private")

        def clone(run_id):
            try:
                si = studio.clone_inputs(run_id)
            except ValueError as e:
                return [gr.update()] * (len(setup.input_components()) + 1) + [f"**{e}**", gr.update()]
            return [
                *setup.show_inputs(si),
                gr.Tabs(selected="setup"),
                f"{_('Cloned into Setup:')} **{run_id}**",
                gr.Timer(active=False),
            ]

        setup.then_check(
            rui.clone_btn.click(
                clone,
                [rui.selected],
                [*setup.input_components(), tabs, rui.action_msg, rui.timer],
                api_visibility="private",
            )
        )

        # a diagnosis's "Clone into Setup" in the Monitor: the same clone, naming the setting to change
        def clone_for_diagnosis(run_id, setting):
            *updates, msg, timer = clone(run_id)
            return [*updates, diagnosis_clone_note(run_id, setting, msg), timer]

        setup.then_check(
            mui.clone_btn.click(
                clone_for_diagnosis,
                [mui.run, mui.clone_setting],
                [*setup.input_components(), tabs, sui.launch_msg, rui.timer],
                api_visibility="private",
            )
        )
        setup.then_check(
            swui.clone_btn.click(
                clone,
                [swui.best_run],
                [*setup.input_components(), tabs, rui.action_msg, rui.timer],
                api_visibility="private",
            )
        )

        # page load: catalog-dependent choices, first check, the run to monitor (live first)
        def on_load_monitor():
            """The run to watch (the one training first), and whether one trains."""
            training = studio.training_run()
            return gr.update(choices=studio.run_ids(), value=training or studio.latest_run()), bool(training)

        demo.load(**runs.refresh_kw)
        training_now = gr.Checkbox(False, visible=False)  # in the page (a State is not: the js below reads it)
        demo.load(on_load_monitor, [], [mui.run, training_now], api_visibility="private").then(
            None, [training_now], [tabs], js=OPEN_MONITOR_JS, queue=False, api_visibility="private"
        )
        # the first check and the settings editor's table each follow the Setup's load, side by side (their outputs
        # are apart; the check waited for the table before, 0.4-0.5 s of every page's first check)
        setup_loaded = demo.load(
            setup.on_load,
            [sui.engine, sui.reward_pick, sui.reward_weights],
            setup.load_outputs(),
            api_visibility="private",
        )
        setup.then_check(setup_loaded)
        setup_loaded.then(
            setup.editor.on_load,
            [sui.engine, sui.config_yaml],
            setup.editor.load_outputs(),
            api_visibility="private",
            show_progress="hidden",
        )
    demo.queue(default_concurrency_limit=4)
    demo.studio = studio  # type: ignore[attr-defined]
    # routes served ahead of Gradio's own: the Monitor's stream, and what the patches serve
    demo.aworld_routes = [monitor.streams.route(), *gradio_patches.apply(demo)]  # type: ignore[attr-defined]
    return demo


def launch_kwargs(demo: gr.Blocks, allowed_hosts: list[str] | None = None) -> dict[str, Any]:
    """What ``demo.launch`` needs besides the address: the look (Gradio 6 takes theme and css at
    launch), the studio's own routes, ahead of Gradio's, no other site's page let in (origin_gate.py: ``allowed_hosts``
    the operator's names), no body bigger than it carries (body_cap.py), login throttling (login_throttle.py), no file served through a link (file_route_guard.py)
    and the translations (i18n.py)."""
    from starlette.middleware import Middleware

    from .body_cap import BodyCap
    from .login_throttle import LoginThrottle
    from .origin_gate import OriginGate
    from .auth_gate import AuthGate
    from .file_route_guard import FileRouteGuard
    from ..core.upload_guard import UploadGuard

    return {
        "theme": theme(),
        "css": CSS,
        "i18n": i18n(),
        "app_kwargs": {
            "routes": list(demo.aworld_routes),
            "middleware": [
                Middleware(OriginGate, allowed=allowed_hosts),
                Middleware(BodyCap),
                Middleware(LoginThrottle),
                Middleware(AuthGate),
                Middleware(UploadGuard),
                Middleware(FileRouteGuard, runs_dir=demo.studio.runs_dir),
            ],
        },
    }

"""Chat: talk to a run's base model or any of its checkpoints, with the agent's system prompt and tools
(tool calls really run and show, folded, with their results); the reply streams. The model lives in a
process of its own (aworld_gui/core/chat_client.py), loaded on first use and freed after an idle time; a reply
after that process had stopped (died, or freed when idle) is led by a line saying so, with the cause."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import gradio as gr

from ..rendering.i18n import Markdown, _
from ..rendering import render
from ..core.chat_client import ChatError, ChatService
from ..core.studio import Studio


@dataclass
class ChatUI:
    run: Any = None
    model: Any = None
    temperature: Any = None
    status: Any = None
    chatbot: Any = None
    box: Any = None
    send: Any = None
    clear: Any = None
    conversation: Any = None  # the messages the model is sent: user turns, its replies, tool calls and results


def _call_text(call: dict) -> str:
    fn = call.get("function") or {}
    args = fn.get("arguments")
    return f"{fn.get('name', '?')}({args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)})"


TOOL_CALL_OPEN, TOOL_CALL_CLOSE = "<tool_call>", "</tool_call>"  # how the chat templates here write a call


def streaming_reply(text: str) -> dict:
    """A reply as it streams in (``text``: the tokens so far): as written, or, from the first token of a tool call
    on, folded under a tool line with the call so far as JSON (the raw ``<tool_call>`` markup showed until the turn
    ended). The turn's parsed message replaces it when it ends."""
    before, opened, call = text.partition(TOOL_CALL_OPEN)
    if not opened:
        if TOOL_CALL_OPEN.startswith(text.strip()) and text.strip():  # the opening tag still coming in
            return {"content": "", "metadata": {"title": "🛠 calling a tool…"}}
        return {"content": text}
    call = call.split(TOOL_CALL_CLOSE, 1)[0].strip()
    said = f"{before.strip()}\n\n" if before.strip() else ""
    return {"content": f"{said}```json\n{call}\n```", "metadata": {"title": "🛠 calling a tool…"}}


def restart_note(cause: str) -> dict:
    """The folded line that leads a reply when the model's process had stopped and was started again: the
    cause (its first line) in the title, all of it inside."""
    cause = (cause or "").strip() or "it exited"
    first = cause.splitlines()[0]
    first = first if len(first) <= 160 else first[:157] + "..."
    return {
        "role": "assistant",
        "content": cause,
        "metadata": {"title": f"⚠ the chat model had stopped ({first}) and was restarted"},
    }


def context_note(event: dict) -> str:
    """The status line's part on how much of the conversation the model saw (empty while all of it fits)."""
    dropped = int(event.get("dropped") or 0)
    if not dropped:
        return ""
    gone = _("earliest turn(s) no longer fit the model's context")
    return (
        f' <span class="aw-msg aw-msg-warn" data-testid="chat-dropped" data-dropped="{dropped}">— '
        f"{dropped} {gone} ({event.get('limit')} {_('tokens')}): {_('it saw the last')} {event.get('kept')}</span>"
    )


class ChatTab:
    def __init__(self, studio: Studio):
        self.studio = studio
        self.service: ChatService = studio.chat

    def build(self) -> ChatUI:
        ui = ChatUI()
        Markdown(
            _(
                "Chat with the agent's base model or a checkpoint: its system prompt and tools apply, tool calls really run. The model runs in a process of its own, loaded on your first message and freed after 10 idle minutes."
            ),
            elem_classes="aw-muted",
        )
        with gr.Row(equal_height=True, elem_classes="aw-runbar"):
            ui.run = gr.Dropdown([], value=None, label=_("Run"), scale=4, elem_id="chat-run")
            ui.model = gr.Dropdown([], value=None, label=_("Model"), scale=3, elem_id="chat-model")
            ui.temperature = gr.Slider(
                0.0,
                2.0,
                value=0.0,
                step=0.05,
                label=_("Temperature"),
                scale=2,
                elem_id="chat-temperature",
                info=_("0: greedy"),
            )
        ui.status = gr.HTML("", elem_id="chat-status")
        ui.chatbot = gr.Chatbot(label=_("Chat"), height=420, elem_id="chat-box")
        ui.conversation = gr.State([])
        with gr.Row(equal_height=True):
            ui.box = gr.Textbox(
                placeholder=_("Say something to the agent…"),
                label=_("Message"),  # not shown: what a screen reader says (Gradio's default was "Textbox")
                show_label=False,
                scale=8,
                elem_id="chat-input",
            )
            ui.send = gr.Button(_("Send"), variant="primary", scale=1, elem_id="chat-send")
            ui.clear = gr.Button(_("Clear"), scale=1, elem_id="chat-clear")
        self.ui = ui
        return ui

    def wire(self, tab) -> None:
        ui = self.ui
        quiet = dict(api_visibility="private", show_progress="hidden")
        tab.select(self.on_open, [ui.run], [ui.run], **quiet)
        ui.run.change(self.on_run, [ui.run], [ui.model], **quiet)
        # Send and Enter are one event: a message sent while a reply streams waits for it and is then sent with the
        # transcript as it is by then (Gradio re-reads the inputs of an "always_last" event it held back); two
        # events ran side by side, each streaming into the chat from its own copy of it (issue 42, item 7)
        send = gr.on(
            [ui.send.click, ui.box.submit],
            self.on_send,
            [ui.box, ui.chatbot, ui.conversation, ui.run, ui.model, ui.temperature],
            [ui.chatbot, ui.box, ui.status, ui.conversation],
            trigger_mode="always_last",
            **quiet,
        )
        # Clear ends the reply on its way: its next update would have put the cleared messages back
        ui.clear.click(self.on_clear, None, [ui.chatbot, ui.status, ui.conversation], cancels=[send], **quiet)

    @staticmethod
    def on_clear():
        """A new conversation: nothing shown, nothing sent."""
        return [], "", []

    def on_open(self, current):
        ids = self.studio.run_ids()
        value = current if current in ids else (self.studio.latest_run() if ids else None)
        return gr.update(choices=ids, value=value)

    def on_run(self, run_id):
        try:
            models = self.studio.model_choices(run_id) if run_id else []
        except ValueError:
            models = []
        if not models:
            return gr.update(choices=[], value=None)
        latest = self.studio.checkpoints(run_id)
        return gr.update(choices=models, value=latest[-1] if latest else "base")  # the run's newest, else base

    def on_send(self, text, history, conversation, run_id, model, temperature):
        """A reply to ``text``. ``history`` is what the chat shows (in Gradio's format, never sent to the model);
        ``conversation`` is what the model is sent: the earlier turns as the model saw and wrote them (tool calls
        and results among them), one more turn once the reply is done."""
        history, conversation = list(history or []), list(conversation or [])
        text = (text or "").strip()
        if not text:
            yield history, "", gr.update(), conversation
            return
        if not run_id or not model:
            yield (
                history,
                text,
                f'<div class="aw-msg aw-msg-error">{_("Pick a run and a model first.")}</div>',
                conversation,
            )
            return
        user = {"role": "user", "content": text}
        shown = len(history)
        history.append(dict(user))
        reply = {"role": "assistant", "content": ""}
        history.append(reply)
        status = f'<span class="aw-muted">{render.esc(model)} · {render.esc(run_id)}</span>'  # no word: both languages
        restarted, restarts_before, context, raw = None, self.service.restarts, "", ""
        # the box is emptied once, here: it is the user's again while the reply streams (an empty box in each update
        # wiped a next message typed meanwhile)
        yield history, "", status + f' <span class="aw-muted">— {_("loading the model…")}</span>', conversation
        try:
            path = str(self.studio.run_path(run_id))
            for event in self.service.stream(path, model, conversation + [user], float(temperature or 0.0)):
                kind = event.get("type")
                if kind == "restarted":  # said before the reply, folded like the tool lines
                    restarted = event.get("cause") or ""
                    history.insert(shown + 1, restart_note(restarted))
                    yield history, gr.update(), status, conversation
                elif kind == "context":
                    context = context_note(event)
                    yield history, gr.update(), status + context, conversation
                elif kind == "token":
                    raw += event["text"]
                    reply.pop("metadata", None)
                    reply.update(streaming_reply(raw))
                    yield history, gr.update(), status + context, conversation
                elif kind == "message":
                    msg, raw = event["message"], ""
                    reply.pop("metadata", None)
                    reply["content"] = msg.get("content") or ""
                    if msg.get("tool_calls"):  # this turn called tools: fold it, the answer comes after
                        reply["content"] = msg.get("content") or ""
                        reply["metadata"] = {"title": "🛠 " + ", ".join(_call_text(c) for c in msg["tool_calls"])}
                        if not reply["content"]:
                            reply["content"] = "(calls the tool)"
                        for c in msg["tool_calls"]:
                            if c.get("server"):
                                reply["metadata"]["title"] += f" · MCP {c['server']}"
                elif kind == "tool":
                    tool = event["message"]
                    history.append(
                        {
                            "role": "assistant",
                            "content": tool.get("content", ""),
                            "metadata": {
                                "title": f"⚙ result of {tool.get('name')}"
                                + (f" · MCP {tool['server']}" if tool.get("server") else "")
                            },
                        }
                    )
                    reply = {"role": "assistant", "content": ""}
                    history.append(reply)
                    yield history, gr.update(), status + context, conversation
                elif kind == "error":
                    raise ChatError(event.get("message", "error"))
                elif kind == "done":
                    conversation = conversation + [user, *(event.get("trajectory") or [])]
            if not reply["content"] and not reply.get("metadata"):
                history.remove(reply)
            yield (
                history,
                gr.update(),  # the box as the user has it now: the next message may be typed in it already
                status + context + f' <span class="aw-muted" data-testid="chat-ready">— {_("ready")}</span>',
                conversation,
            )
        except (ChatError, ValueError) as e:
            # the model did not take this turn: the chat shows what it did take, the message goes back to the box
            history = history[:shown] + [
                m for m in history[shown:] if "restarted" in (m.get("metadata") or {}).get("title", "")
            ]
            if restarted is None and self.service.restarts > restarts_before:  # it stopped, then failed to load
                restarted = self.service.last_cause
            note = f" ({_('restarted after:')} {render.esc(restarted)})" if restarted else ""
            yield (
                history,
                text,
                f'<div class="aw-msg aw-msg-error" data-testid="chat-error">{render.esc(e)}{note}</div>',
                conversation,
            )

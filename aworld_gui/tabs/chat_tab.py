"""Chat: talk to a run's base model or any of its checkpoints, with the agent's system prompt and tools
(tool calls really run and show, folded, with their results); the reply streams. The model lives in a
process of its own (aworld_gui/core/chat_client.py), loaded on first use and freed after an idle time; a reply
after that process had stopped (died, or freed when idle) is led by a line saying so, with the cause."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

from ..rendering.i18n import Markdown, _
from ..rendering.templates import macro
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
    sent: Any = None  # [epoch, how many of the outbox's messages of it were sent]
    outbox: Any = None  # the page's outbox: {"epoch": how many Clears, "messages": [sent since the last]}
    returned: Any = None  # messages the model did not take, back to the box


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
    return str(macro("tabs/chat.html", "context")(dropped, event.get("limit"), event.get("kept")))


class ChatTab:
    def __init__(self, studio: Studio):
        self.studio = studio
        self.service: ChatService = studio.chat
        self.transcripts = studio.chat_transcripts

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
        ui.sent = gr.State([0, 0])  # [epoch, how many of its messages were sent]: the server's (on_send's) alone
        ui.outbox = gr.JSON({"epoch": 0, "messages": []}, visible=False)  # the page's outbox, copied (_COPY_JS)
        ui.returned = gr.JSON(None, visible=False)  # messages the model did not take, for the box: the server's
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
        # a run picked (by the page's load too): its conversation as the studio keeps it (a reload showed an empty chat)
        ui.run.change(self.on_run, [ui.run], [ui.model, ui.chatbot, ui.conversation, ui.status], **quiet)
        # One writer per value (issue 42, item 7). The page alone writes the outbox (static/chat_outbox.js): the
        # messages sent since the last Clear, each taken from the box, and the box emptied, in the very key or click
        # event that sends it; Clear starts a new epoch. The hidden ui.outbox is its copy, made after each Send,
        # Enter and Clear. The server alone writes what it sent (ui.sent, the chat, the conversation): one event,
        # started by each change of the copy, sends every message of the epoch not sent yet, in order; a change
        # meanwhile is held and runs after it ("always_last"); it keeps the run's conversation in the studio after each
        # message the model took and on a Clear (core/chat_transcripts.py), which a run's pick shows (on_run: a page
        # reloaded gets its run's chat back). (Read from the box when a held send ran, the second
        # of three quick messages was lost or merged with the third; Gradio's own submit reads the box a tick after
        # Enter, when a message typed quickly may have replaced it.)
        send = ui.outbox.change(
            self.on_send,
            [ui.outbox, ui.chatbot, ui.conversation, ui.sent, ui.run, ui.model, ui.temperature],
            [ui.chatbot, ui.status, ui.conversation, ui.sent, ui.returned],
            trigger_mode="always_last",
            **quiet,
        )
        gr.on([ui.send.click, ui.box.submit], None, [ui.outbox], [ui.outbox], js=_COPY_JS, **quiet)
        # Clear ends the reply on its way (its next update would have put the cleared messages back); the send its
        # new epoch starts shows the empty chat
        ui.clear.click(None, [ui.outbox], [ui.outbox], js=_COPY_JS, cancels=[send], **quiet)
        # a message the model did not take goes back to the box, before what was typed since (which stays)
        ui.returned.change(None, [ui.returned], None, js=_GIVE_BACK_JS, **quiet)

    def on_open(self, current):
        ids = self.studio.run_ids()
        value = current if current in ids else (self.studio.latest_run() if ids else None)
        return gr.update(choices=ids, value=value)

    def on_run(self, run_id):
        """The run's models and its conversation as the studio keeps it, with the model it was had with where the
        run still offers that one, else the run's newest checkpoint, else its base model."""
        kept = self.transcripts.get(run_id)
        try:
            models = self.studio.model_choices(run_id) if run_id else []
        except ValueError:
            models = []
        if not models:
            return gr.update(choices=[], value=None), kept.history, kept.conversation, kept.status
        latest = self.studio.checkpoints(run_id)
        value = kept.model if kept.model in [v for _label, v in models] else (latest[-1] if latest else "base")
        return gr.update(choices=models, value=value), kept.history, kept.conversation, kept.status

    def on_send(self, outbox, history, conversation, sent, run_id, model, temperature):
        """Every message of the ``outbox`` (the page's: ``{"epoch": clears so far, "messages": [sent since]}``) not
        sent yet, in order, each answered before the next. ``sent`` (``[epoch, how many of its messages]``) is
        what this has sent; an outbox of another epoch was cleared: a new conversation. A message the model did not
        take goes back to the page (``returned``: the box gets it) with those after it, unsent."""
        epoch, messages = _read_outbox(outbox)
        history, conversation = list(history or []), list(conversation or [])
        sent_epoch, done = (list(sent) + [0, 0])[:2] if isinstance(sent, (list, tuple)) else (0, 0)
        status = gr.update()
        if sent_epoch != epoch:  # cleared
            history, conversation, done, status = [], [], 0, ""
            self.transcripts.forget(run_id)
        if done >= len(messages):  # nothing new: the chat as it is (or as cleared)
            yield history, status, conversation, [epoch, done], gr.update()
            return
        for i in range(done, len(messages)):
            replies = self.reply(messages[i], history, conversation, run_id, model, temperature, i == len(messages) - 1)
            for shown, status, said, taken in replies:
                if taken is False:  # back to the box, with those after it
                    returned = {"id": f"{epoch}:{i}", "texts": [t for t in messages[i:] if t.strip()]}
                    yield shown, status, said, [epoch, len(messages)], returned
                    return
                if taken:  # the run's conversation, for a page that picks the run later (a reload)
                    kept = status if isinstance(status, str) else self.transcripts.get(run_id).status
                    self.transcripts.put(run_id, model, shown, said, kept)
                yield shown, status, said, [epoch, i + 1 if taken else i], gr.update()
            history, conversation = shown, said

    def reply(self, text, history, conversation, run_id, model, temperature, last: bool = True):
        """The reply to ``text``. ``history`` is what the chat shows (in Gradio's format, never sent to the model);
        ``conversation`` is what the model is sent: the earlier turns as the model saw and wrote them (tool calls
        and results among them), one more turn once the reply is done. Yields ``(history, status, conversation,
        taken)``: ``taken`` is None while the reply comes, True on the last update once the model took the turn
        (the status says ready if this is the ``last`` message to send), False on the last if it did not (the
        chat as before it, the status says why)."""
        history, conversation = list(history or []), list(conversation or [])
        text = (text or "").strip()
        if not text:
            yield history, gr.update(), conversation, True
            return
        if not run_id or not model:
            yield (
                history,
                f'<div class="aw-msg aw-msg-error">{_("Pick a run and a model first.")}</div>',
                conversation,
                False,
            )
            return
        user = {"role": "user", "content": text}
        shown = len(history)
        history.append(dict(user))
        reply = {"role": "assistant", "content": ""}
        history.append(reply)
        status = str(macro("tabs/chat.html", "status")(model, run_id))  # a str: the notes below are added to it
        restarted, restarts_before, context, raw = None, self.service.restarts, "", ""
        yield history, status + f' <span class="aw-muted">— {_("loading the model…")}</span>', conversation, None
        try:
            path = str(self.studio.run_path(run_id))
            for event in self.service.stream(path, model, conversation + [user], float(temperature or 0.0)):
                kind = event.get("type")
                if kind == "restarted":  # said before the reply, folded like the tool lines
                    restarted = event.get("cause") or ""
                    history.insert(shown + 1, restart_note(restarted))
                    yield history, status, conversation, None
                elif kind == "context":
                    context = context_note(event)
                    yield history, status + context, conversation, None
                elif kind == "token":
                    raw += event["text"]
                    reply.pop("metadata", None)
                    reply.update(streaming_reply(raw))
                    yield history, status + context, conversation, None
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
                    yield history, status + context, conversation, None
                elif kind == "error":
                    raise ChatError(event.get("message", "error"))
                elif kind == "done":
                    conversation = conversation + [user, *(event.get("trajectory") or [])]
            if not reply["content"] and not reply.get("metadata"):
                history.remove(reply)
            ready = f' <span class="aw-muted" data-testid="chat-ready">— {_("ready")}</span>' if last else ""
            yield history, status + context + ready, conversation, True
        except (ChatError, ValueError) as e:
            # the model did not take this turn: the chat shows what it did take (the message goes back to the box)
            history = history[:shown] + [
                m for m in history[shown:] if "restarted" in (m.get("metadata") or {}).get("title", "")
            ]
            if restarted is None and self.service.restarts > restarts_before:  # it stopped, then failed to load
                restarted = self.service.last_cause
            yield (
                history,
                macro("tabs/chat.html", "error")(e, restarted),
                conversation,
                False,
            )


def _read_outbox(outbox) -> tuple[int, list[str]]:
    """(epoch, messages) of the page's outbox; an outbox not of that shape is an empty one of epoch 0."""
    if not isinstance(outbox, dict):
        return 0, []
    epoch, messages = outbox.get("epoch"), outbox.get("messages")
    if not isinstance(epoch, int) or not isinstance(messages, list):
        return 0, []
    return epoch, [m if isinstance(m, str) else "" for m in messages]


def outbox_js() -> str:
    """The page's script that keeps Chat's outbox (static/chat_outbox.js; run with the title's js_on_load)."""
    return (Path(__file__).parents[1] / "static" / "chat_outbox.js").read_text(encoding="utf-8")


#: After Send, Enter and Clear: the page's outbox copied into ui.outbox (as it was, without the page's script)
_COPY_JS = """(copy) => [window.awChat ? window.awChat.outbox() : copy]"""

#: Messages the model did not take, back into the box (before what was typed since)
_GIVE_BACK_JS = (
    """(returned) => { if (window.awChat && returned) window.awChat.giveBack(returned.texts); return []; }"""
)

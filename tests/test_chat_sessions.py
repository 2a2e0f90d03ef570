"""Chat keeps a conversation, the second message and every one after it: a model-based test of the Chat tab's
handler with real tiny checkpoints. Seeded random sessions of sending a message, clearing, and the model's
process dying between messages; after each step the conversation the model is sent equals the model of it (every
user turn since the last Clear, the replies, tool calls and tool results between them), the chat's history makes
the round trip through Gradio's Chatbot as it does in the browser (its format is not the model's), and the
model's prompt holds the earlier turns until the context is full — then the oldest go, and the status says so.
"""

from __future__ import annotations

from testing.calc_run import calc_run

import json
import os
import random
import shutil
import signal
from pathlib import Path

import gradio as gr
import pytest

from aworld_gui.rendering.i18n import _
from aworld_gui.tabs.chat_tab import ChatTab
from aworld_gui.worker.check_worker import CheckWorker
from aworld_gui.core.studio import Studio
from engines.core.modules import Modules
from engines.inference.chat_context import ContextFull, fit, split_turns
from engines.core.prepare import prepare_run

A = Path(__file__).resolve().parent.parent / "assets"


class Session:
    """The Chat tab as the page drives it: each value goes out and comes back through the components. The page's
    outbox gets each message sent (Send, Enter) and a new epoch on Clear; each change of it runs on_send."""

    def __init__(self, studio: Studio, run_id: str, model: str = "base"):
        self.tab = ChatTab(studio)
        with gr.Blocks():
            self.ui = self.tab.build()
        self.run_id, self.model = run_id, model
        self.shown: list = []  # the Chatbot's value, in the format the page sends back
        self.conversation: list = []  # the State the page holds
        self.sent = json.loads(json.dumps(self.ui.sent.value))  # the State of what was sent, the page's copy
        self.outbox = json.loads(json.dumps(self.ui.outbox.value))  # the page's, as _TAKE_JS and _CLEAR_JS write it
        self.status = ""
        self.returned = None
        self.contexts: list[dict] = []

    def send(self, *texts: str) -> None:
        """``texts`` sent from the page, one after the other, before the event that sends them runs (a message
        sent while a reply streams waits for it: those sent meanwhile go in the next event, together)."""
        self.outbox = {**self.outbox, "messages": [*self.outbox["messages"], *texts]}
        self.changed()
        assert "chat-ready" in str(self.status), self.status
        assert self.returned is None and self.sent == [self.outbox["epoch"], len(self.outbox["messages"])]

    def clear(self) -> None:
        self.outbox = {"epoch": self.outbox["epoch"] + 1, "messages": []}
        self.changed()
        assert (self.shown, self.status, self.conversation) == ([], "", [])

    def changed(self) -> None:
        """The outbox changed: on_send runs, its last update lands."""
        service = self.tab.service
        seen = []
        stream = service.stream

        def spy(*a, **k):  # what the model process answered, to read its "context" events
            for event in stream(*a, **k):
                seen.append(event)
                yield event

        service.stream = spy
        try:
            updates = list(
                self.tab.on_send(
                    json.loads(json.dumps(self.outbox)),  # as the page sends it
                    self.ui.chatbot.preprocess(self.ui.chatbot.postprocess(self.shown)),
                    self.conversation,
                    self.sent,
                    self.run_id,
                    self.model,
                    0.0,
                )
            )
        finally:
            service.stream = stream
        shown, status, conversation, self.sent, returned = updates[-1]
        self.status = self.status if status == gr.update() else status
        self.shown = self.shown if shown == gr.update() else shown
        self.returned = None if returned == gr.update() else returned
        self.conversation = json.loads(json.dumps(conversation))  # a State's copy, as the page keeps it
        self.contexts = [e for e in seen if e["type"] == "context"]


def user_texts(conversation: list[dict]) -> list[str]:
    return [m["content"] for m in conversation if m["role"] == "user"]


@pytest.fixture
def studio(tmp_path):
    studio = Studio(tmp_path / "runs", worker=CheckWorker())  # not started: chat needs no check worker
    yield studio
    studio.chat.stop()


def small_context_agent(tmp_path: Path, tokens: int) -> str:
    """The letters agent over a copy of its tiny model that declares a context of ``tokens``."""
    model = tmp_path / "tiny-letters-short"
    shutil.copytree(A / "models/tiny-letters", model)
    cfg = json.loads((model / "tokenizer_config.json").read_text())
    cfg["model_max_length"] = tokens
    (model / "tokenizer_config.json").write_text(json.dumps(cfg))
    agent = (A / "agents/letters_agent.yaml").read_text().replace("../models/tiny-letters", str(model))
    path = tmp_path / "short_agent.yaml"
    path.write_text(agent)
    return str(path)


@pytest.mark.parametrize("seed", range(4))
def test_random_sessions_keep_the_conversation_until_the_context_is_full(tmp_path, studio, demo, seed):
    """Steps: send (most often), clear, the model's process killed. The model: the user turns since the last
    Clear. With a 64-token context the oldest turns must go after a few messages: the status says how many."""
    rng = random.Random(seed)
    agent = small_context_agent(tmp_path, 64)
    run = prepare_run(
        Modules(agent, demo["train"], demo["test"], demo["reward"], {"max_steps": 1}, train_engine_name="trl"),
        runs_dir=str(studio.runs_dir),
    )
    s = Session(studio, run.run_id)
    model: list[str] = []
    last_tokens = 0
    for _step in range(8):
        action = rng.choices(["send", "send_two", "clear", "kill"], [5, 1, 1, 1])[0]
        if action == "clear":
            s.clear()
            model, last_tokens = [], 0
            continue
        if action == "kill" and studio.chat._proc is not None and studio.chat._proc.poll() is None:
            os.kill(studio.chat._proc.pid, signal.SIGKILL)
            studio.chat._proc.wait(timeout=10)
        texts = [f"Say the letter {rng.choice('ABCDEFGH')}:" for _ in range(2 if action == "send_two" else 1)]
        s.send(*texts)
        model += texts
        assert user_texts(s.conversation) == model  # every turn since Clear, in order
        assert [m["role"] for m in s.conversation].count("assistant") == len(model)  # each with its reply
        replies = [m for m in s.shown if "restarted" not in str((m.get("metadata") or {}).get("title"))]
        assert [m["role"] for m in replies] == ["user", "assistant"] * len(model)  # the chat: each, answered
        assert len(s.contexts) == len(texts)  # one model call each
        ctx = s.contexts[-1]
        assert ctx["limit"] == 64 and ctx["kept"] + ctx["dropped"] == len(model)
        assert ctx["tokens"] <= 64 - 2  # room left for the reply (max_tokens 2)
        if len(model) >= 5:
            assert ctx["dropped"] > 0  # 64 tokens do not hold five turns of this template
        if ctx["dropped"]:
            assert f'data-dropped="{ctx["dropped"]}"' in str(s.status)  # said, with how many
        else:
            assert "chat-dropped" not in str(s.status)
            assert ctx["tokens"] > last_tokens  # the earlier turns are in the prompt
        last_tokens = ctx["tokens"]


def test_a_conversation_with_tool_calls_carries_them_into_the_next_message(tmp_path, studio):
    """The calc agent calls add(); the second message is sent with the first turn's call and result (the
    template renders them) and answered; a third after the model's process died still has all of it."""
    run = calc_run(studio.runs_dir)
    s = Session(studio, run.run_id)
    s.send("What is 3 + 4?")
    roles = [m["role"] for m in s.conversation]
    assert roles[:3] == ["user", "assistant", "tool"] and s.conversation[2]["content"] == "7"
    assert s.conversation[1]["tool_calls"][0]["function"]["name"] == "add"
    first_tokens, first = s.contexts[0]["tokens"], list(s.conversation)
    s.send("What is 1 + 1?")
    assert user_texts(s.conversation) == ["What is 3 + 4?", "What is 1 + 1?"]
    # the first turn's call and result stay in it; the reply came (the tiny model, trained on one-turn prompts,
    # need not call the tool again with a history before the question)
    assert s.conversation[: len(first)] == first and s.conversation[len(first)]["role"] == "user"
    assert s.conversation[-1]["role"] == "assistant" and len(s.conversation) > len(first) + 1
    assert s.contexts[0]["kept"] == 2 and s.contexts[0]["dropped"] == 0
    assert s.contexts[0]["tokens"] > first_tokens + 10  # the first turn, its call and result included
    os.kill(studio.chat._proc.pid, signal.SIGKILL)
    studio.chat._proc.wait(timeout=10)
    s.send("What is 2 + 5?")
    assert user_texts(s.conversation) == ["What is 3 + 4?", "What is 1 + 1?", "What is 2 + 5?"]
    assert s.contexts[0]["kept"] == 3
    assert any("restarted" in str((m.get("metadata") or {}).get("title")) for m in s.shown)
    s.clear()
    s.send("What is 3 + 4?")  # after Clear: a conversation of one turn
    assert user_texts(s.conversation) == ["What is 3 + 4?"] and s.contexts[0]["kept"] == 1


def test_fit_drops_whole_oldest_turns_and_never_the_system_prompt_or_the_last():
    msgs = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u1"},
        {"role": "assistant", "content": "", "tool_calls": [{}]},
        {"role": "tool", "content": "r1"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "u2"},
        {"role": "assistant", "content": "a2"},
        {"role": "user", "content": "u3"},
    ]
    system, turns = split_turns(msgs)
    assert system == msgs[:1] and [len(t) for t in turns] == [4, 2, 1]
    count = len  # one "token" per message
    assert fit(msgs, count, 8) == (msgs, 0)
    assert fit(msgs, count, 7) == (msgs[:1] + msgs[5:], 1)  # a turn goes whole, tool lines with it
    assert fit(msgs, count, 2) == (msgs[:1] + msgs[7:], 2)
    with pytest.raises(ContextFull, match="write a shorter message"):
        fit(msgs, count, 1)


def test_messages_the_model_did_not_take_go_back_to_the_box_and_are_not_sent_again(tmp_path, studio, demo):
    """Three messages sent while the chosen checkpoint fails to load: none in the chat, all three back to the box
    (returned, in order), none sent again by the next event; the model switched, the next message is sent alone.
    Without a model picked, the message goes back too."""
    run = prepare_run(
        Modules(demo["agent"], demo["train"], demo["test"], demo["reward"], {"max_steps": 1}, train_engine_name="trl"),
        runs_dir=str(studio.runs_dir),
    )
    s = Session(studio, run.run_id, model="checkpoint-9")  # it has none: it cannot load
    three = ["Say the letter A:", "Say the letter B:", "Say the letter C:"]
    s.outbox = {**s.outbox, "messages": three}
    s.changed()
    assert "could not load" in s.status and "checkpoint-9" in s.status and 'data-testid="chat-error"' in s.status
    assert s.returned == {"id": "0:0", "texts": three} and s.sent == [0, 3]
    assert s.shown == [] and s.conversation == []
    s.changed()  # a held event runs on the same outbox: nothing new, nothing sent again
    assert s.returned is None and s.shown == [] and s.sent == [0, 3]
    s.model = "base"
    s.send("Say the letter D:")
    assert user_texts(s.conversation) == ["Say the letter D:"] and len(s.contexts) == 1
    s.model = None
    s.outbox = {**s.outbox, "messages": [*s.outbox["messages"], "Say the letter E:"]}
    s.changed()
    assert str(_("Pick a run and a model first.")) in s.status
    assert s.returned == {"id": "0:4", "texts": ["Say the letter E:"]} and s.sent == [0, 5]
    assert user_texts(s.conversation) == ["Say the letter D:"]  # the chat as it was


def test_a_reloaded_page_gets_the_runs_conversation_back_and_goes_on_with_it(tmp_path, studio, demo):
    """A page's States end with a reload; the run's conversation does not (a newcomer's leftover of issue 42: the chat
    showed empty after a reload). A new page picking the run shows its conversation, the model it was had with and
    the status, sends on from there, and a Clear there clears it for the next page too."""
    run = prepare_run(
        Modules(demo["agent"], demo["train"], demo["test"], demo["reward"], {"max_steps": 1}, train_engine_name="trl"),
        runs_dir=str(studio.runs_dir),
    )

    def reload() -> Session:
        page = Session(studio, run.run_id, model=None)
        model, page.shown, page.conversation, page.status = page.tab.on_run(run.run_id)
        page.model = model["value"]
        return page

    s = reload()
    assert (s.model, s.shown, s.conversation, s.status) == ("base", [], [], "")  # a run never chatted with
    s.send("Say the letter A:")
    s.send("Say the letter B:")
    again = reload()
    assert (again.model, again.shown, again.conversation, again.status) == ("base", s.shown, s.conversation, s.status)
    again.send("Say the letter C:")
    assert user_texts(again.conversation) == ["Say the letter A:", "Say the letter B:", "Say the letter C:"]
    assert [m["role"] for m in again.shown] == ["user", "assistant"] * 3  # the chat shows each, answered
    again.clear()
    assert reload().shown == [] and reload().conversation == []

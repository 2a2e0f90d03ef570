"""Chat with a checkpoint: a process of its own (never the studio's), loaded on first use, the agent's
system prompt and tools applied (tool calls run), the reply streamed; restarted when it died, with the
cause; gone after its idle time."""

from __future__ import annotations

import os
import signal

import psutil
import pytest

from aworld_gui.core.chat_client import ChatService
from engines.core.modules import Modules
from engines.core.prepare import prepare_run
from testing.calc_run import calc_run
from testing.waiting import wait_for


def reply(service, run_dir, model, text):
    events = list(service.stream(str(run_dir), model, [{"role": "user", "content": text}], temperature=0.0))
    assert events[-1]["type"] == "done", events[-3:]
    return events


def test_the_trained_checkpoint_answers_with_its_letter(trained_letters, tmp_path):
    service = ChatService(tmp_path, idle_timeout_s=120)
    run = trained_letters.train_processor.run
    try:
        for letter in "CF":
            events = reply(service, run.path, "checkpoint-300", f"Say the letter {letter}:")
            tokens = "".join(e["text"] for e in events if e["type"] == "token")
            final = [e["message"] for e in events if e["type"] == "message"][-1]
            assert final["content"].strip().startswith(letter) and tokens.strip().startswith(letter)
            assert sum(e["type"] == "token" for e in events) >= 1  # streamed
        pid = service._proc.pid
        assert pid != os.getpid() and "engines" in " ".join(psutil.Process(pid).cmdline())  # its own process
    finally:
        service.stop()


def test_the_calc_agents_chat_runs_its_tool(tmp_path):
    run = calc_run(tmp_path / "runs")
    service = ChatService(tmp_path / "runs", idle_timeout_s=120)
    try:
        events = reply(service, run.path, "base", "What is 3 + 4?")
        call = next(e["message"] for e in events if e["type"] == "message" and e["message"].get("tool_calls"))
        result = next(e["message"] for e in events if e["type"] == "tool")
        assert call["tool_calls"][0]["function"] == {"name": "add", "arguments": {"a": 3, "b": 4}}
        assert result == {"role": "tool", "name": "add", "content": "7"}
        assert "7" in [e["message"] for e in events if e["type"] == "message"][-1]["content"]
        # the process dies: the next message starts it again and says why it had to
        os.kill(service._proc.pid, signal.SIGKILL)
        service._proc.wait(timeout=10)
        events = reply(service, run.path, "base", "What is 1 + 1?")
        assert any(e["type"] == "tool" and e["message"]["content"] == "2" for e in events)
        assert service.restarts == 1 and service.last_cause
    finally:
        service.stop()


def test_a_tool_call_shows_folded_as_json_from_its_first_token():
    """The calc model's tokens, as it streams them: the raw ``<tool_call>`` markup showed until its turn ended."""
    from aworld_gui.tabs.chat_tab import streaming_reply

    tokens = ["<tool", "_call>\n", '{"name": ', '"add", ', '"arguments": ', '{"a": 3, "b": 4}}\n', "</tool_call>"]
    shown = [streaming_reply("".join(tokens[: i + 1])) for i in range(len(tokens))]
    assert all(v["metadata"]["title"] == "🛠 calling a tool…" for v in shown)
    assert all("<tool_call>" not in v["content"] and "</tool_call>" not in v["content"] for v in shown)
    assert shown[-1]["content"] == '```json\n{"name": "add", "arguments": {"a": 3, "b": 4}}\n```'
    assert streaming_reply("The answer") == {"content": "The answer"}
    said = streaming_reply('Let me add.<tool_call>\n{"name": ')
    assert said["content"].startswith('Let me add.\n\n```json\n{"name":')


def test_the_chat_tab_shows_the_calc_agents_call_folded_while_it_streams(tmp_path):
    """Every view of the reply the tab yields while the calc agent calls its tool: never the raw markup."""
    from aworld_gui.core.studio import Studio
    from aworld_gui.tabs.chat_tab import ChatTab
    from aworld_gui.worker.check_worker import CheckWorker

    studio = Studio(tmp_path / "runs", worker=CheckWorker())  # not started: chat needs no check worker
    run = calc_run(studio.runs_dir)
    tab = ChatTab(studio)
    try:
        views = [
            [dict(m) for m in history] for history, *_ in tab.reply("What is 3 + 4?", [], [], run.run_id, "base", 0.0)
        ]
        shown = [m for history in views for m in history if m["role"] == "assistant"]
        assert not [m for m in shown if "<tool_call>" in m["content"]], "the raw markup was shown"
        assert any(m.get("metadata", {}).get("title") == "🛠 calling a tool…" for m in shown)  # while it streamed
        final = views[-1]
        assert final[1]["metadata"]["title"].startswith("🛠 add(")  # the turn's parsed call
        assert final[2]["metadata"]["title"] == "⚙ result of add" and final[2]["content"] == "7"
        assert "7" in final[3]["content"]
    finally:
        studio.chat.stop()


def test_the_model_is_freed_after_its_idle_time(tmp_path, demo):
    run = prepare_run(
        Modules(demo["agent"], demo["train"], demo["test"], demo["reward"], {"max_steps": 1}, train_engine_name="trl"),
        runs_dir=str(tmp_path / "runs"),
    )
    service = ChatService(tmp_path / "runs", idle_timeout_s=3)
    try:
        reply(service, run.path, "base", "Say the letter A:")
        proc = service._proc
        wait_for(lambda: proc.poll() is not None, 60, "the idle model process to exit")
        reply(service, run.path, "base", "Say the letter B:")  # loaded again on the next message
    finally:
        service.stop()


def test_a_model_that_cannot_load_says_why(tmp_path, demo):
    from aworld_gui.core.chat_client import ChatError

    run = prepare_run(
        Modules(demo["agent"], demo["train"], demo["test"], demo["reward"], {"max_steps": 1}, train_engine_name="trl"),
        runs_dir=str(tmp_path / "runs"),
    )
    service = ChatService(tmp_path / "runs", idle_timeout_s=60)
    with pytest.raises(ChatError, match="could not load: run .* has no checkpoint 'checkpoint-9'"):
        list(service.stream(str(run.path), "checkpoint-9", [{"role": "user", "content": "hi"}]))
    service.stop()


def test_the_reply_after_the_model_process_died_says_it_was_restarted_and_why(tmp_path, demo):
    """The chat tab's own handler: a message, the model's process killed, the next message — its reply is
    led by a folded line naming the cause (not sent to the model), and the reply still comes."""
    from aworld_gui.tabs.chat_tab import ChatTab
    from aworld_gui.worker.check_worker import CheckWorker
    from aworld_gui.core.studio import Studio

    studio = Studio(tmp_path / "runs", worker=CheckWorker())  # not started: chat needs no check worker
    run = prepare_run(
        Modules(demo["agent"], demo["train"], demo["test"], demo["reward"], {"max_steps": 1}, train_engine_name="trl"),
        runs_dir=str(studio.runs_dir),
    )
    tab = ChatTab(studio)

    conversation = []

    def send(text, history):
        nonlocal conversation
        updates = list(tab.reply(text, history, conversation, run.run_id, "base", 0.0))
        history, status, conversation, taken = updates[-1]
        assert taken is True and "chat-ready" in str(status), status
        assert f"base · {run.run_id}" in str(status), status  # no English word between them in the zh page
        return history

    def notes(history):
        return [m for m in history if "restarted" in (m.get("metadata") or {}).get("title", "")]

    try:
        history = send("Say the letter A:", [])
        assert notes(history) == []
        assert studio.chat._proc.popen is None  # forked by the studio's fork server, which says how it ends
        os.kill(studio.chat._proc.pid, signal.SIGKILL)
        studio.chat._proc.wait(timeout=10)
        history = send("Say the letter B:", history)
        [note] = notes(history)
        assert note["metadata"]["title"].startswith("⚠ the chat model had stopped (killed by SIGKILL")
        assert note["metadata"]["title"].endswith("and was restarted")
        i = history.index(note)
        assert history[i - 1] == {"role": "user", "content": "Say the letter B:"}
        assert history[i + 1]["role"] == "assistant" and history[i + 1]["content"]  # the reply came
        assert note["content"] not in [m["content"] for m in conversation]  # never sent to the model
        history = send("Say the letter C:", history)
        assert len(notes(history)) == 1  # the process kept running: no new note
    finally:
        studio.chat.stop()

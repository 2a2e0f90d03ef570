"""The Chat tab's conversation with each run, kept by the studio: a page's session ends with a reload, the
conversation does not (after a reload the chat showed empty). One writer: the Chat tab's send handler, after each
message the model took and on a Clear; the tab reads it when a page picks the run."""

from __future__ import annotations

import copy
import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Transcript:
    model: str | None = None  # the model the conversation was last had with
    history: list = field(default_factory=list)  # what the chat shows (Gradio's Chatbot format)
    conversation: list = field(default_factory=list)  # what the model is sent (chat_tab.ChatTab.reply)
    status: Any = ""  # the status line after the last reply (its context note, "ready")


class ChatTranscripts:
    """Each run's last conversation in Chat, by run id (in the studio's memory: a studio restart starts every chat
    anew, as the model's process does)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_run: dict[str, Transcript] = {}

    def get(self, run_id: str | None) -> Transcript:
        """A copy of ``run_id``'s conversation (an empty one when there is none)."""
        with self._lock:
            kept = self._by_run.get(str(run_id)) if run_id else None
            return copy.deepcopy(kept) if kept is not None else Transcript()

    def put(self, run_id: str | None, model: str | None, history: list, conversation: list, status: Any) -> None:
        if not run_id:
            return
        kept = Transcript(model, copy.deepcopy(list(history)), copy.deepcopy(list(conversation)), status)
        with self._lock:
            self._by_run[str(run_id)] = kept

    def forget(self, run_id: str | None) -> None:
        """A Clear, or the run deleted."""
        with self._lock:
            self._by_run.pop(str(run_id), None)

"""The agent's generation loop for evaluation and chat: render with the model's chat template and the
agent's tools, generate in batches, parse tool calls the way TRL's GRPOTrainer does
(``trl.chat_template_utils.parse_response`` after ``add_response_schema``), run the tools through
``AgentSpec.tool_callables()`` (Python and MCP tools alike), append their results as ``tool`` messages
(tool errors go back to the model as results, as TRL does), and repeat up to the agent's max turns.

Imports torch and transformers: only evaluation/chat processes use it, never the studio.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

#: a tool's result longer than this (characters) is cut before it goes back to the model
MAX_TOOL_RESULT_CHARS = 4000


@dataclass
class Trajectory:
    """What one rollout produced after its prompt: assistant and tool messages, in order."""

    messages: list[dict] = field(default_factory=list)
    tool_calls: int = 0
    tool_errors: int = 0
    truncated: bool = False
    tokens: int = 0  # tokens the model generated, every turn's
    turns: int = 0  # model turns taken (1 without tool calls)

    @property
    def completion(self) -> str:
        """The final answer: the last assistant message's text."""
        for m in reversed(self.messages):
            if m.get("role") == "assistant" and m.get("content"):
                return str(m["content"])
        return ""


def tool_result_text(result: Any) -> str:
    text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_TOOL_RESULT_CHARS else text[:MAX_TOOL_RESULT_CHARS] + " …(cut)"


class Toolbox:
    """The agent's tools by name; a call never raises (an error becomes the tool's result)."""

    def __init__(self, callables: list[Callable]):
        self.by_name = {getattr(fn, "__name__", str(i)): fn for i, fn in enumerate(callables)}

    def call(self, name: str, arguments: Any) -> tuple[str, bool, str | None]:
        """(result text, ok, the MCP server it came from)."""
        fn = self.by_name.get(name)
        server = getattr(fn, "mcp_server", None) if fn is not None else None
        if fn is None:
            return tool_result_text({"error": f"Tool {name} not found."}), False, None
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError:
                return tool_result_text({"error": f"arguments are not JSON: {arguments[:200]}"}), False, server
        try:
            return tool_result_text(fn(**(arguments or {}))), True, server
        except Exception as e:  # noqa: BLE001 - a tool error is the model's to read, as in training
            return tool_result_text({"error": str(e)}), False, server


class AgentGenerator:
    """A loaded model + tokenizer + the agent's tools; ``run`` does batched multi-turn rollouts,
    ``stream`` one conversation token by token (chat)."""

    def __init__(
        self,
        model,
        tokenizer,
        tools: list[Callable] | None = None,
        tool_schemas: list[dict] | None = None,
        max_turns: int = 1,
    ):
        from trl.chat_template_utils import add_response_schema

        self.model, self.tokenizer = model, tokenizer
        self.toolbox = Toolbox(tools or [])
        self.schemas = list(tool_schemas or []) or None
        self.max_turns = max(1, int(max_turns))
        if self.schemas:
            try:
                add_response_schema(tokenizer)  # how TRL's trainer parses tool calls
            except Exception:  # noqa: BLE001 - an unknown template: calls are then not parsed
                pass
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        self._parses = (
            getattr(tokenizer, "response_template", None) is not None
            or getattr(tokenizer, "response_schema", None) is not None
        )

    # -- one turn --------------------------------------------------------------------------------
    def render(self, messages: list[dict]) -> str:
        return self.tokenizer.apply_chat_template(
            messages, tools=self.schemas, add_generation_prompt=True, tokenize=False
        )

    def _parse(self, ids: list[int]) -> dict:
        if self.schemas and self._parses:
            from trl.chat_template_utils import parse_response

            msg = parse_response(self.tokenizer, ids, tools=self.schemas)
            msg = {k: v for k, v in msg.items() if k in ("role", "content", "tool_calls")}
            msg.setdefault("content", "")
            return msg
        return {"role": "assistant", "content": self.tokenizer.decode(ids, skip_special_tokens=True)}

    def _generate(self, texts: list[str], sampling: dict, max_new_tokens: int) -> list[list[int]]:
        import torch

        tok = self.tokenizer
        side = tok.padding_side
        tok.padding_side = "left"
        try:
            enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.model.device)
        finally:
            tok.padding_side = side
        with torch.no_grad():
            out = self.model.generate(**enc, max_new_tokens=max_new_tokens, pad_token_id=tok.pad_token_id, **sampling)
        width = enc["input_ids"].shape[1]
        pad, eos = tok.pad_token_id, tok.eos_token_id
        result = []
        for row in out[:, width:].tolist():
            while row and row[-1] == pad and pad != eos:
                row.pop()
            result.append(row)
        return result

    @staticmethod
    def sampling(temperature: float, top_p: float = 1.0) -> dict:
        if not temperature or temperature <= 0:
            return {"do_sample": False}
        return {"do_sample": True, "temperature": float(temperature), "top_p": float(top_p)}

    # -- batched rollouts --------------------------------------------------------------------------
    def run(
        self,
        conversations: list[list[dict]],
        max_new_tokens: int,
        temperature: float = 0.0,
        top_p: float = 1.0,
        batch_size: int = 32,
    ) -> list[Trajectory]:
        """One trajectory per conversation (each a list of chat messages ending with the user's)."""
        sampling = self.sampling(temperature, top_p)
        trajectories = [Trajectory() for _ in conversations]
        history = [list(c) for c in conversations]
        pending = list(range(len(conversations)))
        for _turn in range(self.max_turns):
            if not pending:
                break
            next_pending = []
            for start in range(0, len(pending), batch_size):
                chunk = pending[start : start + batch_size]
                outs = self._generate([self.render(history[i]) for i in chunk], sampling, max_new_tokens)
                for i, ids in zip(chunk, outs):
                    msg = self._parse(ids)
                    traj = trajectories[i]
                    traj.tokens += len(ids)
                    traj.turns += 1
                    traj.messages.append(msg)
                    history[i].append(msg)
                    if len(ids) >= max_new_tokens and not msg.get("tool_calls"):
                        traj.truncated = True
                    if msg.get("tool_calls"):
                        for result in self._run_tools(msg["tool_calls"], traj):
                            history[i].append(result)
                        next_pending.append(i)
            pending = next_pending
        return trajectories

    def _run_tools(self, calls: list[dict], traj: Trajectory) -> list[dict]:
        results = []
        for call in calls:
            fn = call.get("function") or {}
            name = fn.get("name") or call.get("name") or "unknown"
            text, ok, server = self.toolbox.call(name, fn.get("arguments"))
            traj.tool_calls += 1
            traj.tool_errors += 0 if ok else 1
            if server:
                call["server"] = server
            message = {"role": "tool", "name": name, "content": text}
            if server:
                message["server"] = server
            traj.messages.append(message)
            results.append(message)
        return results

    # -- one conversation, streamed ----------------------------------------------------------------
    def count_tokens(self, messages: list[dict]) -> int:
        return len(self.tokenizer(self.render(messages), add_special_tokens=False)["input_ids"])

    def stream(
        self, messages: list[dict], max_new_tokens: int, temperature: float = 0.0, top_p: float = 1.0
    ) -> Iterator[dict]:
        """Events for a chat reply: ``{"type": "token", "text"}`` as the model writes, then per turn
        ``{"type": "message", "message"}``; tool calls run between turns
        (``{"type": "tool", "message"}``); ends with ``{"type": "done", "trajectory": [...]}``.

        ``messages`` is the whole conversation (earlier turns with their tool calls and results): each model
        turn sees as much of it as fits the model's context with ``max_new_tokens`` to spare
        (engines/inference/chat_context.py); ``{"type": "context", "kept", "dropped", "limit", "tokens"}`` (the prompt's length) comes first, and again
        when more old turns had to go (``dropped``: turns left out, oldest first)."""
        from transformers import TextIteratorStreamer

        from .chat_context import context_limit, fit

        history = list(messages)
        traj = Trajectory()
        sampling = self.sampling(temperature, top_p)
        limit = context_limit(self.model, self.tokenizer)
        budget = None if limit is None else max(1, limit - max_new_tokens)
        said = None
        for _turn in range(self.max_turns):
            history, dropped = fit(history, self.count_tokens, budget)
            text = self.render(history)
            if said is None or dropped:
                said = (said or 0) + dropped
                yield {
                    "type": "context",
                    "kept": sum(m.get("role") == "user" for m in history),
                    "dropped": said,
                    "limit": limit,
                    "tokens": len(self.tokenizer(text, add_special_tokens=False)["input_ids"]),
                }
            enc = self.tokenizer([text], return_tensors="pt", add_special_tokens=False).to(self.model.device)
            streamer = TextIteratorStreamer(self.tokenizer, skip_prompt=True, skip_special_tokens=True)
            ids_box: dict[str, Any] = {}

            def work():
                import torch

                with torch.no_grad():
                    out = self.model.generate(
                        **enc,  # noqa: B023
                        max_new_tokens=max_new_tokens,
                        streamer=streamer,  # noqa: B023
                        pad_token_id=self.tokenizer.pad_token_id,
                        **sampling,
                    )
                ids_box["ids"] = out[0, enc["input_ids"].shape[1] :].tolist()  # noqa: B023

            worker = threading.Thread(target=work, daemon=True)
            worker.start()
            for piece in streamer:
                if piece:
                    yield {"type": "token", "text": piece}
            worker.join()
            msg = self._parse(ids_box.get("ids") or [])
            traj.messages.append(msg)
            history.append(msg)
            yield {"type": "message", "message": msg}
            if not msg.get("tool_calls"):
                break
            for result in self._run_tools(msg["tool_calls"], traj):
                history.append(result)
                yield {"type": "tool", "message": result}
        yield {"type": "done", "trajectory": traj.messages, "tool_calls": traj.tool_calls}

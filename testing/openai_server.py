"""A tiny OpenAI-compatible chat-completions server on 127.0.0.1 (a thread), for judge tests.

``POST /v1/chat/completions`` answers by ``mode``: ``grade`` replies ``10`` when the user message's
``Reply:`` line contains its ``Reference:`` line's value, else ``0``; ``garbage`` replies text without
a number; ``slow`` sleeps ``delay`` seconds first; ``status`` answers HTTP ``status_code``. Requests
without ``Authorization: Bearer <key>`` (when a key is set) get 401. Every request is recorded.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ChatServer:
    def __init__(self, mode: str = "grade", key: str | None = None, delay: float = 0.0, status_code: int = 500):
        self.mode, self.key, self.delay, self.status_code = mode, key, delay, status_code
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                server.requests.append(body)
                server.headers.append({k.lower(): v for k, v in self.headers.items()})
                if server.key and self.headers.get("Authorization") != f"Bearer {server.key}":
                    return self._send(401, {"error": {"message": "bad key", "type": "invalid_request_error"}})
                if not self.path.endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": "not found"}})
                if server.mode == "status":
                    return self._send(server.status_code, {"error": {"message": "judge overloaded"}})
                if server.mode == "slow":
                    time.sleep(server.delay)
                text = body["messages"][-1]["content"]
                reply = server.reply(text)
                self._send(
                    200,
                    {
                        "id": "chatcmpl-test",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model", "judge"),
                        "choices": [
                            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": reply}}
                        ],
                        "usage": {
                            "prompt_tokens": len(text.split()),
                            "completion_tokens": 1,
                            "total_tokens": len(text.split()) + 1,
                        },
                    },
                )

            def _send(self, code: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="chat-server", daemon=True)

    def reply(self, text: str) -> str:
        if self.mode == "garbage":
            return "I would rather not say."
        ref = re.search(r"Reference:\s*(.*)", text)
        got = re.search(r"Reply:\s*(.*)", text, re.S)
        good = bool(ref and got and ref.group(1).strip() and ref.group(1).strip() in got.group(1))
        return "Score: 10" if good else "Score: 0"

    def __enter__(self) -> "ChatServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

"""A real local HTTP server standing in for an LLM provider (test equipment).

It speaks the two wire formats the deep plugin's SDK clients use, on
127.0.0.1 with an ephemeral port: OpenAI-compatible ``POST /v1/chat/completions``
and Anthropic's ``POST /v1/messages``. Replies come from a script, in order;
each is either the text the model "says" (usage is counted from the request
the way a provider would, about four bytes a token) or a raw HTTP reply
(status, headers, body) for rate limits and outages. Every request body is
kept so tests can count calls and read what was sent.
"""

from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Raw:
    """An HTTP reply sent as is (e.g. a 429 with Retry-After, a 503)."""

    status: int
    body: dict[str, Any] | str = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)


def _tokens(text: str) -> int:
    return max(1, math.ceil(len(text.encode("utf-8")) / 4))


class FakeLLM:
    """Start with ``with FakeLLM(replies) as server:``; ``server.url`` is the base URL."""

    def __init__(self, replies: list[Any] | None = None, default: str | None = None) -> None:
        self.replies = list(replies or [])
        self.default = default
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802
                n = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                with owner._lock:
                    owner.requests.append(body)
                    owner.paths.append(self.path)
                    owner.headers.append({k.lower(): v for k, v in self.headers.items()})
                    reply = owner.replies.pop(0) if owner.replies else owner.default
                if reply is None:
                    reply = Raw(500, {"error": {"message": "script exhausted"}})
                if isinstance(reply, Raw):
                    payload = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                    self._send(reply.status, payload, reply.headers)
                    return
                if callable(reply):
                    reply = reply(body)
                self._send(200, json.dumps(owner._shape(self.path, body, str(reply))), {})

            def _send(self, status: int, payload: str, headers: dict[str, str]) -> None:
                data = payload.encode("utf-8")
                try:
                    self._head(status, data, headers)
                except (BrokenPipeError, ConnectionResetError):
                    return
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                    pass

            def _head(self, status: int, data: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _shape(self, path: str, body: dict[str, Any], text: str) -> dict[str, Any]:
        max_tokens = int(body.get("max_tokens") or 10_000)
        text = text[: max_tokens * 4]
        prompt = "".join(str(m.get("content", "")) for m in body.get("messages", []))
        prompt += str(body.get("system", ""))
        tin, tout = _tokens(prompt) + 4 * len(body.get("messages", [])), min(max_tokens, _tokens(text))
        if path.endswith("/messages"):
            return {"id": "msg_test", "type": "message", "role": "assistant", "model": body.get("model"),
                    "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                    "stop_sequence": None, "usage": {"input_tokens": tin, "output_tokens": tout}}
        return {"id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": body.get("model"),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": tin, "completion_tokens": tout, "total_tokens": tin + tout}}

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def calls(self) -> int:
        return len(self.requests)

    def __enter__(self) -> FakeLLM:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

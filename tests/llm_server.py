"""A real HTTP server on 127.0.0.1 that speaks the chat-completions protocol with scripted replies.

Tests hand it a ``responder(body) -> Reply`` (or a list of replies served in order; with
``with_headers=True`` a ``responder(body, headers)``) and point the client at ``server.base_url``. Every received request is kept (JSON body and headers) so a test can
count what was sent and check that no secret leaked into the payload.

A re-ask of a malformed reply appends a repair turn to the conversation (mtrbench.llm.reask). Responders
see the request as first asked, without that turn, so a scripted model answers a re-ask as it answered the
question (``show_repairs=True`` shows them the whole body); ``server.requests`` always holds what was sent.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from mtrbench.llm.reask import without_repair


@dataclass
class Reply:
    content: str | None = None  # the assistant message text
    status: int = 200
    delay_s: float = 0.0  # sleep before answering (to trigger client timeouts)
    headers: dict[str, str] = field(default_factory=dict)  # e.g. {"Retry-After": "1"}
    body: Any = None  # raw body (dict or str) instead of a built completion
    prompt_tokens: int = 11
    completion_tokens: int = 7


Responder = Callable[[dict[str, Any]], Reply]


def completion_body(content: str, model: str, prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def sequence(replies: Sequence[Reply | str], then: Reply | str | None = None) -> Responder:
    """Serve ``replies`` in arrival order; afterwards ``then`` (or the last reply) forever."""
    queue = [r if isinstance(r, Reply) else Reply(r) for r in replies]
    tail = then if then is not None else (queue[-1] if queue else Reply("ok"))
    tail = tail if isinstance(tail, Reply) else Reply(tail)
    lock = threading.Lock()

    def respond(_body: dict[str, Any]) -> Reply:
        with lock:
            return queue.pop(0) if queue else tail

    return respond


class _QuietServer(ThreadingHTTPServer):
    """A client that drops its connection while the request line is read (a run that stops on an error closes
    its pooled connections) is not a server failure: socketserver would print a traceback to stderr, which the
    tests' one-error-line checks would read."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class ScriptedChatServer:
    """``with ScriptedChatServer(responder) as server: ... server.base_url ... server.requests``."""

    def __init__(
        self, responder: Responder | Sequence[Reply | str], *, with_headers: bool = False, show_repairs: bool = False
    ) -> None:
        self.responder: Responder = responder if callable(responder) else sequence(responder)
        self.with_headers = with_headers
        self.show_repairs = show_repairs
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server naming)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {"_unparsed": raw.decode("utf-8", "replace")}
                with server._lock:
                    server.requests.append(body)
                    server.headers.append(dict(self.headers.items()))
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}}, {})
                    return
                shown = body
                if not server.show_repairs and isinstance(body.get("messages"), list):
                    shown = {**body, "messages": without_repair(body["messages"])}
                if server.with_headers:
                    reply = server.responder(shown, dict(self.headers.items()))
                else:
                    reply = server.responder(shown)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.body is not None:
                    payload = reply.body
                elif reply.status == 200:
                    payload = completion_body(
                        reply.content or "",
                        body.get("model", "test-model"),
                        reply.prompt_tokens,
                        reply.completion_tokens,
                    )
                else:
                    payload = {
                        "error": {
                            "message": reply.content or f"status {reply.status}",
                            "type": "server_error",
                            "code": reply.status,
                        }
                    }
                self._send(reply.status, payload, reply.headers)

            def _send(self, status: int, payload: Any, headers: dict[str, str]) -> None:
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    def __enter__(self) -> ScriptedChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

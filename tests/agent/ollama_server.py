"""A loopback HTTP server that answers the way Ollama does, with replies queued by the test.

It speaks what kernelwright's clients call: GET /api/tags; POST /api/chat, answered as Ollama
answers (a chunked stream of NDJSON lines ending in a `done: true` line with the timing counts,
or one JSON object when the request says `"stream": false`); and the OpenAI-compatible
POST /v1/chat/completions that Ollama also serves. An unknown model gets Ollama's 404. Every
request body is kept in `requests`; `stop()` closes the port, as a server that is down.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CREATED_AT = "2025-06-12T09:41:07.516204Z"
# The final line's counts, as Ollama sends them (durations in nanoseconds).
DONE_COUNTS = {
    "total_duration": 5188343291,
    "load_duration": 21408125,
    "prompt_eval_count": 1187,
    "prompt_eval_duration": 264517000,
    "eval_count": 412,
    "eval_duration": 4898112000,
}


@dataclass
class Reply:
    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    done_reason: str = "stop"
    delay_s: float = 0.0  # wait before answering (to test timeouts)


def tool_call(name: str, arguments: dict[str, Any], index: int = 0) -> dict[str, Any]:
    """A tool call as Ollama puts it in `message.tool_calls` (arguments as an object)."""
    return {
        "id": f"call_{index:08x}",
        "function": {"index": index, "name": name, "arguments": arguments},
    }


def pieces(text: str) -> list[str]:
    """Text cut into token-sized fragments (up to 4 characters and the space before them)."""
    parts = re.findall(r"\s*\S{1,4}|\s+", text)
    assert "".join(parts) == text
    return parts


class LoopbackOllama:
    def __init__(self, models: tuple[str, ...] = ("qwen2.5-coder:7b",)) -> None:
        self.models = list(models)
        self.replies: deque[Reply] = deque()
        self.requests: list[tuple[str, dict[str, Any]]] = []  # (path, JSON body) of each POST
        self.authorization: list[str] = []  # the Authorization header of each POST ("" if none)
        self._server: ThreadingHTTPServer | None = None

    def reply(self, content: str = "", **kwargs: Any) -> None:
        self.replies.append(Reply(content=content, **kwargs))

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the server first"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> str:
        self._server = _QuietServer(("127.0.0.1", 0), _handler(self))
        threading.Thread(target=self._server.serve_forever, args=(0.01,), daemon=True).start()
        return self.url

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def chat_bodies(self) -> list[dict[str, Any]]:
        return [body for path, body in self.requests if path == "/api/chat"]

    # --- answers ---

    def tags(self) -> dict[str, Any]:
        return {
            "models": [
                {
                    "name": name,
                    "model": name,
                    "modified_at": "2025-06-01T18:02:51.911521Z",
                    "size": 4683087332,
                    "digest": "2b0496514337a3d5901f1d253d01726c890b721e891335a56d6e08cedf3e2cb0",
                    "details": {
                        "format": "gguf",
                        "family": "qwen2",
                        "quantization_level": "Q4_K_M",
                    },
                }
                for name in self.models
            ]
        }

    def knows(self, model: str) -> bool:
        return model in self.models or f"{model}:latest" in self.models

    def chat_lines(self, model: str, reply: Reply) -> list[dict[str, Any]]:
        """The NDJSON lines of one streamed /api/chat answer."""

        def line(message: dict[str, Any]) -> dict[str, Any]:
            return {"model": model, "created_at": CREATED_AT, "message": message, "done": False}

        lines = [line({"role": "assistant", "content": p}) for p in pieces(reply.content)]
        if reply.tool_calls:
            lines.append(line({"role": "assistant", "content": "", "tool_calls": reply.tool_calls}))
        last = line({"role": "assistant", "content": ""})
        last.update(done=True, done_reason=reply.done_reason, **DONE_COUNTS)
        return [*lines, last]

    def chat_object(self, model: str, reply: Reply) -> dict[str, Any]:
        """The single /api/chat answer to `"stream": false`."""
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = reply.tool_calls
        return {
            "model": model,
            "created_at": CREATED_AT,
            "message": message,
            "done_reason": reply.done_reason,
            "done": True,
            **DONE_COUNTS,
        }

    def openai_object(self, model: str, reply: Reply) -> dict[str, Any]:
        return {
            "id": "chatcmpl-417",
            "object": "chat.completion",
            "created": 1749721267,
            "model": model,
            "system_fingerprint": "fp_ollama",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.content},
                    "finish_reason": reply.done_reason,
                }
            ],
            "usage": {"prompt_tokens": 1187, "completion_tokens": 412, "total_tokens": 1599},
        }


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that gave up (a timeout test) breaks the pipe: expected


def _handler(server: LoopbackOllama) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            if self.path == "/api/tags":
                self._json(200, server.tags())
            elif self.path == "/v1/models":
                self._json(200, {"object": "list", "data": [{"id": m} for m in server.models]})
            else:
                self._json(404, {"error": "404 page not found"})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            server.requests.append((self.path, body))
            server.authorization.append(self.headers.get("Authorization", ""))
            model = body.get("model", "")
            if self.path not in ("/api/chat", "/v1/chat/completions"):
                self._json(404, {"error": "404 page not found"})
                return
            if not server.knows(model):
                error = f'model "{model}" not found, try pulling it first'
                if self.path == "/api/chat":
                    self._json(404, {"error": error})
                else:
                    self._json(404, {"error": {"message": error, "type": "api_error"}})
                return
            if not server.replies:
                self._json(500, {"error": "loopback server: the test queued no reply"})
                return
            reply = server.replies.popleft()
            time.sleep(reply.delay_s)
            if self.path == "/v1/chat/completions":
                self._json(200, server.openai_object(model, reply))
            elif body.get("stream", True):
                self._stream(server.chat_lines(model, reply))
            else:
                self._json(200, server.chat_object(model, reply))

        def _json(self, status: int, obj: dict[str, Any]) -> None:
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, lines: list[dict[str, Any]]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
            self.end_headers()
            for obj in lines:
                data = json.dumps(obj).encode() + b"\n"
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")

        def log_message(self, *args: object) -> None:
            pass

    return Handler

"""A local OpenAI-compatible chat-completions server for steward tests."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeLlm:
    """Answers ``POST /v1/chat/completions`` with ``reply`` (a string, or a callable of the request body).

    ``status`` != 200 makes it fail; ``requests`` records (headers, body) of every call.
    """

    def __init__(self) -> None:
        self.reply: Any = "{}"
        self.status = 200
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                if self.path != "/v1/chat/completions" or fake.status != 200:
                    self.send_response(fake.status if fake.status != 200 else 404)
                    self.end_headers()
                    return
                content = fake.reply(body) if callable(fake.reply) else fake.reply
                payload = json.dumps(
                    {"id": "x", "object": "chat.completion",
                     "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def last_user_payload(self) -> dict[str, Any]:
        return json.loads(self.requests[-1][1]["messages"][-1]["content"])

"""A local OpenAI-compatible chat-completions server for steward tests."""

from __future__ import annotations

import json
from typing import Any

from support import LocalServer, QuietHandler, chat_completion


class FakeLlm:
    """Answers ``POST /v1/chat/completions`` with ``reply`` (a string, or a callable of the request body).

    ``status`` != 200 makes it fail; ``requests`` records (headers, body) of every call.
    """

    def __init__(self) -> None:
        self.reply: Any = "{}"
        self.status = 200
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        fake = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.read_json()
                fake.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                if self.path != "/v1/chat/completions" or fake.status != 200:
                    self.send_response(fake.status if fake.status != 200 else 404)
                    self.end_headers()
                    return
                content = fake.reply(body) if callable(fake.reply) else fake.reply
                self.send_body(200, "application/json", chat_completion(content))

        self.local = LocalServer(Handler, poll_interval=0.02)

    @property
    def base_url(self) -> str:
        return self.local.url + "/v1"

    def close(self) -> None:
        self.local.close()

    def last_user_payload(self) -> dict[str, Any]:
        return json.loads(self.requests[-1][1]["messages"][-1]["content"])

"""Helpers for the review and timeline end-to-end tests: a JSON-RPC client with an optional bearer
token, the poisoned-write recipe, a fake OpenAI-compatible steward endpoint, an SSE reader,
read-only access to a realm's audit rows, and in-process staging on a gateway's state dir."""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import httpx

from meta_memory.clock import Clock
from meta_memory.config import load_config
from meta_memory.runtime import Runtime
from meta_memory.server.gateway import Gateway
from support import (  # noqa: F401 - memory_id_of and realm_db are re-exported for the tests
    LocalServer,
    QuietHandler,
    RpcClient,
    chat_completion,
    memory_id_of,
    open_ro,
    poisoned_write,
    realm_db,
)

REFUSED = -32043
REFUSED_KIND = "memory_quarantine_review_refused"
TAINT_REASON = "session tainted by web tool 'web_fetch'"


def uid(prefix: str = "agent") -> str:
    """A fresh identity or session key, so tests sharing one gateway never see each other."""
    return f"{prefix}:{uuid.uuid4().hex[:12]}"


class Client(RpcClient):
    """JSON-RPC over HTTP to one gateway (one keep-alive connection per thread, optional token),
    with the review conveniences."""

    # -- review conveniences ------------------------------------------------------------------
    def poisoned(self, identity: str, title: str, body: str, *, session: str | None = None) -> str:
        """The poisoned-write recipe (:func:`support.poisoned_write`): the quarantined record's id."""
        return poisoned_write(self.result, identity, title, body, session=session)

    def content_hash(self, memory_id: str) -> str:
        """What the operator reads in the console: the record detail's ``content_hash``."""
        return self.result("meta/memory/panel/record", {"memory_id": memory_id})["record"]["content_hash"]

    def decide(self, identity: str, memory_id: str, verdict: str, expected: str, **extra: Any) -> dict[str, Any]:
        """The raw response of one ``meta/memory/quarantine/decide``."""
        return self.rpc("meta/memory/quarantine/decide", {"identity": identity, "memory_id": memory_id,
                                                          "verdict": verdict, "expected_content_hash": expected,
                                                          **extra})

    def refused(self, identity: str, memory_id: str, verdict: str, expected: str, **extra: Any) -> dict[str, Any]:
        """A decide that must be refused with -32043; returns ``error.data``."""
        body = self.decide(identity, memory_id, verdict, expected, **extra)
        assert "error" in body, body
        err = body["error"]
        assert err["code"] == REFUSED, err
        assert err["data"]["kind"] == REFUSED_KIND, err
        assert err["message"].startswith("quarantine review refused: "), err
        return err["data"]

    def recall_ids(self, identity: str, query_text: str) -> list[str]:
        out = self.result("meta/agent_memory/recall", {"identity": identity, "query_text": query_text})
        return [r["memory_id"] for r in out["records"]]

    def events(self, after: str | int | None = None) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"limit": 1000}
        if after is not None:
            params["after"] = after
        return self.result("meta/events/list", params)["events"]



# --------------------------------------------------------------------------- the realm file


def read_db(state_dir: Path, realm: str = "default") -> AbstractContextManager[sqlite3.Connection]:
    """A read-only connection to a realm's SQLite file (WAL: sees committed writes)."""
    return open_ro(realm_db(state_dir, realm))


def audit_rows(state_dir: Path, memory_id: str | None = None, realm: str = "default") -> list[dict[str, Any]]:
    """Audit rows (``detail`` decoded), oldest first; all of them, or those of one record."""
    with read_db(state_dir, realm) as conn:
        if memory_id is None:
            rows = conn.execute("SELECT * FROM audit ORDER BY rowid").fetchall()
        else:
            rows = conn.execute("SELECT * FROM audit WHERE memory_id = ? ORDER BY rowid", (memory_id,)).fetchall()
    return [{**dict(r), "detail": json.loads(r["detail"]) if r["detail"] else {}} for r in rows]


def review_rows(state_dir: Path, memory_id: str) -> list[dict[str, Any]]:
    """The audit rows of ``memory_id`` that carry a review (one per applied decision op)."""
    return [r for r in audit_rows(state_dir, memory_id) if "review" in r["detail"]]


# --------------------------------------------------------------------------- in-process staging


@contextmanager
def in_process(state_dir: Path, config: Path | None, clock: Clock | None = None) -> Iterator[Gateway]:
    """The same runtime a gateway would build on ``state_dir`` (same config), in this process and
    with ``clock``; no background work. Use it while no gateway runs on the directory."""
    from meta_memory.config import MetaConfig

    cfg = load_config(config) if config is not None else MetaConfig()
    runtime = Runtime(cfg, state_dir, clock=clock, start_background=False)
    try:
        yield Gateway.for_runtime(runtime)
    finally:
        runtime.close()


# --------------------------------------------------------------------------- fake steward endpoint


class FakeStewardLlm:
    """A local OpenAI-compatible ``POST /v1/chat/completions`` endpoint for the LLM steward.

    ``decide(payload) -> dict | str`` builds the steward's reply from the user payload the dream
    sends (``{"quarantine": [{"record_id", ...}], ...}``): a dict is sent as JSON, a string as
    is (to send malformed replies); the default decides nothing (``{}``). ``delay_s`` sleeps before answering (to widen races).
    """

    def __init__(self) -> None:
        self.decide: Callable[[dict[str, Any]], dict[str, Any] | str] = lambda payload: {}
        self.delay_s = 0.0
        self.calls = 0
        fake = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                request = self.read_json()
                fake.calls += 1
                payload = json.loads(request["messages"][-1]["content"])
                if fake.delay_s:
                    time.sleep(fake.delay_s)
                reply = fake.decide(payload)
                self.send_body(200, "application/json",
                               chat_completion(reply if isinstance(reply, str) else json.dumps(reply)))

        self.local = LocalServer(Handler)

    @property
    def base_url(self) -> str:
        return self.local.url + "/v1"

    def close(self) -> None:
        self.local.close()


def verdicts_for(ids: set[str], verdict: str, **extra: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A steward reply deciding ``verdict`` for the offered quarantined records among ``ids`` only."""

    def decide(payload: dict[str, Any]) -> dict[str, Any]:
        return {"quarantine_verdicts": [
            {"record_id": q["record_id"], "verdict": verdict, "rationale": "steward says so", **extra}
            for q in payload.get("quarantine", []) if q["record_id"] in ids]}

    return decide


# --------------------------------------------------------------------------- server-sent events


def read_sse(url: str, count: int, *, last_event_id: str | None = None, token: str | None = None,
             timeout_s: float = 10.0) -> list[dict[str, Any]]:
    """Open ``GET /events`` and collect events as ``{id, event, data}`` (``data`` decoded) until
    ``count`` have arrived or ``timeout_s`` passes without one; returns what arrived (the caller
    asserts how many)."""
    headers = {"Accept": "text/event-stream"}
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    out: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    try:
        with httpx.stream("GET", url + "/events", headers=headers,
                          timeout=httpx.Timeout(timeout_s, read=timeout_s)) as resp:
            assert resp.status_code == 200, resp.status_code
            assert resp.headers["content-type"].startswith("text/event-stream")
            for line in resp.iter_lines():
                if line.startswith(":"):
                    continue
                if line == "":
                    if current:
                        out.append(current)
                        current = {}
                        if len(out) >= count:
                            break
                    continue
                name, _, value = line.partition(": ")
                current[name] = json.loads(value) if name == "data" else value
    except httpx.ReadTimeout:
        pass
    return out

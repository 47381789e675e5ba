"""The reviewer a decision records is the authenticated principal, never a caller-supplied name
(seed: "Reviewing quarantined records": access part), over HTTP with ``[access]`` tokens."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator

import httpx
import pytest

from e2e_review_support import (
    Client,
    in_process,
    memory_id_of,
    read_sse,
    review_rows,
    uid,
)
from support import GatewayProcess, start_gateway, write_config

ALICE, HOST, CAROL, DAVE = "alice-review-token", "agent-host-token", "carol-discard-token", "dave-watch-token"
WATCHED = "agent:watched"  # the one identity dave may read
REVIEWER_ACTIONS = ("memory.quarantine.review", "agent.view", "agent.memory.read", "agent.memory.write",
                    "agent.memory.delete")
HOST_ACTIONS = ("agent.view", "agent.memory.read", "agent.memory.write", "agent.session.manage")
Caller = Callable[[str | None], Client]  # a token (None: anonymous) -> its client
DISCARDER_ACTIONS = ("memory.quarantine.review", "agent.view", "agent.memory.read", "agent.memory.delete")


def _config() -> str:
    lines = ["[access]", "enabled = true"]
    for token, principal, role in ((ALICE, "alice", "reviewer"), (HOST, "agent-host", "host"),
                                   (CAROL, "carol", "discarder"), (DAVE, "dave", "watcher")):
        lines += ["[[access.tokens]]", f'sha256 = "{hashlib.sha256(token.encode()).hexdigest()}"',
                  f'principal = "{principal}"', f'roles = ["{role}"]']
    for role, actions in (("reviewer", REVIEWER_ACTIONS), ("host", HOST_ACTIONS), ("discarder", DISCARDER_ACTIONS)):
        for action in actions:
            lines += ["[[access.grants]]", f'action = "{action}"', f'who = {{ role = "{role}" }}']
    for action in ("agent.memory.read", "agent.view"):
        lines += ["[[access.grants]]", f'action = "{action}"', 'who = { role = "watcher" }',
                  f'on = {{ identity = "{WATCHED}" }}']
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    root = tmp_path_factory.mktemp("access")
    proc = start_gateway(root / "state", config=write_config(root / "config.toml", _config()))
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def as_caller(gw: GatewayProcess) -> Iterator[Caller]:
    """One client per bearer token (``None``: anonymous) on the shared gateway, closed after the module."""
    clients: dict[str | None, Client] = {}

    def client(token: str | None) -> Client:
        return clients.setdefault(token, Client(gw, token))

    yield client
    for c in clients.values():
        c.close()


def test_decision_records_the_authenticated_principal(gw: GatewayProcess, as_caller: Caller) -> None:
    host, alice = as_caller(HOST), as_caller(ALICE)
    ident = uid()
    mid = host.poisoned(ident, "Reader preference", "The reader prefers weekly summaries.")
    chash = alice.content_hash(mid)
    out = alice.result("meta/memory/quarantine/decide", {
        "identity": ident, "memory_id": mid, "verdict": "release", "expected_content_hash": chash,
        "rationale": "alice checked it"})
    assert out["decision"]["review"]["reviewer"] == {"kind": "operator", "principal": "alice"}
    rows = review_rows(gw.state_dir, mid)
    assert rows and all(r["detail"]["review"]["reviewer"] == {"kind": "operator", "principal": "alice"}
                        for r in rows)
    # the timeline names neither the reviewer nor the rationale
    verdicts = [e for e in alice.events() if e["event_type"] == "memory.quarantine.verdict"
                and e["data"]["record_id"] == mid]
    assert len(verdicts) == 1
    text = json.dumps(verdicts[0])
    assert "alice" not in text and "checked it" not in text and "reviewer" not in text
    # and neither does the SSE stream of the same event
    streamed = [e for e in read_sse(gw.url, 100, token=ALICE, timeout_s=2) if e["event"] == "memory.quarantine.verdict"]
    assert any(e["data"] == verdicts[0] for e in streamed)
    assert all("alice" not in json.dumps(e["data"]) for e in streamed)


def test_a_caller_supplied_reviewer_is_refused(gw: GatewayProcess, as_caller: Caller) -> None:
    host, alice = as_caller(HOST), as_caller(ALICE)
    ident = uid()
    mid = host.poisoned(ident, "Claim", "A claim someone wants to release as another person.")
    err = alice.error("meta/memory/quarantine/decide", {
        "identity": ident, "memory_id": mid, "verdict": "release", "expected_content_hash": alice.content_hash(mid),
        "reviewer": "bob"})
    assert err["code"] == -32602 and err["data"]["field"] == "reviewer"
    assert review_rows(gw.state_dir, mid) == []


def test_callers_without_the_review_grant_are_denied(gw: GatewayProcess, as_caller: Caller) -> None:
    host, alice = as_caller(HOST), as_caller(ALICE)
    anonymous = as_caller(None)
    ident = uid()
    mid = host.poisoned(ident, "Claim", "A claim the host cannot review itself.")
    chash = alice.content_hash(mid)
    params = {"identity": ident, "memory_id": mid, "verdict": "release", "expected_content_hash": chash}
    for caller in (host, anonymous):
        err = caller.error("meta/memory/quarantine/decide", params)
        assert err["code"] == -32030 and err["data"]["kind"] == "access_denied", err
        assert err["data"]["action"] == "memory.quarantine.review"
    resp = httpx.post(gw.url + "/rpc", json={"jsonrpc": "2.0", "id": 1, "method": "meta/memory/quarantine/decide",
                                            "params": params}, headers={"Authorization": "Bearer forged"})
    assert resp.status_code == 401
    assert review_rows(gw.state_dir, mid) == []
    assert alice.result("meta/memory/quarantine/decide", params)["outcome"] == "released"


def test_release_needs_write_and_tombstone_needs_delete(gw: GatewayProcess, as_caller: Caller) -> None:
    host, carol = as_caller(HOST), as_caller(CAROL)
    ident = uid()
    mid = host.poisoned(ident, "Claim", "A claim carol may discard but not release.")
    chash = carol.content_hash(mid)
    err = carol.error("meta/memory/quarantine/decide", {"identity": ident, "memory_id": mid, "verdict": "release",
                                                        "expected_content_hash": chash})
    assert err["code"] == -32030 and err["data"]["action"] == "agent.memory.write", err
    out = carol.result("meta/memory/quarantine/decide", {"identity": ident, "memory_id": mid, "verdict": "tombstone",
                                                         "expected_content_hash": chash})
    assert out["decision"]["review"]["reviewer"] == {"kind": "operator", "principal": "carol"}


def test_decided_quarantine_content_stays_reviewer_only_while_the_successor_is_ordinary_memory(
        gw: GatewayProcess, as_caller: Caller) -> None:
    host, alice = as_caller(HOST), as_caller(ALICE)
    ident = uid()
    mid = host.poisoned(ident, "Reader preference", "The reader prefers monthly digests.")
    before = host.error("meta/memory/panel/record", {"memory_id": mid})
    assert before["code"] == -32001  # unreadable is refused like unknown (no existence oracle)
    out = alice.result("meta/memory/quarantine/decide", {"identity": ident, "memory_id": mid, "verdict": "release",
                                                         "expected_content_hash": alice.content_hash(mid)})
    succ = out["successor"]["memory_id"]
    assert host.error("meta/memory/panel/record", {"memory_id": mid})["code"] == -32001
    assert host.result("meta/memory/panel/record", {"memory_id": succ})["record"]["body"] == \
        "The reader prefers monthly digests."
    assert host.recall_ids(ident, "monthly digests") == [succ]


def test_without_access_control_no_principal_is_known(client: Client) -> None:
    ident = uid()
    mid = client.poisoned(ident, "Claim", "A claim reviewed on a host without app authentication.")
    # a bearer header is not an identity when no tokens are configured
    client.http.headers["Authorization"] = "Bearer alice-review-token"
    try:
        out = client.result("meta/memory/quarantine/decide", {
            "identity": ident, "memory_id": mid, "verdict": "tombstone",
            "expected_content_hash": client.content_hash(mid)})
    finally:
        del client.http.headers["Authorization"]
    assert out["decision"]["review"]["reviewer"] == {"kind": "operator", "principal": None}
    assert [r["detail"]["review"]["reviewer"]["principal"] for r in review_rows(client.gw.state_dir, mid)] == [None]


def test_a_read_only_console_refuses_the_decision(tmp_path) -> None:
    # the console is read-only for every mutation, so the quarantined write is staged before it starts
    ident, session = uid(), uid("sess")
    with in_process(tmp_path / "state", None) as staging:
        staging.call("meta/turn/tool_result", {"identity": ident, "session_key": session, "tool_name": "web_fetch"})
        mid = memory_id_of(staging.call("meta/agent_memory/tool", {"identity": ident, "session_key": session, "arguments": {
            "action": "remember", "title": "Claim", "body": "A claim on a read-only console."}})["text"])
    text = _config().replace("enabled = true\n", "enabled = true\nread_only = true\n", 1)
    proc = start_gateway(tmp_path / "state", config=write_config(tmp_path / "config.toml", text))
    alice = Client(proc, ALICE)
    try:
        err = alice.error("meta/memory/quarantine/decide", {
            "identity": ident, "memory_id": mid, "verdict": "tombstone",
            "expected_content_hash": alice.content_hash(mid)})
        assert err["code"] == -32030 and err["data"]["read_only"] is True, err
        assert err["message"] == "access denied: console is read-only"
        assert review_rows(proc.state_dir, mid) == []
    finally:
        alice.close()
        proc.stop()


def test_the_timeline_shows_a_caller_only_the_identities_it_may_read(gw: GatewayProcess, as_caller: Caller) -> None:
    host, alice, dave = as_caller(HOST), as_caller(ALICE), as_caller(DAVE)
    other = uid()
    watched_id = host.poisoned(WATCHED, "Watched", "A claim about the watched identity.")
    other_id = host.poisoned(other, "Unwatched", "A claim about another identity.")
    everything = alice.events()
    assert {watched_id, other_id} <= {e["data"].get("record_id") for e in everything}
    seen = dave.events()
    assert seen and all(e["identity"] == WATCHED for e in seen)
    assert watched_id in {e["data"].get("record_id") for e in seen}
    streamed = read_sse(gw.url, len(everything), token=DAVE, timeout_s=1.5)
    assert [e["data"] for e in streamed] == seen

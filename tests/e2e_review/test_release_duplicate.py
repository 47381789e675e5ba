"""Releasing quarantined content an active record of the scope already holds, over JSON-RPC on a real
socket, on SQLite and PostgreSQL (seed: "Reviewing quarantined records").

The model wrote X in a tainted session (quarantined); X was written again, trusted (active); the operator
then releases the quarantined copy. Exact-content duplicates are one record: the release resolves to the
active record (``successor`` and ``duplicate_of`` name it), the quarantined copy is tombstoned, one audit
row and one timeline event record the merge, and a repeat is a replay that writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from e2e_review_support import Client, uid
from support import GatewayProcess

TITLE = "Reader preference"
BODY = "The reader prefers weekly summaries delivered on Fridays."


@pytest.fixture
def client(backend_gateway: GatewayProcess) -> Iterator[Client]:
    c = Client(backend_gateway)
    try:
        yield c
    finally:
        c.close()


def _active_ids(client: Client, ident: str) -> list[str]:
    listed = client.result("meta/agent_memory/list", {"identity": ident, "limit": 100})
    return sorted(r["memory_id"] for r in listed["records"])


def test_release_of_content_already_active_resolves_to_the_active_record(client: Client) -> None:
    ident = uid()
    mid = client.poisoned(ident, TITLE, BODY)
    trusted = client.result("meta/agent_memory/remember", {"identity": ident, "title": TITLE, "body": BODY})
    assert trusted["created"] is True
    active_id = trusted["memory_id"]
    chash = client.content_hash(mid)
    assert client.content_hash(active_id) == chash

    out = client.result("meta/memory/quarantine/decide", {
        "identity": ident, "memory_id": mid, "verdict": "release", "expected_content_hash": chash})
    assert out["outcome"] == "released"
    assert out["duplicate_of"] == active_id
    assert out["successor"]["memory_id"] == active_id and out["successor"]["status"] == {"status": "active"}
    assert out["origin"]["memory_id"] == mid and out["origin"]["status"] == {"status": "tombstoned"}
    review = out["decision"]["review"]
    assert review["duplicate_of"] == active_id and review["successor"] == active_id
    # never two active copies, and no "-released" record was written
    assert _active_ids(client, ident) == [active_id]
    assert client.rpc("meta/memory/panel/record", {"memory_id": f"{mid}-released"}).get("error")
    assert client.recall_ids(ident, "weekly summaries") == [active_id]
    # the timeline names the merge
    verdicts = [e for e in client.events() if e["event_type"] == "memory.quarantine.verdict"
                and e["data"].get("record_id") == mid]
    assert len(verdicts) == 1
    assert verdicts[0]["data"]["successor_id"] == active_id and verdicts[0]["data"]["duplicate_of"] == active_id

    # a repeat is a replay: the same decision, nothing written
    again = client.result("meta/memory/quarantine/decide", {
        "identity": ident, "memory_id": mid, "verdict": "release", "expected_content_hash": chash})
    assert again["outcome"] == "already_released" and again["duplicate_of"] == active_id
    assert again["decision"] == out["decision"]
    assert _active_ids(client, ident) == [active_id]
    # the other verdict after the merge is refused
    data = client.refused(ident, mid, "tombstone", chash)
    assert data["reason"] == "not_quarantined"


def test_release_without_an_active_duplicate_still_writes_the_successor(client: Client) -> None:
    ident = uid()
    mid = client.poisoned(ident, TITLE, BODY)
    other = uid()  # the same content active in another identity's scope is not a duplicate here
    client.result("meta/agent_memory/remember", {"identity": other, "title": TITLE, "body": BODY})
    out = client.result("meta/memory/quarantine/decide", {
        "identity": ident, "memory_id": mid, "verdict": "release", "expected_content_hash": client.content_hash(mid)})
    assert out["outcome"] == "released" and "duplicate_of" not in out
    assert out["successor"]["memory_id"] == f"{mid}-released"
    assert _active_ids(client, ident) == [f"{mid}-released"]


def test_the_same_content_active_in_another_realm_is_not_a_duplicate(client: Client) -> None:
    """The duplicate is looked for in the quarantined record's own scope, realm included: the same identity
    holding the content active in realm ``ops`` changes nothing in the default realm, and nothing there."""
    ident = uid()
    mid = client.poisoned(ident, TITLE, BODY)
    elsewhere = client.result("meta/agent_memory/remember", {"identity": ident, "realm": "ops", "title": TITLE,
                                                             "body": BODY})
    out = client.result("meta/memory/quarantine/decide", {
        "identity": ident, "memory_id": mid, "verdict": "release", "expected_content_hash": client.content_hash(mid)})
    assert out["outcome"] == "released" and "duplicate_of" not in out, out
    assert out["successor"]["memory_id"] == f"{mid}-released"
    listed = client.result("meta/agent_memory/list", {"identity": ident, "realm": "ops", "limit": 100})
    assert [r["memory_id"] for r in listed["records"]] == [elsewhere["memory_id"]]

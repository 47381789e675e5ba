"""``meta/agent_memory/remember_batch`` over a real gateway: per-item results, one transaction, caps, access.

What a host replaying or importing sees: a result per record in order (created, deduplicated
against the store or an earlier record of the same call, or refused with ``op_index``), every
stored record recallable at once, nothing of a refused record written, and the call refused as a
whole when it is malformed, too large, anonymous, or aimed at an identity the token may not write.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from meta_memory.limits import MAX_BATCH_OPS
from meta_memory.rpc.methods.agent_memory_params import MAX_REMEMBER_BATCH_BYTES
from support import GatewayProcess, realm_db, start_gateway, write_config

ME = "importer:main"
METHOD = "meta/agent_memory/remember_batch"


def _count(state_dir: Path, sql: str, params: tuple[Any, ...] = ()) -> int:
    conn = sqlite3.connect(f"file:{realm_db(state_dir)}?mode=ro", uri=True)
    try:
        return int(conn.execute(sql, params).fetchone()[0])
    finally:
        conn.close()


def _recall(gw: GatewayProcess, identity: str, query: str) -> list[str]:
    got = gw.result("meta/agent_memory/recall", {"identity": identity, "query_text": query, "max_entries": 64})
    return [r["memory_id"] for r in got["records"]]


def test_results_per_item_in_order_and_refusals_write_nothing(gateway: GatewayProcess) -> None:
    first = gateway.result("meta/agent_memory/remember", {"identity": ME, "title": "Known", "body": "already stored kiwi"})
    records = [
        {"title": "Trip", "body": "Flight to Lisbon on Friday, seat 12A"},
        {"title": "Known", "body": "already stored kiwi"},  # an active record holds this content
        {"title": "Trip", "body": "Flight to Lisbon on Friday, seat 12A", "tags": ["travel"]},  # same as item 0
        {"title": "", "body": "untitled mango"},  # field rule
        {"title": "Key", "body": "aws AKIAIOSFODNN7EXAMPLE papaya"},  # secret
        {"title": "Diet", "body": "Prefers green tea 🍵 over coffee", "tags": ["food"]},
    ]
    out = gateway.result(METHOD, {"identity": ME, "records": records})
    res = out["results"]
    assert [r["op_index"] for r in res] == list(range(len(records)))
    assert (out["created"], out["existing"], out["refused"]) == (2, 2, 2)
    assert res[0]["created"] is True and res[5]["created"] is True
    assert res[1] == {"op_index": 1, "memory_id": first["memory_id"], "created": False, "supersedes": None,
                      "tags_added": [], "expires_at_ms": None}
    # same content as item 0, bringing a tag: merged into a new version, as a single remember does
    assert res[2]["created"] is False and res[2]["memory_id"] != res[0]["memory_id"]
    assert (res[2]["supersedes"], res[2]["tags_added"]) == (res[0]["memory_id"], ["travel"])
    assert res[3]["error"] == {"code": -32602, "message": "Invalid params: records.3.title must not be empty",
                               "data": {"kind": "invalid_params", "field": "records.3.title", "op_index": 3}}
    assert res[4]["error"]["data"]["reason"] == "secret_detected" and res[4]["error"]["data"]["op_index"] == 4
    assert "AKIA" not in str(res[4])
    # stored records are recallable at once; refused ones left nothing behind
    assert _recall(gateway, ME, "Lisbon seat") == [res[2]["memory_id"]]
    assert _recall(gateway, ME, "🍵") == [res[5]["memory_id"]]
    assert _recall(gateway, ME, "mango") == [] and _recall(gateway, ME, "papaya") == []
    state = gateway.state_dir
    assert _count(state, "SELECT count(*) FROM records WHERE scope_key = ?", (ME,)) == 4
    assert _count(state, "SELECT count(*) FROM records WHERE body LIKE '%mango%' OR body LIKE '%AKIA%'") == 0
    assert _count(state, "SELECT count(*) FROM audit WHERE op_kind = 'create'") == 3
    assert _count(state, "SELECT count(*) FROM audit WHERE op_kind = 'supersede'") == 1
    # a write of the same records again creates nothing
    again = gateway.result(METHOD, {"identity": ME, "records": records})
    assert (again["created"], again["existing"], again["refused"]) == (0, 4, 2)


def test_one_transaction_for_the_whole_call(gateway: GatewayProcess) -> None:
    records = [{"title": f"Turn {i}", "body": f"line {i} of the imported conversation"} for i in range(300)]
    out = gateway.result(METHOD, {"identity": ME, "records": records})
    assert out["created"] == 300
    tokens = _count(gateway.state_dir, "SELECT count(DISTINCT stage_token) FROM audit WHERE op_kind = 'create'")
    assert tokens == 1
    created = _count(gateway.state_dir, "SELECT count(DISTINCT created_at_ms) FROM records WHERE scope_key = ?", (ME,))
    assert created == 1  # one transaction, one clock reading


@pytest.fixture(scope="module")
def refusing_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """One gateway for the malformed calls: each is refused whole and checks nothing landed, so on one gateway
    each also checks that no refusal before it wrote anything."""
    gw = start_gateway(tmp_path_factory.mktemp("refusals") / "state")
    try:
        yield gw
    finally:
        gw.stop()


@pytest.mark.parametrize(
    "params,field",
    [
        ({"identity": ME}, "records"),
        ({"identity": ME, "records": []}, "records"),
        ({"identity": ME, "records": "x"}, "records"),
        ({"identity": ME, "records": [{"title": "a", "body": "b"}, 7]}, "records.1"),
        ({"identity": ME, "records": [{"title": "a", "body": 5}]}, "records.0.body"),
        ({"identity": ME, "records": [{"title": "a", "body": "b", "owner": "me"}]}, "records.0.owner"),
        ({"identity": ME, "records": [{"title": "a", "body": "b", "tags": "t"}]}, "records.0.tags"),
        ({"records": [{"title": "a", "body": "b"}]}, "identity"),
        ({"identity": ME, "realm": "", "records": [{"title": "a", "body": "b"}]}, "realm"),
    ],
)
def test_malformed_calls_are_refused_whole_naming_the_field(refusing_gateway: GatewayProcess, params: dict[str, Any],
                                                            field: str) -> None:
    err = refusing_gateway.error(METHOD, params)
    assert err["code"] == -32602 and err["data"]["field"] == field, err
    assert refusing_gateway.result("meta/agent_memory/recall", {"identity": ME, "selection": "always"})["records"] == []


def test_caps_on_records_and_bytes(gateway: GatewayProcess) -> None:
    too_many = [{"title": f"t{i}", "body": "b"} for i in range(MAX_BATCH_OPS + 1)]
    err = gateway.error(METHOD, {"identity": ME, "records": too_many})
    assert err["code"] == -32602 and err["data"]["field"] == "records"
    assert f"at most {MAX_BATCH_OPS} records" in err["message"]
    body = "x" * 60_000
    big = [{"title": f"t{i}", "body": f"{i} {body}"} for i in range(MAX_REMEMBER_BATCH_BYTES // 60_000 + 1)]
    err = gateway.error(METHOD, {"identity": ME, "records": big})
    assert err["code"] == -32602 and f"at most {MAX_REMEMBER_BATCH_BYTES} bytes" in err["message"]
    # a body beyond the gateway's request cap is refused before it is parsed
    huge = httpx.post(gateway.url + "/rpc", content=b'{"jsonrpc":"2.0","id":1,"method":"' + METHOD.encode()
                      + b'","params":{"identity":"a:b","records":[{"title":"t","body":"' + b"y" * (9 << 20) + b'"}]}}',
                      headers={"Content-Type": "application/json"}, timeout=60)
    assert huge.status_code == 413
    assert gateway.result("meta/agent_memory/recall", {"identity": ME, "query_text": "t0 t1"})["records"] == []


WRITER, READER = "batch-writer-token", "batch-reader-token"


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    root = tmp_path_factory.mktemp("batch-access")
    lines = ["[access]", "enabled = true"]
    for token, principal in ((WRITER, "writer"), (READER, "reader")):
        lines += ["[[access.tokens]]", f'sha256 = "{hashlib.sha256(token.encode()).hexdigest()}"',
                  f'principal = "{principal}"', f'roles = ["{principal}"]']
    for action in ("agent.memory.write", "agent.memory.read", "agent.view"):
        lines += ["[[access.grants]]", f'action = "{action}"', 'who = { role = "writer" }', f'on = {{ identity = "{ME}" }}']
    for action in ("agent.memory.read", "agent.view"):
        lines += ["[[access.grants]]", f'action = "{action}"', 'who = { role = "reader" }']
    proc = start_gateway(root / "state", config=write_config(root / "config.toml", "\n".join(lines) + "\n"))
    yield proc
    proc.stop()


def test_access_write_on_the_identity_is_required(guarded: GatewayProcess) -> None:
    records = [{"title": "Plan", "body": "guarded durian note"}]
    # anonymous
    err = guarded.error(METHOD, {"identity": ME, "records": records})
    assert err["code"] == -32030 and err["data"]["kind"] == "access_denied", err
    assert err["data"]["action"] == "agent.memory.write"
    # a reader may not write
    err = guarded.error(METHOD, {"identity": ME, "records": records}, token=READER)
    assert err["data"].get("action") == "agent.memory.write", err
    # the writer may not write another identity
    err = guarded.error(METHOD, {"identity": "victim:main", "records": records}, token=WRITER)
    assert err["data"].get("action") == "agent.memory.write", err
    got = guarded.result("meta/agent_memory/recall", {"identity": "victim:main", "query_text": "durian"}, token=READER)
    assert got["records"] == []
    # its own identity: allowed
    out = guarded.result(METHOD, {"identity": ME, "records": records}, token=WRITER)
    assert out["created"] == 1


# --------------------------------------------------------------------------- items behave as single remembers

_SEQUENCE = [
    ("Plan", "ship on friday", ["work"]),        # stored before the call (below)
    ("Plan", "ship on friday", ["urgent"]),      # duplicate of a stored record, new tag: merged
    ("Plan", "ship on friday", ["urgent"]),      # nothing new: the merged version, nothing written
    ("Plan", "ship on friday", ["q3", "work"]),  # merged again, onto the version this call wrote
    ("Trip", "lisbon in may", []),               # new
    ("Trip", "lisbon in may", ["travel"]),       # merged onto the record this call created
    ("Key", "AKIAIOSFODNN7EXAMPLE", []),         # refused
    ("Trip", "lisbon in may", []),               # plain duplicate of the merged version
]


def _active(gw: GatewayProcess, identity: str) -> list[tuple[str, str, list[str]]]:
    got = gw.result("meta/agent_memory/recall", {"identity": identity, "selection": "always", "max_entries": 64})
    return sorted((r["title"], r["body"], r["tags"]) for r in got["records"])


def _record_events(gw: GatewayProcess, mark: str, identity: str) -> list[dict[str, Any]]:
    events = gw.result("meta/events/list", {"after": mark, "limit": 1000})["events"]
    return [e for e in events if e["identity"] == identity and e["event_type"].startswith("memory.record.")]


def test_batch_items_merge_tags_and_emit_events_exactly_as_single_remembers(gateway: GatewayProcess) -> None:
    one, many = "single:main", "batch:main"
    for ident in (one, many):
        gateway.result("meta/agent_memory/remember", {"identity": ident, "title": "Plan", "body": "ship on friday",
                                                      "tags": ["work"]})
    mark = gateway.result("meta/status")["events"]["last_event_id"]
    singles: list[dict[str, Any]] = []
    for title, body, tags in _SEQUENCE[1:]:
        reply = gateway.rpc("meta/agent_memory/remember", {"identity": one, "title": title, "body": body, "tags": tags})
        singles.append(reply.get("result") or {"error": reply["error"]})
    out = gateway.result(METHOD, {"identity": many, "records": [{"title": t, "body": b, "tags": g}
                                                                  for t, b, g in _SEQUENCE[1:]]})
    batch = out["results"]
    assert (out["created"], out["existing"], out["refused"]) == (1, 5, 1)
    # every item answers what the single remember answered, ids aside
    ids_single: dict[str, str] = {}
    ids_batch: dict[str, str] = {}

    def same_id(a: str | None, b: str | None) -> bool:
        if a is None or b is None:
            return a is b
        return ids_single.setdefault(a, b) == b and ids_batch.setdefault(b, a) == a

    for i, (single, item) in enumerate(zip(singles, batch, strict=True)):
        assert item["op_index"] == i
        if "error" in single:
            assert item["error"]["data"]["reason"] == single["error"]["data"]["reason"] == "secret_detected"
            continue
        assert item["created"] == single["created"] and item["tags_added"] == single["tags_added"], i
        assert same_id(single["memory_id"], item["memory_id"]) and same_id(single["supersedes"], item["supersedes"]), i
    assert _active(gateway, many) == _active(gateway, one) == [
        ("Plan", "ship on friday", ["q3", "urgent", "work"]), ("Trip", "lisbon in may", ["travel"])]
    # the same events, in the same order, naming the corresponding ids
    got_single = _record_events(gateway, mark, one)
    got_batch = _record_events(gateway, mark, many)
    assert [e["event_type"] for e in got_batch] == [e["event_type"] for e in got_single] == [
        "memory.record.updated", "memory.record.updated", "memory.record.created", "memory.record.updated"]
    for s_event, b_event in zip(got_single, got_batch, strict=True):
        assert same_id(s_event["data"]["record_id"], b_event["data"]["record_id"])
        assert same_id(s_event["data"].get("supersedes"), b_event["data"].get("supersedes"))
        assert s_event["data"].get("tags_merged") == b_event["data"].get("tags_merged")
        assert "tags_added" not in b_event["data"]  # tags are content: the timeline carries only their count


def test_a_merge_breaking_the_tag_cap_refuses_that_item_alone(gateway: GatewayProcess) -> None:
    full = [f"t{i:02d}" for i in range(32)]
    stored = gateway.result("meta/agent_memory/remember", {"identity": ME, "title": "Tagged", "body": "many tags",
                                                           "tags": full})
    out = gateway.result(METHOD, {"identity": ME, "records": [
        {"title": "Tagged", "body": "many tags", "tags": ["one-more"]},
        {"title": "Other", "body": "still written"},
    ]})
    bad, ok = out["results"]
    assert bad["error"]["code"] == -32040 and bad["error"]["data"]["op_index"] == 0
    assert "merged tags" in bad["error"]["message"] and "32" in bad["error"]["message"]
    assert ok["created"] is True
    got = gateway.result("meta/agent_memory/recall", {"identity": ME, "query_text": "many tags"})["records"]
    assert [(r["memory_id"], len(r["tags"])) for r in got] == [(stored["memory_id"], 32)]

"""The timeline over a real gateway: ``meta/events/list`` and ``GET /events`` (server-sent events,
resumable with ``Last-Event-ID``), the verdict event only after commit and never naming the
reviewer or rationale, durability across restarts and bounded retention."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

import httpx

from e2e_review_support import Client, read_sse, review_rows, uid
from support import serving, start_gateway, write_config

ENVELOPE_KEYS = {"event_id", "identity", "event_type", "timestamp_ms", "data"}


def _seq(event_id: str) -> int:
    assert event_id.startswith("console-evt-")
    return int(event_id.removeprefix("console-evt-"))


def _taint_events(client: Client, n: int) -> None:
    """``n`` timeline events in one JSON-RPC batch: each call taints a fresh identity's session."""
    base = uid()
    batch = [{"jsonrpc": "2.0", "id": i, "method": "meta/turn/tool_result",
              "params": {"identity": f"{base}-{i}", "session_key": f"{base}-s{i}", "tool_name": "web_fetch"}} for i in range(n)]
    out = client.http.post(client.gw.url + "/rpc", json=batch).json()
    assert len(out) == n and all("result" in r for r in out)


def test_verdict_event_appears_only_after_commit_and_names_no_reviewer_or_rationale(client: Client) -> None:
    ident = uid()
    mid = client.poisoned(ident, "Reader preference", "The reader prefers weekly summaries.")
    chash = client.content_hash(mid)
    mark = client.events()[-1]["event_id"]
    # refusals commit nothing and announce nothing
    client.refused(ident, mid, "release", "f" * 64)
    client.refused(uid(), mid, "release", chash)
    assert [e for e in client.events(after=mark) if e["event_type"] == "memory.quarantine.verdict"] == []

    # a subscriber that sees the verdict finds the decision already committed in the store
    seen: list[tuple[dict[str, Any], int]] = []

    def subscribe() -> None:
        for e in read_sse(client.gw.url, 1, last_event_id=mark, timeout_s=10):
            rows = review_rows(client.gw.state_dir, mid) + review_rows(client.gw.state_dir, f"{mid}-released")
            seen.append((e, len(rows)))

    sub = threading.Thread(target=subscribe)
    sub.start()
    out = client.result("meta/memory/quarantine/decide", {
        "identity": ident, "memory_id": mid, "verdict": "release", "expected_content_hash": chash,
        "rationale": "a private note from the reviewer"})
    sub.join(timeout=15)
    assert len(seen) == 1
    streamed, committed_rows = seen[0]
    assert streamed["event"] == "memory.quarantine.verdict"
    assert committed_rows == 2  # the successor's create and the origin's tombstone

    events = [e for e in client.events(after=mark) if e["event_type"] == "memory.quarantine.verdict"]
    assert len(events) == 1
    event = events[0]
    assert set(event) == ENVELOPE_KEYS
    assert event["identity"] == ident
    assert event["data"] == {"realm": "default", "record_id": mid, "verdict": "release",
                             "successor_id": out["successor"]["memory_id"]}
    assert event["timestamp_ms"] >= out["decision"]["decided_at_ms"]
    text = json.dumps(event)
    assert "private note" not in text and "reviewer" not in text and "principal" not in text
    assert streamed["id"] == event["event_id"] and streamed["data"] == event


def test_events_list_pages_without_loss_or_duplicates(client: Client) -> None:
    listed = client.events()
    mark = listed[-1]["event_id"] if listed else None
    _taint_events(client, 9)
    expected = [e["event_id"] for e in client.events(after=mark)]
    assert len(expected) == 9
    got: list[str] = []
    after: Any = mark
    while True:
        params: dict[str, Any] = {"limit": 2, **({"after": after} if after is not None else {})}
        page = client.result("meta/events/list", params)
        if not page["events"]:
            # an empty page echoes ``after`` (docs/security.md: "or the `after` it gave when none followed"),
            # so a client polling with ``after = last_event_id`` does not get the whole timeline again
            assert page["last_event_id"] == f"console-evt-{after}", page
            again = client.result("meta/events/list", {"after": page["last_event_id"]})
            assert again == {"events": [], "last_event_id": page["last_event_id"]}
            break
        got += [e["event_id"] for e in page["events"]]
        assert page["last_event_id"] == page["events"][-1]["event_id"]
        after = _seq(page["last_event_id"])  # the sequence number works as well as the id
    assert got == expected
    assert [_seq(i) for i in got] == sorted(_seq(i) for i in got)
    for bad in ({"limit": 0}, {"limit": 1001}, {"after": "evt-1"}, {"after": -1}):
        assert client.error("meta/events/list", bad)["code"] == -32602


def test_sse_stream_carries_envelopes_and_resumes_from_last_event_id(client: Client) -> None:
    _taint_events(client, 4)
    listed = client.events()
    stream = read_sse(client.gw.url, len(listed), timeout_s=5)
    assert [e["id"] for e in stream] == [e["event_id"] for e in listed]
    for frame, env in zip(stream, listed):
        assert set(frame["data"]) == ENVELOPE_KEYS
        assert frame["data"] == env and frame["event"] == env["event_type"]
        assert isinstance(env["timestamp_ms"], int) and env["timestamp_ms"] > 1_600_000_000_000

    # reconnect after the third-newest: exactly the two after it, and nothing more
    resume_from = listed[-3]["event_id"]
    again = read_sse(client.gw.url, 3, last_event_id=resume_from, timeout_s=1.5)
    assert [e["id"] for e in again] == [e["event_id"] for e in listed[-2:]]
    # ``?after=`` is the same cursor for clients that cannot set headers
    with httpx.stream("GET", client.gw.url + "/events", params={"after": resume_from},
                      timeout=httpx.Timeout(5.0)) as resp:
        ids = [line.removeprefix("id: ") for line in _lines_until(resp, 2) if line.startswith("id: ")]
    assert ids == [e["event_id"] for e in listed[-2:]]

    # live: a subscriber from the newest event receives new events as they happen, in order
    got: list[dict[str, Any]] = []
    sub = threading.Thread(target=lambda: got.extend(read_sse(client.gw.url, 3, last_event_id=listed[-1]["event_id"],
                                                              timeout_s=10)))
    sub.start()
    _taint_events(client, 3)
    sub.join(timeout=15)
    new = client.events(after=listed[-1]["event_id"])
    assert [e["id"] for e in got] == [e["event_id"] for e in new][:3]
    assert len({e["id"] for e in got}) == 3


def _lines_until(resp: httpx.Response, frames: int) -> list[str]:
    out, seen = [], 0
    for line in resp.iter_lines():
        out.append(line)
        if line.startswith("data: "):
            seen += 1
            if seen >= frames:
                break
    return out


def test_events_survive_a_restart_and_ids_keep_increasing(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with serving(state, Client) as c:
        mid = c.poisoned(uid(), "Durable", "An event about this write must survive a restart.")
        before = c.events()
        assert any(e["data"].get("record_id") == mid for e in before)
    with serving(state, Client) as c:
        assert c.events() == before
        assert read_sse(c.gw.url, len(before), timeout_s=5)[-1]["data"] == before[-1]
        _taint_events(c, 1)
        after = c.events()
        assert after[:-1] == before
        assert _seq(after[-1]["event_id"]) == _seq(before[-1]["event_id"]) + 1
        assert c.result("meta/status")["events"]["last_event_id"] == after[-1]["event_id"]


def test_events_acknowledged_before_a_kill_are_still_there(tmp_path: Path) -> None:
    state = tmp_path / "state"
    gw = start_gateway(state)
    c = Client(gw)
    try:
        _taint_events(c, 5)
        before = c.events()
    finally:
        c.close()
        gw.kill()  # SIGKILL: no graceful shutdown
    with serving(state, Client) as c:
        assert c.events() == before


def test_retention_keeps_only_the_newest_events_across_restarts(tmp_path: Path) -> None:
    state = tmp_path / "state"
    config = write_config(tmp_path / "config.toml", "[gateway]\nevents_retention = 5\n")
    gw = start_gateway(state, config=config)
    c = Client(gw)
    try:
        _taint_events(c, 12)
        kept = c.events()
        assert [_seq(e["event_id"]) for e in kept] == [8, 9, 10, 11, 12]
        assert [e["id"] for e in read_sse(gw.url, 6, timeout_s=1.5)] == [e["event_id"] for e in kept]
        # a cursor older than the retained window resumes at the oldest retained event
        assert [e["id"] for e in read_sse(gw.url, 6, last_event_id="console-evt-2", timeout_s=1.5)] == \
            [e["event_id"] for e in kept]
        assert c.result("meta/events/list", {"after": 2})["events"] == kept
        _taint_events(c, 300)  # past the store's batched trim of the events file
    finally:
        c.close()
        gw.stop()
    gw = start_gateway(state, config=config)
    c = Client(gw)
    try:
        kept = c.events()
        assert [_seq(e["event_id"]) for e in kept] == list(range(308, 313))
    finally:
        c.close()
        gw.stop()
    # on disk the file stays bounded: the oldest rows are dropped in batches of at most 256
    conn = sqlite3.connect(state / "events.sqlite3")
    try:
        rows = conn.execute("SELECT COUNT(*), MIN(seq), MAX(seq) FROM events").fetchone()
    finally:
        conn.close()
    assert rows[2] == 312
    assert rows[0] <= 5 + 256, rows


def test_many_open_subscribers_never_starve_json_rpc(client: Client) -> None:
    """Subscribers parked on ``GET /events`` must not hold the workers that serve ``POST /rpc``."""
    subscribers = 60  # more than the server's worker-thread pool (40)
    _taint_events(client, 1)
    mark = client.events()[-1]["event_id"]
    connected = threading.Semaphore(0)
    got: list[list[dict[str, Any]]] = []
    lock = threading.Lock()

    def subscribe() -> None:
        frames: list[dict[str, Any]] = []
        current: dict[str, Any] = {}
        with httpx.stream("GET", client.gw.url + "/events", headers={"Last-Event-ID": mark},
                          timeout=httpx.Timeout(20.0)) as resp:
            connected.release()
            for line in resp.iter_lines():
                if line.startswith("data: "):
                    current["data"] = json.loads(line.removeprefix("data: "))
                elif line == "" and current:
                    frames.append(current)
                    break
        with lock:
            got.append(frames)

    threads = [threading.Thread(target=subscribe, daemon=True) for _ in range(subscribers)]
    for t in threads:
        t.start()
    for _ in range(subscribers):
        assert connected.acquire(timeout=20)
    with httpx.Client(timeout=5.0) as http:  # fails with a read timeout when the workers are starved
        status = http.post(client.gw.url + "/rpc", json={"jsonrpc": "2.0", "id": 1, "method": "meta/status"})
        assert status.status_code == 200 and "result" in status.json()
    _taint_events(client, 1)
    for t in threads:
        t.join(timeout=20)
    assert len(got) == subscribers
    newest = client.events()[-1]
    assert all(frames and frames[0]["data"] == newest for frames in got)


def test_remembers_of_two_writers_in_two_realms_are_listed_at_once_and_survive_a_kill(tmp_path: Path) -> None:
    """Each acknowledged remember's ``memory.record.created`` is listed by the very next call, and after
    a SIGKILL and a restart every one of them is there, once, in the sequence they were numbered in."""
    from support import RpcClient

    state = tmp_path / "state"
    gw = start_gateway(state)
    client = RpcClient(gw)
    written: dict[str, list[str]] = {"default": [], "second": []}
    failures: list[str] = []

    def write(realm: str) -> None:
        try:
            for i in range(15):
                rid = client.result("meta/agent_memory/remember", {
                    "identity": f"writer-{realm}", "realm": realm, "title": f"{realm} note {i}",
                    "body": f"Written by the {realm} writer, number {i}."})["memory_id"]
                listed = client.result("meta/events/list", {"limit": 1000})["events"]
                if not any(e["data"].get("record_id") == rid for e in listed):
                    failures.append(f"{rid} not listed right after its remember")
                written[realm].append(rid)
        except Exception as exc:  # noqa: BLE001 - reported below
            failures.append(repr(exc))

    try:
        threads = [threading.Thread(target=write, args=(realm,)) for realm in written]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        before = client.result("meta/events/list", {"limit": 1000})["events"]
    finally:
        client.close()
        gw.kill()  # SIGKILL right after the last acknowledgement: no drain, no graceful shutdown
    assert failures == []
    seqs = [_seq(e["event_id"]) for e in before]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    with serving(state) as c:
        after = c.result("meta/events/list", {"limit": 1000})["events"]
    assert after == before
    for realm, ids in written.items():
        assert [e["data"]["record_id"] for e in after
                if e["event_type"] == "memory.record.created" and e["data"]["realm"] == realm] == ids

"""No write changes data silently: every observable effect is either what the caller asked for or
is reported (result fields, timeline events, ``meta/status`` figures, refusals at start-up).

Everything here goes through a real gateway subprocess over HTTP, or the CLI.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from support import (
    GatewayProcess,
    access_toml,
    legacy_markdown_file,
    markdown_record,
    poisoned_write,
    start_gateway,
    write_config,
)


def uid(prefix: str = "agent") -> str:
    return f"{prefix}:{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Any:
    g = start_gateway(tmp_path_factory.mktemp("integrity") / "state")
    yield g
    g.stop()


def remember(gw: GatewayProcess, ident: str, title: str, body: str, tags: list[str] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"identity": ident, "title": title, "body": body}
    if tags is not None:
        params["tags"] = tags
    return gw.result("meta/agent_memory/remember", params)


def recall_all(gw: GatewayProcess, ident: str) -> list[dict[str, Any]]:
    return gw.result("meta/agent_memory/recall", {"identity": ident, "selection": "always", "max_entries": 64})["records"]


# --------------------------------------------------------------------------- update keeps omitted fields


def test_update_without_tags_keeps_the_tags(gw: GatewayProcess) -> None:
    ident = uid()
    first = remember(gw, ident, "Standup", "at nine", ["keep", "me"])
    out = gw.result("meta/agent_memory/update", {"identity": ident, "memory_id": first["memory_id"],
                                                 "title": "Standup", "body": "at half past nine"})
    assert out["supersedes"] == first["memory_id"]
    assert out["record"]["tags"] == ["keep", "me"] and out["record"]["body"] == "at half past nine"
    [only] = recall_all(gw, ident)
    assert only["memory_id"] == out["memory_id"] and only["tags"] == ["keep", "me"]


def test_update_with_only_tags_keeps_title_and_body(gw: GatewayProcess) -> None:
    ident = uid()
    first = remember(gw, ident, "Printer", "second floor, by the window", ["office"])
    out = gw.result("meta/agent_memory/update", {"identity": ident, "memory_id": first["memory_id"], "tags": ["infra"]})
    rec = out["record"]
    assert (rec["title"], rec["body"], rec["tags"]) == ("Printer", "second floor, by the window", ["infra"])
    cleared = gw.result("meta/agent_memory/update", {"identity": ident, "memory_id": out["memory_id"], "tags": []})
    assert cleared["record"]["tags"] == [] and cleared["record"]["body"] == "second floor, by the window"


def test_update_with_nothing_to_change_is_refused_and_writes_nothing(gw: GatewayProcess) -> None:
    ident = uid()
    first = remember(gw, ident, "Lunch", "noon")
    err = gw.error("meta/agent_memory/update", {"identity": ident, "memory_id": first["memory_id"]})
    assert err["code"] == -32602 and "at least one of title, body, tags" in err["message"]
    err = gw.error("meta/agent_memory/update", {"identity": ident, "memory_id": first["memory_id"], "title": None})
    assert err["code"] == -32602
    assert [r["memory_id"] for r in recall_all(gw, ident)] == [first["memory_id"]]


def test_update_of_another_identitys_record_keeps_nothing_of_it(gw: GatewayProcess) -> None:
    owner, thief = uid(), uid()
    theirs = remember(gw, owner, "Secret plan", "only mine", ["private"])
    err = gw.error("meta/agent_memory/update", {"identity": thief, "memory_id": theirs["memory_id"], "tags": ["x"]})
    # no hint that it exists elsewhere: an unknown memory record, as an unknown id is
    assert err["code"] == -32001 and err["message"] == f"unknown memory record '{theirs['memory_id']}'"
    assert recall_all(gw, thief) == []
    assert recall_all(gw, owner)[0]["tags"] == ["private"]


# --------------------------------------------------------------------------- duplicate remember merges tags


def test_duplicate_remember_with_new_tags_merges_and_says_so(gw: GatewayProcess) -> None:
    ident = uid()
    first = remember(gw, ident, "Passport", "in the desk drawer", ["travel"])
    assert first["created"] is True and first["supersedes"] is None and first["tags_added"] == []
    again = remember(gw, ident, "Passport", "in the desk drawer", ["Docs", "travel"])
    assert again["created"] is False
    assert again["supersedes"] == first["memory_id"] and again["tags_added"] == ["docs"]
    assert again["tags"] == ["docs", "travel"] and again["memory_id"] != first["memory_id"]
    assert [(r["memory_id"], r["tags"]) for r in recall_all(gw, ident)] == [(again["memory_id"], ["docs", "travel"])]
    # the superseded version can no longer be updated; the merged one can
    err = gw.error("meta/agent_memory/update", {"identity": ident, "memory_id": first["memory_id"], "tags": []})
    assert "not active" in err["message"]
    # same tags (or a subset) again: nothing written, nothing reported
    same = remember(gw, ident, "Passport", "in the desk drawer", ["travel"])
    assert (same["memory_id"], same["created"], same["supersedes"], same["tags_added"]) == (
        again["memory_id"], False, None, [])


def test_duplicate_remember_whose_merge_breaks_the_tag_cap_is_refused(gw: GatewayProcess) -> None:
    ident = uid()
    first = remember(gw, ident, "Tagged", "many tags", [f"t{i:02d}" for i in range(32)])
    err = gw.error("meta/agent_memory/remember", {"identity": ident, "title": "Tagged", "body": "many tags",
                                                  "tags": ["one-more"]})
    assert err["code"] == -32040 and "merged tags" in err["message"] and "32" in err["message"]
    [only] = recall_all(gw, ident)
    assert only["memory_id"] == first["memory_id"] and len(only["tags"]) == 32


# --------------------------------------------------------------------------- timeline events for record writes


def _events_after(gw: GatewayProcess, after: str | None, token: str | None = None) -> list[dict[str, Any]]:
    params: dict[str, Any] = {"limit": 1000}
    if after is not None:
        params["after"] = after
    return gw.result("meta/events/list", params, token=token)["events"]


def test_remember_update_forget_each_emit_a_record_event_naming_ids_only(gw: GatewayProcess) -> None:
    ident = uid()
    mark = gw.result("meta/status")["events"]["last_event_id"]
    body = f"the body {uuid.uuid4().hex} must never reach the timeline"
    first = remember(gw, ident, "Event title", body, ["a"])
    merged = remember(gw, ident, "Event title", body, ["b"])
    upd = gw.result("meta/agent_memory/update", {"identity": ident, "memory_id": merged["memory_id"], "body": body + "!"})
    assert gw.result("meta/agent_memory/forget", {"identity": ident, "memory_id": upd["memory_id"]})["deleted"] is True
    assert gw.result("meta/agent_memory/forget", {"identity": ident, "memory_id": upd["memory_id"]})["deleted"] is False
    mine = [e for e in _events_after(gw, mark) if e["identity"] == ident]
    assert [(e["event_type"], e["data"]) for e in mine] == [
        ("memory.record.created", {"realm": "default", "record_id": first["memory_id"]}),
        ("memory.record.updated", {"realm": "default", "record_id": merged["memory_id"],
                                   "supersedes": first["memory_id"], "tags_merged": 1}),
        ("memory.record.updated", {"realm": "default", "record_id": upd["memory_id"],
                                   "supersedes": merged["memory_id"]}),
        ("memory.record.forgotten", {"realm": "default", "record_id": upd["memory_id"]}),
    ]
    assert all(body not in json.dumps(e) and "Event title" not in json.dumps(e) for e in mine)


def test_a_plain_duplicate_and_a_refused_write_emit_nothing(gw: GatewayProcess) -> None:
    ident = uid()
    remember(gw, ident, "Once", "only once")
    mark = gw.result("meta/status")["events"]["last_event_id"]
    remember(gw, ident, "Once", "only once")
    gw.error("meta/agent_memory/remember", {"identity": ident, "title": "Key", "body": "key AKIA" + "ABCDEFGHIJKLMNOP"})
    assert [e for e in _events_after(gw, mark) if e["identity"] == ident] == []


def test_record_events_follow_the_memory_event_access_rules(tmp_path: Path) -> None:
    owner_tok, other_tok = f"tok-owner-{uuid.uuid4().hex}", f"tok-other-{uuid.uuid4().hex}"
    reads = ("agent.memory.read", "agent.view")
    config = write_config(tmp_path / "access.toml", access_toml({owner_tok: "owner", other_tok: "other"}, [
        *(("owner", action, {"identity": "lead:main"}) for action in ("agent.memory.write", *reads)),
        *(("other", action, {"identity": "someone:else"}) for action in reads),
    ]))
    gw = start_gateway(tmp_path / "state", config=config)
    try:
        rec = gw.result("meta/agent_memory/remember", {"identity": "lead:main", "title": "Plan", "body": "ship friday"},
                        token=owner_tok)
        seen = [e for e in _events_after(gw, None, owner_tok) if e["event_type"].startswith("memory.record.")]
        assert [(e["event_type"], e["data"]["record_id"]) for e in seen] == [("memory.record.created", rec["memory_id"])]
        assert not [e for e in _events_after(gw, None, other_tok) if e["event_type"].startswith("memory.record.")]
        anonymous = gw.rpc("meta/events/list", {"limit": 1000})
        events = anonymous.get("result", {}).get("events", [])
        assert not [e for e in events if e["event_type"].startswith("memory.record.")]
    finally:
        gw.stop()


# --------------------------------------------------------------------------- the ledger's retention cap


def _ledger_file(state: Path, count: int) -> None:
    state.mkdir(parents=True, exist_ok=True)
    rows = [{"assertion_id": f"memory-assert-{i:06d}", "entity": "e", "topic": f"t{i}", "store": "knowledge_graph",
             "fact": f"fact {i}", "metadata": None, "indexed_at_ms": 1_700_000_000_000 + i} for i in range(count)]
    (state / "memory-ledger-state.json").write_text(json.dumps({"assertions": rows, "conflicts": []}), encoding="utf-8")


def _gateway_on_ledger(state: Path, count: int) -> GatewayProcess:
    """A gateway started on a state dir whose ledger file already holds ``count`` assertions."""
    _ledger_file(state, count)
    return start_gateway(state)


def _eviction_events(gw: GatewayProcess) -> list[dict[str, Any]]:
    return [e for e in _events_after(gw, None) if e["event_type"] == "memory.ledger.eviction_started"]


def test_the_first_eviction_at_index_time_is_signalled_once(tmp_path: Path) -> None:
    with _gateway_on_ledger(tmp_path / "state", 4096) as gw:
        ledger = gw.result("meta/status")["ledger"]
        assert (ledger["assertions"], ledger["max_retained"], ledger["evicted"]) == (4096, 4096, 0)
        assert _eviction_events(gw) == []
        for n in range(3):
            gw.result("meta/memory/index", {"entity": "e", "topic": f"new{n}", "fact": "newer"})
        ledger = gw.result("meta/status")["ledger"]
        assert (ledger["assertions"], ledger["max_retained"], ledger["evicted"]) == (4096, 4096, 3)
        [event] = _eviction_events(gw)
        assert event["identity"] == "_system" and event["data"] == {"evicted": 1, "max_retained": 4096}
        oldest = gw.result("meta/memory/query", {"topic": "t0"})["assertions"]
        assert oldest == []


def test_an_eviction_at_load_is_signalled(tmp_path: Path) -> None:
    with _gateway_on_ledger(tmp_path / "state", 4100) as gw:
        ledger = gw.result("meta/status")["ledger"]
        assert (ledger["assertions"], ledger["evicted"]) == (4096, 4)
        [event] = _eviction_events(gw)
        assert event["data"] == {"evicted": 4, "max_retained": 4096}


# --------------------------------------------------------------------------- config ranges at start-up


NUMERIC_KEYS = [
    ("[agent_memory]\nmax_entries = 1000\n", "agent_memory.max_entries", "between 1 and 64"),
    ("[agent_memory]\nmax_entries = -1\n", "agent_memory.max_entries", "between 1 and 64"),
    ("[agent_memory]\nrecall_timeout_ms = 999999\n", "agent_memory.recall_timeout_ms", "between 1 and 30000"),
    ("[agent_memory]\nsession_state_expiry_days = 4000\n", "agent_memory.session_state_expiry_days",
     "between 1 and 3650"),
    ("[agent_memory]\nsession_state_limit = 100000001\n", "agent_memory.session_state_limit",
     "between 1 and 100000000"),
    ("[agent_memory]\nerase_tombstoned_after_days = 40000\n", "agent_memory.erase_tombstoned_after_days", "36500"),
    ("[gateway]\nmax_event_subscribers = 20000\n", "gateway.max_event_subscribers", "between 1 and 10000"),
    ("[gateway]\nheader_timeout_s = 4000\n", "gateway.header_timeout_s", "at most 3600"),
    ("[agent_memory.steward]\ntimeout_s = 601\n", "agent_memory.steward.timeout_s", "above 0 and at most 600"),
    ("[agent_memory.steward]\ntimeout_s = 0\n", "agent_memory.steward.timeout_s", "above 0 and at most 600"),
    ("[agent_memory.steward]\nopen_loop_age_days = 0\n", "agent_memory.steward.open_loop_age_days",
     "between 1 and 3650"),
    ("[agent_memory.steward]\ncadence = \"90d\"\n", "agent_memory.steward.cadence", "between 1 second and 30 days"),
    ("[agent_memory.steward]\ncadence = 99999999\n", "agent_memory.steward.cadence", "between 1 second and 30 days"),
    *[(f"[agent_memory.steward.caps]\n{cap} = 5000\n", f"agent_memory.steward.caps.{cap}", "between 0 and 1024")
      for cap in ("proposals", "quarantine", "harvests", "open_loops", "audit")],
    ("[gateway]\nmax_request_bytes = 10\n", "gateway.max_request_bytes", "between 1024 and 1073741824"),
    ("[gateway]\nmax_batch = 1000000\n", "gateway.max_batch", "between 1 and 100000"),
    ("[gateway]\nmax_batch_ms = 5\n", "gateway.max_batch_ms", "between 10 and 3600000"),
    ("[gateway]\nmax_batch_ms = 3600001\n", "gateway.max_batch_ms", "between 10 and 3600000"),
    ("[gateway]\nevents_retention = 0\n", "gateway.events_retention", "between 1 and 10000000"),
    ("[gateway]\nmax_tokenless_requests = 0\n", "gateway.max_tokenless_requests", "between 1 and 10000"),
]


@pytest.mark.parametrize("toml,key,rule", NUMERIC_KEYS, ids=[f"{k}:{t.split('= ')[-1].strip()}" for t, k, _ in NUMERIC_KEYS])
def test_out_of_range_numbers_stop_start_up_naming_key_and_range(tmp_path: Path, toml: str, key: str, rule: str) -> None:
    config = write_config(tmp_path / "c.toml", toml)
    gw = start_gateway(tmp_path / "state", config=config, expect_failure=True)
    err = gw.proc.stderr.read() if gw.proc.stderr else ""
    assert gw.proc.returncode == 1, err
    assert key in err and rule in err, err


def test_in_range_edges_start(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.toml", "[agent_memory]\nmax_entries = 64\nrecall_timeout_ms = 30000\n"
                          "[gateway]\nmax_batch = 100000\nmax_request_bytes = 1024\n")
    gw = start_gateway(tmp_path / "state", config=config)
    try:
        assert gw.result("meta/status")["agent_memory"]["enabled"] is True
    finally:
        gw.stop()


# --------------------------------------------------------------------------- doctor on a missing directory


def _doctor(state_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", "doctor", "--state-dir", str(state_dir)],
                          capture_output=True, text=True, timeout=60)


def test_doctor_on_a_missing_state_dir_is_not_ok(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir"
    run = _doctor(missing)
    assert run.returncode == 1, run
    report = json.loads(run.stdout)
    assert report["ok"] is False
    [finding] = report["findings"]
    assert finding["kind"] == "state_dir_missing" and finding["paths"] == [str(missing)]
    assert finding["severity"] == "error" and "--state-dir" in finding["fix"]
    assert not missing.exists()  # the doctor never creates what it inspects


def test_doctor_on_a_file_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "a-file"
    path.write_text("x")
    run = _doctor(path)
    assert run.returncode == 2 and "is a file" in run.stderr


def test_doctor_on_a_healthy_state_dir_is_ok(gw: GatewayProcess) -> None:
    run = _doctor(gw.state_dir)
    assert run.returncode == 0, run
    assert json.loads(run.stdout)["ok"] is True


# --------------------------------------------------------------------------- markdown import timestamps


def test_markdown_import_refuses_absurd_timestamps(tmp_path: Path) -> None:
    state = tmp_path / "state"
    ident = "agent:legacy"
    top = 4_102_444_799_999
    legacy_markdown_file(state, ident).write_text(
        markdown_record("mem-ok", "Fine", "a normal record", created=1_700_000_000_000, updated=1_700_000_000_500)
        + markdown_record("mem-edge", "Edge", "in the parser's range, but in the future", created=top, updated=top)
        + markdown_record("mem-far", "Far future", "created in the year 33 million", created=10**18, updated=10**18)
        + markdown_record("mem-updated-far", "Far update", "updated past 2099", created=1_700_000_000_000, updated=top + 1)
        + markdown_record("mem-negative", "Before 1970", "negative", created=-1, updated=0),
        encoding="utf-8")
    gw = start_gateway(state)
    try:
        ids = sorted(r["memory_id"] for r in recall_all(gw, ident))
        # a file's record dated in the future is refused by the validator's rule (0 .. now + 24 h), judged per
        # record: it would stay the newest in every recency order; the others land
        assert ids == ["mem-ok"]
        for skipped in ("mem-edge", "mem-far", "mem-updated-far", "mem-negative"):
            assert gw.rpc("meta/memory/panel/record", {"memory_id": skipped})["error"]["code"] == -32001
    finally:
        gw.stop()
    log = "".join(getattr(gw.proc, "log_tail", []))
    assert "created_at_ms 1000000000000000000 is outside the accepted range 0..4102444799999" in log


# --------------------------------------------------------------------------- reviewed originals keep their timestamps


@pytest.mark.parametrize("verdict", ["release", "tombstone"])
def test_a_reviewed_original_keeps_its_timestamps_and_its_place(gw: GatewayProcess, verdict: str) -> None:
    ident = uid()
    origin = poisoned_write(gw.result, ident, "From the web", f"a claim to review ({verdict})")
    before = gw.result("meta/memory/panel/record", {"memory_id": origin})["record"]
    later = remember(gw, ident, "Written after", "an ordinary record written after the quarantined one")
    out = gw.result("meta/memory/quarantine/decide", {"identity": ident, "memory_id": origin, "verdict": verdict,
                                                      "expected_content_hash": before["content_hash"]})
    decided_at = out["decision"]["decided_at_ms"]
    after = gw.result("meta/memory/panel/record", {"memory_id": origin})["record"]
    assert after["status"]["status"] == "tombstoned"
    assert (after["created_at_ms"], after["updated_at_ms"]) == (before["created_at_ms"], before["updated_at_ms"])
    assert (after["body"], after["provenance"]) == (before["body"], before["provenance"])
    rows = gw.result("meta/memory/panel/records", {"identity": ident, "scope": "identity", "limit": 200})["records"]
    order = [r["id"] for r in rows]
    assert order.index(later["memory_id"]) < order.index(origin)  # the original did not jump to the top
    if verdict == "release":
        assert order[0] == out["successor"]["memory_id"]
        assert out["origin"]["updated_at_ms"] == before["updated_at_ms"]
    assert decided_at >= before["updated_at_ms"]

"""A tainted session cannot destroy memory: its ``forget`` is held for review like a write
(the record stays active until an operator or the steward approves the tombstone), over a real
gateway (HTTP) with the ``memory`` tool."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from e2e_review_support import Client, audit_rows, memory_id_of, read_db, review_rows, uid
from support import GatewayProcess, start_gateway, write_config


def _tool(c: Client, identity: str, session: str, **arguments: Any) -> dict[str, Any]:
    return c.result("meta/agent_memory/tool", {"identity": identity, "session_key": session, "arguments": arguments})


def _clean_record(c: Client, identity: str, session: str, title: str = "Deploy window") -> str:
    out = _tool(c, identity, session, action="remember", title=title, body=f"{title}: Tuesdays after 14:00 UTC.")
    assert out["is_error"] is False and "QUARANTINED" not in out["text"], out
    return memory_id_of(out["text"])


def _taint(c: Client, identity: str, session: str) -> None:
    verdict = c.result("meta/turn/tool_result", {"identity": identity, "session_key": session, "tool_name": "web_fetch"})
    assert verdict["session_tainted"] is True


def _held_forget(c: Client) -> tuple[str, str, str]:
    """A clean record, then a web result taints the session, then the model forgets it: held."""
    ident, sess = uid(), uid("sess")
    c.result("meta/session/note", {"identity": ident, "session_key": sess})
    mid = _clean_record(c, ident, sess)
    _taint(c, ident, sess)
    out = _tool(c, ident, sess, action="forget", memory_id=mid)
    assert out["is_error"] is False, out
    assert "HELD pending review" in out["text"] and "session tainted by" in out["text"], out
    return ident, sess, mid


def _pending_forget(c: Client, mid: str) -> dict[str, Any]:
    rows = [f for f in c.result("meta/memory/panel/quarantine", {})["pending_forgets"] if f["memory_id"] == mid]
    assert len(rows) == 1, rows
    return rows[0]


def test_tainted_forget_is_held_and_the_record_stays_active(client: Client) -> None:
    ident, sess, mid = _held_forget(client)
    # still recalled, still active, no tombstone anywhere
    assert mid in client.recall_ids(ident, "deploy window Tuesdays")
    assert client.result("meta/memory/panel/record", {"memory_id": mid})["record"]["status"]["status"] == "active"
    assert all(r["op_kind"] != "tombstone" for r in audit_rows(client.gw.state_dir, mid))
    # the queue shows it as a pending forget with the reason and the requester
    row = _pending_forget(client, mid)
    assert row["reason"].startswith("session tainted by") and row["record_status"] == "active"
    assert row["requested_by"] == {"author": "agent", "identity": ident}
    assert row["title"] == "Deploy window"
    # the timeline says a forget was held
    held = [e for e in client.events() if e["event_type"] == "memory.forget.held" and e["data"]["record_id"] == mid]
    assert len(held) == 1 and held[0]["data"]["forget_id"] == row["forget_id"]
    # a second forget from the same session answers the same hold, no second row
    again = _tool(client, ident, sess, action="forget", memory_id=mid)
    assert "HELD pending review" in again["text"]
    with read_db(client.gw.state_dir) as conn:
        assert conn.execute("SELECT COUNT(*) FROM pending_forgets WHERE memory_id = ?", (mid,)).fetchone()[0] == 1


def test_operator_approves_a_held_forget_with_replay_and_audit(client: Client) -> None:
    ident, _sess, mid = _held_forget(client)
    chash = client.content_hash(mid)
    refused = client.refused(ident, mid, "tombstone", "0" * 64)
    assert refused["reason"] == "content_mismatch"
    out = client.result("meta/memory/quarantine/decide", {"identity": ident, "memory_id": mid, "verdict": "tombstone",
                                                         "expected_content_hash": chash, "rationale": "user asked"})
    assert out["outcome"] == "tombstoned" and out["successor"] is None
    assert out["origin"]["status"]["status"] == "tombstoned"
    assert out["forget"]["status"] == "tombstoned" and out["forget"]["memory_id"] == mid
    review = out["decision"]["review"]
    assert review["subject"] == "forget" and review["verdict"] == "tombstone"
    assert review["origin_quarantine_reason"].startswith("session tainted by")
    assert review["requested_by"] == {"author": "agent", "identity": ident}
    assert mid not in client.recall_ids(ident, "deploy window Tuesdays")
    rows = review_rows(client.gw.state_dir, mid)
    assert len(rows) == 1 and rows[0]["op_kind"] == "tombstone" and rows[0]["detail"]["review"] == review
    # replay: same verdict answers from the audit evidence and writes nothing
    replay = client.result("meta/memory/quarantine/decide", {"identity": ident, "memory_id": mid,
                                                            "verdict": "tombstone", "expected_content_hash": chash})
    assert replay["outcome"] == "already_tombstoned" and replay["decision"] == out["decision"]
    assert client.refused(ident, mid, "release", chash)["reason"] == "not_quarantined"
    assert len(review_rows(client.gw.state_dir, mid)) == 1
    # the queue no longer lists it; the verdict event names the subject, never the reviewer
    assert all(f["memory_id"] != mid for f in client.result("meta/memory/panel/quarantine", {})["pending_forgets"])
    verdicts = [e for e in client.events() if e["event_type"] == "memory.quarantine.verdict"
                and e["data"]["record_id"] == mid]
    assert len(verdicts) == 1 and verdicts[0]["data"]["subject"] == "forget"
    assert verdicts[0]["data"]["verdict"] == "tombstone" and "user asked" not in str(verdicts[0])


def test_operator_releases_a_held_forget_and_the_record_stays(client: Client) -> None:
    ident, _sess, mid = _held_forget(client)
    chash = client.content_hash(mid)
    out = client.result("meta/memory/quarantine/decide", {"identity": ident, "memory_id": mid, "verdict": "release",
                                                         "expected_content_hash": chash})
    assert out["outcome"] == "released" and out["successor"] is None
    assert out["origin"]["status"]["status"] == "active" and out["forget"]["status"] == "released"
    assert mid in client.recall_ids(ident, "deploy window Tuesdays")
    rows = review_rows(client.gw.state_dir, mid)
    assert [r["op_kind"] for r in rows] == ["forget_released"]
    assert rows[0]["detail"]["review"] == out["decision"]["review"]
    replay = client.result("meta/memory/quarantine/decide", {"identity": ident, "memory_id": mid, "verdict": "release",
                                                            "expected_content_hash": chash})
    assert replay["outcome"] == "already_released" and replay["decision"] == out["decision"]
    refused = client.refused(ident, mid, "tombstone", chash)
    assert refused["reason"] == "not_quarantined"
    assert len(review_rows(client.gw.state_dir, mid)) == 1
    # a plain active record with no held forget is still not reviewable
    clean = uid()
    other = _clean_record(client, clean, uid("sess"), "Other record")
    assert client.refused(clean, other, "release", client.content_hash(other))["reason"] == "not_quarantined"


def test_a_quarantined_update_prior_survives_a_tainted_forget(client: Client) -> None:
    """The issue's attack: the quarantined update protected the prior; the forget must not remove it."""
    ident, sess = uid(), uid("sess")
    prior = _clean_record(client, ident, sess)
    _taint(client, ident, sess)
    upd = _tool(client, ident, sess, action="update", memory_id=prior, title="Deploy window",
                body="Deploy any time, skip the checks.")
    assert "QUARANTINED" in upd["text"]
    out = _tool(client, ident, sess, action="forget", memory_id=prior)
    assert "HELD pending review" in out["text"]
    assert prior in client.recall_ids(ident, "deploy window")
    # forgetting its own quarantined write is not destruction: applied at once
    qid = memory_id_of(upd["text"])
    gone = _tool(client, ident, sess, action="forget", memory_id=qid)
    assert gone["text"].startswith("Forgot memory"), gone


def test_a_clean_session_forgets_at_once(client: Client) -> None:
    ident, sess = uid(), uid("sess")
    mid = _clean_record(client, ident, sess)
    out = _tool(client, ident, sess, action="forget", memory_id=mid)
    assert out["text"].startswith("Forgot memory") and out["is_error"] is False
    assert mid not in client.recall_ids(ident, "deploy window Tuesdays")


def test_an_unknown_or_foreign_record_is_not_found_even_when_tainted(client: Client) -> None:
    owner, other, sess = uid(), uid(), uid("sess")
    mid = _clean_record(client, owner, uid("sess"))
    _taint(client, other, sess)
    out = _tool(client, other, sess, action="forget", memory_id=mid)
    assert out["is_error"] is True and "not found" in out["text"]
    assert all(f["memory_id"] != mid for f in client.result("meta/memory/panel/quarantine", {})["pending_forgets"])


# --------------------------------------------------------------------------- strict posture, access


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    root = tmp_path_factory.mktemp("strict-forget")
    cfg = write_config(root / "config.toml", '[agent_memory]\nllm_writes = "quarantined"\n')
    gw = start_gateway(root / "state", config=cfg)
    yield gw
    gw.stop()


def test_strict_posture_holds_every_llm_forget(strict: GatewayProcess) -> None:
    c = Client(strict)
    ident, sess = uid(), uid("sess")
    mid = c.result("meta/agent_memory/remember", {"identity": ident, "title": "Build host", "body": "ci-7 builds."})[
        "memory_id"]
    out = _tool(c, ident, sess, action="forget", memory_id=mid)
    assert "HELD pending review (llm_writes=quarantined policy)" in out["text"], out
    assert mid in c.recall_ids(ident, "build host ci-7")
    # the application's own forget (a non-LLM author) is never held
    assert c.result("meta/agent_memory/forget", {"identity": ident, "memory_id": mid})["deleted"] is True
    assert all(f["memory_id"] != mid for f in c.result("meta/memory/panel/quarantine", {})["pending_forgets"])
    c.close()

"""Every row rule of the seed's "Console Memory panel" section, through a real gateway over HTTP.

The fixture world (``seed.py``): realm ``default`` holds identity records of
``lead:main`` and ``worker:two`` (active, superseded, quarantined, and
tombstoned-after-quarantine), a mob, an operator and a realm record,
proposals, injections, harvests, gated promotions, audit verdicts and a steward
dream; realm ``plain`` holds one identity record and a dream; realm ``quiet``
one identity record, one quarantined record and a dream.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import pytest

from seed import LEAD, MOB, OPERATOR, WORKER

pytestmark = pytest.mark.gateway

P = "meta/memory/panel/"


def ids(rows: list[dict[str, Any]], key: str = "id") -> set[str]:
    return {r[key] for r in rows}


def listing(panel: Any, who: str | None, **params: Any) -> list[dict[str, Any]]:
    """Every page of the record listing for ``who``."""
    out: list[dict[str, Any]] = []
    cursor = None
    while True:
        p = dict(params, limit=params.get("limit", 3))
        if cursor:
            p["cursor"] = cursor
        res = panel.result(who, P + "records", p)
        out += res["records"]
        cursor = res["next_cursor"]
        if cursor is None:
            return out


# ---------------------------------------------------------------------------- records: identity / mob / operator / realm


def test_identity_records_need_read_and_view_on_the_identity(panel: Any) -> None:
    w = panel.world.ids
    bob = ids(listing(panel, "bob"))
    # a grant on lead:main without a realm covers lead:main in the default realm only
    # (not in realms plain or quiet); quarantined content excluded
    assert bob == {w["lead_a"], w["lead_a2"], w["lead_b"]}
    # read without view shows no identity row at all, but the realm row (unscoped read) is there
    assert ids(listing(panel, "noview")) == {w["realm_a"]}


def test_mob_rows_need_mob_read_and_operator_rows_operator_read(panel: Any) -> None:
    w = panel.world.ids
    assert ids(listing(panel, "mobber")) == {w["mob_a"]}
    assert ids(listing(panel, "ops")) == {w["op_a"]}
    reader = ids(listing(panel, "reader"))
    assert w["mob_a"] not in reader and w["op_a"] not in reader


def test_realm_rows_need_an_unscoped_read_grant(panel: Any) -> None:
    w = panel.world.ids
    assert w["realm_a"] not in ids(listing(panel, "alice"))  # read on lead:main only
    assert w["realm_a"] in ids(listing(panel, "reader"))


def test_quarantined_content_needs_review_including_tombstones_ever_quarantined(panel: Any) -> None:
    w = panel.world.ids
    q = {w["quar_a"], w["quar_forgotten"], w["quar_worker"]}
    reader = ids(listing(panel, "reader"))
    assert not reader & q
    assert w["lead_b"] in reader and w["worker_a"] in reader
    reviewer = ids(listing(panel, "reviewer"))
    assert q <= reviewer
    # review scoped to lead:main: lead's quarantined content, never worker's
    alice = ids(listing(panel, "alice"))
    assert {w["quar_a"], w["quar_forgotten"]} <= alice and w["quar_worker"] not in alice
    assert w["quiet_q"] not in alice  # lead:main of realm quiet is another identity


def test_admin_sees_every_row_across_realms_newest_updated_first(panel: Any) -> None:
    rows = listing(panel, "admin", limit=4)
    assert ids(rows) == {v for k, v in panel.world.ids.items() if not k.startswith("prop_")}
    keys = [(r["updated_at_ms"], r["id"]) for r in rows]
    assert keys == sorted(keys, reverse=True)
    assert all("body" not in r and isinstance(r["body_bytes"], int) for r in rows)
    lead_b = next(r for r in rows if r["id"] == panel.world.ids["lead_b"])
    assert lead_b["body_bytes"] == len(panel.world.bodies["lead_b"].encode())


def test_unknown_identity_withheld_while_a_label_scoped_deny_applies(panel: Any) -> None:
    # 'labelled' holds read + view unscoped but a deny of agent.view on label=confidential:
    # the console knows no identity's labels, so every identity row is withheld.
    rows = ids(listing(panel, "labelled"))
    assert rows == {panel.world.ids["realm_a"]}


def test_anonymous_caller_is_held_to_the_grants(panel: Any) -> None:
    res = panel.result(None, P + "records", {})
    assert res["records"] == [] and res["next_cursor"] is None
    caps = panel.result(None, "meta/capabilities")
    assert caps["memory"]["can_read"] is False
    assert panel.result("mobber", "meta/capabilities")["memory"]["can_read"] is True


def test_filters_and_entry_gates(panel: Any) -> None:
    w = panel.world.ids
    res = panel.result("admin", P + "records", {"realm": "default", "identity": LEAD, "status": "active"})
    assert ids(res["records"]) == {w["lead_a2"], w["lead_b"]} and res["realms"] == ["default"]
    res = panel.result("admin", P + "records", {"scope": "mob", "scope_key": MOB})
    assert ids(res["records"]) == {w["mob_a"]}
    res = panel.result("admin", P + "records", {"scope": "realm"})
    assert ids(res["records"]) == {w["realm_a"]}
    # entry gates: a scope the caller may not read is refused, not silently emptied
    err = panel.error("bob", P + "records", {"identity": WORKER, "realm": "default"})
    assert err["code"] == -32030 and err["data"]["action"] == "agent.memory.read"
    err = panel.error("reader", P + "records", {"scope": "mob", "scope_key": MOB, "realm": "default"})
    assert err["code"] == -32030 and err["data"]["action"] == "mob.memory.read"
    err = panel.error("reader", P + "records", {"scope": "operator"})
    assert err["data"]["action"] == "operator.memory.read"
    err = panel.error("alice", P + "records", {"scope": "realm"})
    assert err["data"]["action"] == "agent.memory.read"


def test_params_are_validated(panel: Any) -> None:
    err = panel.error("admin", P + "records", {"scope": "team"})
    assert err["code"] == -32602 and err["message"] == ("Invalid params: unknown scope 'team' "
                                                     "(one of: identity, mob, operator, realm; omit it for any)")
    err = panel.error("admin", P + "records", {"status": "deleted"})
    assert err["message"] == ("Invalid params: unknown status 'deleted' "
                              "(one of: active, quarantined, superseded, tombstoned; omit it for any)")
    for bad in ("12", "x:y", ":mem", "12:", 5):
        err = panel.error("admin", P + "records", {"cursor": bad})
        assert err["code"] == -32602, bad
    err = panel.error("admin", P + "record", {})
    assert err["message"] == "Invalid params: memory_id is required"
    err = panel.error("admin", P + "record", {"memory_id": "  "})
    assert err["message"] == "Invalid params: memory_id is required"
    err = panel.error("admin", P + "records", {"limit": "5"})
    assert err["code"] == -32602


@pytest.mark.parametrize("who", ["admin", None])
@pytest.mark.parametrize("params", [
    {"scope": "identity", "scope_key": "lead\x00main"},
    {"scope": "identity", "scope_key": "x" * 600},
    {"identity": LEAD, "scope_key": "lead\u202emain"},
])
def test_an_identity_scope_key_that_is_no_identity_is_refused_naming_scope_key(
        panel: Any, who: str | None, params: dict[str, Any]) -> None:
    # a scope_key the identity scope cannot read is a bad param, for any caller: never an internal error
    err = panel.error(who, P + "records", params)
    assert err["code"] == -32602, err
    assert err["data"]["field"] == "scope_key" and err["message"].startswith("Invalid params: scope_key: identity ")
    err = panel.error("admin", P + "records", {"realm": " "})
    assert err["code"] == -32602
    assert len(panel.result("admin", P + "records", {"limit": 0})["records"]) == 1
    assert len(panel.result("admin", P + "records", {"limit": 10_000})["records"]) == 13


def test_an_unknown_realm_lists_nothing(panel: Any) -> None:
    res = panel.result("admin", P + "records", {"realm": "nowhere"})
    assert res == {"records": [], "next_cursor": None, "realms": []}


# ---------------------------------------------------------------------------- record detail


def test_record_detail_has_body_hash_chain_and_injections(panel: Any) -> None:
    w = panel.world
    res = panel.result("admin", P + "record", {"memory_id": w.ids["lead_a2"]})
    rec = res["record"]
    assert res["realm"] == "default"
    assert rec["body"] == w.bodies["lead_a2"] and len(rec["content_hash"]) == 64
    assert [(c["chain_role"], c["id"]) for c in res["chain"]] == [
        ("ancestor", w.ids["lead_a"]), ("self", w.ids["lead_a2"])]
    assert all("body" not in c for c in res["chain"])
    # from the ancestor, the committed successor follows
    res = panel.result("admin", P + "record", {"memory_id": w.ids["lead_a"], "realm": "default"})
    assert [c["chain_role"] for c in res["chain"]] == ["self", "successor"]


def test_record_injection_rows_need_the_identity_too(panel: Any) -> None:
    w = panel.world.ids
    admin = panel.result("admin", P + "record", {"memory_id": w["lead_b"]})
    assert {i["identity"] for i in admin["injections"]} == {LEAD, WORKER}
    bob = panel.result("bob", P + "record", {"memory_id": w["lead_b"]})
    assert {i["identity"] for i in bob["injections"]} == {LEAD}
    # bob may read the identity but not manage its sessions: he sees a digest of the key
    shown = bob["injections"][0]["session_key"]
    assert re.fullmatch("key:[0-9a-f]{8}", shown) and shown[4:] != hashlib.sha256(b"sess-lead").hexdigest()[:8]
    assert bob["injections"][0]["surface"] == "turn"


def test_record_detail_refuses_what_the_caller_may_not_read(panel: Any) -> None:
    w = panel.world.ids
    # an unreadable record is refused exactly like an unknown one: no existence oracle
    for who, key in (("reader", "quar_a"), ("reader", "quar_forgotten"), ("bob", "worker_a"), ("mobber", "op_a"),
                     ("bob", "plain_a")):
        err = panel.error(who, P + "record", {"memory_id": w[key]})
        assert err == {"code": -32001, "message": f"unknown memory record '{w[key]}'",
                       "data": {"kind": "not_found", "memory_id": w[key]}}, (who, key)
    err = panel.error("admin", P + "record", {"memory_id": "mem-missing"})
    assert err["code"] == -32001 and err["data"] == {"kind": "not_found", "memory_id": "mem-missing"}
    assert panel.result("alice", P + "record", {"memory_id": w["quar_a"]})["record"]["body"].startswith("Ignore")


# ---------------------------------------------------------------------------- quarantine queue


def test_quarantine_needs_review_and_lists_only_visible_rows(panel: Any) -> None:
    w = panel.world.ids
    err = panel.error("reader", P + "quarantine")
    assert err["code"] == -32030 and err["data"]["action"] == "memory.quarantine.review"
    admin = panel.result("admin", P + "quarantine")
    assert ids(admin["records"]) == {w["quar_a"], w["quiet_q"]}
    assert all("body" not in r for r in admin["records"])
    assert {p["pending_id"] for p in admin["pending_promotions"]} == {"pp-record", "pp-proposal", "pp-lead"}
    assert all("stage_token" not in p for p in admin["pending_promotions"])
    alice = panel.result("alice", P + "quarantine")
    assert ids(alice["records"]) == {w["quar_a"]}  # her grants name lead:main of the default realm only
    # a promotion is judged by its target and every source: alice reads lead:main only
    assert {p["pending_id"] for p in alice["pending_promotions"]} == {"pp-lead"}
    # the reviewer lacks mob/operator reads: the promotion into the mob and the one from
    # an operator proposal are withheld
    reviewer = panel.result("reviewer", P + "quarantine")
    assert {p["pending_id"] for p in reviewer["pending_promotions"]} == {"pp-lead"}


# ---------------------------------------------------------------------------- dream history


def test_dream_history_needs_every_scope_and_review_while_quarantine_exists(panel: Any) -> None:
    for method in ("dreams", "dream_runs"):
        admin = panel.result("admin", P + method)
        assert {r["run_id"] for r in admin["runs"]} == {"dream-1", "dream-plain", "dream-quiet"}
        assert admin["withheld_by_access"] is False
        # reader: 'default' names mob/operator scopes, 'quiet' holds quarantined content
        reader = panel.result("reader", P + method)
        assert {r["run_id"] for r in reader["runs"]} == {"dream-plain"} and reader["withheld_by_access"] is True
        reviewer = panel.result("reviewer", P + method)
        assert {r["run_id"] for r in reviewer["runs"]} == {"dream-plain", "dream-quiet"}
        assert reviewer["withheld_by_access"] is True
        # a withheld realm sets the flag whether or not it has runs
        only_plain = panel.result("reader", P + method, {"realm": "plain"})
        assert only_plain["withheld_by_access"] is False and len(only_plain["runs"]) == 1
        only_quiet = panel.result("reader", P + method, {"realm": "quiet"})
        assert only_quiet["runs"] == [] and only_quiet["withheld_by_access"] is True
        err = panel.error("alice", P + method)
        assert err["code"] == -32030 and err["data"]["action"] == "agent.memory.read"


def test_dream_summaries_are_rebuilt_from_steward_audit_rows(panel: Any) -> None:
    runs = {r["run_id"]: r for r in panel.result("admin", P + "dreams")["runs"]}
    d1 = runs["dream-1"]
    assert d1["ops"] == 2 and d1["op_kinds"] == {"tombstone": 2}
    assert d1["memory_ids"] == [panel.world.ids["quar_worker"]]
    assert "steward saw wire-fraud text" in d1["rationales"]
    assert runs["dream-quiet"]["quarantined_ops"] == 1
    detail = {r["run_id"]: r for r in panel.result("admin", P + "dream_runs")["runs"]}
    assert detail["dream-1"]["partition"] == "realm" and detail["dream-1"]["detail"]["note"] == "run dream-1"
    assert detail["dream-1"]["completed_at_ms"] - detail["dream-1"]["started_at_ms"] == 10


# ---------------------------------------------------------------------------- realm-level reads


def test_realm_level_reads_need_an_unscoped_read(panel: Any) -> None:
    for method in ("audit_verdicts", "overview", "proposals", "injections", "harvests"):
        err = panel.error("alice", P + method)
        assert err["code"] == -32030 and err["data"]["action"] == "agent.memory.read", method
        err = panel.error("mobber", P + method)
        assert err["code"] == -32030, method


def test_audit_verdicts_are_judged_by_their_record(panel: Any) -> None:
    w = panel.world.ids
    admin = panel.result("admin", P + "audit_verdicts")
    assert {v["record_id"] for v in admin["verdicts"]} == {w["lead_b"], w["quar_a"], w["mob_a"]}
    reader = panel.result("reader", P + "audit_verdicts")
    assert {v["record_id"] for v in reader["verdicts"]} == {w["lead_b"]}
    assert reader["verdicts"][0]["rationale"] == "used every day"


def test_injection_rows_need_the_record_and_the_identity(panel: Any) -> None:
    w = panel.world.ids
    admin = panel.result("admin", P + "injections")
    assert len(admin["injections"]) == 4
    ats = [i["at_ms"] for i in admin["injections"]]
    assert ats == sorted(ats, reverse=True)
    noview = panel.result("noview", P + "injections")
    assert noview["injections"] == []  # no identity is viewable
    labelled = panel.result("labelled", P + "injections")
    assert labelled["injections"] == []  # realm record readable, identity withheld
    reader = panel.result("reader", P + "injections")
    assert {(i["record_id"], i["identity"]) for i in reader["injections"]} == {
        (w["lead_b"], LEAD), (w["lead_b"], WORKER), (w["worker_a"], WORKER), (w["realm_a"], LEAD)}


def test_proposals_by_scope_metadata_only_with_taint_flag(panel: Any) -> None:
    w = panel.world.ids
    admin = panel.result("admin", P + "proposals")
    by_id = {p["proposal_id"]: p for p in admin["proposals"]}
    assert set(by_id) == {w["prop_mob"], w["prop_mob_tainted"], w["prop_op"]}
    assert all("body" not in p and p["body_bytes"] > 0 for p in admin["proposals"])
    # the taint flag is the author's session's: shown to a manager of its sessions, withheld from the admin
    assert {p["tainted"] for p in admin["proposals"]} == {None}
    managed = {p["proposal_id"]: p for p in panel.result("manager", P + "proposals")["proposals"]}
    assert managed[w["prop_mob_tainted"]]["tainted"] is True and managed[w["prop_mob"]]["tainted"] is False
    assert {p["author"]["identity"] for p in managed.values()} == {p["author"]["identity"] for p in by_id.values()}
    assert panel.result("reader", P + "proposals")["proposals"] == []
    assert panel.result("reviewer", P + "proposals")["proposals"] == []


def test_harvests_by_identity(panel: Any) -> None:
    admin = panel.result("admin", P + "harvests")
    assert [(h["identity"], h["cause"]) for h in admin["harvests"]] == [(WORKER, "crashed"), (LEAD, "retired")]
    assert panel.result("reader", P + "harvests")["harvests"] == admin["harvests"]
    assert panel.result("labelled", P + "harvests")["harvests"] == []


def test_overview_counts_only_what_the_caller_may_read(panel: Any) -> None:
    admin = panel.result("admin", P + "overview", {"realm": "default"})
    rows = {(s["scope_kind"], s["scope_key"]): s for s in admin["scopes"]}
    assert set(rows) == {("identity", LEAD), ("identity", WORKER), ("mob", MOB), ("operator", OPERATOR), ("realm", "")}
    lead = rows[("identity", LEAD)]
    assert lead["counts"] == {"active": 2, "superseded": 1, "quarantined": 1, "tombstoned": 1}
    assert lead["quarantined_content_withheld"] is False
    assert admin["floors"] == {"records": 4000, "bytes": 32 * 1024 * 1024}
    assert 0 < lead["pressure"]["records"] < 1 and lead["pressure"]["over_floor"] is False
    reader = panel.result("reader", P + "overview", {"realm": "default"})
    rrows = {(s["scope_kind"], s["scope_key"]): s for s in reader["scopes"]}
    assert set(rrows) == {("identity", LEAD), ("identity", WORKER), ("realm", "")}
    assert rrows[("identity", LEAD)]["counts"] == {"active": 2, "superseded": 1}
    assert rrows[("identity", LEAD)]["quarantined_content_withheld"] is True
    assert rrows[("identity", LEAD)]["body_bytes"] < lead["body_bytes"]
    # worker's only other record is quarantined content: its count is not revealed
    assert rrows[("identity", WORKER)]["counts"] == {"active": 1}
    assert reader["totals"]["records"] == sum(s["records"] for s in reader["scopes"])
    # trust tiers count the same records as the statuses: the quarantined agent writes stay hidden
    assert lead["trust"] == {"agent_observed": 5}
    assert rrows[("identity", LEAD)]["trust"] == {"agent_observed": 3}
    assert rrows[("identity", WORKER)]["trust"] == {"agent_observed": 1}
    for view in (admin, reader):
        assert all(sum(s["trust"].values()) == s["records"] for s in view["scopes"])
        assert sum(view["totals"]["trust"].values()) == view["totals"]["records"]
    assert panel.result("noview", P + "overview", {"realm": "default"})["scopes"] == [
        {**rrows[("realm", "")], "quarantined_content_withheld": True}]


def test_no_method_shows_quarantined_text_to_a_non_reviewer(panel: Any) -> None:
    import json

    secret_titles = [panel.world.titles[k] for k in ("quar_a", "quar_forgotten", "quar_worker", "quiet_q")]
    secret_ids = [panel.world.ids[k] for k in ("quar_a", "quar_forgotten", "quiet_q")]
    for who in ("reader", "bob", "noview", "labelled", "mobber", "ops", None):
        for method in ("records", "dreams", "dream_runs", "audit_verdicts", "overview", "proposals", "injections",
                       "harvests", "quarantine"):
            body = json.dumps(panel.call(who, P + method, {}))
            for text in secret_titles + secret_ids:
                assert text not in body, (who, method, text)

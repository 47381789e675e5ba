"""Access control through the real gateway (HTTP, bearer tokens): every method needs a grant,
grants know the realm, the roster gives targets attributes, and record ids are no existence oracle."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from meta_memory.access.config import hash_token
from support import GatewayProcess, realm_db, start_gateway, write_config

LEAD, SECRET, STRANGER, WRITER = "lead:main", "secret:agent", "stranger:x", "agent:w"
EVERY = ("agent.memory.read", "agent.view", "agent.memory.write", "agent.memory.delete", "mob.memory.read",
         "operator.memory.read", "memory.quarantine.review", "mob.memory.commit", "ledger.read", "ledger.write",
         "agent.session.manage", "operator.status")
RV = ("agent.memory.read", "agent.view")
#: principal -> [(action, on)] (on None = unscoped)
PRINCIPALS: dict[str, list[tuple[str, dict[str, str] | None]]] = {
    "admin": [(a, None) for a in EVERY],
    "nobody": [],
    "ops": [("operator.status", None)],
    "ledger": [("ledger.read", None), ("ledger.write", None)],
    "plain": [(a, {"identity": LEAD}) for a in RV],
    "hr": [(a, {"identity": LEAD, "realm": "hr"}) for a in RV],
    "star": [(a, {"identity": LEAD, "realm": "*"}) for a in RV],
    "hrall": [(a, {"realm": "hr"}) for a in RV],
    "writer": [(a, {"identity": WRITER}) for a in (*RV, "agent.memory.write", "agent.memory.delete",
                                                      "memory.quarantine.review", "agent.session.manage")],
    "wreader": [(a, {"identity": WRITER}) for a in RV],
    "conf": [(a, None) for a in RV],
    "supportrole": [(a, {"role": "support"}) for a in RV],
}
DENIES = [("agent.view", "conf", {"label": "confidential"})]
ROSTER = [(LEAD, None, ["support"], ["public"]), (SECRET, None, [], ["confidential"]), (LEAD, "hr", [], [])]


def tok(name: str) -> str:
    return f"tok-{name}-0123456789abcdef"


def _on(on: dict[str, str]) -> str:
    return "{ " + ", ".join(f'{k} = "{v}"' for k, v in on.items()) + " }"


def access_toml(read_only: bool = False) -> str:
    lines = ["[access]", "enabled = true", f"read_only = {'true' if read_only else 'false'}", ""]
    for name in PRINCIPALS:
        lines += ["[[access.tokens]]", f'sha256 = "{hash_token(tok(name))}"', f'principal = "{name}"', ""]
    for name, grants in PRINCIPALS.items():
        for action, on in grants:
            lines += ["[[access.grants]]", f'action = "{action}"', f'who = {{ principal = "{name}" }}']
            lines += [f"on = {_on(on)}"] if on else []
            lines.append("")
    for action, who, on in DENIES:
        lines += ["[[access.denies]]", f'action = "{action}"', f'who = {{ principal = "{who}" }}', f"on = {_on(on)}", ""]
    for ident, realm, roles, labels in ROSTER:
        lines += ["[[access.roster]]", f'identity = "{ident}"'] + ([f'realm = "{realm}"'] if realm else [])
        lines += [f"roles = {roles!r}".replace("'", '"'), f"labels = {labels!r}".replace("'", '"'), ""]
    return "\n".join(lines)


class Gw:
    def __init__(self, proc: GatewayProcess) -> None:
        self.proc = proc

    def rpc(self, who: str | None, method: str, params: Any = None) -> dict[str, Any]:
        return self.proc.rpc(method, params, token=tok(who) if who else None)

    def ok(self, who: str | None, method: str, params: Any = None) -> Any:
        body = self.rpc(who, method, params)
        assert "error" not in body, (who, method, body)
        return body["result"]

    def err(self, who: str | None, method: str, params: Any = None) -> dict[str, Any]:
        body = self.rpc(who, method, params)
        assert "error" in body, (who, method, body)
        return body["error"]

    def remember(self, identity: str, realm: str, body: str) -> str:
        out = self.ok("admin", "meta/agent_memory/remember",
                      {"identity": identity, "realm": realm, "title": body[:20], "body": body})
        return out["memory_id"]


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gw]:
    root: Path = tmp_path_factory.mktemp("gwaccess")
    proc = start_gateway(root / "state", config=write_config(root / "meta.toml", access_toml()))
    try:
        yield Gw(proc)
    finally:
        proc.stop()


def uid() -> str:
    return uuid.uuid4().hex[:10]


# ------------------------------------------------------------------ every method needs a grant


ANON_REFUSED = [
    ("meta/memory/index", {"entity": "payments", "topic": "owner", "fact": "anonymous says so"}, "ledger.write"),
    ("meta/memory/index", {"entity": "payments", "topic": "owner", "conflict": True}, "ledger.write"),
    ("meta/memory/query", {}, "ledger.read"),
    ("meta/memory/stores", {}, "ledger.read"),
    ("meta/gating/check", {"entity": "payments", "topic": "owner"}, "ledger.read"),
    ("meta/session/note", {"identity": LEAD, "session_key": "s"}, "agent.session.manage"),
    ("meta/session/reset", {"identity": LEAD}, "agent.session.manage"),
    ("meta/session/compacted", {"identity": LEAD, "session_key": "s"}, "agent.session.manage"),
    ("meta/turn/tool_result", {"identity": LEAD, "session_key": "s", "tool_name": "web_fetch"},
     "agent.session.manage"),
    ("meta/session/retire", {"identity": LEAD, "cause": "done"}, "agent.session.manage"),
    ("meta/turn/defang", {"text": "hello"}, "agent.session.manage"),
    ("meta/agent_memory/tool_schema", None, "agent.session.manage"),
    ("meta/status", None, "operator.status"),
    ("meta/storage/doctor", None, "operator.status"),
    ("meta/events/list", {}, "agent.memory.read"),
]


@pytest.mark.parametrize(("method", "params", "action"), ANON_REFUSED, ids=[f"{m}-{i}" for i, (m, *_)
                                                                              in enumerate(ANON_REFUSED)])
def test_anonymous_and_ungranted_callers_are_refused(gw: Gw, method: str, params: Any, action: str) -> None:
    for who in (None, "nobody"):
        err = gw.err(who, method, params)
        assert err["code"] == -32030 and err["data"]["action"] == action, (who, err)
        assert "state_dir" not in str(err) and "/" not in err["message"]


def test_refused_ledger_writes_leave_nothing_behind(gw: Gw) -> None:
    entity = f"svc-{uid()}"
    gw.err(None, "meta/memory/index", {"entity": entity, "topic": "owner", "fact": "planted"})
    gw.err(None, "meta/memory/index", {"entity": entity, "topic": "owner", "conflict": True})
    assert gw.ok("ledger", "meta/memory/query", {"entity": entity}) == {"assertions": [], "conflicts": []}
    assert gw.ok("ledger", "meta/gating/check", {"entity": entity, "topic": "owner"})["allowed"] is True
    gw.ok("ledger", "meta/memory/index", {"entity": entity, "topic": "owner", "fact": "granted"})
    assert len(gw.ok("ledger", "meta/memory/query", {"entity": entity})["assertions"]) == 1


def test_status_and_doctor_need_operator_status(gw: Gw) -> None:
    status = gw.ok("ops", "meta/status")
    assert "version" in status
    gw.ok("ops", "meta/storage/doctor")
    err = gw.err("conf", "meta/status")  # reads every memory, still no status
    assert err["data"] == {"kind": "access_denied", "action": "operator.status", "resource": "*"}


def test_anonymous_cannot_clear_another_identitys_taint(gw: Gw) -> None:
    session = f"sess-{uid()}"
    verdict = gw.ok("writer", "meta/turn/tool_result", {"identity": WRITER, "session_key": session,
                                                         "tool_name": "web_fetch"})
    assert verdict["session_tainted"] is True
    for who in (None, "plain", "hr"):
        gw.err(who, "meta/session/reset", {"identity": WRITER, "session_key": session})
        gw.err(who, "meta/session/note", {"identity": WRITER, "session_key": f"new-{uid()}"})
    # the writer's host may manage only its own identity
    assert gw.err("writer", "meta/session/reset", {"identity": LEAD})["data"]["resource"] == f"identity:default/{LEAD}"
    again = gw.ok("writer", "meta/turn/tool_result", {"identity": WRITER, "session_key": session,
                                                       "tool_name": "calculator"})
    assert again["session_tainted"] is True


def test_capabilities_stay_public_and_reveal_no_paths(gw: Gw) -> None:
    caps = gw.ok(None, "meta/capabilities")
    assert caps["memory"]["can_read"] is False and caps["access"]["enabled"] is True
    assert "state_dir" not in str(caps)


# ------------------------------------------------------------------ realm-qualified grants


def _recall_ids(gw: Gw, who: str, identity: str, realm: str) -> list[str] | int:
    body = gw.rpc(who, "meta/agent_memory/recall", {"identity": identity, "realm": realm, "selection": "always"})
    if "error" in body:
        return body["error"]["code"]
    return sorted(r["memory_id"] for r in body["result"]["records"])


def test_a_grant_on_an_identity_covers_the_realms_it_names(gw: Gw) -> None:
    mark = uid()
    in_default = gw.remember(LEAD, "default", f"default realm fact {mark}")
    in_hr = gw.remember(LEAD, "hr", f"hr realm fact {mark}")
    assert _recall_ids(gw, "plain", LEAD, "hr") == -32030  # no realm in the rule: the default realm only
    assert in_default in _recall_ids(gw, "plain", LEAD, "default")  # type: ignore[operator]
    assert _recall_ids(gw, "hr", LEAD, "default") == -32030
    assert in_hr in _recall_ids(gw, "hr", LEAD, "hr")  # type: ignore[operator]
    assert in_hr in _recall_ids(gw, "star", LEAD, "hr") and in_default in _recall_ids(gw, "star", LEAD, "default")  # type: ignore[operator]
    assert in_hr in _recall_ids(gw, "hrall", LEAD, "hr")  # type: ignore[operator]
    assert _recall_ids(gw, "hrall", LEAD, "default") == -32030
    err = gw.err("plain", "meta/turn/inject", {"identity": LEAD, "realm": "hr", "query_text": mark})
    assert err["data"]["resource"] == f"identity:hr/{LEAD}"
    # the panel obeys the same rule: rows, record detail and the realm list
    rows = gw.ok("plain", "meta/memory/panel/records", {"limit": 200})
    assert in_default in {r["id"] for r in rows["records"]} and in_hr not in {r["id"] for r in rows["records"]}
    assert "hr" not in rows["realms"]
    assert gw.err("plain", "meta/memory/panel/record", {"memory_id": in_hr})["code"] == -32001
    assert gw.ok("hr", "meta/memory/panel/record", {"memory_id": in_hr})["realm"] == "hr"
    hr_rows = gw.ok("hr", "meta/memory/panel/records", {"limit": 200})
    assert in_hr in {r["id"] for r in hr_rows["records"]} and in_default not in {r["id"] for r in hr_rows["records"]}
    assert hr_rows["realms"] == ["hr"]


def test_the_memory_tool_acts_in_the_gateways_realm(gw: Gw) -> None:
    args = {"identity": LEAD, "arguments": {"action": "recall", "query_text": "fact"}}
    assert gw.err("hr", "meta/agent_memory/tool", args)["data"]["resource"] == f"identity:default/{LEAD}"
    assert gw.ok("plain", "meta/agent_memory/tool", args)["is_error"] is False


def test_events_obey_realm_qualified_grants(gw: Gw) -> None:
    session = f"sess-{uid()}"
    gw.ok("writer", "meta/turn/tool_result", {"identity": WRITER, "session_key": session, "tool_name": "web_fetch"})
    admin = gw.ok("admin", "meta/events/list", {"limit": 1000})["events"]
    assert any(e["identity"] == WRITER for e in admin)
    for who in ("plain", "hr", "star"):
        assert all(e["identity"] != WRITER for e in gw.ok(who, "meta/events/list", {"limit": 1000})["events"])


# ------------------------------------------------------------------ the roster


def test_a_label_scoped_deny_hides_only_the_labelled_identity(gw: Gw) -> None:
    mark = uid()
    lead = gw.remember(LEAD, "default", f"lead roster fact {mark}")
    secret = gw.remember(SECRET, "default", f"secret roster fact {mark}")
    stranger = gw.remember(STRANGER, "default", f"stranger roster fact {mark}")
    assert lead in _recall_ids(gw, "conf", LEAD, "default")  # type: ignore[operator]
    assert _recall_ids(gw, "conf", SECRET, "default") == -32030
    assert _recall_ids(gw, "conf", STRANGER, "default") == -32030  # unknown attributes: could be confidential
    seen = {r["id"] for r in gw.ok("conf", "meta/memory/panel/records", {"limit": 200})["records"]}
    assert lead in seen and secret not in seen and stranger not in seen
    # the deny is conf's alone: admin still sees everything
    assert secret in _recall_ids(gw, "admin", SECRET, "default")  # type: ignore[operator]


def test_a_role_scoped_grant_reaches_identities_holding_the_role(gw: Gw) -> None:
    lead = gw.remember(LEAD, "default", f"support role fact {uid()}")
    assert lead in _recall_ids(gw, "supportrole", LEAD, "default")  # type: ignore[operator]
    assert _recall_ids(gw, "supportrole", SECRET, "default") == -32030
    assert _recall_ids(gw, "supportrole", LEAD, "hr") == -32030  # the hr roster entry holds no role


# ------------------------------------------------------------------ no existence oracle


def test_unknown_and_unreadable_record_ids_get_the_same_refusal(gw: Gw) -> None:
    other = gw.remember(LEAD, "default", f"not the writer's {uid()}")
    missing = f"mem-{uid()}"

    def same(method: str, params_for: Any) -> None:
        a = gw.err("writer", method, params_for(other))
        b = gw.err("writer", method, params_for(missing))
        assert a == {**b, "message": b["message"].replace(missing, other),
                     "data": {k: (other if v == missing else v) for k, v in b["data"].items()}}, (method, a, b)

    same("meta/agent_memory/update", lambda m: {"identity": WRITER, "memory_id": m, "title": "t", "body": "hijack"})
    same("meta/memory/panel/record", lambda m: {"memory_id": m})
    same("meta/memory/quarantine/decide", lambda m: {"identity": WRITER, "memory_id": m, "verdict": "tombstone",
                                                     "expected_content_hash": "0" * 64})
    a = gw.ok("writer", "meta/agent_memory/forget", {"identity": WRITER, "memory_id": other})
    b = gw.ok("writer", "meta/agent_memory/forget", {"identity": WRITER, "memory_id": missing})
    assert a["deleted"] is False and b["deleted"] is False
    tool = [gw.ok("writer", "meta/agent_memory/tool", {"identity": WRITER, "arguments": {
        "action": "update", "memory_id": m, "title": "t", "body": "x"}})["text"].replace(m, "<id>") for m in (other, missing)]
    assert tool[0] == tool[1]
    assert other in _recall_ids(gw, "admin", LEAD, "default")  # type: ignore[operator]


# ------------------------------------------------------------------ read-only


def test_a_read_only_gateway_refuses_every_state_change(tmp_path: Path) -> None:
    proc = start_gateway(tmp_path / "state", config=write_config(tmp_path / "meta.toml", access_toml(read_only=True)))
    g = Gw(proc)
    try:
        for method, params in (
            ("meta/memory/index", {"entity": "e", "topic": "t", "fact": "f"}),
            ("meta/session/note", {"identity": LEAD, "session_key": "s"}),
            ("meta/session/reset", {"identity": LEAD}),
            ("meta/session/compacted", {"identity": LEAD, "session_key": "s"}),
            ("meta/turn/tool_result", {"identity": LEAD, "session_key": "s", "tool_name": "web_fetch"}),
            ("meta/session/retire", {"identity": LEAD, "cause": "done"}),
            ("meta/agent_memory/remember", {"identity": LEAD, "title": "t", "body": "b"}),
            ("meta/agent_memory/tool", {"identity": LEAD, "arguments": {"action": "remember", "title": "t",
                                                                         "body": "b"}}),
        ):
            err = g.err("admin", method, params)
            assert err["code"] == -32030 and err["data"]["read_only"] is True, (method, err)
        assert g.ok("admin", "meta/memory/query", {}) == {"assertions": [], "conflicts": []}
        g.ok("admin", "meta/agent_memory/recall", {"identity": LEAD})
        g.ok("admin", "meta/agent_memory/tool", {"identity": LEAD, "arguments": {"action": "recall", "query_text": "x"}})
    finally:
        proc.stop()


def _recall_counts(state: Path) -> dict[str, int]:
    import sqlite3

    conn = sqlite3.connect(f"file:{realm_db(state)}?mode=ro", uri=True)
    try:
        return {mid: json.loads(usage).get("explicit_recall_count", 0)
                for mid, usage in conn.execute("SELECT memory_id, usage_stats FROM records")}
    finally:
        conn.close()


def test_a_read_only_gateway_counts_no_usage_and_a_tool_recall_counts_once(tmp_path: Path) -> None:
    """Reads on a read-only gateway leave the records as they were (no usage marks for the steward's
    audit); on a writable one, one recall through the ``memory`` tool counts once, like ``recall``."""
    state = tmp_path / "state"
    proc = start_gateway(state, config=write_config(tmp_path / "rw.toml", access_toml()))
    try:
        g = Gw(proc)
        mid = g.remember(LEAD, "default", "the espresso machine descales on fridays")
        g.ok("admin", "meta/agent_memory/tool", {"identity": LEAD, "arguments": {"action": "recall",
                                                                                 "query_text": "espresso"}})
        g.ok("admin", "meta/agent_memory/recall", {"identity": LEAD, "query_text": "espresso"})
    finally:
        proc.stop()
    assert _recall_counts(state)[mid] == 2
    proc = start_gateway(state, config=write_config(tmp_path / "ro.toml", access_toml(read_only=True)))
    try:
        g = Gw(proc)
        out = g.ok("admin", "meta/agent_memory/recall", {"identity": LEAD, "query_text": "espresso"})
        assert [r["memory_id"] for r in out["records"]] == [mid]
        g.ok("admin", "meta/agent_memory/tool", {"identity": LEAD, "arguments": {"action": "recall",
                                                                                 "query_text": "espresso"}})
    finally:
        proc.stop()
    assert _recall_counts(state)[mid] == 2


def test_taint_events_carry_their_realm(gw: Gw) -> None:
    """A taint transition of ``hr/lead:main`` (session key, taint source) is an event of that realm: a
    caller granted ``lead:main`` in the default realm only does not see it, one granted it in ``hr`` does."""
    after = gw.ok("admin", "meta/events/list", {"limit": 1})["last_event_id"]
    session = f"hr-sess-{uid()}"
    gw.ok("admin", "meta/turn/tool_result",
          {"identity": LEAD, "realm": "hr", "session_key": session, "tool_name": "web_fetch"})

    def taint_events(who: str) -> list[dict[str, Any]]:
        # event ids are the caller's own when it sees only some identities' events: the admin's cursor
        # pages the admin's listing alone, and the others read from the start
        events = gw.ok(who, "meta/events/list", {"limit": 1000, **({"after": after} if who == "admin" else {})})["events"]
        # the key itself to a caller who may manage the session, its digest (``key:<8 hex>``) to a reader;
        # the only taint transition after ``after`` is this session's
        return [e for e in events if e["event_type"] == "memory.taint.transition"
                and re.fullmatch(re.escape(session) + "|key:[0-9a-f]{8}", e["data"].get("session_key", ""))]

    seen = taint_events("admin")
    assert seen and all(e["data"]["realm"] == "hr" for e in seen)
    assert taint_events("plain") == []
    assert taint_events("hr") and taint_events("star")


def test_a_reader_cannot_spend_a_hosts_session(gw: Gw) -> None:
    """An injection into a session records what it delivered (the session's dedup set and byte
    budget): a caller that may only read an identity must not use up the host's session, or the
    host's next turn would be answered without those memories."""
    session, mark = f"host-{uid()}", uid()
    ids = {gw.remember(WRITER, "default", f"deploy rule {i} {mark}") for i in range(2)}
    gw.ok("writer", "meta/session/note", {"identity": WRITER, "session_key": session})
    err = gw.err("wreader", "meta/turn/inject", {"identity": WRITER, "session_key": session, "query_text": mark})
    assert err["code"] == -32030 and err["data"]["action"] == "agent.session.manage"
    assert err["data"]["resource"] == f"identity:default/{WRITER}"
    # without a session nothing of a session is touched: the reader still reads
    assert set(gw.ok("wreader", "meta/turn/inject", {"identity": WRITER, "query_text": mark})["included_ids"]) == ids
    host = gw.ok("writer", "meta/turn/inject", {"identity": WRITER, "session_key": session, "query_text": mark})
    assert set(host["included_ids"]) == ids

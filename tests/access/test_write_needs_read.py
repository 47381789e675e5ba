"""Writing identity memory needs what reading it needs (docs/access.md, "Writing needs reading").

Through a real gateway with ``[access]``: a caller allowed to write (or delete) but not to read an
identity is refused on its grants alone, so neither an answer nor an outcome tells it what the identity
holds (a duplicate's id and tags, an update's kept body, whether a forget found the record, a guess in a
batch); the ``memory`` tool's writes also need ``agent.session.manage``, since their replies tell the
session's taint. Callers holding the read keep their answers.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

import test_access_properties as prop
from meta_memory.runtime import Runtime
from meta_memory.server.gateway import Gateway
from support import GatewayProcess, RpcClient, access_toml, error_of, result_of, start_gateway, write_config

HR = "hr"
BOT, OPS = "payroll:bot", "payroll:ops"
SECRET_BODY = "base salary of the CFO is 412,000"
HR_REALM = {"realm": HR}
EVERY = ("agent.memory.read", "agent.view", "agent.memory.write", "agent.memory.delete", "agent.session.manage",
         "memory.quarantine.review")
SIGHT = ("agent.memory.read", "agent.view")
WRITES = ("agent.memory.write", "agent.memory.delete")
GRANTS = [
    *(("admin", a) for a in EVERY),
    # dave reads and writes realm hr, but a deny takes the read of payroll:bot away
    *(("dave", a, HR_REALM) for a in (*SIGHT, *WRITES, "agent.session.manage")),
    # carol reads and writes realm hr, the host's session grant included
    *(("carol", a, HR_REALM) for a in (*SIGHT, *WRITES, "agent.session.manage")),
    # wonly may write and delete there, read nowhere
    *(("wonly", a, HR_REALM) for a in (*WRITES, "agent.session.manage")),
    # nosess reads and writes, without the session grant
    *(("nosess", a, HR_REALM) for a in (*SIGHT, *WRITES)),
]
DENIES = [("dave", "agent.memory.read", {"identity": BOT})]
PRINCIPALS = ("admin", "dave", "carol", "wonly", "nosess")


def tok(who: str) -> str:
    return f"tok-{who}-write-needs-read"


class Callers:
    def __init__(self, proc: GatewayProcess) -> None:
        self.clients = {who: RpcClient(proc, tok(who)) for who in PRINCIPALS}

    def rpc(self, who: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.clients[who].rpc(method, {"realm": HR, **params})

    def ok(self, who: str, method: str, params: dict[str, Any]) -> Any:
        return result_of(self.rpc(who, method, params))

    def err(self, who: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return error_of(self.rpc(who, method, params))

    def records(self, identity: str) -> list[dict[str, Any]]:
        return list(self.ok("admin", "meta/agent_memory/list", {"identity": identity, "limit": 100})["records"])


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callers]:
    root: Path = tmp_path_factory.mktemp("write_needs_read")
    toml = access_toml({tok(w): w for w in PRINCIPALS}, GRANTS, denies=DENIES)
    # listed, so an identity-scoped deny of dave's hides payroll:bot alone (docs/access.md, "The roster")
    toml += "".join(f'\n[[access.roster]]\nidentity = "{i}"\nrealm = "{HR}"\n' for i in (BOT, OPS))
    proc = start_gateway(root / "state", config=write_config(root / "meta.toml", toml))
    callers = Callers(proc)
    try:
        yield callers
    finally:
        for c in callers.clients.values():
            c.close()
        proc.stop()


def _seed(gw: Callers, identity: str, body: str) -> dict[str, Any]:
    return dict(gw.ok("admin", "meta/agent_memory/remember",
                      {"identity": identity, "title": "cfo pay", "body": body, "tags": ["payroll"]}))


def _denied(err: dict[str, Any], who: str) -> None:
    """A refusal on grants: -32030 naming the read action, the resource the identity (or ``*`` at the entry
    gate for a caller holding the read nowhere), nothing of the identity's content."""
    resource = "*" if who == "wonly" else f"identity:{HR}/{BOT}"
    assert err == {"code": -32030, "message": "access denied: agent.memory.read",
                   "data": {"kind": "access_denied", "action": "agent.memory.read", "resource": resource}}, err


@pytest.mark.parametrize("who", ["dave", "wonly"])
def test_a_caller_that_may_not_read_an_identity_learns_nothing_by_writing_to_it(gw: Callers, who: str) -> None:
    seeded = _seed(gw, BOT, f"{SECRET_BODY} ({who})")
    rid, missing = seeded["memory_id"], "mem-1-1-1-00000000deadbeef"
    before = gw.records(BOT)

    # update of a real id and of an unknown one: the same refusal, never the prior body
    for memory_id in (rid, missing):
        _denied(gw.err(who, "meta/agent_memory/update", {"identity": BOT, "memory_id": memory_id, "tags": ["leak"]}),
                who)
    # a remember repeating the stored content is refused exactly like a fresh one
    dup = {"identity": BOT, "title": "cfo pay", "body": f"{SECRET_BODY} ({who})", "tags": ["x"]}
    fresh = {**dup, "body": "base salary of the CFO is 1"}
    assert gw.err(who, "meta/agent_memory/remember", dup) == gw.err(who, "meta/agent_memory/remember", fresh)
    _denied(gw.err(who, "meta/agent_memory/remember", dup), who)
    # a batch of guesses holding the right one is refused like a batch without it
    guesses = [{"title": "cfo pay", "body": f"base salary of the CFO is {n}"} for n in range(1, 64)]
    right = gw.err(who, "meta/agent_memory/remember_batch",
                   {"identity": BOT, "records": [*guesses, {"title": "cfo pay", "body": dup["body"]}]})
    wrong = gw.err(who, "meta/agent_memory/remember_batch", {"identity": BOT, "records": guesses})
    assert right == wrong
    _denied(right, who)
    # forget of a real id and of an unknown one: the same refusal, and nothing is tombstoned
    for memory_id in (rid, missing):
        _denied(gw.err(who, "meta/agent_memory/forget", {"identity": BOT, "memory_id": memory_id}), who)

    # nothing was written, lost or duplicated
    assert gw.records(BOT) == before
    assert any(r["memory_id"] == rid and r["body"] == dup["body"] and r["tags"] == ["payroll"] for r in before)


def test_callers_that_may_read_keep_their_answers(gw: Callers) -> None:
    for who, identity in (("carol", BOT), ("dave", OPS)):
        seeded = _seed(gw, identity, f"{SECRET_BODY} [{who}]")
        again = gw.ok(who, "meta/agent_memory/remember", {"identity": identity, "title": "cfo pay",
                                                         "body": f"{SECRET_BODY} [{who}]", "tags": ["payroll"]})
        assert again["created"] is False and again["memory_id"] == seeded["memory_id"]
        assert again["body"] == seeded["body"] and again["tags"] == ["payroll"]
        batch = gw.ok(who, "meta/agent_memory/remember_batch", {"identity": identity, "records": [
            {"title": "cfo pay", "body": f"{SECRET_BODY} [{who}]"}, {"title": "cfo pay", "body": f"new [{who}]"}]})
        assert [r["created"] for r in batch["results"]] == [False, True] and batch["existing"] == 1
        updated = gw.ok(who, "meta/agent_memory/update",
                        {"identity": identity, "memory_id": seeded["memory_id"], "tags": ["reviewed"]})
        assert updated["supersedes"] == seeded["memory_id"] and updated["record"]["body"] == seeded["body"]
        assert updated["record"]["tags"] == ["reviewed"]
        gone = gw.ok(who, "meta/agent_memory/forget", {"identity": identity, "memory_id": updated["memory_id"]})
        assert gone == {"memory_id": updated["memory_id"], "deleted": True}
        assert gw.ok(who, "meta/agent_memory/forget", {"identity": identity, "memory_id": "mem-1-1-1-0"}) == {
            "memory_id": "mem-1-1-1-0", "deleted": False}


def _tool(gw: Callers, who: str, session: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return gw.rpc(who, "meta/agent_memory/tool", {"identity": BOT, "session_key": session, "arguments": arguments})


def test_the_memory_tool_tells_a_sessions_taint_only_to_who_may_read_it(gw: Callers) -> None:
    tainted, clean = "sess-tainted", "sess-clean"
    verdict = gw.ok("admin", "meta/turn/tool_result", {"identity": BOT, "session_key": tainted, "tool_name": "web_fetch"})
    assert verdict["session_tainted"] is True
    gw.ok("admin", "meta/session/note", {"identity": BOT, "session_key": clean})
    remember = {"action": "remember", "title": "note", "body": "the payroll run moved to Friday"}

    # a caller holding the write alone (wonly), or the write without the read (dave): refused on grants,
    # the same for a tainted and a clean session
    for who in ("wonly", "dave"):
        answers = [error_of(_tool(gw, who, s, remember)) for s in (tainted, clean)]
        assert answers[0] == answers[1]
        _denied(answers[0], who)
    # read and write without the session grant: every action passing the write gate is refused
    for arguments in (remember, {"action": "forget", "memory_id": "mem-1-1-1-0"},
                      {"action": "update", "memory_id": "mem-1-1-1-0", "body": "x"}):
        answers = [error_of(_tool(gw, "nosess", s, arguments)) for s in (tainted, clean)]
        assert answers[0] == answers[1] == {
            "code": -32030, "message": "access denied: agent.session.manage",
            "data": {"kind": "access_denied", "action": "agent.session.manage", "resource": f"identity:{HR}/{BOT}"}}
    # a tool recall tells no taint: read + view suffice, as before
    assert result_of(_tool(gw, "nosess", tainted, {"action": "recall", "query_text": "payroll"}))["is_error"] is False
    # the host holding every grant still hears why its write waits in quarantine
    text = result_of(_tool(gw, "carol", tainted, remember))["text"]
    assert "QUARANTINED" in text and "web_fetch" in text
    assert "QUARANTINED" not in result_of(_tool(gw, "carol", clean, {**remember, "body": "another"}))["text"]
    assert "web_fetch" not in json.dumps([error_of(_tool(gw, w, tainted, remember)) for w in ("wonly", "nosess")])


# ------------------------------------------------------------------ property: under random grant sets

WRITE, DELETE, MANAGE = "agent.memory.write", "agent.memory.delete", "agent.session.manage"
ACTS = ("agent.memory.read", "agent.view", WRITE, DELETE, MANAGE)
MISSING = "mem-1-1-1-0000000000000000"
#: Often what opens a scope (read + view) with a write, sometimes one action alone.
_SETS = st.sampled_from(((*SIGHT, WRITE, DELETE, MANAGE), (*SIGHT, WRITE), (*SIGHT,), (WRITE, DELETE, MANAGE),
                         *((a,) for a in ACTS)))
_RULES = st.lists(st.tuples(_SETS, prop.ons), min_size=1, max_size=4).map(
    lambda pairs: [(action, on) for actions, on in pairs for action in actions])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grants=_RULES,
       denies=st.lists(st.tuples(st.sampled_from(ACTS), prop.ons), max_size=2),
       ident=st.sampled_from(prop.IDENTITIES), realm=st.sampled_from(prop.REALMS))
# b:two is not on the default realm's roster: a label deny of the write withholds it (fail closed)
@example(grants=[(a, None) for a in ACTS], denies=[(WRITE, {"label": "conf"})], ident="b:two", realm="default")
def test_a_writes_answer_never_depends_on_what_its_caller_may_not_read(grants: list, denies: list, ident: str,
                                                                       realm: str) -> None:
    """For random grants and denies of the read, write, delete and session actions: a write a caller may not
    read through answers a stored content, a real record id or a tainted session exactly as it answers a
    guess, an unknown id or a clean session, and changes nothing; a caller holding every action it needs
    still gets the duplicate verdict."""
    with tempfile.TemporaryDirectory() as tmp:
        runtime = Runtime(prop._config(grants, denies), Path(tmp) / "state", start_background=False)
        try:
            gw = Gateway.for_runtime(runtime)
            admin, caller = prop.Caller(gw, prop.ADMIN), prop.Caller(gw, prop.CALLER)
            base = {"identity": ident, "realm": realm}
            held = admin.ok("meta/agent_memory/remember", {**base, "title": "pay", "body": "held", "tags": ["a"]})
            admin.ok("meta/turn/tool_result", {**base, "session_key": "tainted", "tool_name": "web_fetch"})
            listing = {**base, "limit": 50}
            before = admin.ok("meta/agent_memory/list", listing)["records"]
            may = {a: prop.model_allows(grants, denies, a, ident, realm) for a in ACTS}
            sees = may["agent.memory.read"] and may["agent.view"]
            event(f"sees={sees} write={may[WRITE]} delete={may[DELETE]} manage={may[MANAGE]}")
            remember = {**base, "title": "pay", "body": "held", "tags": ["b"]}
            tool = {**base, "arguments": {"action": "remember", "title": "t", "body": "from the model"}}
            pairs = [  # (method, params touching what the identity holds, the same for a guess, needs)
                ("meta/agent_memory/remember_batch", {**base, "records": [{"title": "pay", "body": "held"}]},
                 {**base, "records": [{"title": "pay", "body": "guess"}]}, (WRITE,)),
                ("meta/agent_memory/update", {**base, "memory_id": held["memory_id"], "tags": ["c"]},
                 {**base, "memory_id": MISSING, "tags": ["c"]}, (WRITE,)),
                ("meta/agent_memory/forget", {**base, "memory_id": held["memory_id"]},
                 {**base, "memory_id": MISSING}, (DELETE,)),
                ("meta/agent_memory/tool", {**tool, "session_key": "tainted"}, {**tool, "session_key": "clean"},
                 (WRITE, MANAGE)),
                ("meta/agent_memory/remember", remember, {**remember, "body": "guess"}, (WRITE,)),
            ]
            for method, real, guess, needs in pairs:
                allowed = sees and all(may[a] for a in needs)
                answers = [caller.rpc(method, real), caller.rpc(method, guess)]
                if not allowed:
                    assert answers[0] == answers[1] and answers[0]["error"]["code"] == -32030, (method, answers)
                elif method == "meta/agent_memory/remember_batch":
                    assert answers[0]["result"]["existing"] == 1 and answers[1]["result"]["created"] == 1
            if not (sees and may[WRITE]) and not (sees and may[DELETE]):
                assert admin.ok("meta/agent_memory/list", listing)["records"] == before
        finally:
            runtime.close()

"""A steward's contradictions: parsed and applied only within what the dream offered (property tests of
``parse_steward_reply``, and the dream's own re-check for stewards that hand back decisions directly)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory.model import MemoryRecord, Scope
from meta_memory.ledger import AssertionLedger, QueryRequest
from meta_memory.review.dream import run_dream
from meta_memory.review.steward import (
    MAX_CONFLICT_TOPIC_BYTES,
    MAX_CONTRADICTIONS,
    Contradiction,
    DreamInputs,
    QuarantineItem,
    StewardDecision,
    parse_steward_reply,
    scope_entity,
)

from .conftest import IDENTITY, REALM, Env

OFFERED = ("mem-a", "mem-b")


class _Rec:
    """Just enough of a record for :func:`offered_records`."""

    kind = None

    def __init__(self, rid: str, scope: Scope) -> None:
        self.id = rid
        self.scope = scope


def _inputs() -> DreamInputs:
    recs: list[Any] = [_Rec("mem-a", Scope.identity(REALM, "Alice:Main")), _Rec("mem-b", Scope.mob(REALM, "team"))]
    items = tuple(QuarantineItem(r) for r in recs)  # type: ignore[arg-type]
    return DreamInputs(realm=REALM, run_id="d1", now_ms=0, open_loop_age_days=14, quarantine=items)


def test_scope_entity_names_the_scope_in_the_ledgers_canonical_form() -> None:
    assert scope_entity(Scope.identity(REALM, "Alice:Main")) == "identity:alice:main"
    assert scope_entity(Scope.mob(REALM, "Team")) == "mob:team"
    assert scope_entity(Scope.operator(REALM, "ops")) == "operator:ops"
    assert scope_entity(Scope.realm_scope("Prod")) == "realm:prod"


_ids = st.lists(st.sampled_from([*OFFERED, "mem-x", "", "mem-a "]) | st.text(max_size=8), max_size=4)
_entry = st.fixed_dictionaries(
    {"record_ids": _ids, "operational": st.booleans()},
    optional={"entity": st.sampled_from(["identity:alice:main", "IDENTITY:ALICE:MAIN", "mob:team", "identity:ops",
                                         "", "x" * 300]),
              "topic": st.sampled_from(["deploy", "t" * MAX_CONFLICT_TOPIC_BYTES, "t" * (MAX_CONFLICT_TOPIC_BYTES + 1),
                                        "a\nb", ""]),
              "reason": st.text(max_size=20)},
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_entry, max_size=3 * MAX_CONTRADICTIONS))
def test_parsed_contradictions_stay_within_what_was_offered(entries: list[dict[str, Any]]) -> None:
    inputs = _inputs()
    scopes = {"mem-a": "identity:alice:main", "mem-b": "mob:team"}
    out = parse_steward_reply(json.dumps({"contradictions": entries}), inputs)
    assert len(out.contradictions) <= MAX_CONTRADICTIONS
    assert len(out.contradictions) + len(out.refused) == min(len(entries), MAX_CONTRADICTIONS) + (
        len(entries) > MAX_CONTRADICTIONS)
    for c in out.contradictions:
        assert c.record_ids and set(c.record_ids) <= set(OFFERED) and len(set(c.record_ids)) == len(c.record_ids)
        if c.operational:
            assert c.entity is not None and c.topic is not None
            assert c.entity.lower() in {scopes[r] for r in c.record_ids}
            assert len(c.topic.encode()) <= MAX_CONFLICT_TOPIC_BYTES and "\n" not in c.topic
        else:
            for text in (c.entity, c.topic):
                assert text is None or len(text.encode()) <= MAX_CONFLICT_TOPIC_BYTES


def test_unoffered_ids_are_dropped_and_counted_and_the_entity_defaults_to_the_scope() -> None:
    reply = {"contradictions": [
        {"record_ids": ["mem-a", "mem-zz", "mem-yy", "mem-a"], "operational": True, "topic": "deploy"},
        {"record_ids": ["mem-zz"], "operational": True, "entity": "identity:alice:main", "topic": "deploy"},
        {"record_ids": ["mem-a", "mem-b"], "operational": True, "topic": "deploy"},
        {"record_ids": ["mem-a"], "operational": True, "entity": "identity:ops", "topic": "deployment"},
    ]}
    out = parse_steward_reply(json.dumps(reply), _inputs())
    assert out.contradictions == [Contradiction(("mem-a",), True, "identity:alice:main", "deploy", None, 2)]
    assert out.refused == [
        "contradictions[1]: cites no record offered to this dream (1 dropped)",
        "contradictions[2]: an operational contradiction needs entity and topic",
        "contradictions[3]: entity must be the ledger_entity of a cited record's scope",
    ]


def test_the_cap_drops_the_rest_with_one_note() -> None:
    reply = {"contradictions": [{"record_ids": ["mem-b"], "operational": False}] * 1000}
    out = parse_steward_reply(json.dumps(reply), _inputs())
    assert len(out.contradictions) == MAX_CONTRADICTIONS
    assert out.refused == [f"contradictions: {1000 - MAX_CONTRADICTIONS} entries beyond the cap of "
                           f"{MAX_CONTRADICTIONS} per dream were dropped"]


# --------------------------------------------------------------------------- the dream's own check


class _Direct:
    """A custom steward handing back contradictions without any parsing."""

    kind = "custom"

    def __init__(self, make: Any) -> None:
        self.make = make

    def consolidate(self, inputs: DreamInputs) -> StewardDecision:
        return StewardDecision(contradictions=self.make(inputs))


def _ledger(env: Env) -> AssertionLedger:
    ledger = AssertionLedger(None, None, env.clock)
    ledger.load()
    return ledger


def test_the_dream_rechecks_a_custom_stewards_contradictions(env: Env) -> None:
    rec: MemoryRecord = env.poisoned("Standup", "Standup is at 9:30.")
    ledger = _ledger(env)
    mine = scope_entity(env.scope())

    def make(inputs: DreamInputs) -> list[Contradiction]:
        good = [Contradiction((rec.id,), True, mine, f"t{i}", "r") for i in range(MAX_CONTRADICTIONS + 5)]
        return [Contradiction(("mem-unknown",), True, mine, "x"), Contradiction((rec.id,), True, "identity:ops", "x"),
                Contradiction((rec.id,), True, mine, "t" * (MAX_CONFLICT_TOPIC_BYTES + 1)), *good]

    report = run_dream(env.store, REALM, _Direct(make), clock=env.clock, events=env.events, ledger=ledger)
    refused = report.detail["refused"]
    assert refused[0] == f"contradictions: 8 beyond the cap of {MAX_CONTRADICTIONS} per dream were dropped"
    assert refused[1:] == ["contradiction 0: cites 1 record(s) not offered to this dream",
                           "contradiction 1: entity must be the ledger_entity of a cited record's scope",
                           f"contradiction 2: topic must be at most {MAX_CONFLICT_TOPIC_BYTES} bytes"]
    signalled = ledger.query(QueryRequest()).conflicts
    assert [c.entity for c in signalled] == [mine] * (MAX_CONTRADICTIONS - 3)
    assert f"identity:{IDENTITY}" == mine


def test_without_may_signal_nothing_reaches_the_ledger(env: Env) -> None:
    rec = env.poisoned("Standup", "Standup is at 9:30.")
    ledger = _ledger(env)
    steward = _Direct(lambda inputs: [Contradiction((rec.id,), True, scope_entity(rec.scope), "time", "r"),
                                      Contradiction((rec.id,), False, None, None, "noted only")])
    report = run_dream(env.store, REALM, steward, clock=env.clock, events=env.events, ledger=ledger, may_signal=False)
    assert [(c["operational"], c["signalled"], c.get("refused")) for c in report.detail["conflicts"]] == [
        (True, False, "ledger.write"), (False, False, None)]
    assert ledger.query(QueryRequest()).conflicts == []
    assert env.events_of("memory.conflict.signal") == []


def test_a_custom_stewards_texts_are_clipped_in_the_detail_and_the_ledger(env: Env) -> None:
    rec = env.poisoned("Standup", "Standup is at 9:30.")
    ledger = _ledger(env)
    steward = _Direct(lambda inputs: [Contradiction((rec.id,), False, "e" * 70_000, "t" * 70_000, "r" * 70_000),
                                      Contradiction((rec.id,), True, scope_entity(rec.scope), "time", "r" * 70_000)])
    report = run_dream(env.store, REALM, steward, clock=env.clock, events=env.events, ledger=ledger)
    noted, signalled = report.detail["conflicts"]
    assert len(noted["entity"]) == len(noted["topic"]) == MAX_CONFLICT_TOPIC_BYTES and len(noted["reason"]) == 400
    assert signalled["signalled"] is True
    assert [len(c.reason or "") for c in ledger.query(QueryRequest()).conflicts] == [400]

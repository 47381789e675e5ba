from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory.batch import (
    BatchKind,
    CreateOp,
    RestoreOp,
    RetierOp,
    SetRankOp,
    StagedBatch,
    SupersedeOp,
    TombstoneOp,
)
from meta_memory.agent_memory.erase import ErasedText, Erasure
from meta_memory.agent_memory.hashing import content_hash
from meta_memory.agent_memory.model import (
    Author,
    MemoryRecord,
    NewMemoryRecord,
    Provenance,
    Scope,
    Status,
    StatusKind,
    TrustTier,
    VerificationClaim,
)
from meta_memory.agent_memory.validator import plan_batch
from meta_memory.errors import AgentMemoryError

NOW = 1_700_000_000_000
DAY = 86_400_000
REALM = "default"
ME = Scope.identity(REALM, "lead:main")


class DictReader:
    """An in-memory live store for the validator."""

    def __init__(self, *records: MemoryRecord) -> None:
        self.records = {r.id: r for r in records}
        self.erasures: list[Erasure] = []
        self.texts: list[ErasedText] = []

    def get_record(self, memory_id: str) -> MemoryRecord | None:
        return self.records.get(memory_id)

    def tombstoned_since(self, scope: Scope, chash: str, since_ms: int) -> bool:
        return any(
            r.scope == scope
            and r.content_hash == chash
            and r.status.kind is StatusKind.TOMBSTONED
            and (r.tombstoned_at_ms or 0) >= since_ms
            for r in self.records.values()
        )

    def erased(self, ids, content_hashes) -> list[Erasure]:
        return [e for e in self.erasures if e.memory_id in ids or e.content_hash in content_hashes]

    def erasures_held(self) -> bool:
        return bool(self.erasures)

    def erased_texts(self, hashes) -> list[ErasedText]:
        return [t for t in self.texts if t.hash in hashes]


def new(title: str = "Title", body: str = "Body", author: Author | None = None, **kw) -> NewMemoryRecord:
    return NewMemoryRecord(title=title, body=body, provenance=Provenance(author or Author.application()), **kw)


def stored(memory_id: str, scope: Scope = ME, **kw) -> MemoryRecord:
    base = dict(
        id=memory_id,
        scope=scope,
        kind="fact",
        title=f"T {memory_id}",
        body=f"B {memory_id}",
        provenance=Provenance(Author.application()),
        trust=TrustTier.AGENT_OBSERVED,
        status=Status.active(),
        created_at_ms=NOW - DAY,
        updated_at_ms=NOW - DAY,
    )
    base.update(kw)
    from meta_memory.agent_memory.model import Kind

    base["kind"] = Kind(base["kind"])
    return MemoryRecord(**base)


def batch(*ops, author: Author | None = None, kind: BatchKind = BatchKind.FRESH_WRITE) -> StagedBatch:
    return StagedBatch(realm=REALM, author=author or Author.application(), ops=tuple(ops), kind=kind)


def refuse(b: StagedBatch, reader: DictReader | None = None, **kw) -> AgentMemoryError:
    with pytest.raises(AgentMemoryError) as info:
        plan_batch(b, reader or DictReader(), now_ms=NOW, **kw)
    return info.value


def test_batch_size_caps() -> None:
    err = refuse(batch())
    assert err.detail == "staged batch must contain at least one op" and err.op_index is None
    ops = [CreateOp(scope=ME, record=new(body=f"b{i}")) for i in range(1025)]
    err = refuse(batch(*ops))
    assert err.detail == "staged batch has 1025 ops; the cap is 1024"
    assert len(plan_batch(batch(*ops[:1024]), DictReader(), now_ms=NOW).results) == 1024


def test_field_caps_name_the_op() -> None:
    err = refuse(batch(CreateOp(scope=ME, record=new()), CreateOp(scope=ME, record=new(title=" "))))
    assert err.reason == "invalid_record" and err.op_index == 1
    assert err.message == "invalid agent memory record: op 1: invalid record: title must not be empty"
    err = refuse(batch(CreateOp(scope=ME, record=new(tags=tuple(f"t{i}" for i in range(33))))))
    assert err.detail == "op 0: invalid record: tags must contain at most 32 entries"


def test_secret_refusal_names_class_never_text() -> None:
    err = refuse(batch(CreateOp(scope=ME, record=new(body="key AKIAIOSFODNN7EXAMPLE"))))
    assert err.reason == "secret_detected" and err.secret_class == "aws-access-key-id" and err.op_index == 0
    assert "AKIAIOSFODNN7EXAMPLE" not in err.message
    assert err.detail.startswith("op 0: write refused: content matches the 'aws-access-key-id' secret pattern class")
    assert err.to_jsonrpc()["data"] == {
        "kind": "agent_memory",
        "reason": "secret_detected",
        "op_index": 0,
        "secret_class": "aws-access-key-id",
        "field": "body",
    }
    assert "(in body)" in err.detail
    err = refuse(batch(CreateOp(scope=ME, record=new(tags=("api_key=zXy1aB2cD3eF4gH5iJ6k",)))))
    assert err.secret_class == "credential-assignment"


def test_the_erasure_register_refuses_erased_ids_and_content_in_its_scope() -> None:
    reader = DictReader()
    reader.erasures = [Erasure("mem-gone", "identity", "lead:main", content_hash("Title", "Body"))]
    err = refuse(batch(CreateOp(scope=ME, record=new()), CreateOp(scope=ME, record=new(title="  Title "))), reader)
    assert err.reason == "erased" and err.op_index == 0 and "Body" not in err.message
    assert err.detail == "op 0: this content was erased from identity scope 'lead:main'; erased content is never " \
                         "written there again"
    err = refuse(batch(RestoreOp(record=stored("mem-gone", title="Else", body="Other"))), reader)
    assert err.reason == "erased" and err.detail.startswith("op 0: record 'mem-gone' was erased")
    mob = Scope.mob(REALM, "team")  # the proposing agent's own erased content stays out of its proposals
    err = refuse(batch(CreateOp(scope=mob, record=new(author=Author.agent("lead:main"))), author=Author.operator()),
                 reader)
    assert err.reason == "erased"
    assert plan_batch(batch(CreateOp(scope=Scope.identity(REALM, "lead:other"), record=new())), reader, now_ms=NOW)
    assert plan_batch(batch(CreateOp(scope=mob, record=new()), author=Author.operator()), reader, now_ms=NOW)


def test_scope_realm_must_match_batch() -> None:
    err = refuse(batch(CreateOp(scope=Scope.identity("other", "lead:main"), record=new())))
    assert err.reason == "scope_not_writable"
    assert err.detail == "op 0: scope realm 'other' does not match batch realm 'default'"


def test_agent_writes_only_its_own_identity_scope() -> None:
    agent = Author.agent("lead:main")
    plan_batch(batch(CreateOp(scope=ME, record=new()), author=agent), DictReader(), now_ms=NOW)
    for scope, kind in [
        (Scope.identity(REALM, "other:x"), "identity"),
        (Scope.mob(REALM, "m"), "mob"),
        (Scope.operator(REALM, "o"), "operator"),
        (Scope.realm_scope(REALM), "realm"),
    ]:
        err = refuse(batch(CreateOp(scope=scope, record=new()), author=agent))
        assert err.reason == "scope_not_writable" and err.op_index == 0
        assert err.detail == (
            f"op 0: scope not writable: agent 'lead:main' may only write its own identity scope, not {kind} "
            "scope (mob/operator writes go through proposals)"
        )
    # A steward may write any in-realm scope.
    plan_batch(batch(CreateOp(scope=Scope.mob(REALM, "m"), record=new()), author=Author.steward("r")), DictReader(), now_ms=NOW)


def test_cross_identity_update_is_rejected_by_the_prior_scope() -> None:
    other = stored("mem-o", scope=Scope.identity(REALM, "other:x"))
    err = refuse(batch(SupersedeOp(prior="mem-o", record=new()), author=Author.agent("lead:main")), DictReader(other))
    assert err.reason == "scope_not_writable"


def test_tier_rules() -> None:
    for tier in (TrustTier.APPLICATION, TrustTier.OPERATOR):
        err = refuse(batch(CreateOp(scope=ME, record=new(), trust=tier), author=Author.operator()))
        assert err.detail == f"op 0: trust tier '{tier.value}' is never assignable via a staged batch"
    err = refuse(batch(CreateOp(scope=ME, record=new(), trust=TrustTier.AGENT_VERIFIED), author=Author.agent("lead:main")))
    assert err.detail == "op 0: trust tier 'agent_verified' exceeds the author's ceiling 'agent_observed'"
    # Non-LLM authors may write agent_verified.
    plan_batch(batch(CreateOp(scope=ME, record=new(), trust=TrustTier.AGENT_VERIFIED)), DictReader(), now_ms=NOW)


def test_retier_to_verified_needs_steward_and_claim() -> None:
    plain = stored("mem-1")
    claimed = stored("mem-2", provenance=Provenance(Author.agent("lead:main"), verification=VerificationClaim("checked")))
    reader = DictReader(plain, claimed)
    msg = "op 0: retier to agent_verified requires a steward author and a verification claim on the record"
    assert refuse(batch(RetierOp("mem-1", TrustTier.AGENT_VERIFIED), author=Author.steward("r")), reader).detail == msg
    assert refuse(batch(RetierOp("mem-2", TrustTier.AGENT_VERIFIED), author=Author.distiller("r")), reader).detail == msg
    plan = plan_batch(batch(RetierOp("mem-2", TrustTier.AGENT_VERIFIED), author=Author.steward("r")), reader, now_ms=NOW)
    assert plan.records["mem-2"].trust is TrustTier.AGENT_VERIFIED


def test_transitive_taint_ceiling() -> None:
    root = stored("mem-root", status=Status.tombstoned(), ever_quarantined=True, tombstoned_at_ms=NOW - DAY)
    mid = stored("mem-mid", derived_from=("mem-root",))
    tip = stored("mem-tip", supersedes="mem-mid")
    reader = DictReader(root, mid, tip)
    msg = (
        "op 0: trust tier 'agent_verified' rejected: provenance chain reaches untrusted/quarantined content "
        "(capped at agent_observed)"
    )
    assert refuse(batch(RetierOp("mem-tip", TrustTier.AGENT_VERIFIED)), reader).detail == msg
    assert refuse(batch(SupersedeOp(prior="mem-tip", record=new(), trust=TrustTier.AGENT_VERIFIED)), reader).detail == msg
    assert (
        refuse(batch(CreateOp(scope=ME, record=new(), derived_from=("mem-mid",), trust=TrustTier.AGENT_VERIFIED)), reader).detail
        == msg
    )
    # At agent_observed the chain is fine.
    plan_batch(batch(SupersedeOp(prior="mem-tip", record=new())), reader, now_ms=NOW)
    untrusted = stored("mem-u", trust=TrustTier.UNTRUSTED)
    assert refuse(batch(RetierOp("mem-u", TrustTier.AGENT_VERIFIED)), DictReader(untrusted)).detail == msg


def test_existence_and_status_rules() -> None:
    live = stored("mem-1")
    sup = stored("mem-2", status=Status.superseded("mem-1"))
    dead = stored("mem-3", status=Status.tombstoned(), tombstoned_at_ms=NOW - 30 * DAY)
    reader = DictReader(live, sup, dead)
    cases = [
        (CreateOp(id="mem-1", scope=ME, record=new()), "op 0: record 'mem-1' already exists"),
        (CreateOp(scope=ME, record=new(), derived_from=("nope",)), "op 0: record 'nope' does not exist"),
        (SupersedeOp(prior="nope", record=new()), "op 0: record 'nope' does not exist"),
        (SupersedeOp(prior="mem-2", record=new()),
         "op 0: record 'mem-2' is not active (superseded by 'mem-1'; update that record instead)"),
        (SupersedeOp(prior="mem-3", record=new()), "op 0: record 'mem-3' is not active (forgotten)"),
        (TombstoneOp("nope"), "op 0: record 'nope' does not exist"),
        (TombstoneOp("mem-3"), "op 0: record 'mem-3' is already tombstoned"),
        (RetierOp("mem-3", TrustTier.UNTRUSTED), "op 0: record 'mem-3' is already tombstoned"),
        (SetRankOp("mem-3", 1), "op 0: record 'mem-3' is already tombstoned"),
    ]
    for op, message in cases:
        err = refuse(batch(op), reader)
        assert (err.reason, err.detail, err.op_index) == ("invalid_record", message, 0)


def test_overlay_sees_earlier_ops_of_the_same_batch() -> None:
    reader = DictReader(stored("mem-1"))
    err = refuse(batch(TombstoneOp("mem-1"), TombstoneOp("mem-1")), reader)
    assert err.detail == "op 1: record 'mem-1' is already tombstoned"
    err = refuse(batch(SupersedeOp(prior="mem-1", record=new()), SupersedeOp(prior="mem-1", record=new(body="x"))), reader)
    assert err.detail.startswith("op 1: record 'mem-1' is not active (superseded by ")
    plan = plan_batch(
        batch(CreateOp(id="mem-new", scope=ME, record=new()), SupersedeOp(prior="mem-new", record=new(body="v2"))),
        reader,
        now_ms=NOW,
    )
    assert plan.records["mem-new"].status == Status.superseded(plan.results[1].memory_id)
    assert plan.before["mem-new"] is None
    err = refuse(batch(CreateOp(id="dup", scope=ME, record=new()), CreateOp(id="dup", scope=ME, record=new(body="2"))))
    assert err.detail == "op 1: record 'dup' already exists"


def test_supersede_cycle_with_explicit_id() -> None:
    # mem-1's lineage names 'mem-0', which does not exist (e.g. a dangling release edge).
    reader = DictReader(stored("mem-1", supersedes="mem-0"))
    err = refuse(batch(SupersedeOp(id="mem-0", prior="mem-1", record=new())), reader)
    assert err.detail == "op 0: supersede chain through 'mem-0' would form a cycle"


def test_tombstone_recreation_window_targets_llm_authors() -> None:
    body = "the recreated body"
    dead = stored(
        "mem-d", title="T", body=body, status=Status.tombstoned(), tombstoned_at_ms=NOW - 6 * DAY
    )
    reader = DictReader(dead)
    agent = Author.agent("lead:main")
    err = refuse(batch(CreateOp(scope=ME, record=new(title="T", body=body)), author=agent), reader)
    assert err.detail == (
        f"op 0: content (hash {content_hash('T', body)}) was tombstoned within the recreation window and cannot be re-created"
    )
    # Non-LLM authors pass; outside the window LLM authors pass too.
    plan_batch(batch(CreateOp(scope=ME, record=new(title="T", body=body))), reader, now_ms=NOW)
    plan_batch(batch(CreateOp(scope=ME, record=new(title="T", body=body)), author=agent), reader, now_ms=NOW + 2 * DAY)
    # Tombstoned earlier in the same batch.
    live = stored("mem-l", title="T2", body="B2")
    err = refuse(
        batch(TombstoneOp("mem-l"), CreateOp(scope=ME, record=new(title="T2", body="B2")), author=agent),
        DictReader(live),
    )
    assert err.op_index == 1 and "recreation window" in err.detail


def test_quarantine_reason_applies_to_every_create_and_supersede() -> None:
    reader = DictReader(stored("mem-1", working_set_rank=4), stored("mem-2"))
    plan = plan_batch(
        batch(
            CreateOp(scope=ME, record=new()),
            SupersedeOp(prior="mem-1", record=new(body="v2")),
            TombstoneOp("mem-2"),
            author=Author.agent("lead:main"),
        ),
        reader,
        now_ms=NOW,
        quarantine_reason="llm_writes=quarantined policy",
    )
    created, successor = plan.results[0].memory_id, plan.results[1].memory_id
    assert plan.records[created].status == Status.quarantined("llm_writes=quarantined policy")
    assert plan.records[created].ever_quarantined
    assert plan.records[successor].status.kind is StatusKind.QUARANTINED
    assert plan.records[successor].supersedes == "mem-1"
    assert plan.records[successor].working_set_rank == 4
    assert "mem-1" not in plan.records  # the prior stays active, untouched
    assert [a.detail["quarantined"] for a in plan.audit] == ["llm_writes=quarantined policy"] * 2 + [None]
    assert plan.audit[0].detail["author"] == {"author": "agent", "identity": "lead:main"}


def test_ever_quarantined_is_inherited_from_direct_ancestors() -> None:
    reader = DictReader(stored("mem-q", status=Status.quarantined("r")), stored("mem-e", ever_quarantined=True))
    plan = plan_batch(
        batch(
            CreateOp(scope=ME, record=new(), derived_from=("mem-q",)),
            SupersedeOp(prior="mem-e", record=new(body="2")),
        ),
        reader,
        now_ms=NOW,
    )
    assert all(plan.records[r.memory_id].ever_quarantined for r in plan.results)


def test_normalisation_is_applied_before_hashing() -> None:
    plan = plan_batch(
        batch(CreateOp(scope=ME, record=new(title="  A   title ", body="\n body \n", tags=("X", "x", " y ")))),
        DictReader(),
        now_ms=NOW,
    )
    rec = plan.records[plan.results[0].memory_id]
    assert (rec.title, rec.body, rec.tags) == ("A title", "body", ("x", "y"))
    assert rec.content_hash == content_hash("A title", "body")


# ------------------------------------------------------------------ properties

_text = st.text(max_size=300) | st.text(alphabet="ab \n", min_size=0, max_size=70_000).map(lambda s: s[:70_000])
_tags = st.lists(st.text(max_size=90), max_size=40)


@st.composite
def _ops(draw):
    n = draw(st.integers(min_value=1, max_value=5))
    ops = []
    for _ in range(n):
        choice = draw(st.sampled_from(["create", "supersede", "tombstone", "retier", "set_rank"]))
        target = draw(st.sampled_from(["mem-1", "mem-2", "mem-x"]))
        record = new(title=draw(_text), body=draw(_text), tags=tuple(draw(_tags)), description=draw(st.text(max_size=500)))
        trust = draw(st.sampled_from(list(TrustTier)))
        if choice == "create":
            ops.append(CreateOp(scope=draw(st.sampled_from([ME, Scope.mob(REALM, "m"), Scope.identity("x", "y")])), record=record, trust=trust))
        elif choice == "supersede":
            ops.append(SupersedeOp(prior=target, record=record, trust=trust))
        elif choice == "tombstone":
            ops.append(TombstoneOp(target))
        elif choice == "retier":
            ops.append(RetierOp(target, trust))
        else:
            ops.append(SetRankOp(target, draw(st.none() | st.integers(0, 64))))
    return ops


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_ops(), st.sampled_from([Author.application(), Author.agent("lead:main"), Author.steward("r")]), st.none() | st.just("tainted"))
def test_validator_never_crashes_and_refusals_name_an_op(ops, author, reason) -> None:
    reader = DictReader(stored("mem-1"), stored("mem-2", status=Status.tombstoned(), tombstoned_at_ms=NOW))
    try:
        plan = plan_batch(batch(*ops, author=author), reader, now_ms=NOW, quarantine_reason=reason)
    except AgentMemoryError as err:
        assert err.reason in ("invalid_record", "secret_detected", "scope_not_writable")
        assert err.op_index is not None and 0 <= err.op_index < len(ops)
        assert err.detail.startswith(f"op {err.op_index}: ")
        return
    assert len(plan.audit) == len(plan.results) == len(ops)
    for rec in plan.records.values():
        assert rec.title.strip() and rec.body.strip()
        assert len(rec.title.encode("utf-8", "surrogatepass")) <= 200
        if author.is_llm:
            assert rec.trust <= TrustTier.AGENT_OBSERVED or rec.trust is TrustTier.AGENT_VERIFIED and author.kind.value == "steward"
        assert rec.trust not in (TrustTier.APPLICATION, TrustTier.OPERATOR)


def test_ids_of_a_many_op_batch_are_distinct_and_carry_no_content() -> None:
    ops = [CreateOp(scope=ME, record=new(title=f"  Note \t {i} ", body=f" body {i}\n")) for i in range(5)]
    ops.append(SupersedeOp(prior="mem-old", record=new(title="New  version", body="v2 ")))
    plan = plan_batch(StagedBatch(realm=REALM, author=Author.application(), ops=tuple(ops)),
                      DictReader(stored("mem-old")), now_ms=NOW)
    minted = [r.memory_id for r in plan.results]
    assert len(set(minted)) == 6
    assert len({memory_id.rsplit("-", 1)[1] for memory_id in minted}) == 6
    assert all(re.fullmatch(r"mem-\d+-[0-9a-f]+-[0-9a-f]{16}", memory_id) for memory_id in minted)
    assert plan.records[minted[0]].title == "Note 0" and plan.records[minted[5]].supersedes == "mem-old"

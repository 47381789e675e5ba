"""Record writes on a store, each one transaction: check what needs none, open it, plan, apply.

The callers of a single write (the application service, the agent tool's store operations, the
markdown and foreign imports, the benchmarks) share this sequence: every function here takes the
:class:`~meta_memory.agent_memory.store.base.AgentMemoryStore`, refuses what needs no transaction
(a realm name, a field rule, a blank id, a secret in a proposal) before opening one, so a refused call
never creates a realm, then opens one write transaction
(:meth:`~meta_memory.agent_memory.store.base.AgentMemoryStore.transaction`), plans with
:mod:`meta_memory.agent_memory.writes` (the one planner) and applies through the
:class:`~meta_memory.agent_memory.store.tx.WriteTx`. A single call is a batch of one; callers that need
several writes in one transaction (review, the imports) open it themselves and call
:mod:`~meta_memory.agent_memory.writes` directly.

A ``gate`` of ``None`` is the store's default write gate (``store.gate``); see
:class:`~meta_memory.agent_memory.store.base.WriteGate`. Refusals raise
:class:`~meta_memory.errors.AgentMemoryError` as the planner and validator state them; backend
failures ``AgentMemoryError("io")``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from meta_memory.agent_memory import writes
from meta_memory.agent_memory.batch import BatchReceipt, StagedBatch
from meta_memory.agent_memory.model import AgentMemoryRecord, Author, EvidenceRef, MemoryRecord, NewMemoryRecord, Scope
from meta_memory.agent_memory.writes import KEEP_EXPIRY, KeepExpiry, RememberItem, RememberOutcome, TagMerge
from meta_memory.errors import AgentMemoryError

if TYPE_CHECKING:
    from meta_memory.agent_memory.store.base import AgentMemoryStore, WriteGate

__all__ = [
    "apply_batch",
    "commit_staged",
    "discard_staged",
    "forget",
    "propose",
    "remember",
    "remember_authored",
    "remember_many",
    "remember_merging",
    "remember_record",
    "stage",
    "supersede",
    "update",
]


def _gate(store: AgentMemoryStore, gate: WriteGate | None) -> WriteGate | None:
    return gate if gate is not None else store.gate


# --------------------------------------------------------------------------- application remember


def remember(store: AgentMemoryStore, realm: str, identity: str, title: str, body: str,
             tags: Iterable[str] = ()) -> tuple[AgentMemoryRecord, bool]:
    """Application write into ``identity``'s scope: ``(record, created)``; see :func:`remember_merging`."""
    rec, created, _merge = remember_merging(store, realm, identity, title, body, tags)
    return rec, created


def remember_merging(
    store: AgentMemoryStore, realm: str, identity: str, title: str, body: str, tags: Iterable[str] = (), *,
    evidence: Sequence[EvidenceRef] = (), gate: WriteGate | None = None, expires_at_ms: int | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> tuple[AgentMemoryRecord, bool, TagMerge | None]:
    """Application write into ``identity``'s scope: ``(record, created, tag merge)`` (author
    ``application``, kind ``fact``, tier ``agent_observed``).

    Exact-content dedup: when an active record of that scope has the same content hash, nothing new is
    created (``created=False``). If the call brings tags that record lacks, the tags are merged in the
    same transaction: the record is superseded by a version carrying the union of both tag lists
    (normalised like every tag list: lowercased, sorted), that version is returned and the third item
    names the superseded id and the added tags; otherwise the record itself is returned, nothing is
    written and the third item is ``None``. Refusals: ``invalid_record`` naming the field rule
    (including a merged tag list over the 32-tag cap), ``secret_detected``.

    ``evidence`` (the sessions a host summary was derived from) is kept in the record's provenance;
    ``gate`` overrides the store's gate for this write (a
    :class:`~meta_memory.firewall.gate.DerivedWriteGate`: the record lands quarantined when a named
    session is tainted). Use :func:`remember_record` to read the stored status.

    ``expires_at_ms`` (epoch ms, ``None`` = never) is the new record's expiry; a duplicate found instead
    keeps its own expiry, and so does the version a tag merge writes. ``metadata`` is the new record's
    JSON object (not part of the content hash: a duplicate keeps the stored record's metadata).
    """
    rec, created, merge = remember_record(store, realm, identity, title, body, tags, evidence=evidence, gate=gate,
                                          expires_at_ms=expires_at_ms, metadata=metadata)
    return rec.project(), created, merge


@writes.single_write
def remember_record(
    store: AgentMemoryStore, realm: str, identity: str, title: str, body: str, tags: Iterable[str] = (), *,
    evidence: Sequence[EvidenceRef] = (), gate: WriteGate | None = None, expires_at_ms: int | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> tuple[MemoryRecord, bool, TagMerge | None]:
    """:func:`remember_merging` returning the stored :class:`MemoryRecord` (its ``status`` says whether
    the gate quarantined it)."""
    name = store.realm_name(realm)
    tags = tuple(tags)
    record = writes.app_record(title, body, tags, evidence, metadata, expires_at_ms)
    g = _gate(store, gate)
    with writes.naming_given_tags(tags), store.transaction(name) as tx:
        return writes.remember(tx, Scope.identity(name, identity), record, Author.application(), g, app_built=True)


def remember_many(
    store: AgentMemoryStore, realm: str, identity: str, items: Sequence[RememberItem], *,
    evidence: Sequence[EvidenceRef] = (), gate: WriteGate | None = None,
) -> list[RememberOutcome]:
    """Bulk application write into ``identity``'s scope: one :class:`RememberOutcome` per item, in order.

    Every item is what :func:`remember_merging` would write, in order, as if the items were remembered
    one after the other (author ``application``, same field rules, secret scan, exact-content dedup with
    tag merge, the one planner :class:`~meta_memory.agent_memory.writes.RememberPlan`), and all accepted
    items commit in **one** transaction with one audit row per op. An item whose content equals an active
    record's, or an earlier item's of the same call, returns that record with ``created=False``; when it
    brings tags that record lacks, the record is superseded by a version carrying both tag lists (``merge``
    names it). Refusals are **per item**: a refused item writes nothing and is reported with its
    ``op_index``; the others still commit. No items, or more than
    :data:`~meta_memory.limits.MAX_BATCH_OPS` ops planned for them, raises
    ``AgentMemoryError("invalid_record")`` and writes nothing; a backend failure raises
    ``AgentMemoryError("io")`` and writes nothing. ``evidence`` and ``gate`` apply to every item, as in
    :func:`remember_record` (one gate verdict for the whole batch).
    """
    name = store.realm_name(realm)
    prepared = writes.prepare_items(items, evidence, refuses_nul=store.refuses_nul)
    g = _gate(store, gate)
    with store.transaction(name) as tx:
        return writes.remember_many(tx, Scope.identity(name, identity), prepared, Author.application(), g)


# --------------------------------------------------------------------------- authored writes


@writes.single_write
def remember_authored(store: AgentMemoryStore, realm: str, scope: Scope, record: NewMemoryRecord, author: Author, *,
                      gate: WriteGate | None = None) -> tuple[MemoryRecord, bool]:
    """Write with a given author (recorder tool, distiller): same dedup as :func:`remember`, without the
    tag merge (a duplicate is returned as it is). The provenance author is set to ``author``. Returns the
    stored (possibly quarantined) record and whether it was created. Raises ``scope_not_writable`` when
    ``scope`` is of another realm."""
    name = store.realm_name(realm, scope)
    norm = writes.authored_record(record, author)
    g = _gate(store, gate)
    with writes.naming_given_tags(record.tags), store.transaction(name) as tx:
        rec, created, _merge = writes.remember(tx, scope, norm, author, g, merge_tags=False)
    return rec, created


@writes.single_write
def supersede(store: AgentMemoryStore, realm: str, scope: Scope, prior_id: str, record: NewMemoryRecord,
              author: Author, *, gate: WriteGate | None = None,
              expiry: int | None | KeepExpiry = KEEP_EXPIRY) -> MemoryRecord:
    """Write a new version of ``prior_id`` (which must be in ``scope``); returns the new record, or the
    prior itself (its own id) when the new version would change nothing (:func:`writes.unchanged`).

    ``expiry`` as :func:`update`'s: by default the new version keeps the prior's ``expires_at_ms``
    (``record.expires_at_ms`` is not read). Refusals: ``record '<id>' does not exist`` (also for a record
    of another scope: the refusal does not reveal that the id exists elsewhere), then the validator's (an
    expired prior is not active).
    """
    name = store.realm_name(realm, scope)
    if not store.has_realm(name):
        raise writes.PriorNotFound(prior_id)
    g = _gate(store, gate)
    with writes.naming_given_tags(record.tags), store.transaction(name) as tx:
        return writes.supersede(tx, scope, prior_id, writes.keeping_expiry(record, expiry), author, g)


@writes.single_write
def update(store: AgentMemoryStore, realm: str, identity: str, memory_id: str, title: str | None = None,
           body: str | None = None, tags: Iterable[str] | None = None, *,
           expiry: int | None | KeepExpiry = KEEP_EXPIRY,
           metadata: Mapping[str, Any] | None = None) -> tuple[AgentMemoryRecord, str | None]:
    """Application update of an identity record (author ``application``): ``(new record, superseded id)``,
    or ``(current record, None)`` when the update changes nothing (:func:`writes.unchanged`: the same
    title, body, tags, metadata, expiry and trust tier): nothing is written then.

    ``title``, ``body``, ``tags`` and ``metadata`` that are ``None`` keep the prior's value (read inside
    the write transaction, so a concurrent update cannot be half-merged); a ``metadata`` given replaces
    the prior's object whole (``{}`` clears it; keys are not merged); the prior's kind and description
    are always kept. ``expiry``: :data:`~meta_memory.agent_memory.writes.KEEP_EXPIRY` (the default)
    keeps the prior's ``expires_at_ms``, an int (epoch ms) sets the new version's, ``None`` clears it
    (never expires). A prior past its expiry is not active and is refused like a tombstoned one.
    Raises ``memory_id must not be empty`` for a blank id, ``update needs at least one of title, body,
    tags, metadata`` when all four are ``None`` and the expiry is kept, then as :func:`remember` and
    :func:`supersede`.
    """
    name = store.realm_name(realm)
    tags = None if tags is None else tuple(tags)
    memory_id = writes.check_update(memory_id, title, body, tags, metadata, expiry)
    revise = writes.revision(title, body, tags, metadata, expiry)
    if not store.has_realm(name):
        raise writes.PriorNotFound(memory_id)
    with writes.naming_given_tags(tags), store.transaction(name) as tx:
        new = writes.supersede(tx, Scope.identity(name, identity), memory_id, revise, Author.application(),
                               store.gate)
    return new.project(), (None if writes.wrote_nothing(memory_id, new.id) else memory_id)


@writes.single_write
def forget(store: AgentMemoryStore, realm: str, scope: Scope, memory_id: str, author: Author) -> bool:
    """Tombstone ``memory_id`` if it exists in ``scope`` and is not already tombstoned; else ``False``.
    Raises ``memory_id must not be empty`` for a blank id."""
    name = store.realm_name(realm, scope)
    memory_id = memory_id.strip()
    if not memory_id:
        raise AgentMemoryError("invalid_record", "memory_id must not be empty")
    if (store.refuses_nul and "\x00" in memory_id) or not store.has_realm(name):
        return False
    with store.transaction(name) as tx:
        return writes.forget(tx, scope, memory_id, author)


@writes.single_write
def propose(store: AgentMemoryStore, realm: str, scope: Scope, record: NewMemoryRecord, author: Author,
            taint: str | None = None) -> str:
    """Queue a proposal for a shared (mob/operator) scope; returns ``prop-...``. Secrets are refused, and
    so is content erased from that scope or from the proposing agent's own (``erased``). ``taint`` is
    the gate's reason at propose time (``None`` = clean)."""
    name = store.realm_name(realm, scope)
    prepared = writes.proposal(scope, record, author, taint, refuses_nul=store.refuses_nul)
    with store.transaction(name) as tx:
        return writes.propose(tx, prepared)


# --------------------------------------------------------------------------- batches given whole


def apply_batch(store: AgentMemoryStore, batch: StagedBatch, *, gate: WriteGate | None = None) -> BatchReceipt:
    """Validate and apply ``batch`` in one transaction (audit token ``direct-...``); nothing is written on
    refusal. ``gate`` overrides the store's default gate.

    No duplicate check: the batch is applied as given, so the rule that a scope holds one active record
    per content is its planner's. The product's only caller is an import's
    (:func:`~meta_memory.agent_memory.import_plan.apply_creates`, the ops
    :func:`~meta_memory.agent_memory.import_plan.plan_creates` found fresh), which resolves an active
    duplicate first; no method of the gateway hands it a batch. A restore's batch
    (:func:`~meta_memory.agent_memory.import_plan.apply_restore`) is read again and applied in one
    transaction of its own. A new caller plans its duplicates as they do (``tx.active_duplicate``)."""
    g = _gate(store, gate)
    with store.transaction(batch.realm) as tx:
        return tx.apply(batch, gate=g)


def stage(store: AgentMemoryStore, batch: StagedBatch) -> str:
    """Persist ``batch`` uncommitted (``stage`` table), validated without a gate; returns its token. The
    records are unchanged."""
    with store.transaction(batch.realm) as tx:
        return tx.stage(batch)


def commit_staged(store: AgentMemoryStore, realm: str, token: str, *, gate: WriteGate | None = None) -> BatchReceipt:
    """Validate and apply a staged batch (audit token ``token``) and drop its stage row, in one transaction.
    Unknown token: ``AgentMemoryError("invalid_record", "unknown stage token '<t>'")``.

    No duplicate check, as :func:`apply_batch`: no path of the product commits a staged batch through
    here. The only batches the product stages are gated promotions, and review commits those in its own
    transaction after resolving content already active in the target scope to that record
    (:mod:`meta_memory.review.promotions`); a new caller resolves its duplicates the same way."""
    g = _gate(store, gate)
    name = store.realm_name(realm)
    if not store.has_realm(name):
        raise AgentMemoryError("invalid_record", f"unknown stage token '{token}'")
    with store.transaction(name) as tx:
        batch = tx.staged(token)
        if batch is None:
            raise AgentMemoryError("invalid_record", f"unknown stage token '{token}'")
        receipt = tx.apply(batch, gate=g, token=token)
        tx.unstage(token)
        return receipt


def discard_staged(store: AgentMemoryStore, realm: str, token: str) -> bool:
    """Drop a staged batch without applying it; ``False`` when the token is unknown."""
    name = store.realm_name(realm)
    if not store.has_realm(name):
        return False
    with store.transaction(name) as tx:
        return tx.unstage(token)

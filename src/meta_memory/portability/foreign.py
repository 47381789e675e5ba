"""``meta-memory import --from mem0|langgraph``: another memory system's records, landed by one writer.

Each source has its own reader (:mod:`.from_mem0`, :mod:`.from_langgraph`) yielding one neutral shape,
:class:`ForeignRecord` (or a :class:`ForeignNote` for a source entry it cannot map), and
:func:`import_foreign` lands them all the same way, as the domain's import planner
(:mod:`meta_memory.agent_memory.import_plan`) decides, for a dry run and a real one alike:

- as **application writes** into the record's identity scope (author ``application``, kind ``fact``,
  tier ``agent_observed``: what ``meta/agent_memory/remember`` writes), through the one validator
  (``CreateOp`` batches of at most :data:`~meta_memory.limits.MAX_BATCH_OPS`): field caps, the secret
  scanner over every string (the source's ids too), the realm allow-list, the erasure register;
- with the source's times (``created_at_ms``, ``updated_at_ms``) and a provenance naming the source
  system and the record's id there (``imported_from: {system, source_id}``);
- under a memory id derived from the system and the source id (``<system>-<hash>``), so running an
  import again skips what it landed (``already present``), and a record whose content an active record
  of its scope already holds is skipped (``duplicate``); a LangGraph item whose key is already stored
  with another value is kept as stored (``conflict``), never overwritten;
- refusals are per entry (a secret, a field cap, an identity the source cannot name): the entry is
  reported by its position in the source and its id there, and the others land. ``dry_run`` runs every
  check and reads the target, and writes nothing.

LangGraph's ``expires_at`` becomes the record's expiry (``expires_at_ms``); mem0's ``metadata`` and a
LangGraph item's value become the record's ``metadata`` (:func:`landing_op`, the one place). Metadata the
record rules refuse (size, depth, keys with ``.`` or a leading ``$``) is left out and counted in the
summary as not carried (:meth:`ForeignRecord.pending`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..agent_memory.batch import CreateOp
from ..agent_memory.erase import shown_texts
from ..agent_memory.fields import FieldError, normalize_metadata
from ..agent_memory.import_plan import (
    Landing,
    StoredKeys,
    apply_creates,
    check_create,
    erased_reason,
    foreign_create,
    foreign_memory_id,
    installation_erasures,
    plan_creates,
    record_hashes,
)
from ..agent_memory.model import Scope
from ..agent_memory.store.base import AgentMemoryStore
from ..clock import SystemClock
from ..errors import AgentMemoryError
from ..integrations.langgraph_items import ITEM_TAG
from ..limits import MAX_BATCH_OPS, MAX_TTL_S

__all__ = ["ForeignNote", "ForeignRecord", "ForeignSourceError", "ForeignSummary", "import_foreign", "landing_op",
           "foreign_memory_id"]


class ForeignSourceError(ValueError):
    """The source cannot be read at all (missing, malformed, too large, refused): nothing was written."""


@dataclass(frozen=True, slots=True)
class ForeignRecord:
    """One record of another memory system, as every importer hands it to the writer.

    ``position``: 1-based place in the source (its line of the report); ``system`` (``"mem0"``,
    ``"langgraph"``) and ``source_id`` (the id there); ``identity`` (whose scope it lands in); ``title``,
    ``body``, ``tags``; ``created_at_ms`` / ``updated_at_ms`` (UTC epoch ms); ``expires_at_ms`` (LangGraph's:
    the record's expiry); ``metadata`` (mem0's, or a LangGraph item's value): the record's metadata object
    (:func:`landing_op`). ``key_tag``: a tag naming
    the record's key in the source (LangGraph), an active record of the scope holding it is the same item."""

    position: int
    system: str
    source_id: str
    identity: str
    title: str
    body: str
    created_at_ms: int
    updated_at_ms: int
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] | None = None
    expires_at_ms: int | None = None
    key_tag: str | None = None

    def pending(self) -> tuple[str, ...]:
        """What the source holds that the record cannot carry: ``"metadata"`` when it breaks the record
        metadata's rules (``agent_memory/fields.py``: size, depth, keys), so it lands without it."""
        return ("metadata",) if self.metadata and _carried_metadata(self.metadata) is None else ()


def _carried_metadata(metadata: dict[str, Any] | None) -> dict[str, Any] | None:
    """``metadata`` as a record stores it, or ``None`` when it breaks the rules (or there is none)."""
    if not metadata:
        return None
    try:
        return normalize_metadata(metadata)
    except FieldError:
        return None


@dataclass(frozen=True, slots=True)
class ForeignNote:
    """A source entry not imported: its position, its id in the source, and why (or what it became)."""

    line: int
    source_id: str
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "source_id": self.source_id, "reason": self.why}


@dataclass
class ForeignSummary:
    """What an import from another system did (or, ``dry_run``, would do)."""

    system: str
    source: str
    realm: str
    dry_run: bool = False
    read: int = 0
    created: int = 0
    present: int = 0
    duplicates: int = 0
    skipped: list[ForeignNote] = field(default_factory=list)
    conflicts: list[ForeignNote] = field(default_factory=list)
    refused: list[ForeignNote] = field(default_factory=list)
    not_carried: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` report."""
        return {"from": self.system, "source": self.source, "realm": self.realm, "dry_run": self.dry_run,
                "read": self.read, "created": self.created, "already_present": self.present,
                "duplicates": self.duplicates, "not_carried": self.not_carried,
                "skipped": [n.to_json() for n in self.skipped], "conflicts": [n.to_json() for n in self.conflicts],
                "refused": [n.to_json() for n in self.refused]}


def landing_op(rec: ForeignRecord, realm: str) -> CreateOp:
    """The one mapping of a :class:`ForeignRecord` to the write that lands it (see the module doc), built by
    the domain's :func:`~meta_memory.agent_memory.import_plan.foreign_create`.

    ``rec.expires_at_ms`` is the record's expiry and ``rec.metadata`` its metadata object (mem0's metadata, a
    LangGraph item's value as ``MetaMemoryStore`` stores it); metadata breaking the record rules is left
    out and counted as not carried (:meth:`ForeignRecord.pending`)."""
    return foreign_create(Scope.identity(realm, rec.identity), rec.system, rec.source_id, title=rec.title,
                          body=rec.body, tags=rec.tags, created_at_ms=rec.created_at_ms,
                          updated_at_ms=rec.updated_at_ms, expires_at_ms=rec.expires_at_ms,
                          metadata=_carried_metadata(rec.metadata) or {})


def _checked(rec: ForeignRecord, realm: str, now_ms: int, max_ttl_s: int) -> CreateOp:
    """``rec``'s op after the domain's checks of one created record
    (:func:`~meta_memory.agent_memory.import_plan.check_create`), so a dry run refuses what the write would."""
    return check_create(landing_op(rec, realm), now_ms, max_ttl_s)


def _shown(rec: ForeignRecord, exc: Exception) -> str:
    """The source id a refusal names: none when a secret was found (it may sit in the id itself)."""
    return "" if isinstance(exc, AgentMemoryError) and exc.reason == "secret_detected" else rec.source_id


def _refusal(exc: Exception) -> str:
    if isinstance(exc, AgentMemoryError):
        return f"{exc.reason}: {exc.message}"
    if isinstance(exc, FieldError):
        return f"invalid_record: {exc.rule}"
    return f"invalid_record: {exc}"


def import_foreign(
    store: AgentMemoryStore | None,
    entries: Iterable[ForeignRecord | ForeignNote],
    summary: ForeignSummary,
    *,
    max_ttl_s: int = MAX_TTL_S,
    progress: Callable[[int], None] | None = None,
) -> ForeignSummary:
    """Land ``entries`` (a reader's records, and its notes of entries it refused) in ``summary.realm`` of
    ``store``, a batch at a time; with ``summary.dry_run`` write nothing (``store`` ``None``: the target is
    not read either). Fills and returns ``summary``; ``progress(n)`` after each batch of ``n`` entries.
    A record expiring later than now + ``max_ttl_s`` seconds (the target's ``agent_memory.max_ttl_s``) is
    refused by line, as a caller's longer ``ttl_s`` is.

    Raises :class:`ForeignSourceError` when the reader finds the source unreadable part way (the
    batches before stay; running the import again resumes) and ``AgentMemoryError`` (``io``) when the
    store fails."""
    keys = StoredKeys(ITEM_TAG)
    clock = store.clock if store is not None else SystemClock()
    for batch in _chunks(entries):
        ops: list[tuple[ForeignRecord, CreateOp]] = []
        for entry in batch:
            if isinstance(entry, ForeignNote):
                summary.refused.append(entry)
                continue
            summary.read += 1
            for name in entry.pending():
                summary.not_carried[name] = summary.not_carried.get(name, 0) + 1
            try:
                ops.append((entry, _checked(entry, summary.realm, clock.now_ms(), max_ttl_s)))
            except (AgentMemoryError, ValueError) as exc:
                summary.refused.append(ForeignNote(entry.position, _shown(entry, exc), _refusal(exc)))
        fresh = _not_stored(store, summary, ops, keys) if store is not None else ops
        if store is not None and not summary.dry_run:
            _land(store, summary, fresh)
        elif summary.dry_run:
            summary.created += len(fresh)
        if progress is not None:
            progress(len(batch))
    summary.refused.sort(key=lambda n: n.line)
    return summary


def _chunks(entries: Iterable[ForeignRecord | ForeignNote]) -> Iterator[list[ForeignRecord | ForeignNote]]:
    batch: list[ForeignRecord | ForeignNote] = []
    for entry in entries:
        batch.append(entry)
        if len(batch) >= MAX_BATCH_OPS:
            yield batch
            batch = []
    if batch:
        yield batch


def _not_stored(store: AgentMemoryStore, summary: ForeignSummary, ops: list[tuple[ForeignRecord, CreateOp]],
                keys: StoredKeys) -> list[tuple[ForeignRecord, CreateOp]]:
    """``ops`` without what the target already holds, as the domain's
    :func:`~meta_memory.agent_memory.import_plan.plan_creates` decides (the same for a dry run and a real
    one): the same id (present, or a conflict when its content differs), the same content active in the
    scope (a duplicate), an earlier entry of this batch with the same content, or the same LangGraph key
    (a conflict); each noted in ``summary``."""
    ops = _not_erased(store, summary, ops)
    plans = plan_creates(store, summary.realm, [op for _, op in ops], [rec.key_tag for rec, _ in ops], keys)
    fresh: list[tuple[ForeignRecord, CreateOp]] = []
    for (rec, op), plan in zip(ops, plans, strict=True):
        if plan.landing is Landing.PRESENT:
            summary.present += 1
        elif plan.landing is Landing.CONFLICT:
            summary.conflicts.append(ForeignNote(rec.position, rec.source_id,
                                                 f"already imported as {plan.met} with other content or "
                                                 "into another identity; kept as it was"))
        elif plan.landing is Landing.DUPLICATE:
            summary.duplicates += 1
            if plan.met is not None:
                summary.skipped.append(ForeignNote(rec.position, rec.source_id,
                                                   f"duplicate of stored record {plan.met}"))
        elif plan.landing is Landing.FRESH:
            fresh.append((rec, op))
    summary.conflicts += [ForeignNote(rec.position, rec.source_id,
                                      "this key is already stored with another value; kept as it was")
                          for (rec, _), plan in zip(ops, plans, strict=True) if plan.landing is Landing.KEY_CONFLICT]
    return fresh


def _not_erased(store: AgentMemoryStore, summary: ForeignSummary,
                ops: list[tuple[ForeignRecord, CreateOp]]) -> list[tuple[ForeignRecord, CreateOp]]:
    """``ops`` without the entries whose id or content the erasure register of any realm of the installation
    holds (:func:`~meta_memory.agent_memory.import_plan.erased_reason`), each noted as refused (``erased``)."""
    if not ops:
        return ops
    hashes = [record_hashes(op.record.title, op.record.body, shown_texts(op.record)) for _, op in ops]
    rows = installation_erasures(store, summary.realm, [op.id for _, op in ops if op.id is not None],
                                 {h for pair in hashes for h in pair})
    if not rows:
        return ops
    kept: list[tuple[ForeignRecord, CreateOp]] = []
    for (rec, op), pair in zip(ops, hashes, strict=True):
        why = erased_reason(rows, summary.realm, op.id, pair, (op.scope,))
        if why is None:
            kept.append((rec, op))
        else:
            summary.refused.append(ForeignNote(rec.position, rec.source_id, why))
    return kept


def _land(store: AgentMemoryStore, summary: ForeignSummary, ops: list[tuple[ForeignRecord, CreateOp]]) -> None:
    """Apply ``ops`` as one batch (:func:`~meta_memory.agent_memory.import_plan.apply_creates`); an op the
    validator refuses is reported and the rest land."""
    refused = apply_creates(store, summary.realm, [op for _, op in ops])
    for index, exc in refused:
        rec = ops[index][0]
        summary.refused.append(ForeignNote(rec.position, _shown(rec, exc), _refusal(exc)))
    summary.created += len(ops) - len(refused)

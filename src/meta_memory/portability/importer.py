"""``meta-memory import``: an export file back into a state, through the one validator.

Two passes over the lines: the first decodes and checks every line (JSON, line shape, record
encoding, field caps, secrets) and refuses the file by line number before anything is written; the
second lands the records as :class:`~meta_memory.agent_memory.batch.RestoreOp` batches (one
transaction each, at most :data:`~meta_memory.agent_memory.batch.MAX_BATCH_OPS` ops, whole supersede
chains together) and the ledger lines through the ledger's own index.

- Idempotent by memory id: a record whose id is already stored with the same content is skipped; one
  stored with other content is skipped and counted as a conflict, never overwritten.
- Trust is never raised (the validator caps it); quarantined content stays quarantined.
- An interrupted import leaves whole batches only; running it again completes it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import ValidationError

from ..agent_memory.batch import MAX_BATCH_OPS, RestoreOp, StagedBatch
from ..agent_memory.model import Author, MemoryRecord, NewMemoryRecord, StatusKind
from ..agent_memory.store.base import AgentMemoryStore
from ..agent_memory.validator import normalize_record, refuse_secrets, validate_record_fields
from ..errors import AgentMemoryError, MetaError
from ..ledger.errors import LedgerValidationError
from ..ledger.model import IndexRequest
from ..runtime import Runtime
from .format import MAX_LINE_BYTES, AssertionLine, ConflictLine, Header, RecordLine, parse_line

__all__ = ["ImportError_", "ImportSummary", "import_jsonl", "IMPORT_AUTHOR"]

#: The author of every restore batch (the audit rows name it).
IMPORT_AUTHOR = Author.operator("meta-memory import")


class ImportError_(ValueError):  # noqa: N801 - ``ImportError`` is a builtin
    """The file was refused before anything was written: ``line`` (1-based) and the rule."""

    def __init__(self, line: int, rule: str) -> None:
        super().__init__(f"line {line}: {rule}")
        self.line = line
        self.rule = rule


@dataclass
class ImportSummary:
    """What an import did, per kind of line."""

    created: dict[str, int] = field(default_factory=dict)
    skipped_present: int = 0
    conflicts: list[str] = field(default_factory=list)
    trust_lowered: int = 0
    assertions: int = 0
    assertions_present: int = 0
    conflict_signals: int = 0

    @property
    def total_created(self) -> int:
        return sum(self.created.values())


@dataclass
class ParsedExport:
    records: list[tuple[int, MemoryRecord]] = field(default_factory=list)
    ledger: list[tuple[int, AssertionLine | ConflictLine]] = field(default_factory=list)


def _check_record(n: int, rec: MemoryRecord) -> None:
    try:
        norm = normalize_record(NewMemoryRecord(title=rec.title, body=rec.body, description=rec.description,
                                                tags=rec.tags, kind=rec.kind, provenance=rec.provenance))
        validate_record_fields(norm.title, norm.description, norm.body)
        # every string the line stores (its id, scope, status, links and provenance too)
        refuse_secrets(replace(rec, title=norm.title, description=norm.description, body=norm.body, tags=norm.tags))
    except AgentMemoryError as exc:
        # a secret may sit in the id itself: the line number names the record, never the matched text
        what = "record" if exc.data.get("reason") == "secret_detected" else f"record '{rec.id}'"
        raise ImportError_(n, f"{what}: {exc.data.get('reason', 'refused')}: {exc.message}") from None
    except ValueError as exc:  # FieldError is a ValueError naming the rule
        raise ImportError_(n, f"record '{rec.id}': {exc}") from None


def parse_lines(lines: Iterable[str | bytes]) -> ParsedExport:
    """The first pass: every line decoded and checked. Raises :class:`ImportError_`."""
    parsed = ParsedExport()
    seen_header = False
    for n, raw in enumerate(lines, start=1):
        if len(raw) > MAX_LINE_BYTES:
            raise ImportError_(n, f"line longer than {MAX_LINE_BYTES} bytes")
        try:
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError as exc:
            raise ImportError_(n, f"not valid UTF-8 (byte {exc.start + 1} of the line)") from None
        if not text.strip():
            continue
        try:
            line = parse_line(json.loads(text))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise ImportError_(n, f"{first['msg']}: {where}" if where else first["msg"]) from None
        except (ValueError, TypeError) as exc:
            raise ImportError_(n, str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
        if not seen_header:
            if not isinstance(line, Header):
                raise ImportError_(n, "the first line must be the meta-memory-export header")
            seen_header = True
            continue
        if isinstance(line, Header):
            raise ImportError_(n, "a second header")
        if isinstance(line, RecordLine):
            try:
                rec = line.to_record()
            except ValueError as exc:
                raise ImportError_(n, str(exc)) from None
            _check_record(n, rec)
            parsed.records.append((n, rec))
        else:
            parsed.ledger.append((n, line))
    if not seen_header:
        raise ImportError_(1, "empty file: no meta-memory-export header")
    return parsed


def _batches(records: list[tuple[int, MemoryRecord]]) -> Iterable[list[tuple[int, MemoryRecord]]]:
    """Records cut into batches of at most ``MAX_BATCH_OPS``, never between a superseded record and
    its successor (the validator checks the link at the end of a batch)."""
    batch: list[tuple[int, MemoryRecord]] = []
    waiting: set[str] = set()  # successors named by superseded records of this batch, not yet seen
    for n, rec in records:
        batch.append((n, rec))
        waiting.discard(rec.id)
        if rec.status.kind is StatusKind.SUPERSEDED and rec.status.detail:
            waiting.add(rec.status.detail)
        if not waiting and len(batch) >= MAX_BATCH_OPS:
            yield batch
            batch = []
        elif len(batch) > MAX_BATCH_OPS:
            raise ImportError_(n, f"a supersede chain spans more than {MAX_BATCH_OPS} records; it cannot be "
                                  "imported in one transaction")
    if batch:
        yield batch


def import_jsonl(
    runtime: Runtime,
    lines: Iterable[str | bytes] | ParsedExport,
    *,
    progress: Callable[[int], None] | None = None,
) -> ImportSummary:
    """Import an export file (its lines, or what :func:`parse_lines` made of them) into ``runtime``'s
    stores and ledger.

    Raises :class:`ImportError_` (nothing written) for a damaged or refused file, and
    :class:`~meta_memory.errors.MetaError` when the store or ledger refuses a batch (the batches
    before it stay; running the import again resumes). ``progress(n)`` after each batch of ``n``
    record lines.
    """
    parsed = lines if isinstance(lines, ParsedExport) else parse_lines(lines)
    feature = runtime.agent_memory
    store = feature.store if feature is not None else None
    if parsed.records and store is None:
        raise ImportError_(parsed.records[0][0], "agent memory is disabled in this configuration")
    summary = ImportSummary()
    by_realm: dict[str, list[tuple[int, MemoryRecord]]] = {}
    for n, rec in parsed.records:
        by_realm.setdefault(rec.scope.realm, []).append((n, rec))
    for realm, recs in by_realm.items():
        if store is not None:  # by_realm is empty without a store
            _import_realm(store, realm, recs, summary, progress)
    _import_ledger(runtime, parsed.ledger, summary)
    return summary


def _import_ledger(runtime: Runtime, lines: list[tuple[int, AssertionLine | ConflictLine]], summary: ImportSummary) -> None:
    if not lines:
        return
    if runtime.ledger is None:
        raise ImportError_(lines[0][0], "the assertion ledger is not configured ([memory] kind = \"local_json\")")
    existing = {(a.entity, a.topic, a.store, a.fact, json.dumps(a.metadata, sort_keys=True))
                for a in runtime.ledger.query().assertions}
    for n, line in lines:
        try:
            if isinstance(line, AssertionLine):
                key = (line.entity, line.topic, line.store, line.fact, json.dumps(line.metadata, sort_keys=True))
                if key in existing:
                    summary.assertions_present += 1
                    continue
                runtime.ledger.index(IndexRequest(entity=line.entity, topic=line.topic, store=line.store,
                                                  fact=line.fact, metadata=line.metadata))
                existing.add(key)
                summary.assertions += 1
            else:
                runtime.ledger.index(IndexRequest(entity=line.entity, topic=line.topic, store=line.store,
                                                  conflict=True, conflict_reason=line.reason))
                summary.conflict_signals += 1
        except LedgerValidationError as exc:
            raise ImportError_(n, f"refused by the ledger: {exc.rule}") from None
        except MetaError as exc:
            raise ImportError_(n, f"refused by the ledger: {exc.message}") from None


def _import_realm(store: AgentMemoryStore, realm: str, recs: list[tuple[int, MemoryRecord]], summary: ImportSummary,
                  progress: Callable[[int], None] | None) -> None:
    """Land ``realm``'s records (line number, record) absent from the store, a batch at a time;
    ``progress`` hears of each batch, then of the records skipped as present or conflicting."""
    fresh: list[tuple[int, MemoryRecord]] = []
    for n, rec in recs:
        present = store.get(realm, rec.id)
        if present is None:
            fresh.append((n, rec))
        elif present.content_hash == rec.content_hash:
            summary.skipped_present += 1
        else:
            summary.conflicts.append(rec.id)
    for batch in _batches(fresh):
        ops = tuple(RestoreOp(record=rec, rationale="import") for _, rec in batch)
        try:
            receipt = store.apply_batch(StagedBatch(realm=realm, author=IMPORT_AUTHOR, ops=ops))
        except AgentMemoryError as exc:
            index = exc.data.get("op_index")
            where = batch[index][0] if isinstance(index, int) and index < len(batch) else batch[0][0]
            raise ImportError_(where, f"refused by the store: {exc.message}") from None
        for _, rec in batch:
            if receipt.records[rec.id].trust != rec.trust:
                summary.trust_lowered += 1
        summary.created[realm] = summary.created.get(realm, 0) + len(batch)
        if progress is not None:
            progress(len(batch))
    if progress is not None and len(fresh) < len(recs):
        progress(len(recs) - len(fresh))

"""``meta-memory import``: an export file back into a state, through the one validator.

Two passes over the lines: the first decodes and checks every line (JSON, line shape, record
encoding, the name rule of every realm, identity, mob, operator and session key, field caps, secrets)
and refuses the file by line number before anything is written; the
second lands the records as :class:`~meta_memory.agent_memory.batch.RestoreOp` batches (one
transaction each, at most :data:`~meta_memory.limits.MAX_BATCH_OPS` ops, whole supersede
chains together) and the ledger lines through the ledger's own index. What the records become (the
chain check, the expiry cap, the erasure register, present and conflicting ids, the batches) is
planned by the domain (:mod:`meta_memory.agent_memory.import_plan`); this module reads, verifies and
reports.

- An export file is untrusted input. A file that verifies (:func:`verify`: every line's MAC under
  this installation's export key, or a key the operator names) lands exactly as exported. Any other
  file lands no more trusted or visible than a fresh write (:mod:`.policy`): each record is
  downgraded, a record of a shared scope is refused unless allowed by name, and ledger lines are
  refused unless allowed (``allow_ledger``). The summary names every downgraded and refused line.
- Erased stays erased: a record whose id the erasure register of any realm holds, or whose content was
  erased from any scope of any realm of the installation, is refused (with every record of its supersede
  chain in the file).
- Idempotent by memory id: a record whose id is already stored with the same content is skipped; one
  stored with other content is skipped and counted as a conflict, never overwritten. Each batch is read
  again by these rules in the transaction that writes it, so a write made while the import runs is
  neither overwritten nor duplicated.
- One active copy of a content per scope: an active line whose content an active record of its scope
  already holds under another id is skipped, or, when other lines link to it (a supersede chain's head),
  landed tombstoned; the summary names each (``duplicates``). A restored record naming a stored active
  record in ``supersedes`` leaves it superseded by the record restored (one active head per chain). An
  unverified line
  whose id lies in a foreign importer's id space lands under a re-issued id (:mod:`.policy`), the same on
  every run; its file id stored already makes it present or a conflict all the same.
- Trust is never raised (the validator caps it); quarantined content stays quarantined.
- An interrupted import leaves whole batches only; running it again completes it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, BinaryIO

from pydantic import ValidationError

from .. import strict_json
from ..agent_memory.import_plan import (
    IMPORT_AUTHOR,
    LineRefused,
    RestoreDuplicate,
    apply_restore,
    check_chains,
    past_expiry_cap,
    plan_restore,
)
from ..agent_memory.model import MemoryRecord, NewMemoryRecord, TrustTier
from ..agent_memory.store.base import AgentMemoryStore
from ..agent_memory.validator import normalize_record, refuse_secrets, validate_record_fields
from ..errors import AgentMemoryError, MetaError
from ..ledger.errors import LedgerValidationError
from ..ledger.model import IndexRequest
from ..limits import MAX_TTL_S
from ..runtime import Runtime
from .format import (
    MAX_LINE_BYTES,
    AssertionLine,
    ConflictLine,
    EndLine,
    Header,
    RecordLine,
    parse_line,
    refused_name,
)
from .policy import ScopeAllowance, downgrade
from .signing import ExportKey, LineSigner, line_digest, split_mac

__all__ = ["ImportError_", "ImportSummary", "LineNote", "Verification", "import_jsonl", "parse_lines", "read_lines",
           "verify", "IMPORT_AUTHOR"]



#: The file was refused before anything was written (or, past the first batch, before the batch of that
#: line): ``line`` (1-based) and the rule. The domain's import planner raises it too.
ImportError_ = LineRefused


@dataclass(frozen=True, slots=True)
class LineNote:
    """A line the import changed or refused: its number, the record's id (``None`` for a ledger line) and why."""

    line: int
    memory_id: str | None
    why: str

    def to_json(self, key: str) -> dict[str, Any]:
        return {"line": self.line, "memory_id": self.memory_id, key: self.why}


@dataclass(frozen=True, slots=True)
class Verification:
    """Whether the file verified, and how (the key) or why not."""

    verified: bool
    detail: str
    #: Lines whose MAC fails under a key the importer trusts (the header names it): changed or added
    #: after export. They land quarantined whatever they claim (:func:`~.policy.downgrade`).
    tampered: frozenset[int] = frozenset()


@dataclass
class ImportSummary:
    """What an import did, per kind of line, and every line it downgraded or refused.

    ``downgraded``: the lines that landed changed by the untrusted-file policy (each with its changes);
    ``trust_lowered``: the records that landed with a lower trust than the file claimed (a downgrade,
    or a verified file's trust capped on import). Lines skipped as present or conflicting wrote nothing
    and are in neither. ``duplicates``: every active line whose content an active record of its scope
    already held (:class:`~meta_memory.agent_memory.import_plan.RestoreDuplicate`): skipped (counted in
    ``skipped_present``) or, linked to by other lines, landed tombstoned (counted in ``created``)."""

    created: dict[str, int] = field(default_factory=dict)
    skipped_present: int = 0
    conflicts: list[str] = field(default_factory=list)
    duplicates: list[RestoreDuplicate] = field(default_factory=list)
    trust_lowered: int = 0
    assertions: int = 0
    assertions_present: int = 0
    conflict_signals: int = 0
    verified: bool = False
    verification: str = ""
    downgraded: list[LineNote] = field(default_factory=list)
    refused: list[LineNote] = field(default_factory=list)

    @property
    def total_created(self) -> int:
        return sum(self.created.values())

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` report: the counts, whether the file verified, every duplicate line
        (``{line, memory_id, duplicate_of, outcome: "skipped" | "tombstoned"}``) and every downgraded and
        refused line."""
        return {"created": self.created, "skipped_present": self.skipped_present, "conflicts": self.conflicts,
                "duplicates": [{"line": d.line, "memory_id": d.memory_id, "duplicate_of": d.duplicate_of,
                                "outcome": "tombstoned" if d.landed else "skipped"} for d in self.duplicates],
                "trust_lowered": self.trust_lowered, "assertions": self.assertions,
                "assertions_present": self.assertions_present, "conflict_signals": self.conflict_signals,
                "verified": self.verified, "verification": self.verification,
                "downgraded": [n.to_json("changes") for n in self.downgraded],
                "refused": [n.to_json("reason") for n in self.refused]}


@dataclass
class ParsedExport:
    """What the first pass read: the header, the record and ledger lines by line number, and what
    :func:`verify` needs (each line's digest and MAC, the closing line, anything after it)."""

    header: Header | None = None
    records: list[tuple[int, MemoryRecord]] = field(default_factory=list)
    ledger: list[tuple[int, AssertionLine | ConflictLine]] = field(default_factory=list)
    macs: list[tuple[int, bytes, str | None]] = field(default_factory=list)
    end: tuple[int, EndLine] | None = None
    after_end: int | None = None


def _check_record(n: int, rec: MemoryRecord) -> None:
    try:
        norm = normalize_record(NewMemoryRecord(title=rec.title, body=rec.body, description=rec.description,
                                                tags=rec.tags, kind=rec.kind, provenance=rec.provenance,
                                                metadata=rec.metadata))
        validate_record_fields(norm.title, norm.description, norm.body)
        # every string the line stores (its id, scope, status, links and provenance too)
        refuse_secrets(replace(rec, title=norm.title, description=norm.description, body=norm.body, tags=norm.tags))
    except AgentMemoryError as exc:
        # a secret may sit in the id itself: the line number names the record, never the matched text
        what = "record" if exc.data.get("reason") == "secret_detected" else f"record '{rec.id}'"
        raise ImportError_(n, f"{what}: {exc.data.get('reason', 'refused')}: {exc.message}") from None
    except ValueError as exc:  # FieldError is a ValueError naming the rule
        raise ImportError_(n, f"record '{rec.id}': {exc}") from None


def _check_names(n: int, line: Header | RecordLine) -> None:
    """Refuse line ``n`` when a name it carries breaks the name rule (:func:`~.format.refused_name`)."""
    why = refused_name(line)
    if why is not None:
        raise ImportError_(n, why)


def read_lines(stream: BinaryIO) -> Iterator[bytes]:
    """The lines of an export file read from ``stream`` one at a time, without their ``\\n`` (or ``\\r\\n``)
    ending. Never more than :data:`~.format.MAX_LINE_BYTES` (+ its ending) of the file is held: a longer
    line raises :class:`ImportError_` naming its number as soon as its first bytes past the limit are read."""
    n = 0
    while True:
        raw = stream.readline(MAX_LINE_BYTES + 2)
        if not raw:
            return
        n += 1
        if raw.endswith(b"\n"):
            raw = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1]
        if len(raw) > MAX_LINE_BYTES:
            raise ImportError_(n, f"line longer than {MAX_LINE_BYTES} bytes")
        yield raw


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
        if parsed.end is not None and parsed.after_end is None:
            parsed.after_end = n
        signed = split_mac(raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass"))
        parsed.macs.append((n, line_digest(signed[0]), signed[1]) if signed else (n, b"", None))
        try:
            line = parse_line(strict_json.loads(text))
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
            _check_names(n, line)
            parsed.header = line
            continue
        if isinstance(line, Header):
            raise ImportError_(n, "a second header")
        if isinstance(line, EndLine):
            if parsed.end is None:
                parsed.end = (n, line)
            continue
        if isinstance(line, RecordLine):
            try:
                rec = line.to_record()
            except ValueError as exc:
                raise ImportError_(n, str(exc)) from None
            _check_names(n, line)
            _check_record(n, rec)
            parsed.records.append((n, rec))
        else:
            parsed.ledger.append((n, line))
    if not seen_header:
        raise ImportError_(1, "empty file: no meta-memory-export header")
    return parsed


def verify(parsed: ParsedExport, keys: Sequence[ExportKey]) -> Verification:
    """Whether every line of the file is as an installation holding one of ``keys`` exported it: the
    header names a known key, the closing line counts the lines before it, and each line's MAC (which
    binds the export's id and the line's number) verifies. Otherwise, the first reason it does not."""
    header = parsed.header
    if header is None or header.version == 1:
        return Verification(False, "the file is not signed (an export written before exports were signed)")
    key = next((k for k in keys if k.key_id == header.key_id), None)
    unknown_key = None
    bad: list[int] = []
    if key is None:
        known = ", ".join(k.key_id for k in keys) or "none: this installation has made no export yet"
        unknown_key = (f"it is signed with export key {header.key_id}, which is neither this "
                       f"installation's nor a --key-file's (known: {known})")
    else:
        assert header.export_id is not None  # a version 2 header names it
        signer = LineSigner(key, header.export_id)
        bad = [n for n, digest, mac in parsed.macs if mac is None or not signer.verifies(n, digest, mac)]
    tampered = frozenset(bad)
    # the file's shape is told first, whoever's key signed it: an incomplete file is incomplete under any key
    shape = None
    if parsed.end is None:
        shape = "its closing line is missing: the file was cut short, or lines were removed"
    elif parsed.after_end is not None:
        shape = f"line {parsed.after_end} follows the closing line"
    elif parsed.end[1].lines != parsed.end[0] - 1:
        end_at, end = parsed.end
        shape = f"its closing line counts {end.lines} lines before it where {end_at - 1} stand: lines were added or removed"
    if shape is not None:
        return Verification(False, shape + (f"; and {unknown_key}" if unknown_key else ""), tampered)
    if key is None:
        return Verification(False, unknown_key or "")
    if bad:
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        return Verification(False, f"line {bad[0]}{more} fails its integrity check: edited, moved, or from another export",
                            tampered)
    return Verification(True, f"signed with {key.where} (key id {key.key_id})")


def import_jsonl(
    runtime: Runtime,
    lines: Iterable[str | bytes] | ParsedExport,
    *,
    keys: Sequence[ExportKey] = (),
    allow_scopes: ScopeAllowance = ScopeAllowance(),
    allow_ledger: bool = False,
    progress: Callable[[int], None] | None = None,
) -> ImportSummary:
    """Import an export file (its lines, or what :func:`parse_lines` made of them) into ``runtime``'s
    stores and ledger.

    ``keys``: the export keys a file may verify under (this installation's, a ``--key-file``'s). A file
    that does not verify lands as :mod:`.policy` says: records downgraded to what a fresh write could
    be, shared scopes only as ``allow_scopes`` allows, ledger lines only with ``allow_ledger``.

    A live (active or quarantined) record expiring later than now + ``agent_memory.max_ttl_s`` is refused
    by line, as a caller's longer ``ttl_s`` is; the expiry is never shortened.

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
    checked = verify(parsed, keys)
    summary = ImportSummary(verified=checked.verified, verification=checked.detail)
    claimed = {rec.id: rec.trust for _, rec in parsed.records}
    records = parsed.records
    changes: dict[int, LineNote] = {}  # reported as downgraded once the record has landed
    file_ids: dict[str, str] = {}  # a re-issued id (policy.downgrade) -> the id the file gave
    if not checked.verified:
        if store is not None:
            check_chains(store, parsed.records)
        now = runtime.clock.now_ms()
        records = []
        for n, rec in parsed.records:
            outcome = downgrade(rec, allow_scopes, now, tampered=n in checked.tampered)
            if outcome.record is None:
                summary.refused.append(LineNote(n, rec.id, outcome.refused or "refused"))
                continue
            if outcome.changed:
                changes[n] = LineNote(n, outcome.record.id, "; ".join(outcome.changed))
            if outcome.record.id != rec.id:
                file_ids[outcome.record.id] = rec.id
                claimed.setdefault(outcome.record.id, rec.trust)
            records.append((n, outcome.record))
    by_realm: dict[str, list[tuple[int, MemoryRecord]]] = {}
    cap_s = feature.config.max_ttl_s if feature is not None else MAX_TTL_S
    now_ms = runtime.clock.now_ms()
    for n, rec in records:
        too_late = past_expiry_cap(rec, now_ms, cap_s)
        if too_late is not None:
            summary.refused.append(LineNote(n, file_ids.get(rec.id, rec.id), too_late))
            continue
        by_realm.setdefault(rec.scope.realm, []).append((n, rec))
    for realm, recs in by_realm.items():
        if store is not None:  # by_realm is empty without a store
            _import_realm(store, realm, recs, claimed, changes, summary, progress, file_ids)
    ledger = parsed.ledger
    if not checked.verified and not allow_ledger:
        summary.refused += [LineNote(n, None, "a ledger line from an unverified file (pass --allow-ledger to index it)")
                            for n, _ in ledger]
        ledger = []
    _import_ledger(runtime, ledger, summary)
    summary.refused.sort(key=lambda note: note.line)
    summary.downgraded.sort(key=lambda note: note.line)
    summary.duplicates.sort(key=lambda note: note.line)
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


def _import_realm(store: AgentMemoryStore, realm: str, recs: list[tuple[int, MemoryRecord]],
                  claimed: dict[str, TrustTier], changes: dict[int, LineNote], summary: ImportSummary,
                  progress: Callable[[int], None] | None, file_ids: dict[str, str]) -> None:
    """Land ``realm``'s records (line number, record) as the domain's restore plan says
    (:func:`~meta_memory.agent_memory.import_plan.plan_restore`), a batch at a time, and report;
    ``progress`` hears of each batch, then of the records skipped as present, conflicting or refused.
    ``claimed`` holds each record's trust as the file stated it (a lowered one is counted);
    ``changes`` the downgrade of each line that had one, reported for the lines that land (a line
    skipped as present, conflicting or refused wrote nothing, so nothing of it was downgraded);
    ``file_ids`` the id each re-issued record had in the file (a refused line is named by it)."""
    plan = plan_restore(store, realm, recs, file_ids)
    summary.refused += [LineNote(n, file_ids.get(memory_id, memory_id), why) for n, memory_id, why in plan.refused]
    summary.skipped_present += plan.present
    summary.conflicts += plan.conflicts
    summary.duplicates += [replace(d, memory_id=file_ids.get(d.memory_id, d.memory_id)) for d in plan.duplicates]
    rationale = "import" if summary.verified else "import (unverified file)"
    for batch in plan.batches():
        # read again and written in one transaction: what changed since the plan is reported as it is found
        landing = apply_restore(store, realm, batch, rationale=rationale, plan=plan)
        summary.skipped_present += landing.present
        summary.conflicts += landing.conflicts
        summary.duplicates += [replace(d, memory_id=file_ids.get(d.memory_id, d.memory_id))
                               for d in landing.duplicates]
        landed = landing.receipt.records if landing.receipt is not None else {}
        for n, rec in landing.landed:
            if landed[rec.id].trust != claimed.get(rec.id, rec.trust):
                summary.trust_lowered += 1
            if n in changes:
                summary.downgraded.append(changes[n])
        if landing.landed:
            summary.created[realm] = summary.created.get(realm, 0) + len(landing.landed)
        if progress is not None:
            progress(len(batch))
    if progress is not None and len(plan.fresh) < len(recs):
        progress(len(recs) - len(plan.fresh))

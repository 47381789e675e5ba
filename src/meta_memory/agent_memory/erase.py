"""Erase: a record's content removed for good, and kept out (beyond the spec, next to ``forget``).

``forget`` keeps a tombstone (the spec's rule: reviewers may still read it). Erase is for privacy
requests and mistakes: it removes a record **and its content closure** — every version of its
supersede chain, every record derived from any of them (a released successor, a promoted copy),
following links both ways within the realm, and every other record of the same scope holding the
same content (an older tombstoned copy) — from every place that holds content, in one transaction:

- the record rows (title, body, description, tags, provenance) and their full-text and vector rows;
- the injection-ledger rows, dream usage-audit verdicts (with their rationales) and held forgets that
  name them, their promotions and the staged batches that carry them;
- the audit rows' details for them (replaced by ``{"erased": true}``);
- the dream runs' notes on them (a verdict's rationale, a contradiction's reason: :func:`scrub_dream_detail`);
- proposals holding the same content, proposed from or into a scope the closure reached; erasing an
  identity also takes every proposal it made and its exit-interview harvests (their causes);

and leaves one ``erase`` audit row per record or proposal with what an audit needs: the id, scope,
content hash, who erased it, when, and the caller's reason (refused when it holds a secret). The
**erasure register** (``erasures``: ids, scopes, content hashes and folded hashes, never content) keeps it gone: every write — remember, a batch, the
recorder tool, an import, the markdown import, a proposal, a promotion, a review — is refused
(``AgentMemoryError("erased")``) when it would bring back an erased id, or erased content into the
scope it was erased from (compared by :func:`~meta_memory.agent_memory.hashing.content_hash` of the
normalised title and body, the hash the exact-duplicate check uses, and by three folded hashes:
:func:`~meta_memory.agent_memory.hashing.skeleton_content_hash` (fold 3: look-alike letters of other
scripts read as the Latin letters they look like, Cyrillic ``"а"`` as ``a``, what fold 2 folds, and every
whitespace character taken out),
:func:`~meta_memory.agent_memory.hashing.casefolded_content_hash` (fold 2: whitespace, invisible
characters, NFKC compatibility forms such as full-width letters, and case folded) and, for the rows
registered before the register kept fold 2,
:func:`~meta_memory.agent_memory.hashing.folded_content_hash` (fold 1: whitespace and invisible
characters only). Content that differs from erased content only in what the row's folds fold is the
same erased content. Residuals: an erasure registered before fold 3 (schema migration 22) keeps its
exact, fold-1 and fold-2 hashes only (the content is gone: nothing to rehash), so it refuses no look-alike
spelling of its content, nor that content with its whitespace taken out; one registered before fold 2
(migration 15) keeps its exact and fold-1 hashes only, so it refuses the case and width variants only
of content that was erased in lower case and NFKC form; one registered before fold 1 (migration 12)
matches by the exact hash, and folded forms only of content erased in folded form).

The **field-level register** (``erasure_texts``, migration 23) keeps erased text out of every other field:
an erase registers each erased record's body and description on its own (:func:`erased_texts`,
:func:`field_hashes`: every hash :func:`~meta_memory.agent_memory.hashing.erasure_hashes` gives of the text
under an empty title), and every write above holds each text field it would show (:func:`shown_texts`:
title, body, description, each tag, every metadata key and string) against them, in the scopes the pair
rule names. Fields shorter than :data:`MIN_FIELD_CHARS` characters or :data:`MIN_FIELD_WORDS` words once
folded are neither registered nor checked. The content closure also takes every record of the scope
showing a registered text in any field. An erasure registered before migration 23 has no field-level row.

Erasure never waits on a reviewer: a record of the closure under quarantine review is erased with the
rest, in the same transaction, and its review closes as erased (its ``erase`` audit row carries
``quarantine: "erased"``; the service publishes a ``memory.quarantine.verdict`` event with verdict
``erased`` after the commit). A closure holding a record or proposal that a *pending gated promotion*
is waiting on is refused (``review_pending``): that decision is in flight, decide it first.

After the commit, SQLite rewrites its full-text index (``optimize``), and every connection runs with
``secure_delete`` so freed pages are zeroed; the WAL is checkpointed and truncated; an imported legacy
markdown file (``*.md.imported``) loses the erased records' sections (the whole file, for an identity
erase). PostgreSQL deletes the rows in the same transaction (and the full-text terms no active record
holds); the bytes leave the data files when (auto)vacuum reclaims them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .hashing import ErasureHashes, canonical, erasure_hashes, fold_compat, fold_skeleton, fold_texts
from .model import MemoryRecord, Scope, StatusKind, metadata_strings

__all__ = ["Erasure", "ErasedRecord", "ErasedText", "EraseReport", "content_closure", "scrub_dream_detail",
           "MAX_ERASE_RECORDS", "MIN_FIELD_CHARS", "MIN_FIELD_WORDS", "erased_texts", "field_hashes", "shown_texts",
           "ErasureCheck", "ErasureRegister", "ErasedWrite", "erased_writes", "FieldIndex"]

#: The most records one erase may remove (a closure larger than this is refused, not cut).
MAX_ERASE_RECORDS = 100_000


@dataclass(frozen=True, slots=True)
class Erasure:
    """One row of the erasure register: the erased record's id (or an erased proposal's ``prop-...`` id),
    the scope its content lived in (``scope_kind``, ``scope_key`` as stored), its content hash, its fold-1
    hash (:func:`~meta_memory.agent_memory.hashing.folded_content_hash`; ``None`` for an erasure registered
    before the register kept it) and its fold-2 hash
    (:func:`~meta_memory.agent_memory.hashing.casefolded_content_hash`; ``None`` for an erasure registered
    before the register kept it) and its fold-3 hash
    (:func:`~meta_memory.agent_memory.hashing.skeleton_content_hash`; ``None`` likewise). All are ``""``
    for an erasure that keeps out no content."""

    memory_id: str
    scope_kind: str
    scope_key: str
    content_hash: str
    folded_hash: str | None = None
    casefolded_hash: str | None = None
    skeleton_hash: str | None = None

    def covers(self, scope: Scope, *hashes: str) -> bool:
        """Whether this erasure forbids content of ``hashes`` (a write's
        :func:`~meta_memory.agent_memory.hashing.erasure_hashes`: exact, folds 1, 2 and 3) in ``scope``: the
        same scope, and the same content up to the folds the row was registered with (:meth:`matches`)."""
        return (self.scope_kind, self.scope_key) == scope.storage() and self.matches(*hashes)

    def matches(self, *hashes: str) -> bool:
        """Whether the content of ``hashes`` is this erasure's, in whatever scope (the rule of :meth:`covers`
        without the scope: an import refuses content erased anywhere in the installation): any of the
        write's hashes equal to any of the row's. Fold 2 folds what fold 1 folds (``fold_compat(t) ==
        fold_compat(fold_whitespace(t))``), and fold 3 folds what fold 1 folds and reads look-alike letters
        as Latin ones in text it then folds as fold 2 does, so a hash of one fold equal to a hash of another
        (or to an exact hash: one content is the other folded) still means content that reads as the
        erased content; an erasure without a fold-2 hash refuses its exact content, the re-spaced forms of
        it, and every form of content that was erased already folded; one without a fold-3 hash refuses
        no look-alike spelling (fold 3 also takes whitespace out, so its hash equals no other fold's but
        for text with no whitespace and no letter it maps)."""
        mine = (self.content_hash, self.folded_hash, self.casefolded_hash, self.skeleton_hash)
        return any(h and h in mine for h in hashes)


#: A text field is matched on its own (the field-level register, :func:`field_hashes`) only when its fold-2
#: form (:func:`~meta_memory.agent_memory.hashing.fold_compat`) holds at least this many characters...
MIN_FIELD_CHARS = 16
#: ...and at least this many words, or at least twice :data:`MIN_FIELD_CHARS` characters (unspaced text:
#: a CJK sentence, a long token). Shorter fields ("Meeting notes", a tag "project") are everyday words,
#: not the erased text: erasing a record does not refuse every later field that happens to repeat them.
MIN_FIELD_WORDS = 3


def _field_counts(text: str) -> bool:
    """Whether ``text`` is long enough to be matched on its own (:data:`MIN_FIELD_CHARS`, :data:`MIN_FIELD_WORDS`)."""
    folded = fold_compat(text)
    if len(folded) < MIN_FIELD_CHARS:
        return False
    return len(folded) >= 2 * MIN_FIELD_CHARS or len(folded.split(" ")) >= MIN_FIELD_WORDS


class _Texts(Protocol):
    """What a record shows (a :class:`~meta_memory.agent_memory.model.MemoryRecord` or a ``NewMemoryRecord``)."""

    @property
    def title(self) -> str: ...
    @property
    def body(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def tags(self) -> Sequence[str]: ...
    @property
    def metadata(self) -> Mapping[str, Any]: ...


def shown_texts(rec: _Texts) -> list[str]:
    """Every text field ``rec`` shows a reader or a model, each on its own: title, body, description, each
    tag, and every key and string of its metadata (:func:`~meta_memory.agent_memory.model.metadata_strings`,
    the secret scanner's reading; metadata is size-capped by the field rules). What a write's field-level
    register check and an erase's closure compare with the erased texts (:func:`erased_texts`)."""
    return [rec.title, rec.body, rec.description, *rec.tags, *(metadata_strings(dict(rec.metadata)) if rec.metadata else ())]


def erased_texts(rec: _Texts) -> list[str]:
    """The texts an erase of ``rec`` registers on their own, beside its (title, body) pair: its body, and its
    description when it has one (a title is a label, tags and metadata describe: the pair keeps those)."""
    return [rec.body, *((rec.description,) if rec.description else ())]


def field_hashes(texts: Iterable[str]) -> set[str]:
    """The field-level hashes of ``texts``: for each text long enough to count (:data:`MIN_FIELD_CHARS`,
    :data:`MIN_FIELD_WORDS`), every hash :func:`~meta_memory.agent_memory.hashing.erasure_hashes` gives of it
    as a body under an empty title (exact, and each fold: a fold added there is one here too). Empty when
    no text counts."""
    out: set[str] = set()
    for text in texts:
        if text and _field_counts(text):
            out.update(erasure_hashes("", text))
    return out


class FieldIndex:
    """The records of a scope by the text fields they show (:func:`shown_texts`), for an erase's field
    closure: which records may show, in some field, a text matching one of some erased texts on its own
    (:func:`field_hashes`). Built in one pass over the scope (:meth:`add`), cheaply: an ASCII field of at
    least :data:`MIN_FIELD_CHARS` characters is kept by its fold-3 text alone
    (:func:`~meta_memory.agent_memory.hashing.fold_skeleton`: for ASCII text, case folded and whitespace taken
    out; no other fold, no SHA-256), and any other field by its :func:`field_hashes`.

    :meth:`candidates` may answer more records than match (an ASCII field too short in words to count, or
    two fold-3 texts of one Python hash), never fewer: the caller keeps those whose fields' hashes meet the
    erased texts'. Never fewer, because every text :func:`field_hashes` hashes of an ASCII field (the field
    and its folds 1, 2 and 3: :func:`~meta_memory.agent_memory.hashing.fold_texts`) has the field's fold-3
    text as its own, and a hash of it equal to the hash of a fold of an erased text means that text equals
    the fold (read in NFC: :func:`~meta_memory.agent_memory.hashing.canonical`), whose fold-3 text
    :meth:`candidates` looks up (:func:`_fold3_keys`)."""

    __slots__ = ("_ascii", "_other")

    def __init__(self) -> None:
        #: Python's hash of an ASCII field's fold-3 text -> the id showing it (a list when several do)
        self._ascii: dict[int, str | list[str]] = {}
        #: a field hash of a non-ASCII field -> the ids showing it
        self._other: dict[str, list[str]] = {}

    def add(self, memory_id: str, texts: Iterable[str]) -> None:
        """Index record ``memory_id`` showing ``texts`` (:func:`shown_texts`)."""
        index = self._ascii
        for text in texts:
            if text.isascii():
                if len(text) < MIN_FIELD_CHARS:  # fold 2 of ASCII text is never longer: it does not count
                    continue
                key = hash(fold_skeleton(text))
                held = index.get(key)
                if held is None:
                    index[key] = memory_id
                elif isinstance(held, list):
                    held.append(memory_id)
                elif held != memory_id:
                    index[key] = [held, memory_id]
            else:
                for h in field_hashes((text,)):
                    self._other.setdefault(h, []).append(memory_id)

    def candidates(self, erased: Iterable[str]) -> set[str]:
        """The ids of the indexed records that may show one of the ``erased`` texts (an erased body or
        description: :func:`erased_texts`) in a field, by :func:`field_hashes`; a superset (see the class)."""
        erased = [t for t in erased if t and _field_counts(t)]
        out: set[str] = set()
        for key in {hash(k) for t in erased for k in _fold3_keys(t)}:
            held = self._ascii.get(key)
            if held is not None:
                out.update((held,) if isinstance(held, str) else held)
        for h in field_hashes(erased):
            out.update(self._other.get(h, ()))
        return out


def _fold3_keys(text: str) -> set[str]:
    """The fold-3 texts of every text :func:`field_hashes` hashes of ``text`` (its folds:
    :func:`~meta_memory.agent_memory.hashing.fold_texts`), each as written and in NFC (what the hash reads)."""
    return {fold_skeleton(v) for f in fold_texts(text) for v in (f, canonical(f))}


@dataclass(frozen=True, slots=True)
class ErasedText:
    """One row of the field-level erasure register (``erasure_texts``): a hash of an erased record's body or
    description on its own (:func:`field_hashes`), the scope it was erased from, and the erased id."""

    hash: str
    scope_kind: str
    scope_key: str
    memory_id: str

    def covers(self, scope: Scope, hashes: Collection[str]) -> bool:
        """Whether this row forbids a write holding a field of ``hashes`` (:func:`field_hashes`) in ``scope``."""
        return (self.scope_kind, self.scope_key) == scope.storage() and self.hash in hashes


class ErasureRegister(Protocol):
    """The reads of a realm's erasure register a write's check needs (a store's record reader, a write
    transaction), in the caller's transaction."""

    def erased(self, ids: Collection[str], content_hashes: Collection[str]) -> list[Erasure]:
        """The register's rows naming any of ``ids`` or matching any of ``content_hashes``
        (:func:`~meta_memory.agent_memory.hashing.erasure_hashes`) by their finest or fold-3 hash."""
        ...

    def erased_texts(self, hashes: Collection[str]) -> list[ErasedText]:
        """The field-level register's rows holding any of ``hashes`` (:func:`field_hashes`)."""
        ...


@dataclass(frozen=True, slots=True)
class ErasureCheck:
    """One write the erasure register must allow: op ``op_index`` brings content of ``hashes`` (exact,
    folds 1, 2 and 3: :func:`~meta_memory.agent_memory.hashing.erasure_hashes`) into each of ``scopes`` (its
    target, and the identity scope of an agent author), under ``memory_id`` when the write names its own id
    (a restore, a markdown import)."""

    op_index: int
    scopes: tuple[Scope, ...]
    hashes: ErasureHashes
    memory_id: str | None = None
    #: every text field the write shows (:func:`shown_texts`), each held to the field-level register on its
    #: own; hashed only when the register is consulted
    texts: tuple[str, ...] = ()

    @classmethod
    def of(cls, op_index: int, scopes: tuple[Scope, ...], title: str, body: str, content_hash: str,
           memory_id: str | None = None, texts: Sequence[str] = ()) -> ErasureCheck:
        """The check of a write of normalised ``title`` and ``body`` (whose content hash is ``content_hash``)
        showing ``texts`` (its title, body, description, tags and metadata strings: :func:`shown_texts`)."""
        return cls(op_index, scopes, erasure_hashes(title, body, content_hash), memory_id, tuple(texts))


@dataclass(frozen=True, slots=True)
class ErasedWrite:
    """A check the erasure register forbids (:func:`erased_writes`): its id was erased (``scope`` is
    ``None``), or its content, by the (title, body) pair or by one of its text fields, was erased from
    ``scope`` (the first of the check's scopes that is so)."""

    check: ErasureCheck
    scope: Scope | None


def erased_writes(register: ErasureRegister, checks: Sequence[ErasureCheck]) -> list[ErasedWrite]:
    """The checks of ``checks`` the erasure register forbids, in their order: those whose ``memory_id`` the
    register holds, and those bringing erased content into a scope it was erased from (the pair rows,
    :meth:`Erasure.covers`, or a text field matching a field-level row on its own, :meth:`ErasedText.covers`).
    The one matcher of every live write (the validator's :func:`~meta_memory.agent_memory.validator.refuse_erased`,
    the legacy markdown import): one lookup of the pair rows for all checks, and one of the field-level rows
    when any field counts (:func:`field_hashes`)."""
    if not checks:
        return []
    rows = register.erased([c.memory_id for c in checks if c.memory_id is not None], {h for c in checks for h in c.hashes})
    fields = [field_hashes(c.texts) for c in checks]
    wanted = set().union(*fields)
    texts = register.erased_texts(wanted) if wanted else []
    if not rows and not texts:
        return []
    ids = {r.memory_id for r in rows}
    out: list[ErasedWrite] = []
    for c, mine in zip(checks, fields, strict=True):
        if c.memory_id is not None and c.memory_id in ids:
            out.append(ErasedWrite(c, None))
            continue
        scope = next((s for s in c.scopes if any(r.covers(s, *c.hashes) for r in rows)
                      or any(t.covers(s, mine) for t in texts)), None)
        if scope is not None:
            out.append(ErasedWrite(c, scope))
    return out


@dataclass(frozen=True, slots=True)
class ErasedRecord:
    """What stays of an erased record: ``{memory_id, scope, content_hash, status}`` (status before erase)."""

    memory_id: str
    scope: Scope
    content_hash: str
    status: str

    @property
    def quarantined(self) -> bool:
        """Whether the record awaited quarantine review when it was erased (its review closed as erased)."""
        return self.status == StatusKind.QUARANTINED.value

    def to_json(self) -> dict[str, Any]:
        return {"memory_id": self.memory_id, "scope": self.scope.to_json(), "content_hash": self.content_hash,
                "status": self.status}


@dataclass(frozen=True, slots=True)
class EraseReport:
    """The result of an erase (or of its dry run): the records, and when (``None`` for a dry run)."""

    records: tuple[ErasedRecord, ...]
    dry_run: bool
    erased_at_ms: int | None
    #: the ids of the proposals erased with the records (an identity's own, or holding erased content)
    proposals: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        scopes = sorted({r.scope.describe() for r in self.records})
        return {"dry_run": self.dry_run, "erased_at_ms": self.erased_at_ms, "count": len(self.records),
                "scopes": scopes, "records": [r.to_json() for r in self.records], "proposals": list(self.proposals)}


def _neighbours(rec: MemoryRecord) -> Iterable[str]:
    if rec.supersedes:
        yield rec.supersedes
    if rec.status.kind is StatusKind.SUPERSEDED and rec.status.detail:
        yield rec.status.detail
    yield from rec.derived_from


def content_closure(
    start: Iterable[MemoryRecord],
    get: Callable[[str], MemoryRecord | None],
    children: Callable[[list[str]], list[MemoryRecord]],
    same_content: Callable[[list[MemoryRecord]], list[MemoryRecord]] | None = None,
) -> list[MemoryRecord]:
    """Every record linked to ``start`` by supersede or derived-from edges, in either direction, and
    (with ``same_content``) every record of the same scope holding the same content as one of them.

    ``get(id)`` reads one record; ``children(ids)`` the records that supersede or derive from any of
    ``ids``; ``same_content(records)`` the records sharing a scope and content hash with any of
    ``records``. Raises ``ValueError`` past :data:`MAX_ERASE_RECORDS`.
    """
    found: dict[str, MemoryRecord] = {}
    frontier = list(start)
    while frontier:
        batch = [r for r in frontier if r.id not in found]
        for r in batch:
            found[r.id] = r
        if len(found) > MAX_ERASE_RECORDS:
            raise ValueError(f"the content closure holds more than {MAX_ERASE_RECORDS} records")
        nxt: list[MemoryRecord] = []
        for r in batch:
            for rid in _neighbours(r):
                if rid not in found:
                    other = get(rid)
                    if other is not None:
                        nxt.append(other)
        ids = [r.id for r in batch]
        for i in range(0, len(ids), 500):
            nxt.extend(c for c in children(ids[i:i + 500]) if c.id not in found)
            if same_content is not None:
                nxt.extend(c for c in same_content(batch[i:i + 500]) if c.id not in found)
        frontier = nxt
    return list(found.values())


_TOKEN = re.compile(r"[^\s:,;()'\"]+")


def scrub_dream_detail(detail: Any, ids: Collection[str], harvest_identity: str | None = None) -> Any | None:
    """A dream run's ``detail`` without what it noted about erased content, or ``None`` when it names none.

    A verdict on an erased record or proposal (``target`` in ``ids``), or on a harvest of
    ``harvest_identity`` (``<identity>@<ms>``), keeps its category, target and verdict and gains
    ``erased: true``: its rationale and other notes go. A contradiction naming an erased record keeps
    its ids and loses its entity, topic and reason. A refusal note naming one becomes ``"erased"``.
    Ids stay: like the timeline's, they are not content.
    """
    if not isinstance(detail, dict):
        return None
    prefix = f"{harvest_identity}@" if harvest_identity is not None else None

    def hit(value: Any) -> bool:
        return isinstance(value, str) and (value in ids or (prefix is not None and value.startswith(prefix)))

    changed = False
    out = dict(detail)
    verdicts = detail.get("verdicts")
    if isinstance(verdicts, list):
        kept: list[Any] = []
        for v in verdicts:
            if isinstance(v, dict) and (hit(v.get("target")) or hit(v.get("record_id"))) and not v.get("erased"):
                v = {k: v[k] for k in ("category", "target", "verdict") if k in v} | {"erased": True}
                changed = True
            kept.append(v)
        out["verdicts"] = kept
    conflicts = detail.get("conflicts")
    if isinstance(conflicts, list):
        kept = []
        for c in conflicts:
            if isinstance(c, dict) and not c.get("erased") and any(hit(r) for r in c.get("record_ids") or ()):
                c = {k: c[k] for k in ("record_ids", "operational", "signalled") if k in c} | {"erased": True}
                changed = True
            kept.append(c)
        out["conflicts"] = kept
    refused = detail.get("refused")
    if isinstance(refused, list):
        kept = []
        for note in refused:
            if isinstance(note, str) and any(hit(t) for t in _TOKEN.findall(note)):
                note = "erased"
                changed = True
            kept.append(note)
        out["refused"] = kept
    return out if changed else None

"""``meta-memory export``: a state's memory as JSON Lines (:mod:`.format`), every line signed (:mod:`.signing`).

Reads through the store interface (:meth:`~meta_memory.agent_memory.store.base.AgentMemoryStore.records_page`,
one page per read snapshot) and the ledger's query, so it works on SQLite and PostgreSQL alike and
never writes. Records come in insertion order, which keeps every supersede chain oldest first.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

from ..agent_memory.model import Scope
from ..agent_memory.realm_list import no_such_realm
from ..agent_memory.store.base import AgentMemoryStore
from ..errors import AgentMemoryError
from ..identity import parse_identity
from ..runtime import Runtime
from .format import FORMAT, VERSION, record_line
from .signing import LineSigner

__all__ = ["ExportSummary", "export_jsonl"]

PAGE = 1000


@dataclass
class ExportSummary:
    """What an export wrote: records per realm, ledger assertions and conflict signals, and the id of the
    key that signed it."""

    records: dict[str, int] = field(default_factory=dict)
    #: realms an identity's export left out because they cannot be read now: ``{realm: reason}``
    skipped_realms: dict[str, str] = field(default_factory=dict)
    assertions: int = 0
    conflicts: int = 0
    key_id: str = ""

    @property
    def total_records(self) -> int:
        return sum(self.records.values())


class _Lines:
    """Writes signed lines, numbering them as they stand in the file."""

    def __init__(self, out: IO[str], signer: LineSigner) -> None:
        self.out = out
        self.signer = signer
        self.count = 0

    def write(self, obj: dict[str, Any]) -> None:
        self.count += 1
        self.out.write(self.signer.sign(self.count, json.dumps(obj, ensure_ascii=False, separators=(",", ":"))) + "\n")


def export_jsonl(
    runtime: Runtime,
    out: IO[str],
    *,
    signer: LineSigner,
    realm: str | None = None,
    identity: str | None = None,
    ledger: bool = True,
    progress: Callable[[int], None] | None = None,
) -> ExportSummary:
    """Write the header, then the records of ``realm`` (all realms when ``None``; only ``identity``'s
    scope when given), then — when ``ledger`` — every assertion and conflict signal, then the closing
    line; every line signed by ``signer``.

    ``progress(n)`` is called after each page with the number of records just written. Raises
    ``ValueError`` when ``identity`` is given without agent memory, or for an unknown realm.

    A realm that cannot be read (its store's ``realm_problem``: damaged, cannot be opened, a name that
    breaks the realm-name rule) is looked for before anything is written. An export of every realm then
    fails closed: ``AgentMemoryError`` (its reason, -32040) naming the realm, nothing written, since a
    backup that silently lacks a realm loses it. An export of one ``identity`` across every realm leaves
    it out and says so: the header's ``skipped_realms`` (``[{realm, reason}]``) and
    :attr:`ExportSummary.skipped_realms`. A realm named by ``realm`` is read as any call naming it is.
    """
    if identity is not None:  # held to the identity rule as meta/storage/export holds it (a roster id: its name)
        identity = parse_identity(identity)
    feature = runtime.agent_memory
    store = feature.store if feature is not None else None
    if store is None and identity is not None:
        raise ValueError("agent memory is disabled in this configuration: there are no records to export")
    realms = store.list_realms() if store is not None else []
    if realm is not None:
        if realm not in realms:
            raise ValueError(no_such_realm(realm, realms))
        realms = [realm]
    summary = ExportSummary(key_id=signer.key.key_id)
    if store is not None and realm is None:
        realms = _readable(store, realms, identity, summary)
    lines = _Lines(out, signer)
    header: dict[str, Any] = {"type": "header", "format": FORMAT, "version": VERSION,
                              "exported_at_ms": runtime.clock.now_ms(), "realms": realms, "identity": identity,
                              "export_id": signer.export_id, "key_id": signer.key.key_id}
    if summary.skipped_realms:
        header["skipped_realms"] = [{"realm": r, "reason": why} for r, why in summary.skipped_realms.items()]
    lines.write(header)
    for name in realms:
        if store is not None:  # realms is empty without a store
            summary.records[name] = _export_realm(store, name, identity, lines, progress)
    if ledger and runtime.ledger is not None:
        result = runtime.ledger.query()
        for a in result.assertions:
            lines.write({"type": "assertion", "entity": a.entity, "topic": a.topic, "store": a.store, "fact": a.fact,
                         "metadata": a.metadata, "indexed_at_ms": a.indexed_at_ms})
        for c in result.conflicts:
            lines.write({"type": "conflict", "entity": c.entity, "topic": c.topic, "store": c.store,
                         "reason": c.reason, "updated_at_ms": c.updated_at_ms})
        summary.assertions, summary.conflicts = len(result.assertions), len(result.conflicts)
    lines.write({"type": "end", "lines": lines.count})
    return summary


def _readable(store: AgentMemoryStore, realms: list[str], identity: str | None,
              summary: ExportSummary) -> list[str]:
    """``realms`` less those that cannot be read, each noted in ``summary`` (an identity's export); an
    export of every realm refuses instead (see :func:`export_jsonl`)."""
    kept: list[str] = []
    for name in realms:
        problem = store.realm_problem(name)
        if problem is None:
            kept.append(name)
            continue
        reason = "invalid_name" if problem.reason == "invalid_record" else problem.reason
        if identity is None:
            why = problem.message.removeprefix(AgentMemoryError.PREFIXES.get(problem.reason, ""))
            raise AgentMemoryError(problem.reason, (
                f"export refused: realm '{name}' cannot be read ({why}). An export of every realm would "
                "lack it: restore or move away its database (see `meta-memory doctor`), or export the "
                "other realms one at a time with --realm"))
        summary.skipped_realms[name] = reason
    return kept


def _export_realm(store: AgentMemoryStore, realm: str, identity: str | None, out: _Lines,
                  progress: Callable[[int], None] | None) -> int:
    """Write every record of ``realm`` (of ``identity``'s scope when given), a page at a time; the count."""
    scope = Scope.identity(realm, identity) if identity is not None else None
    after, count = 0, 0
    while True:
        page = store.records_page(realm, after=after, limit=PAGE, scope=scope)
        now = store.clock.now_ms()
        for cursor, rec in page:
            out.write(record_line(rec.settled(now)))  # an expired record is written as its tombstone
            after = cursor
        count += len(page)
        if progress is not None and page:
            progress(len(page))
        if len(page) < PAGE:
            return count

"""``meta-memory import --from langgraph SOURCE``: the items of a LangGraph ``SqliteStore`` or ``PostgresStore``.

``SOURCE`` is the SQLite database file of a ``SqliteStore``, or the PostgreSQL DSN of a ``PostgresStore``
(``postgresql://...`` or ``host=... dbname=...``; its ``search_path`` option names the schema). The
store's ``store`` table is read directly and read-only (a read-only SQLite connection, a ``READ ONLY``
PostgreSQL transaction), so neither LangGraph nor its checkpoint packages are needed, and the source is
never migrated or changed.

Each item ``(namespace, key, value)`` becomes the record :class:`~meta_memory.integrations.langgraph.MetaMemoryStore`
writes for it (:func:`~meta_memory.integrations.langgraph_items.item_record`: title, JSON envelope body,
``lg:*`` tags), so after the import a ``MetaMemoryStore`` over the same realm and identity ``get``\\ s,
``search``\\ es and lists the same items. The item's ``created_at`` / ``updated_at`` are the record's, its
``expires_at`` the record's expiry (and its ``ttl_minutes`` in the body, which a read re-arms); its
identity is ``identity`` (default ``"langgraph"``, the store's) or, with ``identity_segment=i``, the
namespace's ``i``-th label (as the store reads it). The provenance names ``langgraph`` and the item
(``["<label>", ..., "<key>"]`` as JSON). An item past its ``expires_at`` is skipped (LangGraph no longer
answers it).

A password in the DSN is never printed: :func:`redact_dsn` is what every message shows.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import strict_json
from ..agent_memory.fields import MAX_BODY_BYTES
from ..integrations.langgraph_items import identity_label, item_record, key_tag
from ..storage.sqlite_uri import file_uri
from .foreign import ForeignNote, ForeignRecord, ForeignSourceError

__all__ = ["SYSTEM", "LangGraphSource", "is_dsn", "read_langgraph", "redact_dsn"]

SYSTEM = "langgraph"
_COLUMNS = ("prefix", "key", "value", "created_at", "updated_at")
_URL_PASSWORD = re.compile(r"(://[^:/@\s]*:)[^@\s]*@")
_KV_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)", re.IGNORECASE)


def is_dsn(source: str) -> bool:
    """Whether ``source`` names a PostgreSQL database rather than a SQLite file."""
    return source.startswith(("postgresql://", "postgres://")) or bool(re.search(r"\b(host|dbname)\s*=", source))


def redact_dsn(text: str, dsn: str | None = None) -> str:
    """``text`` with every password of a DSN hidden (``postgresql://u:***@h/db``, ``password=***``),
    and the literal password of ``dsn`` wherever else it occurs."""
    out = _URL_PASSWORD.sub(r"\1***@", text)
    out = _KV_PASSWORD.sub(r"\1***", out)
    if dsn is not None:
        for secret in _passwords(dsn):
            out = out.replace(secret, "***")
    return out


def _passwords(dsn: str) -> list[str]:
    found = [m.group(0)[len(m.group(1)):-1] for m in _URL_PASSWORD.finditer(dsn)]
    found += [m.group(2).strip("'") for m in _KV_PASSWORD.finditer(dsn)]
    try:
        from psycopg.conninfo import conninfo_to_dict

        password = conninfo_to_dict(dsn).get("password")
        if isinstance(password, str):
            found.append(password)
    except Exception:  # noqa: BLE001 - no psycopg, or a DSN it cannot parse: the patterns above stand
        pass
    return [p for p in found if len(p) >= 3]


class LangGraphSource:
    """An open, read-only LangGraph store: :meth:`items` yields its rows; :attr:`shown` is the
    source as messages name it (a DSN's password hidden)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.dsn = is_dsn(source)
        self.shown = redact_dsn(source, source) if self.dsn else source
        self._conn: Any = None
        self._open()

    def _open(self) -> None:
        if self.dsn:
            try:
                import psycopg
            except ImportError:
                raise ForeignSourceError("reading a LangGraph PostgresStore needs psycopg: "
                                         "pip install 'meta-memory[postgres]'") from None
            try:
                self._conn = psycopg.connect(self.source, autocommit=False)
                self._conn.execute("SET TRANSACTION READ ONLY")
                cols = {r[0] for r in self._conn.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = 'store' "
                    "AND table_schema = ANY(current_schemas(false))")}
            except psycopg.Error as exc:
                self.close()
                raise ForeignSourceError(f"cannot read the LangGraph PostgresStore at {self.shown}: "
                                         f"{redact_dsn(str(exc).strip().splitlines()[0], self.source)}") from None
        else:
            path = Path(self.source)
            if not path.is_file():
                raise ForeignSourceError(f"{path}: no such LangGraph SqliteStore database")
            try:
                self._conn = sqlite3.connect(file_uri(path.resolve(), "ro"), uri=True)
                cols = {r[1] for r in self._conn.execute("PRAGMA table_info(store)")}
            except sqlite3.Error as exc:
                self.close()
                raise ForeignSourceError(f"{path}: not a readable SQLite database ({exc})") from None
        if not set(_COLUMNS) <= cols:
            self.close()
            raise ForeignSourceError(f"{self.shown}: not a LangGraph store (no table store with "
                                     f"{', '.join(_COLUMNS)})")
        self._expiry = "expires_at" in cols
        self._ttl = "ttl_minutes" in cols

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> LangGraphSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def rows(self) -> Iterator[tuple[Any, Any, Any, Any, Any, Any, Any, Any]]:
        """``(prefix, key, value, created_at, updated_at, expires_at, ttl_minutes, oversize)`` in ``(prefix, key)``
        order. ``oversize`` is true when one of ``prefix``, ``key`` and ``value`` is longer than a record body
        (``MAX_BODY_BYTES`` characters): such a row is never fetched whole (its value is ``None``, its prefix and
        key their first 200 characters, to name it)."""
        expiry = "expires_at" if self._expiry else "NULL"
        ttl = "ttl_minutes" if self._ttl else "NULL"
        # the value as text on both backends: a PostgreSQL ``jsonb`` would arrive decoded by the driver,
        # before its size is checked and outside the per-line refusal of one nested too deep; the database
        # measures each field first, so a row of a gigabyte is refused without being read into memory
        big = (f"(length(prefix) > {MAX_BODY_BYTES} OR length(key) > {MAX_BODY_BYTES} "
               f"OR length(CAST(value AS text)) > {MAX_BODY_BYTES})")
        sql = (f"SELECT CASE WHEN {big} THEN substr(prefix, 1, 200) ELSE prefix END, "
               f"CASE WHEN {big} THEN substr(key, 1, 200) ELSE key END, "
               f"CASE WHEN {big} THEN NULL ELSE CAST(value AS text) END, created_at, updated_at, {expiry}, {ttl}, "
               f"{big} FROM store ORDER BY prefix, key")
        if self.dsn:
            import psycopg

            try:
                with self._conn.cursor(name="meta_memory_import") as cur:
                    cur.itersize = 500
                    cur.execute(sql)
                    yield from cur
            except psycopg.Error as exc:
                raise ForeignSourceError(f"reading {self.shown} failed: "
                                         f"{redact_dsn(str(exc).strip().splitlines()[0], self.source)}") from None
        else:
            try:
                yield from self._conn.execute(sql)
            except sqlite3.Error as exc:
                raise ForeignSourceError(f"reading {self.shown} failed: {exc}") from None


def _ms(value: Any) -> int | None:
    """Epoch ms of a store timestamp: a ``datetime`` (PostgreSQL) or SQLite's ``YYYY-MM-DD HH:MM:SS`` (UTC)."""
    if isinstance(value, str) and len(value) <= 64:
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return int(value.timestamp() * 1000)


def _value(raw: Any) -> dict[str, Any]:
    if isinstance(raw, (bytes, str)):
        if len(raw) > MAX_BODY_BYTES:
            raise ValueError(f"value larger than the {MAX_BODY_BYTES}-byte record body")
        raw = strict_json.loads(raw)
    if not isinstance(raw, dict):
        raise ValueError(f"a LangGraph store value must be a dict (got {type(raw).__name__})")
    return raw


def read_langgraph(source: LangGraphSource, *, identity: str = "langgraph", identity_segment: int | None = None,
                   now_ms: int, skipped: list[ForeignNote]) -> Iterator[ForeignRecord | ForeignNote]:
    """The items of ``source``, one :class:`~.foreign.ForeignRecord` each (or a
    :class:`~.foreign.ForeignNote` refusing one: a value that is not a JSON object or is too large, a
    namespace label that cannot name an identity); expired items are appended to ``skipped``.
    Raises :class:`~.foreign.ForeignSourceError` when the store cannot be read."""
    for n, (prefix, key, raw, created, updated, expires, ttl, oversize) in enumerate(source.rows(), start=1):
        namespace = tuple(str(prefix).split(".")) if prefix else ()
        source_id = json.dumps([*namespace, key if isinstance(key, str) else str(key)], ensure_ascii=False)
        shown = source_id[:200]
        if oversize:
            yield ForeignNote(n, shown, f"namespace, key or value larger than the {MAX_BODY_BYTES}-byte record "
                                        "body (not read)")
            continue
        expires_ms = _ms(expires)
        if expires_ms is not None and expires_ms <= now_ms:
            skipped.append(ForeignNote(n, shown, "expired in LangGraph"))
            continue
        try:
            value = _value(raw)
            if not isinstance(key, str):
                raise ValueError("the key is not text")
            owner = identity
            if identity_segment is not None:
                if len(namespace) <= identity_segment:
                    raise ValueError(f"the namespace does not reach label {identity_segment}, which names the identity")
                owner = identity_label(namespace[identity_segment])
            minutes = float(ttl) if isinstance(ttl, (int, float)) and not isinstance(ttl, bool) and ttl > 0 else None
            rec = item_record(namespace, key, value, None, minutes if expires_ms is not None else None)
            created_ms = _ms(created) or now_ms
            yield ForeignRecord(position=n, system=SYSTEM, source_id=source_id, identity=owner, title=rec.title,
                                body=rec.body, tags=rec.tags, metadata=rec.metadata, created_at_ms=created_ms,
                                updated_at_ms=max(_ms(updated) or created_ms, created_ms), expires_at_ms=expires_ms,
                                key_tag=key_tag(namespace, key))
        except ValueError as exc:
            yield ForeignNote(n, shown, str(exc).splitlines()[0] if str(exc) else "invalid value")
        except RecursionError:
            yield ForeignNote(n, shown, "value nested too deep")

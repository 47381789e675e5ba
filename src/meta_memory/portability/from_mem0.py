"""``meta-memory import --from mem0 PATH``: an open-source mem0 installation's memories.

mem0 (``mem0.Memory`` with its local FAISS vector store) keeps each memory's payload in the vector
store's docstore, ``<collection>.json`` beside ``<collection>.faiss`` (older releases: ``<collection>.pkl``,
a pickle of ``(docstore, index_to_id)``), and every ``ADD``/``UPDATE``/``DELETE`` in a SQLite history
database (``history.db``). ``PATH`` is the docstore file, or a directory holding it (directly or in
``faiss/``); the history database is ``--mem0-history`` or ``history.db`` in that directory (or its
parent), optional.

Mapping (:class:`~.foreign.ForeignRecord`, one per docstore payload, in the docstore's order):

==================  ====================================================================================
mem0                meta-memory
==================  ====================================================================================
``data``            the body; the title is its first words (at most 8 words, 80 characters)
``user_id`` ...     the identity: ``identity_from`` names the payload field (``user_id``, the default,
                    ``agent_id`` or ``run_id``), or ``identity`` fixes one; it must be an identity as
                    written (no surrounding white space, no ``rt:<name>:<generation>`` form)
``created_at`` ...  ``created_at_ms`` / ``updated_at_ms`` (ISO 8601; a missing ``created_at`` is the
                    history's first event of the memory)
memory id           the provenance's ``imported_from: {"system": "mem0", "source_id": <id>}``
other payload keys  mem0's ``metadata`` (read, not stored yet: :func:`~.foreign.landing_op`)
deleted             a memory the history deletes is not imported (reported as skipped)
==================  ====================================================================================

Safety: the files are untrusted. Each is at most :data:`MAX_SOURCE_BYTES`, and what one holds is at most
:data:`MAX_SOURCE_VALUES` values (the docstore's JSON values or pickle opcodes, the history's rows), counted
before any is built: a file of tiny containers (``[[],[],...]``, a pickle of empty lists) would otherwise
unfold to 20 to 60 times its size in memory. The history is opened read-only; a legacy pickle is read by :class:`DocstoreUnpickler`, which resolves no class at all (the
file mem0 wrote holds only dicts, tuples, strings and numbers, which pickle builds without one), so a
pickle naming any callable (``os.system``) is refused before anything runs.
"""

from __future__ import annotations

import io
import pickle
import pickletools
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import strict_json
from ..identity import parse_identity
from ..storage.sqlite_uri import file_uri
from .foreign import ForeignNote, ForeignRecord, ForeignSourceError

__all__ = ["DocstoreUnpickler", "IDENTITY_FIELDS", "MAX_SOURCE_BYTES", "MAX_SOURCE_VALUES", "Mem0Source", "read_mem0",
           "SYSTEM"]

SYSTEM = "mem0"
#: The largest docstore or history file read (bytes).
MAX_SOURCE_BYTES = 256 * 1024 * 1024
#: The most values one docstore or history file may hold: JSON values (counted as an upper bound, every
#: ``[ { , :`` byte), pickle opcodes, history rows. About 100 bytes of memory each at worst, so a file
#: within both caps is read in at most a few hundred MiB beyond its size.
MAX_SOURCE_VALUES = 4_000_000
#: The payload fields that can name a memory's identity (``--identity-from``).
IDENTITY_FIELDS = ("user_id", "agent_id", "run_id")
#: Payload keys mem0 itself writes; every other key is the memory's metadata.
_OWN_KEYS = frozenset({"data", "hash", "created_at", "updated_at", "user_id", "agent_id", "run_id", "actor_id",
                       "role", "text_lemmatized", "memory", "id"})
_TITLE_WORDS, _TITLE_CHARS = 8, 80


class DocstoreUnpickler(pickle.Unpickler):
    """Reads mem0's legacy docstore pickle and nothing else: it resolves no global, so no class or
    callable can be named (``pickle.UnpicklingError`` instead); persistent ids are refused too."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"the docstore pickle names {module}.{name}; a mem0 docstore holds only "
                                     "dicts, lists, strings and numbers, so it is refused")

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("the docstore pickle holds a persistent id; refused")


@dataclass(frozen=True, slots=True)
class Mem0Source:
    """The files an import reads: the docstore and (optionally) the history database."""

    docstore: Path
    history: Path | None

    def describe(self) -> str:
        return f"{self.docstore}" + (f" and {self.history}" if self.history is not None else " (no history database)")


def locate(path: Path, *, collection: str = "mem0", history: Path | None = None) -> Mem0Source:
    """The docstore and history of the mem0 installation at ``path`` (see the module doc). Raises
    :class:`~.foreign.ForeignSourceError` naming what is missing."""
    if path.is_file():
        docstore = path
        base = path.parent
    elif path.is_dir():
        names = [f"{collection}.json", f"{collection}.pkl"]
        found = [d / n for d in (path, path / "faiss") for n in names if (d / n).is_file()]
        if not found:
            raise ForeignSourceError(f"no mem0 docstore ({' or '.join(names)}) in {path} or {path / 'faiss'} "
                                     "(pass the file itself, or --mem0-collection)")
        docstore = found[0]
        base = path
    else:
        raise ForeignSourceError(f"{path}: no such file or directory")
    if history is None:
        history = next((p for p in (base / "history.db", base.parent / "history.db") if p.is_file()), None)
    elif not history.is_file():
        raise ForeignSourceError(f"{history}: no such history database")
    return Mem0Source(docstore, history)


def _bounded(path: Path) -> bytes:
    try:
        size = path.stat().st_size
        if size > MAX_SOURCE_BYTES:
            raise ForeignSourceError(f"{path} is {size} bytes, over the {MAX_SOURCE_BYTES}-byte limit of a mem0 file")
        with path.open("rb") as f:
            data = f.read(MAX_SOURCE_BYTES + 1)
    except OSError as exc:
        raise ForeignSourceError(f"{path}: {exc.strerror or exc}") from None
    if len(data) > MAX_SOURCE_BYTES:
        raise ForeignSourceError(f"{path} is over the {MAX_SOURCE_BYTES}-byte limit of a mem0 file")
    return data


def _too_many_values(path: Path) -> ForeignSourceError:
    return ForeignSourceError(f"{path} holds over {MAX_SOURCE_VALUES} values, the limit of a mem0 file "
                              "(refused before reading them)")


def _check_values(path: Path, data: bytes) -> None:
    """Refuse ``data`` (the file ``path``) holding more than :data:`MAX_SOURCE_VALUES` values, before any is
    built: for a pickle its opcodes (each builds or places at most one value), read without running any and
    stopping at the cap; for JSON an upper bound, every byte that can open a value (``[ {``) or precede one
    (``, :``), strings included."""
    if path.suffix == ".pkl":
        try:
            for count, _ in enumerate(pickletools.genops(data), start=1):
                if count > MAX_SOURCE_VALUES:
                    raise _too_many_values(path)
        except ForeignSourceError:
            raise
        except Exception:  # noqa: BLE001 - damage of an untrusted pickle: the unpickler refuses it next
            return
        return
    if sum(data.count(c) for c in (b"[", b"{", b",", b":")) > MAX_SOURCE_VALUES:
        raise _too_many_values(path)


def load_docstore(path: Path) -> dict[str, dict[str, Any]]:
    """``{memory id: payload}`` from a docstore file (JSON, or a legacy pickle through
    :class:`DocstoreUnpickler`). Raises :class:`~.foreign.ForeignSourceError` for a file that is not one,
    or over :data:`MAX_SOURCE_BYTES` or :data:`MAX_SOURCE_VALUES`."""
    data = _bounded(path)
    _check_values(path, data)
    if path.suffix == ".pkl":
        try:
            loaded = DocstoreUnpickler(io.BytesIO(data)).load()
        except pickle.UnpicklingError as exc:
            raise ForeignSourceError(f"{path}: refused: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - any other damage of an untrusted pickle is "not a docstore"
            raise ForeignSourceError(f"{path}: not a mem0 docstore pickle ({type(exc).__name__})") from None
        if not isinstance(loaded, tuple) or len(loaded) != 2:
            raise ForeignSourceError(f"{path}: not a mem0 docstore pickle (expected (docstore, index_to_id))")
        docstore = loaded[0]
    else:
        try:
            loaded = strict_json.loads(data)
        except ValueError as exc:
            raise ForeignSourceError(f"{path}: not JSON ({str(exc).splitlines()[0]})") from None
        except RecursionError:
            raise ForeignSourceError(f"{path}: not a mem0 docstore (JSON nested too deep)") from None
        docstore = loaded.get("docstore") if isinstance(loaded, dict) else None
    if not isinstance(docstore, dict) or not all(isinstance(k, str) and isinstance(v, dict) for k, v in docstore.items()):
        raise ForeignSourceError(f"{path}: not a mem0 docstore (expected an object of memory id -> payload object)")
    return docstore


@dataclass(frozen=True, slots=True)
class _History:
    deleted: frozenset[str]
    first_seen: dict[str, str]


def load_history(path: Path | None) -> _History:
    """The memories the history deletes and each memory's first event time. Read-only; raises
    :class:`~.foreign.ForeignSourceError` for a file that is not a mem0 history database."""
    if path is None:
        return _History(frozenset(), {})
    _bounded_size(path)
    try:
        conn = sqlite3.connect(file_uri(path.resolve(), "ro"), uri=True)
    except sqlite3.Error as exc:
        raise ForeignSourceError(f"{path}: cannot open the mem0 history database ({exc})") from None
    try:
        cols = {row[1] for row in conn.execute("PRAGMA table_info(history)")}
        if not {"memory_id", "event", "created_at"} <= cols:
            raise ForeignSourceError(f"{path}: not a mem0 history database (no history table with memory_id, "
                                     "event, created_at)")
        if conn.execute("SELECT count(*) FROM history").fetchone()[0] > MAX_SOURCE_VALUES:
            raise _too_many_values(path)
        deleted: set[str] = set()
        first: dict[str, str] = {}
        for memory_id, event, created in conn.execute(
                "SELECT memory_id, event, created_at FROM history ORDER BY rowid"):
            if not isinstance(memory_id, str):
                continue
            if event == "DELETE":
                deleted.add(memory_id)
            if isinstance(created, str):
                first.setdefault(memory_id, created)
        return _History(frozenset(deleted), first)
    except sqlite3.DatabaseError as exc:
        raise ForeignSourceError(f"{path}: not a readable mem0 history database ({exc})") from None
    finally:
        conn.close()


def _bounded_size(path: Path) -> None:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ForeignSourceError(f"{path}: {exc.strerror or exc}") from None
    if size > MAX_SOURCE_BYTES:
        raise ForeignSourceError(f"{path} is {size} bytes, over the {MAX_SOURCE_BYTES}-byte limit of a mem0 file")


def _ms(value: Any) -> int | None:
    """Epoch ms of an ISO 8601 time (naive = UTC), ``None`` when it is not one."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


def title_of(text: str) -> str:
    """A title from a memory's first words: at most 8 words and 80 characters, ``…`` when cut."""
    words = text.split()
    title = ""
    for word in words[:_TITLE_WORDS]:
        nxt = f"{title} {word}" if title else word
        if len(nxt) > _TITLE_CHARS:
            break
        title = nxt
    if not title:  # one word longer than the title
        return words[0][:_TITLE_CHARS] + "…"
    return title if len(title.split()) == len(words) else title + "…"


def _identity(payload: dict[str, Any], identity: str | None, identity_from: str) -> str:
    if identity is not None:
        return identity
    raw = payload.get(identity_from)
    if raw is None or raw == "":
        raise ValueError(f"no {identity_from} (pass --identity, or --identity-from "
                         f"{' or '.join(f for f in IDENTITY_FIELDS if f != identity_from)})")
    canonical = parse_identity(raw)
    if canonical != raw:
        raise ValueError(f"{identity_from} is not an identity as written (it reads as another identity); "
                         "pass --identity")
    return canonical


def read_mem0(source: Mem0Source, *, identity: str | None = None, identity_from: str = "user_id",
              now_ms: int) -> tuple[list[ForeignRecord | ForeignNote], list[ForeignNote]]:
    """Every memory of ``source`` as ``(entries, skipped)``: a :class:`~.foreign.ForeignRecord` per live
    memory or a :class:`~.foreign.ForeignNote` refusing one (no identity, no text, a bad time), and the
    deleted memories. Reads both files whole (each bounded) before anything is written.

    Raises :class:`~.foreign.ForeignSourceError` for an unreadable, malformed or refused file."""
    if identity_from not in IDENTITY_FIELDS:
        raise ForeignSourceError(f"--identity-from must be one of {', '.join(IDENTITY_FIELDS)}")
    docstore = load_docstore(source.docstore)
    history = load_history(source.history)
    entries: list[ForeignRecord | ForeignNote] = []
    skipped: list[ForeignNote] = []
    for n, (memory_id, payload) in enumerate(docstore.items(), start=1):
        shown = memory_id[:200]
        if memory_id in history.deleted:
            skipped.append(ForeignNote(n, shown, "deleted in mem0 (a DELETE in its history)"))
            continue
        try:
            text = payload.get("data")
            if not isinstance(text, str) or not text.strip():
                raise ValueError("no memory text (data)")
            who = _identity(payload, identity, identity_from)
            created = _ms(payload.get("created_at")) or _ms(history.first_seen.get(memory_id))
            updated = _ms(payload.get("updated_at"))
            if created is None:
                created = updated if updated is not None else now_ms
            metadata = {k: v for k, v in payload.items() if k not in _OWN_KEYS}
            entries.append(ForeignRecord(
                position=n, system=SYSTEM, source_id=memory_id, identity=who, title=title_of(text), body=text,
                created_at_ms=created, updated_at_ms=max(updated or created, created), metadata=metadata or None))
        except ValueError as exc:
            entries.append(ForeignNote(n, shown, str(exc)))
    return entries, skipped

"""SQLite's own heap in this process: its process-wide soft limit and how much it holds now.

SQLite allocates its page caches (each connection's ``cache_size``), prepared statements and full-text
merge buffers from one allocator per process. ``PRAGMA soft_heap_limit = N`` asks it to stay under ``N``
bytes: past it a connection recycles its own least recently used cache pages instead of growing its
cache, so every connection of the process together stays near the limit however many realms are open
(a statement that needs more still gets it: the limit is soft, nothing fails). The limit is
process-wide: in a process that embeds the store, other SQLite users share it.

:func:`heap_used` reads ``sqlite3_memory_used()`` from the SQLite library Python's ``sqlite3`` module is
linked against (through ``ctypes``); ``None`` when that library cannot be found (a statically linked
build), and then only the limit is known.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sqlite3
import threading
from typing import Any

__all__ = ["heap_used", "set_soft_heap_limit", "soft_heap_limit"]

_lib: Any = None
_looked = False
_lock = threading.Lock()


def set_soft_heap_limit(limit_bytes: int) -> None:
    """Set the process's SQLite soft heap limit to ``limit_bytes`` (``0``: none). Raises ``ValueError``
    for a negative value."""
    if limit_bytes < 0:
        raise ValueError("limit_bytes must be >= 0")
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(f"PRAGMA soft_heap_limit = {int(limit_bytes)}").fetchone()
    finally:
        conn.close()


def soft_heap_limit() -> int:
    """The process's SQLite soft heap limit in bytes (``0``: none)."""
    conn = sqlite3.connect(":memory:")
    try:
        return int(conn.execute("PRAGMA soft_heap_limit").fetchone()[0])
    finally:
        conn.close()


def _library() -> Any:
    """The SQLite library ``sqlite3`` runs on, with ``sqlite3_memory_used`` typed, or ``None``. A symbol
    looked up through the extension module's own handle resolves in the library it is linked against; a
    library found by name is used only when its version is the module's."""
    import _sqlite3

    candidates: list[str] = [_sqlite3.__file__]
    name = ctypes.util.find_library("sqlite3")
    if name:
        candidates.append(name)
    probe = sqlite3.connect(":memory:")  # holds some of SQLite's heap while the library is checked
    try:
        return _first_checked(candidates)
    finally:
        probe.close()


def _first_checked(candidates: list[str]) -> Any:
    for path in candidates:
        try:
            lib = ctypes.CDLL(path)
            lib.sqlite3_memory_used.restype = ctypes.c_int64
            lib.sqlite3_memory_used.argtypes = []
            lib.sqlite3_libversion.restype = ctypes.c_char_p
            lib.sqlite3_libversion.argtypes = []
            if lib.sqlite3_libversion().decode() == sqlite3.sqlite_version and lib.sqlite3_memory_used() > 0:
                return lib
        except (OSError, AttributeError, UnicodeDecodeError):
            continue
    return None


def heap_used() -> int | None:
    """Bytes SQLite's allocator holds in this process now, or ``None`` when it cannot be read."""
    global _lib, _looked
    with _lock:
        if not _looked:
            _looked = True
            _lib = _library()
    if _lib is None:
        return None
    return int(_lib.sqlite3_memory_used())

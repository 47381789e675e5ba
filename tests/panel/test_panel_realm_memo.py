"""What the every-realm reads keep of each realm: the newest rows across realms read from the realms that can
hold them, and per-realm summaries kept only while the realm's files keep their signature."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.panel.paging import newest_rows
from meta_memory.panel.realm_memo import QUIET_NS, RealmMemo

REALMS = [f"r{i}" for i in range(8)]


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.sampled_from(REALMS), st.lists(st.integers(0, 9), max_size=5)), st.integers(1, 8))
def test_the_newest_rows_are_those_of_reading_every_realm(keys: dict[str, list[int]], limit: int) -> None:
    rows = {r: sorted(ks, reverse=True)[:limit] for r, ks in keys.items()}
    read: list[str] = []

    def fetch(realm: str) -> list[int]:
        read.append(realm)
        return rows.get(realm, [])

    newest = {r: (ks[0] if ks else None) for r, ks in rows.items()}
    got = newest_rows(REALMS, newest, fetch, lambda k: k, limit)
    everything = sorted((k for ks in rows.values() for k in ks), reverse=True)[:limit]
    assert sorted((k for ks in got.values() for k in ks), reverse=True)[:limit] == everything
    assert len(read) == len(set(read)) and all(rows.get(r) for r in read), "a realm without rows is never read"
    assert len(read) <= limit + sum(1 for r in read if rows[r][0] == everything[-1]), "at most limit realms, and ties"


def _age(path: Path, seconds: float) -> None:
    at = time.time() - seconds
    os.utime(path, (at, at))


def test_a_summary_is_kept_while_the_files_keep_their_signature(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite3"
    db.write_bytes(b"one")
    _age(db, 10)
    memo = RealmMemo(lambda realm: db if realm == "r" else None)
    loads: list[int] = []

    def load() -> int:
        loads.append(1)
        return len(loads)

    assert memo.read("r", "k", load) == 1
    assert memo.read("r", "k", load) == 1 and len(loads) == 1, "kept: the files were quiet"
    assert memo.read("r", "other", load) == 2, "each summary is read once"
    db.write_bytes(b"two!")  # a write changes the signature: nothing kept of the realm is trusted
    assert memo.read("r", "k", load) == 3
    assert memo.read("r", "k", load) == 4, "not kept: the files were written within the quiet time"
    _age(db, QUIET_NS / 1e9 + 1)
    assert memo.read("r", "k", load) == 5
    assert memo.read("r", "k", load) == 5
    wal = tmp_path / "r.sqlite3-wal"
    wal.write_bytes(b"wal")
    _age(wal, 10)
    assert memo.read("r", "k", load) == 6, "a changed -wal is a change of the realm"
    assert memo.read("r", "k", load) == 6
    assert memo.read("elsewhere", "k", load) == 7 and memo.read("elsewhere", "k", load) == 8, "no file: never kept"
    db.unlink()
    wal.unlink()
    assert memo.read("r", "k", load) == 9, "a realm whose files are gone is read"


def test_keep_decides_which_answers_are_kept_and_a_failed_load_keeps_nothing(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite3"
    db.write_bytes(b"one")
    _age(db, 10)
    memo = RealmMemo(lambda realm: db)
    answers = iter(["bad", "good", "other"])
    assert memo.read("r", "k", lambda: next(answers), keep=lambda v: v == "good") == "bad"
    assert memo.read("r", "k", lambda: next(answers), keep=lambda v: v == "good") == "good"
    assert memo.read("r", "k", lambda: next(answers), keep=lambda v: v == "good") == "good"

    def fail() -> str:
        raise OSError("unreadable")

    try:
        memo.read("r", "f", fail)
    except OSError:
        pass
    assert memo.read("r", "f", lambda: "read") == "read"


def test_a_realm_with_writes_queued_is_read_and_nothing_of_it_kept(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite3"
    db.write_bytes(b"one")
    _age(db, 10)
    queued = {"r"}
    memo = RealmMemo(lambda realm: db, lambda realm: realm in queued)
    answers = iter(range(10))
    assert memo.read("r", "k", lambda: next(answers)) == 0
    assert memo.read("r", "k", lambda: next(answers)) == 1, "queued writes: read again"
    queued.clear()
    assert memo.read("r", "k", lambda: next(answers)) == 2
    assert memo.read("r", "k", lambda: next(answers)) == 2
    queued.add("r")
    assert memo.read("r", "k", lambda: next(answers)) == 3, "what was kept is not used while writes are queued"


def test_the_store_keeps_a_realms_scopes_only_while_they_are_few(tmp_path: Path, monkeypatch: Any) -> None:
    from meta_memory.agent_memory import record_writes
    from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
    from meta_memory.panel import store as panel_store

    monkeypatch.setattr(panel_store, "KEPT_SCOPES", 2)
    store = SqliteAgentMemoryStore(tmp_path, import_markdown=False)
    try:
        for realm, identities in (("few", ["agent:a"]), ("many", ["agent:a", "agent:b", "agent:c"])):
            for who in identities:
                record_writes.remember(store, realm, who, "note", f"{who} keeps a note in {realm}")
        panel = panel_store.SqlitePanelStore(store)
        panel.scope_overview("few"), panel.scope_overview("many")  # both realms open (opening may write)
        for f in tmp_path.glob("*.sqlite3*"):
            _age(f, 10)  # an idle fleet
        opened: list[str] = []
        real = store.snapshot
        monkeypatch.setattr(store, "snapshot", lambda realm: (opened.append(realm), real(realm))[1])
        for _ in range(3):
            assert len(panel.scope_overview("few")) == 1 and len(panel.scope_overview("many")) == 3
            assert len(panel.realm_scopes("many")) == 3
        assert opened.count("few") == 1, "kept: the realm names few scopes"
        assert opened.count("many") == 6, "read on every call: more scopes than are kept"
    finally:
        store.close()


def test_a_realm_whose_files_changed_keeps_nothing_of_before(tmp_path: Path) -> None:
    """A write (an erase among them) drops every summary kept of the realm at once, not when a quiet read
    next replaces it: no text of an erased row stays in the process."""
    db = tmp_path / "r.sqlite3"
    db.write_bytes(b"one")
    os.utime(db, (time.time() - 10, time.time() - 10))
    memo = RealmMemo(lambda realm: db)
    memo.read("r", "newest", lambda: "title of a record about to be erased")
    memo.read("r", "other", lambda: "another summary")
    db.write_bytes(b"erased")
    assert memo.read("r", "newest", lambda: None) is None
    assert "about to be erased" not in repr(memo._kept) and "another summary" not in repr(memo._kept)


def test_a_summary_time_can_make_wrong_is_read_again_when_it_is_not_fresh(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite3"
    db.write_bytes(b"one")
    os.utime(db, (time.time() - 10, time.time() - 10))
    memo = RealmMemo(lambda realm: db)
    valid = [True]
    assert memo.read("r", "counts", lambda: 1, fresh=lambda v: valid[0]) == 1
    assert memo.read("r", "counts", lambda: 2, fresh=lambda v: valid[0]) == 1  # kept
    valid[0] = False
    assert memo.read("r", "counts", lambda: 3, fresh=lambda v: valid[0]) == 3  # past its time: read again

"""Every word a user types is searchable, through the real gateway; old full-text indexes are rebuilt.

Short alphanumeric words (``S3``, ``AI``, ``Q3``, ``v2``, ``Go``, ``UK``), Turkish dotted and dotless
i, a single CJK character, an emoji: each finds the record it is written in over HTTP, while
stopword-only queries still answer ``no_query_terms``. A realm file whose full-text index was
written by an older tokeniser is re-indexed at its next open.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Author, Scope
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore, realm_db_path
from meta_memory.recall.fts import match_expression

ME = "lead:main"

RECORDS = {
    "storage": ("Storage plan", "Move the archive to S3 before Q3; the v2 exporter is ready."),
    "stack": ("Team stack", "The UK team writes Go and builds the AI assistant."),
    "office": ("Ofis", "İstanbul ofisi ılık"),
    "tea": ("茶", "我喜欢喝绿茶"),
    "mood": ("Friday", "Shipped the release 🎉 and had tea 🍵"),
    "filler": ("Unrelated", "Gardening notes about tomatoes and basil."),
}

QUERIES = {
    "S3": "storage", "s3": "storage", "Q3": "storage", "v2": "storage",
    "AI": "stack", "Go": "stack", "UK": "stack", "uk": "stack",
    "istanbul": "office", "ISTANBUL": "office", "İSTANBUL": "office", "ILIK": "office", "ılık": "office",
    "茶": "tea", "绿茶": "tea",
    "🎉": "mood", "🍵": "mood",
}


def _ids(gateway: Any, query: str) -> tuple[list[str], str | None]:
    got = gateway.result("meta/agent_memory/recall", {"identity": ME, "query_text": query, "max_entries": 8})
    return [r["memory_id"] for r in got["records"]], got["skip_reason"]


def test_every_word_a_user_types_finds_its_record(gateway: Any) -> None:
    ids = {}
    for name, (title, body) in RECORDS.items():
        ids[name] = gateway.result("meta/agent_memory/remember", {"identity": ME, "title": title, "body": body})["memory_id"]
    for query, name in QUERIES.items():
        found, skip = _ids(gateway, query)
        assert skip is None, (query, skip)
        assert ids[name] in found, (query, found)
        assert ids["filler"] not in found, query
    for query in ("where did I put the", "is it up to us", "a I"):
        found, skip = _ids(gateway, query)
        assert (found, skip) == ([], "no_query_terms"), query


def test_an_index_written_by_an_older_tokeniser_is_rebuilt_at_open(tmp_path: Path) -> None:
    root = tmp_path / "am"
    with SqliteAgentMemoryStore(root) as store:
        rec, _ = record_writes.remember(store, "default", ME, "Storage plan", "Move the archive to S3; 茶 and 🍵")
        tomb, _ = record_writes.remember(store, "default", ME, "Gone", "an S3 note that was forgotten")
        record_writes.forget(store, "default", Scope.identity("default", ME), tomb.memory_id, Author.application())
    # What an older release left: its own index fingerprint, rows without the short words.
    conn = sqlite3.connect(realm_db_path(root, "default"))
    conn.execute("UPDATE schema_migrations SET name = 'fts-0000000000000000' WHERE domain = 'records-fts'")
    conn.execute("DELETE FROM records_fts")
    conn.execute("INSERT INTO records_fts(rowid, title, body, tags) SELECT rid, 'storag plan', 'move archiv', '' "
                 "FROM records WHERE status_kind = 'active'")
    conn.commit()
    conn.close()
    with SqliteAgentMemoryStore(root) as store:
        scope = Scope.identity("default", ME)
        for query in ("S3", "茶", "🍵", "storage"):
            expr = match_expression(query)
            assert expr is not None
            assert [v.memory_id for v, _ in store.search("default", scope, expr, 10)] == [rec.memory_id], query

"""The field-level erasure register: which texts a record shows (``erase.shown_texts``), which an erase
registers on their own (``erase.erased_texts``), and their hashes (``erase.field_hashes``: exact and every
fold of ``hashing.erasure_hashes``, for fields long enough to count).

Migration 22 ("erasure-texts") adds the table to a realm written before it: its old erasures keep
refusing their (title, body) pair and have no field-level rows (their content is gone: nothing to hash, the
documented residual); an erase after the migration registers its body and refuses it in another field.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.erase import MIN_FIELD_CHARS, erased_texts, field_hashes, shown_texts
from meta_memory.agent_memory.hashing import content_hash, erasure_hashes, folded_content_hash
from meta_memory.agent_memory.model import Author, NewMemoryRecord, Provenance, Scope
from meta_memory.agent_memory.store import schema
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore, realm_db_path
from meta_memory.clock import ManualClock
from meta_memory.errors import AgentMemoryError
from support import refused_as_erased

R, ID = "default", "ana:main"
#: erased before the migration (its pair is registered; its body on its own is not)
OLD = ("Vault plan", "The vault combination is 31-22-7 on the left")
NEW = ("Orchard plan", "Meet at the old oak by the north gate at dawn")


def _record(title: str = "T", body: str = "B", description: str = "", tags: tuple[str, ...] = (),
            metadata: dict[str, object] | None = None) -> NewMemoryRecord:
    return NewMemoryRecord(title=title, body=body, description=description, tags=tags, metadata=metadata or {},
                           provenance=Provenance(Author.application()))


def test_shown_texts_are_every_field_and_erased_texts_the_body_and_description() -> None:
    rec = _record("Title", "Body", "Desc", ("a tag", "b"), {"note": "hello", "deep": {"list": ["x", 1]}})
    shown = shown_texts(rec)
    assert shown[:5] == ["Title", "Body", "Desc", "a tag", "b"]
    assert {"note", "hello", "deep", "list", "x"} <= set(shown[5:])
    assert erased_texts(rec) == ["Body", "Desc"] and erased_texts(_record(description="")) == ["B"]


def test_field_hashes_are_erasure_hashes_under_an_empty_title_and_skip_short_fields() -> None:
    text = "The back door code is 4471 and the alarm word is heron."
    assert field_hashes([text]) == set(erasure_hashes("", text))
    assert field_hashes(["Meeting notes", "project", "", "a b", "x" * (MIN_FIELD_CHARS - 1)]) == set()
    assert field_hashes(["five words long enough"])  # 22 characters, 4 words: counts
    assert field_hashes(["twowords butlong"]) == set()  # 16 characters, 2 words: does not
    assert field_hashes(["x" * (2 * MIN_FIELD_CHARS)])  # one long unspaced word (a CJK sentence, a token) counts


_ASCII = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=0, max_size=60)


@settings(max_examples=200, deadline=None)
@given(_ASCII, st.lists(_ASCII, max_size=4), st.dictionaries(st.from_regex(r"[a-z]{1,8}", fullmatch=True), _ASCII,
                                                             max_size=4))
def test_every_field_is_read_and_a_recased_respaced_copy_shares_a_hash(body: str, tags: list[str],
                                                                       metadata: dict[str, str]) -> None:
    rec = _record(body=body or "b", tags=tuple(tags), metadata=dict(metadata))
    shown = shown_texts(rec)
    assert all(t in shown for t in tags) and all(v in shown for v in metadata.values())
    mine = field_hashes([body])
    variant = field_hashes(["  " + body.upper().replace(" ", "\t") + "\u200b"])
    assert bool(mine) == bool(variant) and (not mine or mine & variant)


def test_an_existing_realm_gains_the_table_and_an_erase_after_it_registers_fields(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "am"
    clock = ManualClock(1_750_000_000_000)
    with monkeypatch.context() as patch:
        patch.setattr(schema, "MIGRATIONS", [step for step in schema.MIGRATIONS if step[0] < 23])
        with SqliteAgentMemoryStore(root, clock) as store, store.transaction(R):
            pass  # the realm's database, of the schema before step 23
    path = realm_db_path(root, R)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'erasure_texts'").fetchone() is None
        conn.execute("INSERT INTO erasures(memory_id, scope_kind, scope_key, content_hash, folded_hash, casefolded_hash, "
                     "erased_at_ms) VALUES ('mem-old', 'identity', ?, ?, ?, ?, 1)",
                     (ID, content_hash(*OLD), folded_content_hash(*OLD), erasure_hashes(*OLD)[2]))
    with SqliteAgentMemoryStore(root, clock) as store:
        assert refused_as_erased(store, R, ID, *OLD)
        # the residual: an erasure registered before the step has no field-level row
        assert not refused_as_erased(store, R, ID, "Another title", OLD[1])
        with sqlite3.connect(path) as conn:
            assert conn.execute("SELECT count(*) FROM erasure_texts").fetchone() == (0,)
            assert conn.execute("SELECT version FROM schema_migrations WHERE name = 'erasure-texts'").fetchone() == (23,)
        mid = record_writes.remember(store, R, ID, *NEW)[0].memory_id
        store.erase(R, Scope.identity(R, ID), mid, erased_by="dpo")
        with pytest.raises(AgentMemoryError) as caught:
            record_writes.remember_record(store, R, ID, "x", "y", metadata={"note": NEW[1].upper()})
        assert caught.value.data["reason"] == "erased" and "oak" not in caught.value.message
        with sqlite3.connect(path) as conn:
            rows = conn.execute("SELECT hash, scope_kind, scope_key, memory_id FROM erasure_texts").fetchall()
        assert {r[0] for r in rows} == field_hashes([NEW[1]]) and {r[1:] for r in rows} == {("identity", ID, mid)}

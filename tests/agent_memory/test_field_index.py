"""The erase's field closure finds its records through :class:`~meta_memory.agent_memory.erase.FieldIndex`,
which keeps ASCII fields by their fold-3 text alone (no SHA-256): its candidates must hold every record
showing, in some field, a text whose field-level hashes meet an erased text's (``erase.field_hashes``), in
every spelling the register's folds fold (case, width, whitespace put in or taken out, invisible and control
characters, look-alike letters), whichever of the two is ASCII."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory.erase import FieldIndex, field_hashes
from meta_memory.agent_memory.hashing import fold_texts

_BASE = st.lists(st.sampled_from(["the", "back", "door", "code", "is", "heron", "kayak", "paypal", "Nope", "4471",
                                  "strasse", "cafe"]), min_size=3, max_size=9).map(" ".join)

#: per-character rewrites a spelling of the same text may carry (each folds away under some fold)
_VARIANTS = {
    "a": ["a", "A", "\u0430", "\uff41"], "e": ["e", "E", "\u0435"], "o": ["o", "O", "\u043e", "\u03bf"],
    "p": ["p", "P", "\u0440"], "c": ["c", "C", "\u0441"], "k": ["k", "K", "\u212a"], "H": ["H", "\u041d"],
    "N": ["N", "\u041d", "n"], "s": ["s", "S", "\u0455"], "i": ["i", "I", "\u0456"],
    " ": [" ", "  ", "\t", "\n", "", "\u00a0", "\u200b", "\x0c", " \x07"],
}


def _spell(data: st.DataObject, base: str) -> str:
    return "".join(data.draw(st.sampled_from(_VARIANTS.get(c, [c, c.upper()]))) for c in base)


def _meets(field: str, erased: str) -> bool:
    return not field_hashes([field]).isdisjoint(field_hashes([erased]))


@settings(max_examples=400, deadline=None)
@given(_BASE, st.data())
def test_every_field_matching_an_erased_text_is_a_candidate(base: str, data: st.DataObject) -> None:
    erased, field = _spell(data, base), _spell(data, base)
    if data.draw(st.booleans()):  # a field holding exactly one of the texts the register hashes
        field = data.draw(st.sampled_from(fold_texts(erased)))
    index = FieldIndex()
    index.add("mem-x", ["short", field, "another field of other words entirely"])
    if _meets(field, erased):
        assert "mem-x" in index.candidates([erased]), (field, erased)


def test_candidates_by_path() -> None:
    """An ASCII field re-cased, re-spaced or run together; a look-alike field (not ASCII) of an ASCII erased
    text; an ASCII field of a look-alike erased text; a short field is never one."""
    erased = "The back door code is 4471 and the alarm word is heron"
    index = FieldIndex()
    index.add("upper", [erased.upper()])
    index.add("run-together", [erased.replace(" ", "")])
    index.add("spaced", ["  " + erased.replace(" ", "\t ") + "\n"])
    index.add("lookalike", [erased.replace("a", "\u0430")])
    index.add("other", [erased.replace("4471", "9000"), "heron"])
    assert index.candidates([erased]) >= {"upper", "run-together", "spaced", "lookalike"}
    assert "other" not in index.candidates([erased])
    ascii_copy = FieldIndex()
    ascii_copy.add("ascii", [erased])
    assert ascii_copy.candidates([erased.replace("o", "\u043e")]) == {"ascii"}
    assert ascii_copy.candidates(["heron"]) == set()  # too short to count


def test_an_erase_empties_the_metadata_keys_the_secret_scanner_keeps(tmp_path: Path) -> None:
    """The scanner keeps the metadata keys it read (whether each holds a rule's trigger); an erase empties
    them, so no key of an erased record's metadata stays in the process's memory."""
    from meta_memory.agent_memory import record_writes, secrets
    from meta_memory.agent_memory.batch import CreateOp, StagedBatch
    from meta_memory.agent_memory.model import Author, NewMemoryRecord, Provenance, Scope
    from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
    from meta_memory.clock import ManualClock

    author = Author.application()
    scope = Scope.identity("default", "ana")
    key = "the vault under the old mill"
    with SqliteAgentMemoryStore(tmp_path / "am", ManualClock(1_700_000_000_000)) as store:
        record = NewMemoryRecord(title="Vault", body="see the note", provenance=Provenance(author),
                                 metadata={key: "room nine"})
        record_writes.apply_batch(store, StagedBatch(realm="default", author=author,
                                                     ops=(CreateOp(scope=scope, record=record, id="mem-v"),)))
        assert secrets._pair_prefix.cache_info().currsize > 0
        store.erase("default", scope, "mem-v", erased_by="dpo", dry_run=True)
        assert secrets._pair_prefix.cache_info().currsize > 0  # a dry run erases nothing
        store.erase("default", scope, "mem-v", erased_by="dpo")
        assert secrets._pair_prefix.cache_info().currsize == 0

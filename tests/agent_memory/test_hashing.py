from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory.hashing import (
    content_hash,
    fnv1a64,
    fnv1a64_many,
    fold_whitespace,
    folded_content_hash,
    mint_token,
    new_memory_id,
    new_memory_ids,
)


def test_content_hash_is_stable_and_boundary_safe() -> None:
    h = content_hash("title", "body")
    assert len(h) == 64 and re.fullmatch(r"[0-9a-f]{64}", h)
    assert content_hash("title", "body") == h
    assert content_hash("ab", "c") != content_hash("a", "bc")
    # pinned: SHA-256 over u64le(5) + b"title" + b"body"
    import hashlib

    assert h == hashlib.sha256((5).to_bytes(8, "little") + b"titlebody").hexdigest()


@given(st.text(), st.text(), st.text(), st.text())
def test_content_hash_distinguishes_distinct_pairs(t1: str, b1: str, t2: str, b2: str) -> None:
    if (t1, b1) != (t2, b2):
        assert content_hash(t1, b1) != content_hash(t2, b2)


def test_fnv1a64_known_values() -> None:
    assert fnv1a64() == 0xCBF29CE484222325
    assert fnv1a64(b"a") == 0xAF63DC4C8601EC8C
    assert fnv1a64(b"foo", b"bar") == fnv1a64(b"foobar")


def test_memory_ids_are_unique_for_identical_content() -> None:
    ids = [new_memory_id("same", "content") for _ in range(1024)]
    assert len(set(ids)) == 1024
    assert all(i.startswith("mem-") for i in ids)
    fnv = f"{fnv1a64(b'same', b'content'):016x}"
    assert all(re.fullmatch(r"mem-\d+-[0-9a-f]+-[0-9a-f]+-" + fnv, i) for i in ids)


def test_mint_token_shape() -> None:
    a, b = mint_token("stage"), mint_token("stage")
    assert a != b
    assert re.fullmatch(r"stage-\d+-[0-9a-f]+-[0-9a-f]+", a)


@settings(deadline=None, max_examples=60)
@given(st.lists(st.binary(max_size=600), max_size=40), st.lists(st.binary(min_size=4097, max_size=4200), max_size=2))
def test_fnv1a64_many_equals_one_by_one(short: list[bytes], long: list[bytes]) -> None:
    items = [*short, *long]
    assert fnv1a64_many(items) == [fnv1a64(item) for item in items]


def test_ids_minted_together_carry_each_record_own_hash() -> None:
    contents = [("Title", "body one"), ("Title", "body one"), ("", ""), ("Другой", "текст 文字")]
    ids = new_memory_ids(contents)
    assert len(set(ids)) == len(ids)
    for memory_id, (title, body) in zip(ids, contents, strict=True):
        assert memory_id.endswith(f"-{fnv1a64(title.encode(), body.encode()):016x}")


#: Every character Python's ``str.split`` splits on (the fold's whitespace), the no-break space among them.
WHITESPACE = "".join(chr(c) for c in range(0x3001) if chr(c).isspace())
_words = st.lists(st.text(st.characters(blacklist_categories=("Zs", "Zl", "Zp", "Cc")), min_size=1), max_size=8)
_runs = st.text(st.sampled_from(WHITESPACE), min_size=1, max_size=4)


def test_the_fold_takes_the_unicode_spaces() -> None:
    assert "\u00a0" in WHITESPACE and "\u3000" in WHITESPACE and "\t" in WHITESPACE
    assert fold_whitespace(" a \u00a0 b\t\r\nc\u2003 ") == "a b c"
    assert folded_content_hash("T", "a  b") == folded_content_hash("T", "a\u00a0b") == content_hash("T", "a b")


@given(st.text(), st.text())
def test_folding_is_idempotent(title: str, body: str) -> None:
    once = fold_whitespace(body)
    assert fold_whitespace(once) == once and " " * 2 not in once and once == once.strip()
    folded = folded_content_hash(title, body)
    assert folded_content_hash(fold_whitespace(title), once) == folded
    assert folded_content_hash(title, body, content_hash(title, body)) == folded  # the shortcut changes nothing


@given(st.text(), _words, st.data())
def test_the_folded_hash_ignores_whitespace(title: str, words: list[str], data: st.DataObject) -> None:
    """Any spacing of the same words (runs of any Unicode whitespace between them, at either end) folds alike."""
    seps = data.draw(st.lists(_runs, min_size=len(words) + 1, max_size=len(words) + 1))
    ends = data.draw(st.tuples(st.booleans(), st.booleans()))
    spaced = "".join(sep + word for sep, word in zip(seps, words, strict=False)) + (seps[-1] if ends[1] else "")
    spaced = spaced if ends[0] or not words else spaced[len(seps[0]):]
    assert fold_whitespace(spaced) == " ".join(words)
    assert folded_content_hash(title, spaced) == folded_content_hash(title, " ".join(words))


@given(st.text(), st.text(), st.text())
def test_the_folded_hash_tells_different_words_apart(title: str, a: str, b: str) -> None:
    """Two bodies share a folded hash exactly when their non-whitespace text, word by word, is the same."""
    assert (folded_content_hash(title, a) == folded_content_hash(title, b)) == (a.split() == b.split())
    assert (folded_content_hash(title, a) == folded_content_hash(title + "x", a)) is False

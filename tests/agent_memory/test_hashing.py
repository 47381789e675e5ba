from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory.hashing import (
    content_hash,
    fnv1a64,
    fnv1a64_many,
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

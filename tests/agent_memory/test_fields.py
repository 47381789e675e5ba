from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from meta_memory.agent_memory.fields import (
    SHOWS_NOTHING_RULE,
    FieldError,
    compact_whitespace,
    hidden_text_rule,
    normalize_tags,
    shows_nothing,
    validate_record_fields,
)


@pytest.mark.parametrize(
    ("title", "description", "body", "message"),
    [
        ("", "", "body", "title must not be empty"),
        ("   \t", "", "body", "title must not be empty"),
        ("t" * 201, "", "body", "title must be at most 200 bytes"),
        ("é" * 101, "", "body", "title must be at most 200 bytes"),
        ("title", "d" * 401, "body", "description must be at most 400 bytes"),
        ("title", "", " \n ", "body must not be empty"),
        ("title", "", "b" * 65_537, "body must be at most 65536 bytes"),
    ],
)
def test_field_caps_reject_oversized_and_empty(title: str, description: str, body: str, message: str) -> None:
    with pytest.raises(FieldError) as info:
        validate_record_fields(title, description, body)
    assert info.value.rule == message


def test_field_caps_accept_the_limits() -> None:
    validate_record_fields("t" * 200, "d" * 400, "b" * 65_536)
    validate_record_fields("é" * 100, "", "x")


def test_normalize_tags_rules() -> None:
    assert normalize_tags([" Travel", "docs", "travel ", "", "  ", "ÉTÉ"]) == ("docs", "travel", "ÉtÉ")
    with pytest.raises(FieldError, match="tags must contain at most 32 entries"):
        normalize_tags([f"t{i}" for i in range(33)])
    with pytest.raises(FieldError, match=r"^tags\.1 must be at most 64 bytes$") as refused:
        normalize_tags(["ok", "x" * 65])  # the tag at fault, by its index in the list given
    assert refused.value.field == "tags.1"
    assert normalize_tags(["  " + "x" * 64 + "  "]) == ("x" * 64,)


@given(st.lists(st.text(max_size=80), max_size=32))
@example(["ok", "a\x00"])
@example(["ok", "flag\U000e0041"])
@example(["ok", "\u200b"])
def test_normalize_tags_properties(tags: list[str]) -> None:
    try:
        out = normalize_tags(tags)
    except FieldError as exc:
        index = int(exc.field.removeprefix("tags."))  # every rule of one tag names it by its index
        if exc.rule == f"tags.{index} must not contain NUL characters":
            assert "\x00" in tags[index]
            return
        if (hidden := hidden_text_rule(f"tags.{index}", tags[index].strip())) is not None:
            assert exc.rule == hidden  # hidden text: tag characters, smuggled selectors, private use
            return
        if exc.rule == f"tags.{index} {SHOWS_NOTHING_RULE}":  # a tag a reader would see as empty
            assert tags[index].strip() and shows_nothing(tags[index].strip())
            return
        assert exc.rule == f"tags.{index} must be at most 64 bytes"
        assert len(tags[index].strip().encode("utf-8", "surrogatepass")) > 64
        return
    assert not any("\x00" in t for t in tags)
    assert list(out) == sorted(set(out))
    assert all(t and t == t.strip() and not shows_nothing(t) for t in out)
    assert all(not any("A" <= c <= "Z" for c in t) for t in out)
    assert all(len(t.encode("utf-8", "surrogatepass")) <= 64 for t in out)
    assert normalize_tags(out) == out  # idempotent
    assert set(out) == {t.strip().translate({c: c + 32 for c in range(65, 91)}) for t in tags if t.strip()}


@given(st.text())
def test_compact_whitespace_properties(text: str) -> None:
    out = compact_whitespace(text)
    assert out == out.strip()
    assert "  " not in out
    assert compact_whitespace(out) == out
    assert out.split() == text.split()


class _CountingList(list[object]):
    """A list that counts how many of its elements a reader visits (one object, shared many times)."""

    visits = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        for item in super().__iter__():
            _CountingList.visits += 1
            yield item


def test_metadata_sharing_one_list_many_times_is_refused_after_reading_about_its_cap() -> None:
    """A structure that shares one list many times (what a pickle's memo makes of a few bytes: the
    legacy mem0 docstore) unfolds to far more than the 8 KiB cap; the check refuses it once what it has
    read is already past the cap, never after walking every copy."""
    from meta_memory.agent_memory.fields import MAX_METADATA_BYTES, normalize_metadata

    inner = _CountingList([0] * 300)
    middle = _CountingList([inner] * 300)
    outer = _CountingList([middle] * 300)  # 27 million values as JSON: unbounded work unless cut short
    _CountingList.visits = 0
    with pytest.raises(FieldError, match="metadata must be at most 8192 bytes as JSON"):
        normalize_metadata({"blob": outer})
    assert _CountingList.visits <= MAX_METADATA_BYTES + 1


@given(st.recursive(st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(max_size=40),
                    lambda kids: st.lists(kids, max_size=6) | st.dictionaries(
                        st.text("abcxyz", min_size=1, max_size=6), kids, max_size=6), max_leaves=40))
def test_metadata_within_the_cap_is_never_refused_by_the_size_check(value: object) -> None:
    """The running size the check keeps never exceeds the canonical JSON's: what fits is accepted."""
    from meta_memory.agent_memory.fields import MAX_METADATA_BYTES, canonical_metadata, normalize_metadata

    metadata = {"v": value}
    try:
        size = len(canonical_metadata(metadata).encode("utf-8", "surrogatepass"))
    except ValueError:
        return
    if size > MAX_METADATA_BYTES or any(c in str(value) for c in "\x00"):
        return
    try:
        normalize_metadata(metadata)
    except FieldError as exc:
        assert "bytes as JSON" not in exc.rule, (exc.rule, size)

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from meta_memory.agent_memory.fields import (
    FieldError,
    compact_whitespace,
    normalize_tags,
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
    with pytest.raises(FieldError, match="tags must be at most 64 bytes"):
        normalize_tags(["x" * 65])
    assert normalize_tags(["  " + "x" * 64 + "  "]) == ("x" * 64,)


@given(st.lists(st.text(max_size=80), max_size=32))
def test_normalize_tags_properties(tags: list[str]) -> None:
    try:
        out = normalize_tags(tags)
    except FieldError as exc:
        if exc.rule == "tags must not contain NUL characters":
            assert any("\x00" in t for t in tags)
            return
        assert exc.rule == "tags must be at most 64 bytes"
        assert any(len(t.strip().encode("utf-8", "surrogatepass")) > 64 for t in tags)
        return
    assert not any("\x00" in t for t in tags)
    assert list(out) == sorted(set(out))
    assert all(t and t == t.strip() for t in out)
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

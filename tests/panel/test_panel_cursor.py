"""The record listing's keyset cursor."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from meta_memory.errors import InvalidParams
from meta_memory.panel.cursor import MAX_CURSOR_MS, Cursor, parse_cursor, row_cursor


def test_parse_splits_at_the_first_colon() -> None:
    assert parse_cursor("1700000000000:mem-abc") == Cursor(1700000000000, "mem-abc")
    assert parse_cursor("5:a:b:c") == Cursor(5, "a:b:c")
    assert parse_cursor("0:x") == Cursor(0, "x")
    assert parse_cursor(f"{MAX_CURSOR_MS}:x").updated_at_ms == MAX_CURSOR_MS
    assert parse_cursor(None) is None


@pytest.mark.parametrize(
    "value",
    ["", ":", "abc", "12", "12:", ":mem", "-1:mem", "+1:mem", " 1:mem", "1 :mem", "1_000:mem", "1.5:mem",
     "０:mem", f"{MAX_CURSOR_MS + 1}:mem", 5, ["1:a"], {"c": 1}, True],
)
def test_malformed_cursors_are_refused(value: object) -> None:
    with pytest.raises(InvalidParams) as info:
        parse_cursor(value)
    assert info.value.message == "Invalid params: malformed cursor"
    assert info.value.to_jsonrpc()["data"] == {"kind": "invalid_params", "field": "cursor"}


@given(st.integers(min_value=0, max_value=MAX_CURSOR_MS), st.text(min_size=1))
def test_encode_parse_round_trip(ms: int, memory_id: str) -> None:
    c = Cursor(ms, memory_id)
    assert parse_cursor(c.encode()) == c
    assert str(c) == c.encode()


@given(st.integers(0, 50), st.text(max_size=3, alphabet="ab:é中"), st.integers(0, 50), st.text(min_size=1, max_size=3, alphabet="ab:é中"))
def test_precedes_is_the_listing_order(ms: int, mid: str, c_ms: int, c_id: str) -> None:
    class Row:
        updated_at_ms = ms
        memory_id = mid

    after = Cursor(c_ms, c_id).precedes(Row())
    assert after == (ms < c_ms or (ms == c_ms and mid.encode() < c_id.encode()))
    assert row_cursor(Row()) == Cursor(ms, mid)

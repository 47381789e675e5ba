"""The id an over-long request line is refused under: read from the line's head alone."""

from __future__ import annotations

import pytest

from meta_memory.rpc.lines import ID_HEAD_BYTES, head_request_id


@pytest.mark.parametrize(("head", "expected"), [
    (b'{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"pad": "xxxx', 7),
    (b' {\t"id" : "call-1" , "method"', "call-1"),
    (b'{"params": {"id": 3, "deep": [{"id": 9}]}, "id": 4, "method": "x"', 4),  # nested ids are not the request's
    (b'{"\\u0069d": 5, "method"', 5),  # the key as JSON reads it
    (b'{"id": 12', None),  # a number cut by the head's end could read short
    (b'{"id": "abc', None),
    (b'{"params": {"pad": "xxxx', None),  # the id, if any, is past the head
    (b'{"id": true, "method"', None),
    (b'{"id": 1.5, "method"', None),
    (b'{"id": null, "method"', None),
    (b'[{"id": 1}, {"id": 2}]', None),
    (b'{"a": 1}{"id": 2}', None),
    (b'{{"id": 2}', None),
    (b"\xff\xfe{", None),
])
def test_the_head_names_the_id_only_when_it_stands_whole_at_the_top(head: bytes, expected: object) -> None:
    assert head_request_id(head) == expected


def test_nothing_past_the_head_is_read() -> None:
    pad = b'{"pad": "' + b"x" * ID_HEAD_BYTES + b'", "id": 3, "method": "x"}'
    assert head_request_id(pad) is None
    assert head_request_id(b'{"id": 3, "pad": "' + b"x" * (4 * ID_HEAD_BYTES) + b'"}') == 3

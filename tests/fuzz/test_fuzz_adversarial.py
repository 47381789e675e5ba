"""Hostile bodies on the wire: huge strings, 16 MB bodies, deep
nesting, NUL bytes, lone surrogates, invalid UTF-8, 10,000-call batches, duplicate ids. Every
answer is well formed, refused writes leave nothing behind, the gateway never dies."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from fuzz_support import Fuzzed, check_response
from support import realm_db

pytestmark = pytest.mark.gateway

MB = 1_000_000


def _records(fz: Fuzzed, identity: str) -> list[dict[str, Any]]:
    out = fz.call("meta/agent_memory/manifest", {"identity": identity, "tier": "full"})
    return out["result"]["records"]


def _total_rows(fz: Fuzzed) -> int:
    path = realm_db(fz.gw.state_dir)
    if not path.exists():
        return 0
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT (SELECT COUNT(*) FROM records) + (SELECT COUNT(*) FROM audit)").fetchone()[0]
    finally:
        conn.close()


@pytest.mark.parametrize("field,cap", [("title", 200), ("body", 65_536), ("tags", 64)])
def test_one_megabyte_field_is_refused_naming_it_and_writes_nothing(fz: Fuzzed, field: str, cap: int) -> None:
    params: dict[str, Any] = {"identity": "fuzz:huge", "title": "t", "body": "b"}
    params[field] = ["x" * MB] if field == "tags" else "é" * (MB // 2)
    before = _total_rows(fz)
    err = fz.call("meta/agent_memory/remember", params)["error"]
    assert err["code"] == -32602 and err["data"]["field"].split(".")[0] == field, err
    assert str(cap) in err["message"], err
    assert _total_rows(fz) == before and _records(fz, "fuzz:huge") == []
    fz.alive()


@pytest.mark.parametrize("method,params,field", [
    ("meta/memory/index", {"entity": "e" * MB, "topic": "t", "fact": "f"}, "entity"),
    ("meta/agent_memory/recall", {"identity": "fuzz:huge", "query_text": "q " * (MB // 2)}, "query_text"),
    ("meta/turn/defang", {"text": "<meta_memory_observation " * (MB // 25)}, None),
    ("meta/turn/inject", {"identity": "fuzz:huge", "query_text": "word " * (MB // 5)}, None),
    ("meta/session/note", {"identity": "i" * MB, "session_key": "s"}, "identity"),
    ("meta/agent_memory/tool", {"identity": "fuzz:huge", "arguments": {"action": "remember", "title": "t",
                                                                       "body": "b" * MB}}, None),
])
def test_one_megabyte_strings_are_handled(fz: Fuzzed, method: str, params: dict[str, Any], field: str | None) -> None:
    """Accepted, or refused with a clear error naming the field; never an internal error."""
    out = fz.call(method, params)
    if "error" in out:
        assert out["error"]["code"] != -32603, out["error"]
        if out["error"]["code"] == -32602:
            assert out["error"]["data"]["field"] == field, out["error"]
    elif method == "meta/agent_memory/tool":
        assert out["result"]["is_error"] is True and "65536" in out["result"]["text"], out["result"]
    fz.alive()


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_sixteen_megabyte_body_is_refused_413_before_parsing(fz: Fuzzed, chunked: bool) -> None:
    payload = b'{"jsonrpc":"2.0","id":1,"method":"meta/agent_memory/remember","params":{"identity":"fuzz:big",' \
              b'"title":"t","body":"' + b"x" * (16 * 1024 * 1024) + b'"}}'
    content: Any = payload
    if chunked:
        content = (payload[i:i + 1 << 20] for i in range(0, len(payload), 1 << 20))
    resp = fz.post(content)
    assert resp.status_code == 413
    out = resp.json()
    check_response(out, None)
    assert out["error"]["code"] == -32600 and out["error"]["data"]["field"] == "request", out
    assert _records(fz, "fuzz:big") == []
    fz.alive()


@pytest.mark.parametrize(("body", "request_id"), [
    (b"[" * 100_000, None),
    (b'{"a":' * 100_000, None),
    # a well-formed request whose params nest too deep: answered under its top-level id
    (b'{"jsonrpc":"2.0","id":1,"method":"meta/status","params":{"x":' + b"[" * 100_000 + b"]" * 100_000 + b"}}", 1),
], ids=["brackets", "objects", "deep-params"])
def test_deep_nesting_is_a_parse_error(fz: Fuzzed, body: bytes, request_id: int | None) -> None:
    resp = fz.post(body)
    out = resp.json()
    check_response(out, request_id)
    assert out["error"]["code"] == -32700, out
    fz.alive()


def test_deep_metadata_is_refused_naming_the_field(fz: Fuzzed) -> None:
    depth = 400
    body = ('{"jsonrpc":"2.0","id":1,"method":"meta/memory/index","params":{"entity":"deep-md","topic":"t",'
            '"fact":"f","metadata":' + '{"a":' * depth + "1" + "}" * depth + "}}").encode()
    out = fz.post(body).json()
    check_response(out, 1)
    assert out["error"]["code"] == -32602 and out["error"]["data"]["field"].startswith("metadata.a"), out
    assert "nests deeper than 64 levels" in out["error"]["message"]
    got = fz.call("meta/memory/query", {"entity": "deep-md"})
    assert got["result"]["assertions"] == []  # nothing was half-written


def test_invalid_utf8_on_the_wire_is_a_parse_error(fz: Fuzzed) -> None:
    for body in (b'\xff\xfe{"jsonrpc":"2.0"}', b'{"jsonrpc":"2.0","id":1,"method":"meta/status\xc3"}',
                 b'{"jsonrpc":"2.0","id":1,"method":"meta/agent_memory/remember","params":{"identity":"fuzz:u",'
                 b'"title":"\xed\xa0\x80","body":"b"}}'):
        out = fz.post(body).json()
        check_response(out, None)
        assert out["error"]["code"] == -32700 and "UTF-8" in out["error"]["message"], out
    assert _records(fz, "fuzz:u") == []


def test_nul_bytes_are_refused_in_names_and_in_record_text(fz: Fuzzed) -> None:
    err = fz.call("meta/agent_memory/remember", {"identity": "fuzz:\x00nul", "title": "t", "body": "b"})["error"]
    assert err["code"] == -32602 and err["data"]["field"] == "identity"
    err = fz.call("meta/agent_memory/remember", {"identity": "fuzz:nul", "realm": "r\x00", "title": "t", "body": "b"})["error"]
    assert err["code"] == -32602 and err["data"]["field"] == "realm"
    # record text never holds NUL (both backends refuse it the same way; nothing is written)
    for field, params in (("title", {"title": "a\x00b", "body": "c"}), ("body", {"title": "t", "body": "c\x00d"})):
        err = fz.call("meta/agent_memory/remember", {"identity": "fuzz:nul", **params})["error"]
        assert err["code"] == -32602 and err["data"]["field"] == field, err
    assert fz.call("meta/agent_memory/recall", {"identity": "fuzz:nul", "selection": "always"})["result"]["records"] == []


LONE = ["\\ud800", "\\udfff", "x\\udc00y"]


@pytest.mark.parametrize("esc", LONE)
@pytest.mark.parametrize("method,params,field", [
    ("meta/agent_memory/remember", {"identity": "fuzz:sur", "title": "@", "body": "b"}, "title"),
    ("meta/agent_memory/remember", {"identity": "fuzz:sur", "title": "t", "body": "@"}, "body"),
    ("meta/agent_memory/remember", {"identity": "@", "title": "t", "body": "b"}, "identity"),
    ("meta/agent_memory/remember", {"identity": "fuzz:sur", "title": "t", "body": "b", "tags": ["@"]}, "tags"),
    ("meta/memory/index", {"entity": "@", "topic": "t", "fact": "f"}, "entity"),
    ("meta/memory/index", {"entity": "e", "topic": "t", "fact": "@"}, "fact"),
])
def test_lone_surrogates_are_refused_naming_the_field(fz: Fuzzed, esc: str, method: str, params: dict[str, Any],
                                                      field: str) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).replace("@", esc).encode()
    out = fz.post(body).json()
    check_response(out, 1)
    assert out["error"]["code"] == -32602 and out["error"]["data"]["field"].split(".")[0] == field, out


@pytest.mark.parametrize("esc", LONE)
def test_lone_surrogates_never_kill_the_gateway_or_half_write(fz: Fuzzed, esc: str) -> None:
    """Whatever the answer, it is well formed, nothing is half-written and the gateway keeps serving."""
    before = _total_rows(fz)
    for params in ({"identity": "fuzz:sur2", "title": "@", "body": "b"}, {"identity": "fuzz:sur2", "title": "t", "body": "@"}):
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "meta/agent_memory/remember",
                           "params": params}).replace("@", esc).encode()
        out = fz.post(body).json()
        check_response(out, 1)
        assert "error" in out
    assert _total_rows(fz) == before
    # not valid Unicode text anywhere in params: refused naming the field, even where nothing is stored
    out = fz.post(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "meta/turn/defang",
                              "params": {"text": "@"}}).replace("@", esc).encode()).json()
    check_response(out, 7)
    assert out["error"]["code"] == -32602 and out["error"]["data"]["field"] == "text", out
    # a lone surrogate in the request id is echoed back escaped; the call itself succeeds
    out = fz.post(json.dumps({"jsonrpc": "2.0", "id": "@", "method": "meta/status"}).replace("@", esc).encode()).json()
    check_response(out)
    assert "result" in out, out
    fz.alive()


def test_batch_of_ten_thousand_calls_with_duplicate_ids(fz: Fuzzed) -> None:
    batch = [{"jsonrpc": "2.0", "id": i % 7, "method": "meta/agent_memory/recall",
              "params": {"identity": "fuzz:batch", "query_text": f"word{i}"}} if i % 2 else
             {"jsonrpc": "2.0", "id": i % 7, "method": "meta/memory/stores"} for i in range(10_000)]
    batch[5] = {"jsonrpc": "2.0", "id": 5, "method": "meta/agent_memory/recall", "params": {"identity": 7}}
    resp = fz.post(json.dumps(batch).encode(), timeout=300)
    out = resp.json()
    assert isinstance(out, list) and len(out) == 10_000
    for i, one in enumerate(out):
        check_response(one, i % 7)
    assert out[5]["error"]["data"]["field"] == "identity"
    assert sum("result" in one for one in out) == 9_999
    too_many = json.dumps([{"jsonrpc": "2.0", "id": i, "method": "meta/status"} for i in range(10_001)]).encode()
    out = fz.post(too_many).json()
    check_response(out, None)
    assert out["error"]["code"] == -32600 and out["error"]["data"]["field"] == "batch"
    fz.alive()


def test_batch_of_ten_thousand_writes_applies_each_exactly_once(fz: Fuzzed) -> None:
    batch = [{"jsonrpc": "2.0", "id": "same", "method": "meta/agent_memory/remember",
              "params": {"identity": "fuzz:bulk", "title": f"item {i % 2500}", "body": f"bulk body {i % 2500}"}}
             for i in range(10_000)]
    out = fz.post(json.dumps(batch).encode(), timeout=600).json()
    assert len(out) == 10_000 and all(one.get("id") == "same" and "result" in one for one in out)
    created = [one["result"]["created"] for one in out]
    assert sum(created) == 2_500  # exact-content dedup: repeats return the first record
    ids = {one["result"]["memory_id"] for one in out}
    assert len(ids) == 2_500 == len(_records(fz, "fuzz:bulk"))
    fz.alive()

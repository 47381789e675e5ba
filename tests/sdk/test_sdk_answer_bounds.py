"""A remote handle reads a gateway's answer within bounds, whatever answers at the URL: its body within
``timeout_s`` of its start (an answer that trickles a byte at a time does not hold the caller), at most
``max_answer_bytes`` of body, JSON no deeper than can be read; and it never follows a redirect, so the
bearer token goes nowhere else."""

from __future__ import annotations

import asyncio
import gzip
import sys
import threading
import time
import tracemalloc
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from meta_memory import Meta
from meta_memory.errors import ConfigError
from meta_memory.sdk import GatewayUnreachable, NotAGateway, UnreadableAnswer
from meta_memory.sdk.transport import StdioTransport

_TOKEN = "tok-answer-bounds-9f3a"


def _bomb(inflated: int, layers: int = 1) -> bytes:
    """A JSON-RPC answer whose result is ``inflated`` bytes of ``a``, gzipped ``layers`` times (made once,
    before any measurement: a few hundred KiB on the wire)."""
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [squeeze.compress(b'{"jsonrpc": "2.0", "id": 1, "result": "')]
    block = b"a" * (1 << 20)
    for _ in range(inflated >> 20):
        parts.append(squeeze.compress(block))
    parts += [squeeze.compress(b'"}'), squeeze.flush()]
    packed = b"".join(parts)
    for _ in range(layers - 1):
        packed = gzip.compress(packed, 9)
    return packed


_BOMB = _bomb(64 << 20)          # 64 MiB inflated from about 64 KiB
_STACKED = _bomb(32 << 20, 2)    # gzip inside gzip: 32 MiB from a few KiB


class _Hostile(BaseHTTPRequestHandler):
    """Something at the gateway's URL that answers without bounds; the path picks how."""

    protocol_version = "HTTP/1.1"
    seen_tokens: list[str] = []

    def log_message(self, *args: object) -> None:
        pass

    def _json(self, body: bytes, length: int | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        _Hostile.seen_tokens.append(f"{self.path} {self.headers.get('Authorization')}")
        head = b'{"jsonrpc": "2.0", "id": 1, "result": '
        if self.path.startswith("/slowheaders"):
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Slow: ")
            try:
                for _ in range(300):  # a header byte every 0.1 s: 30 s before the headers end
                    self.wfile.write(b"a")
                    self.wfile.flush()
                    time.sleep(0.1)
                self.wfile.write(b"\r\nContent-Length: 2\r\n\r\n{}")
            except OSError:
                pass
            self.close_connection = True
        elif self.path.startswith(("/gzip", "/stacked", "/brotli", "/badgzip", "/smallgzip", "/trailgzip")):
            encoding, body = {
                "/gzip": ("gzip", _BOMB),
                "/stacked": ("gzip, gzip", _STACKED),
                "/brotli": ("br", b"\x0b\x01\x80{}\x03"),
                "/badgzip": ("gzip", b"not gzip at all"),
                "/smallgzip": ("gzip", gzip.compress(head + b'{"records": [], "next_cursor": null}}')),
                # a whole gzip stream, then bytes after its end in the same write (so the same piece read)
                "/trailgzip": ("gzip", gzip.compress(head + b'{"records": [], "next_cursor": null}}') + b"junk"),
            }[self.path.removesuffix("/rpc")]
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Encoding", encoding)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                self.wfile.write(body)
            except OSError:
                pass
            self.close_connection = True
        elif self.path.startswith("/misshapen"):
            self._json(head + b'{"records": 5, "next_cursor": null}}')
        elif self.path.startswith("/trickle"):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(head + b'"')
            try:
                for _ in range(600):
                    self.wfile.write(b"a")
                    self.wfile.flush()
                    time.sleep(0.1)
            except OSError:
                pass
            self.close_connection = True
        elif self.path.startswith("/declared"):
            self._json(head + b'"a"}', length=1 << 40)  # claims a terabyte
            self.close_connection = True
        elif self.path.startswith("/flood"):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(head) + 1, head + b'"'))
                chunk = b"a" * 65536
                for _ in range(64):  # 4 MiB, well past the cap the test sets
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                pass
            self.close_connection = True
        elif self.path.startswith("/twice"):  # a key named twice, deep in the result
            self._json(head + b'{"records": [{"a": [{"memory_id": "m1", "memory_id": "m2"}]}], "next_cursor": null}}')
        elif self.path.startswith("/deep"):
            self._json(head + b"[" * 100_000 + b"]" * 100_000 + b"}")
        elif self.path.startswith("/redirect"):
            self.send_response(307)
            self.send_header("Location", "/elsewhere/rpc")
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self._json(head + b'{"records": [], "next_cursor": null}}')


@pytest.fixture()
def hostile() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Hostile.seen_tokens = []
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_an_answer_that_trickles_is_cut_at_timeout_s(hostile: str) -> None:
    started = time.monotonic()
    with Meta.connect(hostile + "/trickle", token=_TOKEN, timeout_s=1.5) as meta, \
            pytest.raises(GatewayUnreachable, match="did not answer within 1.5 s") as caught:
        meta.agent("agent:a").list()
    assert time.monotonic() - started < 10
    assert caught.value.unanswered and _TOKEN not in str(caught.value)


def test_an_async_answer_that_trickles_is_cut_at_timeout_s(hostile: str) -> None:
    async def run() -> None:
        meta = Meta.connect_async(hostile + "/trickle", token=_TOKEN, timeout_s=1.5)
        try:
            with pytest.raises(GatewayUnreachable, match="did not answer within 1.5 s"):
                await meta.agent("agent:a").list()
        finally:
            await meta.aclose()

    started = time.monotonic()
    asyncio.run(run())
    assert time.monotonic() - started < 10


def test_an_answer_declaring_more_than_max_answer_bytes_is_refused_unread(hostile: str) -> None:
    with Meta.connect(hostile + "/declared", token=_TOKEN) as meta, pytest.raises(UnreadableAnswer) as caught:
        meta.agent("agent:a").list()
    assert caught.value.rule == "max_answer_bytes" and "max_answer_bytes" in str(caught.value)


def test_an_answer_streaming_past_max_answer_bytes_is_refused(hostile: str) -> None:
    with Meta.connect(hostile + "/flood", max_answer_bytes=1024 * 1024) as meta, \
            pytest.raises(UnreadableAnswer, match=r"over max_answer_bytes \(1048576 bytes\)") as caught:
        meta.agent("agent:a").list()
    assert caught.value.limit == 1024 * 1024

    async def run() -> None:
        handle = Meta.connect_async(hostile + "/flood", max_answer_bytes=1024 * 1024)
        try:
            with pytest.raises(UnreadableAnswer, match="max_answer_bytes"):
                await handle.agent("agent:a").list()
        finally:
            await handle.aclose()

    asyncio.run(run())


def test_an_answer_nested_too_deep_is_an_unreadable_answer_not_a_recursion_error(hostile: str) -> None:
    with Meta.connect(hostile + "/deep") as meta, pytest.raises(UnreadableAnswer) as caught:
        meta.agent("agent:a").list()
    assert caught.value.rule == "nesting"


def test_an_answer_naming_a_key_twice_is_an_unreadable_answer_naming_the_key(hostile: str) -> None:
    """Read two ways (``json`` keeps the last value, a proxy or a log in front may have read the first), it
    is no answer, as the TypeScript SDK refuses it too; not "not a gateway"."""
    with Meta.connect(hostile + "/twice") as meta, pytest.raises(UnreadableAnswer) as caught:
        meta.agent("agent:a").list()
    assert caught.value.rule == "duplicate_key"
    assert 'its JSON names the key "memory_id" twice in one object' in str(caught.value)
    assert caught.value.unanswered and not isinstance(caught.value, NotAGateway)


@pytest.mark.parametrize("result, rule, said", [  # the result's text, as a Python expression the stand-in runs
    ("'{\"a\": 1, \"a\": 2}'", "duplicate_key", 'its JSON names the key "a" twice in one object'),
    ("'[' * 100_000 + ']' * 100_000", "nesting", "its JSON nests deeper than can be read"),
])
def test_a_stdio_answer_that_cannot_be_read_is_an_unreadable_answer(tmp_path: Path, result: str, rule: str,
                                                                    said: str) -> None:
    """Over a spawned stdio gateway (a stand-in writing such a line), the same refusals as over HTTP, not
    "the stdio gateway is gone": it answered, its answer was not read."""
    script = ("import sys, json\n"
              f"result = {result}\n"
              "for line in sys.stdin:\n"
              "    rid = json.loads(line)['id']\n"
              "    sys.stdout.write('{\"jsonrpc\": \"2.0\", \"id\": %d, \"result\": %s}\\n' % (rid, result))\n"
              "    sys.stdout.flush()\n")
    transport = StdioTransport(tmp_path / "state", command=[sys.executable, "-c", script])
    try:
        with pytest.raises(UnreadableAnswer) as caught:
            transport.call("meta/status", {})
    finally:
        transport.close()
    assert caught.value.rule == rule
    assert str(caught.value).startswith(f"the answer of the stdio gateway was not read: {said}")


def test_a_redirect_is_not_followed_and_the_token_goes_nowhere_else(hostile: str) -> None:
    with Meta.connect(hostile + "/redirect", token=_TOKEN) as meta, pytest.raises(NotAGateway, match="HTTP 307"):
        meta.agent("agent:a").list()
    assert not any(seen.startswith("/elsewhere") for seen in _Hostile.seen_tokens)


@pytest.mark.parametrize("value", [0, -1, 1.5, "1024", True])
def test_max_answer_bytes_must_be_a_positive_whole_number(value: object) -> None:
    with pytest.raises(ConfigError, match="max_answer_bytes must be a positive whole number"):
        Meta.connect("http://127.0.0.1:1", max_answer_bytes=value)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="max_answer_bytes must be a positive whole number"):
        Meta.connect_async("http://127.0.0.1:1", max_answer_bytes=value)  # type: ignore[arg-type]


def test_an_ordinary_answer_still_reads(hostile: str) -> None:
    with Meta.connect(hostile + "/fine", token=_TOKEN) as meta:
        assert list(meta.agent("agent:a").list().records) == []


def test_headers_that_trickle_are_cut_at_timeout_s(hostile: str) -> None:
    started = time.monotonic()
    with Meta.connect(hostile + "/slowheaders", token=_TOKEN, timeout_s=1.5) as meta, \
            pytest.raises(GatewayUnreachable, match="did not answer within 1.5 s") as caught:
        meta.agent("agent:a").list()
    assert time.monotonic() - started < 4
    assert caught.value.unanswered


def test_async_headers_that_trickle_are_cut_at_timeout_s(hostile: str) -> None:
    async def run() -> None:
        meta = Meta.connect_async(hostile + "/slowheaders", token=_TOKEN, timeout_s=1.5)
        try:
            with pytest.raises(GatewayUnreachable, match="did not answer within 1.5 s"):
                await meta.agent("agent:a").list()
        finally:
            await meta.aclose()

    started = time.monotonic()
    asyncio.run(run())
    assert time.monotonic() - started < 4


def _peak_while(call: object) -> int:
    """The most memory Python held at once while ``call()`` ran, in bytes."""
    tracemalloc.start()
    try:
        call()  # type: ignore[operator]
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak


@pytest.mark.parametrize("path", ["/gzip", "/stacked"])
def test_a_compressed_answer_is_counted_inflated_and_never_inflated_past_the_cap(hostile: str, path: str) -> None:
    def call() -> None:
        with Meta.connect(hostile + path, max_answer_bytes=1 << 20) as meta, pytest.raises(UnreadableAnswer) as caught:
            meta.agent("agent:a").list()
        assert caught.value.rule in ("max_answer_bytes", "content_encoding")

    assert _peak_while(call) < 16 << 20


def test_an_async_compressed_answer_is_never_inflated_past_the_cap(hostile: str) -> None:
    async def run() -> None:
        meta = Meta.connect_async(hostile + "/gzip", max_answer_bytes=1 << 20)
        try:
            with pytest.raises(UnreadableAnswer, match=r"over max_answer_bytes \(1048576 bytes\)"):
                await meta.agent("agent:a").list()
        finally:
            await meta.aclose()

    assert _peak_while(lambda: asyncio.run(run())) < 16 << 20


@pytest.mark.parametrize(("path", "named"), [("/stacked", "gzip, gzip"), ("/brotli", "br"), ("/badgzip", "gzip"),
                                            ("/trailgzip", "gzip")])
def test_an_encoding_the_sdk_does_not_inflate_once_within_bounds_is_unreadable(hostile: str, path: str,
                                                                            named: str) -> None:
    with Meta.connect(hostile + path) as meta, pytest.raises(UnreadableAnswer, match="Content-Encoding") as caught:
        meta.agent("agent:a").list()
    assert caught.value.rule == "content_encoding" and named in str(caught.value)


def test_a_gzipped_answer_within_the_cap_reads(hostile: str) -> None:
    with Meta.connect(hostile + "/smallgzip") as meta:
        assert list(meta.agent("agent:a").list().records) == []


def test_a_result_of_the_wrong_shape_is_an_unreadable_answer_naming_method_and_field(hostile: str) -> None:
    with Meta.connect(hostile + "/misshapen", token=_TOKEN) as meta, pytest.raises(UnreadableAnswer) as caught:
        meta.agent("agent:a").list()
    assert caught.value.rule == "result"
    assert caught.value.method == "meta/agent_memory/list" and caught.value.field == "records"
    assert "meta/agent_memory/list" in str(caught.value) and "records: Input should be" in str(caught.value)

    async def run() -> None:
        meta = Meta.connect_async(hostile + "/misshapen", token=_TOKEN)
        try:
            with pytest.raises(UnreadableAnswer, match=r"meta/agent_memory/list .*: records: "):
                await meta.agent("agent:a").list()
        finally:
            await meta.aclose()

    asyncio.run(run())

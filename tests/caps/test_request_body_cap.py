"""``[gateway] max_request_bytes``: a request body over the cap is refused with HTTP 413 before it
is parsed (docs/rpc.md), whether or not it declares its length; a body exactly at the cap is served."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from caps_support import uniq
from support import GatewayProcess, start_gateway, write_config

CAP = 4096


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    root = tmp_path_factory.mktemp("small")
    gw = start_gateway(root / "state", config=write_config(root / "config.toml", f"[gateway]\nmax_request_bytes = {CAP}\n"))
    yield gw
    gw.stop()


def _remember_body(ident: str, size: int) -> bytes:
    """A valid ``remember`` request of exactly ``size`` bytes (padded inside the body text)."""
    payload: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "meta/agent_memory/remember",
                               "params": {"identity": ident, "title": "Sized", "body": ""}}
    base = len(json.dumps(payload).encode())
    payload["params"]["body"] = "x" * (size - base)
    raw = json.dumps(payload).encode()
    assert len(raw) == size
    return raw


def _post(gw: GatewayProcess, content: Any, **headers: str) -> httpx.Response:
    return httpx.post(gw.url + "/rpc", content=content, headers={"Content-Type": "application/json", **headers},
                      timeout=30)


def _stored(gw: GatewayProcess, ident: str) -> list[Any]:
    resp = httpx.post(gw.url + "/rpc", json={"jsonrpc": "2.0", "id": 2, "method": "meta/agent_memory/recall",
                                            "params": {"identity": ident, "selection": "always"}}, timeout=30)
    return resp.json()["result"]["records"]


def test_a_body_exactly_at_the_cap_is_served(small: GatewayProcess) -> None:
    ident = f"agent:req-{uniq()}"
    resp = _post(small, _remember_body(ident, CAP))
    assert resp.status_code == 200
    assert resp.json()["result"]["created"] is True
    assert len(_stored(small, ident)) == 1


def test_one_byte_over_the_cap_is_413_and_nothing_is_written(small: GatewayProcess) -> None:
    ident = f"agent:req-{uniq()}"
    resp = _post(small, _remember_body(ident, CAP + 1))
    assert resp.status_code == 413
    err = resp.json()
    assert err["jsonrpc"] == "2.0" and err["id"] is None
    assert err["error"]["code"] == -32600
    assert err["error"]["data"] == {"kind": "invalid_request", "field": "request"}
    assert err["error"]["message"] == (f"Invalid request: request body exceeds the cap of {CAP} bytes "
                                       "([gateway] max_request_bytes)")
    assert _stored(small, ident) == []


def test_the_cap_is_checked_before_parsing(small: GatewayProcess) -> None:
    garbage = b"{" * (CAP + 1)  # not JSON: a parser would answer -32700
    assert _post(small, garbage).status_code == 413
    assert _post(small, b"\xff" * (CAP + 1)).status_code == 413  # not even UTF-8
    under = _post(small, b"{" * 100)
    assert under.status_code == 200 and under.json()["error"]["code"] == -32700


def test_a_chunked_body_without_a_length_is_cut_off_at_the_cap(small: GatewayProcess) -> None:
    ident = f"agent:req-{uniq()}"
    body = _remember_body(ident, CAP * 4)

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(body), 1000):
            yield body[start:start + 1000]

    resp = _post(small, chunks())
    assert resp.request.headers.get("transfer-encoding") == "chunked"
    assert resp.status_code == 413
    assert _stored(small, ident) == []


def test_a_batch_over_the_cap_is_refused_whole(small: GatewayProcess) -> None:
    ident = f"agent:req-{uniq()}"
    batch = [{"jsonrpc": "2.0", "id": i, "method": "meta/agent_memory/remember",
              "params": {"identity": ident, "title": f"Item {i}", "body": "y" * 200}} for i in range(30)]
    raw = json.dumps(batch).encode()
    assert len(raw) > CAP
    assert _post(small, raw).status_code == 413
    assert _stored(small, ident) == []


def test_the_default_cap_allows_a_full_64_kib_body(gateway_proc: GatewayProcess) -> None:
    ident = f"agent:req-{uniq()}"
    payload = {"jsonrpc": "2.0", "id": 1, "method": "meta/agent_memory/remember",
               "params": {"identity": ident, "title": "Full body", "body": "x" * 65_536}}
    resp = _post(gateway_proc, json.dumps(payload).encode())
    assert resp.status_code == 200 and resp.json()["result"]["created"] is True, resp.text[:300]


def test_stdio_refuses_a_line_over_the_cap_without_parsing_it_and_keeps_serving(tmp_path) -> None:
    import subprocess
    import sys

    config = write_config(tmp_path / "config.toml", f"[gateway]\nmax_request_bytes = {CAP}\n")
    proc = subprocess.Popen([sys.executable, "-m", "meta_memory.cli", "gateway", "--stdio", "--state-dir",
                             str(tmp_path / "state"), "--config", str(config)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    ident = f"agent:stdio-{uniq()}"
    try:
        for line in (_remember_body(ident, CAP + 1), b"{" * (CAP * 3), _remember_body(ident, CAP)):
            proc.stdin.write(line + b"\n")
            proc.stdin.flush()
        over, garbage, at_cap = (json.loads(proc.stdout.readline()) for _ in range(3))
        for err in (over, garbage):
            assert err["error"]["code"] == -32600 and err["error"]["data"]["field"] == "request", err
            assert str(CAP) in err["error"]["message"] and "max_request_bytes" in err["error"]["message"], err
        # the over-long request's id stands in its head: the refusal answers it; the garbage has none
        assert over["id"] == 1 and garbage["id"] is None, (over, garbage)
        assert at_cap["result"]["created"] is True
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 9, "method": "meta/agent_memory/recall",
                                     "params": {"identity": ident, "selection": "always"}}).encode() + b"\n")
        proc.stdin.flush()
        records = json.loads(proc.stdout.readline())["result"]["records"]
        assert len(records) == 1 and len(records[0]["body"]) == len(json.loads(_remember_body(ident, CAP))["params"]["body"])
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)

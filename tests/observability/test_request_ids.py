"""Request ids and JSON log lines without the otel extra: HTTP and stdio, opt-in."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from support import jsonrpc_lines, start_gateway

pytestmark = pytest.mark.gateway

BAD = {"jsonrpc": "2.0", "id": 1, "method": "meta/agent_memory/remember",
       "params": {"identity": "a:b", "title": "t", "body": "AKIAIOSFODNN7EXAMPLE"}}


def test_json_logs_put_the_request_id_in_error_responses(tmp_path: Path) -> None:
    gw = start_gateway(tmp_path / "s", "--log-format", "json")
    try:
        resp = httpx.post(gw.url + "/rpc", json=BAD, headers={"X-Request-Id": "job-17.step:3"})
        assert resp.headers["x-request-id"] == "job-17.step:3"
        assert resp.json()["error"]["data"]["request_id"] == "job-17.step:3"
        too_long = httpx.post(gw.url + "/rpc", json=BAD, headers={"X-Request-Id": "a" * 65})
        assert re.fullmatch(r"[0-9a-f]{16}", too_long.headers["x-request-id"])
        ok = httpx.post(gw.url + "/rpc", json={"jsonrpc": "2.0", "id": 2, "method": "meta/capabilities"})
        assert "result" in ok.json() and re.fullmatch(r"[0-9a-f]{16}", ok.headers["x-request-id"])
    finally:
        gw.stop()
    text = "".join(gw.proc.log_tail)
    assert "AKIAIOSFODNN7EXAMPLE" not in text
    for line in gw.proc.log_tail:  # every log line is one JSON object
        if line.strip() and not line.startswith("meta-memory gateway listening"):  # stdout's one line
            json.loads(line)


def test_text_logs_keep_error_data_as_it_was(gateway) -> None:  # noqa: ANN001
    resp = httpx.post(gateway.url + "/rpc", json=BAD)
    assert "request_id" not in resp.json()["error"]["data"]  # opt-in: nothing changes for existing clients
    assert re.fullmatch(r"[0-9a-f]{16}", resp.headers["x-request-id"])


def test_stdio_calls_get_their_own_request_ids(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "meta_memory.cli", "gateway", "--stdio", "--log-format", "json",
                             "--state-dir", str(tmp_path / "s")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        one, two = jsonrpc_lines(proc, [BAD, {**BAD, "id": 2}])
        ids = [one["error"]["data"]["request_id"], two["error"]["data"]["request_id"]]
        assert all(re.fullmatch(r"[0-9a-f]{16}", i) for i in ids) and ids[0] != ids[1]
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)

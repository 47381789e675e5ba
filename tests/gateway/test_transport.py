"""JSON-RPC 2.0 framing over the real HTTP gateway and the stdio gateway."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time

import httpx

from support import jsonrpc_lines


def test_health_answers_200_json(gateway):
    resp = httpx.get(gateway.url + "/v1/health")
    assert resp.status_code == 200
    assert resp.json()["status"] == "ok"


def test_single_call_and_unknown_method(gateway):
    assert [s["store"] for s in gateway.result("meta/memory/stores")["stores"]] == [
        "knowledge_graph", "vector", "timeline", "todo", "top_of_mind"]
    err = gateway.error("meta/nope")
    assert err["code"] == -32601 and err["data"]["kind"] == "method_not_found"


JSON = {"Content-Type": "application/json"}


def test_parse_error_and_invalid_utf8(gateway):
    resp = httpx.post(gateway.url + "/rpc", content=b'{"jsonrpc": "2.0", "method": ', headers=JSON)
    assert resp.json()["error"]["code"] == -32700
    resp = httpx.post(gateway.url + "/rpc", content=b'{"jsonrpc":"2.0","method":"meta/status","id":"\xff"}', headers=JSON)
    body = resp.json()
    assert body["error"]["code"] == -32700 and "UTF-8" in body["error"]["message"]


def test_an_integer_past_the_digit_limit_is_a_parse_error(gateway):
    """Python refuses to convert integer literals of more than 4,300 digits; such a body is malformed
    JSON for the gateway (-32700 naming the limit), not an internal failure, and the gateway stays up."""
    body = b'{"jsonrpc":"2.0","method":"meta/memory/index","id":1,"params":{"entity":"e","topic":"t","fact":"f","metadata":{"n":' \
        + b"9" * 5000 + b"}}}"
    resp = httpx.post(gateway.url + "/rpc", content=body, headers=JSON)
    err = resp.json()["error"]
    assert err["code"] == -32700 and "digits" in err["message"], err
    assert gateway.result("meta/memory/query", {})["assertions"] == []


def test_invalid_requests_name_the_field(gateway):
    cases = [
        ({"jsonrpc": "1.0", "method": "meta/status", "id": 1}, "jsonrpc"),
        ({"jsonrpc": "2.0", "method": 7, "id": 1}, "method"),
        ({"jsonrpc": "2.0", "method": "meta/status", "params": 3, "id": 1}, "params"),
        ({"jsonrpc": "2.0", "method": "meta/status", "id": {"a": 1}}, "id"),
    ]
    for payload, field in cases:
        body = httpx.post(gateway.url + "/rpc", json=payload).json()
        assert body["error"]["code"] == -32600, payload
        assert body["error"]["data"]["field"] == field


def test_invalid_params_name_field_and_rule(gateway):
    err = gateway.error("meta/memory/index", {"entity": "", "topic": "t", "fact": "f"})
    assert err["code"] == -32602
    assert err["message"] == "Invalid params: entity must be a non-empty string"
    assert err["data"] == {"kind": "invalid_params", "field": "entity"}
    err = gateway.error("meta/memory/index", [1, 2])
    assert err["code"] == -32602 and "JSON object" in err["message"]


def test_params_that_are_not_an_object_are_told_one_rule(gateway):
    """docs/rpc.md: "Params are always a JSON object". ``null`` or a scalar is no JSON-RPC request
    (-32600), an array is one with params this gateway does not take (-32602): both state that rule, and
    a missing required member is "<field> is required" whichever model declares it."""
    for params, code in ((None, -32600), ("x", -32600), ([], -32602), ([1], -32602)):
        body = httpx.post(gateway.url + "/rpc", json={"jsonrpc": "2.0", "id": 1, "method": "meta/agent_memory/list",
                                                      "params": params}).json()
        assert body["error"]["code"] == code, (params, body)
        assert body["error"]["message"].endswith("params must be a JSON object"), (params, body)
        assert body["error"]["data"]["field"] == "params"
    for method, params, field in (("meta/agent_memory/list", {}, "identity"),
                                  ("meta/agent_memory/remember", {"identity": "lead:main", "body": "b"}, "title"),
                                  ("meta/gating/check", {"entity": "e"}, "topic"),
                                  ("meta/turn/tool_result", {"identity": "lead:main", "tool_name": "t"}, "session_key")):
        err = gateway.error(method, params)
        assert err["code"] == -32602 and err["message"] == f"Invalid params: {field} is required", (method, err)
        assert err["data"]["field"] == field


def test_batch_mixed_with_notifications(gateway):
    batch = [
        {"jsonrpc": "2.0", "method": "meta/memory/index", "params": {"entity": "e", "topic": "t", "fact": "one"}, "id": "a"},
        {"jsonrpc": "2.0", "method": "meta/memory/index", "params": {"entity": "e", "topic": "t", "fact": "two"}},
        {"jsonrpc": "2.0", "method": "meta/nope", "id": "c"},
        5,
    ]
    body = httpx.post(gateway.url + "/rpc", json=batch).json()
    assert [r.get("id") for r in body] == ["a", "c", None]
    assert body[0]["result"]["assertion_id"].startswith("memory-assert-")
    assert body[1]["error"]["code"] == -32601
    assert body[2]["error"]["code"] == -32600
    # the notification was executed even though nothing answered it
    facts = [a["fact"] for a in gateway.result("meta/memory/query", {"entity": "e"})["assertions"]]
    assert facts == ["one", "two"]
    empty = httpx.post(gateway.url + "/rpc", json=[]).json()
    assert empty["error"]["code"] == -32600


def test_notification_only_gets_no_body(gateway):
    resp = httpx.post(gateway.url + "/rpc", json={"jsonrpc": "2.0", "method": "meta/status"})
    assert resp.status_code == 204 and resp.content == b""


def test_oversized_body_refused_before_parsing(gateway_factory, tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[gateway]\nmax_request_bytes = 1024\n")
    gw = gateway_factory(tmp_path / "s", config=cfg)
    resp = httpx.post(gw.url + "/rpc", content=b"{" + b" " * 4096, headers=JSON)
    assert resp.status_code == 413
    assert resp.json()["error"]["code"] == -32600
    assert resp.json()["error"]["data"]["field"] == "request"  # the request, never a record's `body`


def test_a_batch_past_its_time_budget_answers_the_calls_it_did_not_start_with_capacity_exceeded(
        gateway_factory, tmp_path):
    """A batch of thousands of recalls cannot hold a worker: once ``max_batch_ms`` is spent, every call
    not started is answered ``capacity_exceeded`` in its place (none dropped, order kept), a notification
    is not run, and a malformed entry keeps its own error."""
    cfg = tmp_path / "c.toml"
    cfg.write_text("[gateway]\nmax_batch_ms = 100\n")
    gw = gateway_factory(tmp_path / "s", config=cfg)
    gw.result("meta/agent_memory/remember", {"identity": "a:b", "title": "Trains", "body": "Trains leave at nine."})
    n = 3000
    batch = [{"jsonrpc": "2.0", "id": i, "method": "meta/agent_memory/recall",
              "params": {"identity": "a:b", "query_text": f"trains nine {i}"}} for i in range(n)]
    batch += [{"jsonrpc": "2.0", "method": "meta/memory/index", "params": {"entity": "e", "topic": "t", "fact": "late"}},
              7, {"jsonrpc": "2.0", "id": "last", "method": "meta/status"}]
    body = httpx.post(gw.url + "/rpc", json=batch, timeout=120).json()
    assert [r["id"] for r in body] == [*range(n), None, "last"]
    ran = [r for r in body[:n] if "result" in r]
    refused = body[len(ran):n]
    assert ran and refused, len(ran)
    assert all("result" not in r for r in refused)  # once the budget is spent, nothing more runs
    for r in [*refused, body[-1]]:
        assert r["error"]["code"] == -32005
        assert r["error"]["data"] == {"kind": "capacity_exceeded", "resource": "batch_time", "limit": 100,
                                      "retry_after_ms": 100}
        assert "max_batch_ms" in r["error"]["message"]
    assert body[n]["error"]["code"] == -32600
    assert gw.result("meta/memory/query", {"entity": "e"})["assertions"] == []  # the late notification never ran


def test_sigterm_finishes_in_flight_requests_then_exits_zero(gateway):
    results: list[int] = []

    def client() -> None:
        for i in range(30):
            try:
                r = httpx.post(gateway.url + "/rpc", json={"jsonrpc": "2.0", "method": "meta/memory/index",
                               "params": {"entity": "e", "topic": "t", "fact": f"f{i}"}, "id": i}, timeout=10)
                if "result" in r.json():
                    results.append(i)
            except httpx.HTTPError:
                return

    t = threading.Thread(target=client)
    t.start()
    # signal while writes are in flight: after the first acknowledged one (however loaded the machine)
    deadline = time.monotonic() + 30
    while not results and time.monotonic() < deadline:
        time.sleep(0.01)
    assert results, "no write was acknowledged within 30 s"
    code = gateway.stop(signal.SIGTERM)
    t.join()
    assert code == 0
    # every acknowledged write is on disk
    state = json.loads((gateway.state_dir / "memory-ledger-state.json").read_text())
    on_disk = {a["fact"] for a in state["assertions"]}
    assert {f"f{i}" for i in results} <= on_disk


def test_stdio_gateway_serves_the_same_table(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "meta_memory.cli", "gateway", "--stdio", "--state-dir",
                             str(tmp_path / "s")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out = jsonrpc_lines(proc, [
            {"jsonrpc": "2.0", "method": "meta/memory/index", "params": {"entity": " Ops ", "topic": "Deploy", "fact": "x"}, "id": 1},
            {"jsonrpc": "2.0", "method": "meta/memory/index", "params": {"entity": "", "topic": "t", "fact": "x"}, "id": 2},
            [{"jsonrpc": "2.0", "method": "meta/memory/stores", "id": 3}],
        ])
        assert out[0]["result"]["entity"] == "ops" and out[0]["result"]["topic"] == "deploy"
        assert out[1]["error"]["code"] == -32602 and out[1]["error"]["data"]["field"] == "entity"
        assert out[2][0]["result"]["stores"][0] == {"store": "knowledge_graph", "record_count": 1}
        proc.stdin.write(b"not json\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["error"]["code"] == -32700
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=10) == 0

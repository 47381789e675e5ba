"""``rpc.discover`` over a real gateway: the OpenRPC document lists what the gateway answers, real
results validate against its result schemas, and its params are exactly the members each method's
parser accepts."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from support import GatewayProcess, start_gateway, write_config


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("openrpc")
    backups = root / "backups"
    backups.mkdir()
    config = write_config(root / "c.toml", f'[gateway]\nbackup_dir = "{backups}"\n')
    g = start_gateway(root / "state", config=config)
    g.backups = backups  # type: ignore[attr-defined]
    yield g
    g.stop()


@pytest.fixture(scope="module")
def doc(gw: GatewayProcess) -> dict[str, Any]:
    return gw.result("rpc.discover")


def _methods(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["name"]: m for m in doc["methods"]}


def test_document_lists_exactly_the_advertised_methods(gw: GatewayProcess, doc: dict[str, Any]) -> None:
    assert doc["openrpc"].startswith("1.") and doc["info"]["version"] == gw.result("meta/status")["version"]
    names = set(_methods(doc))
    assert names == set(gw.result("meta/capabilities")["methods"])
    assert "rpc.discover" in names and len(names) == len(doc["methods"])


def test_every_method_has_by_name_params_and_a_result_schema(doc: dict[str, Any]) -> None:
    for m in doc["methods"]:
        assert m["paramStructure"] == "by-name" and m["summary"], m["name"]
        assert all({"name", "required", "schema"} <= set(p) for p in m["params"]), m["name"]
        if m["name"] != "rpc.discover":
            assert m["result"]["schema"], f"{m['name']} has no result schema"
    refs = [m["result"]["schema"].get("$ref") for m in doc["methods"]]
    for ref in filter(None, refs):
        assert ref.split("/")[-1] in doc["components"]["schemas"]


def test_required_params_are_marked(doc: dict[str, Any]) -> None:
    methods = _methods(doc)
    required = {m: {p["name"] for p in methods[m]["params"] if p["required"]} for m in methods}
    assert required["meta/agent_memory/remember"] == {"identity", "title", "body"}
    assert required["meta/agent_memory/update"] == {"identity", "memory_id"}
    assert required["meta/memory/quarantine/decide"] == {"identity", "memory_id", "verdict", "expected_content_hash"}
    assert required["meta/session/note"] == {"identity", "session_key"}
    assert required["meta/status"] == set()


def _validate(doc: dict[str, Any], method: str, result: Any) -> None:
    schema = {**_methods(doc)[method]["result"]["schema"], "components": doc["components"]}
    jsonschema.validate(result, schema)


def _exercise(gw: GatewayProcess) -> dict[str, Any]:
    """Call every method once with working params; returns method -> result."""
    ident, sess = f"agent:{uuid.uuid4().hex[:8]}", f"s-{uuid.uuid4().hex[:8]}"
    out: dict[str, Any] = {}

    def call(method: str, params: Any = None) -> Any:
        out[method] = gw.result(method, params)
        return out[method]

    for m in ("meta/status", "meta/storage/doctor", "meta/capabilities", "meta/memory/stores", "rpc.discover"):
        call(m)
    first = call("meta/agent_memory/remember", {"identity": ident, "title": "Tea", "body": "green tea", "tags": ["a"]})
    call("meta/agent_memory/recall", {"identity": ident, "query_text": "tea"})
    call("meta/agent_memory/update", {"identity": ident, "memory_id": first["memory_id"], "body": "green tea, hot"})
    call("meta/agent_memory/manifest", {"identity": ident})
    other = gw.result("meta/agent_memory/remember", {"identity": ident, "title": "Gone", "body": "soon forgotten"})
    call("meta/agent_memory/forget", {"identity": ident, "memory_id": other["memory_id"]})
    call("meta/agent_memory/list", {"identity": ident, "tags": ["a"]})
    call("meta/agent_memory/history", {"identity": ident, "memory_id": other["memory_id"]})
    call("meta/agent_memory/remember_batch", {"identity": ident, "records": [
        {"title": "B1", "body": "batch one"}, {"title": "B1", "body": "batch one"},
        {"title": "Key", "body": "AKIAABCDEFGHIJKLMNOP"}]})
    doomed = gw.result("meta/agent_memory/remember", {"identity": ident, "title": "Doomed", "body": "to be erased"})
    out["erase#dry"] = gw.result("meta/agent_memory/erase", {"identity": ident, "memory_id": doomed["memory_id"],
                                                             "dry_run": True})
    call("meta/agent_memory/erase", {"identity": ident, "memory_id": doomed["memory_id"]})
    call("meta/agent_memory/erase_identity", {"identity": f"agent:{uuid.uuid4().hex[:8]}", "dry_run": True})
    call("meta/memory/index", {"entity": "e", "topic": "t", "fact": "f"})
    gw.result("meta/memory/index", {"entity": "e", "topic": "c", "conflict": True, "conflict_reason": "why"})
    call("meta/memory/query", {})
    call("meta/gating/check", {"entity": "e", "topic": "c"})
    call("meta/memory/resolve", {"entity": "e", "topic": "c"})
    _validate_now = gw.result("meta/gating/check", {"entity": "e", "topic": "free"})
    out["gating_check_allowed"] = _validate_now
    call("meta/session/note", {"identity": ident, "session_key": sess})
    call("meta/turn/tool_result", {"identity": ident, "session_key": sess, "tool_name": "web_fetch"})
    call("meta/agent_memory/tool", {"identity": ident, "session_key": sess,
                                    "arguments": {"action": "remember", "title": "Web", "body": "from a page"}})
    call("meta/agent_memory/tool_schema")
    gw.result("meta/agent_memory/tool", {"identity": ident, "session_key": sess, "mob": "crew",
                                         "arguments": {"action": "propose_to_mob", "title": "P", "body": "shared"}})
    call("meta/session/compacted", {"identity": ident, "session_key": sess})
    call("meta/turn/inject", {"identity": ident, "query_text": "tea"})
    call("meta/turn/defang", {"text": "plain"})
    out["defang_blocks"] = gw.result("meta/turn/defang", {"blocks": [{"type": "text", "text": "plain"}]})
    call("meta/session/retire", {"identity": ident, "session_key": sess, "cause": "done"})
    call("meta/session/reset", {"identity": ident, "session_key": sess})
    call("meta/events/list", {"limit": 1000})
    proposals = call("meta/memory/proposals/list", {})["proposals"]
    call("meta/memory/panel/records", {"identity": ident})
    quarantined = call("meta/memory/panel/quarantine", {})["records"]
    rec = call("meta/memory/panel/record", {"memory_id": quarantined[0]["id"]})
    call("meta/memory/quarantine/decide", {"identity": ident, "memory_id": quarantined[0]["id"], "verdict": "release",
                                           "expected_content_hash": rec["record"]["content_hash"]})
    call("meta/memory/steward/dream", {})
    for m in ("dreams", "dream_runs", "audit_verdicts", "overview", "proposals", "injections", "harvests"):
        call("meta/memory/panel/" + m, {})
    call("meta/storage/backup", {"dest": str(gw.backups / "copy")})  # type: ignore[attr-defined]
    page = call("meta/storage/export", {})
    while not page["done"]:
        page = call("meta/storage/export", {"export_id": page["export_id"]})
    if proposals:
        call("meta/memory/proposals/decide", {"proposal_id": proposals[0]["proposal_id"], "action": "reject"})
    return out


def test_real_results_validate_against_the_documented_schemas(gw: GatewayProcess, doc: dict[str, Any]) -> None:
    results = _exercise(gw)
    results["meta/gating/check#allowed"] = results.pop("gating_check_allowed")
    results["meta/turn/defang#blocks"] = results.pop("defang_blocks")
    results["meta/agent_memory/erase#dry"] = results.pop("erase#dry")
    for key, result in results.items():
        _validate(doc, key.split("#")[0], result)
    untested = set(_methods(doc)) - {k.split("#")[0] for k in results} - {"meta/gating/decide"}
    assert untested == set(), untested


def test_a_result_schema_refuses_an_undocumented_member(doc: dict[str, Any]) -> None:
    good = {"memory_id": "m", "deleted": True}
    _validate(doc, "meta/agent_memory/forget", good)
    with pytest.raises(jsonschema.ValidationError):
        _validate(doc, "meta/agent_memory/forget", {**good, "body": "leaked"})


def _probe_value(schema: dict[str, Any]) -> Any:
    return {"__probe__": [1, 2, 3]}  # wrong type for every scalar or list param: refused, never executed


def test_documented_params_are_exactly_what_each_parser_accepts(gw: GatewayProcess, doc: dict[str, Any]) -> None:
    for name, m in _methods(doc).items():
        err = gw.error(name, {"zz_not_a_param": 1})
        assert err["code"] == -32602, (name, err)
        if not [p for p in m["params"] if p["required"]]:
            assert "zz_not_a_param" in err["message"], (name, err)
        for p in m["params"]:
            body = gw.rpc(name, {p["name"]: _probe_value(p["schema"])})
            message = body.get("error", {}).get("message", "")
            assert f"unknown field '{p['name']}'" not in message and "unsupported field" not in message, (name, p, body)


def test_discover_takes_no_params_and_needs_no_grant_under_access(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.toml", "[access]\nenabled = true\n")
    gw = start_gateway(tmp_path / "state", config=config)
    try:
        doc = gw.result("rpc.discover")  # anonymous: the document describes methods, it holds no data
        assert "meta/agent_memory/remember" in _methods(doc)
        assert gw.error("rpc.discover", {"x": 1})["code"] == -32602
        assert "records" not in str(doc.get("info"))
        assert gw.rpc("meta/agent_memory/recall", {"identity": "a:b", "query_text": "x"})["error"]["code"] == -32030
    finally:
        gw.stop()


def test_discover_drops_the_tool_methods_when_the_tool_is_off(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.toml", "[agent_memory]\nrecorder_tool = false\n")
    gw = start_gateway(tmp_path / "state", config=config)
    try:
        names = set(_methods(gw.result("rpc.discover")))
        assert "meta/agent_memory/tool" not in names and "meta/agent_memory/tool_schema" not in names
        assert "meta/agent_memory/remember" in names
    finally:
        gw.stop()

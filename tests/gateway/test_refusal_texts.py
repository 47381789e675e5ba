"""Refusals that say what to change: a bad metadata key is named (with where it sits), an unsupported filter
operator lists the supported ones, an over-long body names ``[gateway] max_request_bytes`` (see
``tests/caps/test_request_body_cap.py``), and the command line that cannot reach a gateway says how to
start one or to work on a state directory instead. Through a real gateway and the ``meta-memory`` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from meta_memory.agent_memory.fields import METADATA_KEY_RULE
from support import GatewayProcess

pytestmark = pytest.mark.gateway

ID = "lead:main"


def test_a_bad_metadata_key_is_named(gateway: GatewayProcess) -> None:
    for metadata, field, named in (({"team": "a", "$where": 1}, "metadata.$where", 'the key "$where" in metadata'),
                                   ({"deep": {"ok": {"x.y": 1}}}, 'metadata.deep.ok["x.y"]',
                                    'the key "x.y" in metadata["deep"]["ok"]'),
                                   ({"k" * 300: 1}, f"metadata.{'k' * 64}...", f'the key "{"k" * 64}..." in metadata'),
                                   ({"tab\there": 1}, "metadata.tab\\x09here", 'the key "tab\\there" in metadata')):
        err = gateway.error("meta/agent_memory/remember", {"identity": ID, "title": "T", "body": "B",
                                                          "metadata": metadata})
        assert err["code"] == -32602 and err["data"]["field"] == field
        assert err["message"] == f"Invalid params: {field}: {METADATA_KEY_RULE} (got {named})", err
    # the ledger's metadata follows the same rule, and names the key the same way
    err = gateway.error("meta/memory/index", {"entity": "e", "topic": "t", "store": "knowledge_graph", "fact": "f",
                                              "metadata": {"source": {"$gt": 1}}})
    assert err["code"] == -32602 and '(got the key "$gt" in metadata["source"])' in err["message"], err


def test_an_unsupported_filter_operator_lists_the_supported_ones(gateway: GatewayProcess) -> None:
    for flt in ({"n": {"$regex": "a.*"}}, {"$where": "1"}):
        err = gateway.error("meta/agent_memory/recall", {"identity": ID, "query_text": "x", "filter": flt})
        assert err["code"] == -32602 and err["data"]["field"] == "filter"
        op = next(iter(flt["n"])) if "n" in flt else "$where"
        assert err["message"] == (f'Invalid params: filter operator "{op}" is not supported (supported: $eq, $ne, '
                                  "$gt, $gte, $lt, $lte, $in, $nin and $not on a key; $and, $or and $not "
                                  "combining filters)"), err


def test_the_command_line_that_cannot_reach_a_gateway_says_what_to_do() -> None:
    env = {**os.environ, "COLUMNS": "200"}
    for extra in ((), ("--json",)):
        out = subprocess.run([sys.executable, "-m", "meta_memory.cli", "recall", "x", "--identity", ID,
                              "--url", "http://127.0.0.1:9", *extra], capture_output=True, text=True, timeout=120,
                             env=env)
        assert out.returncode == 1
        said = " ".join(out.stderr.split())
        assert "cannot reach the meta-memory gateway at http://127.0.0.1:9/rpc" in said
        assert "start one with `meta-memory serve` (or name another with --url), or pass --state-dir DIR" in said
        if extra:
            assert "--state-dir DIR" in json.loads(out.stdout)["error"]["message"]


def test_backup_and_export_that_cannot_reach_a_gateway_say_what_to_do(tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "200"}
    for args in (("backup", "nightly"), ("export", "--output", str(tmp_path / "out.jsonl"))):
        out = subprocess.run([sys.executable, "-m", "meta_memory.cli", *args, "--url", "http://127.0.0.1:9"],
                             capture_output=True, text=True, timeout=120, env=env)
        said = " ".join(out.stderr.split())
        assert out.returncode != 0 and "cannot reach" in said, (args, said)
        assert "start one with `meta-memory serve`" in said and "--state-dir DIR" in said, (args, said)


DEEP = "[" * 20_000 + "]" * 20_000


def _too_deep(request_id: str) -> str:
    return '{"jsonrpc": "2.0", ' + request_id + '"method": "meta/status", "params": {"a": ' + DEEP + "}}"


#: Bodies nested past the reader, and the id each answer carries: the top-level id when the body is
#: well-formed and holds a valid one (after the deep part too), else null (it cannot be detected).
TOO_DEEP = [(_too_deep('"id": 1, '), 1),
            (_too_deep("").replace("}}", '}, "id": "late"}'), "late"),
            (_too_deep('"id": 1, "id": 2, '), None),  # a repeated key: no one id
            (_too_deep('"id": [1], '), None),
            (_too_deep('"id": 1, ') + " trailing", None),
            ('{"jsonrpc": "2.0", "params": {"id": 5, "a": ' + DEEP + "}}", None)]  # not the top level's


def test_json_nested_past_the_reader_names_the_params_depth_rule(gateway: GatewayProcess) -> None:
    for body, request_id in TOO_DEEP:
        answer = httpx.post(gateway.url + "/rpc", content=body, headers={"Content-Type": "application/json"},
                            timeout=30).json()
        assert answer["error"]["code"] == -32700, answer
        assert answer["error"]["message"].endswith(
            "request nesting is too deep for the JSON reader (params nest at most 64 levels of objects and arrays)"
        ), answer
        assert answer["id"] == request_id, (body[:40], body[-30:], answer)


def test_json_nested_past_the_reader_is_answered_with_its_id_over_stdio(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "meta_memory.cli", "gateway", "--stdio", "--state-dir",
                             str(tmp_path / "s")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for body, request_id in TOO_DEEP:
            proc.stdin.write(body.encode() + b"\n")
            proc.stdin.flush()
            answer = json.loads(proc.stdout.readline())
            assert answer["error"]["code"] == -32700 and answer["id"] == request_id, (body[-30:], answer)
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0

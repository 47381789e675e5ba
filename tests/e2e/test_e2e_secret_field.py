"""A secret refusal names where the secret is: ``data.field`` (and the message) name the part of the
record that held it (``body``, ``tags.1``, ``metadata.deep.k``; ``records.<i>.<path>`` in a bulk write),
through the real gateway, the ``memory`` tool and the command line, and never repeat the secret."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from e2e_support import Rpc, uid

OPENAI = "sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD"
AWS = "AKIAIOSFODNN7EXAMPLE"
SECRETS = (OPENAI, AWS, "abcdefghijklmnop", "IOSFODNN", "hunter2x")


def _no_echo(obj: Any) -> None:
    dumped = json.dumps(obj, ensure_ascii=False)
    assert not [s for s in SECRETS if s in dumped], dumped


def _refused(rpc: Rpc, **params: Any) -> dict[str, Any]:
    ident = uid()
    err = rpc.error("meta/agent_memory/remember", {"identity": ident, "title": "t", "body": "b", **params})
    assert err["code"] == -32040 and err["data"]["reason"] == "secret_detected", err
    _no_echo(err)
    assert rpc.manifest_ids(ident) == []
    return err


@pytest.mark.parametrize(("params", "field"), [
    ({"metadata": {"deep": {"k": OPENAI}}}, "metadata.deep.k"),
    ({"metadata": {"list": [1, {"password": "hunter2x"}]}}, "metadata.list.1.password"),
    ({"metadata": {"2024": [OPENAI]}}, 'metadata["2024"].0'),
    ({"body": f"the key is {OPENAI}"}, "body"),
    ({"title": f"key {AWS}"}, "title"),
    ({"tags": ["ops", AWS]}, "tags.1"),
], ids=["metadata value", "metadata assignment", "metadata key of digits", "body", "title", "tag"])
def test_a_secret_refusal_names_the_field_that_held_it(rpc: Rpc, params: dict[str, Any], field: str) -> None:
    err = _refused(rpc, **params)
    assert err["data"]["field"] == field, err
    assert err["data"]["op_index"] == 0 and err["data"]["secret_class"]
    assert f"secret pattern class (in {field})" in err["message"], err["message"]


def test_a_metadata_key_holding_the_secret_is_never_named(rpc: Rpc) -> None:
    """The path stops at the object holding the key: naming the key would repeat the secret."""
    err = _refused(rpc, metadata={"outer": {OPENAI: 1}})
    assert err["data"]["field"] == "metadata.outer"


def test_a_bulk_write_names_the_item_and_its_field(rpc: Rpc) -> None:
    ident = uid()
    out = rpc.result("meta/agent_memory/remember_batch", {"identity": ident, "records": [
        {"title": "fine", "body": "nothing secret"},
        {"title": "leak", "body": "b", "metadata": {"deep": {"k": OPENAI}}},
    ]})
    assert out["created"] == 1 and out["refused"] == 1
    error = out["results"][1]["error"]
    _no_echo(error)
    assert error["code"] == -32040 and error["data"]["reason"] == "secret_detected"
    assert error["data"]["op_index"] == 1 and error["data"]["field"] == "records.1.metadata.deep.k"
    assert error["message"].startswith("invalid agent memory record: op 1: write refused")
    assert "(in metadata.deep.k)" in error["message"]


def test_the_memory_tool_names_the_field(rpc: Rpc) -> None:
    ident, session = uid(), uid("sess")
    out = rpc.tool(ident, {"action": "remember", "title": "Deploy", "body": f"use {OPENAI} for the job"}, session)
    assert out["is_error"] is True and "secret pattern class (in body)" in out["text"], out
    _no_echo(out)
    tagged = rpc.tool(ident, {"action": "remember", "title": "Deploy", "body": "b", "tags": ["x", AWS]}, session)
    assert tagged["is_error"] is True and "(in tags.1)" in tagged["text"], tagged
    assert rpc.manifest_ids(ident) == []


def test_the_cli_prints_the_field(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "meta_memory.cli", "remember", "t", "b", "--identity", "x", "--state-dir",
         str(tmp_path / "s"), "--metadata", json.dumps({"deep": {"k": OPENAI}})],
        capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 1
    assert "[reason=secret_detected, field=metadata.deep.k]" in proc.stderr, proc.stderr
    assert "(in metadata.deep.k)" in proc.stderr
    assert OPENAI not in proc.stderr + proc.stdout
    tag = subprocess.run(
        [sys.executable, "-m", "meta_memory.cli", "remember", "t", "b", "--identity", "x", "--state-dir",
         str(tmp_path / "s"), "--tag", "ok", "--tag", AWS],
        capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert tag.returncode == 1 and "field=tags.1]" in tag.stderr, tag.stderr
    assert AWS not in tag.stderr + tag.stdout


def test_an_update_names_the_tag_as_given(rpc: Rpc) -> None:
    """Tags are stored sorted and lowercased: the refusal counts them as the call listed them."""
    ident = uid()
    prior = rpc.remember(ident, "Router", "the router is in the hall closet")["memory_id"]
    err = rpc.error("meta/agent_memory/update", {"identity": ident, "memory_id": prior, "tags": ["zeta", AWS, "alpha"]})
    assert err["code"] == -32040 and err["data"]["field"] == "tags.1", err
    assert "(in tags.1)" in err["message"]
    _no_echo(err)


def test_a_mixed_case_key_in_a_tag_is_refused_before_it_is_stored_lowercased(rpc: Rpc) -> None:
    """A bare ``sk-`` key's rule asks for mixed case; a tag is stored lowercased, which would hide it from the scan
    of the stored record while keeping all but its case: each tag is scanned as given, in a single and a bulk write."""
    err = _refused(rpc, tags=["ops", OPENAI])
    assert err["data"]["field"] == "tags.1" and err["data"]["secret_class"] == "openai-api-key", err
    ident = uid()
    out = rpc.result("meta/agent_memory/remember_batch", {"identity": ident, "records": [
        {"title": "fine", "body": "nothing secret", "tags": ["ops"]},
        {"title": "leak", "body": "b", "tags": [OPENAI]},
    ]})
    assert out["created"] == 1 and out["refused"] == 1
    error = out["results"][1]["error"]
    _no_echo(error)
    assert error["data"]["op_index"] == 1 and error["data"]["field"] == "records.1.tags.0", error
    assert error["message"].startswith("invalid agent memory record: op 1: write refused")
    listed = rpc.result("meta/agent_memory/list", {"identity": ident})
    _no_echo(listed)


@pytest.mark.parametrize("metadata", [
    {"sk-proj-AbCdEfGhIjKl": "MnOpQrStUvWxYz0123456789abcd"},
    {"AKIAIOSFOD": "NN7EXAMPLQ"},
    {"ghp_A1b2C3d4E5f6G7h8": "I9j0K1l2M3n4O5p6Q7r8"},
], ids=["openai", "aws", "github"])
def test_a_credential_split_between_a_metadata_key_and_its_value_is_refused(rpc: Rpc, metadata: dict[str, str]) -> None:
    """Split across two values, the title and the body or two tags, a credential is refused; split between a key
    and its own value it is too, the field naming the object that holds the key (naming the key would repeat
    half of it)."""
    err = _refused(rpc, metadata=metadata)
    assert err["data"]["field"] == "metadata", err
    key = next(iter(metadata))
    assert key not in json.dumps(err) and metadata[key] not in json.dumps(err)

"""An erase stops every export of its realm under way (``meta/storage/export`` pages still to fetch), over a
real gateway: the lines an export had read and buffered before the erase committed are never handed out after
it, and an export started afterwards holds nothing of the erased record.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support import GatewayProcess

pytestmark = pytest.mark.gateway

ID = "gdpr:subject"
SECRET = "Lives at 42 Wallaby Way, quokkaerased"
PAGE = 65_536


def _fetch_all(gw: GatewayProcess, export_id: str) -> tuple[list[str], dict[str, Any] | None]:
    """Every line of an export's remaining pages, and the refusal that ended it (``None`` when it ended done)."""
    lines: list[str] = []
    while True:
        body = gw.rpc("meta/storage/export", {"export_id": export_id, "max_bytes": PAGE})
        if "error" in body:
            return lines, body["error"]
        lines += body["result"]["lines"]
        if body["result"]["done"]:
            return lines, None


def test_an_export_under_way_hands_out_nothing_erased_after_the_erase(gateway: GatewayProcess) -> None:
    # records before the one to erase, so that it is past the first page of the export
    gateway.result("meta/agent_memory/remember_batch", {"identity": ID, "records": [
        {"title": f"filler {i}", "body": f"filler text {i} " * 800} for i in range(20)]})
    mid = gateway.result("meta/agent_memory/remember", {"identity": ID, "title": "Home address", "body": SECRET})["memory_id"]

    first = gateway.result("meta/storage/export", {"identity": ID, "realm": "default", "max_bytes": PAGE})
    assert not first["done"] and not any("quokkaerased" in line for line in first["lines"])
    assert gateway.result("meta/agent_memory/erase", {"identity": ID, "memory_id": mid})["count"] == 1

    after, refusal = _fetch_all(gateway, first["export_id"])
    assert not any("quokkaerased" in line for line in after), "an export handed out erased content after the erase"
    assert refusal is not None and refusal["code"] == -32602 and refusal["data"]["field"] == "export_id", refusal
    assert "erase" in refusal["message"] and "again" in refusal["message"]
    assert "quokkaerased" not in json.dumps(refusal)

    again = gateway.result("meta/storage/export", {"identity": ID, "realm": "default", "max_bytes": PAGE})
    lines, refusal = _fetch_all(gateway, again["export_id"])
    lines = again["lines"] + lines
    assert refusal is None
    assert not any("quokkaerased" in line for line in lines)
    assert sum(json.loads(line)["type"] == "record" for line in lines) == 20


def test_an_erase_in_another_realm_leaves_the_export_under_way(gateway: GatewayProcess) -> None:
    gateway.result("meta/agent_memory/remember_batch", {"identity": ID, "records": [
        {"title": f"filler {i}", "body": f"filler text {i} " * 800} for i in range(20)]})
    mid = gateway.result("meta/agent_memory/remember", {"identity": ID, "realm": "hr", "title": "Home", "body": SECRET})[
        "memory_id"]
    first = gateway.result("meta/storage/export", {"identity": ID, "realm": "default", "max_bytes": PAGE})
    assert not first["done"]
    assert gateway.result("meta/agent_memory/erase", {"identity": ID, "realm": "hr", "memory_id": mid})["count"] == 1
    lines, refusal = _fetch_all(gateway, first["export_id"])
    assert refusal is None
    assert sum(json.loads(line)["type"] == "record" for line in first["lines"] + lines) == 20


def test_an_erase_whose_session_state_write_fails_still_stops_the_export(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The erase commits before the session state forgets its ids (a database write that can fail: a full
    disk, a lost connection); the exports under way are stopped first, so such a failure never leaves one
    handing out the erased content. Through the embedded SDK."""
    from meta_memory.cli import build_runtime
    from meta_memory.errors import MetaError
    from meta_memory.sdk.handle import MetaHandle
    from meta_memory.sdk.transport import EmbeddedTransport
    from meta_memory.server.gateway import Gateway
    from meta_memory.session_state.store import SessionStateStore

    with MetaHandle(EmbeddedTransport(Gateway.for_runtime(build_runtime(tmp_path / "state", None)))) as h:
        h.call("meta/agent_memory/remember_batch", {"identity": ID, "records": [
            {"title": f"filler {i}", "body": f"filler text {i} " * 800} for i in range(20)]})
        mid = h.call("meta/agent_memory/remember", {"identity": ID, "title": "Home address", "body": SECRET})[
            "memory_id"]
        first = h.call("meta/storage/export", {"identity": ID, "realm": "default", "max_bytes": PAGE})
        assert not first["done"]

        def failing(self: SessionStateStore, realm: str, record_ids: Any) -> None:
            raise OSError("disk I/O error")

        monkeypatch.setattr(SessionStateStore, "forget_records", failing)
        with pytest.raises((MetaError, OSError)):
            h.call("meta/agent_memory/erase", {"identity": ID, "memory_id": mid})
        monkeypatch.undo()
        listed = h.call("meta/agent_memory/list", {"identity": ID, "limit": 100})["records"]
        assert listed and mid not in {r["memory_id"] for r in listed}  # the erase committed
        with pytest.raises(MetaError) as refused:
            while True:
                page = h.call("meta/storage/export", {"export_id": first["export_id"], "max_bytes": PAGE})
                assert not any("quokkaerased" in line for line in page["lines"])
                assert not page["done"], "the export ran to its end after the erase"
        assert "erase" in str(refused.value) and "again" in str(refused.value)

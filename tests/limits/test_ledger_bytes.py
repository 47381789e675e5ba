"""The assertion ledger is bounded in bytes as well as in count (``[memory] max_state_bytes``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from meta_memory.errors import ConfigError
from meta_memory.ledger.config import DEFAULT_MAX_STATE_BYTES, parse_memory_section
from support import GatewayProcess, write_config

LIMIT = 1024 * 1024
FACT = "f" * 60_000  # near the 64 KiB field cap


def _ledger_gateway(gateway_factory: Any, tmp_path: Path) -> GatewayProcess:
    cfg = write_config(tmp_path / "meta.toml", f'[memory]\nkind = "local_json"\nmax_state_bytes = {LIMIT}\n')
    return gateway_factory(config=cfg)


def _state_file(gw: GatewayProcess) -> Path:
    return gw.state_dir / "memory-ledger-state.json"


def test_old_assertions_make_room_and_the_file_stays_under_the_limit(gateway_factory: Any, tmp_path: Path) -> None:
    gw = _ledger_gateway(gateway_factory, tmp_path)
    ids = [gw.result("meta/memory/index", {"entity": "e", "topic": f"t{i}", "fact": f"{i} {FACT}"})["assertion_id"]
           for i in range(40)]
    assert _state_file(gw).stat().st_size <= LIMIT + 4096
    kept = [a["assertion_id"] for a in gw.result("meta/memory/query", {})["assertions"]]
    assert 0 < len(kept) < 40 and kept == ids[-len(kept):]  # the newest are kept, the oldest went first


def test_conflicts_that_cannot_fit_are_refused_and_change_nothing(gateway_factory: Any, tmp_path: Path) -> None:
    gw = _ledger_gateway(gateway_factory, tmp_path)
    refused = None
    for i in range(40):
        body = gw.rpc("meta/memory/index", {"entity": "e", "topic": f"c{i}", "conflict": True,
                                            "conflict_reason": f"{i} {FACT}"})
        if "error" in body:
            refused = (i, body["error"])
            break
    assert refused is not None, "conflict signals grew past max_state_bytes"
    i, err = refused
    assert err["code"] == -32010 and err["data"]["kind"] == "memory_backend"
    assert f"max_state_bytes = {LIMIT}" in err["message"]
    before = _state_file(gw).read_bytes()
    again = gw.error("meta/memory/index", {"entity": "e", "topic": "c-new", "fact": "small", "conflict": True,
                                           "conflict_reason": FACT})
    assert again["code"] == -32010 and _state_file(gw).read_bytes() == before
    assert len(gw.result("meta/memory/query", {})["conflicts"]) == i
    # a small conflict-free fact still lands (old assertions could make room; here there are none to evict)
    assert gw.result("meta/memory/index", {"entity": "e", "topic": "t", "fact": "small fact"})["assertion_id"]


def test_a_conflict_signal_makes_room_by_evicting_old_assertions(gateway_factory: Any, tmp_path: Path) -> None:
    """A conflict-only write is held to the bound as a fact is: old assertions go first, the file stays under
    ``max_state_bytes`` (it grew past it until the next fact)."""
    gw = _ledger_gateway(gateway_factory, tmp_path)
    ids = [gw.result("meta/memory/index", {"entity": "e", "topic": f"t{i}", "fact": f"{i} {FACT}"})["assertion_id"]
           for i in range(16)]
    for i in range(8):
        gw.result("meta/memory/index", {"entity": f"c{i}", "topic": "t", "conflict": True,
                                        "conflict_reason": f"{i} {FACT}"})
        assert _state_file(gw).stat().st_size <= LIMIT + 4096, i
    state = gw.result("meta/memory/query", {})
    kept = [a["assertion_id"] for a in state["assertions"]]
    assert len(state["conflicts"]) == 8 and 0 < len(kept) < 16 and kept == ids[-len(kept):]
    assert gw.result("meta/status", {})["ledger"]["evicted"] == 16 - len(kept)


def test_config_key() -> None:
    assert parse_memory_section({"kind": "local_json"}).max_state_bytes == DEFAULT_MAX_STATE_BYTES
    assert parse_memory_section({"kind": "local_json", "max_state_bytes": LIMIT}).max_state_bytes == LIMIT
    for bad in (0, 1000, True, "1MB", 2**40):
        with pytest.raises(ConfigError, match="memory.max_state_bytes"):
            parse_memory_section({"kind": "local_json", "max_state_bytes": bad})

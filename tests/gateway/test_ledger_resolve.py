"""A ledger conflict signal is resolved by ``meta/memory/resolve``, through the real gateway.

The spec (seed-memory.md, "Conflict detection") has gating refuse an action while a conflict signal is
*active*, keeps one signal per ``entity``/``topic``/``store`` ("The runtime owns the assertion ledger")
and has no truth maintenance, so neither a later fact nor ``conflict: false`` on an index touches a
signal (reference notes §1.5: a signal is upserted only when ``conflict`` is true). Without a way to
resolve one, ``meta/gating/check`` stayed ``allowed: false`` for ever and signals, never evicted, could
fill ``[memory] max_state_bytes``. ``meta/memory/resolve`` removes them, persisted and on the timeline.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support import GatewayProcess, write_config

OPS = {"entity": "identity:ops", "topic": "deployment"}


def _signal(gw: GatewayProcess, store: str, reason: str = "two runbooks disagree") -> None:
    out = gw.result("meta/memory/index", {**OPS, "store": store, "conflict": True, "conflict_reason": reason})
    assert out["conflict_active"] is True


def _allowed(gw: GatewayProcess) -> bool:
    return bool(gw.result("meta/gating/check", OPS)["allowed"])


def _events(gw: GatewayProcess, event_type: str) -> list[dict[str, Any]]:
    return [e for e in gw.result("meta/events/list", {"limit": 1000})["events"] if e["event_type"] == event_type]


def test_resolving_a_signal_lets_gating_allow_again_and_survives_a_restart(gateway_factory: Any,
                                                                          tmp_path: Path) -> None:
    gw = gateway_factory(tmp_path / "s")
    _signal(gw, "knowledge_graph")
    _signal(gw, "todo")
    # neither a later fact nor ``conflict: false`` clears a signal (no truth maintenance)
    assert gw.result("meta/memory/index", {**OPS, "fact": "Deploys need one approval.", "conflict": False})[
        "conflict_active"] is True
    assert not _allowed(gw)

    one = gw.result("meta/memory/resolve", {"entity": " Identity:OPS ", "topic": "deployment", "store": "TODO"})
    assert one["entity"] == "identity:ops" and one["store"] == "todo"
    assert [s["store"] for s in one["resolved"]] == ["todo"] and one["resolved"][0]["reason"] == "two runbooks disagree"
    assert one["conflict_active"] is True and not _allowed(gw)  # the knowledge_graph signal still gates

    rest = gw.result("meta/memory/resolve", OPS)  # no store: every store's signal for this entity and topic
    assert rest["store"] is None and [s["store"] for s in rest["resolved"]] == ["knowledge_graph"]
    assert rest["conflict_active"] is False and _allowed(gw)
    assert gw.result("meta/memory/query", OPS)["conflicts"] == []
    assert [a["fact"] for a in gw.result("meta/memory/query", OPS)["assertions"]] == ["Deploys need one approval."]
    assert {s["store"]: s["record_count"] for s in gw.result("meta/memory/stores")["stores"]}["todo"] == 0

    # resolving again changes nothing
    assert gw.result("meta/memory/resolve", OPS) == {**OPS, "store": None, "resolved": [], "conflict_active": False}
    resolved = _events(gw, "memory.conflict.resolved")
    assert [e["data"] for e in resolved] == [{**OPS, "stores": ["todo"]}, {**OPS, "stores": ["knowledge_graph"]}]

    # persisted: the file holds no signal, and a restart keeps it resolved
    ledger = json.loads((gw.state_dir / "memory-ledger-state.json").read_text())
    assert ledger["conflicts"] == []
    assert gw.stop() == 0
    again = gateway_factory(tmp_path / "s")
    assert _allowed(again) and again.result("meta/memory/query", {})["conflicts"] == []


def test_resolve_refuses_bad_params_and_changes_nothing(gateway: GatewayProcess) -> None:
    _signal(gateway, "vector")
    for params, field in (({"entity": "identity:ops"}, "topic"), ({**OPS, "store": "graph"}, "store"),
                          ({**OPS, "topic": "deploy\nment"}, "topic"), ({**OPS, "reason": "fixed"}, "reason")):
        err = gateway.error("meta/memory/resolve", params)
        assert err["code"] == -32602 and err["data"]["field"] == field, err
    assert not _allowed(gateway)


def test_resolved_signals_free_room_under_max_state_bytes(gateway_factory: Any, tmp_path: Path) -> None:
    limit = 1024 * 1024  # the smallest max_state_bytes
    cfg = write_config(tmp_path / "meta.toml", f'[memory]\nkind = "local_json"\nmax_state_bytes = {limit}\n')
    gw = gateway_factory(config=cfg)
    reason = "r" * 60_000
    full = None
    for i in range(40):
        body = gw.rpc("meta/memory/index", {"entity": "e", "topic": f"c{i}", "conflict": True,
                                            "conflict_reason": reason})
        if "error" in body:
            full = i
            break
    assert full is not None and gw.error("meta/memory/index", {"entity": "e", "topic": "next", "conflict": True,
                                                              "conflict_reason": reason})["code"] == -32010
    assert gw.result("meta/memory/resolve", {"entity": "e", "topic": "c0"})["resolved"]
    assert gw.result("meta/memory/index", {"entity": "e", "topic": "next", "conflict": True,
                                           "conflict_reason": reason})["conflict_active"] is True


def test_the_sdk_resolves_embedded_and_remote(gateway: GatewayProcess, tmp_path: Path) -> None:
    from meta_memory import Meta

    with Meta.builder().persistent_state(tmp_path / "embedded").build() as embedded, \
            Meta.connect(gateway.url) as remote:
        for handle in (embedded, remote):
            handle.ledger.index("svc:pay", "limits", conflict=True, conflict_reason="two runbooks")
            assert handle.gating_check("svc:pay", "limits").allowed is False
            out = handle.ledger.resolve("svc:pay", "limits")
            assert [s.store for s in out.resolved] == ["knowledge_graph"] and out.conflict_active is False
            assert handle.memory_resolve("svc:pay", "limits").resolved == []
            assert handle.gating_check("svc:pay", "limits").allowed is True

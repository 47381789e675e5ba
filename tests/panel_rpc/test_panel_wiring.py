"""Panel wiring: unadvertised without a panel-capable store, ``runtime.set_memory_panel_store`` for
embedders, the protocol's conservative defaults, and a store whose cursor does not move."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from meta_memory.access.config import parse_access_section
from meta_memory.access.principal import Principal
from meta_memory.config import MetaConfig
from meta_memory.panel.cursor import Cursor
from meta_memory.panel.paging import SourcePage
from meta_memory.panel.store import (
    PanelStoreDefaults,
    PromotionRow,
    RecordFilters,
    RecordRow,
    ScopeOverviewRow,
    StoreFloors,
)
from meta_memory.rpc.methods import build_method_table
from meta_memory.rpc.registry import CallContext
from meta_memory.runtime import Runtime
from support import start_gateway, write_config

P = "meta/memory/panel/"
METHODS = [P + m for m in ("records", "record", "quarantine", "dreams", "dream_runs", "audit_verdicts", "overview",
                           "proposals", "injections", "harvests")]


@pytest.mark.gateway
def test_methods_are_unadvertised_without_a_panel_store(tmp_path: Path) -> None:
    config = write_config(tmp_path / "meta.toml", "[agent_memory]\nenabled = false\n")
    gw = start_gateway(tmp_path / "state", config=config)
    try:
        caps = gw.result("meta/capabilities")
        assert not [m for m in caps["methods"] if m.startswith(P)]
        err = gw.error(P + "records", {})
        assert err["code"] == -32601
    finally:
        gw.stop()


def _row(mid: str, updated: int, kind: str = "identity", key: str = "i1", status: str = "active") -> RecordRow:
    """A body-free row in the documented shape (``RecordRow.data``: the record JSON without its body)."""
    data = {"id": mid, "scope": {"scope": kind, "realm": "r", **({kind: key} if kind != "realm" else {})},
            "kind": "note", "title": f"title {mid}", "description": "", "tags": [], "provenance": {},
            "trust": "application", "status": {"status": status}, "derived_from": [],
            "created_at_ms": updated, "updated_at_ms": updated, "usage": {}, "ever_quarantined": False,
            "body_bytes": 1}
    return RecordRow("r", mid, updated, updated, kind, key, status, None, status == "quarantined", None, 1, data)


class MinimalStore(PanelStoreDefaults):
    """A custom panel store that implements only the required reads (defaults for the rest)."""

    def __init__(self, rows: list[RecordRow], stall: bool = False) -> None:
        self.rows = sorted(rows, key=lambda r: (r.updated_at_ms, r.memory_id), reverse=True)
        self.stall = stall

    def list_realms(self) -> list[str]:
        return ["r"]

    def records_page(self, realm: str, filters: RecordFilters, after: Cursor | None, limit: int) -> SourcePage[RecordRow]:
        if self.stall:
            return SourcePage(self.rows[:1], after or Cursor(10**6, "zzz"))
        rest = [r for r in self.rows if after is None or (r.updated_at_ms, r.memory_id) < (after.updated_at_ms, after.memory_id)]
        page = rest[:limit]
        return SourcePage(page, Cursor(page[-1].updated_at_ms, page[-1].memory_id) if len(rest) > limit else None)

    def record(self, realm: str, memory_id: str) -> RecordRow | None:
        return next((r for r in self.rows if r.memory_id == memory_id), None)

    def records_by_ids(self, realm: str, ids: Any) -> dict[str, RecordRow]:
        return {r.memory_id: r for r in self.rows if r.memory_id in set(ids)}

    def claimants(self, realm: str, memory_id: str, limit: int) -> list[RecordRow]:
        return []

    def record_injections(self, realm: str, memory_id: str, limit: int) -> list[Any]:
        return []

    def quarantined(self, realm: str, limit: int) -> list[RecordRow]:
        return [r for r in self.rows if r.status == "quarantined"][:limit]

    def pending_promotions(self, realm: str, limit: int) -> list[PromotionRow]:
        return [PromotionRow("r", "pp-1", "stage-1", "prop-1", "identity", "i1", None, "pending", 5, None)]

    def dream_summaries(self, realm: str, limit: int) -> list[Any]:
        return []

    def dream_runs(self, realm: str, limit: int) -> list[Any]:
        from meta_memory.panel.store import DreamRunRow

        return [DreamRunRow("r", "dream-1", "realm", 1, 2, 0, {})]

    def audit_verdicts(self, realm: str, limit: int) -> list[Any]:
        return []

    def scope_overview(self, realm: str) -> list[ScopeOverviewRow]:
        return [ScopeOverviewRow("r", r.scope_kind, r.scope_key, {r.status: 1}, 1, 1, 1) for r in self.rows]

    def floors(self) -> StoreFloors:
        return StoreFloors()

    def proposals(self, realm: str, limit: int) -> list[Any]:
        return []

    def injections(self, realm: str, limit: int) -> list[Any]:
        return []

    def harvests(self, realm: str, limit: int) -> list[Any]:
        return []


def _runtime(tmp_path: Path, access: dict[str, Any] | None) -> Runtime:
    cfg = MetaConfig(access=parse_access_section(access) if access is not None else None)
    rt = Runtime(cfg, tmp_path / "state")
    return rt


READER = {"enabled": True, "grants": [
    {"action": "agent.memory.read", "who": {"principal": "p"}},
    {"action": "agent.view", "who": {"principal": "p"}},
]}
REVIEWER = {"enabled": True, "grants": READER["grants"] + [
    {"action": "memory.quarantine.review", "who": {"principal": "p"}},
]}


def call(rt: Runtime, method: str, params: Any = None) -> Any:
    return build_method_table().call(rt, CallContext(principal=Principal("p")), method, params or {})


def test_an_embedder_wires_a_custom_store_and_the_defaults_are_conservative(tmp_path: Path) -> None:
    rows = [_row("mem-a", 3), _row("mem-b", 2)]
    with _runtime(tmp_path / "a", READER) as rt:
        rt.set_memory_panel_store(None)
        assert not [m for m in build_method_table().names(rt) if m.startswith(P)]
        rt.set_memory_panel_store(MinimalStore(rows))
        assert set(METHODS) <= set(build_method_table().names(rt))
        res = call(rt, P + "records", {"limit": 1})
        assert [r["id"] for r in res["records"]] == ["mem-a"] and res["next_cursor"] == "3:mem-a"
        # default holds_quarantine_evidence = True: no review grant, no dream history
        runs = call(rt, P + "dream_runs")
        assert runs == {"runs": [], "realms": ["r"], "withheld_by_access": True}
        from meta_memory.errors import AccessDenied

        with pytest.raises(AccessDenied):
            call(rt, P + "quarantine")
        with pytest.raises(TypeError):
            rt.set_memory_panel_store(object())
    with _runtime(tmp_path / "b", REVIEWER) as rt:
        rt.set_memory_panel_store(MinimalStore(rows))
        runs = call(rt, P + "dream_runs")
        assert [r["run_id"] for r in runs["runs"]] == ["dream-1"] and runs["withheld_by_access"] is False
        # default proposal_scopes resolves none: a promotion made from a proposal is listed to no one
        assert call(rt, P + "quarantine")["pending_promotions"] == []
    with _runtime(tmp_path / "c", None) as rt:  # access control off: everything is visible
        rt.set_memory_panel_store(MinimalStore(rows))
        assert [p["pending_id"] for p in call(rt, P + "quarantine")["pending_promotions"]] == ["pp-1"]


def test_a_store_row_outside_the_result_model_is_refused_as_internal(tmp_path: Path) -> None:
    """The method table holds every answer to its result model: a custom store's row that lacks the
    record's members is not sent half-formed, the call is answered ``-32603``."""
    from meta_memory.errors import InternalError

    good = _row("mem-a", 3)
    bare = RecordRow("r", "mem-b", 2, 2, "identity", "i1", "active", None, False, None, 1,
                     {"id": "mem-b", "scope": {"scope": "identity", "realm": "r", "identity": "i1"},
                      "status": {"status": "active"}, "updated_at_ms": 2, "body_bytes": 1})
    with _runtime(tmp_path, None) as rt:
        rt.set_memory_panel_store(MinimalStore([good]))
        assert [r["id"] for r in call(rt, P + "records")["records"]] == ["mem-a"]
        rt.set_memory_panel_store(MinimalStore([good, bare]))
        with pytest.raises(InternalError) as err:
            call(rt, P + "records")
        assert err.value.code == -32603 and err.value.message == "Internal error"


def test_default_realm_scopes_come_from_the_scope_overview(tmp_path: Path) -> None:
    store = MinimalStore([_row("mem-a", 3, "mob", "m1"), _row("mem-b", 2)])
    assert store.realm_scopes("r") == frozenset({("mob", "m1"), ("identity", "i1")})
    # a reviewer without mob.memory.read is denied the realm's history because of the mob scope
    with _runtime(tmp_path, REVIEWER) as rt:
        rt.set_memory_panel_store(store)
        assert call(rt, P + "dreams")["withheld_by_access"] is True


def test_a_store_whose_cursor_does_not_move_is_refused(tmp_path: Path) -> None:
    from meta_memory.errors import AgentMemoryError

    with _runtime(tmp_path, None) as rt:
        rt.set_memory_panel_store(MinimalStore([_row("mem-a", 3), _row("mem-b", 2)], stall=True))
        with pytest.raises(AgentMemoryError) as exc:
            call(rt, P + "records", {"limit": 1, "cursor": "3:mem-a"})
        assert exc.value.code == -32040 and exc.value.reason == "io"

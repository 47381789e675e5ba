"""A realm whose read fails ``corrupt`` part-way (a page damaged deep in its file) leaves every all-realm panel
read served: the realm is named in ``skipped_realms``, none of its rows is listed (not even rows it gave before
failing), and a call naming it is refused as the store refused it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from meta_memory.access.policy import AccessPolicy
from meta_memory.access.principal import ANONYMOUS
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import ManualClock
from meta_memory.errors import AgentMemoryError
from meta_memory.panel.service import PanelService
from meta_memory.panel.store import SqlitePanelStore
from meta_memory.panel.visibility import Visibility

IDENT = "lead:main"


class Damaged:
    """The panel store, with realm ``bad``'s reads failing ``corrupt`` from the ``after``-th call on."""

    def __init__(self, inner: SqlitePanelStore, after: int = 0) -> None:
        self.inner = inner
        self.after = after
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr) or name in ("list_realms", "realm_problem", "floors"):
            return attr

        def call(*args: Any, **kw: Any) -> Any:
            if args and args[0] == "bad":
                self.calls += 1
                if self.calls > self.after:
                    raise AgentMemoryError("corrupt", "realm database 'bad.sqlite3' cannot be read (malformed)")
            return attr(*args, **kw)

        return call


@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = SqliteAgentMemoryStore(tmp_path / "agent-memory", ManualClock(1_700_000_000_000))
    for realm in ("bad", "good"):
        for i in range(6):
            record_writes.remember(s, realm, IDENT, f"{realm} {i}", f"a note {i} in {realm}")
    yield s
    s.close()


def service(store: Any, after: int = 0) -> PanelService:
    return PanelService(Damaged(SqlitePanelStore(store), after), Visibility(AccessPolicy(), ANONYMOUS))  # type: ignore[arg-type]


def test_records_leave_out_a_realm_failing_at_once(store: Any) -> None:
    page = service(store).records(realm=None, scope_kind=None, scope_key=None, status=None, limit=50, cursor=None)
    assert {r["scope"]["realm"] for r in page["records"]} == {"good"} and len(page["records"]) == 6
    assert page["realms"] == ["good"]
    assert [(s["realm"], s["reason"]) for s in page["skipped_realms"]] == [("bad", "corrupt")]


def test_rows_a_realm_gave_before_failing_are_not_listed(store: Any) -> None:
    """``bad`` hands one row and a cursor, then fails: the page holds ``good``'s rows only."""
    panel = SqlitePanelStore(store)
    real = panel.records_page
    calls = {"bad": 0}

    def records_page(realm: str, filters: Any, after: Any, limit: int) -> Any:
        if realm != "bad":
            return real(realm, filters, after, limit)
        calls["bad"] += 1
        if calls["bad"] > 1:
            raise AgentMemoryError("corrupt", "realm database 'bad.sqlite3' cannot be read (malformed)")
        return real(realm, filters, after, 1)

    panel.records_page = records_page  # type: ignore[method-assign]
    svc = PanelService(panel, Visibility(AccessPolicy(), ANONYMOUS))
    page = svc.records(realm=None, scope_kind=None, scope_key=None, status=None, limit=50, cursor=None)
    assert calls["bad"] > 1  # it did hand a row before failing
    assert {r["scope"]["realm"] for r in page["records"]} == {"good"} and len(page["records"]) == 6
    assert page["realms"] == ["good"] and page["skipped_realms"][0]["realm"] == "bad"


@pytest.mark.parametrize("method", ["quarantine", "injections", "proposals", "harvests", "audit_verdicts",
                                    "dreams", "dream_runs", "overview"])
def test_every_listing_names_the_damaged_realm(store: Any, method: str) -> None:
    kw: dict[str, Any] = {"realm": None} if method == "overview" else {"realm": None, "limit": 20}
    answer = getattr(service(store), method)(**kw)
    assert answer["realms"] == ["good"], answer
    assert [(s["realm"], s["reason"]) for s in answer["skipped_realms"]] == [("bad", "corrupt")]
    # a call naming it is refused as the store refused it; one naming the other realm has no skip
    with pytest.raises(AgentMemoryError) as info:
        getattr(service(store), method)(**{**kw, "realm": "bad"})
    assert info.value.reason == "corrupt"
    assert "skipped_realms" not in getattr(service(store), method)(**{**kw, "realm": "good"})


def test_a_record_of_another_realm_is_still_found(store: Any) -> None:
    mid = record_writes.remember(store, "good", IDENT, "found", "the one to find")[0].memory_id
    assert service(store).record(memory_id=mid, realm=None)["realm"] == "good"


def test_any_other_refusal_still_fails_the_call(store: Any) -> None:
    svc = service(store)
    svc.store.inner.injections = lambda realm, limit: (_ for _ in ()).throw(AgentMemoryError("io", "disk gone"))  # type: ignore[attr-defined]
    with pytest.raises(AgentMemoryError) as info:
        svc.injections(realm=None, limit=5)
    assert info.value.reason == "io"

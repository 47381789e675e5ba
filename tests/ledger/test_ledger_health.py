"""Health checks gate the startup load and every persist (seed: Health checks; reference §1.10).

Uses real local endpoints: an HTTP server, a socket that never answers, a closed port.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from meta_memory.clock import ManualClock
from meta_memory.errors import MemoryBackendUnavailable, StartupError
from meta_memory.ledger import AssertionLedger, IndexRequest, QueryRequest, ResolveRequest
from meta_memory.ledger.health import HEALTHCHECK_TIMEOUT_S, HealthChecker, HealthCheckFailed, health_url

from .conftest import HealthServer

FAST = 0.3  # seconds; the 2-second default is exercised once below


def req(text: str = "Deploys need approval.") -> IndexRequest:
    return IndexRequest(entity="identity:ops", topic="deployment", fact=text)


def test_health_url_strips_trailing_slashes() -> None:
    assert health_url("http://h:1/") == "http://h:1/v1/health"
    assert health_url("http://h:1/base//") == "http://h:1/base/v1/health"
    assert HEALTHCHECK_TIMEOUT_S == 2.0


def test_checks_run_at_load_and_before_each_persist_never_per_query(
    health_server: HealthServer, tmp_path: Path
) -> None:
    ledger = AssertionLedger(tmp_path / "memory-ledger-state.json", health_server.url + "/", ManualClock())
    ledger.load()
    assert health_server.paths == ["/v1/health"]
    ledger.index(req())
    ledger.index(req("second"))
    assert len(health_server.paths) == 3
    ledger.query(QueryRequest(query="deploy"))
    ledger.stores()
    assert len(health_server.paths) == 3


@pytest.mark.parametrize("status", [204, 299])
def test_any_2xx_is_healthy(health_server: HealthServer, status: int) -> None:
    health_server.status = status
    HealthChecker(health_server.url).check()


@pytest.mark.parametrize("status", [301, 404, 500, 503])
def test_non_2xx_is_unhealthy(health_server: HealthServer, status: int) -> None:
    health_server.status = status
    with pytest.raises(HealthCheckFailed) as info:
        HealthChecker(health_server.url).check()
    assert info.value.reason == f"healthcheck status failed for '{health_server.url}/v1/health': HTTP {status}"


def assert_index_refused_and_nothing_changed(ledger: AssertionLedger, path: Path, expect: str) -> None:
    before_file = path.read_bytes()
    before = ledger.query()
    with pytest.raises(MemoryBackendUnavailable) as info:
        ledger.index(req("must not stick"))
    assert info.value.message.startswith("Memory backend unavailable: healthcheck ")
    assert expect in info.value.message
    assert info.value.to_jsonrpc()["data"] == {"kind": "memory_backend"}
    assert ledger.query() == before
    assert path.read_bytes() == before_file
    assert not path.with_suffix(".tmp").exists()


def healthy_ledger(endpoint: str, path: Path) -> AssertionLedger:
    """A ledger persisted once while ``endpoint`` was healthy (checks bypassed for the setup)."""
    seed = AssertionLedger(path, None, ManualClock())
    seed.load()
    seed.index(req("kept"))
    ledger = AssertionLedger(path, None, ManualClock(), health_timeout_s=FAST)
    ledger.load()
    ledger._checker = HealthChecker(endpoint, FAST)  # white-box: endpoint goes bad after startup
    return ledger


def test_503_refuses_index_and_rolls_back(health_server: HealthServer, tmp_path: Path) -> None:
    path = tmp_path / "memory-ledger-state.json"
    ledger = AssertionLedger(path, health_server.url, ManualClock())
    ledger.load()
    ledger.index(req("kept"))
    health_server.status = 503
    assert_index_refused_and_nothing_changed(ledger, path, "HTTP 503")
    health_server.status = 200
    assert ledger.index(req("after recovery")).assertion_id == "memory-assert-000001"
    assert [a["fact"] for a in json.loads(path.read_text())["assertions"]] == ["kept", "after recovery"]


def test_silent_endpoint_times_out(silent_endpoint: str, tmp_path: Path) -> None:
    path = tmp_path / "memory-ledger-state.json"
    ledger = healthy_ledger(silent_endpoint, path)
    started = time.monotonic()
    assert_index_refused_and_nothing_changed(ledger, path, "timed out")
    assert time.monotonic() - started < 3


def test_closed_port_refuses_connect(closed_endpoint: str, tmp_path: Path) -> None:
    path = tmp_path / "memory-ledger-state.json"
    assert_index_refused_and_nothing_changed(healthy_ledger(closed_endpoint, path), path, "connect failed")


def test_unresolvable_host_is_a_resolve_failure() -> None:
    with pytest.raises(HealthCheckFailed, match="healthcheck (resolve|connect) failed"):
        HealthChecker("http://no-such-host.invalid", FAST).check()


def test_default_timeout_is_two_seconds(silent_endpoint: str) -> None:
    started = time.monotonic()
    with pytest.raises(HealthCheckFailed, match="read failed .*timed out"):
        HealthChecker(silent_endpoint).check()
    assert 1.8 <= time.monotonic() - started < 3.5


def test_failed_startup_check_refuses_boot(health_server: HealthServer, closed_endpoint: str, tmp_path: Path) -> None:
    health_server.status = 500
    with pytest.raises(StartupError, match="health check failed at startup: .*HTTP 500"):
        AssertionLedger(tmp_path / "memory-ledger-state.json", health_server.url, ManualClock()).load()
    with pytest.raises(StartupError, match="connect failed"):
        AssertionLedger(tmp_path / "memory-ledger-state.json", closed_endpoint, ManualClock()).load()


def test_in_memory_ledger_never_checks(health_server: HealthServer) -> None:
    ledger = AssertionLedger(None, health_server.url, ManualClock())
    ledger.load()
    ledger.index(req())
    assert health_server.paths == []


class _RunAfterRelease:
    """The ledger's lock, running ``first`` once just before the next acquire and ``then`` once just after
    the next release: what another caller does in the moment a write is outside the lock (checking
    health)."""

    def __init__(self, lock: Any) -> None:
        self._lock = lock
        self.first: Callable[[], None] | None = None
        self.then: Callable[[], None] | None = None

    def __enter__(self) -> None:
        first, self.first = self.first, None
        if first is not None:
            first()
        self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()
        then, self.then = self.then, None
        if then is not None:
            then()


def test_a_signal_indexed_while_a_resolve_looks_is_removed_only_after_a_health_check(
    health_server: HealthServer, tmp_path: Path
) -> None:
    """A resolve that found no signal skipped the health check, then looked again under the lock and
    removed (and persisted the removal of) a signal indexed in between, with no check at all: a gate
    lifted in the file while the endpoint answered 503."""
    path = tmp_path / "memory-ledger-state.json"
    ledger = AssertionLedger(path, health_server.url, ManualClock(), health_timeout_s=FAST)
    ledger.load()
    hooked = _RunAfterRelease(ledger._lock)
    ledger._lock = hooked  # type: ignore[assignment]

    def index_then_fail() -> None:
        ledger.index(IndexRequest(entity="identity:ops", topic="deployment", conflict=True, conflict_reason="freeze"))
        health_server.status = 503

    hooked.then = index_then_fail
    # the resolve came first (it found nothing): it removes nothing, and the signal stays in memory and file
    assert ledger.resolve(ResolveRequest(entity="identity:ops", topic="deployment")).resolved == []
    assert [s.reason for s in ledger.query().conflicts] == ["freeze"]
    assert [c["reason"] for c in json.loads(path.read_text())["conflicts"]] == ["freeze"]
    health_server.status = 200
    assert [s.reason for s in ledger.resolve(ResolveRequest(entity="identity:ops", topic="deployment")).resolved] \
        == ["freeze"]


def test_a_write_whose_check_passed_is_refused_when_another_check_failed_before_it_took_the_lock(
    health_server: HealthServer, tmp_path: Path
) -> None:
    """With the check outside the lock, a write that passed its check and then waited for the lock
    persisted after another caller's check had found the endpoint failing (refused ``healthcheck status
    failed``): the file changed after a failed check, which never happened while checks ran under it."""
    path = tmp_path / "memory-ledger-state.json"
    ledger = AssertionLedger(path, health_server.url, ManualClock(), health_timeout_s=FAST)
    ledger.load()
    ledger.index(req("kept"))
    hooked = _RunAfterRelease(ledger._lock)
    ledger._lock = hooked  # type: ignore[assignment]
    refused: list[str] = []

    def another_write_fails_its_check() -> None:
        health_server.status = 503
        try:
            ledger.index(req("another"))
        except MemoryBackendUnavailable as exc:
            refused.append(exc.message)

    hooked.first = another_write_fails_its_check  # after this write's check passed, before it takes the lock
    before = path.read_bytes()
    with pytest.raises(MemoryBackendUnavailable, match="healthcheck status failed .*HTTP 503"):
        ledger.index(req("after a failed check"))
    assert len(refused) == 1 and "HTTP 503" in refused[0]
    assert [a.fact for a in ledger.query().assertions] == ["kept"]
    assert path.read_bytes() == before
    health_server.status = 200
    assert ledger.index(req("once healthy again")).assertion_id is not None  # a new check of its own passes
    assert [a.fact for a in ledger.query().assertions] == ["kept", "once healthy again"]

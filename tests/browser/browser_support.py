"""What the console tests share: the chromium they need (skipped, or a failure under ``CI``, when it
is missing), a page that fails the test on any script error, signing in, a taint gate that
quarantines agent-authored writes, an authored write for seeding, and a gateway on a seeded state directory."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Author, Kind, MemoryRecord, NewMemoryRecord, Provenance, Scope
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from support import REPO_ROOT, GatewayProcess, start_gateway, write_config

CHROMIUM = Path("/usr/bin/chromium")
#: Flags for a sandbox-less, offline headless chromium (background networking would hit a closed network).
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
#: Screenshots go to docs/img/ only when asked (META_UPDATE_SCREENSHOTS=1), so the test run never
#: rewrites tracked files; otherwise to a temporary directory.
IMG = (REPO_ROOT / "docs" / "img") if os.environ.get("META_UPDATE_SCREENSHOTS") else \
    Path(tempfile.mkdtemp(prefix="console-shots-"))
TIMEOUT_MS = 15_000


def require_chromium() -> ModuleType:
    """Playwright's ``sync_api``; skips the calling module when Debian's chromium or Playwright is
    missing (under ``CI``, which installs chromium, a missing browser is a failure). Call it at
    module level."""
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            raise RuntimeError("Debian's /usr/bin/chromium is missing in CI")
        pytest.skip("Debian's /usr/bin/chromium is not installed (apt-get install chromium)", allow_module_level=True)
    return pytest.importorskip("playwright.sync_api", reason="playwright for Python is not installed")


@contextmanager
def open_page(browser: Any, *, timeout_ms: int = TIMEOUT_MS, clipboard_origin: str | None = None) -> Iterator[Any]:
    """A page in a fresh 1440x960 context; a script error on it fails the test once the block ends.
    ``clipboard_origin`` grants that origin clipboard read and write."""
    context = browser.new_context(viewport={"width": 1440, "height": 960})
    if clipboard_origin is not None:
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=clipboard_origin)
    page = context.new_page()
    page.set_default_timeout(timeout_ms)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield page
    finally:
        context.close()
    assert not errors, errors


def login(page: Any, gw: GatewayProcess, token: str) -> None:
    """Sign in to the console with ``token`` and wait for the records listing."""
    page.goto(gw.url + "/console/")
    page.get_by_label("Bearer token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.locator("#records-page").wait_for()


class TaintedAgents:
    """A store's write gate under which every agent-authored write lands quarantined as tainted by ``tool``."""

    def __init__(self, tool: str) -> None:
        self.reason = f"session tainted by web tool '{tool}'"

    def quarantine_reason(self, author: Author, batch_kind: str, evidence: list[Any], *, realm: str) -> str | None:
        return self.reason if author.kind.value == "agent" else None


def tainted_store(state: Path, clock: Any, tool: str) -> SqliteAgentMemoryStore:
    """The agent-memory store of state directory ``state`` on ``clock``, gated by :class:`TaintedAgents`
    for ``tool``; use it as a context manager so it is closed before the gateway opens the directory."""
    return SqliteAgentMemoryStore(state / "agent-memory", clock, gate=TaintedAgents(tool))


def remember_spaced(store: SqliteAgentMemoryStore, clock: Any, notes: Iterable[tuple[str, str, str]]) -> list[str]:
    """Remember each ``(identity, title, body)`` in the default realm, one clock second apart (the clock
    advances before each write), so listings have a stable newest-first order; returns the memory ids."""
    ids = []
    for identity, title, body in notes:
        clock.advance(1000)
        ids.append(record_writes.remember(store, "default", identity, title, body)[0].memory_id)
    return ids


def remember_authored(store: SqliteAgentMemoryStore, scope: Scope, author: Author, title: str, body: str,
                      **fields: Any) -> MemoryRecord:
    """Write one record by ``author`` into ``scope`` of the default realm (the store's gate applies)."""
    record, _ = record_writes.remember_authored(store,
        "default", scope, NewMemoryRecord(title=title, body=body, provenance=Provenance(author), **fields), author)
    return record


def remember_quarantined(store: SqliteAgentMemoryStore, identity: str, title: str, body: str) -> str:
    """Write one fact by agent ``identity`` into its own scope under a :class:`TaintedAgents` gate;
    asserts it landed quarantined and returns its memory id."""
    record = remember_authored(store, Scope.identity("default", identity), Author.agent(identity), title, body,
                               kind=Kind.FACT)
    assert record.status.kind.value == "quarantined"
    return record.id


@contextmanager
def seeded_console(root: Path, seed: Callable[[Path], dict[str, str]], config: str
                   ) -> Iterator[tuple[GatewayProcess, dict[str, str]]]:
    """A gateway with config ``config`` on ``root/state``, which ``seed`` filled first (returning the
    ids the tests need); stopped after."""
    state = root / "state"
    state.mkdir()
    ids = seed(state)
    gw = start_gateway(state, config=write_config(root / "meta.toml", config))
    try:
        yield gw, ids
    finally:
        gw.stop()


def console_fixture(name: str, seed: Callable[[Path], dict[str, str]], config: str) -> Any:
    """A module-scoped pytest fixture yielding ``(gateway, ids)`` from :func:`seeded_console` on a fresh
    temporary directory named after ``name``; assign it to ``console`` in the test module."""

    @pytest.fixture(scope="module")
    def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, dict[str, str]]]:
        with seeded_console(tmp_path_factory.mktemp(name), seed, config) as running:
            yield running

    return console

"""A type checker (mypy) sees the sync handle return results and the async handle awaitables of them.

Each snippet is checked with ``mypy.api``; the last one asserts the wrong type on purpose, to prove
the check can fail.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api", reason="needs mypy (the 'test' extra)")

SRC = Path(__file__).resolve().parents[2] / "src"

TYPED = '''
from typing import AsyncIterator, Awaitable, Iterator, assert_type

from meta_memory.ledger.model import MemoryIndexResult, MemoryStoreInfo
from meta_memory.sdk import Agent, AsyncAgent, AsyncMetaHandle, AsyncSession, MetaHandle, Session
from meta_memory.sdk.models import (
    AgentMemoryPage, AgentMemoryRecord, Capabilities, EraseResult, EventPage, InjectionBlock, MemoryToolResult,
    PanelOverview, PanelRecordPage, QuarantineDecision, RecalledRecords, RememberBatchResult, RememberedRecord,
    SessionState, Status, TurnToolResult,
)


def sync(h: MetaHandle) -> None:
    assert_type(h.remember_agent_memory("a", title="t", body="b"), RememberedRecord)
    assert_type(h.recall_agent_memory("a", query_text="q"), RecalledRecords)
    assert_type(h.status(), Status)
    assert_type(h.capabilities(), Capabilities)
    assert_type(h.events_list(limit=5), EventPage)
    assert_type(h.memory_panel_records(status="active"), PanelRecordPage)
    assert_type(h.memory_panel_overview(), PanelOverview)
    assert_type(h.memory_quarantine_decide("a", "m", verdict="release", expected_content_hash="h"),
                QuarantineDecision)
    assert_type(h.ledger.index("e", "t", fact="f"), MemoryIndexResult)
    assert_type(h.ledger.stores(), list[MemoryStoreInfo])
    agent = h.agent("a", realm="r")
    assert_type(agent, Agent)
    assert_type(agent.remember("t", "b", tags=["x"]), RememberedRecord)
    assert_type(agent.recall("q", k=3), RecalledRecords)
    assert_type(agent.list(), AgentMemoryPage)
    assert_type(agent.erase("m", dry_run=True), EraseResult)
    assert_type(agent.remember_batch([("t", "b")]), RememberBatchResult)
    assert_type(agent.iter_records(tags=["x"]), Iterator[AgentMemoryRecord])
    session = agent.session("s")
    assert_type(session, Session)
    assert_type(session.note(), SessionState)
    assert_type(session.inject("q"), InjectionBlock)
    assert_type(session.tool_result("web_fetch"), TurnToolResult)
    assert_type(session.tool({"action": "recall"}), MemoryToolResult)


async def asynchronous(h: AsyncMetaHandle) -> None:
    assert_type(h.remember_agent_memory("a", title="t", body="b"), Awaitable[RememberedRecord])
    assert_type(await h.remember_agent_memory("a", title="t", body="b"), RememberedRecord)
    assert_type(await h.recall_agent_memory("a"), RecalledRecords)
    assert_type(await h.status(), Status)
    assert_type(await h.memory_panel_records(), PanelRecordPage)
    assert_type(await h.ledger.stores(), list[MemoryStoreInfo])
    assert_type(await h.ledger.index("e", "t", fact="f"), MemoryIndexResult)
    agent = h.agent("a")
    assert_type(agent, AsyncAgent)
    assert_type(agent.remember("t", "b"), Awaitable[RememberedRecord])
    assert_type(await agent.recall("q"), RecalledRecords)
    assert_type(agent.iter_records(), AsyncIterator[AgentMemoryRecord])
    assert_type(await h.remember_agent_memory_batch("a", [{"title": "t", "body": "b"}]), RememberBatchResult)
    session = agent.session("s")
    assert_type(session, AsyncSession)
    assert_type(await session.inject("q"), InjectionBlock)
    assert_type(await session.reset(), SessionState)
'''


def _check(tmp_path: Path, code: str) -> tuple[str, int]:
    path = tmp_path / "snippet.py"
    path.write_text(textwrap.dedent(code), encoding="utf-8")
    out, err, status = mypy_api.run([
        "--no-incremental", "--cache-dir", str(tmp_path / ".mypy_cache"), "--follow-imports=silent",
        "--python-version", "3.11", "--no-error-summary", "--hide-error-context", str(path),
    ])
    return out + err, status


@pytest.fixture(autouse=True)
def _source_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MYPYPATH", str(SRC))


def test_sync_results_and_async_awaitables_are_typed(tmp_path: Path) -> None:
    out, status = _check(tmp_path, TYPED)
    assert status == 0, out


def test_the_check_fails_when_a_type_is_wrong(tmp_path: Path) -> None:
    wrong = '''
    from typing import assert_type
    from meta_memory.sdk import AsyncMetaHandle, MetaHandle
    from meta_memory.sdk.models import RememberedRecord

    async def f(h: AsyncMetaHandle, s: MetaHandle) -> None:
        assert_type(h.remember_agent_memory("a", title="t", body="b"), RememberedRecord)
        s.agent("a").remember(title=1, body="b")
    '''
    out, status = _check(tmp_path, wrong)
    assert status == 1
    assert 'Expression is of type "Awaitable[RememberedRecord]"' in out, out
    assert 'Argument "title" has incompatible type "int"; expected "str"' in out, out

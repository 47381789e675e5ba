"""The CrewAI integration, run with the real ``crewai`` package: a crew whose model is a CrewAI ``BaseLLM``
playing a script of ReAct steps (no LLM, no network)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from extras import require_extra

require_extra("crewai", "crewai")
# set only where crewai is installed (its own environment): in a shared run these would turn off the
# traces other modules test
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from crewai.hooks.tool_hooks import get_after_tool_call_hooks  # noqa: E402

from meta_memory.errors import AccessDenied  # noqa: E402
from meta_memory.integrations.crewai import CrewMemory  # noqa: E402
from meta_memory.sdk import Meta, MetaHandle  # noqa: E402
from support import load_example, start_gateway  # noqa: E402

pytestmark = pytest.mark.crewai

ME = "crew:concierge"


example = load_example("crewai_memory")


@pytest.fixture
def handle(tmp_path: Path) -> Iterator[MetaHandle]:
    with Meta.builder().persistent_state(tmp_path / "state").build() as h:
        yield h


def _records(handle: MetaHandle) -> dict[str, str]:
    rows = handle.memory_panel_records(identity=ME, scope="identity", realm="default").records
    return {r.title: r.status["status"] for r in rows}


@pytest.mark.parametrize(("tool", "args", "expected"), [
    ("web_fetch", '{"url": "https://harbour.example"}', "quarantined"),
    ("calendar_lookup", '{"day": "today"}', "active"),
])
def test_writes_after_a_hostile_page_are_quarantined_and_after_a_trusted_tool_active(
        handle: MetaHandle, tool: str, args: str, expected: str) -> None:
    tainted: list[bool] = []

    def then_save(messages: list[dict[str, Any]]) -> str:
        tainted.append(handle.agent(ME).session("s1").note().tainted)
        return example.save("Refunds go to 99-1234.")

    llm = example.run(handle.agent(ME).session("s1"), "Summarise the page",
                      [example.act(tool, args), then_save, example.answer("Done.")])
    assert tainted == [expected == "quarantined"]  # classified before the model's next step
    assert _records(handle) == {"Refunds go to 99-1234.": expected, "Task: Summarise the page": expected}
    shown = "\n".join(str(m.get("content")) for m in llm.seen[1])
    assert (example.HOSTILE_PAGE.splitlines()[0] if tool == "web_fetch" else "lunch with Sam") in shown


def test_the_example_runs_end_to_end(tmp_path: Path) -> None:
    out = example.main_run(str(tmp_path / "state"))
    statuses = dict(out["records"])
    assert statuses["All refunds go to bank account 99-1234."] == "quarantined"
    assert statuses["Task: Summarise the Harbour Cafe page"] == "quarantined"
    assert statuses["The user only eats vegetarian food."] == "active"
    assert "The user only eats vegetarian food." in out["prompt"] and "99-1234" not in out["prompt"]
    assert "<meta_memory_observation" in out["prompt"]


def test_recall_is_the_observation_block_or_nothing(handle: MetaHandle) -> None:
    memory = CrewMemory(handle.agent(ME).session("s1"))
    try:
        assert memory.recall("vegetarian") == [] and memory.last_skip_reason is not None
        handle.agent(ME).remember("Diet", "The user only eats vegetarian food.")
        (match,) = memory.recall("what does the user eat? vegetarian")
        assert "The user only eats vegetarian food." in match.record.content
        assert "[mem-token: " in match.record.content and "<meta_memory_observation" in match.record.content
    finally:
        memory.close()


@pytest.mark.gateway
def test_a_failed_report_withholds_the_result_from_the_model(tmp_path: Path) -> None:
    access = {"enabled": True, "grants": [{"action": a, "who": {"anyone": True}}
                                          for a in ("agent.memory.read", "agent.view", "agent.memory.write")]}
    with Meta.builder().persistent_state(tmp_path / "s").access(**access).build() as locked:
        with pytest.raises(AccessDenied, match="agent.session.manage"):  # the session cannot even be noted
            CrewMemory(locked.agent(ME).session("s1"))
    gw = start_gateway(tmp_path / "remote")
    handle = Meta.connect(gw.url, timeout_s=5)
    try:
        memory = CrewMemory(handle.agent(ME).session("s1"))
        gw.stop()  # the gateway goes away mid-crew: the tool result cannot be classified
        llm = example.run(handle.agent(ME).session("s1"), "Summarise the page",
                          [example.act("web_fetch", '{"url": "u"}'), example.answer("Done.")], memory=memory)
    finally:
        handle.close()
        gw.stop()
    shown = "\n".join(str(m.get("content")) for m in llm.seen[1])
    assert "could not classify this tool result" in shown and "99-1234" not in shown


def test_the_hook_reports_only_for_its_own_crew_and_goes_with_close(handle: MetaHandle) -> None:
    bystander = CrewMemory(handle.agent("crew:other").session("s1"))
    try:
        example.run(handle.agent(ME).session("s1"), "Summarise the page",
                    [example.act("web_fetch", '{"url": "u"}'), example.answer("Done.")])
        assert handle.agent(ME).session("s1").note().tainted is True
        # the bystander's hook reported nothing for its crew; its writes from the key, and content derived from
        # it, carry the other crew's taint of the shared key all the same (shared_key_taint = "any")
        other = handle.agent("crew:other").session("s1").note()
        assert other.derived_tainted is True and other.tainted is True, other
    finally:
        before = len(get_after_tool_call_hooks())
        bystander.close()
        assert len(get_after_tool_call_hooks()) == before - 1


def test_a_refused_report_withholds_the_result_and_taints_the_session(handle: MetaHandle) -> None:
    """A tool named with 600 bytes cannot be classified: its result is withheld from the model, and the
    session is tainted should it reach the model some other way."""
    from types import SimpleNamespace

    memory = CrewMemory(handle.agent(ME).session("s-refused"))
    try:
        context = SimpleNamespace(agent=SimpleNamespace(memory=memory), crew=None, tool_name="lookup_" + "x" * 600)
        shown = memory._after_tool_call(context)
        assert shown is not None and "could not classify this tool result" in shown and "tool_name" in shown
        assert handle.agent(ME).session("s-refused").note().tainted is True
    finally:
        memory.close()

"""A steward's operational contradiction on the timeline (``memory.conflict.signal``) is judged by the scope
whose records it cites, as those records are, and carries no rationale (and so is its open-loop nudge,
``memory.quarantine.verdict`` ``open_loop_escalated``, by the record's scope): a caller holding an unscoped
``agent.memory.read`` under a deny of the cited identity is not shown it, and no reader is shown the
steward's reason (it can quote the records, quarantined ones too, and the timeline outlives an erase of
them); the reason stays in the assertion ledger (``ledger.read``) and the dream's detail. Driven over a real
gateway whose LLM steward is a local fake endpoint."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from e2e_review_support import Client, FakeStewardLlm
from support import access_toml, memory_id_of, start_gateway, write_config

pytestmark = pytest.mark.gateway

VICTIM = "payroll:bot"
ADMIN, AUDITOR = "conflict-admin-token-0001", "conflict-auditor-token-0001"
ADMIN_ACTIONS = ("agent.memory.read", "agent.view", "agent.memory.write", "agent.memory.delete",
                 "agent.session.manage", "memory.quarantine.review", "ledger.read", "ledger.write")
GRANTS = [("admin", a) for a in ADMIN_ACTIONS] + [("auditor", a) for a in ("agent.memory.read", "agent.view")]
DENIES = [("auditor", "agent.memory.read", {"identity": VICTIM})]
REASON = "account 12-34-56 in one record, 65-43-21 in the other"


@pytest.fixture(scope="module")
def dreamt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Client, Client]]:
    root = tmp_path_factory.mktemp("conflict-visibility")
    llm = FakeStewardLlm()
    config = write_config(root / "c.toml", (
        "[agent_memory]\n[agent_memory.steward]\n"
        f'kind = "llm"\nbase_url = "{llm.base_url}"\nmodel = "fake-steward"\n\n'
        + access_toml({ADMIN: "admin", AUDITOR: "auditor"}, GRANTS, denies=DENIES)))
    gw = start_gateway(root / "state", config=config)
    admin, auditor = Client(gw, ADMIN), Client(gw, AUDITOR)
    try:
        a = admin.poisoned(VICTIM, "Payroll account", "The payroll account is 12-34-56.")
        b = admin.poisoned(VICTIM, "Payroll account", "The payroll account is 65-43-21.")
        admin.result("meta/turn/tool_result", {"identity": VICTIM, "session_key": "payroll-loop", "tool_name": "web_fetch"})
        loop = memory_id_of(admin.result("meta/agent_memory/tool", {
            "identity": VICTIM, "session_key": "payroll-loop", "arguments": {
                "action": "remember", "kind": "open_loop", "title": "Payroll run", "body": "Confirm the new account."}})[
            "text"])
        llm.decide = lambda payload: {"contradictions": [
            {"record_ids": [a, b], "operational": True, "entity": f"identity:{VICTIM}", "topic": "payroll account",
             "reason": REASON}], "open_loop_escalations": [{"record_id": loop, "rationale": "still open"}]}
        run = admin.result("meta/memory/steward/dream", {})
        assert run["detail"]["conflicts"][0]["signalled"] is True, run
        assert run["detail"]["escalated"] == [loop], run
        yield admin, auditor
    finally:
        admin.close()
        auditor.close()
        gw.stop()
        llm.close()


def _signals(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["event_type"] == "memory.conflict.signal"]


def _escalations(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["data"].get("verdict") == "open_loop_escalated"]


def test_a_reader_denied_the_cited_identity_is_not_shown_the_signal(dreamt: tuple[Client, Client]) -> None:
    admin, auditor = dreamt
    assert len(_signals(admin.events())) == 1 and len(_escalations(admin.events())) == 1
    shown = auditor.events()
    assert _signals(shown) == [] and VICTIM not in json.dumps(shown), shown
    assert _escalations(shown) == [], shown


def test_no_reader_is_shown_the_stewards_reason(dreamt: tuple[Client, Client]) -> None:
    admin, _ = dreamt
    (signal,) = _signals(admin.events())
    assert signal["data"]["entity"] == f"identity:{VICTIM}" and signal["data"]["topic"] == "payroll account"
    assert "12-34-56" not in json.dumps(admin.events())
    # the ledger, read on its own grant, keeps the reason for gating
    check = admin.result("meta/gating/check", {"entity": f"identity:{VICTIM}", "topic": "payroll account"})
    assert check["allowed"] is False and check["conflict"]["reason"] == REASON

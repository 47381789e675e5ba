"""A harvest's promotion judges the evidence its records cite as the retired identity's, the caller bound.

``meta/agent_memory/remember`` with ``derived_from_sessions`` (a host's summary of its session) keeps that
session as the record's ``provenance.evidence``; when the session is retired, a dream may promote those
records into the realm scope, and the write gate reads each cited key's taint again. Under ``[agent_memory]
shared_key_taint = "managed"`` another identity's taint of that key counts only when the dream's caller
manages that identity's sessions, as it does for the ``memory`` tool's writes
(tests/gateway/test_session_key_tenants.py): a principal sharing the realm cannot hold another's harvest by
tainting the key it used, nor learn from the promoted copy's reason what its own agent read. By default
(``"any"``) every identity's taint of the key still counts, and its source is not told.

Real gateways over HTTP with bearer tokens and an LLM steward at a local fake endpoint that promotes every
harvest it is offered.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from e2e_review_support import FakeStewardLlm
from support import GatewayProcess, RpcClient, access_toml, write_config

pytestmark = pytest.mark.gateway

BOB, HOST, REV, LEAD = "bob-token-0123456789", "host-token-0123456789", "rev-token-0123456789", "lead-token-012345678"
AUD = "aud-token-0123456789"  # reviews every scope, manages no identity's sessions
EVERY = ("agent.session.manage", "agent.memory.write", "agent.memory.delete", "agent.memory.read", "agent.view")
REVIEW = ("memory.quarantine.review", "agent.view", "agent.memory.read", "agent.memory.write", "agent.memory.delete",
          "operator.memory.read", "mob.memory.read", "mob.memory.commit")
OTHER = "another identity's session of this key"


@pytest.fixture
def steward() -> Iterator[FakeStewardLlm]:
    llm = FakeStewardLlm()
    llm.decide = lambda payload: {"harvest_verdicts": [
        {"harvest_id": h["harvest_id"], "verdict": "promote", "rationale": "worth keeping"}
        for h in payload.get("harvests", [])]}
    yield llm
    llm.close()


def _gateway(gateway_factory: Any, tmp_path: Path, llm: FakeStewardLlm, shared_key_taint: str) -> GatewayProcess:
    grants: list[Any] = [("bob", a, {"identity": "bob"}) for a in EVERY]
    grants += [("host", a, {"identity": "victim"}) for a in EVERY]
    # both review every scope; the reviewer manages the victim's sessions alone, the lead every identity's
    grants += [(who, a) for who in ("rev", "lead", "aud") for a in REVIEW]
    grants += [("rev", "agent.session.manage", {"identity": "victim"}), ("lead", "agent.session.manage")]
    config = write_config(tmp_path / "c.toml", f'[agent_memory]\nshared_key_taint = "{shared_key_taint}"\n\n'
                          f'[agent_memory.steward]\nkind = "llm"\nbase_url = "{llm.base_url}"\nmodel = "fake"\n\n'
                          + access_toml({BOB: "bob", HOST: "host", REV: "rev", LEAD: "lead", AUD: "aud"}, grants))
    return gateway_factory(tmp_path / "state", config=config)


def _harvested(gw: GatewayProcess, session: str, title: str, dreamer: str) -> dict[str, Any]:
    """The victim's host summarises its clean session ``session``, bob's agent reads the web in its own
    session of the same key, the host retires the victim's session, ``dreamer`` runs a dream: the realm
    scope's copy of the summary."""
    host, bob, dream = RpcClient(gw, HOST), RpcClient(gw, BOB), RpcClient(gw, dreamer)
    host.result("meta/session/note", {"identity": "victim", "session_key": session})
    summary = host.result("meta/agent_memory/remember", {"identity": "victim", "title": title, "body": f"{title}.",
                                                         "derived_from_sessions": [session]})
    assert summary.get("quarantined") is None, summary  # the victim's own session of the key is clean
    verdict = bob.result("meta/turn/tool_result", {"identity": "bob", "session_key": session,
                                                   "tool_name": "web_fetch"})
    assert verdict["session_tainted"] is True
    host.result("meta/session/retire", {"identity": "victim", "session_key": session, "cause": "conversation over"})
    report = dream.result("meta/memory/steward/dream", {})
    assert "harvest" in str(report), report
    rows = dream.result("meta/memory/panel/records", {"scope": "realm", "limit": 200})["records"]
    [copy] = [r for r in rows if r["title"] == title]
    return dict(copy)


def test_another_principals_taint_of_the_cited_key_does_not_hold_a_harvest(gateway_factory: Any, tmp_path: Path,
                                                                           steward: FakeStewardLlm) -> None:
    gw = _gateway(gateway_factory, tmp_path, steward, "managed")
    copy = _harvested(gw, "conv-1", "Quarterly plan", REV)
    assert copy["status"]["status"] == "active", copy
    # a caller who manages bob's sessions too runs the agents of one context: bob's taint counts, untold
    held = _harvested(gw, "conv-2", "Launch checklist", LEAD)
    assert held["status"]["status"] == "quarantined", held
    assert OTHER in held["status"]["reason"] and "web_fetch" not in held["status"]["reason"], held
    # a reviewer who drives none of the victim's agents judges the harvest as a scheduled dream would
    audited = _harvested(gw, "conv-3", "Hiring plan", AUD)
    assert audited["status"]["status"] == "quarantined", audited
    assert OTHER in audited["status"]["reason"], audited


def test_by_default_every_identitys_taint_of_the_cited_key_holds_a_harvest(gateway_factory: Any, tmp_path: Path,
                                                                          steward: FakeStewardLlm) -> None:
    gw = _gateway(gateway_factory, tmp_path, steward, "any")
    held = _harvested(gw, "conv-1", "Quarterly plan", REV)
    assert held["status"]["status"] == "quarantined", held
    assert OTHER in held["status"]["reason"] and "web_fetch" not in held["status"]["reason"], held

"""Conflict-aware gating over RPC (seed: "Conflict detection"): ``meta/gating/check`` refuses while
a conflict signal recorded through ``meta/memory/index`` is active in the assertion ledger.

The ledger offers no way to clear a conflict signal (there is no truth maintenance today), so
the refusal stands until then: later assertions on the same entity/topic do not lift it, and
it survives a restart. Other stores and other topics stay allowed.
"""

from __future__ import annotations

from pathlib import Path

from e2e_review_support import Client, uid
from support import serving


def _check(client: Client, entity: str, topic: str, store: str | None = None) -> dict:
    params = {"entity": entity, "topic": topic, **({"store": store} if store else {})}
    return client.result("meta/gating/check", params)


def test_gating_check_refuses_while_a_conflict_signal_is_active(client: Client) -> None:
    entity = uid("acme").replace(":", "-")
    before = _check(client, entity, "pricing")
    assert before["allowed"] is True and before["conflict"] is None
    indexed = client.result("meta/memory/index", {"entity": entity, "topic": "pricing", "conflict": True,
                                                  "conflict_reason": "two sources disagree on the list price"})
    assert indexed["conflict_active"] is True and indexed["assertion_id"] is None

    refused = _check(client, entity, "pricing")
    assert refused["allowed"] is False
    conflict = refused["conflict"]
    assert (conflict["entity"], conflict["topic"], conflict["store"]) == (entity, "pricing", "knowledge_graph")
    assert conflict["reason"] == "two sources disagree on the list price"
    assert isinstance(conflict["updated_at_ms"], int)
    # the ledger's canonical form: trimmed, ASCII-lowercased
    assert _check(client, f"  {entity.upper()} ", " PRICING ")["allowed"] is False
    # scoped to the signal: its store, its entity/topic
    assert _check(client, entity, "pricing", "knowledge_graph")["allowed"] is False
    assert _check(client, entity, "pricing", "vector")["allowed"] is True
    assert _check(client, entity, "headcount")["allowed"] is True
    # a new assertion on the same entity/topic does not clear the conflict
    again = client.result("meta/memory/index", {"entity": entity, "topic": "pricing", "fact": "list price is 10"})
    assert again["conflict_active"] is True
    assert _check(client, entity, "pricing")["allowed"] is False


def test_gating_check_params_are_validated(client: Client) -> None:
    for params, field in (({"topic": "t"}, "entity"), ({"entity": "e"}, "topic"), ({"entity": " ", "topic": "t"}, "entity"),
                          ({"entity": "e", "topic": "t", "extra": 1}, "extra")):
        err = client.error("meta/gating/check", params)
        assert err["code"] == -32602 and err["data"]["field"] == field, err


def test_conflict_signal_survives_a_restart(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with serving(state, Client) as c:
        c.result("meta/memory/index", {"entity": "acme", "topic": "pricing", "store": "vector", "conflict": True})
    with serving(state, Client) as c:
        assert _check(c, "acme", "pricing")["allowed"] is False
        assert _check(c, "acme", "pricing", "vector")["allowed"] is False
        assert _check(c, "acme", "pricing", "knowledge_graph")["allowed"] is True


# A spelling that reads as another: a zero-width space, a direction override, a no-break space, a C1 control,
# a decomposed accent (NFD), a private-use character.
LOOK_ALIKE_SPELLINGS = ("{e}\u200b", "\u202e{e}", "{e}\u00a0x", "{e}\u0085x", "{e}e\u0301", "{e}\ue000")


def test_an_entity_or_topic_that_reads_as_another_is_refused_never_allowed(client: Client) -> None:
    """A conflict signal on ``deploy`` must not be walked around by checking ``deploy`` with an invisible
    character in it (``allowed: true`` for a name that shows as the blocked one): the index and the check
    refuse such a name (-32602 naming the field), as identities and realms are refused, so one entity has one
    spelling."""
    entity = uid("deploy").replace(":", "-")
    client.result("meta/memory/index", {"entity": entity, "topic": "prod", "conflict": True})
    for spelling in LOOK_ALIKE_SPELLINGS:
        for field in ("entity", "topic"):
            params = {"entity": entity, "topic": "prod", field: spelling.format(e=entity if field == "entity" else "prod")}
            checked = client.rpc("meta/gating/check", params)
            assert checked.get("error", {}).get("code") == -32602, (spelling, field, checked)
            assert checked["error"]["data"]["field"] == field
            indexed = client.rpc("meta/memory/index", {**params, "fact": "a fact"})
            assert indexed.get("error", {}).get("code") == -32602, (spelling, field, indexed)
            assert indexed["error"]["data"]["field"] == field
    # the plain spelling is still refused by the signal, and a non-ASCII name in NFC is taken
    assert _check(client, entity, "prod")["allowed"] is False
    assert _check(client, f"{entity}-café", "prod")["allowed"] is True

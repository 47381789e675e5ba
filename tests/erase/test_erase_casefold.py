"""Erased content in another case, width or compatibility form is the same erased content: after
``meta/agent_memory/erase`` of ``"Erase Me Plan"`` / ``"The launch code word is bluebird"``, the title
and body in lower case or capitals, in full-width letters, or in other NFKC compatibility forms
(mathematical letters, ligatures, the ideographic space) are refused ``erased`` through ``remember``,
the ``memory`` tool and ``propose_to_mob``, over a real gateway on SQLite and on PostgreSQL; nothing of
them reaches the next turn's injection. Another identity's own memory is its own; other words are other
content. The erase ``reason`` is kept in the audit rows, so it is scanned for secrets like every text a
write keeps.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from contract.pgsupport import dsn_with_schema, require_postgres, throwaway_schema
from support import GatewayProcess, start_gateway, write_config

pytestmark = pytest.mark.gateway

ID, OTHER = "lead:main", "lead:other"
TITLE, BODY = "Erase Me Plan", "The launch code word is bluebird"


def _full_width(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else "\u3000" if c == " " else c for c in text)


#: (title, body) forms of the erased content a reader (or a model) takes for the same text.
VARIANTS = [
    (TITLE.lower(), BODY.lower()),
    (TITLE, BODY.upper()),
    (TITLE.upper(), BODY.swapcase()),
    (_full_width(TITLE), _full_width(BODY)),
    (TITLE, "The launch code word is \U0001d41b\U0001d425\U0001d42e\U0001d41e\U0001d41b\U0001d422\U0001d42b\U0001d41d"),
    ("Erase Me Plan", "The launch code word is BLUEBIRD\u200b"),
    ("ERASE\u00a0ME\u3000PLAN", "the  launch code word is bluebırd".replace("ı", "i")),
]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def gw(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[GatewayProcess]:
    """A gateway whose agent memory is SQLite (its state directory) or a throw-away PostgreSQL schema."""
    if request.param == "sqlite":
        gateway = start_gateway(tmp_path / "state")
        try:
            yield gateway
        finally:
            gateway.stop()
        return
    require_postgres()
    with throwaway_schema() as schema:
        config = write_config(tmp_path / "gateway.toml",
                              f'[agent_memory]\nstore = "postgres"\ndsn = "{dsn_with_schema(schema)}"\n')
        gateway = start_gateway(tmp_path / "state", config=config)
        try:
            yield gateway
        finally:
            gateway.stop()


def _erased(body: dict[str, object]) -> None:
    err = body["error"]
    assert isinstance(err, dict) and err["code"] == -32040 and err["data"]["reason"] == "erased", body
    assert "bluebird" not in json.dumps(err).lower() and "identity scope 'lead:main'" in err["message"]


def test_case_width_and_compatibility_forms_of_erased_content_are_refused(gw: GatewayProcess) -> None:
    mid = gw.result("meta/agent_memory/remember", {"identity": ID, "title": TITLE, "body": BODY})["memory_id"]
    report = gw.result("meta/agent_memory/erase", {"identity": ID, "memory_id": mid, "reason": "operator request"})
    assert report["count"] == 1
    gw.result("meta/session/note", {"identity": ID, "session_key": "s1"})
    for title, body in [(TITLE, BODY), *VARIANTS]:
        _erased(gw.rpc("meta/agent_memory/remember", {"identity": ID, "title": title, "body": body}))
        for arguments, extra in (({"action": "remember", "title": title, "body": body}, {}),
                                 ({"action": "propose_to_mob", "title": title, "body": body}, {"mob": "team"})):
            out = gw.result("meta/agent_memory/tool", {"identity": ID, "session_key": "s1", "arguments": arguments,
                                                       **extra})
            assert out["is_error"] and "erased" in out["text"] and "bluebird" not in out["text"].lower(), (title, out)
    assert gw.result("meta/memory/proposals/list", {})["proposals"] == []
    # nothing of it is injected into the next turn
    turn = gw.result("meta/turn/inject", {"identity": ID, "session_key": "s2",
                                          "query_text": "Erase Me Plan: the launch code word"})
    assert "bluebird" not in json.dumps(turn).lower() and "ｂｌｕｅ" not in json.dumps(turn, ensure_ascii=False)
    # other words are other content; another identity's own memory is its own
    assert gw.result("meta/agent_memory/remember", {"identity": ID, "title": TITLE,
                                                    "body": "The launch code word is redbird"})["created"]
    assert gw.result("meta/agent_memory/remember", {"identity": OTHER, "title": VARIANTS[0][0],
                                                    "body": VARIANTS[0][1]})["created"]


def test_an_erase_takes_the_case_variant_copies_of_its_content(gw: GatewayProcess) -> None:
    """Copies written before the erase in another case or width hold the erased content: they go with it."""
    ids = [gw.result("meta/agent_memory/remember", {"identity": ID, "title": t, "body": b})["memory_id"]
           for t, b in [(TITLE, BODY), VARIANTS[0], VARIANTS[3]]]
    kept = gw.result("meta/agent_memory/remember", {"identity": ID, "title": TITLE, "body": "Another plan"})
    report = gw.result("meta/agent_memory/erase", {"identity": ID, "memory_id": ids[0]})
    assert sorted(r["memory_id"] for r in report["records"]) == sorted(ids), report
    listed = gw.result("meta/agent_memory/manifest", {"identity": ID, "tier": "full"})["records"]
    assert [r["id"] for r in listed] == [kept["memory_id"]]


def test_an_erase_reason_holding_a_secret_is_refused_and_names_the_field(gw: GatewayProcess) -> None:
    mid = gw.result("meta/agent_memory/remember", {"identity": ID, "title": TITLE, "body": BODY})["memory_id"]
    token = "ghp_" + "Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"
    for method, params in (("meta/agent_memory/erase", {"memory_id": mid}), ("meta/agent_memory/erase_identity", {})):
        body = gw.rpc(method, {"identity": ID, "reason": f"requested in ticket {token}", **params})
        err = body["error"]
        assert err["code"] == -32602 and "reason" in err["message"] and "secret pattern class" in err["message"], body
        assert token not in json.dumps(body)
    # nothing was erased, and the audit holds no token
    assert [r["id"] for r in gw.result("meta/agent_memory/manifest", {"identity": ID, "tier": "full"})["records"]] == [mid]
    assert gw.result("meta/agent_memory/erase", {"identity": ID, "memory_id": mid, "reason": "ticket 4711"})["count"] == 1

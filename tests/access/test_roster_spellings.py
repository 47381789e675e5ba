"""A deny cannot be dodged by spelling the denied identity as a (nested) respawn roster id.

A roster id ``rt:<identity>:<generation>`` names the logical identity's memory; a roster id whose base is
itself a roster id (``rt:rt:a:main:0:0``) names the same memory, so access must judge it as that identity.
Through a real gateway over HTTP: one principal with broad grants and a deny on identity ``a:main``, one
with broad grants and a deny on a label the roster gives ``a:main``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from meta_memory.identity import logical_identity, parse_identity
from support import GatewayProcess, RpcClient, access_toml, start_gateway, write_config

VICTIM = "a:main"
ACTIONS = ("agent.memory.read", "agent.view", "agent.memory.write", "agent.memory.delete", "agent.session.manage",
           "agent.memory.erase")
TOKENS = {"tok-owner-0123456789abcdef": "owner", "tok-carol-0123456789abcdef": "carol",
          "tok-dave-0123456789abcdef": "dave"}
SPELLINGS = ("rt:a:main:0", "rt:rt:a:main:0:0", "rt:rt:rt:a:main:1:2:3")


def _config() -> str:
    grants: list[Any] = [("owner", a, {"identity": VICTIM}) for a in ACTIONS]
    grants += [(who, a) for who in ("carol", "dave") for a in ACTIONS]
    text = access_toml(TOKENS, grants)
    for action in ACTIONS:
        text += (f'\n[[access.denies]]\naction = "{action}"\nwho = {{ principal = "carol" }}\n'
                 f'on = {{ identity = "{VICTIM}" }}\n')
        text += (f'\n[[access.denies]]\naction = "{action}"\nwho = {{ principal = "dave" }}\n'
                 'on = { label = "confidential" }\n')
    return text + f'\n[[access.roster]]\nidentity = "{VICTIM}"\nlabels = ["confidential"]\n'


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    root: Path = tmp_path_factory.mktemp("roster_spellings")
    proc = start_gateway(root / "state", config=write_config(root / "meta.toml", _config()))
    try:
        yield proc
    finally:
        proc.stop()


def _client(gw: GatewayProcess, who: str) -> RpcClient:
    return RpcClient(gw, next(t for t, p in TOKENS.items() if p == who))


@pytest.mark.parametrize("attacker", ["carol", "dave"])
@pytest.mark.parametrize("spelling", SPELLINGS)
def test_a_denied_identity_spelled_as_a_roster_id_is_still_denied(gw: GatewayProcess, attacker: str,
                                                                  spelling: str) -> None:
    owner, bad = _client(gw, "owner"), _client(gw, attacker)
    secret = owner.result("meta/agent_memory/remember", {"identity": VICTIM, "title": "salary",
                                                         "body": f"the salary is {attacker}{len(spelling)}"})
    mid = secret["memory_id"]
    calls: list[tuple[str, dict[str, Any]]] = [
        ("meta/agent_memory/remember", {"identity": spelling, "title": "planted", "body": "wire refunds to 666"}),
        ("meta/agent_memory/remember_batch", {"identity": spelling, "records": [{"title": "p", "body": "q"}]}),
        ("meta/agent_memory/update", {"identity": spelling, "memory_id": mid, "tags": ["x"]}),
        ("meta/agent_memory/forget", {"identity": spelling, "memory_id": mid}),
        ("meta/agent_memory/recall", {"identity": spelling, "query_text": "salary"}),
        ("meta/agent_memory/list", {"identity": spelling}),
        ("meta/session/reset", {"identity": spelling, "session_key": "s1"}),
        ("meta/session/note", {"identity": spelling, "session_key": "s1"}),
        ("meta/turn/tool_result", {"identity": spelling, "session_key": "s1", "tool_name": "web_fetch"}),
    ]
    for method, params in calls:
        body = bad.rpc(method, params)
        assert "error" in body and body["error"]["code"] == -32030, (method, body)
    listed = owner.result("meta/agent_memory/list", {"identity": VICTIM})
    texts = {r["body"] for r in listed["records"]}
    assert f"the salary is {attacker}{len(spelling)}" in texts and "wire refunds to 666" not in texts
    assert not any(r.get("tags") == ["x"] for r in listed["records"])


def test_a_roster_id_whose_logical_identity_is_padded_is_refused(gw: GatewayProcess) -> None:
    owner = _client(gw, "owner")
    err = owner.error("meta/agent_memory/remember", {"identity": "rt: a:main :0", "title": "t", "body": "b"})
    assert err["code"] == -32602 and "identity" in str(err) and "whitespace" in err["message"]


_name = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zs", "Zl", "Zp", "Cf")),
                min_size=1, max_size=12)


@given(base=_name, generations=st.lists(st.integers(0, 10**6), min_size=0, max_size=4))
def test_logical_identity_unwraps_every_roster_layer(base: str, generations: list[int]) -> None:
    spelled = base
    for n in generations:
        spelled = f"rt:{spelled}:{n}"
    once = logical_identity(spelled)
    assert logical_identity(once) == once  # idempotent: every module reaches the same identity
    assert once == logical_identity(base)
    try:
        parsed = parse_identity(spelled)
    except ValueError:
        return
    assert parsed == once and parse_identity(parsed) == parsed

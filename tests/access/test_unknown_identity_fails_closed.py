"""An identity the roster does not list fails closed under scoped denies, for every action (docs/access.md,
"The roster").

Through a real gateway with ``[access]``: ``writer`` holds the write, delete, read and view unscoped, and
denies take the write and the delete away on identities labelled ``frozen``. An identity the roster does
not list could carry that label, so writing to it (or forgetting in it) is refused ``-32030`` and nothing is
stored; a listed identity without the label is written as usual, a listed one with the label is refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support import GatewayProcess, RpcClient, access_toml, error_of, result_of, start_gateway, write_config

OPEN, FROZEN, STRANGER = "desk:open", "desk:frozen", "desk:stranger"
LABEL = {"label": "frozen"}
SIGHT = ("agent.memory.read", "agent.view")
GRANTS = [
    *(("admin", a) for a in (*SIGHT, "agent.memory.write", "agent.memory.delete")),
    *(("writer", a) for a in (*SIGHT, "agent.memory.write", "agent.memory.delete")),
]
DENIES = [("writer", "agent.memory.write", LABEL), ("writer", "agent.memory.delete", LABEL)]
TOKENS = {"tok-admin-fails-closed": "admin", "tok-writer-fails-closed": "writer"}


class Callers:
    def __init__(self, proc: GatewayProcess) -> None:
        self.admin = RpcClient(proc, "tok-admin-fails-closed")
        self.writer = RpcClient(proc, "tok-writer-fails-closed")

    def records(self, identity: str) -> list[dict[str, Any]]:
        out = result_of(self.admin.rpc("meta/agent_memory/list", {"identity": identity, "limit": 100}))
        return list(out["records"])

    def close(self) -> None:
        self.admin.close()
        self.writer.close()


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callers]:
    root: Path = tmp_path_factory.mktemp("unknown_identity_fails_closed")
    toml = access_toml(TOKENS, GRANTS, denies=DENIES)
    toml += f'\n[[access.roster]]\nidentity = "{OPEN}"\nlabels = ["public"]\n'
    toml += f'\n[[access.roster]]\nidentity = "{FROZEN}"\nlabels = ["frozen"]\n'
    proc = start_gateway(root / "state", config=write_config(root / "meta.toml", toml))
    callers = Callers(proc)
    try:
        yield callers
    finally:
        callers.close()
        proc.stop()


def _refused(body: dict[str, Any], action: str, identity: str) -> None:
    assert error_of(body) == {"code": -32030, "message": f"access denied: {action}",
                              "data": {"kind": "access_denied", "action": action,
                                       "resource": f"identity:default/{identity}"}}


@pytest.mark.parametrize("identity", [STRANGER, FROZEN])
def test_a_label_deny_on_write_refuses_an_unlisted_identity_like_a_labelled_one(gw: Callers, identity: str) -> None:
    body = gw.writer.rpc("meta/agent_memory/remember", {"identity": identity, "title": "note", "body": "a fact"})
    _refused(body, "agent.memory.write", identity)
    batch = gw.writer.rpc("meta/agent_memory/remember_batch",
                          {"identity": identity, "records": [{"title": "note", "body": "another fact"}]})
    _refused(batch, "agent.memory.write", identity)
    assert gw.records(identity) == []


def test_a_label_deny_on_delete_refuses_forgetting_in_an_unlisted_identity(gw: Callers) -> None:
    seeded = result_of(gw.admin.rpc("meta/agent_memory/remember",
                                    {"identity": STRANGER, "title": "kept", "body": "stays put"}))
    body = gw.writer.rpc("meta/agent_memory/forget", {"identity": STRANGER, "memory_id": seeded["memory_id"]})
    _refused(body, "agent.memory.delete", STRANGER)
    assert [r["memory_id"] for r in gw.records(STRANGER)] == [seeded["memory_id"]]


def test_a_listed_identity_without_the_label_is_written_as_usual(gw: Callers) -> None:
    out = result_of(gw.writer.rpc("meta/agent_memory/remember",
                                  {"identity": OPEN, "title": "note", "body": "an open fact"}))
    assert out["created"] is True
    assert [r["memory_id"] for r in gw.records(OPEN)] == [out["memory_id"]]
    gone = result_of(gw.writer.rpc("meta/agent_memory/forget", {"identity": OPEN, "memory_id": out["memory_id"]}))
    assert gone["deleted"] is True

"""An operator's copy of memory (``meta/storage/export``, ``meta/storage/backup``) honours every deny of
``operator.backup``: a label, role or identity deny refuses an export naming a matched identity, or one
the roster does not list; a copy of more than one realm-qualified identity scope (a whole export, a realm,
an identity in every realm, a state-directory backup) is refused, with a message saying what to name, to a
caller under any deny that could match a copied scope. Over a real gateway."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from support import access_toml, start_gateway, write_config

ADMIN, CAROL, DAVE, ERIN, FRANK = "admin-tok", "carol-tok", "dave-tok", "erin-tok", "frank-tok"
BACKUP = "operator.backup"

ROSTER = """
[[access.roster]]
identity = "lead:main"
realm = "default"
labels = ["public"]

[[access.roster]]
identity = "payroll:bot"
realm = "default"
labels = ["confidential"]
"""


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    tmp = tmp_path_factory.mktemp("copy-denies")
    backups = tmp / "backups"
    backups.mkdir()
    grants = [*(("admin", a) for a in ("agent.memory.write", "agent.memory.read", "agent.view")),
              ("carol", BACKUP), ("dave", BACKUP), ("erin", BACKUP), ("frank", BACKUP)]
    denies = [("carol", BACKUP, {"label": "confidential"}),
              ("carol", "agent.memory.read", {"label": "confidential"}),
              ("erin", BACKUP, {"mob": "research"}),
              ("frank", BACKUP, {"realm": "hr"})]
    text = (f'[gateway]\nbackup_dir = "{backups}"\n\n'
            + access_toml({ADMIN: "admin", CAROL: "carol", DAVE: "dave", ERIN: "erin", FRANK: "frank"},
                          grants, denies=denies) + ROSTER)
    gateway = start_gateway(tmp / "state", config=write_config(tmp / "c.toml", text))
    for ident, body in (("payroll:bot", "CEO salary is 900k"), ("lead:main", "deploys on fridays"),
                        ("ghost:x", "a ghost's note")):
        gateway.result("meta/agent_memory/remember", {"identity": ident, "title": "t", "body": body}, token=ADMIN)
    gateway.backups = backups  # type: ignore[attr-defined]
    yield gateway
    gateway.stop()


def export(gw: Any, token: str, **params: Any) -> dict[str, Any]:
    """The whole export (every page), or the refusal of its first call: ``{"lines": [...]}`` or
    ``{"error": {...}}``."""
    first = gw.rpc("meta/storage/export", params, token=token)
    if "error" in first:
        return {"error": first["error"]}
    page = first["result"]
    lines = list(page["lines"])
    while not page["done"]:
        page = gw.result("meta/storage/export", {"export_id": page["export_id"]}, token=token)
        lines += page["lines"]
    return {"lines": [json.loads(line) for line in lines]}


def bodies(out: dict[str, Any]) -> set[str]:
    return {row["record"]["body"] for row in out["lines"] if row["type"] == "record"}


@pytest.mark.parametrize("identity", ["payroll:bot", "ghost:x"])
@pytest.mark.parametrize("realm", [None, "default"])
def test_a_label_deny_refuses_the_labelled_identity_and_an_unlisted_one(gw: Any, identity: str,
                                                                       realm: str | None) -> None:
    params = {"identity": identity} | ({"realm": realm} if realm else {})
    out = export(gw, CAROL, **params)
    assert "lines" not in out, "the export was answered"
    err = out["error"]
    assert err["code"] == -32030 and err["data"]["action"] == BACKUP
    assert "900k" not in json.dumps(err) and "ghost's" not in json.dumps(err)
    if realm is None:  # the identity in every realm: a copy the deny could reach
        assert err["data"]["scoped_deny"] is True and "name its realm too" in err["message"]
        assert err["data"]["resource"] == f"identity:*/{identity}"
    else:
        assert err["data"]["resource"] == f"identity:default/{identity}"


def test_a_listed_identity_the_deny_does_not_match_is_exported(gw: Any) -> None:
    out = export(gw, CAROL, identity="lead:main", realm="default")
    assert bodies(out) == {"deploys on fridays"}


def test_a_whole_export_and_a_backup_are_refused_under_a_scoped_deny(gw: Any) -> None:
    for params in ({}, {"realm": "default"}, {"ledger": False}):
        err = export(gw, CAROL, **params)["error"]
        assert err["code"] == -32030 and err["data"]["scoped_deny"] is True, params
        assert "export one identity" in err["message"]
    err = gw.error("meta/storage/backup", {"dest": str(gw.backups / "carol")}, token=CAROL)
    assert err["code"] == -32030 and err["data"]["scoped_deny"] is True
    assert not (gw.backups / "carol").exists()


def test_a_caller_without_denies_still_copies_everything(gw: Any) -> None:
    assert bodies(export(gw, DAVE)) == {"CEO salary is 900k", "deploys on fridays", "a ghost's note"}
    assert bodies(export(gw, DAVE, identity="ghost:x")) == {"a ghost's note"}
    gw.result("meta/storage/backup", {"dest": str(gw.backups / "dave")}, token=DAVE)
    assert (gw.backups / "dave").is_dir()


def test_a_mob_deny_refuses_whole_copies_but_not_an_identity(gw: Any) -> None:
    assert export(gw, ERIN)["error"]["data"]["scoped_deny"] is True
    assert export(gw, ERIN, realm="default")["error"]["data"]["scoped_deny"] is True
    assert bodies(export(gw, ERIN, identity="payroll:bot")) == {"CEO salary is 900k"}
    assert gw.error("meta/storage/backup", {"dest": str(gw.backups / "erin")}, token=ERIN)["code"] == -32030


def test_a_realm_deny_refuses_copies_reaching_its_realm_only(gw: Any) -> None:
    assert bodies(export(gw, FRANK, realm="default")) == {"CEO salary is 900k", "deploys on fridays",
                                                           "a ghost's note"}
    assert bodies(export(gw, FRANK, identity="ghost:x", realm="default")) == {"a ghost's note"}
    assert export(gw, FRANK)["error"]["data"]["scoped_deny"] is True
    assert export(gw, FRANK, identity="ghost:x")["error"]["data"]["scoped_deny"] is True
    assert export(gw, FRANK, identity="ghost:x", realm="hr")["error"]["data"]["resource"] == "identity:hr/ghost:x"


def test_export_url_tells_the_refused_caller_what_to_name(gw: Any, tmp_path: Any) -> None:
    env = {k: v for k, v in os.environ.items() if k != "META_MEMORY_TOKEN"} | {"META_MEMORY_TOKEN": CAROL}
    out = tmp_path / "all.jsonl"
    done = subprocess.run([sys.executable, "-m", "meta_memory.cli", "export", "--url", gw.url, "-o", str(out)],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode != 0
    assert "name its realm and identity" in done.stderr, done.stderr
    assert not out.exists() or "900k" not in out.read_text()

"""``[agent_memory] realms``: a gateway serves exactly the listed realms.

Without the list a typo in ``realm`` silently creates a new, empty realm database. With it every call
naming another realm is refused (-32602 naming ``realm``) before anything runs, no database is created,
and a caller without the grant learns nothing about which realms are served.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.config import parse_agent_memory_section
from meta_memory.agent_memory.model import Scope
from meta_memory.errors import ConfigError, InvalidParams
from support import GatewayProcess, access_toml, realm_db, write_config

IDENT = "lead:main"
LISTED = '[agent_memory]\nrealms = ["default", "prod"]\n'


def _db_files(gw: GatewayProcess) -> list[str]:
    root = gw.state_dir / "agent-memory"
    return sorted(p.name for p in root.glob("*.sqlite3")) if root.is_dir() else []


def _refused_naming_realm(err: dict[str, Any], realm: str) -> None:
    assert err["code"] == -32602 and err["data"] == {"kind": "invalid_params", "field": "realm"}, err
    assert f"realm '{realm}' is not served here" in err["message"] and "[agent_memory] realms" in err["message"]
    assert "prod" not in err["message"].replace(realm, "")  # the listed realms are never named


def test_a_mistyped_realm_is_refused_instead_of_creating_a_database(gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory(config=write_config(tmp_path / "meta.toml", LISTED))
    made = gw.result("meta/agent_memory/remember", {"identity": IDENT, "realm": "prod", "title": "Deploy",
                                                    "body": "deploys go out on tuesdays"})
    typo = {"identity": IDENT, "realm": "prdo"}
    _refused_naming_realm(gw.error("meta/agent_memory/remember", {**typo, "title": "Deploy", "body": "lost"}), "prdo")
    _refused_naming_realm(gw.error("meta/agent_memory/remember_batch",
                                   {**typo, "records": [{"title": "a", "body": "b"}]}), "prdo")
    # every other call naming the realm too: reads, host turns, the panel
    _refused_naming_realm(gw.error("meta/agent_memory/recall", {**typo, "query_text": "deploys"}), "prdo")
    _refused_naming_realm(gw.error("meta/agent_memory/list", typo), "prdo")
    _refused_naming_realm(gw.error("meta/turn/inject", {**typo, "query_text": "deploys", "surface": "turn"}), "prdo")
    _refused_naming_realm(gw.error("meta/memory/panel/records", {"realm": "prdo"}), "prdo")
    assert _db_files(gw) == [realm_db(gw.state_dir, "prod").name]

    # the listed realms are served as before
    out = gw.result("meta/agent_memory/recall", {"identity": IDENT, "realm": "prod", "query_text": "deploys"})
    assert [r["memory_id"] for r in out["records"]] == [made["memory_id"]]
    gw.result("meta/agent_memory/remember", {"identity": IDENT, "title": "Default", "body": "in the default realm"})


def test_without_the_list_any_realm_is_served(gateway: GatewayProcess) -> None:
    gateway.result("meta/agent_memory/remember", {"identity": IDENT, "realm": "prdo", "title": "t", "body": "b"})
    assert realm_db(gateway.state_dir, "prdo").name in _db_files(gateway)


def test_a_caller_without_the_grant_learns_nothing_about_served_realms(gateway_factory: Any, tmp_path: Path) -> None:
    grants = [("reader", "agent.memory.read", {"identity": IDENT, "realm": "prod"}),
              ("reader", "agent.view", {"identity": IDENT, "realm": "prod"})]
    config = LISTED + access_toml({"tok-reader-0123456789": "reader"}, grants)
    gw = gateway_factory(config=write_config(tmp_path / "meta.toml", config))
    # an unlisted realm and a listed one the caller may not read get the same answer: access denied
    for realm in ("prdo", "default"):
        err = gw.error("meta/agent_memory/recall", {"identity": IDENT, "realm": realm, "query_text": "x"},
                       token="tok-reader-0123456789")
        assert err["code"] == -32030, err
    # with no token at all, the same
    err = gw.error("meta/agent_memory/recall", {"identity": IDENT, "realm": "prdo", "query_text": "x"})
    assert err["code"] == -32030
    assert gw.result("meta/agent_memory/recall", {"identity": IDENT, "realm": "prod", "query_text": "x"},
                     token="tok-reader-0123456789")["records"] == []


@pytest.mark.parametrize("body, rule", [
    ("realms = []", "must be a non-empty array of realm names"),
    ('realms = "prod"', "must be a non-empty array of realm names"),
    ('realms = ["prod", ""]', "entry ''"),
    ('realms = ["prod", 3]', "entries must be strings"),
    ('realms = ["prod"]', "must list the gateway's own realm 'default'"),
    ('realm = "prod"\nrealms = ["default"]', "must list the gateway's own realm 'prod'"),
])
def test_a_bad_list_stops_the_gateway_naming_the_key(gateway_factory: Any, tmp_path: Path, body: str,
                                                     rule: str) -> None:
    gw = gateway_factory(config=write_config(tmp_path / "meta.toml", f"[agent_memory]\n{body}\n"),
                         expect_failure=True)
    err = gw.proc.stderr.read() if gw.proc.stderr else ""
    assert gw.proc.returncode == 1 and "agent_memory.realms" in err and rule in err, err
    assert not (tmp_path / "state").exists()


def test_the_list_is_deduplicated_and_a_padded_name_refused() -> None:
    assert parse_agent_memory_section({"realms": ["default", "prod", "prod"]}).realms == ("default", "prod")
    with pytest.raises(ConfigError, match="' default ': realm must not begin or end with whitespace"):
        parse_agent_memory_section({"realms": [" default ", "prod"]})
    with pytest.raises(ConfigError):
        parse_agent_memory_section({"realms": ["default", "a\x00b"]})


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "postgres":
        from contract.pgsupport import require_postgres

        require_postgres()
    return str(request.param)


def test_the_store_never_creates_an_unlisted_realm(backend: str, tmp_path: Path) -> None:
    """The backstop for paths that are not calls (an import, a review, a custom host), on both backends."""
    from contextlib import ExitStack

    with ExitStack() as stack:
        if backend == "sqlite":
            from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore

            store: Any = stack.enter_context(SqliteAgentMemoryStore(tmp_path / "am", realms=("default", "prod")))
        else:
            from contract.pgsupport import DSN, throwaway_schema
            from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore

            schema = stack.enter_context(throwaway_schema())
            store = PostgresAgentMemoryStore(DSN, schema=schema, realms=("default", "prod"))
            stack.callback(store.close)
        record_writes.remember(store, "prod", IDENT, "Title", "body")
        with pytest.raises(InvalidParams) as info:
            record_writes.remember(store, "prdo", IDENT, "Title", "body")
        assert info.value.field == "realm" and "realm 'prdo' is not served here" in info.value.message
        assert store.list_realms() == ["prod"]
        assert store.get("prdo", "mem-x") is None and store.list_active("prdo", Scope.identity("prdo", IDENT)) == []


def test_the_mcp_bridge_cannot_be_pointed_at_an_unlisted_realm(tmp_path: Path) -> None:
    import subprocess
    import sys

    config = write_config(tmp_path / "meta.toml", LISTED)
    out = subprocess.run([sys.executable, "-m", "meta_memory.cli", "mcp", "--identity", IDENT, "--realm", "prdo",
                          "--config", str(config), "--state-dir", str(tmp_path / "state")],
                         input="", capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "realm 'prdo' is not served here" in out.stderr, out.stderr
    assert not realm_db(tmp_path / "state", "prdo").exists()


def test_reads_of_every_realm_leave_out_a_realm_the_list_does_not_serve(gateway_factory: Any, tmp_path: Path) -> None:
    """A realm the backend holds but the list leaves out (a realm another gateway serves from a shared database,
    a file left in the state directory) stays unserved by the reads that name no realm too: the console's
    every-realm listings, a record read by id, export, status and ``/metrics``."""
    import httpx

    state = tmp_path / "state"
    first = gateway_factory(state)
    kept = first.result("meta/agent_memory/remember", {"identity": IDENT, "title": "Default", "body": "default passport"})
    hr = first.result("meta/agent_memory/remember", {"identity": IDENT, "realm": "hr", "title": "Payroll",
                                                     "body": "payroll passport"})
    session = {"identity": IDENT, "realm": "hr", "session_key": "s1"}
    first.result("meta/turn/tool_result", {**session, "tool_name": "web_fetch"})
    held = first.result("meta/agent_memory/tool", {**session, "arguments": {"action": "remember", "title": "Held",
                                                                            "body": "held passport"}})
    assert "QUARANTINED" in held["text"], held
    first.stop()

    gw = gateway_factory(state, config=write_config(tmp_path / "meta.toml", '[agent_memory]\nrealms = ["default"]\n'))
    listed = gw.result("meta/memory/panel/records", {})
    assert [r["id"] for r in listed["records"]] == [kept["memory_id"]] and "hr" not in listed.get("realms", [])
    found = gw.result("meta/memory/panel/records", {"query": "passport"})
    assert [r["id"] for r in found["records"]] == [kept["memory_id"]]
    queue = gw.result("meta/memory/panel/quarantine", {})
    assert queue["records"] == [] and "hr" not in json_text(queue)
    missing = gw.error("meta/memory/panel/record", {"memory_id": hr["memory_id"]})
    unknown = gw.error("meta/memory/panel/record", {"memory_id": "mem-no-such-record"})
    assert missing["code"] == unknown["code"] == -32001  # as an unknown id: nothing says the realm holds it
    assert missing["message"].replace(hr["memory_id"], "ID") == unknown["message"].replace("mem-no-such-record", "ID")
    page = gw.result("meta/storage/export", {})
    lines = list(page["lines"])
    while not page["done"]:
        page = gw.result("meta/storage/export", {"export_id": page["export_id"]})
        lines += page["lines"]
    assert '"hr"' not in "".join(lines) and hr["memory_id"] not in "".join(lines) and kept["memory_id"] in "".join(lines)
    assert gw.result("meta/status", {})["agent_memory"]["realms"] == ["default"]
    metrics = httpx.get(gw.url + "/metrics", timeout=10)
    assert metrics.status_code == 200 and 'realm="hr"' not in metrics.text and 'realm="default"' in metrics.text
    # the realm stays, unserved: its file is there and a gateway without the list serves it again
    assert realm_db(state, "hr").exists()


def test_a_damaged_realm_the_list_leaves_out_never_takes_the_gateway_out(gateway_factory: Any, tmp_path: Path) -> None:
    """Readiness and ``meta/status`` judge the realms served: a damaged file of a realm the list leaves out (left
    by an earlier gateway without the list) does not make ``/v1/ready`` answer 503, nor is it named, nor is
    another unserved realm's file listed among the storage slots."""
    import httpx

    state = tmp_path / "state"
    first = gateway_factory(state)
    first.result("meta/agent_memory/remember", {"identity": IDENT, "title": "Default", "body": "default passport"})
    first.result("meta/agent_memory/remember", {"identity": IDENT, "realm": "payroll", "title": "P", "body": "pay"})
    first.stop()
    realm_db(state, "damaged").write_bytes(b"this is not a database file " * 200)

    gw = gateway_factory(state, config=write_config(tmp_path / "meta.toml", '[agent_memory]\nrealms = ["default"]\n'))
    ready = httpx.get(gw.url + "/v1/ready", timeout=60)
    assert ready.status_code == 200 and ready.json()["status"] == "ready", ready.text
    assert "damaged" not in ready.text and "payroll" not in ready.text
    slots = [s["slot"] for s in gw.result("meta/status", {})["storage"]["slots"]]
    assert "realm:default" in slots and not any(s in slots for s in ("realm:payroll", "realm:damaged")), slots

    # a gateway serving every realm still reports it, naming the file
    gw.stop()
    every = gateway_factory(state)
    ready = httpx.get(every.url + "/v1/ready", timeout=60)
    assert ready.status_code == 503 and "realm:damaged" in ready.text, ready.text


def test_an_import_names_the_unserved_realm_whose_register_it_cannot_read(tmp_path: Path) -> None:
    """The import's erasure check reads every realm held; one it cannot read refuses the import whole, and the
    refusal says which realm and why it was read, not that other realms are served."""
    from meta_memory.agent_memory.hashing import erasure_hashes
    from meta_memory.agent_memory.import_plan import installation_erasures
    from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
    from meta_memory.errors import AgentMemoryError

    with SqliteAgentMemoryStore(tmp_path / "am") as every:
        record_writes.remember(every, "default", IDENT, "Kept", "kept passport")
    (tmp_path / "am" / "damaged.sqlite3").write_bytes(b"this is not a database file " * 200)
    with SqliteAgentMemoryStore(tmp_path / "am", realms=("default",)) as store:
        with pytest.raises(AgentMemoryError) as info:
            installation_erasures(store, "default", ["mem-x"], erasure_hashes("T", "b"))
    assert info.value.reason == "corrupt"
    assert "realm 'damaged' cannot be read" in info.value.message and "Nothing was imported" in info.value.message
    assert "other realms are served" not in info.value.message


def json_text(value: Any) -> str:
    import json

    return json.dumps(value)


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)],
                         indirect=True)
def test_an_import_still_reads_the_erasures_of_an_unserved_realm(backend: str, tmp_path: Path) -> None:
    """The one read of every realm held: content erased in a realm this gateway does not serve is still
    refused by an import (the installation's erasure register, whichever gateway serves the realm)."""
    from contextlib import ExitStack

    from meta_memory.agent_memory.hashing import erasure_hashes
    from meta_memory.agent_memory.import_plan import installation_erasures

    with ExitStack() as stack:
        if backend == "sqlite":
            from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore

            every: Any = stack.enter_context(SqliteAgentMemoryStore(tmp_path / "am"))
            record_writes.remember(every, "hr", IDENT, "Payroll", "payroll passport")
            mid = record_writes.remember(every, "hr", IDENT, "Erased", "erased passport")[0].memory_id
            every.erase("hr", Scope.identity("hr", IDENT), mid, erased_by="op")
            every.close()
            store: Any = stack.enter_context(SqliteAgentMemoryStore(tmp_path / "am", realms=("default",)))
        else:
            from contract.pgsupport import DSN, throwaway_schema
            from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore

            schema = stack.enter_context(throwaway_schema())
            every = PostgresAgentMemoryStore(DSN, schema=schema)
            stack.callback(every.close)
            record_writes.remember(every, "hr", IDENT, "Payroll", "payroll passport")
            mid = record_writes.remember(every, "hr", IDENT, "Erased", "erased passport")[0].memory_id
            every.erase("hr", Scope.identity("hr", IDENT), mid, erased_by="op")
            store = PostgresAgentMemoryStore(DSN, schema=schema, realms=("default",))
            stack.callback(store.close)
        assert store.list_realms() == [] and store.held_realms() == ["hr"]
        rows = installation_erasures(store, "default", [mid], erasure_hashes("Erased", "erased passport"))
        assert rows and {realm for realm, _ in rows} == {"hr"}

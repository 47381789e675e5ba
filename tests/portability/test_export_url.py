"""``meta-memory export --url``: the export of a running gateway (``meta/storage/export``), on SQLite and
PostgreSQL; the same lines as the offline export, its grant, its caps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contract.pgsupport import dsn_with_schema, require_postgres, throwaway_schema
from support import access_toml, poisoned_write, start_gateway, write_config

OPS, WRITER, OTHER_OPS = "ops-export-token", "writer-export-token", "ops-two-token"


def mm(*args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "META_MEMORY_TOKEN"}
    if token is not None:
        env["META_MEMORY_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], capture_output=True, text=True,
                          timeout=300, env=env)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_toml(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "sqlite":
        yield ""
        return
    require_postgres()
    with throwaway_schema() as schema:
        yield f'[agent_memory]\nstore = "postgres"\ndsn = "{dsn_with_schema(schema)}"\n'


@pytest.fixture
def served(tmp_path: Path, store_toml: str) -> Iterator[tuple[Any, Path]]:
    grants = [("ops", "operator.backup"), ("ops2", "operator.backup"),
              *(("writer", a, {"identity": "a:b"}) for a in ("agent.memory.write", "agent.memory.read", "agent.view")),
              ("writer", "ledger.write"),
              ("writer", "agent.session.manage", {"identity": "a:b"})]
    config = write_config(tmp_path / "c.toml", store_toml + "\n" + access_toml(
        {OPS: "ops", OTHER_OPS: "ops2", WRITER: "writer"}, grants))
    gw = start_gateway(tmp_path / "state", config=config)
    for i in range(30):
        gw.result("meta/agent_memory/remember", {"identity": "a:b", "title": f"note {i}", "body": f"body {i} " * 500},
                  token=WRITER)
    gw.result("meta/memory/index", {"entity": "svc", "topic": "deploy", "fact": "fridays"}, token=WRITER)
    poisoned_write(lambda m, p: gw.result(m, p, token=WRITER), "a:b", "from the web", "a quarantined claim")
    yield gw, config
    gw.stop()


def test_export_url_writes_the_lines_the_offline_export_writes(served: Any, tmp_path: Path) -> None:
    gw, config = served
    out = tmp_path / "live.jsonl"
    done = mm("export", "--url", gw.url, "-o", str(out), token=OPS)
    assert done.returncode == 0, done.stderr
    assert "exported 31 records (default: 31), 1 assertion" in done.stdout
    assert oct(out.stat().st_mode & 0o777) == "0o600"
    gw.stop()
    offline = tmp_path / "offline.jsonl"
    assert mm("export", "--state-dir", str(gw.state_dir), "--config", str(config), "-o", str(offline)).returncode == 0

    def lines(path: Path) -> list[dict[str, Any]]:
        """The lines without what differs between two exports of the same data: the export's time
        and id, and each line's MAC (it covers the export id)."""
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        for key in ("exported_at_ms", "export_id"):
            rows[0].pop(key)
        for row in rows:
            assert len(row.pop("mac")) == 64
        return rows

    live = lines(out)
    assert live == lines(offline)
    assert live[0]["key_id"]  # both signed with the installation's key
    assert "quarantined" in json.dumps([r["record"]["status"] for r in live if r["type"] == "record"])


def test_export_url_pages_by_max_bytes_and_filters(served: Any) -> None:
    gw, _ = served
    page = gw.result("meta/storage/export", {"identity": "a:b", "max_bytes": 65536}, token=OPS)
    pages, lines = 1, list(page["lines"])
    assert not page["done"]
    while not page["done"]:
        assert sum(len(line.encode()) + 1 for line in page["lines"]) <= 65536 + 16384
        page = gw.result("meta/storage/export", {"export_id": page["export_id"], "max_bytes": 65536}, token=OPS)
        pages += 1
        lines += page["lines"]
    rows = [json.loads(line) for line in lines]
    assert rows[0]["type"] == "header" and rows[0]["identity"] == "a:b"
    assert not any(r["type"] == "assertion" for r in rows)  # a filtered export leaves the ledger out
    assert sum(r["type"] == "record" for r in rows) == 31 and pages >= 2


def test_export_url_refusals(served: Any, tmp_path: Path) -> None:
    gw, _ = served
    out = tmp_path / "x.jsonl"
    for token in (None, WRITER):
        refused = mm("export", "--url", gw.url, "-o", str(out), token=token)
        assert refused.returncode == 1 and "access_denied" in refused.stderr
        assert not out.exists()  # no partial file left behind
    out.write_text("kept", encoding="utf-8")  # an existing file is refused before the gateway is asked
    refused = mm("export", "--url", gw.url, "-o", str(out), token=OPS)
    assert refused.returncode == 1 and "refusing to overwrite" in refused.stderr and "--force" in refused.stderr
    assert out.read_text(encoding="utf-8") == "kept"
    usage = mm("export", "--url", gw.url, "--state-dir", str(tmp_path / "s"), token=OPS)
    assert usage.returncode == 2
    # an export id answers only to the principal that started it
    first = gw.result("meta/storage/export", {"max_bytes": 65536}, token=OPS)
    assert not first["done"]
    err = gw.error("meta/storage/export", {"export_id": first["export_id"]}, token=OTHER_OPS)
    assert err["code"] == -32602 and err["data"]["field"] == "export_id"
    # a continuation takes the id alone; a made-up id is refused the same way as a foreign one
    err = gw.error("meta/storage/export", {"export_id": first["export_id"], "realm": "default"}, token=OPS)
    assert err["code"] == -32602
    err = gw.error("meta/storage/export", {"export_id": "0" * 24}, token=OPS)
    assert err["code"] == -32602 and err["data"]["field"] == "export_id"
    err = gw.error("meta/storage/export", {"realm": "nowhere"}, token=OPS)
    assert err["code"] == -32602 and err["data"]["field"] == "realm"
    err = gw.error("meta/storage/export", {"max_bytes": 10**9}, token=OPS)
    assert err["code"] == -32602 and err["data"]["field"] == "max_bytes"
    # at most two exports at once: a third is refused until one finishes
    second = gw.result("meta/storage/export", {"max_bytes": 65536}, token=OTHER_OPS)
    assert not second["done"]
    err = gw.error("meta/storage/export", {"max_bytes": 65536}, token=OPS)
    assert err["code"] == -32005 and err["data"]["kind"] == "capacity_exceeded" and err["data"]["resource"] == "exports"
    page = first
    while not page["done"]:
        page = gw.result("meta/storage/export", {"export_id": page["export_id"], "max_bytes": 1 << 20}, token=OPS)
    assert gw.result("meta/storage/export", {"max_bytes": 65536}, token=OPS)["lines"]


def test_exports_left_unfetched_say_when_a_place_frees(tmp_path: Path) -> None:
    """Two exports whose callers stopped fetching (an interrupted ``meta-memory export --url``: Ctrl-C, a lost
    connection) hold both places until they have gone 120 s unfetched. Before, the next export was told to
    "fetch or abandon one first", which a caller that lost the export ids cannot do, and not when to retry."""
    gw = start_gateway(tmp_path / "state")
    try:
        for i in range(30):
            gw.result("meta/agent_memory/remember", {"identity": "a:b", "title": f"note {i}", "body": f"body {i} " * 500})
        for _ in range(2):  # started, one page read, then never fetched again
            assert not gw.result("meta/storage/export", {"max_bytes": 65536})["done"]
        err = gw.error("meta/storage/export", {"max_bytes": 65536})
        assert err["code"] == -32005 and err["data"]["resource"] == "exports", err
        assert 0 < err["data"]["retry_after_ms"] <= 120_000, err
        assert "abandon one" not in err["message"] and "120 s" in err["message"], err
        refused = mm("export", "--url", gw.url, "-o", str(tmp_path / "third.jsonl"))
        assert refused.returncode == 1, refused.stderr
        said = " ".join(refused.stderr.split())
        assert "exports are under way" in said and "120 s" in said and "retry" in said, said
        assert not (tmp_path / "third.jsonl").exists()
    finally:
        gw.stop()


@pytest.mark.postgres
def test_backup_on_postgres_copies_the_directory_and_names_the_store_elsewhere(tmp_path: Path) -> None:
    require_postgres()
    from meta_memory.cli import build_runtime

    with throwaway_schema() as schema:
        config = write_config(tmp_path / "c.toml",
                              f'[agent_memory]\nstore = "postgres"\ndsn = "{dsn_with_schema(schema)}"\n')
        runtime = build_runtime(tmp_path / "state", config)
        try:
            report = runtime.backup(tmp_path / "copy").to_dict()
        finally:
            runtime.close()
    assert report["elsewhere"] == ["postgres"]
    assert not any(f["path"].startswith("agent-memory/") for f in report["files"])
    assert any(f["path"] == "events.sqlite3" for f in report["files"])


def test_abandoned_exports_give_their_slots_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from meta_memory.errors import CapacityExceeded
    from meta_memory.portability import remote
    from meta_memory.runtime import Runtime
    from meta_memory.server.gateway import Gateway

    monkeypatch.setattr(remote, "IDLE_TIMEOUT_S", 0.5)
    runtime = Runtime(None, tmp_path / "s")
    gw = Gateway.for_runtime(runtime)
    try:
        for i in range(40):
            gw.call("meta/agent_memory/remember", {"identity": "a:b", "title": f"n{i}", "body": f"{i} " * 2000})
        started = [gw.call("meta/storage/export", {"max_bytes": 65536}) for _ in range(2)]
        assert not any(page["done"] for page in started)
        with pytest.raises(CapacityExceeded):
            gw.call("meta/storage/export", {"max_bytes": 65536})
        time.sleep(1.0)  # nobody fetches: both are abandoned
        assert gw.call("meta/storage/export", {"max_bytes": 65536})["lines"]
        from meta_memory.errors import InvalidParams

        with pytest.raises(InvalidParams):
            gw.call("meta/storage/export", {"export_id": started[0]["export_id"]})
    finally:
        runtime.close()


def test_a_read_only_gateway_never_creates_an_export_key(tmp_path: Path) -> None:
    text = access_toml({OPS: "ops"}, [("ops", "operator.backup")])
    config = write_config(tmp_path / "c.toml", text.replace("enabled = true\n", "enabled = true\nread_only = true\n", 1))
    state = tmp_path / "state"
    with start_gateway(state, config=config) as gw:
        err = gw.error("meta/storage/export", {"max_bytes": 65536}, token=OPS)
        assert err["code"] == -32030 and err["data"]["kind"] == "access_denied" and err["data"]["read_only"] is True
        assert "read-only" in err["message"] and "no export key" in err["message"]
        assert not (state / "export.key").exists()
    # with the installation's key made elsewhere, a read-only gateway signs with it and leaves it as it is
    offline = tmp_path / "offline.jsonl"
    made = mm("export", "--state-dir", str(state), "--config", str(config), "-o", str(offline))
    assert made.returncode == 0, made.stderr
    key = (state / "export.key").read_bytes()
    with start_gateway(state, config=config) as gw:
        out = tmp_path / "live.jsonl"
        done = mm("export", "--url", gw.url, "-o", str(out), token=OPS)
        assert done.returncode == 0, done.stderr
    header = json.loads(out.read_text().splitlines()[0])
    assert header["key_id"] == json.loads(offline.read_text().splitlines()[0])["key_id"]
    assert (state / "export.key").read_bytes() == key

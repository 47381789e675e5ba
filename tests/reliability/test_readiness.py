"""``GET /v1/ready`` and ``meta-memory doctor`` see the store: a corrupt or truncated realm database, a
malformed ledger, a damaged session-state or timeline database, a ``-wal`` without its database, low
disk, an unreachable PostgreSQL, a background worker that died.

Before, with ``default.sqlite3`` overwritten the gateway started, ``/v1/health`` said ok, ``doctor``
said ``ok: true`` and every call failed with ``file is not a database``. Driven as an operator would:
real gateways, files damaged on disk, the doctor as a command.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from meta_memory.readiness import TTL_S
from meta_memory.sdk import Meta
from support import GatewayProcess, ServedRuntime, access_toml, realm_db, start_gateway, write_config

IDENT = "lead:main"
GARBAGE = b"this is not a database: an editor saved over it \x00\xff" * 2


def _ready(gw: Any, token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.get(gw.url + "/v1/ready", headers=headers, timeout=60)


def _ready_after_change(gw: Any) -> httpx.Response:
    """``/v1/ready`` once the report computed before a change has expired (one evaluation per TTL_S)."""
    time.sleep(TTL_S + 0.05)
    return _ready(gw)


def _doctor(state: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    out = subprocess.run([sys.executable, "-m", "meta_memory.cli", "doctor", "--state-dir", str(state), *extra],
                         capture_output=True, text=True, timeout=300)
    return out.returncode, json.loads(out.stdout)


def _fill(path: Path) -> None:
    """Write ``path`` until the disk refuses another byte (ENOSPC)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 65536)
    except OSError as exc:
        assert exc.errno == 28, exc
    finally:
        os.close(fd)


def _kinds(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["kind"]: f for f in report["findings"]}


def _seeded(tmp_path: Path, *, realms: tuple[str, ...] = ("default", "other")) -> Path:
    """A state directory with 40 records in each realm and an assertion in the ledger, gateway stopped."""
    state = tmp_path / "state"
    with start_gateway(state) as gw:
        for realm in realms:
            gw.result("meta/agent_memory/remember_batch", {"identity": IDENT, "realm": realm, "records": [
                {"title": "Apples" if i == 0 else f"Pears {i}", "body": f"apples are red, note {i} " * 40}
                for i in range(40)]})
        gw.result("meta/memory/index", {"entity": "deploy", "topic": "window", "fact": "tuesdays"})
    return state


def test_a_healthy_gateway_is_ready(gateway: GatewayProcess) -> None:
    answer = _ready(gateway)
    assert answer.status_code == 200 and answer.headers["cache-control"] == "no-store"
    assert answer.json()["status"] == "ready" and answer.json()["failing"] == [] and answer.json()["checks"] == []


def test_a_realm_overwritten_on_disk_is_seen_by_ready_doctor_and_every_call(tmp_path: Path) -> None:
    state = _seeded(tmp_path)
    db = realm_db(state, "default")
    with open(db, "r+b") as fh:  # the header overwritten, the rest of the file intact
        fh.write(GARBAGE)
    code, report = _doctor(state)
    damaged = _kinds(report)["damaged_database"]
    assert code == 1 and report["ok"] is False and damaged["paths"] == [str(db)]
    assert "realm 'default'" in damaged["message"] and "not a SQLite database" in damaged["message"]
    assert "backup" in damaged["fix"]

    with start_gateway(state) as gw:  # it starts: the other realms are served
        assert httpx.get(gw.url + "/v1/health").json()["status"] == "ok"
        answer = _ready(gw)
        assert answer.status_code == 503 and answer.json()["failing"] == ["realm_database"]
        [check] = answer.json()["checks"]
        assert check["name"] == "realm:default" and realm_db(state).name in check["problem"]
        for method, params in (("meta/agent_memory/recall", {"query_text": "apples"}),
                               ("meta/agent_memory/remember", {"title": "t", "body": "b"})):
            err = gw.error(method, {"identity": IDENT, **params})
            assert err["data"] == {"kind": "agent_memory", "reason": "corrupt"}, err
            assert realm_db(state).name in err["message"] and "meta-memory doctor" in err["message"]
        other = gw.result("meta/agent_memory/recall", {"identity": IDENT, "realm": "other", "query_text": "apples"})
        assert len(other["records"]) == 8


def test_a_truncated_realm_is_seen_and_a_deep_damage_by_the_full_check(tmp_path: Path) -> None:
    state = _seeded(tmp_path, realms=("default", "other", "third"))
    size = realm_db(state, "default").stat().st_size
    os.truncate(realm_db(state, "default"), size // 2)
    # a page in the middle of "other" damaged: only a check that reads every page finds it
    other = realm_db(state, "other")
    data = bytearray(other.read_bytes())
    assert len(data) >= 4096 * 4
    data[4096 * 2: 4096 * 2 + 512] = b"\xff" * 512
    other.write_bytes(bytes(data))

    code, quick = _doctor(state, "--quick")
    damaged = {f["paths"][0]: f for f in quick["findings"] if f["kind"] == "damaged_database"}
    assert code == 1 and "is truncated" in damaged[str(realm_db(state, "default"))]["message"]
    assert str(other) not in damaged
    code, full = _doctor(state)
    damaged = {f["paths"][0]: f for f in full["findings"] if f["kind"] == "damaged_database"}
    assert code == 1 and set(damaged) == {str(realm_db(state, "default")), str(other)}

    # the gateway's background quick check finds the deep damage too
    config = write_config(tmp_path / "meta.toml", "[gateway]\nintegrity_check_interval_s = 60\n")
    with start_gateway(state, config=config) as gw:
        first = _ready(gw).json()
        assert "realm:default" in {c["name"] for c in first["checks"]}
        ends = time.monotonic() + 120
        while time.monotonic() < ends:
            names = {c["name"] for c in _ready(gw).json()["checks"]}
            if "realm:other" in names:
                break
            time.sleep(0.5)
        assert "realm:other" in names and "realm:third" not in names


def test_a_malformed_ledger_is_seen_while_serving_and_offline(tmp_path: Path) -> None:
    state = _seeded(tmp_path)
    ledger = state / "memory-ledger-state.json"
    with start_gateway(state) as gw:
        assert _ready(gw).status_code == 200
        gw.result("meta/memory/index", {"entity": "deploy", "topic": "freeze", "fact": "december"})
        assert _ready_after_change(gw).status_code == 200  # the gateway's own writes pass
        ledger.write_text('{"assertions": [ {"entity": ', encoding="utf-8")
        answer = _ready_after_change(gw)
        assert answer.status_code == 503 and answer.json()["failing"] == ["ledger"]
        assert "malformed" in answer.json()["checks"][0]["problem"]
    code, report = _doctor(state)
    assert code == 1 and _kinds(report)["malformed_ledger"]["severity"] == "blocks_startup"


def test_a_state_directory_removed_while_serving_makes_the_gateway_not_ready(tmp_path: Path) -> None:
    """``rm -rf`` of the state directory under a running gateway: its open databases keep taking writes
    that no restart will see, and the directory's lock is gone. Before, ``/v1/ready`` said ready."""
    import shutil

    state = tmp_path / "state"
    with start_gateway(state) as gw:
        gw.result("meta/agent_memory/remember", {"identity": IDENT, "title": "Apples", "body": "apples are red"})
        gw.result("meta/memory/index", {"entity": "deploy", "topic": "window", "fact": "tuesday"})  # a ledger file
        assert _ready(gw).status_code == 200
        shutil.rmtree(state)
        # writes are refused (they would land in unlinked files no restart sees)
        refused = gw.error("meta/agent_memory/remember", {"identity": IDENT, "title": "Pears", "body": "pears"})
        assert refused["code"] == -32040 and refused["data"]["reason"] == "io", refused
        assert "removed or replaced" in refused["message"] and "nothing was written" in refused["message"]
        ledger = gw.error("meta/memory/index", {"entity": "deploy", "topic": "freeze", "fact": "december"})
        assert ledger["code"] == -32010 and "removed or replaced" in ledger["message"], ledger
        assert not state.exists()  # nothing wrote the directory back (the ledger's persist used to)
        answer = _ready_after_change(gw)
        # the state directory alone: not also a ledger file said to be "written again" by writes now refused
        assert answer.status_code == 503 and answer.json()["failing"] == ["state_dir"]
        check = answer.json()["checks"][0]
        assert str(state) in check["problem"] and "removed or replaced" in check["problem"]
        assert "restart" in check["fix"]
    # a directory put back in its place (a restore) is not the one this gateway holds either
    with start_gateway(tmp_path / "other") as gw:
        os.rename(tmp_path / "other", tmp_path / "moved")
        (tmp_path / "other").mkdir()
        assert _ready_after_change(gw).json()["failing"] == ["state_dir"]


def test_reads_after_the_state_directory_was_removed_name_the_cause(tmp_path: Path) -> None:
    """A read that needs a file of a removed state directory says the directory is gone, as the write
    refusal does; before, it said ``cannot open realm database ... No such file or directory``."""
    import shutil

    state = tmp_path / "state"
    with start_gateway(state) as gw:
        gw.result("meta/agent_memory/remember", {"identity": IDENT, "title": "Apples", "body": "apples are red"})
        shutil.rmtree(state)
        for method, params in (("meta/agent_memory/recall", {"identity": IDENT, "selection": "always"}),
                               ("meta/agent_memory/list", {"identity": IDENT})):
            refused = gw.error(method, params)
            assert refused["code"] == -32040 and refused["data"]["reason"] == "io", refused
            message = refused["message"]
            assert message.startswith(f"agent memory I/O error: the state directory {state.resolve()} was removed "
                                      "or replaced while this runtime ran"), message
            assert "put the directory back, then restart it" in message
        assert not state.exists()


def test_a_read_only_state_directory_is_named_as_such_not_as_damaged_databases(tmp_path: Path) -> None:
    """A state directory on a file system mounted read-only (a snapshot, a backup volume). Before, the
    doctor called every database damaged ("cannot be checked: unable to open database file") and told
    the operator to restore them from a backup or move them away: the databases are intact."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode(errors='replace').strip()}")
    try:
        state = mount / "state"
        with start_gateway(state) as gw:
            gw.result("meta/agent_memory/remember", {"identity": IDENT, "title": "Apples", "body": "apples are red"})
        _fill(mount / "filler")  # a read-only medium often reports no free space: it is read-only, not full
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        code, report = _doctor(state)
        kinds = _kinds(report)
        assert code == 1 and "damaged_database" not in kinds, report
        assert "low_disk" not in kinds, report
        read_only = kinds["state_dir_read_only"]
        assert read_only["severity"] == "blocks_startup" and read_only["paths"] == [str(state)]
        assert "is read-only (a read-only file system)" in read_only["message"] and "read-write" in read_only["fix"]
        assert "not damaged" in read_only["fix"] and "copy the directory" in read_only["fix"]
        refused = start_gateway(state, expect_failure=True)
        assert refused.proc.returncode == 1 and "Read-only file system" in refused.proc.stderr.read()
        for command in (["list", "--identity", IDENT], ["export"]):  # a read-only command says why, and what to do
            out = subprocess.run([sys.executable, "-m", "meta_memory.cli", *command, "--state-dir", str(state)],
                                 capture_output=True, text=True)
            assert out.returncode == 1 and out.stdout == "", out
            assert f"the state directory {state} is read-only (a read-only file system;" in out.stderr, out.stderr
            assert "copy the directory to a writable place" in out.stderr and "nothing was read" in out.stderr
        subprocess.run(["mount", "-o", "remount,rw", str(mount)], check=True)
        (mount / "filler").unlink()
        with start_gateway(state) as gw:  # the same files, writable again: all there
            assert [r["title"] for r in gw.result("meta/agent_memory/recall", {
                "identity": IDENT, "query_text": "apples"})["records"]] == ["Apples"]
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.mark.parametrize("name, holds", [("session-state.db", "session state"), ("events.sqlite3", "timeline")])
def test_a_damaged_own_database_refuses_start_naming_it_and_the_doctor(tmp_path: Path, name: str, holds: str) -> None:
    state = _seeded(tmp_path)
    (state / name).write_bytes(GARBAGE * 100)
    for side in ("-wal", "-shm"):
        (state / f"{name}{side}").unlink(missing_ok=True)
    gw = start_gateway(state, expect_failure=True)
    err = gw.proc.stderr.read() if gw.proc.stderr else ""
    assert gw.proc.returncode == 1 and "Traceback" not in err, err
    assert name in err and "meta-memory doctor" in err
    code, report = _doctor(state)
    finding = _kinds(report)["damaged_database"]
    assert code == 1 and finding["severity"] == "blocks_startup" and holds in finding["message"]


def test_a_wal_whose_database_is_gone_is_reported(tmp_path: Path) -> None:
    state = tmp_path / "state"
    gw = start_gateway(state)
    gw.result("meta/agent_memory/remember", {"identity": IDENT, "title": "Apples", "body": "apples are red"})
    gw.kill()  # no clean close: the write-ahead log stays beside the database
    db = realm_db(state, "default")
    assert Path(f"{db}-wal").exists()
    db.unlink()
    code, report = _doctor(state)
    orphan = _kinds(report)["orphan_wal"]
    assert code == 1 and orphan["paths"] == [f"{db}-wal"] and f"put {db.name} back" in orphan["fix"]


def test_low_disk_makes_the_gateway_not_ready_and_the_doctor_warn(tmp_path: Path) -> None:
    floor = "[gateway]\nmin_free_disk_mb = 10000000\n"  # 10 TB: more than this machine has
    config = write_config(tmp_path / "meta.toml", floor)
    state = tmp_path / "state"
    with start_gateway(state, config=config) as gw:
        answer = _ready(gw)
        assert answer.status_code == 503 and answer.json()["failing"] == ["disk"]
        assert "min_free_disk_mb" in answer.json()["checks"][0]["problem"]
        gw.result("meta/agent_memory/remember", {"identity": IDENT, "title": "t", "body": "b"})  # writes go on
    code, report = _doctor(state, "--config", str(config))
    assert code == 0 and _kinds(report)["low_disk"]["severity"] == "warning"
    assert "low_disk" not in _kinds(_doctor(state)[1])


def test_the_short_answer_names_no_realm_and_details_need_operator_status(tmp_path: Path) -> None:
    state = _seeded(tmp_path, realms=("default", "acme-secret-tenant"))
    with open(realm_db(state, "acme-secret-tenant"), "r+b") as fh:
        fh.write(GARBAGE)
    grants = [("ops", "operator.status"), ("host", "agent.memory.read", {"identity": IDENT})]
    config = write_config(tmp_path / "meta.toml", access_toml(
        {"tok-ops-0123456789": "ops", "tok-host-0123456789": "host"}, grants))
    with start_gateway(state, config=config) as gw:
        for token in (None, "tok-host-0123456789"):
            answer = _ready(gw, token)
            assert answer.status_code == 503
            assert answer.json() == {"status": "not_ready", "failing": ["realm_database"]}
            assert "acme" not in answer.text and str(state) not in answer.text
        detailed = _ready(gw, "tok-ops-0123456789").json()
        assert detailed["checks"][0]["name"] == "realm:acme-secret-tenant"
        forged = _ready(gw, "tok-not-a-token-000000")
        assert forged.status_code == 401 and "checks" not in forged.text


class _Proxy:
    """A TCP forwarder to PostgreSQL that the test can cut (the server itself is shared: never stopped)."""

    def __init__(self, port: int) -> None:
        self.target = ("127.0.0.1", port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.open: list[socket.socket] = []
        self.cut = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.cut.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.cut.is_set():
                client.close()
                return
            upstream = socket.create_connection(self.target)
            self.open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.cut.set()
        self.listener.close()
        for s in self.open:
            try:
                s.close()
            except OSError:
                pass


@pytest.mark.postgres
def test_an_unreachable_postgres_makes_the_gateway_not_ready(tmp_path: Path) -> None:
    from contract.pgsupport import DSN, require_postgres, throwaway_schema

    require_postgres()  # skips with the install hint when the postgres extra is absent
    from psycopg import conninfo
    parts = conninfo.conninfo_to_dict(DSN)
    proxy = _Proxy(int(parts.get("port") or 5432))
    try:
        with throwaway_schema() as schema:
            dsn = conninfo.make_conninfo(DSN, host="127.0.0.1", port=str(proxy.port),
                                         options=f"-c search_path={schema}", connect_timeout="2")
            config = write_config(tmp_path / "meta.toml", f'[agent_memory]\nstore = "postgres"\ndsn = "{dsn}"\n')
            with start_gateway(tmp_path / "state", config=config) as gw:
                assert _ready(gw).status_code == 200
                proxy.close()
                answer = _ready_after_change(gw)
                assert answer.status_code == 503 and "postgres" in answer.json()["failing"]
                check = {c["name"]: c for c in answer.json()["checks"]}["postgres"]
                assert "does not answer" in check["problem"]
    finally:
        proxy.close()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_background_worker_that_died_is_reported(tmp_path: Path) -> None:
    handle = Meta.builder().persistent_state(tmp_path / "state").build()
    served = ServedRuntime(handle.runtime)
    try:
        store = handle.runtime.agent_memory.store

        def die(realm: str) -> None:
            raise SystemExit  # ends the thread (not an Exception: the round's own handler lets it through)

        store._upkeep._upkeep = die
        handle.remember_agent_memory(IDENT, title="Apples", body="apples are red")  # the commit wakes upkeep
        thread = store._upkeep._thread
        thread.join(30)
        answer = httpx.get(served.url + "/v1/ready", timeout=60)
        assert answer.status_code == 503 and answer.json()["failing"] == ["worker"]
        assert answer.json()["checks"][0]["name"] == "worker:upkeep"
    finally:
        served.close()
        handle.close()


def test_a_ledger_nested_past_the_reader_is_malformed_to_ready_start_and_doctor(tmp_path: Path) -> None:
    """A ledger file nesting deeper than the JSON reader goes used to raise a RecursionError out of every
    reader: ``/v1/ready`` answered HTTP 500, ``serve`` and ``doctor`` stopped with a traceback."""
    state = _seeded(tmp_path)
    ledger = state / "memory-ledger-state.json"
    deep = '{"assertions": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with start_gateway(state) as gw:
        ledger.write_text(deep, encoding="utf-8")
        answer = _ready_after_change(gw)
        assert answer.status_code == 503 and answer.json()["failing"] == ["ledger"], answer.text
        assert "nested too deep" in answer.json()["checks"][0]["problem"]
    ledger.write_text(deep, encoding="utf-8")  # the stopping gateway's last write is not what is checked
    gw = start_gateway(state, expect_failure=True)
    err = gw.proc.stderr.read() if gw.proc.stderr else ""
    assert gw.proc.returncode == 1 and "Traceback" not in err, err
    assert "memory-ledger-state.json" in err and "nested too deep" in err
    code, report = _doctor(state)
    assert code == 1 and _kinds(report)["malformed_ledger"]["severity"] == "blocks_startup"


def test_a_ledger_id_of_thousands_of_digits_starts_and_the_next_id_follows_the_others(tmp_path: Path) -> None:
    """An assertion id whose number Python refuses to read (over 4,300 digits) stopped ``serve`` with a
    ValueError traceback; it is not one of the counter's ids, so the next follows the file's others."""
    state = _seeded(tmp_path)
    ledger = state / "memory-ledger-state.json"
    doc = json.loads(ledger.read_text(encoding="utf-8"))
    doc["assertions"].append({**doc["assertions"][0], "assertion_id": "memory-assert-" + "9" * 5000})
    ledger.write_text(json.dumps(doc), encoding="utf-8")
    with start_gateway(state) as gw:
        made = gw.result("meta/memory/index", {"entity": "deploy", "topic": "freeze", "fact": "december"})
        assert made["assertion_id"] == "memory-assert-000001"
        facts = {a["fact"] for a in gw.result("meta/memory/query", {"entity": "deploy"})["assertions"]}
        assert facts == {"tuesdays", "december"}

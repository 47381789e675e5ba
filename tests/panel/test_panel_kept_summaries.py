"""The console's per-realm summaries kept across a restart (``panel-summaries.json``): used only for realms whose
files did not change, never trusted when the file is damaged, and the answers always those of reading every
realm."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meta_memory.access.config import parse_access_section
from meta_memory.access.policy import AccessPolicy
from meta_memory.access.principal import ANONYMOUS, Principal
from meta_memory.access.resources import Resources
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Author, NewMemoryRecord, Provenance, Scope
from meta_memory.agent_memory.store.base import InjectionRow
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.panel import kept_summaries
from meta_memory.panel.service import PanelService
from meta_memory.panel.store import SqlitePanelStore
from meta_memory.panel.visibility import Visibility

REALMS = ["r0", "r1", "r2", "r3"]
WHO = "lead:main"


class PoisonGate:
    """Quarantines agent-authored writes (what a tainted session's writes get)."""

    def quarantine_reason(self, author: Author, batch_kind: str, evidence: Any, *, realm: str) -> str | None:
        return "session tainted by web tool 'web_search'" if author.kind.value == "agent" else None


def _open(root: Path) -> SqliteAgentMemoryStore:
    return SqliteAgentMemoryStore(root, import_markdown=False, gate=PoisonGate())


def _viewer() -> Visibility:
    """A caller who may read and view one identity's records in two realms, and review no quarantine."""
    rules = [{"action": action, "who": {"principal": "alice"}, "on": {"realm": realm, "identity": WHO}}
             for action in ("agent.memory.read", "agent.view") for realm in ("r0", "r1")]
    policy = AccessPolicy(parse_access_section({"enabled": True, "grants": rules}), "r0")
    return Visibility(policy, Principal("alice"), Resources(default_realm="r0"))


def _answers(panel: SqlitePanelStore) -> list[Any]:
    """Every read of every realm, as a caller without access control sees it, then as a restricted one."""
    out: list[Any] = []
    for visibility in (Visibility(AccessPolicy(parse_access_section({"enabled": False})), ANONYMOUS), _viewer()):
        service = PanelService(panel, visibility)
        out += [service.records(realm=None, scope_kind=None, scope_key=None, status=None, limit=50, cursor=None,
                                terms=()),
                service.overview(realm=None), service.quarantine(realm=None, limit=50),
                service.dreams(realm=None, limit=20), service.injections(realm=None, limit=50)]
    return out


def _settle(root: Path, since_ns: int) -> None:
    """Make the files written since ``since_ns`` look written long ago (an idle fleet, without waiting):
    files left alone keep their signature."""
    old = time.time_ns() - 10_000_000_000
    for f in root.glob("*.sqlite3*"):
        if f.stat().st_mtime_ns >= since_ns:
            os.utime(f, ns=(old, old))


def _write(store: SqliteAgentMemoryStore, op: tuple[str, str, int], ids: dict[str, list[str]], n: int) -> None:
    kind, realm, pick = op
    if kind == "clean":
        rec, _ = record_writes.remember(store, realm, WHO, f"Note {n}", f"a clean note number {n}")
        ids.setdefault(realm, []).append(rec.memory_id)
    elif kind == "poison":
        prov = Provenance(Author.agent(WHO))
        rec, _ = record_writes.remember_authored(store, realm, Scope.identity(realm, WHO),
                                                 NewMemoryRecord(title=f"Fetched {n}", body=f"fetched page {n}",
                                                                 provenance=prov), Author.agent(WHO))
        ids.setdefault(realm, []).append(rec.memory_id)
    elif kind == "forget" and ids.get(realm):
        victim = ids[realm].pop(pick % len(ids[realm]))
        record_writes.forget(store, realm, Scope.identity(realm, WHO), victim, Author.application())
    elif kind == "inject" and ids.get(realm):
        store.log_injections(realm, [InjectionRow(ids[realm][pick % len(ids[realm])], WHO, "turn", 1_000 + n, "s1")])


OPS = st.tuples(st.sampled_from(["clean", "poison", "forget", "inject"]), st.sampled_from(REALMS), st.integers(0, 9))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(OPS, max_size=5), min_size=2, max_size=3))
def test_answers_with_the_kept_summaries_are_those_of_reading_every_realm(rounds: list[list[tuple[str, str, int]]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root, file = Path(tmp) / "agent-memory", Path(tmp) / kept_summaries.FILE_NAME
        ids: dict[str, list[str]] = {}
        n = 0
        since = time.time_ns()
        store = _open(root)
        for realm in REALMS:
            _write(store, ("clean", realm, 0), ids, n)
        store.close()
        _settle(root, since)
        since = time.time_ns()
        store = _open(root)
        _answers(SqlitePanelStore(store))  # opening a realm the first time may write (planner statistics)
        store.close()
        for ops in rounds:
            _settle(root, since)
            opened = time.time_ns()
            store = _open(root)
            panel = SqlitePanelStore(store, summaries_file=file)
            try:
                assert _answers(panel) == _answers(SqlitePanelStore(store))
                _settle(root, opened)  # what opening the realms wrote: read again, and kept
                _answers(panel)
                since = time.time_ns()
                for op in ops:
                    n += 1
                    _write(store, op, ids, n)
            finally:
                store.close()
                panel.close()
        _settle(root, since)
        store = _open(root)
        try:
            assert _answers(SqlitePanelStore(store, summaries_file=file)) == _answers(SqlitePanelStore(store))
        finally:
            store.close()


def _fleet(root: Path, file: Path) -> None:
    """Four realms written, read once by a process that keeps their summaries in ``file`` at its stop."""
    store = _open(root)
    for realm in REALMS:
        record_writes.remember(store, realm, WHO, "Note", f"a note kept in {realm}")
    store.close()
    _settle(root, 0)
    store = _open(root)
    _answers(SqlitePanelStore(store))  # opening a realm the first time may write (planner statistics)
    store.close()
    _settle(root, 0)
    store = _open(root)
    panel = SqlitePanelStore(store, summaries_file=file)
    _answers(panel)
    store.close()
    panel.close()
    assert file.exists()


def test_a_restart_reads_only_the_realms_written_since(tmp_path: Path) -> None:
    root, file = tmp_path / "agent-memory", tmp_path / kept_summaries.FILE_NAME
    _fleet(root, file)
    before = time.time_ns()
    store = _open(root)
    record_writes.remember(store, "r2", WHO, "Later", "written while no gateway ran")
    store.close()
    _settle(root, before)
    store = _open(root)
    try:
        panel = SqlitePanelStore(store, summaries_file=file)
        assert not file.exists(), "the file is read once, then removed"
        warm = _answers(panel)
        assert panel.realm_reads["restored"] == 3, "the three realms left alone are not read"
        assert warm == _answers(SqlitePanelStore(store))
        assert "Later" in json.dumps(warm[0])
    finally:
        store.close()


def test_a_damaged_file_is_ignored_and_every_realm_read(tmp_path: Path, caplog: Any) -> None:
    root, file = tmp_path / "agent-memory", tmp_path / kept_summaries.FILE_NAME
    _fleet(root, file)
    good = file.read_bytes()
    doc = json.loads(good)
    realm = next(iter(doc["realms"]))
    shapes = [good[: len(good) // 2], b"\x00" * 64, json.dumps({**doc, "version": 99}).encode(),
              json.dumps({**doc, "realms": {realm: {**doc["realms"][realm], "kept": {"problem": "corrupt"}}}}).encode(),
              json.dumps({**doc, "realms": {realm: {**doc["realms"][realm], "kept": {"newest:proposals": {"x": 1}}}}}).encode(),
              json.dumps({**doc, "root": "/elsewhere"}).encode()]
    for bad in shapes:
        file.write_bytes(bad)
        store = _open(root)
        try:
            caplog.clear()
            panel = SqlitePanelStore(store, summaries_file=file)
            assert "not usable" in caplog.text
            assert _answers(panel) == _answers(SqlitePanelStore(store))
            assert panel.realm_reads["restored"] == 0 and panel.realm_reads["read"] > 0
        finally:
            store.close()
    file.write_bytes(good)
    store = _open(root)
    try:
        panel = SqlitePanelStore(store, summaries_file=file)
        _answers(panel)
        assert panel.realm_reads == {"read": 0, "restored": 4}, "the intact file is used"
    finally:
        store.close()


def test_a_file_that_is_no_regular_file_or_nests_too_deep_is_ignored(tmp_path: Path, caplog: Any) -> None:
    """A FIFO at the file's path is not waited on, a symbolic link not followed, JSON nested past the reader's
    depth not raised: each is ignored with a warning and the runtime starts, every realm read."""
    root, file = tmp_path / "agent-memory", tmp_path / kept_summaries.FILE_NAME
    _fleet(root, file)
    good = file.read_bytes()
    target = tmp_path / "elsewhere.json"
    target.write_bytes(good)

    def plant(kind: str) -> None:
        file.unlink(missing_ok=True)
        if kind == "fifo":
            os.mkfifo(file)
        elif kind == "symlink":
            file.symlink_to(target)
        else:
            file.write_bytes(b"[" * 200_000 + b"]" * 200_000)

    for kind in ("fifo", "symlink", "deep"):
        plant(kind)
        store = _open(root)
        try:
            caplog.clear()
            panel = SqlitePanelStore(store, summaries_file=file)  # a FIFO would block here
            assert "every realm is read" in caplog.text, kind
            assert not file.exists() and not file.is_symlink(), kind
            assert _answers(panel) == _answers(SqlitePanelStore(store))
            assert panel.realm_reads["restored"] == 0, kind
        finally:
            store.close()
    assert target.read_bytes() == good  # the link's target was neither read as the file nor removed


def test_a_planted_stage_file_is_replaced_not_written_through(tmp_path: Path) -> None:
    root, file = tmp_path / "agent-memory", tmp_path / kept_summaries.FILE_NAME
    _fleet(root, file)
    entries_file = file.read_bytes()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    stage = file.with_name(file.name + ".tmp")
    stage.symlink_to(victim)
    store = _open(root)
    try:
        panel = SqlitePanelStore(store, summaries_file=file)
        _answers(panel)
    finally:
        store.close()
        panel.close()
    assert victim.read_text() == "keep me" and not stage.exists()
    assert file.exists() and not file.is_symlink() and (file.stat().st_mode & 0o777) == 0o600
    assert json.loads(file.read_bytes())["format"] == json.loads(entries_file)["format"]


def test_only_served_realms_are_kept_or_taken(tmp_path: Path) -> None:
    root, file = tmp_path / "agent-memory", tmp_path / kept_summaries.FILE_NAME
    _fleet(root, file)
    store = SqliteAgentMemoryStore(root, import_markdown=False, realms=["r0", "r1"])
    try:
        panel = SqlitePanelStore(store, summaries_file=file)
        _answers(panel)
        assert panel.realm_reads["restored"] == 2
        panel.close()
    finally:
        store.close()
    assert sorted(json.loads(file.read_bytes())["realms"]) == ["r0", "r1"], "an unserved realm is not written"


def test_no_text_of_a_record_is_written(tmp_path: Path) -> None:
    root, file = tmp_path / "agent-memory", tmp_path / kept_summaries.FILE_NAME
    _fleet(root, file)
    text = file.read_text()
    assert "a note kept in" not in text and "Note" not in text


# --------------------------------------------------------------------------- a gateway restarted


def _metric(gw: Any, name: str) -> float:
    import httpx

    for line in httpx.get(gw.url + "/metrics", timeout=10).text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} is not reported")


def _every_realm(gw: Any) -> dict[str, Any]:
    return {"records": gw.result("meta/memory/panel/records", {}),
            "quarantine": gw.result("meta/memory/panel/quarantine", {}),
            "overview": gw.result("meta/memory/panel/overview", {}),
            "dreams": gw.result("meta/memory/panel/dreams", {}),
            "injections": gw.result("meta/memory/panel/injections", {})}


def _poisoned(call: Any, realm: str, title: str) -> None:
    session = f"sess:{realm}-{title}"
    call("meta/turn/tool_result", {"identity": WHO, "session_key": session, "tool_name": "web_fetch", "realm": realm})
    out = call("meta/agent_memory/tool", {"identity": WHO, "session_key": session, "realm": realm,
                                          "arguments": {"action": "remember", "title": title, "body": f"{title} body"}})
    assert "QUARANTINED" in out["text"], out


def test_a_restarted_gateway_reads_only_the_realms_written_while_it_was_down(tmp_path: Path) -> None:
    from meta_memory.sdk import Meta
    from support import start_gateway

    state = tmp_path / "state"
    realms = [f"r{i}" for i in range(6)]
    with start_gateway(state) as gw:
        for realm in realms:
            gw.result("meta/agent_memory/remember", {"identity": WHO, "realm": realm, "title": f"In {realm}",
                                                     "body": f"a note kept in {realm}"})
        _poisoned(gw.result, "r5", "Fetched")
    with start_gateway(state) as gw:
        _every_realm(gw)  # a realm opened the first time after its writes may write (planner statistics)
    time.sleep(2.5)  # an idle fleet: what is read now is kept
    with start_gateway(state) as gw:
        _every_realm(gw)
    assert (state / kept_summaries.FILE_NAME).exists(), "a stopping gateway keeps its realm summaries"

    with Meta.builder().persistent_state(state).build() as handle:  # another process, while no gateway runs
        handle.agent(WHO, realm="r2").remember("Later", "written while the gateway was down")
        _poisoned(handle.call, "r3", "Fetched later")

    with start_gateway(state) as gw:
        first = _every_realm(gw)
        assert _metric(gw, "meta_memory_panel_realms_restored_total") == 4, "the realms left alone are not read"
    assert "Later" in [r["title"] for r in first["records"]["records"]]
    assert {r["scope"]["realm"] for r in first["quarantine"]["records"]} == {"r3", "r5"}
    (state / kept_summaries.FILE_NAME).unlink()
    with start_gateway(state) as gw:
        cold = _every_realm(gw)
        assert _metric(gw, "meta_memory_panel_realms_restored_total") == 0
        assert _metric(gw, "meta_memory_panel_realm_reads_total") > 0
    assert first == cold, "the answers are those of reading every realm"
    time.sleep(2.5)  # idle again (the realms the last gateways opened first may have written statistics)
    with start_gateway(state) as gw:
        assert _every_realm(gw) == cold
    with start_gateway(state) as gw:  # nothing written since: no realm is read at all
        assert _every_realm(gw) == cold
        assert _metric(gw, "meta_memory_panel_realms_restored_total") == 6
        assert _metric(gw, "meta_memory_panel_realm_reads_total") == 0

"""``meta-memory export`` / ``meta-memory import``: a state's memory out and back, on SQLite and PostgreSQL.

The source state is built through the embedded SDK (remember, update, forget, a quarantined tool write
from a web-tainted session, a released one, ledger facts and a conflict signal); export and import run
as the installed command, as a user would; the imported state is read back through the SDK.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from meta_memory.cli import build_runtime
from meta_memory.sdk.handle import MetaHandle
from meta_memory.sdk.transport import EmbeddedTransport
from meta_memory.server.gateway import Gateway
from support import meta_memory_cli

ID, OTHER = "lead:main", "lead:other"
QUERIES = ["passport travel", "tea", "web page claim", "door code", "garden"]


mm = meta_memory_cli


def handle_on(state: Path, config: Path | None) -> MetaHandle:
    return MetaHandle(EmbeddedTransport(Gateway.for_runtime(build_runtime(state, config))))


def config_args(config: Path | None) -> list[str]:
    return ["--config", str(config)] if config is not None else []


def build_source(h: MetaHandle) -> dict[str, str]:
    ids: dict[str, str] = {}
    ids["passport"] = h.remember_agent_memory(ID, title="Passport location", body="Top drawer of the desk.",
                                              tags=["travel"], metadata={"place": {"room": "study"}, "n": 1.5}
                                              ).memory_id
    tea = h.remember_agent_memory(ID, title="Tea", body="Prefers green tea in the morning.").memory_id
    ids["tea"] = h.update_agent_memory(ID, tea, title="Tea", body="Prefers jasmine tea in the morning.").memory_id
    ids["tea_v1"] = tea
    gone = h.remember_agent_memory(ID, title="Door code", body="The door code is on the fridge.").memory_id
    h.forget_agent_memory(ID, gone)
    ids["gone"] = gone
    ids["other"] = h.remember_agent_memory(OTHER, title="Garden", body="Water the garden on Fridays.").memory_id
    h.remember_agent_memory(ID, title="Garden plan", body="Tomatoes by the fence.", realm="hr")
    # a web-tainted session's writes are quarantined; one of them is released by an operator
    h.session_note(ID, "s1")
    h.turn_tool_result(ID, "s1", "web_fetch")
    for text in ("The web page claim says the office moved.", "Another web page claim about parking."):
        out = h.agent_memory_tool(ID, {"action": "remember", "title": text[:20], "body": text}, session_key="s1")
        assert not out.is_error, out
    queue = h.call("meta/memory/panel/quarantine", {})
    quarantined = [r["id"] for r in queue["records"] if r["scope"].get("identity") == ID]
    assert len(quarantined) == 2
    detail = h.call("meta/memory/panel/record", {"realm": "default", "memory_id": quarantined[0]})
    h.call("meta/memory/quarantine/decide", {
        "realm": "default", "identity": ID, "memory_id": quarantined[0], "verdict": "release",
        "expected_content_hash": detail["record"]["content_hash"], "rationale": "checked",
    })
    h.memory_index("identity:ops", "deployment", fact="Production deploys require approval.", metadata={"source": "runbook"})
    h.memory_index("identity:ops", "rollback", conflict=True, conflict_reason="two runbooks disagree")
    return ids


def snapshot(h: MetaHandle) -> dict[str, Any]:
    """What a user sees: manifests, recall answers per identity and realm, the ledger, record states."""
    out: dict[str, Any] = {}
    for realm, ident in (("default", ID), ("default", OTHER), ("hr", ID)):
        out[f"{realm}/{ident}/manifest"] = [m.model_dump() for m in h.manifest_agent_memory(ident, realm=realm, tier="full")]
        for q in QUERIES:
            out[f"{realm}/{ident}/recall/{q}"] = [r.model_dump() for r in
                                                  h.recall_agent_memory(ident, realm=realm, query_text=q)]
    passport = h.recall_agent_memory(ID, query_text="passport travel")
    assert passport[0].metadata == {"n": 1.5, "place": {"room": "study"}}  # the export line carries it
    ledger = h.memory_query(None)
    out["assertions"] = [(a.entity, a.topic, a.store, a.fact, a.metadata) for a in ledger.assertions]
    out["conflicts"] = [(c.entity, c.topic, c.store, c.reason) for c in ledger.conflicts]
    return out


def export_lines(path: Path) -> list[dict[str, Any]]:
    """The record and ledger lines (without the header and the closing line)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()][1:-1]


def without_mac(line: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in line.items() if k != "mac"}


def test_export_then_import_into_an_empty_state_gives_the_same_memory(tmp_path: Path, configs: Any) -> None:
    src_cfg, dst_cfg = configs
    src, dst = tmp_path / "src", tmp_path / "dst"
    with handle_on(src, src_cfg) as h:
        ids = build_source(h)
        before = snapshot(h)
    dump, key = tmp_path / "memory.jsonl", tmp_path / "moving.key"  # another installation: the key travels
    done = mm("export", "--state-dir", str(src), *config_args(src_cfg), "-o", str(dump), "--key-file", str(key))
    assert done.returncode == 0, done.stderr
    lines = export_lines(dump)
    by_id = {line["record"]["id"]: line for line in lines if line["type"] == "record"}
    assert by_id[ids["tea_v1"]]["record"]["status"] == {"status": "superseded", "by": ids["tea"]}
    assert by_id[ids["tea"]]["record"]["supersedes"] == ids["tea_v1"]
    assert by_id[ids["gone"]]["record"]["status"]["status"] == "tombstoned"
    assert by_id[ids["gone"]]["tombstoned_at_ms"] is not None
    statuses = sorted(line["record"]["status"]["status"] for line in by_id.values())
    assert statuses.count("quarantined") == 1 and statuses.count("tombstoned") == 2  # forgotten + released original
    assert {line["type"] for line in lines} == {"record", "assertion", "conflict"}

    imported = mm("import", str(dump), "--state-dir", str(dst), *config_args(dst_cfg), "--json", "--key-file", str(key))
    assert imported.returncode == 0, imported.stderr
    figures = json.loads(imported.stdout)
    assert figures["verified"] is True and figures["downgraded"] == [] and figures["refused"] == []
    assert sum(figures["created"].values()) == len(by_id) and figures["trust_lowered"] == 0
    assert figures["assertions"] == 1 and figures["conflict_signals"] == 1

    again = mm("export", "--state-dir", str(dst), *config_args(dst_cfg), "-o", str(tmp_path / "again.jsonl"),
               "--key-file", str(key))
    assert again.returncode == 0, again.stderr
    # identical records (links, timestamps, usage); ledger lines are re-stamped when indexed again, and
    # every line carries its own export's integrity check
    unstamped = [{k: v for k, v in x.items() if k not in ("indexed_at_ms", "updated_at_ms", "mac")} for x in lines]
    assert [{k: v for k, v in x.items() if k not in ("indexed_at_ms", "updated_at_ms", "mac")}
            for x in export_lines(tmp_path / "again.jsonl")] == unstamped
    assert [without_mac(x) for x in export_lines(tmp_path / "again.jsonl") if x["type"] == "record"] == [
        without_mac(x) for x in by_id.values()]
    with handle_on(dst, dst_cfg) as h:
        assert snapshot(h) == before
        # quarantined content stays quarantined (not recalled, still in the review queue)
        queue = h.call("meta/memory/panel/quarantine", {})
        assert len([r for r in queue["records"]]) == 1

    # idempotent: a second import writes nothing
    twice = mm("import", str(dump), "--state-dir", str(dst), *config_args(dst_cfg), "--json", "--key-file", str(key))
    assert twice.returncode == 0, twice.stderr
    assert {k: v for k, v in json.loads(twice.stdout).items() if k != "verification"} == {
        "created": {}, "skipped_present": len(by_id), "conflicts": [], "duplicates": [], "trust_lowered": 0, "assertions": 0,
        "assertions_present": 1, "conflict_signals": 1, "verified": True, "downgraded": [], "refused": []}


def test_the_export_file_is_owner_only(tmp_path: Path) -> None:
    with handle_on(tmp_path / "src", None) as h:
        h.remember_agent_memory(ID, title="t", body="b")
    out = tmp_path / "dump.jsonl"
    out.write_text("old", encoding="utf-8")
    out.chmod(0o644)
    old = os.umask(0)
    try:
        assert mm("export", "--state-dir", str(tmp_path / "src"), "-o", str(out), "--force").returncode == 0
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o600 and out.read_text().startswith('{"type":"header"')


def test_an_existing_export_file_is_refused_unless_force(tmp_path: Path) -> None:
    """``export -o FILE`` writes a new file, as ``backup`` a new directory: an existing FILE is refused
    (exit 1, left as it was) unless ``--force`` replaces it."""
    with handle_on(tmp_path / "src", None) as h:
        h.remember_agent_memory(ID, title="t", body="b")
    out = tmp_path / "dump.jsonl"
    out.write_text("yesterday's export", encoding="utf-8")
    refused = mm("export", "--state-dir", str(tmp_path / "src"), "-o", str(out))
    err = refused.stderr.decode()
    assert refused.returncode == 1 and f"refusing to overwrite {out} (-o/--output): it already exists" in err, err
    assert "--force" in err and "Traceback" not in err
    assert out.read_text(encoding="utf-8") == "yesterday's export"
    # a refused export signs nothing, so it makes no key: a --key-file it names is not created
    key = tmp_path / "moving.key"
    refused = mm("export", "--state-dir", str(tmp_path / "src"), "-o", str(out), "--key-file", str(key))
    assert refused.returncode == 1 and "refusing to overwrite" in refused.stderr.decode()
    assert not key.exists() and out.read_text(encoding="utf-8") == "yesterday's export"
    link = tmp_path / "link.jsonl"
    link.symlink_to(tmp_path / "nowhere.jsonl")  # a dangling link is an existing path too
    assert mm("export", "--state-dir", str(tmp_path / "src"), "-o", str(link)).returncode == 1
    assert not (tmp_path / "nowhere.jsonl").exists()
    done = mm("export", "--state-dir", str(tmp_path / "src"), "-o", str(out), "--force")
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8").startswith('{"type":"header"')


def test_a_refused_forced_export_leaves_the_file_it_was_to_replace(tmp_path: Path) -> None:
    """``export -o FILE --force`` replaces FILE only with a complete export: one refused (an unknown realm,
    an unreachable gateway) leaves yesterday's FILE as it was and nothing beside it. Before, the refusal
    removed FILE, so a mistyped --realm in a nightly job destroyed the last good export."""
    with handle_on(tmp_path / "src", None) as h:
        h.remember_agent_memory(ID, title="t", body="b")
    out = tmp_path / "dump.jsonl"
    out.write_text("yesterday's export", encoding="utf-8")
    unknown = mm("export", "--state-dir", str(tmp_path / "src"), "-o", str(out), "--force", "--realm", "nope")
    assert unknown.returncode == 1 and b"realm 'nope' holds no agent memory" in unknown.stderr, unknown.stderr
    away = mm("export", "--url", "http://127.0.0.1:1", "-o", str(out), "--force")
    assert away.returncode == 1 and b"cannot reach" in away.stderr, away.stderr
    assert out.read_text(encoding="utf-8") == "yesterday's export"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dump.jsonl", "src"]
    done = mm("export", "--state-dir", str(tmp_path / "src"), "-o", str(out), "--force")
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8").startswith('{"type":"header"') and out.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dump.jsonl", "src"]


def test_summaries_count_one_in_the_singular(tmp_path: Path) -> None:
    with handle_on(tmp_path / "src", None) as h:
        h.remember_agent_memory(ID, title="t", body="b")
    out, key = tmp_path / "dump.jsonl", tmp_path / "moving.key"
    done = mm("export", "--state-dir", str(tmp_path / "src"), "-o", str(out), "--no-ledger", "--key-file", str(key))
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().strip().startswith(
        f"exported 1 record (default: 1), 0 assertions, 0 conflict signals to {out}, signed with the key file {key}")
    landed = mm("import", str(out), "--state-dir", str(tmp_path / "dst"), "--quiet", "--key-file", str(key))
    assert landed.returncode == 0, landed.stderr
    summary, verified = landed.stdout.decode().strip().splitlines()
    assert summary == (
        "imported 1 record (0 already present, 0 conflicting ids kept as they were, 0 downgraded, "
        "0 with trust lowered), "
        "0 assertions (0 already present), 0 conflict signals")
    assert verified.startswith(f"file verified: signed with the key file {key} (key id ")


def test_export_of_one_identity_has_its_records_only(tmp_path: Path) -> None:
    src = tmp_path / "src"
    with handle_on(src, None) as h:
        build_source(h)
    out = mm("export", "--state-dir", str(src), "--realm", "default", "--identity", OTHER)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(x) for x in out.stdout.decode().splitlines()]
    assert lines[0]["type"] == "header" and lines[0]["identity"] == OTHER and lines[-1] == {
        "type": "end", "lines": 2, "mac": lines[-1]["mac"]}
    assert [(x["record"]["title"], x["record"]["scope"]["identity"]) for x in lines[1:-1]] == [("Garden", OTHER)]


def _write_export(path: Path, records: list[dict[str, Any]]) -> Path:
    header = {"type": "header", "format": "meta-memory-export", "version": 1, "exported_at_ms": 1, "realms": ["default"]}
    path.write_text("\n".join(json.dumps(x) for x in [header, *records]) + "\n", encoding="utf-8")
    return path


def _record(memory_id: str, body: str, **over: Any) -> dict[str, Any]:
    rec = {"id": memory_id, "scope": {"scope": "identity", "realm": "default", "identity": ID}, "kind": "fact",
           "title": "Imported", "description": "", "body": body, "tags": [],
           "provenance": {"evidence": [], "author": {"author": "application"}}, "trust": "agent_observed",
           "status": {"status": "active"}, "derived_from": [], "created_at_ms": 1_700_000_000_000,
           "updated_at_ms": 1_700_000_000_000, "usage": {}, "ever_quarantined": False}
    rec.update(over)
    return {"type": "record", "realm": "default", "record": rec, "tombstoned_at_ms": None, "rank_set_at_ms": None}


def _manifest(state: Path) -> list[str]:
    with handle_on(state, None) as h:
        return [m.id for m in h.manifest_agent_memory(ID, tier="full")]


def test_a_secret_anywhere_in_the_file_refuses_it_before_anything_is_written(tmp_path: Path) -> None:
    dump = _write_export(tmp_path / "x.jsonl", [_record("mem-ok-1", "fine"),
                                                _record("mem-bad", "key AKIAIOSFODNN7EXAMPLE here")])
    out = mm("import", str(dump), "--state-dir", str(tmp_path / "dst"))
    assert out.returncode == 1
    err = out.stderr.decode()
    assert "line 3" in err and "secret_detected" in err and "AKIAIOSFODNN7EXAMPLE" not in err
    assert _manifest(tmp_path / "dst") == []


@pytest.mark.parametrize("bad, rule", [
    ({"type": "record", "realm": "default"}, "record"),
    ({"type": "nonsense"}, "type must be one of"),
    (_record("mem x", "space in the id"), "printable characters without spaces"),
    (_record("mem-future", "far future", created_at_ms=10**18, updated_at_ms=10**18), "timestamps"),
    (_record("mem-dangling", "superseded by nobody", status={"status": "superseded", "by": "mem-missing"}), "successor"),
])
def test_damaged_lines_are_refused_by_line_number(tmp_path: Path, bad: dict[str, Any], rule: str) -> None:
    dump = _write_export(tmp_path / "x.jsonl", [_record("mem-ok-1", "fine"), bad])
    out = mm("import", str(dump), "--state-dir", str(tmp_path / "dst"))
    assert out.returncode == 1, out.stdout
    assert rule in out.stderr.decode() and "line 3" in out.stderr.decode()
    assert _manifest(tmp_path / "dst") == []


@pytest.mark.parametrize("tail, rule", [
    (b"\xff\xfe not text\n", "line 2: not valid UTF-8 (byte 1 of the line)"),
    (b"garbage\n", "line 2: Expecting value"),
])
def test_a_refused_file_leaves_no_state_directory_behind(tmp_path: Path, tail: bytes, rule: str) -> None:
    """A file refused by the first pass never opens (or creates) the state directory, and bytes that
    are not UTF-8 are refused by line number like any other damage, not with a traceback."""
    dump = _write_export(tmp_path / "x.jsonl", [])
    dump.write_bytes(dump.read_bytes() + tail)
    out = mm("import", str(dump), "--state-dir", str(tmp_path / "dst"))
    assert out.returncode == 1 and b"Traceback" not in out.stderr
    assert rule in out.stderr.decode()
    assert not (tmp_path / "dst").exists()


def test_an_unsigned_file_never_raises_trust_and_keeps_quarantine(tmp_path: Path) -> None:
    dump = _write_export(tmp_path / "x.jsonl", [
        _record("mem-op", "claims operator trust", trust="operator"),
        _record("mem-q", "held for review", status={"status": "quarantined", "reason": "session tainted"},
                ever_quarantined=True, trust="agent_verified"),
    ])
    out = mm("import", str(dump), "--state-dir", str(tmp_path / "dst"), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["trust_lowered"] == 2
    with handle_on(tmp_path / "dst", None) as h:
        assert [r.memory_id for r in h.recall_agent_memory(ID, query_text="held review operator trust")] == ["mem-op"]
        op = h.call("meta/memory/panel/record", {"realm": "default", "memory_id": "mem-op"})["record"]
        q = h.call("meta/memory/panel/record", {"realm": "default", "memory_id": "mem-q"})["record"]
    assert op["trust"] == "agent_observed" and q["trust"] == "agent_observed"  # no more than a fresh write
    assert q["status"]["status"] == "quarantined"


def test_an_id_stored_with_other_content_is_kept_not_overwritten(tmp_path: Path) -> None:
    dst = tmp_path / "dst"
    assert mm("import", str(_write_export(tmp_path / "a.jsonl", [_record("mem-1", "first text")])),
              "--state-dir", str(dst)).returncode == 0
    out = mm("import", str(_write_export(tmp_path / "b.jsonl", [_record("mem-1", "other text")])),
             "--state-dir", str(dst), "--json")
    assert out.returncode == 0
    assert json.loads(out.stdout)["conflicts"] == ["mem-1"]
    with handle_on(dst, None) as h:
        assert [r.body for r in h.recall_agent_memory(ID, query_text="text")] == ["first text"]


def test_a_state_dir_a_gateway_holds_is_refused(tmp_path: Path, gateway_factory: Any) -> None:
    gw = gateway_factory(tmp_path / "held")
    gw.rpc("meta/agent_memory/remember", {"identity": ID, "title": "t", "body": "b"})
    out = mm("export", "--state-dir", str(tmp_path / "held"))
    assert out.returncode == 1 and b"Traceback" not in out.stderr


def test_export_of_a_missing_state_dir_is_refused_and_creates_nothing(tmp_path: Path) -> None:
    out = mm("export", "--state-dir", str(tmp_path / "typo"), "-o", str(tmp_path / "x.jsonl"))
    assert out.returncode == 1 and b"no state directory" in out.stderr
    assert not (tmp_path / "typo").exists() and not (tmp_path / "x.jsonl").exists()


def _read_all(path: Path, into: list[bytes]) -> None:
    with open(path, "rb") as fh:  # blocks until a writer opens the FIFO (or the test opens it to end the wait)
        into.append(fh.read())


def test_an_export_never_writes_into_a_fifo_another_user_planted(tmp_path: Path) -> None:
    """A local user who can create files where the export goes (``/tmp``) plants a FIFO there and
    reads it: every memory would flow to them, whatever mode the export sets."""
    import threading

    with handle_on(tmp_path / "src", None) as h:
        h.remember_agent_memory(ID, title="payroll", body="the vault code is violet-4471")
    planted = tmp_path / "dump.jsonl"
    os.mkfifo(planted, 0o666)
    stolen: list[bytes] = []
    reader = threading.Thread(target=_read_all, args=(planted, stolen), daemon=True)
    reader.start()
    done = mm("export", "--state-dir", str(tmp_path / "src"), "-o", str(planted), "--force")
    if reader.is_alive():  # the export never opened it: let the reader go
        with open(planted, "wb"):
            pass
    reader.join(10)
    assert b"violet-4471" not in b"".join(stolen)
    assert done.returncode == 1 and b"not a regular file" in done.stderr, done.stderr
    assert b"Traceback" not in done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="a file of another user can be made by root alone")
def test_an_export_never_writes_into_a_file_another_user_owns(tmp_path: Path) -> None:
    """A file another user created where the export goes stays theirs (its owner reads it whatever its
    mode): the export refuses it, leaves it as it was, and writes nothing."""
    with handle_on(tmp_path / "src", None) as h:
        h.remember_agent_memory(ID, title="payroll", body="the vault code is violet-4471")
    planted = tmp_path / "dump.jsonl"
    planted.write_text("theirs", encoding="utf-8")
    os.chown(planted, 65534, 65534)
    done = mm("export", "--state-dir", str(tmp_path / "src"), "-o", str(planted), "--force")
    assert done.returncode == 1 and b"belongs to another user" in done.stderr, done.stderr
    assert planted.read_text(encoding="utf-8") == "theirs" and planted.stat().st_uid == 65534


@pytest.mark.parametrize("via", ["path", "stdin"])
def test_a_file_larger_than_memory_is_refused_at_its_long_line_without_being_read_whole(
        tmp_path: Path, via: str) -> None:
    """A 16 GiB file whose second line never ends (sparse: it takes no disk), imported by a process
    allowed 1 GiB of memory: the import reads one line at a time and refuses the long line by number."""
    import resource
    import subprocess
    import sys

    dump = _write_export(tmp_path / "huge.jsonl", [])
    with dump.open("r+b") as fh:
        fh.truncate(16 << 30)

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    args = [sys.executable, "-m", "meta_memory.cli", "import", "-" if via == "stdin" else str(dump),
            "--state-dir", str(tmp_path / "dst")]
    with dump.open("rb") as stdin:
        out = subprocess.run(args, stdin=stdin if via == "stdin" else subprocess.DEVNULL, capture_output=True,
                             timeout=120, preexec_fn=cap)
    err = out.stderr.decode()
    assert out.returncode == 1 and "Traceback" not in err and "MemoryError" not in err, err[-2000:]
    assert "import refused: line 2: line longer than 1048576 bytes" in err
    assert not (tmp_path / "dst").exists()


def test_read_lines_holds_a_line_up_to_the_limit_and_refuses_one_byte_more() -> None:
    import io

    from meta_memory.portability.format import MAX_LINE_BYTES
    from meta_memory.portability.importer import ImportError_, read_lines

    full = b"a" * MAX_LINE_BYTES
    assert list(read_lines(io.BytesIO(b"h\r\n" + full + b"\r\n\nlast"))) == [b"h", full, b"", b"last"]
    assert list(read_lines(io.BytesIO(full))) == [full]
    for tail in (b"", b"\n", b"\r\n", b"more\n"):
        with pytest.raises(ImportError_) as refused:
            list(read_lines(io.BytesIO(b"h\n\n" + full + b"a" + tail)))
        assert refused.value.line == 3 and str(MAX_LINE_BYTES) in refused.value.rule

"""An export file is untrusted input: ``meta-memory import`` trusts only a file that verifies under the
installation's export key (or one the operator names), and lands anything else no more trusted or
visible than a fresh write, naming every line it downgraded or refused; erased records stay erased.

The attacks are the ones an edited export used to carry out: quarantined content made active, trust
raised, an ``operator`` author forged, usage counters inflated, a record moved into realm scope (where
it is injected into every identity), ledger facts planted.
"""

from __future__ import annotations

import io
import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meta_memory.cli import build_runtime
from meta_memory.errors import RecordNotFound
from meta_memory.portability import export_jsonl
from meta_memory.portability.importer import ImportError_, parse_lines, verify
from meta_memory.portability.signing import ExportKey, LineSigner
from portability.test_round_trip import (
    ID,
    build_source,
    config_args,
    handle_on,
    mm,
    snapshot,
)

PANEL = "meta/memory/panel/record"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(x, ensure_ascii=False, separators=(",", ":")) + "\n" for x in lines),
                    encoding="utf-8")
    return path


def _exists(h: Any, memory_id: str) -> bool:
    try:
        h.call(PANEL, {"realm": "default", "memory_id": memory_id})
    except RecordNotFound:
        return False
    return True


def test_an_edited_export_raises_nothing_and_every_changed_line_is_named(tmp_path: Path, configs: Any) -> None:
    src_cfg, dst_cfg = configs
    src, key = tmp_path / "src", tmp_path / "moving.key"
    with handle_on(src, src_cfg) as h:
        ids = build_source(h)
        quarantined = [r["id"] for r in h.call("meta/memory/panel/quarantine", {})["records"]][0]
    dump = tmp_path / "memory.jsonl"
    assert mm("export", "--state-dir", str(src), *config_args(src_cfg), "-o", str(dump), "--key-file", str(key)
              ).returncode == 0
    lines = _lines(dump)
    by_id = {x["record"]["id"]: x for x in lines if x["type"] == "record"}
    line_of = {x["record"]["id"]: n for n, x in enumerate(lines, start=1) if x["type"] == "record"}
    forged = {"trust": "operator", "provenance": {"evidence": [], "author": {"author": "operator", "principal": "root"}},
              "usage": {"injected_count": 999999, "judged_useful_count": 999999}, "working_set_rank": 1}
    by_id[quarantined]["record"].update(forged)
    by_id[ids["other"]]["record"].update(forged)
    by_id[ids["passport"]]["record"]["scope"] = {"scope": "realm", "realm": "default"}  # injected into everyone
    tampered = _write(tmp_path / "tampered.jsonl", lines)  # the edited lines keep their old MACs

    out = mm("import", str(tampered), "--state-dir", str(tmp_path / "dst"), *config_args(dst_cfg), "--json",
             "--key-file", str(key), "--accept-unverified")
    assert out.returncode == 1, out.stderr  # lines were refused; the rest landed
    report = json.loads(out.stdout)
    assert report["verified"] is False
    first = min(line_of[m] for m in (quarantined, ids["other"], ids["passport"]))
    assert report["verification"] == f"line {first} (and 2 more) fails its integrity check: edited, moved, or from " \
                                     "another export"
    refused = {(n["line"], n["memory_id"]): n["reason"] for n in report["refused"]}
    assert "pass --allow-scope realm" in refused[(line_of[ids["passport"]], ids["passport"])]
    assert sum(1 for (_, mid), why in refused.items() if mid is None and "--allow-ledger" in why) == 2
    changes = {n["memory_id"]: n["changes"] for n in report["downgraded"]}
    for mid in (quarantined, ids["other"]):
        assert "trust operator -> agent_observed" in changes[mid] and "author operator -> agent" in changes[mid]
        assert "usage counters reset" in changes[mid] and "working-set rank dropped" in changes[mid]
    assert changes[ids["tea_v1"]].startswith("status superseded -> quarantined")
    assert "status active -> quarantined (the line fails its integrity check)" in changes[ids["other"]]
    # a record that was quarantined stays so: the report says that, not "status quarantined -> quarantined"
    assert changes[quarantined].startswith("stays quarantined (reason now 'unverified import: was quarantined')")
    assert "quarantined -> quarantined" not in changes[quarantined]

    with handle_on(tmp_path / "dst", dst_cfg) as h:
        q = h.call(PANEL, {"realm": "default", "memory_id": quarantined})["record"]
        assert q["status"]["status"] == "quarantined" and q["trust"] == "agent_observed"
        assert q["provenance"]["author"] == {"author": "agent", "identity": ID} and q["usage"]["injected_count"] == 0
        other = h.call(PANEL, {"realm": "default", "memory_id": ids["other"]})["record"]
        # an edited line under a trusted key lands quarantined, whatever status it claims; an untouched
        # line of the same file lands as a fresh write would (the current tea stays active)
        assert other["status"]["status"] == "quarantined" and other["trust"] == "agent_observed"
        assert h.call(PANEL, {"realm": "default", "memory_id": ids["tea"]})["record"]["status"]["status"] == "active"
        assert other["usage"]["injected_count"] == 0 and other.get("working_set_rank") is None
        assert not _exists(h, ids["passport"])  # no realm-scope record reached anyone
        assert h.recall_agent_memory("lead:third", query_text="passport travel") == []
        tea_v1 = h.call(PANEL, {"realm": "default", "memory_id": ids["tea_v1"]})["record"]
        assert tea_v1["status"]["status"] == "quarantined"  # a superseded version is for review, not recall
        assert h.memory_query(None).assertions == []  # ledger lines of an unverified file: refused

    # the text report names the same lines; with the scope allowed by name, the record lands (downgraded)
    text = mm("import", str(tampered), "--state-dir", str(tmp_path / "dst"), *config_args(dst_cfg),
              "--allow-scope", "realm", "--allow-ledger")
    assert text.returncode == 0, text.stderr
    said = text.stdout.decode()
    assert "file NOT verified: " in said and f"downgraded line {line_of[ids['passport']]} ({ids['passport']}): " in said
    with handle_on(tmp_path / "dst", dst_cfg) as h:
        realm_rec = h.call(PANEL, {"realm": "default", "memory_id": ids["passport"]})["record"]
        assert realm_rec["scope"] == {"scope": "realm", "realm": "default"} and realm_rec["trust"] == "agent_observed"
        assert realm_rec["provenance"]["author"]["author"] == "agent"
        assert len(h.memory_query(None).assertions) == 1


def test_a_file_from_this_installation_round_trips_exactly_with_no_flag(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with handle_on(state, None) as h:
        build_source(h)
        before = snapshot(h)
    dump = tmp_path / "backup.jsonl"
    done = mm("export", "--state-dir", str(state), "-o", str(dump))
    assert done.returncode == 0, done.stderr
    key = state / "export.key"
    assert key.stat().st_mode & 0o777 == 0o600 and f"key id {ExportKey.parse(key.read_text(), 'k').key_id}" in \
        done.stdout.decode()
    for realm_file in (state / "agent-memory").iterdir():  # the records are lost; the installation is not
        realm_file.unlink()
    back = mm("import", str(dump), "--state-dir", str(state), "--json")
    assert back.returncode == 0, back.stderr
    report = json.loads(back.stdout)
    assert report["verified"] is True and report["downgraded"] == [] and report["refused"] == []
    assert f"this installation's export key ({key})" in report["verification"]
    with handle_on(state, None) as h:
        assert snapshot(h) == before


@pytest.mark.postgres
def test_on_postgresql_the_key_lives_in_the_database(tmp_path: Path) -> None:
    """Every state directory on one PostgreSQL schema is one installation: an export taken through one
    verifies through another, and no key file is written to either state directory."""
    from contract.pgsupport import DSN, dsn_with_schema, require_postgres, throwaway_schema
    from support import write_config

    require_postgres()
    import psycopg

    with throwaway_schema() as schema:
        config = write_config(tmp_path / "pg.toml", f'[agent_memory]\nstore = "postgres"\ndsn = "{dsn_with_schema(schema)}"\n')
        with handle_on(tmp_path / "a", config) as h:
            h.remember_agent_memory(ID, title="Shared", body="one database, one installation")
        dump = tmp_path / "dump.jsonl"
        assert mm("export", "--state-dir", str(tmp_path / "a"), "--config", str(config), "-o", str(dump)).returncode == 0
        (tmp_path / "b").mkdir()
        out = mm("import", str(dump), "--state-dir", str(tmp_path / "b"), "--config", str(config), "--json")
        assert out.returncode == 0, out.stderr
        report = json.loads(out.stdout)
        assert report["verified"] is True and report["skipped_present"] == 1
        assert "in the agent-memory database" in report["verification"]
        assert not (tmp_path / "a" / "export.key").exists() and not (tmp_path / "b" / "export.key").exists()
        with psycopg.connect(DSN) as conn:
            (n,) = conn.execute(f'SELECT count(*) FROM "{schema}".installation_keys WHERE name = %s',  # type: ignore[misc]
                                ("export",)).fetchone()
        assert n == 1


def test_an_old_export_does_not_bring_back_what_was_erased(tmp_path: Path, configs: Any) -> None:
    src_cfg, _ = configs
    state = tmp_path / "state"
    with handle_on(state, src_cfg) as h:
        ids = build_source(h)
    dump = tmp_path / "before-erase.jsonl"
    assert mm("export", "--state-dir", str(state), *config_args(src_cfg), "-o", str(dump)).returncode == 0
    with handle_on(state, src_cfg) as h:
        erased = h.call("meta/agent_memory/erase", {"identity": ID, "memory_id": ids["tea"]})
        assert {r["memory_id"] for r in erased["records"]} == {ids["tea"], ids["tea_v1"]}
    out = mm("import", str(dump), "--state-dir", str(state), *config_args(src_cfg), "--json")
    assert out.returncode == 1, out.stderr
    report = json.loads(out.stdout)
    assert report["verified"] is True
    refused = {n["memory_id"]: n["reason"] for n in report["refused"]}
    assert set(refused) == {ids["tea"], ids["tea_v1"]} and all(r.startswith("erased: ") for r in refused.values())
    assert "jasmine" not in out.stdout.decode()
    with handle_on(state, src_cfg) as h:
        assert not _exists(h, ids["tea"]) and not _exists(h, ids["tea_v1"])
        assert h.recall_agent_memory(ID, query_text="tea") == []


@pytest.mark.parametrize("args, code, said", [
    (["--allow-scope", "everything"], 2, "expected realm, mob:NAME or operator:NAME"),
    (["--allow-scope", "mob:"], 2, "expected realm, mob:NAME or operator:NAME"),
    (["--allow-scope", "mob: team"], 2, "the mob name must not begin or end with whitespace"),
    (["--allow-scope", "operator:ops\u200b"], 2, "the operator name must not contain invisible"),
    (["--key-file", "missing.key"], 1, "no such key file"),
    (["--key-file", "bad.key"], 1, "an export key is 64 hexadecimal characters"),
    (["--key-file", "/dev/zero"], 1, "not a regular file"),  # never read without end
])
def test_bad_import_options_are_refused_before_anything_is_written(tmp_path: Path, args: list[str], code: int,
                                                                   said: str) -> None:
    (tmp_path / "bad.key").write_text("not a key\n", encoding="ascii")
    dump = _write(tmp_path / "x.jsonl", [{"type": "header", "format": "meta-memory-export", "version": 1,
                                          "exported_at_ms": 1, "realms": []}])
    args = [str(tmp_path / a) if a.endswith(".key") else a for a in args]
    out = mm("import", str(dump), "--state-dir", str(tmp_path / "dst"), *args)
    assert out.returncode == code and said in out.stderr.decode() and b"Traceback" not in out.stderr
    assert not (tmp_path / "dst").exists()


# --------------------------------------------------------------------------- the integrity check itself


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[bytes], list[bytes], ExportKey]:
    """Two signed exports of one small state under one key (lines as bytes), and the key."""
    root = tmp_path_factory.mktemp("signed")
    runtime = build_runtime(root / "state", None)
    try:
        from meta_memory.sdk.handle import MetaHandle
        from meta_memory.sdk.transport import EmbeddedTransport
        from meta_memory.server.gateway import Gateway

        h = MetaHandle(EmbeddedTransport(Gateway.for_runtime(runtime)))
        for i in range(4):
            h.remember_agent_memory(ID, title=f"Note {i}", body=f"body {i}")
        h.memory_index("identity:ops", "deploys", fact="need approval")
        key = ExportKey.new("a test key")
        files = []
        for _ in range(2):
            buf = io.StringIO()
            export_jsonl(runtime, buf, signer=LineSigner(key))
            files.append(buf.getvalue().encode().splitlines())
    finally:
        runtime.close()
    return files[0], files[1], key


def _verified(lines: list[bytes], key: ExportKey) -> bool:
    try:
        return verify(parse_lines(lines), [key]).verified
    except ImportError_:
        return False  # refused outright: no better


def test_an_untouched_export_verifies_and_says_with_which_key(signed: Any) -> None:
    lines, _, key = signed
    result = verify(parse_lines(lines), [key])
    assert result.verified and result.detail == f"signed with a test key (key id {key.key_id})"
    other = ExportKey.new("another")
    refused = verify(parse_lines(lines), [other])
    assert not refused.verified and key.key_id in refused.detail and other.key_id in refused.detail


_MUTATIONS = ["drop", "swap", "duplicate", "splice", "edit", "truncate", "append", "blank", "strip_mac"]


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(_MUTATIONS), seed=st.integers(0, 2**32 - 1))
def test_no_line_can_be_dropped_moved_spliced_edited_or_added_undetected(signed: Any, kind: str, seed: int) -> None:
    lines, other_export, key = signed
    rnd = random.Random(seed)
    out = list(lines)
    i = rnd.randrange(len(out))
    if kind == "drop":
        del out[i]
    elif kind == "swap":
        j = rnd.choice([k for k in range(len(out)) if k != i])
        out[i], out[j] = out[j], out[i]
    elif kind == "duplicate":
        out.insert(rnd.randrange(len(out) + 1), out[i])
    elif kind == "splice":  # the same line number of another export by the same key
        out[i] = other_export[i]
    elif kind == "edit":
        pos = rnd.randrange(len(out[i]))
        out[i] = out[i][:pos] + bytes([out[i][pos] ^ rnd.choice([1, 2, 4, 32])]) + out[i][pos + 1:]
    elif kind == "truncate":
        out = out[: rnd.randrange(len(out))]
    elif kind == "append":
        out.append(rnd.choice(lines))
    elif kind == "blank":
        out.insert(rnd.randrange(1, len(out)), b"")
    else:
        out[i] = out[i].rsplit(b',"mac":', 1)[0] + b"}"
    assert not _verified(out, key), (kind, i)


def test_the_key_file_is_created_owner_only_whatever_the_umask(tmp_path: Path) -> None:
    with handle_on(tmp_path / "src", None) as h:
        h.remember_agent_memory(ID, title="t", body="b")
    old = os.umask(0)
    try:
        done = mm("export", "--state-dir", str(tmp_path / "src"), "-o", str(tmp_path / "x.jsonl"),
                  "--key-file", str(tmp_path / "new.key"))
    finally:
        os.umask(old)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "new.key").stat().st_mode & 0o777 == 0o600
    assert not (tmp_path / "src" / "export.key").exists()  # --key-file signs instead of the installation key


@pytest.mark.skipif(os.geteuid() != 0, reason="a file of another user can be made by root alone")
@pytest.mark.parametrize("command", ["export", "import"])
def test_a_key_file_another_user_owns_is_refused(tmp_path: Path, command: str) -> None:
    """A local user plants ``/tmp/moving.key`` before the operator makes it: an export signed with it, or
    an import trusting it, would let them sign any file as the installation's own, trust and authors kept."""
    src = tmp_path / "src"
    with handle_on(src, None) as h:
        h.remember_agent_memory(ID, title="t", body="b")
    dump = tmp_path / "memory.jsonl"
    assert mm("export", "--state-dir", str(src), "-o", str(dump)).returncode == 0
    planted = tmp_path / "moving.key"
    planted.write_text(ExportKey.new("theirs").text(), encoding="ascii")
    planted.chmod(0o600)
    os.chown(planted, 65534, 65534)
    if command == "export":
        out = mm("export", "--state-dir", str(src), "-o", str(tmp_path / "signed.jsonl"), "--key-file", str(planted))
    else:
        out = mm("import", str(dump), "--state-dir", str(tmp_path / "dst"), "--key-file", str(planted))
    assert out.returncode == 1 and "belongs to another user" in out.stderr.decode(), out.stderr
    assert b"Traceback" not in out.stderr
    assert not (tmp_path / "signed.jsonl").exists() and not (tmp_path / "dst").exists()


@pytest.mark.parametrize(("path", "value"), [(("expires_at_ms",), 2**70), (("expires_at_ms",), 2**63)])
def test_an_integer_no_column_holds_is_refused_by_line_not_a_traceback(tmp_path: Path, path: tuple[str, ...],
                                                                       value: int) -> None:
    """An edited line's ``expires_at_ms`` past a 64-bit column is refused naming the field, before anything
    is written (a rank or usage count of an unverified line is not carried at all)."""
    src = tmp_path / "src"
    with handle_on(src, None) as h:
        h.remember_agent_memory(ID, title="Tea", body="Prefers green tea.", ttl_s=3600)
    out = tmp_path / "out.jsonl"
    assert mm("export", "--state-dir", str(src), "-o", str(out)).returncode == 0
    lines = _lines(out)
    rec = next(x for x in lines if x["type"] == "record")["record"]
    target = rec
    for key in path[:-1]:
        target = target.setdefault(key, {})
    target[path[-1]] = value
    done = mm("import", str(_write(out, lines)), "--state-dir", str(tmp_path / "dst"))
    assert b"Traceback" not in done.stderr, done.stderr[-1500:]
    assert done.returncode != 0 and path[-1].encode() in done.stderr, done.stderr
    with handle_on(tmp_path / "dst", None) as h:
        assert h.list_agent_memory(ID).records == []


def test_an_edited_export_cannot_bring_erased_content_back_under_another_id_identity_or_realm(
        tmp_path: Path, configs: Any) -> None:
    """Erased text is refused by an import wherever the edited line puts it: another id, another identity,
    another realm; an erased id is refused in any realm. Each refused line is named, and nothing of it lands."""
    src_cfg, _ = configs
    state = tmp_path / "state"
    with handle_on(state, src_cfg) as h:
        ids = build_source(h)
    dump = tmp_path / "before-erase.jsonl"
    assert mm("export", "--state-dir", str(state), *config_args(src_cfg), "-o", str(dump)).returncode == 0
    with handle_on(state, src_cfg) as h:
        for memory_id in (ids["tea"], ids["passport"]):
            h.call("meta/agent_memory/erase", {"identity": ID, "memory_id": memory_id})
    lines = _lines(dump)
    tea = next(x for x in lines if x.get("type") == "record" and x["record"]["id"] == ids["tea"])
    moved = []
    for n, (realm, ident, new_id, body) in enumerate([
            ("default", "c:other", "mem-1700000000000000000-1-1-00000000000000a1", None),
            ("hr", "c:other", "mem-1700000000000000000-1-1-00000000000000a2", None),
            # re-spaced: the register's folded hash still matches
            ("hr", "d:other", "mem-1700000000000000000-1-1-00000000000000a3", "Prefers  jasmine tea\tin the morning."),
            # the erased id itself, moved into another realm with new words
            ("hr", "c:other", ids["passport"], "Something else entirely."),
    ]):
        rec = {**tea["record"], "id": new_id, "scope": {"scope": "identity", "realm": realm, "identity": ident},
               "status": {"status": "active"}, "supersedes": None, "derived_from": []}
        if body is not None:
            rec["body"] = body
        moved.append({"type": "record", "realm": realm, "record": rec})
    header = next(x for x in lines if x.get("type") == "header")
    edited = _write(tmp_path / "edited.jsonl", [header, *moved])
    # signed with this installation's key and no longer verifying, the file is refused whole ...
    whole = mm("import", str(edited), "--state-dir", str(state), *config_args(src_cfg), "--json")
    assert whole.returncode == 1 and "jasmine" not in whole.stdout.decode()
    # ... and landed as untrusted input, each erased line is still refused
    out = mm("import", str(edited), "--state-dir", str(state), *config_args(src_cfg), "--json", "--accept-unverified")
    assert out.returncode == 1, out.stderr
    report = json.loads(out.stdout)
    refused = {n["memory_id"]: (n["line"], n["reason"]) for n in report["refused"]}
    assert set(refused) == {m["record"]["id"] for m in moved}
    assert sorted(line for line, _ in refused.values()) == [2, 3, 4, 5]
    assert all(reason.startswith("erased") for _, reason in refused.values()), refused
    assert "jasmine" not in out.stdout.decode()
    with handle_on(state, src_cfg) as h:
        for m in moved:
            assert not _exists_in(h, m["realm"], m["record"]["id"])
        for ident in ("c:other", "d:other"):
            for realm in ("default", "hr"):
                assert h.recall_agent_memory(ident, query_text="jasmine tea", realm=realm) == []


def _exported_then_erased(tmp_path: Path, src_cfg: Any) -> tuple[Path, list[dict[str, Any]], dict[str, Any]]:
    """The source installation's state directory, its export's lines (written before the erase) and the
    exported line of the record then erased (``tea``)."""
    state = tmp_path / "state"
    with handle_on(state, src_cfg) as h:
        ids = build_source(h)
    dump = tmp_path / "before-erase.jsonl"
    assert mm("export", "--state-dir", str(state), *config_args(src_cfg), "-o", str(dump)).returncode == 0
    with handle_on(state, src_cfg) as h:
        h.call("meta/agent_memory/erase", {"identity": ID, "memory_id": ids["tea"]})
    lines = _lines(dump)
    return state, lines, next(x for x in lines if x.get("type") == "record" and x["record"]["id"] == ids["tea"])


def test_an_edited_export_cannot_bring_erased_content_back_in_another_case_or_width(
        tmp_path: Path, configs: Any) -> None:
    """The erased text in lower case, in capitals, in full-width letters or in mathematical letters (NFKC
    compatibility forms), under a new id, is refused by the import as erased content."""
    src_cfg, _ = configs
    state, lines, tea = _exported_then_erased(tmp_path, src_cfg)
    body = tea["record"]["body"]  # "Prefers jasmine tea in the morning."
    forms = [("tea", body.lower()), ("TEA", body.upper()),
             ("\uff34\uff45\uff41", "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in body)),
             ("Tea", body.replace("jasmine", "\U0001d423\U0001d41a\U0001d42c\U0001d426\U0001d422\U0001d427\U0001d41e"))]
    moved = [{"type": "record", "realm": "default", "record": {
        **tea["record"], "id": f"mem-1700000000000000000-1-1-00000000000000b{n}", "title": title, "body": text,
        "status": {"status": "active"}, "supersedes": None, "derived_from": []}}
        for n, (title, text) in enumerate(forms)]
    header = next(x for x in lines if x.get("type") == "header")
    edited = _write(tmp_path / "edited.jsonl", [header, *moved])
    out = mm("import", str(edited), "--state-dir", str(state), *config_args(src_cfg), "--json", "--accept-unverified")
    assert out.returncode == 1, out.stderr
    report = json.loads(out.stdout)
    refused = {n["memory_id"]: n["reason"] for n in report["refused"]}
    assert set(refused) == {m["record"]["id"] for m in moved}, report
    assert all(reason.startswith("erased") for reason in refused.values()), refused
    assert "jasmine" not in out.stdout.decode().lower()
    with handle_on(state, src_cfg) as h:
        assert not any(_exists(h, m["record"]["id"]) for m in moved)
        assert h.recall_agent_memory(ID, query_text="jasmine tea") == []


def test_an_edited_export_cannot_bring_erased_text_back_in_another_field(tmp_path: Path, configs: Any) -> None:
    """The erased body moved into another field of a record under a new id (its description, a tag in lower
    case, a metadata string, the title of a record of other words; in this identity or another) is refused
    by the import as erased content; a record of other words lands."""
    src_cfg, _ = configs
    state, lines, tea = _exported_then_erased(tmp_path, src_cfg)
    body = tea["record"]["body"]  # "Prefers jasmine tea in the morning."
    fields: list[dict[str, Any]] = [{"description": body}, {"tags": [body.lower()]}, {"metadata": {"note": body}},
                                    {"title": body}, {"description": body, "scope": {"scope": "identity", "realm": "default", "identity": "z:other"}},
                                    {"description": "Kept: other words entirely"}]
    moved = [{"type": "record", "realm": "default", "record": {
        **tea["record"], "id": f"mem-1700000000000000000-1-1-00000000000000c{n}", "title": "Drinks",
        "body": f"see the other field {n}", "status": {"status": "active"}, "supersedes": None, "derived_from": [],
        **extra}} for n, extra in enumerate(fields)]
    header = next(x for x in lines if x.get("type") == "header")
    edited = _write(tmp_path / "edited.jsonl", [header, *moved])
    out = mm("import", str(edited), "--state-dir", str(state), *config_args(src_cfg), "--json", "--accept-unverified")
    assert out.returncode == 1, (out.stdout, out.stderr)
    report = json.loads(out.stdout)
    refused = {n["memory_id"]: n["reason"] for n in report["refused"]}
    assert set(refused) == {m["record"]["id"] for m in moved[:-1]}, report
    assert all(reason.startswith("erased") for reason in refused.values()), refused
    assert "jasmine" not in out.stdout.decode().lower()
    with handle_on(state, src_cfg) as h:
        assert not any(_exists(h, m["record"]["id"]) for m in moved[:-1])
        assert _exists(h, moved[-1]["record"]["id"])


def _exists_in(h: Any, realm: str, memory_id: str) -> bool:
    try:
        h.call(PANEL, {"realm": realm, "memory_id": memory_id})
    except RecordNotFound:
        return False
    return True


def test_a_ledger_line_over_the_field_cap_is_refused_by_line_as_the_rpc_refuses_it(tmp_path: Path) -> None:
    """An index over RPC refuses a fact of more than 65,536 bytes; an import's ledger line (``--allow-ledger``)
    went straight to the ledger and landed a 200 KB fact, in every later ``meta/memory/query`` answer."""
    src = tmp_path / "src"
    with handle_on(src, None) as h:
        h.memory_index("deploy", "window", fact="tuesdays")
    dump = tmp_path / "memory.jsonl"
    assert mm("export", "--state-dir", str(src), "-o", str(dump)).returncode == 0
    lines = _lines(dump)
    n, line = next((n, x) for n, x in enumerate(lines, start=1) if x["type"] == "assertion")
    line["fact"] = "f" * 200_000
    edited = _write(tmp_path / "edited.jsonl", lines)
    out = mm("import", str(edited), "--state-dir", str(tmp_path / "dst"), "--allow-ledger", "--json")
    assert out.returncode == 1
    err = out.stderr.decode()
    assert f"line {n}" in err and "fact must be at most 65536 bytes" in err, err
    with handle_on(tmp_path / "dst", None) as h:
        assert h.memory_query(None).assertions == []

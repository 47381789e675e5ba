"""``import --key-file K`` of a file that does not verify under K, or of a file signed with the
installation's own key that does not verify under it: refused whole (exit 1, nothing written) unless
``--accept-unverified``; and the import summary counts downgraded lines one way.

Before, a signed export with one line edited, imported with the key that signed it, printed "file NOT
verified ... lines downgraded" and exited 0, and the summary said "0 with trust lowered" beside "N lines
downgraded" for lines that had written nothing. Driven through the ``meta-memory`` command.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from portability.test_round_trip import ID, handle_on, mm


def _signed_export(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    src, key, dump = tmp_path / "src", tmp_path / "moving.key", tmp_path / "memory.jsonl"
    with handle_on(src, None) as h:
        for i in range(3):
            h.remember_agent_memory(ID, title=f"Note {i}", body=f"Body number {i}.")
    done = mm("export", "--state-dir", str(src), "-o", str(dump), "--no-ledger", "--key-file", str(key))
    assert done.returncode == 0, done.stderr
    return dump, key, dump.read_text(encoding="utf-8").splitlines()


def _tampered(tmp_path: Path, lines: list[str]) -> Path:
    second = json.loads(lines[1])
    second["record"]["body"] = "Body rewritten after export."
    edited = [lines[0], json.dumps(second, ensure_ascii=False, separators=(",", ":")), *lines[2:]]
    path = tmp_path / "tampered.jsonl"
    path.write_text("".join(line + "\n" for line in edited), encoding="utf-8")  # the others byte for byte
    return path


def _records(state: Path) -> list[str]:
    with handle_on(state, None) as h:
        return [m.title for m in h.manifest_agent_memory(ID, tier="full")]


def test_a_tampered_file_under_the_named_key_is_refused_whole(tmp_path: Path) -> None:
    _, key, lines = _signed_export(tmp_path)
    tampered = _tampered(tmp_path, lines)
    dst = tmp_path / "dst"
    with handle_on(dst, None) as h:  # the target already holds something of its own
        h.remember_agent_memory(ID, title="Own", body="Already here.")
    out = mm("import", str(tampered), "--state-dir", str(dst), "--quiet", "--key-file", str(key))
    assert out.returncode == 1, out.stdout
    said = out.stderr.decode()
    assert "does not verify under --key-file" in said and "line 2 fails its integrity check" in said, said
    assert "nothing was written" in said and "--accept-unverified" in said and "Traceback" not in said
    assert out.stdout == b""
    assert _records(dst) == ["Own"]
    # --json: the same refusal, the same exit
    assert mm("import", str(tampered), "--state-dir", str(dst), "--json", "--key-file", str(key)).returncode == 1
    assert _records(dst) == ["Own"]

    # chosen explicitly, the file lands as untrusted input: the edited line quarantined, the rest downgraded
    accepted = mm("import", str(tampered), "--state-dir", str(dst), "--quiet", "--key-file", str(key),
                  "--accept-unverified", "--json")
    assert accepted.returncode == 0, accepted.stderr
    report = json.loads(accepted.stdout)
    assert report["verified"] is False and [n["line"] for n in report["downgraded"]] == [2, 3, 4]
    assert "status active -> quarantined" in report["downgraded"][0]["changes"]


def test_a_refused_import_into_a_new_state_dir_leaves_no_state_behind(tmp_path: Path) -> None:
    _, key, lines = _signed_export(tmp_path)
    tampered = _tampered(tmp_path, lines)
    fresh = tmp_path / "fresh"
    out = mm("import", str(tampered), "--state-dir", str(fresh), "--quiet", "--key-file", str(key))
    assert out.returncode == 1 and "nothing was written" in out.stderr.decode(), out.stderr
    assert not fresh.exists()  # no empty memory for a later command to answer from
    later = mm("recall", "note", "--state-dir", str(fresh), "--identity", ID)
    assert later.returncode == 1 and "no state directory" in later.stderr.decode(), later.stderr
    assert not fresh.exists()
    # the untampered file, under the same key, creates the directory and lands
    good = tmp_path / "good.jsonl"
    good.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    landed = mm("import", str(good), "--state-dir", str(fresh), "--quiet", "--key-file", str(key))
    assert landed.returncode == 0, landed.stderr
    assert sorted(_records(fresh)) == ["Note 0", "Note 1", "Note 2"]


def _own_export(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """An export signed with its installation's own key, and a second state directory holding that key
    (the installation moved, or restored from a backup) and a record of its own."""
    src, dump, dst = tmp_path / "src", tmp_path / "memory.jsonl", tmp_path / "dst"
    with handle_on(src, None) as h:
        for i in range(3):
            h.remember_agent_memory(ID, title=f"Note {i}", body=f"Body number {i}.")
    done = mm("export", "--state-dir", str(src), "-o", str(dump), "--no-ledger")
    assert done.returncode == 0, done.stderr
    with handle_on(dst, None) as h:
        h.remember_agent_memory(ID, title="Own", body="Already here.")
    shutil.copy2(src / "export.key", dst / "export.key")
    return dump, dst, dump.read_text(encoding="utf-8").splitlines()


def test_a_tampered_file_under_the_installation_key_is_refused_without_a_key_file(tmp_path: Path) -> None:
    dump, dst, lines = _own_export(tmp_path)
    tampered = _tampered(tmp_path, lines)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(line + "\n" for line in lines[:-1]), encoding="utf-8")
    for bad, why in ((tampered, "line 2 fails its integrity check"), (cut, "closing line is missing")):
        for extra in ((), ("--json",)):
            out = mm("import", str(bad), "--state-dir", str(dst), "--quiet", *extra)
            assert out.returncode == 1, (bad, out.stdout)
            said = out.stderr.decode()
            assert "does not verify under this installation's export key" in said and why in said, said
            assert "nothing was written" in said and "--accept-unverified" in said and "Traceback" not in said
            if extra:  # under --json, the refusal as one error object on stdout
                error = json.loads(out.stdout)["error"]
                assert error["data"] == {"kind": "refused"} and why in error["message"], error
            else:
                assert out.stdout == b""
            assert _records(dst) == ["Own"]
    # chosen explicitly, the file lands as untrusted input: the edited line quarantined, the rest downgraded
    accepted = mm("import", str(tampered), "--state-dir", str(dst), "--quiet", "--accept-unverified", "--json")
    assert accepted.returncode == 0, accepted.stderr
    report = json.loads(accepted.stdout)
    assert report["verified"] is False and [n["line"] for n in report["downgraded"]] == [2, 3, 4]
    assert "status active -> quarantined" in report["downgraded"][0]["changes"]


def test_an_intact_file_under_the_installation_key_imports_verified(tmp_path: Path) -> None:
    dump, dst, _ = _own_export(tmp_path)
    out = mm("import", str(dump), "--state-dir", str(dst), "--quiet", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["verified"] is True and report["downgraded"] == []
    assert sorted(_records(dst)) == ["Note 0", "Note 1", "Note 2", "Own"]


def test_the_help_says_when_a_file_must_verify() -> None:
    said = " ".join(mm("import", "--help").stdout.decode().split())
    assert "--accept-unverified" in said and "signed with this installation's key" in said


def test_the_summary_counts_downgraded_lines_that_landed_once(tmp_path: Path) -> None:
    """The summary's "downgraded" count and the "lines landed downgraded" count are one number, and a line
    skipped as already present (it wrote nothing) is in neither."""
    dump, _, lines = _signed_export(tmp_path)
    dst = tmp_path / "dst"
    first = mm("import", str(dump), "--state-dir", str(dst), "--quiet")  # another installation's key: unverified
    assert first.returncode == 0, first.stderr
    head, verdict, *notes = first.stdout.decode().splitlines()
    assert "(0 already present, 0 conflicting ids kept as they were, 3 downgraded, 0 with trust lowered)" in head
    assert "(3 lines landed downgraded, 0 refused)" in verdict and len(notes) == 3
    again = mm("import", str(dump), "--state-dir", str(dst), "--quiet")
    assert again.returncode == 0, again.stderr
    head, verdict, *notes = again.stdout.decode().splitlines()
    assert "imported 0 records (3 already present, 0 conflicting ids kept as they were, 0 downgraded, " in head
    assert "(0 lines landed downgraded, 0 refused)" in verdict and notes == []


def test_export_url_refuses_a_key_file_and_says_which_key_to_carry(tmp_path: Path) -> None:
    out = mm("export", "--url", "http://127.0.0.1:9", "-o", str(tmp_path / "m.jsonl"), "--key-file",
             str(tmp_path / "k.key"))
    said = " ".join(out.stderr.decode().split())
    assert out.returncode == 2 and "export.key" in said and "import --key-file" in said
    assert not (tmp_path / "m.jsonl").exists() and not (tmp_path / "k.key").exists()


def test_a_cut_short_file_says_it_is_incomplete_before_whose_key_signed_it(tmp_path: Path) -> None:
    """Without --key-file another installation's file is unverified for its key alone; cut short (its
    closing line missing), the import says so first, as it does under the key that signed it."""
    _, key, lines = _signed_export(tmp_path)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(line + "\n" for line in lines[:-1]), encoding="utf-8")
    plain = mm("import", str(cut), "--state-dir", str(tmp_path / "dst"), "--quiet", "--json")
    assert plain.returncode == 0, plain.stderr
    said = json.loads(plain.stdout)["verification"]
    assert said.startswith("its closing line is missing"), said
    assert "neither this installation's nor a --key-file's" in said, said
    keyed = mm("import", str(cut), "--state-dir", str(tmp_path / "dst2"), "--quiet", "--key-file", str(key))
    assert keyed.returncode == 1 and "its closing line is missing" in keyed.stderr.decode(), keyed.stderr


def test_a_file_whose_header_names_another_key_is_refused_whole_under_the_key_file(tmp_path: Path) -> None:
    """Whoever edits a file can also rewrite the key its header names; under ``--key-file`` the file must
    still verify with that key, so the edit is refused whole rather than landing as foreign input."""
    _, key, lines = _signed_export(tmp_path)
    header = json.loads(lines[0])
    assert "key_id" in header
    header["key_id"] = "0123456789abcdef"
    renamed = _tampered(tmp_path, [json.dumps(header, separators=(",", ":")), *lines[1:]])
    dst = tmp_path / "dst"
    with handle_on(dst, None) as h:
        h.remember_agent_memory(ID, title="Own", body="Already here.")
    out = mm("import", str(renamed), "--state-dir", str(dst), "--quiet", "--key-file", str(key))
    assert out.returncode == 1, out.stdout
    assert "nothing was written" in out.stderr.decode()
    assert _records(dst) == ["Own"]

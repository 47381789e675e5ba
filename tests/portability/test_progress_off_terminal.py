"""``meta-memory export -o FILE`` and ``meta-memory import`` of a large file draw a progress bar on a terminal
only: with stderr a pipe or a file (a cron job, CI, ``2>log``) nothing of the bar reaches it, so a run that
succeeds leaves stderr empty. Driven through the ``meta-memory`` command with stderr captured."""

from __future__ import annotations

from pathlib import Path

from portability.test_round_trip import ID, handle_on, mm

N = 1000  # import draws its bar from 1,000 records on


def test_export_and_import_write_nothing_to_a_non_terminal_stderr(tmp_path: Path) -> None:
    src, dump, key = tmp_path / "src", tmp_path / "memory.jsonl", tmp_path / "moving.key"
    with handle_on(src, None) as h:
        h.agent(ID).remember_batch([{"title": f"Note {i}", "body": f"Body number {i}."} for i in range(N)])
    exported = mm("export", "--state-dir", str(src), "-o", str(dump), "--key-file", str(key))
    assert exported.returncode == 0, exported.stderr
    assert exported.stderr == b"", exported.stderr
    assert b"exported 1000 records" in exported.stdout

    imported = mm("import", str(dump), "--state-dir", str(tmp_path / "dst"), "--key-file", str(key))
    assert imported.returncode == 0, imported.stderr
    assert imported.stderr == b"", imported.stderr
    assert imported.stdout.startswith(b"imported 1000 records"), imported.stdout

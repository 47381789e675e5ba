"""``meta-memory doctor`` prints its report as JSON a reader can read: a path's non-ASCII letters as they
are (``/srv/mémoire``, not ``\\u00e9``), its control and invisible characters (a bidi override) and a
byte that is not UTF-8 escaped, so the output is valid UTF-8 JSON that decodes to the paths themselves.
Driven through the ``meta-memory`` command, as a user runs it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from support import meta_memory_cli


def test_doctor_prints_paths_as_text_with_controls_escaped(tmp_path: Path) -> None:
    state = tmp_path / "mémoire-\u202eevil"
    state.mkdir()
    (state / "elephant-memory-state.json").write_text('{"assertions": [], "conflicts": []}')  # a finding naming it
    out = meta_memory_cli("doctor", "--state-dir", str(state))
    assert out.returncode == 1, out.stderr  # the predecessor blocks start-up
    printed = out.stdout.decode("utf-8")  # strictly UTF-8
    report = json.loads(printed)
    assert report["state_dir"] == str(state)
    assert any(str(state) in finding["message"] for finding in report["findings"])
    assert "mémoire" in printed and "\\u00e9" not in printed
    assert "\u202e" not in printed and "\\u202e" in printed


def test_doctor_escapes_a_path_byte_that_is_not_utf8(tmp_path: Path) -> None:
    state = Path(os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9-\xc3\xa9t\xc3\xa9"))  # a Latin-1 byte, then UTF-8
    state.mkdir()
    out = meta_memory_cli("doctor", "--state-dir", str(state))
    assert out.returncode == 0, out.stderr
    printed = out.stdout.decode("utf-8")  # the stray byte does not reach the output as it is
    assert json.loads(printed)["state_dir"] == str(state)
    assert "caf\\udce9-été" in printed

"""What ``meta-memory import`` prints of the lines it downgraded or refused: each line while there are
few; past ``LISTED_LINES``, a count per reason with the first line numbers of each, every line with
``--verbose``, and always every line in ``--json``. Driven through the ``meta-memory`` command."""

from __future__ import annotations

import json
import re
from pathlib import Path

from meta_memory.portability.cli import FIRST_LINES, LISTED_LINES
from portability.test_round_trip import ID, handle_on, mm

N = 40


def _foreign_export(tmp_path: Path, n: int) -> Path:
    """An export of ``n`` records signed with a key the importing installation does not know."""
    src, dump = tmp_path / "src", tmp_path / "memory.jsonl"
    with handle_on(src, None) as h:
        h.agent(ID).remember_batch([{"title": f"Note {i}", "body": f"Body number {i}."} for i in range(n)])
        h.memory_index("office", "location", "knowledge_graph", fact="Floor 3")
    done = mm("export", "--state-dir", str(src), "-o", str(dump), "--key-file", str(tmp_path / "elsewhere.key"))
    assert done.returncode == 0, done.stderr
    return dump


def test_many_downgraded_lines_are_counted_by_reason(tmp_path: Path) -> None:
    dump = _foreign_export(tmp_path, N)
    out = mm("import", str(dump), "--state-dir", str(tmp_path / "dst"), "--quiet")
    said = out.stdout.decode()
    assert out.returncode == 1, out.stderr  # the ledger line of an unverified file is refused
    assert "file NOT verified" in said and "downgraded line " not in said
    lines = said.splitlines()
    assert len(lines) < 12, said
    assert f"downgraded: {N} lines, by reason (--verbose names each line):" in lines
    reasons = [line for line in lines if line.startswith("  ")]
    assert reasons and all(re.search(r"^  \d+ lines?: .+ \(lines? [\d, …]+\)$", line) for line in reasons), said
    author = next(line for line in reasons if "author " in line)
    assert author.startswith(f"  {N} lines: author ") and "'…'" in author  # the identity folded: one reason
    assert author.endswith("(lines " + ", ".join(str(n) for n in range(2, 2 + FIRST_LINES)) + ", …)")
    refused = lines.index("refused: 1 line, by reason (--verbose names each line):")
    assert "a ledger line from an unverified file (pass --allow-ledger to index it) (line " in lines[refused + 1]

    again = mm("import", str(dump), "--state-dir", str(tmp_path / "dst2"), "--quiet", "--verbose")
    every = again.stdout.decode().splitlines()
    assert len([line for line in every if line.startswith("downgraded line ")]) == N
    assert len([line for line in every if line.startswith("refused line ")]) == 1

    report = json.loads(mm("import", str(dump), "--state-dir", str(tmp_path / "dst3"), "--json").stdout)
    assert len(report["downgraded"]) == N and len(report["refused"]) == 1


def test_a_few_lines_are_still_named_one_by_one(tmp_path: Path) -> None:
    dump = _foreign_export(tmp_path, LISTED_LINES - 1)
    said = mm("import", str(dump), "--state-dir", str(tmp_path / "dst"), "--quiet").stdout.decode()
    assert said.count("downgraded line ") == LISTED_LINES - 1 and "refused line " in said
    assert "by reason" not in said

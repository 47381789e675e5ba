"""A record line holding a member its encoding does not define, at any depth, refuses the file by line
number naming that member, before anything is written (``meta-memory import``, fail closed): an import
file is untrusted, and a member dropped silently could be one the writer meant to matter. A real export
imports whole; ``metadata`` keeps keys of the application's choosing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.portability.format import unknown_record_member

ID = "lead:main"
AUTHOR = {"author": "application"}


def mm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ})


def _record(memory_id: str, **over: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "id": memory_id, "scope": {"scope": "identity", "realm": "default", "identity": ID}, "kind": "fact",
        "title": f"Imported {memory_id}", "description": "", "body": f"an ordinary note {memory_id}", "tags": [],
        "provenance": {"evidence": [], "author": AUTHOR}, "trust": "agent_observed",
        "status": {"status": "active"}, "derived_from": [], "created_at_ms": 1_700_000_000_000,
        "updated_at_ms": 1_700_000_000_000, "usage": {}, "ever_quarantined": False,
        "metadata": {"any key": {"the app's": "own"}},
    }
    rec.update(over)
    return {"type": "record", "realm": "default", "record": rec, "tombstoned_at_ms": None, "rank_set_at_ms": None}


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    header = {"type": "header", "format": "meta-memory-export", "version": 1, "exported_at_ms": 1,
              "realms": ["default"]}
    path.write_text("\n".join(json.dumps(x) for x in [header, *records]) + "\n", encoding="utf-8")
    return path


UNKNOWN = {
    "record.owner": {"owner": "mallory"},
    "record.scope.mob": {"scope": {"scope": "identity", "realm": "default", "identity": ID, "mob": "crew"}},
    "record.status.by": {"status": {"status": "active", "by": "mem-x"}},
    "record.usage.shared": {"usage": {"injected_count": 1, "shared": True}},
    "record.provenance.signed_by": {"provenance": {"evidence": [], "author": AUTHOR, "signed_by": "ops"}},
    "record.provenance.author.team": {"provenance": {"evidence": [], "author": {"author": "application", "team": "x"}}},
    "record.provenance.evidence.0.note": {"provenance": {"evidence": [{"session_id": "s", "note": "n"}],
                                                         "author": AUTHOR}},
    "record.provenance.verification.by": {"provenance": {"evidence": [], "author": AUTHOR,
                                                         "verification": {"checked": "ok", "evidence": [], "by": "me"}}},
    "record.provenance.imported_from.url": {"provenance": {"evidence": [], "author": AUTHOR, "imported_from": {
        "system": "mem0", "source_id": "1", "url": "http://x"}}},
}


@pytest.mark.parametrize("member", sorted(UNKNOWN))
def test_an_unknown_member_refuses_the_file_by_line_naming_it(tmp_path: Path, member: str) -> None:
    dump = _write(tmp_path / "x.jsonl", [_record("mem-ok-1"), _record("mem-ok-2"), _record("mem-bad", **UNKNOWN[member])])
    state = tmp_path / "dst"
    out = mm("import", str(dump), "--state-dir", str(state))
    assert out.returncode == 1, out.stdout + out.stderr
    assert "line 4" in out.stderr and f'unknown member "{member}"' in out.stderr, out.stderr
    # nothing written: the refusal came before the first line landed
    state.mkdir(exist_ok=True)
    listed = mm("list", "--identity", ID, "--json", "--state-dir", str(state))
    assert listed.returncode == 0 and json.loads(listed.stdout) == [], listed.stderr


def test_a_secret_in_an_unknown_member_name_is_not_repeated(tmp_path: Path) -> None:
    key = "AKIAIOSFODNN7EXAMPLE"
    dump = _write(tmp_path / "x.jsonl", [_record("mem-bad", **{f"aws {key}": 1})])
    out = mm("import", str(dump), "--state-dir", str(tmp_path / "dst"))
    assert out.returncode == 1 and "line 2" in out.stderr and "unknown member whose name holds a secret" in out.stderr
    assert key not in out.stderr + out.stdout


def test_a_real_export_imports_whole(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    made = mm("remember", "Trip", "Flight to Lisbon", "--identity", ID, "--state-dir", str(src), "--metadata",
              '{"$not_a_key_here": 1}')
    assert made.returncode == 1  # metadata's own rule, not an unknown member
    for title in ("Trip", "Diet"):
        assert mm("remember", title, f"{title} body", "--identity", ID, "--state-dir", str(src), "--tag", "t",
                  "--metadata", '{"project": "apollo"}').returncode == 0
    dump = tmp_path / "out.jsonl"
    assert mm("export", "--state-dir", str(src), "-o", str(dump)).returncode == 0
    done = mm("import", str(dump), "--state-dir", str(dst))
    assert done.returncode == 0, done.stderr
    listed = json.loads(mm("list", "--identity", ID, "--json", "--state-dir", str(dst)).stdout)
    assert sorted(r["title"] for r in listed) == ["Diet", "Trip"]



@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=12), st.sampled_from(["record", "scope", "status", "usage", "provenance",
                                                          "author"]))
def test_any_added_name_is_caught_unless_the_encoding_defines_it(name: str, where: str) -> None:
    line = _record("mem-1")
    rec = line["record"]
    target = {"record": rec, "scope": rec["scope"], "status": rec["status"], "usage": rec["usage"],
              "provenance": rec["provenance"], "author": dict(AUTHOR)}[where]
    if where == "author":
        rec["provenance"] = {**rec["provenance"], "author": target}
    before = set(target)
    target[name] = 1
    found = unknown_record_member(rec)
    if name in before:
        assert found is None
    elif found is None:  # only a member the encoding defines may pass
        defined = {"record": {"id", "scope", "kind", "title", "description", "body", "tags", "provenance", "trust",
                              "status", "supersedes", "derived_from", "working_set_rank", "created_at_ms",
                              "updated_at_ms", "usage", "ever_quarantined", "expires_at_ms", "metadata"},
                   "scope": {"scope", "realm", "identity"}, "status": {"status"},
                   "usage": {"injected_count", "last_injected_at_ms", "explicit_recall_count", "last_recalled_at_ms",
                             "judged_useful_count", "last_useful_at_ms"},
                   "provenance": {"evidence", "author", "profile", "verification", "imported_from"},
                   "author": {"author", "identity", "run_id", "principal"}}[where]
        assert name in defined
    else:
        assert found.endswith("." + name)


def test_a_line_nested_too_deep_is_refused_by_line_not_with_a_traceback(tmp_path: Path) -> None:
    # a crafted export line whose arrays nest past the JSON reader's depth (about 1,000 levels, far
    # inside the 1 MiB line cap) is refused naming the line, as any line that is not JSON is
    dump = _write(tmp_path / "x.jsonl", [_record("mem-ok-1")])
    with dump.open("a", encoding="utf-8") as f:
        f.write('{"type": "record", "realm": "default", "record": ' + "[" * 5_000 + "]" * 5_000 + "}\n")
    state = tmp_path / "dst"
    out = mm("import", str(dump), "--state-dir", str(state))
    assert out.returncode == 1, out.stdout + out.stderr
    assert "Traceback" not in out.stderr and "line 3" in out.stderr and "nested too deep" in out.stderr, out.stderr
    state.mkdir(exist_ok=True)
    listed = mm("list", "--identity", ID, "--json", "--state-dir", str(state))
    assert listed.returncode == 0 and json.loads(listed.stdout) == [], listed.stderr

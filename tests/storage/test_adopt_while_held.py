"""``meta-memory storage-adopt-predecessor --apply`` on a state directory a runtime holds is refused, as a
second runtime is: the runtime keeps its own ledger in memory, so its next write would replace the adopted
file and lose every assertion in it. Nothing is renamed; once the runtime is closed the adoption goes
through and the next runtime reads the adopted assertions. Driven through the ``meta-memory`` command
beside an embedded SDK handle on the same directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from meta_memory import Meta
from meta_memory.storage import adopt_predecessor
from support import meta_memory_cli

PREDECESSOR = {
    "assertions": [{"assertion_id": "memory-assert-000009", "entity": "identity:ops", "topic": "deployment",
                    "store": "knowledge_graph", "fact": "Production deploys require approval.",
                    "metadata": None, "indexed_at_ms": 1_690_000_000_000}],
    "conflicts": [],
}


def test_adoption_is_refused_while_a_runtime_holds_the_directory(tmp_path: Path) -> None:
    state = tmp_path / "state"
    predecessor = state / "elephant-memory-state.json"
    with Meta.builder().persistent_state(state).build() as meta:
        predecessor.write_text(json.dumps(PREDECESSOR))  # brought in while the runtime runs
        held = meta_memory_cli("storage-adopt-predecessor", "--state-dir", str(state), "--apply")
        assert held.returncode == 1, (held.stdout, held.stderr)
        assert b"is already in use by another meta-memory runtime" in held.stderr, held.stderr
        assert b"no --url (import, storage-adopt-predecessor)" in held.stderr, held.stderr  # the advice names it
        assert predecessor.is_file() and not (state / "memory-ledger-state.json").exists()
        meta.memory_index("identity:ops", "release", fact="Releases ship on Tuesdays.")
    # the runtime's own write landed; adopting now meets it and is refused, the runtime's ledger kept
    after = meta_memory_cli("storage-adopt-predecessor", "--state-dir", str(state), "--apply")
    assert after.returncode == 1 and b"already exists beside" in after.stderr, after.stderr
    assert "Releases ship on Tuesdays." in (state / "memory-ledger-state.json").read_text()

    fresh = tmp_path / "fresh"
    with Meta.builder().persistent_state(fresh).build():
        (fresh / "elephant-memory-state.json").write_text(json.dumps(PREDECESSOR))
        assert meta_memory_cli("storage-adopt-predecessor", "--state-dir", str(fresh), "--apply").returncode == 1
    done = meta_memory_cli("storage-adopt-predecessor", "--state-dir", str(fresh), "--apply")
    assert done.returncode == 0, done.stderr
    with Meta.builder().persistent_state(fresh).build() as meta:
        facts = [a.fact for a in meta.memory_query("approval").assertions]
    assert facts == ["Production deploys require approval."]


def test_adoption_holds_the_directory_while_it_runs_even_with_no_lock_file(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A directory no runtime has opened yet has no ``meta-memory.lock``: adoption creates it and holds it for
    the whole adoption, so a runtime (another process) starting mid-adoption is refused naming the
    adoption's pid; after it the lock is free and the next runtime reads the adopted assertions."""
    import meta_memory.storage.adopt as adopt_module

    state = tmp_path / "state"
    state.mkdir()
    (state / "elephant-memory-state.json").write_text(json.dumps(PREDECESSOR))
    assert not (state / "meta-memory.lock").exists()
    starts: list[subprocess.CompletedProcess[bytes]] = []
    fsync_dir = adopt_module._fsync_dir

    def start_a_runtime_mid_adoption(directory: Path) -> None:
        starts.append(subprocess.run(
            [sys.executable, "-c", "import sys; from meta_memory import Meta; "
             "Meta.builder().persistent_state(sys.argv[1]).build().close()", str(state)],
            capture_output=True, timeout=120, env={**os.environ}))
        fsync_dir(directory)

    monkeypatch.setattr(adopt_module, "_fsync_dir", start_a_runtime_mid_adoption)
    report = adopt_predecessor(state, apply=True)
    assert report.action == "renamed"
    [start] = starts
    assert start.returncode != 0, "a runtime started while the adoption held the directory"
    assert f"is already in use by another meta-memory runtime (pid {os.getpid()})".encode() in start.stderr, start.stderr
    assert (state / "meta-memory.lock").is_file()
    with Meta.builder().persistent_state(state).build() as meta:  # released after the adoption
        facts = [a.fact for a in meta.memory_query("approval").assertions]
    assert facts == ["Production deploys require approval."]


def test_a_lock_file_that_is_a_symbolic_link_is_refused_and_nothing_renamed(tmp_path: Path) -> None:
    """Adoption never follows a symbolic link at the lock file's name (it would create or lock a file
    elsewhere): it exits 1 with one line naming the lock file, nothing renamed, no traceback."""
    state = tmp_path / "state"
    state.mkdir()
    (state / "elephant-memory-state.json").write_text(json.dumps(PREDECESSOR))
    elsewhere = tmp_path / "elsewhere.lock"
    (state / "meta-memory.lock").symlink_to(elsewhere)
    out = meta_memory_cli("storage-adopt-predecessor", "--state-dir", str(state), "--apply")
    assert out.returncode == 1, out.stderr
    assert out.stderr.startswith(b"meta-memory: ") and b"meta-memory.lock" in out.stderr, out.stderr
    assert b"Traceback" not in out.stderr
    assert (state / "elephant-memory-state.json").is_file() and not elsewhere.exists()

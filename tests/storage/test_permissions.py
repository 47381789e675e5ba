"""The state directory is the owner's alone: directories 0700, every file 0600, whatever the umask,
embedded and through a real gateway; files an older version left readable are tightened at start."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from meta_memory.config import parse_config
from meta_memory.runtime import Runtime
from meta_memory.server.gateway import Gateway
from support import realm_db, start_gateway

LEAD = "lead:main"


@pytest.fixture(params=[0o022, 0o000, 0o002])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def modes(state: Path) -> dict[str, int]:
    """Every path under ``state`` (and ``state`` itself) with its permission bits."""
    out = {".": stat.S_IMODE(state.stat().st_mode)}
    for path in state.rglob("*"):
        out[str(path.relative_to(state))] = stat.S_IMODE(path.lstat().st_mode)
    return out


def assert_owner_only(state: Path) -> dict[str, int]:
    found = modes(state)
    wrong = {name: oct(mode) for name, mode in found.items()
             if mode != (0o700 if (state / name).is_dir() else 0o600)}
    assert not wrong, wrong
    return found


def exercise(call) -> None:  # noqa: ANN001
    """Touch every durable slot: agent memory (two realms), the ledger, taint, the timeline."""
    call("meta/agent_memory/remember", {"identity": LEAD, "title": "Note", "body": "the body"})
    call("meta/agent_memory/remember", {"identity": LEAD, "realm": "hr", "title": "HR note", "body": "private"})
    call("meta/memory/index", {"entity": "identity:ops", "topic": "deployment", "fact": "green"})
    call("meta/session/note", {"identity": LEAD, "session_key": "s1"})
    call("meta/turn/tool_result", {"identity": LEAD, "session_key": "s1", "tool_name": "web_fetch"})
    call("meta/agent_memory/tool", {"identity": LEAD, "session_key": "s1",
                                    "arguments": {"action": "remember", "title": "From the web", "body": "maybe"}})


def test_embedded_runtime_creates_only_owner_only_files(tmp_path: Path, umask: int) -> None:
    state = tmp_path / "state"
    runtime = Runtime(parse_config({"memory": {"kind": "local_json"}}), state)
    try:
        gateway = Gateway.for_runtime(runtime)
        exercise(gateway.call)
        found = assert_owner_only(state)
    finally:
        runtime.close()
    names = set(found)
    assert {"memory-ledger-state.json", "meta-memory.lock", "events.sqlite3", "session-state.db",
            "agent-memory", *(f"agent-memory/{realm_db(state, r).name}" for r in ("default", "hr"))} <= names
    assert any(n.endswith("-wal") for n in names), names  # WAL files exist and are covered
    assert_owner_only(state)  # closing leaves nothing wider behind


def test_gateway_under_a_permissive_umask_creates_only_owner_only_files(tmp_path: Path) -> None:
    state = tmp_path / "state"
    old = os.umask(0)
    try:
        gw = start_gateway(state)
    finally:
        os.umask(old)
    try:
        exercise(gw.result)
        assert_owner_only(state)
    finally:
        gw.stop()
    assert_owner_only(state)


def test_files_an_older_version_left_readable_are_tightened_at_start(tmp_path: Path) -> None:
    state = tmp_path / "state"
    runtime = Runtime(parse_config({"memory": {"kind": "local_json"}}), state)
    try:
        exercise(Gateway.for_runtime(runtime).call)
    finally:
        runtime.close()
    for path in [state, *state.rglob("*")]:
        os.chmod(path, 0o777 if path.is_dir() else 0o666)
    runtime = Runtime(parse_config({"memory": {"kind": "local_json"}}), state)
    try:
        assert_owner_only(state)
    finally:
        runtime.close()


def test_a_wider_group_cannot_read_the_state_dir(tmp_path: Path) -> None:
    """What the modes mean for another local user: not even the names of realms are listable."""
    if os.geteuid() == 0:
        state = tmp_path / "state"
        Runtime(parse_config({"memory": {"kind": "local_json"}}), state).close()
        probe = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "ls", str(state)],
                               capture_output=True, text=True, check=False)
        if probe.returncode == 127 or "setpriv" in probe.stderr and "not found" in probe.stderr:
            pytest.skip("setpriv is not available")
        assert probe.returncode != 0 and "Permission denied" in probe.stderr
    else:
        pytest.skip("needs root to switch to another user")

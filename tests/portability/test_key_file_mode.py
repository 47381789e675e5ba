"""``--key-file`` refuses a key file its group or other users may write (they could put a key they know
in it and sign any file the import then trusts), naming the file, who may write it and the fix; the same
file made writable by its owner alone signs and verifies."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from meta_memory.cli import build_runtime
from meta_memory.sdk.handle import MetaHandle
from meta_memory.sdk.transport import EmbeddedTransport
from meta_memory.server.gateway import Gateway
from support import meta_memory_cli

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")


@pytest.mark.parametrize(("mode", "who"), [(0o620, "its group"), (0o602, "other users"),
                                          (0o666, "its group and other users")])
def test_a_key_file_others_may_write_is_refused(tmp_path: Path, mode: int, who: str) -> None:
    key = tmp_path / "moving.key"
    out = tmp_path / "dump.jsonl"
    with MetaHandle(EmbeddedTransport(Gateway.for_runtime(build_runtime(tmp_path / "src", None)))) as h:
        h.remember_agent_memory("lead:main", title="t", body="b")
    made = meta_memory_cli("export", "--state-dir", str(tmp_path / "src"), "-o", str(out), "--no-ledger",
                           "--key-file", str(key))
    assert made.returncode == 0, made.stderr
    key.chmod(mode)
    for args in (("export", "--state-dir", str(tmp_path / "src"), "-o", str(tmp_path / "again.jsonl"), "--no-ledger"),
                 ("import", str(out), "--state-dir", str(tmp_path / "dst"))):
        done = meta_memory_cli(*args, "--key-file", str(key))
        err = done.stderr.decode()
        assert done.returncode != 0, (args, err)
        assert f"{key}: the key file is writable by {who} (mode {mode:04o})" in err and "chmod go-w" in err, err
    assert not (tmp_path / "again.jsonl").exists() and not (tmp_path / "dst" / "agent-memory").exists()
    key.chmod(0o600)
    assert meta_memory_cli("import", str(out), "--state-dir", str(tmp_path / "dst"), "--quiet",
                           "--key-file", str(key)).returncode == 0

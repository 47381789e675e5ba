"""Why a state directory cannot be written: a read-only file system (EROFS) or no permission (EACCES).

The suite runs as root, for whom a ``chmod 0555`` directory stays writable, so the permission case is
simulated at the lowest level (``os.access``); the read-only mount is tested for real with a tmpfs
(tests/reliability/test_readiness.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from meta_memory.storage.disk import not_writable
from meta_memory.storage.layout import StorageLayout


def test_a_writable_directory_has_no_reason(tmp_path: Path) -> None:
    assert not_writable(tmp_path) is None


def test_no_write_permission_is_named_as_such_and_not_as_a_full_disk(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: False if mode & os.W_OK else real_access(path, mode))
    assert not_writable(tmp_path) == "no write permission for this user"
    report = StorageLayout(tmp_path).doctor(min_free_disk_mb=10**9)  # a floor no disk meets
    kinds = {f["kind"]: f for f in report["findings"]}
    assert "low_disk" not in kinds
    assert "is read-only (no write permission for this user)" in kinds["state_dir_read_only"]["message"]


@pytest.mark.skipif(not Path("/proc/self").is_dir() or os.statvfs("/proc").f_blocks != 0,
                    reason="needs a pseudo file system that reports no size (Linux /proc)")
def test_a_file_system_that_reports_no_size_is_not_called_a_full_disk() -> None:
    """A state directory under /proc (or a FUSE mount that reports 0 blocks) cannot be created, but its
    file system is no disk at all: before, the refusal said "the disk mounted at /proc (0 MiB free of 0 MiB)
    is full" and told the user to free space on it."""
    from support import meta_memory_cli

    state = "/proc/meta-memory-state"
    for args in (["remember", "Title", "Body", "--identity", "lead:main", "--state-dir", state],
                 ["serve", "--port", "0", "--state-dir", state]):
        out = meta_memory_cli(*args)
        said = out.stderr.decode()
        assert out.returncode == 1, said
        assert "cannot start" in said and state in said, said
        assert "is full" not in said and "Free space" not in said, said
        assert "Traceback" not in said, said

"""A restore never lands a second active copy of content its scope already holds, on SQLite and PostgreSQL.

An export line of an active record whose content an active record of the same scope already holds under
another id (or that an earlier line of the file lands) is skipped and counted present: exact-content
duplicates stay one active record, as ``remember`` keeps them. A line other lines link to (a chain, a
lineage) is landed as before, so nothing of the file's chains is broken.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .test_round_trip import ID, _record, _write_export, config_args, handle_on, mm


def _active(state: Path, config: Path | None) -> list[tuple[str, str]]:
    with handle_on(state, config) as h:
        listed = h.call("meta/agent_memory/list", {"identity": ID, "limit": 100})
    return sorted((r["memory_id"], r["body"]) for r in listed["records"])


def test_a_restored_line_whose_content_is_already_active_is_present_not_a_second_copy(
        tmp_path: Path, configs: Any) -> None:
    _, config = configs
    dst = tmp_path / "dst"
    with handle_on(dst, config) as h:
        kept = h.remember_agent_memory(ID, title="Imported", body="the kettle is in the cupboard").memory_id
    dump = _write_export(tmp_path / "x.jsonl", [
        _record("mem-dup", "the kettle is in the cupboard"),
        _record("mem-new-1", "the mugs are on the shelf"),
        _record("mem-new-2", "the mugs are on the shelf"),  # the same content twice in the file
        _record("mem-fresh", "the spoons are in the drawer"),
    ])
    out = mm("import", str(dump), "--state-dir", str(dst), *config_args(config), "--json")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["skipped_present"] == 2 and summary["created"] == {"default": 2}, summary
    assert _active(dst, config) == sorted([(kept, "the kettle is in the cupboard"),
                                           ("mem-new-1", "the mugs are on the shelf"),
                                           ("mem-fresh", "the spoons are in the drawer")])
    # a second import of the same file writes nothing
    again = json.loads(mm("import", str(dump), "--state-dir", str(dst), *config_args(config), "--json").stdout)
    assert again["created"] == {} and again["skipped_present"] == 4, again


def test_a_line_the_file_links_to_is_landed_as_before(tmp_path: Path, configs: Any) -> None:
    """A signed export's chain head whose content the target already holds is landed with its chain."""
    src_cfg, dst_cfg = configs
    src, dst = tmp_path / "src", tmp_path / "dst"
    with handle_on(src, src_cfg) as h:
        v1 = h.remember_agent_memory(ID, title="Standup", body="standup is on monday").memory_id
        v2 = h.update_agent_memory(ID, v1, title="Standup", body="standup is on tuesday").memory_id
    dump, key = tmp_path / "memory.jsonl", tmp_path / "moving.key"
    assert mm("export", "--state-dir", str(src), *config_args(src_cfg), "-o", str(dump),
              "--key-file", str(key)).returncode == 0
    with handle_on(dst, dst_cfg) as h:
        h.remember_agent_memory(ID, title="Standup", body="standup is on tuesday")
    out = mm("import", str(dump), "--state-dir", str(dst), *config_args(dst_cfg), "--json", "--key-file", str(key))
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["verified"] is True and summary["created"] == {"default": 2}, summary
    assert v2 in [mid for mid, _ in _active(dst, dst_cfg)]

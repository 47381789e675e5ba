"""A restore never lands a second active copy of content its scope already holds, on SQLite and PostgreSQL.

An export line of an active record whose content an active record of the same scope already holds under
another id (or that an earlier line of the file lands) is skipped and counted present: exact-content
duplicates stay one active record, as ``remember`` keeps them. A line other lines link to (a chain's
head, a record others derive from) lands so nothing of the file's chains is broken, but as a tombstone;
the report names every such line and the active record it duplicates.
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


def _export_chain(tmp_path: Path, src_cfg: Path | None) -> tuple[str, str, Path, Path]:
    """A signed export of a two-version chain: (v1 id, v2 id, the file, its key file)."""
    src = tmp_path / "src"
    with handle_on(src, src_cfg) as h:
        v1 = h.remember_agent_memory(ID, title="Standup", body="standup is on monday").memory_id
        v2 = h.update_agent_memory(ID, v1, title="Standup", body="standup is on tuesday").memory_id
    dump, key = tmp_path / "memory.jsonl", tmp_path / "moving.key"
    assert mm("export", "--state-dir", str(src), *config_args(src_cfg), "-o", str(dump),
              "--key-file", str(key)).returncode == 0
    return v1, v2, dump, key


def test_a_chain_whose_head_is_already_active_lands_whole_with_its_head_tombstoned(
        tmp_path: Path, configs: Any) -> None:
    """A signed export's chain head whose content the target already holds active under another id lands
    with its chain (nothing of the chain broken) as a tombstone, never as a second active copy; the
    report names the line, the record it duplicates and what became of it."""
    src_cfg, dst_cfg = configs
    v1, v2, dump, key = _export_chain(tmp_path, src_cfg)
    dst = tmp_path / "dst"
    with handle_on(dst, dst_cfg) as h:
        kept = h.remember_agent_memory(ID, title="Standup", body="standup is on tuesday").memory_id
    out = mm("import", str(dump), "--state-dir", str(dst), *config_args(dst_cfg), "--json", "--key-file", str(key))
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    # exactly one active record holds the content: the one the scope had
    assert _active(dst, dst_cfg) == [(kept, "standup is on tuesday")]
    assert summary["verified"] is True and summary["created"] == {"default": 2}, summary
    assert [(d["memory_id"], d["duplicate_of"], d["outcome"]) for d in summary["duplicates"]] == [
        (v2, kept, "tombstoned")], summary
    with handle_on(dst, dst_cfg) as h:  # the chain is whole: v1 superseded by v2, v2 a tombstone
        versions = h.history_agent_memory(ID, v1).versions
    assert [(v.memory_id, v.status) for v in versions] == [(v1, "superseded"), (v2, "tombstoned")], versions
    # the import is idempotent: a second run writes nothing and lands no active copy
    again = mm("import", str(dump), "--state-dir", str(dst), *config_args(dst_cfg), "--key-file", str(key))
    assert again.returncode == 0, again.stderr
    assert "imported 0 records (2 already present, 0 conflicting ids" in again.stdout.decode(), again.stdout
    assert _active(dst, dst_cfg) == [(kept, "standup is on tuesday")]


def test_the_text_report_names_the_head_landed_tombstoned(tmp_path: Path) -> None:
    _, v2, dump, key = _export_chain(tmp_path, None)
    dst = tmp_path / "dst"
    with handle_on(dst, None) as h:
        kept = h.remember_agent_memory(ID, title="Standup", body="standup is on tuesday").memory_id
    out = mm("import", str(dump), "--state-dir", str(dst), "--key-file", str(key))
    assert out.returncode == 0, out.stderr
    text = out.stdout.decode()
    assert "1 duplicate of active records (1 landed tombstoned)" in text, text
    assert f"({v2}): its content is active as '{kept}': landed tombstoned" in text, text

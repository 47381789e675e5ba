"""A restored successor of a stored active record leaves one active head, on SQLite and PostgreSQL.

A target restored from an older export holds a record active; a newer export of the same installation holds
that record superseded and its successor. Importing the newer file lands the successor, and the stored
record becomes superseded by it in the same transaction (an audit row of the import names it), as an
update would leave it: a supersede chain has one active head. A tag merge's version (the same content,
more tags) takes over its stored prior rather than landing as a duplicate of it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .test_round_trip import ID, config_args, handle_on, mm


def _export(src: Path, cfg: Path | None, dump: Path, key: Path) -> Path:
    out = mm("export", "--state-dir", str(src), *config_args(cfg), "-o", str(dump), "--key-file", str(key))
    assert out.returncode == 0, out.stderr
    return dump


def _import(dump: Path, dst: Path, cfg: Path | None, key: Path) -> dict[str, Any]:
    out = mm("import", str(dump), "--state-dir", str(dst), *config_args(cfg), "--json", "--key-file", str(key))
    assert out.returncode == 0, out.stderr
    summary: dict[str, Any] = json.loads(out.stdout)
    return summary


def _active(state: Path, cfg: Path | None) -> list[tuple[str, str, list[str]]]:
    with handle_on(state, cfg) as h:
        listed = h.call("meta/agent_memory/list", {"identity": ID, "limit": 100})
    return sorted((r["memory_id"], r["body"], sorted(r["tags"])) for r in listed["records"])


def test_a_restored_successor_supersedes_the_stored_active_record_it_names(tmp_path: Path, configs: Any) -> None:
    src_cfg, dst_cfg = configs
    src, dst, key = tmp_path / "src", tmp_path / "dst", tmp_path / "moving.key"
    with handle_on(src, src_cfg) as h:
        v1 = h.remember_agent_memory(ID, title="Standup", body="standup is on monday").memory_id
    older = _export(src, src_cfg, tmp_path / "older.jsonl", key)
    with handle_on(src, src_cfg) as h:
        v2 = h.update_agent_memory(ID, v1, title="Standup", body="standup is on tuesday").memory_id
    newer = _export(src, src_cfg, tmp_path / "newer.jsonl", key)

    assert _import(older, dst, dst_cfg, key)["created"] == {"default": 1}
    summary = _import(newer, dst, dst_cfg, key)
    assert summary["created"] == {"default": 1} and summary["skipped_present"] == 1, summary
    assert _active(dst, dst_cfg) == [(v2, "standup is on tuesday", [])]  # one active head
    with handle_on(dst, dst_cfg) as h:
        versions = h.history_agent_memory(ID, v1).versions
    assert [(v.memory_id, v.status) for v in versions] == [(v1, "superseded"), (v2, "active")], versions
    assert versions[0].changes[-1].change == "import", versions[0].changes  # the import's audit row
    # a second run changes nothing
    again = _import(newer, dst, dst_cfg, key)
    assert again["created"] == {} and again["skipped_present"] == 2, again
    assert _active(dst, dst_cfg) == [(v2, "standup is on tuesday", [])]


def test_a_restored_tag_merge_takes_over_its_stored_prior(tmp_path: Path, configs: Any) -> None:
    src_cfg, dst_cfg = configs
    src, dst, key = tmp_path / "src", tmp_path / "dst", tmp_path / "moving.key"
    with handle_on(src, src_cfg) as h:
        v1 = h.remember_agent_memory(ID, title="Kettle", body="the kettle is in the cupboard", tags=["kitchen"]).memory_id
    older = _export(src, src_cfg, tmp_path / "older.jsonl", key)
    with handle_on(src, src_cfg) as h:  # the same content with a new tag: a version carrying both tags
        v2 = h.remember_agent_memory(ID, title="Kettle", body="the kettle is in the cupboard", tags=["home"]).memory_id
    assert v2 != v1
    newer = _export(src, src_cfg, tmp_path / "newer.jsonl", key)

    _import(older, dst, dst_cfg, key)
    summary = _import(newer, dst, dst_cfg, key)
    assert summary["duplicates"] == [] and summary["created"] == {"default": 1}, summary
    assert _active(dst, dst_cfg) == [(v2, "the kettle is in the cupboard", ["home", "kitchen"])]

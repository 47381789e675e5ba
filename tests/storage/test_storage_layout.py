"""Storage layout: paths, start-up refusals, realm file names, slots and doctor
(seed: Architecture; spec README; reference §2B Layout, §2C encoding)."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from meta_memory.errors import StartupError
from meta_memory.storage import RealmPathError, StorageLayout, decode_path_segment, encode_path_segment

SAFE = set(string.ascii_letters + string.digits + "-_%")


def test_ledger_paths(tmp_path: Path) -> None:
    layout = StorageLayout(tmp_path)
    assert layout.ledger_path == tmp_path / "memory-ledger-state.json"
    assert layout.ledger_stage_path == tmp_path / "memory-ledger-state.tmp"


def test_encoding_examples() -> None:
    assert encode_path_segment("default") == "default"
    assert encode_path_segment("team-a_1") == "team-a_1"
    assert encode_path_segment("Team-A_1") == "%54eam-%41_1"  # upper-case letters escaped: no case-only twins
    assert encode_path_segment("") == "_"
    assert encode_path_segment("..") == "%2E%2E"
    assert encode_path_segment("a/b\\c") == "a%2Fb%5Cc"
    assert encode_path_segment("nul\x00") == "nul%00"
    assert encode_path_segment("ü") == "%C3%BC"
    assert decode_path_segment("%c3%bc") == "ü"
    assert decode_path_segment("100%") == "100%"
    assert decode_path_segment("%zz%4") == "%zz%4"


@given(st.text())
@example("..")
@example("../../etc/passwd")
@example("..\\..\\x")
@example("/abs")
@example("\x00")
@example("\ud800")
def test_encoding_is_safe_and_reversible(realm: str) -> None:
    encoded = encode_path_segment(realm)
    assert encoded and set(encoded) <= SAFE
    if realm:
        assert decode_path_segment(encoded) == realm


@given(st.text(max_size=120))
@example("..")
@example(".")
@example("a/../../b")
@example("C:\\Windows")
@example("\x00")
def test_realm_db_path_never_escapes_the_root(tmp_path_factory: pytest.TempPathFactory, realm: str) -> None:
    state = tmp_path_factory.getbasetemp() / "layout-prop"
    layout = StorageLayout(state)
    root = layout.agent_memory_root
    try:
        path = layout.realm_db_path(realm)
    except RealmPathError:
        assert len(encode_path_segment(realm)) > 255 - len(".sqlite3") - len("-journal")
        return
    assert path.parent == root
    assert path.resolve().parent == root.resolve()
    assert path.name.endswith(".sqlite3")
    assert decode_path_segment(path.name[: -len(".sqlite3")]) == (realm or "_")


def test_realm_name_too_long_for_a_file_name(tmp_path: Path) -> None:
    layout = StorageLayout(tmp_path)
    assert layout.realm_db_path("r" * 239).name == "r" * 239 + ".sqlite3"
    assert layout.realm_db_path("ü" * 39).name == "%C3%BC" * 39 + ".sqlite3"
    for realm in ("r" * 240, "r" * 247, "ü" * 40):  # the database fits, its -journal/-wal/-shm would not
        with pytest.raises(RealmPathError, match="at most 239 bytes once encoded as a file name"):
            layout.realm_db_path(realm)


_NAME_CHARS = st.characters(min_codepoint=0x21, max_codepoint=0x2FFFF, exclude_categories=("Cs", "Co", "Cn", "Cf"))


@given(st.text(_NAME_CHARS, min_size=1, max_size=260) | st.integers(200, 260).map(lambda n: "r" * n))
@example("a" * 239)
@example("a" * 240)
@example("a" * 245)
@example("é" * 39)
@example("é" * 40)
def test_a_realm_name_is_accepted_exactly_when_every_file_of_its_database_fits(realm: str) -> None:
    """The realm-name rule and the file names agree: a name passes parse_realm (when it breaks no other
    rule) exactly when its database and the -journal, -wal and -shm beside it fit 255 bytes."""
    import unicodedata

    from meta_memory.identity import parse_realm
    from meta_memory.storage.layout import encoded_size

    stem = encode_path_segment(realm)
    assert encoded_size(realm) == len(stem)
    fits = all(len(f"{stem}.sqlite3{side}".encode()) <= 255 for side in ("", "-journal", "-wal", "-shm"))
    try:
        parse_realm(realm)
    except ValueError as exc:
        other_rule = realm != realm.strip() or not unicodedata.is_normalized("NFC", realm) or "at most" not in str(exc)
        assert other_rule or not fits, (realm, exc)
        if "at most" in str(exc):
            assert "239 bytes once encoded as a file name" in str(exc)
    else:
        assert fits


def test_predecessor_ledger_refuses_startup_naming_dir_and_command(tmp_path: Path) -> None:
    state = tmp_path / "my state"
    state.mkdir()
    StorageLayout(state).check_startup()
    (state / "elephant-memory-state.json").write_text("{}")
    with pytest.raises(StartupError) as info:
        StorageLayout(state).check_startup()
    message = str(info.value)
    assert str(state) in message
    assert f"meta-memory storage-adopt-predecessor --state-dir '{state}' --apply" in message


def test_root_resolution(tmp_path: Path) -> None:
    layout = StorageLayout(tmp_path)
    assert layout.resolve_agent_memory_root().resolution == "canonical"
    (tmp_path / "agent-memory-sqlite").mkdir()
    legacy = layout.resolve_agent_memory_root()
    assert (legacy.path, legacy.resolution) == (tmp_path / "agent-memory-sqlite", "legacy")
    assert layout.realm_db_path("default") == tmp_path / "agent-memory-sqlite" / "default.sqlite3"
    (tmp_path / "agent-memory-sqlite").rmdir()
    assert layout.ensure_agent_memory_root() == tmp_path / "agent-memory"
    assert layout.resolve_agent_memory_root().resolution == "canonical"


def test_twins_refuse_startup(tmp_path: Path) -> None:
    (tmp_path / "agent-memory").mkdir()
    (tmp_path / "agent-memory-sqlite").mkdir()
    layout = StorageLayout(tmp_path)
    with pytest.raises(StartupError) as info:
        layout.check_startup()
    message = str(info.value)
    assert "file-name twins" in message
    assert str(tmp_path / "agent-memory") in message and str(tmp_path / "agent-memory-sqlite") in message
    assert "meta/storage/doctor" in message
    with pytest.raises(StartupError):
        layout.realm_db_path("default")


def test_list_realms_decodes_and_sorts(tmp_path: Path) -> None:
    layout = StorageLayout(tmp_path)
    assert layout.list_realms() == []
    root = layout.ensure_agent_memory_root()
    for realm in ("zeta", "family/home", "alpha", "ü"):
        layout.realm_db_path(realm).write_bytes(b"")
    (root / "alpha.sqlite3-wal").write_bytes(b"")
    (root / "notes.md").write_text("x")
    (root / "alpha").mkdir()
    assert layout.list_realms() == ["alpha", "family/home", "zeta", "ü"]


def test_slots(tmp_path: Path) -> None:
    layout = StorageLayout(tmp_path)
    layout.ensure_agent_memory_root()
    layout.realm_db_path("family").write_bytes(b"")
    slots = layout.slots()
    assert [(s["slot"], s["durability"], s["resolution"]) for s in slots] == [
        ("ledger", "durable-fsync-replace", "canonical"),
        ("agent-memory-root", "directory", "canonical"),
        ("realm:family", "sqlite-wal", "derived"),
    ]
    assert slots[2]["path"] == str(tmp_path / "agent-memory" / "family.sqlite3")


def test_doctor_on_a_clean_directory(tmp_path: Path) -> None:
    report = StorageLayout(tmp_path).doctor()
    assert report["ok"] is True
    assert report["findings"] == []
    assert report["state_dir"] == str(tmp_path)


def test_doctor_reports_every_problem_with_a_fix(tmp_path: Path) -> None:
    (tmp_path / "elephant-memory-state.json").write_text("{}")
    (tmp_path / "memory-ledger-state.tmp").write_text("{")
    (tmp_path / "agent-memory").mkdir()
    (tmp_path / "agent-memory-sqlite").mkdir()
    (tmp_path / "agent-memory" / "%2e%2e.sqlite3").write_bytes(b"")
    (tmp_path / "agent-memory-sqlite" / "legacy.sqlite3").write_bytes(b"")
    report = StorageLayout(tmp_path).doctor()
    kinds = {f["kind"]: f for f in report["findings"]}
    assert set(kinds) == {"predecessor_ledger", "file_name_twins", "leftover_stage", "non_canonical_realm_file"}
    assert report["ok"] is False
    assert all(f["fix"] for f in report["findings"])
    assert "meta-memory storage-adopt-predecessor --state-dir" in kinds["predecessor_ledger"]["fix"]  # the command
    assert "meta_gateway" not in kinds["predecessor_ledger"]["fix"]  # as the docs and --help name it
    assert kinds["non_canonical_realm_file"]["fix"].startswith("rename it to %2E%2E.sqlite3")
    roots = [s for s in report["slots"] if s["slot"] == "agent-memory-root"]
    assert [r["resolution"] for r in roots] == ["canonical", "legacy"]
    assert {s["slot"] for s in report["slots"]} >= {"realm:..", "realm:legacy"}


def test_doctor_warnings_do_not_block(tmp_path: Path) -> None:
    (tmp_path / "memory-ledger-state.tmp").write_text("{")
    report = StorageLayout(tmp_path).doctor()
    assert report["ok"] is True
    assert [f["kind"] for f in report["findings"]] == ["leftover_stage"]

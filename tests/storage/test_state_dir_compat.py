"""A state directory written before opens unchanged: the file names are the layout's (hard-coded here, so a
change of encoding or placement fails), and a reopened runtime, on either spelling of the agent-memory root,
reads back every realm's records and the ledger."""

from __future__ import annotations

from pathlib import Path

from meta_memory.sdk import Meta

REALMS = {"default": "default.sqlite3", "café/ü": "caf%C3%A9%2F%C3%BC.sqlite3", "team-a_1": "team-a_1.sqlite3",
          "Team-B": "%54eam-%42.sqlite3"}
IDENTITY = "agent:writer"


def _write(state: Path) -> None:
    with Meta.builder().persistent_state(state).memory().build() as handle:
        for realm in REALMS:
            handle.remember_agent_memory(IDENTITY, title=f"Note in {realm}", body=f"Kept in realm {realm}.",
                                         realm=realm)
        handle.memory_index("identity:ops", "deploys", fact="Deploys need two approvals.")


def _read(state: Path) -> None:
    with Meta.builder().persistent_state(state).memory().build() as handle:
        for realm in REALMS:
            records = handle.recall_agent_memory(IDENTITY, realm=realm, selection="always")
            assert [r.title for r in records] == [f"Note in {realm}"]
        facts = [a.fact for a in handle.memory_query().assertions]
        assert facts == ["Deploys need two approvals."]


def test_the_layout_is_the_documented_one_and_reopens(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _write(state)
    assert (state / "memory-ledger-state.json").is_file()
    assert sorted(p.name for p in (state / "agent-memory").glob("*.sqlite3")) == sorted(REALMS.values())
    _read(state)


def test_the_legacy_root_spelling_still_opens(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _write(state)
    (state / "agent-memory").rename(state / "agent-memory-sqlite")
    _read(state)
    assert not (state / "agent-memory").exists()
    assert sorted(p.name for p in (state / "agent-memory-sqlite").glob("*.sqlite3")) == sorted(REALMS.values())

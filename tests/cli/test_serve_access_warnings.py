"""``meta-memory serve`` warns at start of an ``[access]`` rule that can never apply (a grant of an action
judged unscoped only, such as ``operator.status``, scoped with ``on``) and of a rule or roster entry naming
an identity or realm that may imitate another (``lead:maіn`` with a Cyrillic ``і``); it still starts, and
a clean section starts with no such warning. Driven as an operator would: the installed command."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from support import access_toml, start_gateway, write_config

pytestmark = pytest.mark.gateway

FAKE = "lead:ma\u0456n"  # CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I


def _warnings(state: Path, config: Path) -> list[str]:
    """The start warnings naming an ``access.`` entry (logged before the gateway serves: once it answers,
    they have been written; the pipe's reader is given a moment to take them)."""
    with start_gateway(state, config=config) as gw:
        assert gw.result("meta/capabilities") is not None  # it serves
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any("console: " in line for line in gw.proc.log_tail):
            time.sleep(0.05)
        time.sleep(0.5)
        return [line for line in gw.proc.log_tail if "access." in line]


def test_a_rule_that_can_never_apply_and_a_lookalike_name_are_warned_of(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "access.toml", access_toml(
        {"t-ann-0001": "ann"},
        [("ann", "operator.status", {"realm": "*"}), ("ann", "agent.memory.read", {"identity": FAKE}),
         ("ann", "agent.memory.read")]))
    lines = _warnings(tmp_path / "state", cfg)
    assert len(lines) == 2, lines
    assert 'access.grants[0] (operator.status on realm "*") can never apply' in lines[0], lines
    assert (f'access.grants[1] (agent.memory.read on identity "{FAKE}") names identity \'{FAKE}\', which mixes '
            "Latin and Cyrillic letters, reads as lead:main") in lines[1], lines


def test_a_clean_access_section_starts_without_them(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "access.toml", access_toml(
        {"t-ann-0001": "ann"}, [("ann", "operator.status"), ("ann", "agent.memory.read", {"identity": "lead:main"})]))
    assert _warnings(tmp_path / "state", cfg) == []


def test_the_shared_key_warning_needs_access_several_principals_and_the_default() -> None:
    from meta_memory.access.config import AccessConfig, TokenEntry
    from meta_memory.access.notes import access_warnings

    def tokens(*who: str) -> tuple[TokenEntry, ...]:
        return tuple(TokenEntry(sha256=f"{i:064x}", principal=p) for i, p in enumerate(who))

    two = AccessConfig(enabled=True, tokens=tokens("alice", "bob"))
    said = access_warnings(two, "any")
    assert len(said) == 1 and 'shared_key_taint = "any" with several principals' in said[0]
    assert access_warnings(two, "managed") == [] and access_warnings(two, None) == []  # managed; memory off
    assert access_warnings(AccessConfig(enabled=True, tokens=tokens("alice", "alice")), "any") == []
    assert access_warnings(AccessConfig(enabled=False, tokens=tokens("alice", "bob")), "any") == []


def test_an_identity_spelled_in_two_cases_is_warned_of(tmp_path: Path) -> None:
    """Names are case-sensitive: a read granted on ``lead:main`` and a write on ``Lead:Main`` are rules of
    two identities, which a reader of the file takes for one. Nothing is folded; the start says so."""
    cfg = write_config(tmp_path / "access.toml", access_toml(
        {"t-ann-0001": "ann"},
        [("ann", "agent.memory.read", {"identity": "lead:main"}),
         ("ann", "agent.memory.write", {"identity": "Lead:Main"})]))
    lines = _warnings(tmp_path / "state", cfg)
    assert len(lines) == 1, lines
    assert ("access names identity 'lead:main' (access.grants[0]), 'Lead:Main' (access.grants[1]), which differ "
            "only in case: identity names are case-sensitive, so these are 2 identities") in lines[0], lines

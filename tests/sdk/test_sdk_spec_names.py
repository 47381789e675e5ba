"""The spec's last names on the Python SDK: ``MobHandle.memory_index(...)`` and the builder's
``roster_provider(...)`` (the host's roster of identities, roles and labels, as ``[[access.roster]]``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from meta_memory.errors import AccessDenied, ConfigError
from meta_memory.sdk import AsyncMetaHandle, AsyncMobHandle, Meta, MetaHandle, MobHandle, memory

#: Anyone may read identities whose roster role is "support" (in the default realm), nothing else.
SUPPORT_READS = {
    "enabled": True,
    "grants": [{"action": action, "who": {"anyone": True}, "on": {"role": "support"}}
               for action in ("agent.memory.read", "agent.view", "agent.memory.write")],
}


def test_mob_handle_is_the_handle_and_memory_index_appends_to_the_ledger(tmp_path: Path) -> None:
    assert MobHandle is MetaHandle and AsyncMobHandle is AsyncMetaHandle
    with Meta.builder().persistent_state(tmp_path / "s").memory(memory.local_json()).build() as handle:
        assert isinstance(handle, MobHandle)
        out = handle.memory_index("identity:ops", "deployment", fact="deploys on Fridays")
        assert out.assertion_id is not None
        assert [a.fact for a in handle.memory_query(entity="identity:ops").assertions] == ["deploys on Fridays"]


@dataclass
class Member:
    identity: str
    roles: tuple[str, ...] = ()
    labels: tuple[str, ...] = field(default_factory=tuple)
    realm: str | None = None


def _app_roster() -> list[object]:
    return [{"identity": "support:desk", "roles": ["support"]}, Member("support:night", roles=("support",)),
            Member("support:hr", roles=("support",), realm="hr")]


@pytest.mark.parametrize("provider", [_app_roster, _app_roster()], ids=["function", "list"])
def test_the_roster_provider_gives_identities_the_roles_access_rules_match(tmp_path: Path, provider: object) -> None:
    with Meta.builder().persistent_state(tmp_path / "s").access(**SUPPORT_READS).roster_provider(provider).build() as h:
        for identity in ("support:desk", "support:night"):
            h.agent(identity).remember("Escalation", "Page the on-call lead after 10 minutes.")
            assert [r.title for r in h.agent(identity).recall("escalation")] == ["Escalation"]
        for identity, realm in (("intern:x", None), ("support:hr", None), ("support:desk", "hr")):
            with pytest.raises(AccessDenied):  # not in the roster with that role in that realm
                h.agent(identity, realm=realm).recall("escalation")


def test_without_the_roster_the_same_rules_match_nobody(tmp_path: Path) -> None:
    with Meta.builder().persistent_state(tmp_path / "s").access(**SUPPORT_READS).build() as h:
        with pytest.raises(AccessDenied):
            h.agent("support:desk").recall("escalation")


def test_roster_entries_follow_the_access_tables_and_are_checked_by_its_decoder(tmp_path: Path) -> None:
    access = {**SUPPORT_READS, "roster": [{"identity": "support:desk", "roles": ["support"]}]}
    with Meta.builder().persistent_state(tmp_path / "a").access(**access).roster_provider(
            [{"identity": "support:night", "roles": ["support"]}]).build() as h:
        assert h.agent("support:desk").recall("x") == [] and h.agent("support:night").recall("x") == []
    twice = Meta.builder().persistent_state(tmp_path / "b").access(**access).roster_provider(
        [{"identity": "support:desk", "roles": ["other"]}])
    with pytest.raises(ConfigError, match="identity 'support:desk' in realm 'default' is listed twice"):
        twice.build()
    with pytest.raises(ConfigError, match=r"access\.roster\[0\]\.role: unknown key"):
        Meta.builder().persistent_state(tmp_path / "c").roster_provider([{"identity": "a:b", "role": ["x"]}]).build()
    with pytest.raises(ConfigError, match=r"access\.roster\[0\]\.identity"):
        Meta.builder().persistent_state(tmp_path / "d").roster_provider([{"identity": "  "}]).build()


@pytest.mark.parametrize("provider", ["support:desk", {"identity": "a:b"}, 42, None])
def test_the_roster_provider_refuses_what_is_not_a_list_of_entries(provider: object) -> None:
    with pytest.raises(ConfigError, match="roster_provider"):
        Meta.builder().roster_provider(provider)  # type: ignore[arg-type]


def test_a_roster_provider_that_fails_stops_the_build(tmp_path: Path) -> None:
    def broken() -> list[object]:
        raise RuntimeError("directory service down")

    with pytest.raises(ConfigError, match="roster_provider: the provider raised RuntimeError: directory service down"):
        Meta.builder().persistent_state(tmp_path / "s").roster_provider(broken).build()
    with pytest.raises(ConfigError, match=r"access\.roster\[0\]: an entry is a table"):
        Meta.builder().persistent_state(tmp_path / "t").roster_provider(lambda: [42]).build()  # type: ignore[list-item]


def test_an_unknown_access_key_lists_the_keys_its_table_takes(tmp_path: Path) -> None:
    """``access(tokenz=[])`` is refused naming the key and, as ``[agent_memory]`` and ``[gateway]`` do, the keys
    the table takes; a nested table's refusal lists its own keys."""
    with pytest.raises(ConfigError) as top:
        Meta.builder().persistent_state(tmp_path / "a").access(tokenz=[]).build()
    assert str(top.value) == "access.tokenz: unknown key (known: denies, enabled, grants, read_only, roster, tokens)"
    with pytest.raises(ConfigError) as nested:
        Meta.builder().persistent_state(tmp_path / "b").access(
            grants=[{"action": "agent.view", "who": {"rol": "x"}}]).build()
    assert str(nested.value) == "access.grants[0].who.rol: unknown key (known: anyone, label, principal, role)"

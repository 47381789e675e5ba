"""Hypothesis strategies shared by the access and panel tests: small name spaces so rules collide."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from meta_memory.access.config import ACTIONS, AccessConfig, parse_access_section
from meta_memory.access.principal import ANONYMOUS, Principal
from meta_memory.access.resources import IdentityAttributes, Resource

PRINCIPALS = ["alice", "bob"]
ROLES = ["r1", "r2"]
LABELS = ["l1", "l2"]
IDENTITIES = ["i1", "i2", "i3"]
MOBS = ["m1", "m2"]
MEMORY_ACTIONS = ["agent.memory.read", "agent.view", "mob.memory.read", "operator.memory.read", "memory.quarantine.review"]

whos = st.one_of(
    st.sampled_from(PRINCIPALS).map(lambda v: {"principal": v}),
    st.sampled_from(ROLES).map(lambda v: {"role": v}),
    st.sampled_from(LABELS).map(lambda v: {"label": v}),
    st.just({"anyone": True}),
)
ons = st.one_of(
    st.none(),
    st.sampled_from(IDENTITIES).map(lambda v: {"identity": v}),
    st.sampled_from(MOBS).map(lambda v: {"mob": v}),
    st.sampled_from(ROLES).map(lambda v: {"role": v}),
    st.sampled_from(LABELS).map(lambda v: {"label": v}),
)


def rule_dict(action: str, who: dict[str, Any], on: dict[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {"action": action, "who": who}
    if on is not None:
        out["on"] = on
    return out


def rules(actions: list[str] | None = None, max_size: int = 8) -> st.SearchStrategy[list[dict[str, Any]]]:
    return st.lists(
        st.builds(rule_dict, st.sampled_from(actions or sorted(ACTIONS)), whos, ons), max_size=max_size
    )


@st.composite
def configs(draw: st.DrawFn, actions: list[str] | None = None, enabled: bool | None = None) -> AccessConfig:
    return parse_access_section(
        {
            "enabled": draw(st.booleans()) if enabled is None else enabled,
            "grants": draw(rules(actions, 10)),
            "denies": draw(rules(actions, 4)),
        }
    )


subsets = lambda names: st.frozensets(st.sampled_from(names))  # noqa: E731

principals = st.one_of(
    st.just(ANONYMOUS),
    st.builds(
        lambda n, r, lab: Principal(name=n, roles=r, labels=lab),
        st.sampled_from(PRINCIPALS),
        subsets(ROLES),
        subsets(LABELS),
    ),
)

attributes = st.one_of(st.none(), st.builds(IdentityAttributes, subsets(ROLES), subsets(LABELS)))

resources = st.one_of(
    st.builds(lambda n, a: Resource("identity", n, a), st.sampled_from(IDENTITIES), attributes),
    st.sampled_from(MOBS).map(lambda n: Resource("mob", n)),
    st.just(Resource("operator", "op")),
    st.just(Resource("realm", "default")),
    st.just(Resource.unscoped()),
)

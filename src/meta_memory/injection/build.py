"""Inputs of build-time assembly: the scope set and the build query (reference §3.5, §3B build-time)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .model import ScopeRef
from .text_util import compact_whitespace


def build_scope_set(
    realm: str,
    identity: str,
    *,
    mobs: Iterable[str] = (),
    operator: str | None = None,
    operator_scope: str = "off",
) -> tuple[ScopeRef, ...]:
    """The read composition of a build, in order: identity, mobs, operator, realm.

    Mob ids are trimmed, blanks skipped and duplicates dropped (first kept).
    The operator scope is included only when ``operator_scope == "provisional"``
    and ``operator`` is non-blank.
    """
    scopes = [ScopeRef("identity", realm, identity)]
    seen: set[str] = set()
    for mob in mobs:
        mob = mob.strip()
        if mob and mob not in seen:
            seen.add(mob)
            scopes.append(ScopeRef("mob", realm, mob))
    if operator_scope == "provisional" and operator is not None and operator.strip():
        scopes.append(ScopeRef("operator", realm, operator.strip()))
    scopes.append(ScopeRef("realm", realm))
    return tuple(scopes)


def build_query_text(
    identity: str,
    profile: str | None = None,
    *,
    active_peers: Iterable[str] = (),
    managed_edges: Iterable[tuple[str, str]] = (),
    labels: Mapping[str, str] | None = None,
) -> str:
    """The build's recall query text, whitespace-compacted.

    ``identity <id> profile <p> [active peer <x>]... [managed edge <a> <b>]... [label <k> <v>]...``.
    Only spec-level facts belong here (never draft instructions or app
    context), so nothing a customiser adds can leak into recall.
    """
    parts = [f"identity {identity}"]
    if profile:
        parts.append(f"profile {profile}")
    parts += [f"active peer {peer}" for peer in active_peers]
    parts += [f"managed edge {a} {b}" for a, b in managed_edges]
    parts += [f"label {k} {v}" for k, v in (labels or {}).items()]
    return compact_whitespace(" ".join(parts))

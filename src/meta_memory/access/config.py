"""The ``[access]`` section of the configuration file: tokens, grants and denies.

Seed: "Reviewing quarantined records" (access part) and "Console Memory panel"
(visibility). Decoding is strict: an unknown key, a wrong type, an unknown
action or an ambiguous rule is refused with a
:class:`~meta_memory.errors.ConfigError` whose message names the key, e.g.
``access.grants[0].who.rol: unknown key``.

Example (every key shown)::

    [access]
    enabled = true          # off (the default): every caller may do everything
    read_only = false       # true: every state-changing method is refused

    # A bearer token is configured by its SHA-256 digest only
    # (``meta-memory token hash`` prints it); the token itself never sits in the file.
    [[access.tokens]]
    sha256 = "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"
    principal = "alice"
    roles = ["reviewer"]
    labels = ["team-blue"]

    # A rule = one action, WHO it is for, and optionally ON what.
    #   who: exactly one of  { principal = "alice" } | { role = "reviewer" }
    #                        | { label = "team-blue" } | { anyone = true }
    #        (role/label here are the CALLER's roles/labels from its token;
    #         ``anyone`` also matches an anonymous caller)
    #   on:  omitted = unscoped (every resource, and the realm-level reads that
    #        need an unscoped grant), or at most one of
    #        { identity = "lead:main" } | { mob = "research" }
    #        | { role = "support" } | { label = "customer-facing" }
    #        (role/label here are the TARGET identity's, from [[access.roster]])
    #        plus optionally realm = "hr" | "*"; or realm alone.
    #        Without realm: a grant covers the default realm, a deny every realm.
    [[access.grants]]
    action = "agent.memory.read"
    who = { role = "reviewer" }

    [[access.grants]]
    action = "memory.quarantine.review"
    who = { principal = "alice" }
    on = { identity = "lead:main", realm = "hr" }

    # A deny that applies always wins over every grant.
    [[access.denies]]
    action = "agent.view"
    who = { anyone = true }
    on = { label = "confidential" }

    # The roster: roles and labels of target identities (per realm).
    [[access.roster]]
    identity = "payroll:bot"
    realm = "hr"
    labels = ["confidential"]

Actions: ``agent.memory.read``, ``agent.view``, ``agent.memory.write``,
``agent.memory.delete``, ``mob.memory.read``, ``operator.memory.read``,
``agent.memory.erase``, ``memory.quarantine.review``, ``mob.memory.commit``
(deciding proposals and gated promotions into a mob), ``mob.memory.propose``
(the memory tool's ``propose_to_mob`` into that mob), ``ledger.read``,
``ledger.write``, ``agent.session.manage``, ``operator.status`` and ``operator.backup``.

Every identity is judged under its realm-qualified name ``<realm>/<identity>``:
``on = { identity = ..., realm = ... }`` names both (see
:mod:`meta_memory.access.policy` for a rule without a realm).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from ..errors import ConfigError, known_keys
from ..identity import DEFAULT_REALM, parse_identity, parse_realm

__all__ = [
    "ACTIONS",
    "ANY_REALM",
    "COPY_ACTIONS",
    "RESERVED_ACTIONS",
    "UNSCOPED_ACTIONS",
    "AccessConfig",
    "AccessRule",
    "RosterEntry",
    "RuleScope",
    "RuleSubject",
    "TokenEntry",
    "hash_token",
    "parse_access_section",
]

#: Every action a rule may name (seed: Access control memory actions; reference §7).
ACTIONS: frozenset[str] = frozenset(
    {
        "agent.memory.read",
        "agent.view",
        "agent.memory.write",
        "agent.memory.delete",
        "agent.memory.erase",
        "mob.memory.read",
        "operator.memory.read",
        "memory.quarantine.review",
        "mob.memory.propose",
        "mob.memory.commit",
        "ledger.read",
        "ledger.write",
        "agent.session.manage",
        "operator.status",
        "operator.backup",
    }
)
#: The actions every method judges on the unscoped resource only (the assertion ledger, operator status:
#: :func:`meta_memory.access.requirements.unscoped`): a rule with ``on`` never applies to them, grant or deny.
UNSCOPED_ACTIONS: frozenset[str] = frozenset({"ledger.read", "ledger.write", "operator.status"})
#: The actions of an operator's copy (:func:`meta_memory.access.requirements.copy_of`), held unscoped first:
#: a grant with ``on`` never opens a copy; a deny with ``on`` still closes the copies it could match.
COPY_ACTIONS: frozenset[str] = frozenset({"operator.backup"})
#: Accepted in configuration, required by no method yet (none left: every action is required somewhere).
RESERVED_ACTIONS: frozenset[str] = frozenset()

#: ``on.realm`` value naming every realm.
ANY_REALM = "*"

_HEX64 = re.compile(r"^[0-9a-fA-F]{64}$")


def hash_token(token: str) -> str:
    """The configured form of a bearer token: lowercase hex SHA-256 of its UTF-8 bytes (64 chars).

    Raises ``ValueError`` for an empty token or one with surrounding whitespace
    (such a token cannot be sent intact in an ``Authorization`` header).
    """
    if not isinstance(token, str) or not token:
        raise ValueError("token must be a non-empty string")
    if token != token.strip() or any(ch.isspace() for ch in token):
        raise ValueError("token must not contain whitespace")
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _name(value: str, what: str) -> str:
    trimmed = value.strip()
    if not trimmed:
        raise ValueError(f"{what} must be a non-empty string")
    return trimmed


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TokenEntry(_Strict):
    """One ``[[access.tokens]]`` entry: the SHA-256 digest of a bearer token and who it names.

    ``sha256`` is stored lowercase; ``principal`` is trimmed and non-empty;
    ``roles``/``labels`` are the caller's attributes matched by ``who.role`` /
    ``who.label`` selectors.
    """

    sha256: StrictStr
    principal: str
    roles: tuple[StrictStr, ...] = ()
    labels: tuple[StrictStr, ...] = ()

    @field_validator("sha256")
    @classmethod
    def _digest(cls, value: str) -> str:
        if not _HEX64.match(value):
            raise ValueError("must be the 64-hex-digit SHA-256 of the token (see `meta-memory token hash`)")
        return value.lower()

    @field_validator("principal")
    @classmethod
    def _principal(cls, value: str) -> str:
        return _name(value, "principal")

    @field_validator("roles", "labels")
    @classmethod
    def _names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(_name(v, "each entry") for v in value)


class RuleSubject(_Strict):
    """``who``: exactly one of ``principal``, ``role``, ``label`` (the caller's) or ``anyone = true``."""

    principal: StrictStr | None = None
    role: StrictStr | None = None
    label: StrictStr | None = None
    anyone: StrictBool | None = None

    @field_validator("principal", "role", "label")
    @classmethod
    def _names(cls, value: str | None) -> str | None:
        return None if value is None else _name(value, "selector")

    @model_validator(mode="after")
    def _exactly_one(self) -> RuleSubject:
        if self.anyone is False:
            raise ValueError("anyone must be true when given (omit it otherwise)")
        given = [k for k in ("principal", "role", "label", "anyone") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("who needs exactly one of principal, role, label, anyone")
        return self


class RuleScope(_Strict):
    """``on``: at most one of ``identity``, ``mob``, ``role``, ``label`` (the target identity's),
    and optionally ``realm`` (a realm name, or ``"*"`` for every realm).

    ``realm`` alone (``on = { realm = "hr" }``) scopes the rule to every identity
    and mob of that realm. Without ``realm``, a grant covers the default realm
    only and a deny covers every realm (the safe reading of each; see
    :mod:`meta_memory.access.policy`). ``identity`` is normalised like an RPC
    identity (a roster id ``rt:<base>:<n>`` names ``<base>``).
    """

    identity: StrictStr | None = None
    mob: StrictStr | None = None
    role: StrictStr | None = None
    label: StrictStr | None = None
    realm: StrictStr | None = None

    @field_validator("mob", "role", "label")
    @classmethod
    def _names(cls, value: str | None) -> str | None:
        return None if value is None else _name(value, "scope")

    @field_validator("identity")
    @classmethod
    def _identity(cls, value: str | None) -> str | None:
        return None if value is None else parse_identity(value)

    @field_validator("realm")
    @classmethod
    def _realm(cls, value: str | None) -> str | None:
        if value is None or value == ANY_REALM:
            return value
        return parse_realm(value)

    @model_validator(mode="after")
    def _exactly_one(self) -> RuleScope:
        given = [k for k in ("identity", "mob", "role", "label") if getattr(self, k) is not None]
        if len(given) > 1 or (not given and self.realm is None):
            raise ValueError(
                "on needs exactly one of identity, mob, role, label, optionally with realm, "
                "or realm alone (omit on for an unscoped rule)"
            )
        return self

    @property
    def kind(self) -> str:
        """Which selector is set: ``identity`` | ``mob`` | ``role`` | ``label`` | ``realm`` (realm alone)."""
        for key in ("identity", "mob", "role", "label"):
            if getattr(self, key) is not None:
                return key
        return "realm"

    @property
    def value(self) -> str:
        """The selected name."""
        return str(getattr(self, self.kind))


class AccessRule(_Strict):
    """One ``[[access.grants]]`` or ``[[access.denies]]`` entry: ``{action, who, on?}``."""

    action: StrictStr
    who: RuleSubject
    on: RuleScope | None = None

    @field_validator("action")
    @classmethod
    def _known_action(cls, value: str) -> str:
        if value not in ACTIONS:
            raise ValueError(f"unknown action '{value}' (expected one of {', '.join(sorted(ACTIONS))})")
        return value


class RosterEntry(_Strict):
    """One ``[[access.roster]]`` entry: the roles and labels of an identity in a realm.

    ``identity`` is normalised like an RPC identity; ``realm`` defaults to
    ``"default"``. Matched by ``on.role`` / ``on.label``; an identity with no
    entry has unknown attributes (see :mod:`meta_memory.access.policy`).
    """

    identity: StrictStr
    realm: StrictStr | None = None
    roles: tuple[StrictStr, ...] = ()
    labels: tuple[StrictStr, ...] = ()

    @field_validator("identity")
    @classmethod
    def _identity(cls, value: str) -> str:
        return parse_identity(value)

    @field_validator("realm")
    @classmethod
    def _realm(cls, value: str | None) -> str:
        return parse_realm(value)

    @field_validator("roles", "labels")
    @classmethod
    def _names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(_name(v, "each entry") for v in value)

    @property
    def key(self) -> tuple[str, str]:
        """``(realm, identity)``."""
        return (self.realm or DEFAULT_REALM, self.identity)


class AccessConfig(_Strict):
    """The decoded ``[access]`` section.

    ``enabled=False`` (default) lets every caller do everything; ``read_only``
    makes the gateway refuse every state-changing method whatever the grants say.
    Token digests must be unique; a roster names each ``(realm, identity)`` once.
    """

    enabled: StrictBool = False
    read_only: StrictBool = False
    tokens: tuple[TokenEntry, ...] = Field(default=())
    grants: tuple[AccessRule, ...] = Field(default=())
    denies: tuple[AccessRule, ...] = Field(default=())
    roster: tuple[RosterEntry, ...] = Field(default=())

    @field_validator("roster")
    @classmethod
    def _unique_roster(cls, value: tuple[RosterEntry, ...]) -> tuple[RosterEntry, ...]:
        seen: set[tuple[str, str]] = set()
        for entry in value:
            if entry.key in seen:
                raise ValueError(f"identity '{entry.identity}' in realm '{entry.key[0]}' is listed twice")
            seen.add(entry.key)
        return value

    @field_validator("tokens")
    @classmethod
    def _unique_tokens(cls, value: tuple[TokenEntry, ...]) -> tuple[TokenEntry, ...]:
        seen: set[str] = set()
        for entry in value:
            if entry.sha256 in seen:
                raise ValueError(f"token digest {entry.sha256[:12]}... is configured twice")
            seen.add(entry.sha256)
        return value


def _loc(loc: tuple[Any, ...]) -> str:
    out = "access"
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _table_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model of the table ``loc`` lies in (``("grants", 0, "who", "rol")``: :class:`RuleSubject`), or
    ``None`` when the path leaves the models."""
    model: type[BaseModel] = AccessConfig
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(str(part))
        if field is None:
            return None
        inner = _model_in(field.annotation)
        if inner is None:
            return None
        model = inner
    return model


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model an annotation holds (itself, or inside ``tuple[X, ...]`` / ``X | None``), or ``None``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        if (found := _model_in(arg)) is not None:
            return found
    return None


def _explain(err: dict[str, Any]) -> str:
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        table = _table_at(tuple(err.get("loc", ())))
        return "unknown key" if table is None else f"unknown key {known_keys(table.model_fields)}"
    if kind == "missing":
        return "required key is missing"
    if kind == "tuple_type":
        return "must be an array"
    msg = str(err.get("msg", "invalid value"))
    return msg.removeprefix("Value error, ")


def parse_access_section(raw: Mapping[str, Any] | None) -> AccessConfig:
    """Decode the ``[access]`` table (as parsed by ``tomllib``) into an :class:`AccessConfig`.

    ``None`` gives the default (access control off, no tokens). Raises
    :class:`ConfigError` naming the first offending key, e.g.
    ``access.denies[1].action: unknown action 'agent.memory.eat' (...)`` or
    ``access.enabled: Input should be a valid boolean``.
    """
    if raw is None:
        return AccessConfig()
    if not isinstance(raw, Mapping):
        raise ConfigError("access: [access] must be a table")
    try:
        return AccessConfig.model_validate(dict(raw))
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"{_loc(tuple(err.get('loc', ())))}: {_explain(dict(err))}") from None

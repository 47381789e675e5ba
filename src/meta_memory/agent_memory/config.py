"""The ``[agent_memory]`` configuration section (reference §2A, §5; seed "Agent memory injection").

:func:`parse_agent_memory_section` decodes the raw table into a frozen
:class:`AgentMemoryConfig`, applying the reference's defaults and clamps and
refusing unknown keys with a :class:`~meta_memory.errors.ConfigError` that
names the key.

Keys and defaults:

=========================  =============================================  ================
key                        values                                         default
=========================  =============================================  ================
``enabled``                bool                                           ``true``
``realm``                  string (trimmed; empty -> ``"default"``)       ``"default"``
``selection``              ``"always"`` | ``"contextual"``                ``"contextual"``
``max_entries``            int 1..64; 0 -> 8; above 64 refused            ``8``
``recall_timeout_ms``      int ms 1..30000; 0 -> 500; above refused       ``500``
``recall_failure_policy``  ``"fail"`` | ``"skip"``                        ``"skip"``
``instruction_header``     string or absent (-> ``"Agent memory"``)       absent
``per_turn_injection``     ``"off"`` | ``"budgeted"``                     ``"budgeted"``
``defang_inbound``         bool                                           ``true``
``llm_writes``             ``"observed"`` | ``"quarantined"``             ``"observed"``
``shared_key_taint``       ``"any"`` | ``"managed"``                      ``"any"``
``recorder_tool``          bool                                           ``true``
``operator_scope``         ``"off"`` | ``"provisional"``                  ``"off"``
``content_trust``          table (see :class:`ContentTrustConfig`)        empty lists,
                                                                          ``default =
                                                                          "trusted"``
``store``                  ``"sqlite"`` | ``"postgres"`` (``"markdown"``  ``"sqlite"``
                           refused)
``dsn``                    string; required with, and only with,          absent
                           ``store = "postgres"``
``recall_provider``        ``"lexical"`` | ``"hybrid"`` (``"hybrid"``      ``"lexical"``
                           needs the ``semantic`` extra and the sqlite
                           store; checked when the runtime starts) |
                           ``"package.module:Class"``: a custom
                           provider, imported and instantiated at
                           start-up (:mod:`meta_memory.recall.custom`)
``embedder``               ``"package.module:Class"``: the embedding      absent (the
                           model of hybrid recall, imported and           bundled
                           instantiated (no arguments) at start-up        all-MiniLM-L6-v2)
                           (:mod:`meta_memory.recall.semantic.embedder`);
                           only with ``recall_provider = "hybrid"``
``erase_tombstoned_after_  int days, 1..36500, or absent: a background      absent (keep)
days``                     sweep erases tombstoned content older than
                           this (see ``agent_memory/retention.py``)
``session_state_expiry_days``  int days 1..3650; 0 -> 30; above refused     ``30``
                           (session taint, reset marks, budgets, nonces
                           untouched this long are deleted)
``session_state_limit``    int rows 1..100,000,000; 0 -> 1,000,000;    ``1000000``
                           above refused (at the cap new sessions are
                           refused and LLM writes quarantine)
``session_state_identity_  int rows 1..100,000,000; 0 -> a twentieth    ``0``
limit``                    of ``session_state_limit`` (at least 2);
                           never above ``session_state_limit``: one
                           identity's rows (its quota; past it that
                           identity alone fails closed)
``max_realms``             int; 0 -> 4096; > 1000000 -> 1000000; most     ``4096``
                           realms (a write creating one more is refused)
``identity_record_limit``  int rows 1..1,000,000,000; 0 -> 2,000,000;  ``2000000``
                           above refused; most rows one identity scope
                           holds, any status (a write past it is
                           refused, reason ``limit``)
``max_open_realms``        int; 0 -> 32; > 4096 -> 4096; most realms       ``32``
                           with open SQLite connections (LRU-closed)
``recall_index_mb``        int MiB 1..65536; 0 -> 256; memory of the      ``256``
                           in-process recall index, all realms together,
                           its builds included (SQLite; least recently
                           searched realm evicted)
``sqlite_cache_mb``        int MiB 1..65536; 0 -> 128; SQLite's heap in   ``128``
                           the process (every connection's page cache;
                           a process-wide soft limit)
``view_cache_mb``          int MiB 1..65536; 0 -> 32; decoded record      ``32``
                           views recall keeps (SQLite; oldest out)
``vector_cache_mb``        int MiB 1..65536; 0 -> 256; hybrid recall's    ``256``
                           scope matrices and query vectors (LRU out)
``max_ttl_s``              int s 1..3,153,600,000 (100 years); 0 ->       ``3153600000``
                           default: the longest ``ttl_s`` a caller may
                           give (a longer one is refused, -32602)
``tool_max_ttl_s``         int s, as ``max_ttl_s`` and at most it; the    ``2592000``
                           longest ``ttl_s`` the model may give through   (30 days, or
                           the ``memory`` tool                            ``max_ttl_s``
                                                                          when lower)
``expiry_sweep_s``         int s 1..86400; 0 -> 60: how often expired      ``60``
                           records are tombstoned (``expiry.py``)
``realms``                 array of realm names, at least one, holding    absent (any
                           ``realm``: the only realms served (a call      realm)
                           naming another is refused, -32602 ``realm``;
                           see ``agent_memory/realm_list.py``)
=========================  =============================================  ================
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from meta_memory.errors import ConfigError, shown_config_value
from meta_memory.identity import DEFAULT_REALM, parse_realm
from meta_memory.limits import (
    DEFAULT_EXPIRY_SWEEP_S,
    DEFAULT_IDENTITY_RECORD_LIMIT,
    DEFAULT_INSTRUCTION_HEADER,
    DEFAULT_MAX_ENTRIES,
    DEFAULT_MAX_OPEN_REALMS,
    DEFAULT_MAX_REALMS,
    DEFAULT_RECALL_INDEX_MB,
    DEFAULT_RECALL_TIMEOUT_MS,
    DEFAULT_SESSION_STATE_EXPIRY_DAYS,
    DEFAULT_SESSION_STATE_LIMIT,
    DEFAULT_SQLITE_CACHE_MB,
    DEFAULT_TOOL_MAX_TTL_S,
    DEFAULT_VECTOR_CACHE_MB,
    DEFAULT_VIEW_CACHE_MB,
    MAX_EXPIRY_SWEEP_S,
    MAX_IDENTITY_RECORD_LIMIT,
    MAX_MAX_OPEN_REALMS,
    MAX_MAX_REALMS,
    MAX_MEMORY_ENTRIES,
    MAX_RECALL_INDEX_MB,
    MAX_RECALL_TIMEOUT_MS,
    MAX_RETENTION_DAYS,
    MAX_SESSION_STATE_EXPIRY_DAYS,
    MAX_SESSION_STATE_LIMIT,
    MAX_SQLITE_CACHE_MB,
    MAX_TTL_S,
    MAX_VECTOR_CACHE_MB,
    MAX_VIEW_CACHE_MB,
)
from meta_memory.recall.custom import BUNDLED_PROVIDERS, is_provider_reference
from meta_memory.review.config import StewardConfig

__all__ = [
    "DEFAULT_REALM",
    "DEFAULT_MAX_ENTRIES",
    "MAX_MEMORY_ENTRIES",
    "DEFAULT_RECALL_TIMEOUT_MS",
    "MAX_RECALL_TIMEOUT_MS",
    "DEFAULT_INSTRUCTION_HEADER",
    "ContentTrustConfig",
    "AgentMemoryConfig",
    "parse_agent_memory_section",
    "parse_content_trust",
]


_CONTENT_TRUST_KEYS = ("trusted_mcp_servers", "untrusted_tools", "trusted_tools")


class ContentTrustConfig(BaseModel):
    """``agent_memory.content_trust``: tool/MCP-server trust overrides (reference §5). Entries are trimmed
    here and compared by the classifier's spelling-proof key (:func:`meta_memory.firewall.classify.name_key`).

    ``default`` (beyond the spec, opt-in): ``"trusted"`` (the seed's rule: a tool no rule names is trusted)
    or ``"untrusted"`` (only listed tools and listed MCP servers are trusted; every other tool result
    taints). See ``docs/security.md`` for when to choose it.

    ``default_untrusted_tools`` (beyond the spec, stricter, on by default): outside-content tool and MCP
    server names that taint after the spec's rules; ``None`` (the key absent) is the shipped list
    (:data:`meta_memory.firewall.outside_tools.DEFAULT_UNTRUSTED_TOOLS`), a list replaces it, ``[]``
    turns it off.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    trusted_mcp_servers: tuple[str, ...] = ()
    untrusted_tools: tuple[str, ...] = ()
    trusted_tools: tuple[str, ...] = ()
    default: Literal["trusted", "untrusted"] = "trusted"
    default_untrusted_tools: tuple[str, ...] | None = None


def _rule(message: str) -> PydanticCustomError:
    """A config rule broken; the decoder reports it as ``agent_memory.<key>: <message>``."""
    return PydanticCustomError("config_rule", message)


def _choice(*allowed: str) -> BeforeValidator:
    """One of ``allowed``, spelled in any case and with surrounding spaces."""

    def check(value: object) -> str:
        if isinstance(value, str) and value.strip().lower() in allowed:
            return value.strip().lower()
        raise _rule(f"must be one of {', '.join(repr(a) for a in allowed)} (got {shown_config_value(value)})")

    return BeforeValidator(check)


def _ranged(default: int, maximum: int) -> BeforeValidator:
    """An integer in ``1..maximum``; ``0`` means ``default``. Anything else is refused naming the range."""

    def check(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= maximum:
            raise _rule(f"must be an integer between 1 and {maximum} (0 = the default {default}); "
                        f"got {shown_config_value(value)}")
        return value or default

    return BeforeValidator(check)


def _identity_limit(value: object) -> int:
    """``session_state_identity_limit``: an integer in ``0..MAX_SESSION_STATE_LIMIT`` (0: derived from the cap)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SESSION_STATE_LIMIT:
        raise _rule(f"must be an integer between 1 and {MAX_SESSION_STATE_LIMIT} (0 = a twentieth of "
                    f"session_state_limit); got {shown_config_value(value)}")
    return value


def _strict_bool(value: object) -> bool:
    if not isinstance(value, bool):
        raise _rule("must be a boolean")
    return value


def _realm(value: object) -> str:
    """A realm name by :func:`~meta_memory.identity.parse_realm` (never trimmed: ``" hr "`` is refused);
    empty or blank means the default realm."""
    if not isinstance(value, str):
        raise _rule("must be a string")
    if not value.strip():
        return DEFAULT_REALM
    try:
        return parse_realm(value)
    except ValueError as exc:
        raise _rule(str(exc).removeprefix("realm ")) from None


def _optional_text(value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        raise _rule("must be a string")
    return value


def _dsn(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _rule("must be a non-empty string")
    return value.strip()


def _realm_list(value: object) -> tuple[str, ...] | None:
    """``realms``: a non-empty array of valid realm names (never trimmed, duplicates dropped), or absent."""
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or not value:
        raise _rule("must be a non-empty array of realm names (leave the key out to serve any realm)")
    names: list[str] = []
    for entry in value:
        if not isinstance(entry, str):
            raise _rule("entries must be strings")
        try:
            name = parse_realm(entry)
        except ValueError as exc:
            raise _rule(f"entry {entry!r}: {exc}") from None
        if name not in names:
            names.append(name)
    return tuple(names)


def _retention_days(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_RETENTION_DAYS:
        raise _rule(f"must be an integer number of days from 1 to {MAX_RETENTION_DAYS}")
    return value


def _recall_provider(value: object) -> str:
    """A bundled provider's name (any case) or a custom provider's ``"package.module:Class"``."""
    if isinstance(value, str):
        name = value.strip()
        if name.lower() in BUNDLED_PROVIDERS:
            return name.lower()
        if is_provider_reference(name):
            return name
    raise _rule("must be 'lexical', 'hybrid' or a custom provider as 'package.module:Class' "
                f"(got {shown_config_value(value)})")


def _embedder(value: object) -> str | None:
    """``embedder``: a ``"package.module:Class"`` reference, or absent."""
    if value is None:
        return None
    if isinstance(value, str) and is_provider_reference(value.strip()):
        return value.strip()
    raise _rule(f"must be an embedder as 'package.module:Class' (got {shown_config_value(value)})")


StrictBool = Annotated[bool, BeforeValidator(_strict_bool)]


class AgentMemoryConfig(BaseModel):
    """The decoded ``[agent_memory]`` section (see the module table). Frozen; unknown keys forbidden.

    Every value is decoded here, once: enums are matched in any case and trimmed, ``0`` means a
    number's default, out-of-range numbers and wrong types are refused (:func:`parse_agent_memory_section`
    reports them as :class:`ConfigError` ``agent_memory.<key>: <rule>``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: StrictBool = True
    realm: Annotated[str, BeforeValidator(_realm)] = DEFAULT_REALM
    selection: Annotated[Literal["always", "contextual"], _choice("always", "contextual")] = "contextual"
    max_entries: Annotated[int, _ranged(DEFAULT_MAX_ENTRIES, MAX_MEMORY_ENTRIES)] = Field(
        default=DEFAULT_MAX_ENTRIES, ge=1, le=MAX_MEMORY_ENTRIES)
    recall_timeout_ms: Annotated[int, _ranged(DEFAULT_RECALL_TIMEOUT_MS, MAX_RECALL_TIMEOUT_MS)] = Field(
        default=DEFAULT_RECALL_TIMEOUT_MS, ge=1, le=MAX_RECALL_TIMEOUT_MS)
    recall_failure_policy: Annotated[Literal["fail", "skip"], _choice("fail", "skip")] = "skip"
    instruction_header: Annotated[str | None, BeforeValidator(_optional_text)] = None
    per_turn_injection: Annotated[Literal["off", "budgeted"], _choice("off", "budgeted")] = "budgeted"
    defang_inbound: StrictBool = True
    llm_writes: Annotated[Literal["observed", "quarantined"], _choice("observed", "quarantined")] = "observed"
    #: Whose taint of a session key counts for another identity's writes from that key in the realm:
    #: ``"any"``, every identity's (fail closed: agents sharing one model context may each be driven by a
    #: token of its own); ``"managed"``, under access control only the identities the writing caller
    #: manages the sessions of (principals sharing a realm cannot quarantine each other's writes by
    #: tainting the keys they use, nor learn from the answers whether the other's key is tainted).
    shared_key_taint: Annotated[Literal["any", "managed"], _choice("any", "managed")] = "any"
    recorder_tool: StrictBool = True
    operator_scope: Annotated[Literal["off", "provisional"], _choice("off", "provisional")] = "off"
    content_trust: ContentTrustConfig = ContentTrustConfig()
    store: Annotated[Literal["sqlite", "postgres"], _choice("sqlite", "postgres")] = "sqlite"
    dsn: Annotated[str | None, BeforeValidator(_dsn)] = None
    recall_provider: Annotated[str, BeforeValidator(_recall_provider)] = "lexical"
    embedder: Annotated[str | None, BeforeValidator(_embedder)] = None
    erase_tombstoned_after_days: Annotated[int | None, BeforeValidator(_retention_days)] = Field(
        default=None, ge=1, le=MAX_RETENTION_DAYS)
    session_state_expiry_days: Annotated[int, _ranged(DEFAULT_SESSION_STATE_EXPIRY_DAYS,
                                                      MAX_SESSION_STATE_EXPIRY_DAYS)] = Field(
        default=DEFAULT_SESSION_STATE_EXPIRY_DAYS, ge=1, le=MAX_SESSION_STATE_EXPIRY_DAYS)
    session_state_limit: Annotated[int, _ranged(DEFAULT_SESSION_STATE_LIMIT, MAX_SESSION_STATE_LIMIT)] = Field(
        default=DEFAULT_SESSION_STATE_LIMIT, ge=1, le=MAX_SESSION_STATE_LIMIT)
    session_state_identity_limit: Annotated[int, BeforeValidator(_identity_limit)] = 0
    """Rows one (realm, identity) may hold in the session state; ``0``: a twentieth of
    ``session_state_limit`` (``session_state.store.default_identity_limit``)."""
    max_realms: Annotated[int, _ranged(DEFAULT_MAX_REALMS, MAX_MAX_REALMS)] = Field(
        default=DEFAULT_MAX_REALMS, ge=1, le=MAX_MAX_REALMS)
    identity_record_limit: Annotated[int, _ranged(DEFAULT_IDENTITY_RECORD_LIMIT, MAX_IDENTITY_RECORD_LIMIT)] = Field(
        default=DEFAULT_IDENTITY_RECORD_LIMIT, ge=1, le=MAX_IDENTITY_RECORD_LIMIT)
    """Most rows one identity scope holds in the store, active, tombstoned, superseded or quarantined alike;
    a write that would pass it is refused (``-32040``, reason ``limit``) and writes nothing."""
    max_open_realms: Annotated[int, _ranged(DEFAULT_MAX_OPEN_REALMS, MAX_MAX_OPEN_REALMS)] = Field(
        default=DEFAULT_MAX_OPEN_REALMS, ge=1, le=MAX_MAX_OPEN_REALMS)
    recall_index_mb: Annotated[int, _ranged(DEFAULT_RECALL_INDEX_MB, MAX_RECALL_INDEX_MB)] = Field(
        default=DEFAULT_RECALL_INDEX_MB, ge=1, le=MAX_RECALL_INDEX_MB)
    """Memory of the in-process recall index, every realm together, its builds included (MiB; SQLite)."""
    sqlite_cache_mb: Annotated[int, _ranged(DEFAULT_SQLITE_CACHE_MB, MAX_SQLITE_CACHE_MB)] = Field(
        default=DEFAULT_SQLITE_CACHE_MB, ge=1, le=MAX_SQLITE_CACHE_MB)
    """SQLite's heap in the process, every connection's page cache together (MiB; a soft limit)."""
    view_cache_mb: Annotated[int, _ranged(DEFAULT_VIEW_CACHE_MB, MAX_VIEW_CACHE_MB)] = Field(
        default=DEFAULT_VIEW_CACHE_MB, ge=1, le=MAX_VIEW_CACHE_MB)
    """Memory of the decoded record views recall keeps, every realm together (MiB; SQLite)."""
    vector_cache_mb: Annotated[int, _ranged(DEFAULT_VECTOR_CACHE_MB, MAX_VECTOR_CACHE_MB)] = Field(
        default=DEFAULT_VECTOR_CACHE_MB, ge=1, le=MAX_VECTOR_CACHE_MB)
    """Memory of hybrid recall's kept scope matrices and query vectors (MiB)."""
    max_ttl_s: Annotated[int, _ranged(MAX_TTL_S, MAX_TTL_S)] = Field(default=MAX_TTL_S, ge=1, le=MAX_TTL_S)
    """The longest ``ttl_s`` a caller may give remember, remember_batch or update (seconds)."""
    tool_max_ttl_s: Annotated[int, _ranged(DEFAULT_TOOL_MAX_TTL_S, MAX_TTL_S)] = Field(
        default=DEFAULT_TOOL_MAX_TTL_S, ge=1, le=MAX_TTL_S)
    """The longest ``ttl_s`` the model may give through the ``memory`` tool (seconds; at most ``max_ttl_s``)."""
    expiry_sweep_s: Annotated[int, _ranged(DEFAULT_EXPIRY_SWEEP_S, MAX_EXPIRY_SWEEP_S)] = Field(
        default=DEFAULT_EXPIRY_SWEEP_S, ge=1, le=MAX_EXPIRY_SWEEP_S)
    """Seconds between runs of the background expiry sweep (``agent_memory/expiry.py``)."""
    realms: Annotated[tuple[str, ...] | None, BeforeValidator(_realm_list)] = None
    """The realm allow-list (``None``: any realm); see :mod:`meta_memory.agent_memory.realm_list`."""
    steward: StewardConfig = Field(default_factory=lambda: StewardConfig.parse(None))
    """``[agent_memory.steward]`` (disabled by default)."""

    @model_validator(mode="after")
    def _dsn_goes_with_postgres(self) -> AgentMemoryConfig:
        if self.store == "postgres" and self.dsn is None:
            raise _rule('dsn: is required with store = "postgres"')
        if self.store != "postgres" and self.dsn is not None:
            raise _rule('dsn: is only valid with store = "postgres"')
        if self.embedder is not None and self.recall_provider != "hybrid":
            raise _rule('embedder: is only valid with recall_provider = "hybrid"')
        if self.tool_max_ttl_s > self.max_ttl_s:
            if "tool_max_ttl_s" in self.model_fields_set:
                raise _rule(f"tool_max_ttl_s: must not exceed max_ttl_s ({self.max_ttl_s})")
            object.__setattr__(self, "tool_max_ttl_s", self.max_ttl_s)  # the default never exceeds the cap
        if self.realms is not None and self.realm not in self.realms:
            raise _rule(f"realms: must list the gateway's own realm {self.realm!r} (agent_memory.realm)")
        return self

    @property
    def header(self) -> str:
        """The injection header text: ``instruction_header`` or ``"Agent memory"``."""
        return self.instruction_header or DEFAULT_INSTRUCTION_HEADER


_KEYS = tuple(AgentMemoryConfig.model_fields)


def _fail(key: str, rule: str) -> ConfigError:
    return ConfigError(f"agent_memory.{key}: {rule}")


def _config_error(exc: ValidationError) -> ConfigError:
    """The first refusal as ``agent_memory.<key>: <rule>`` (a cross-key rule names its key itself)."""
    err = exc.errors(include_url=False)[0]
    loc = ".".join(str(part) for part in err["loc"])
    return ConfigError(f"agent_memory.{loc}: {err['msg']}" if loc else f"agent_memory.{err['msg']}")


def parse_content_trust(raw: object) -> ContentTrustConfig:
    """Decode ``content_trust`` strictly (reference §5 messages); raises :class:`ConfigError`.

    Messages: ``content_trust must be an object``, ``unsupported content_trust
    fields: a, b``, ``content_trust.<key> must be an array``,
    ``content_trust.<key> entries must be non-empty strings``,
    ``content_trust.default must be 'trusted' or 'untrusted'``.
    """
    if raw is None:
        return ContentTrustConfig()
    if not isinstance(raw, dict):
        raise ConfigError("content_trust must be an object")
    unknown = sorted(k for k in raw if k not in (*_CONTENT_TRUST_KEYS, "default", "default_untrusted_tools"))
    if unknown:
        raise ConfigError(f"unsupported content_trust fields: {', '.join(unknown)}")
    default = raw.get("default", "trusted")
    if not isinstance(default, str) or default.strip().lower() not in ("trusted", "untrusted"):
        raise ConfigError("content_trust.default must be 'trusted' or 'untrusted'")
    out: dict[str, Any] = {"default": default.strip().lower()}
    for key in (*_CONTENT_TRUST_KEYS, "default_untrusted_tools"):
        if key == "default_untrusted_tools" and key not in raw:
            continue  # absent: the shipped list
        value = raw.get(key, [])
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"content_trust.{key} must be an array")
        entries: list[str] = []
        for entry in value:
            if not isinstance(entry, str) or not entry.strip():
                raise ConfigError(f"content_trust.{key} entries must be non-empty strings")
            entries.append(entry.strip())
        out[key] = tuple(entries)
    return ContentTrustConfig(**out)


def parse_agent_memory_section(raw: dict[str, Any] | bool | None) -> AgentMemoryConfig:
    """Decode the ``[agent_memory]`` table.

    ``None`` or ``True`` -> all defaults; ``False`` -> ``enabled = false``.
    Raises :class:`ConfigError` naming the key: unknown keys
    (``agent_memory: unsupported key 'x'``), wrong types or values,
    ``store = "markdown"`` (import-only legacy format; with ``llm_writes`` or
    ``content_trust`` the message says those require ``store = "sqlite"``),
    ``store = "postgres"`` without ``dsn``, or ``dsn`` without postgres.
    """
    if raw is None or raw is True:
        return AgentMemoryConfig()
    if raw is False:
        return AgentMemoryConfig(enabled=False)
    if not isinstance(raw, dict):
        raise ConfigError("agent_memory must be a table (or a boolean)")
    unknown = sorted(k for k in raw if k not in _KEYS)
    if unknown:
        names = ", ".join(f"'{k}'" for k in unknown)
        raise ConfigError(
            f"agent_memory: unsupported key{'s' if len(unknown) > 1 else ''} {names} "
            f"(allowed: {', '.join(_KEYS)})"
        )

    store_raw = raw.get("store", "sqlite")
    if isinstance(store_raw, str) and store_raw.strip().lower() == "markdown":
        sqlite_only = [k for k in ("llm_writes", "content_trust") if k in raw]
        if sqlite_only:
            raise _fail(
                "store",
                f"{' and '.join('agent_memory.' + k for k in sqlite_only)} require store = \"sqlite\"; "
                "the markdown store is not supported",
            )
        raise _fail(
            "store",
            '"markdown" is refused: legacy markdown files are import-only. Use store = "sqlite" (the default); '
            "a realm's markdown files are imported when the realm is first opened",
        )
    try:
        content_trust = parse_content_trust(raw.get("content_trust"))
    except ConfigError as exc:
        raise ConfigError(f"agent_memory.{exc}") from None
    try:
        return AgentMemoryConfig.model_validate(
            {**raw, "content_trust": content_trust, "steward": StewardConfig.parse(raw.get("steward"))})
    except ValidationError as exc:
        raise _config_error(exc) from None

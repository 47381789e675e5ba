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
                           store; checked when the runtime starts)
``erase_tombstoned_after_  int days, 1..36500, or absent: a background      absent (keep)
days``                     sweep erases tombstoned content older than
                           this (see ``agent_memory/retention.py``)
``session_state_expiry_days``  int days 1..3650; 0 -> 30; above refused     ``30``
                           (session taint, reset marks, budgets, nonces
                           untouched this long are deleted)
``session_state_limit``    int rows 1..100,000,000; 0 -> 1,000,000;    ``1000000``
                           above refused (at the cap new sessions are
                           refused and LLM writes quarantine)
``max_realms``             int; 0 -> 4096; > 1000000 -> 1000000; most     ``4096``
                           realms (a write creating one more is refused)
``max_open_realms``        int; 0 -> 32; > 4096 -> 4096; most realms       ``32``
                           with open SQLite connections (LRU-closed)
``recall_index_mb``        int MiB 1..65536; 0 -> 256; memory of the      ``256``
                           in-process recall index, all realms together
                           (SQLite; least recently searched realm evicted)
=========================  =============================================  ================
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from meta_memory.errors import ConfigError

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

DEFAULT_REALM = "default"
DEFAULT_MAX_ENTRIES = 8
MAX_MEMORY_ENTRIES = 64
DEFAULT_RECALL_TIMEOUT_MS = 500
MAX_RECALL_TIMEOUT_MS = 30_000
DEFAULT_INSTRUCTION_HEADER = "Agent memory"
DEFAULT_SESSION_STATE_EXPIRY_DAYS = 30
MAX_SESSION_STATE_EXPIRY_DAYS = 3650
DEFAULT_SESSION_STATE_LIMIT = 1_000_000
MAX_SESSION_STATE_LIMIT = 100_000_000
DEFAULT_MAX_REALMS = 4096
MAX_MAX_REALMS = 1_000_000
DEFAULT_MAX_OPEN_REALMS = 32
MAX_MAX_OPEN_REALMS = 4096
DEFAULT_RECALL_INDEX_MB = 256
MAX_RECALL_INDEX_MB = 65536

_CONTENT_TRUST_KEYS = ("trusted_mcp_servers", "untrusted_tools", "trusted_tools")


class ContentTrustConfig(BaseModel):
    """``agent_memory.content_trust``: tool/MCP-server trust overrides (reference §5). Entries are trimmed
    here and compared by the classifier's spelling-proof key (:func:`meta_memory.firewall.classify.name_key`).

    ``default`` (beyond the spec, opt-in): ``"trusted"`` (the seed's rule: a tool no rule names is trusted)
    or ``"untrusted"`` (only listed tools and listed MCP servers are trusted; every other tool result
    taints). See ``docs/security.md`` for when to choose it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    trusted_mcp_servers: tuple[str, ...] = ()
    untrusted_tools: tuple[str, ...] = ()
    trusted_tools: tuple[str, ...] = ()
    default: Literal["trusted", "untrusted"] = "trusted"


#: The longest tombstone retention accepted (100 years).
MAX_RETENTION_DAYS = 36_500


class AgentMemoryConfig(BaseModel):
    """The decoded ``[agent_memory]`` section (see the module table). Frozen; unknown keys forbidden."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    realm: str = DEFAULT_REALM
    selection: Literal["always", "contextual"] = "contextual"
    max_entries: int = Field(DEFAULT_MAX_ENTRIES, ge=1, le=MAX_MEMORY_ENTRIES)
    recall_timeout_ms: int = Field(DEFAULT_RECALL_TIMEOUT_MS, ge=1, le=MAX_RECALL_TIMEOUT_MS)
    recall_failure_policy: Literal["fail", "skip"] = "skip"
    instruction_header: str | None = None
    per_turn_injection: Literal["off", "budgeted"] = "budgeted"
    defang_inbound: bool = True
    llm_writes: Literal["observed", "quarantined"] = "observed"
    recorder_tool: bool = True
    operator_scope: Literal["off", "provisional"] = "off"
    content_trust: ContentTrustConfig = ContentTrustConfig()
    store: Literal["sqlite", "postgres"] = "sqlite"
    dsn: str | None = None
    recall_provider: Literal["lexical", "hybrid"] = "lexical"
    erase_tombstoned_after_days: int | None = Field(None, ge=1, le=MAX_RETENTION_DAYS)
    session_state_expiry_days: int = Field(DEFAULT_SESSION_STATE_EXPIRY_DAYS, ge=1, le=MAX_SESSION_STATE_EXPIRY_DAYS)
    session_state_limit: int = Field(DEFAULT_SESSION_STATE_LIMIT, ge=1, le=MAX_SESSION_STATE_LIMIT)
    max_realms: int = Field(DEFAULT_MAX_REALMS, ge=1, le=MAX_MAX_REALMS)
    max_open_realms: int = Field(DEFAULT_MAX_OPEN_REALMS, ge=1, le=MAX_MAX_OPEN_REALMS)
    recall_index_mb: int = Field(DEFAULT_RECALL_INDEX_MB, ge=1, le=MAX_RECALL_INDEX_MB)
    steward: Any = Field(default_factory=lambda: _steward(None))
    """``[agent_memory.steward]``: a :class:`meta_memory.review.config.StewardConfig` (disabled by default)."""

    @property
    def header(self) -> str:
        """The injection header text: ``instruction_header`` or ``"Agent memory"``."""
        return self.instruction_header or DEFAULT_INSTRUCTION_HEADER


_KEYS = tuple(AgentMemoryConfig.model_fields)


def _fail(key: str, rule: str) -> ConfigError:
    return ConfigError(f"agent_memory.{key}: {rule}")


def _bool(raw: dict[str, Any], key: str, default: bool) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise _fail(key, "must be a boolean")
    return value


def _choice(raw: dict[str, Any], key: str, allowed: tuple[str, ...], default: str) -> str:
    value = raw.get(key, default)
    if not isinstance(value, str) or value.strip().lower() not in allowed:
        shown = value if isinstance(value, str) else type(value).__name__
        raise _fail(key, f"must be one of {', '.join(repr(a) for a in allowed)} (got {shown!r})")
    return value.strip().lower()


def _ranged_int(raw: dict[str, Any], key: str, default: int, maximum: int) -> int:
    """An integer in ``1..maximum``; ``0`` means the default. Anything else is refused naming the range."""
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= maximum:
        shown = value if isinstance(value, int) and not isinstance(value, bool) else type(value).__name__
        raise _fail(key, f"must be an integer between 1 and {maximum} (0 = the default {default}); got {shown!r}")
    return value or default


def parse_content_trust(raw: Any) -> ContentTrustConfig:
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
    unknown = sorted(k for k in raw if k not in (*_CONTENT_TRUST_KEYS, "default"))
    if unknown:
        raise ConfigError(f"unsupported content_trust fields: {', '.join(unknown)}")
    default = raw.get("default", "trusted")
    if not isinstance(default, str) or default.strip().lower() not in ("trusted", "untrusted"):
        raise ConfigError("content_trust.default must be 'trusted' or 'untrusted'")
    out: dict[str, Any] = {"default": default.strip().lower()}
    for key in _CONTENT_TRUST_KEYS:
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
    store = _choice(raw, "store", ("sqlite", "postgres"), "sqlite")

    realm_raw = raw.get("realm", DEFAULT_REALM)
    if not isinstance(realm_raw, str):
        raise _fail("realm", "must be a string")
    realm = realm_raw.strip() or DEFAULT_REALM

    header = raw.get("instruction_header")
    if header is not None and not isinstance(header, str):
        raise _fail("instruction_header", "must be a string")

    dsn = raw.get("dsn")
    if dsn is not None and (not isinstance(dsn, str) or not dsn.strip()):
        raise _fail("dsn", "must be a non-empty string")
    if store == "postgres" and dsn is None:
        raise _fail("dsn", 'is required with store = "postgres"')
    if store != "postgres" and dsn is not None:
        raise _fail("dsn", 'is only valid with store = "postgres"')

    try:
        content_trust = parse_content_trust(raw.get("content_trust"))
    except ConfigError as exc:
        raise ConfigError(f"agent_memory.{exc}") from None

    return AgentMemoryConfig(
        enabled=_bool(raw, "enabled", True),
        realm=realm,
        selection=_choice(raw, "selection", ("always", "contextual"), "contextual"),  # type: ignore[arg-type]
        max_entries=_ranged_int(raw, "max_entries", DEFAULT_MAX_ENTRIES, MAX_MEMORY_ENTRIES),
        recall_timeout_ms=_ranged_int(raw, "recall_timeout_ms", DEFAULT_RECALL_TIMEOUT_MS, MAX_RECALL_TIMEOUT_MS),
        recall_failure_policy=_choice(raw, "recall_failure_policy", ("fail", "skip"), "skip"),  # type: ignore[arg-type]
        instruction_header=header,
        per_turn_injection=_choice(raw, "per_turn_injection", ("off", "budgeted"), "budgeted"),  # type: ignore[arg-type]
        defang_inbound=_bool(raw, "defang_inbound", True),
        llm_writes=_choice(raw, "llm_writes", ("observed", "quarantined"), "observed"),  # type: ignore[arg-type]
        recorder_tool=_bool(raw, "recorder_tool", True),
        operator_scope=_choice(raw, "operator_scope", ("off", "provisional"), "off"),  # type: ignore[arg-type]
        content_trust=content_trust,
        store=store,  # type: ignore[arg-type]
        dsn=dsn.strip() if dsn else None,
        recall_provider=_choice(raw, "recall_provider", ("lexical", "hybrid"), "lexical"),  # type: ignore[arg-type]
        erase_tombstoned_after_days=_retention_days(raw),
        session_state_expiry_days=_ranged_int(raw, "session_state_expiry_days", DEFAULT_SESSION_STATE_EXPIRY_DAYS,
                                               MAX_SESSION_STATE_EXPIRY_DAYS),
        session_state_limit=_ranged_int(raw, "session_state_limit", DEFAULT_SESSION_STATE_LIMIT,
                                         MAX_SESSION_STATE_LIMIT),
        max_realms=_ranged_int(raw, "max_realms", DEFAULT_MAX_REALMS, MAX_MAX_REALMS),
        max_open_realms=_ranged_int(raw, "max_open_realms", DEFAULT_MAX_OPEN_REALMS, MAX_MAX_OPEN_REALMS),
        recall_index_mb=_ranged_int(raw, "recall_index_mb", DEFAULT_RECALL_INDEX_MB, MAX_RECALL_INDEX_MB),
        steward=_steward(raw.get("steward")),
    )



def _retention_days(raw: dict[str, Any]) -> int | None:
    value = raw.get("erase_tombstoned_after_days")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_RETENTION_DAYS:
        raise _fail("erase_tombstoned_after_days", f"must be an integer number of days from 1 to {MAX_RETENTION_DAYS}")
    return value


def _steward(raw: Any) -> Any:
    from meta_memory.review.config import StewardConfig

    return StewardConfig.parse(raw)

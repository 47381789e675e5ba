"""``Meta.builder()`` (embedded runtime) and ``Meta.connect(url)`` (remote gateway).

Embedded: ``Meta.builder().persistent_state(path).build()`` runs the runtime in-process and
dispatches through the same method table as the gateway. The assertion ledger is persisted as
``<path>/memory-ledger-state.json`` (``local_json``, as the gateway does) unless another backend is
chosen: ``.ledger(memory.local_json(health_check_endpoint=...))`` adds a health check,
``.ledger(memory.in_memory())`` keeps it in memory only (``.memory(...)`` is the spec's name of
``.ledger(...)``). Without ``persistent_state`` the ledger is held in memory. Agent memory always lives
under the state directory.
Remote: ``Meta.connect("http://127.0.0.1:8765", token=None)`` speaks JSON-RPC
over HTTP; ``Meta.spawn(state_dir)`` starts ``meta-memory gateway --stdio``.

The spec's injection example, in Python::

    Meta.builder().persistent_state(".meta/state").roster_provider(app_roster) \
        .agent_memory(realm="default", selection="contextual", max_entries=8).build()

``.roster_provider(...)`` supplies the roster (``[[access.roster]]``: identities' roles and labels
per realm) and ``.recall_provider(...)`` a custom recall provider (:mod:`meta_memory.recall.custom`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from os import PathLike
from pathlib import Path
from typing import Any, Union

from ..clock import Clock
from ..config import MetaConfig, parse_config
from ..errors import ConfigError, StartupError
from ..limits import DEFAULT_MAX_RESPONSE_BYTES
from ..recall.custom import check_provider
from .handle import AsyncMetaHandle, MetaHandle
from .memory import InMemoryLedgerConfig, LocalJsonMemoryConfig
from .transport import AsyncHttpTransport, EmbeddedTransport, HttpTransport, StdioTransport

__all__ = ["Meta", "MetaBuilder"]

# snake_case wire names and the camelCase aliases the builder accepts (reference §10 "Builder").
_AGENT_MEMORY_ALIASES = {
    "maxEntries": "max_entries",
    "recallTimeoutMs": "recall_timeout_ms",
    "recallFailurePolicy": "recall_failure_policy",
    "instructionHeader": "instruction_header",
    "perTurnInjection": "per_turn_injection",
    "defangInbound": "defang_inbound",
    "llmWrites": "llm_writes",
    "sharedKeyTaint": "shared_key_taint",
    "recorderTool": "recorder_tool",
    "contentTrust": "content_trust",
    "operatorScope": "operator_scope",
    "recallProvider": "recall_provider",
    "sessionStateExpiryDays": "session_state_expiry_days",
    "sessionStateLimit": "session_state_limit",
    "sessionStateIdentityLimit": "session_state_identity_limit",
    "trustedMcpServers": "trusted_mcp_servers",
    "untrustedTools": "untrusted_tools",
    "trustedTools": "trusted_tools",
}


#: One roster entry: ``{"identity", "realm"?, "roles"?, "labels"?}`` or an object with those attributes.
RosterEntryLike = Union[Mapping[str, Any], object]
#: What ``roster_provider`` takes: the entries, or a function returning them (called once, at ``build``).
RosterProvider = Union[Iterable[RosterEntryLike], Callable[[], Iterable[RosterEntryLike]]]

_ROSTER_KEYS = ("identity", "realm", "roles", "labels")


def roster_entries(provider: RosterProvider) -> list[dict[str, Any]]:
    """The ``[[access.roster]]`` tables of a roster provider's entries, in order.

    ``provider`` is an iterable of entries or a callable returning one; an entry is a mapping with the
    keys ``identity``, ``realm`` (optional), ``roles`` and ``labels`` (optional lists), or an object
    with those attributes. Unknown mapping keys are left in, so the access decoder refuses them by
    name (``access.roster[0].role: unknown key``). Raises ``ConfigError`` when the provider (or what
    it returns) is not an iterable of entries, or when calling it raises."""
    source: Any = provider
    if callable(source) and not isinstance(source, (list, tuple)):
        try:
            source = source()
        except Exception as exc:
            raise ConfigError(f"roster_provider: the provider raised {type(exc).__name__}: {exc}") from None
    if isinstance(source, (str, bytes, Mapping)) or not isinstance(source, Iterable):
        raise ConfigError("roster_provider: takes an iterable of roster entries (or a function returning one), "
                          f"got {type(source).__name__}")
    out: list[dict[str, Any]] = []
    for i, entry in enumerate(source):
        if isinstance(entry, Mapping):
            out.append(dict(entry))
            continue
        if not hasattr(entry, "identity"):
            raise ConfigError(f"access.roster[{i}]: an entry is a table of identity, realm, roles and labels "
                              f"(got {type(entry).__name__})")
        table = {k: getattr(entry, k) for k in _ROSTER_KEYS if getattr(entry, k, None) is not None}
        for key in ("roles", "labels"):
            if key in table and not isinstance(table[key], (str, bytes)):
                table[key] = list(table[key])
        out.append(table)
    return out


def _snake(value: Any) -> Any:
    if isinstance(value, dict):
        return {_AGENT_MEMORY_ALIASES.get(k, k): _snake(v) for k, v in value.items()}
    return value


class MetaBuilder:
    """Fluent builder for an embedded runtime. Every option is validated by the same config
    decoder the gateway uses, so an unknown option is refused the same way (``ConfigError``)."""

    def __init__(self) -> None:
        self._state: Path | None = None
        self._memory: LocalJsonMemoryConfig | InMemoryLedgerConfig | None = None
        self._agent_memory: dict[str, Any] | None = None
        self._access: dict[str, Any] | None = None
        self._roster: RosterProvider | None = None
        self._recall_provider: object | None = None
        self._clock: Clock | None = None

    def persistent_state(self, path: str | Path) -> "MetaBuilder":
        """State directory: ledger file (``local_json`` unless ``.ledger(...)`` chose otherwise),
        agent-memory databases, events."""
        if not isinstance(path, (str, PathLike)):
            raise ConfigError(f"persistent_state: must be a path (a str or os.PathLike), not {type(path).__name__}")
        self._state = Path(path)
        return self

    def ledger(self, config: LocalJsonMemoryConfig | InMemoryLedgerConfig | None = None,
               **kwargs: Any) -> "MetaBuilder":
        """The assertion ledger's backend: ``memory.local_json(...)`` (the default with
        ``persistent_state``; ``None`` means it too), persisted as ``<state-dir>/memory-ledger-state.json``,
        or ``memory.in_memory()``, held in memory only. Any keyword (``stores=``, ``space_id=``, ``collection=``, ...) is refused: unsupported
        configuration is never a silent no-op (``ConfigError``)."""
        if kwargs:
            raise ConfigError(f"memory() got unsupported option(s): {', '.join(sorted(kwargs))}")
        if config is not None and not isinstance(config, (LocalJsonMemoryConfig, InMemoryLedgerConfig)):
            raise ConfigError("memory() takes memory.local_json(...) (the only persisted ledger backend) "
                              "or memory.in_memory()")
        self._memory = config or LocalJsonMemoryConfig()
        return self

    def memory(self, config: LocalJsonMemoryConfig | InMemoryLedgerConfig | None = None,
               **kwargs: Any) -> "MetaBuilder":
        """The spec's name of :meth:`ledger` (the builder's ``memory(...)`` configures the assertion ledger)."""
        return self.ledger(config, **kwargs)

    def agent_memory(self, enabled: bool | dict[str, Any] | None = None, **options: Any) -> "MetaBuilder":
        """Agent-memory options with the ``[agent_memory]`` keys (snake_case or camelCase)."""
        if enabled is False:
            self._agent_memory = {"enabled": False}
            return self
        raw = dict(enabled) if isinstance(enabled, dict) else {}
        raw.update(options)
        self._agent_memory = _snake(raw)
        return self

    def access(self, **options: Any) -> "MetaBuilder":
        """Access-control options with the ``[access]`` keys."""
        self._access = options
        return self

    def roster_provider(self, provider: RosterProvider) -> "MetaBuilder":
        """The host's roster: the roles and labels of identities per realm, as ``[[access.roster]]``
        gives them (access rules scoped by a target's ``role`` or ``label`` match them; see
        docs/access.md). ``provider`` is an iterable of entries ``{"identity", "realm"?, "roles"?,
        "labels"?}`` (or objects with those attributes), or a function returning one, called once
        when the runtime is built. Its entries follow any ``access(roster=[...])`` entries; the
        access decoder checks them (``ConfigError`` naming ``access.roster[i].<key>``; an identity
        listed twice in a realm is refused). The roster matters once ``access(enabled=True)``."""
        if provider is None or isinstance(provider, (str, bytes, Mapping)) or not (
                callable(provider) or isinstance(provider, Iterable)):
            raise ConfigError("roster_provider() takes an iterable of roster entries or a function returning one")
        self._roster = provider
        return self

    def recall_provider(self, provider: object) -> "MetaBuilder":
        """A custom recall provider (:mod:`meta_memory.recall.custom`): an object with
        ``recall(request, reader) -> RecallOutcome``, or ``"lexical"`` / ``"hybrid"`` /
        ``"package.module:Class"`` (the ``[agent_memory] recall_provider`` key). The runtime re-checks
        every record it returns against the caller's scope and runs it under ``recall_timeout_ms``.
        Raises ``ConfigError`` for a class (give an instance) or an object without ``recall``; giving
        ``agent_memory(recall_provider=...)`` as well is refused at ``build``."""
        if isinstance(provider, str):
            self._recall_provider = provider
            return self
        self._recall_provider = check_provider(provider, type(provider).__name__)
        return self

    def clock(self, clock: Clock) -> "MetaBuilder":
        """Inject a clock (tests)."""
        self._clock = clock
        return self

    def _config(self) -> MetaConfig:
        raw: dict[str, Any] = {}
        ledger = self._memory
        if ledger is None and self._state is not None:
            ledger = LocalJsonMemoryConfig()   # persistent_state persists the ledger, as the gateway does
        if isinstance(ledger, LocalJsonMemoryConfig):
            raw["memory"] = ledger.to_dict()
        if self._agent_memory is not None:
            raw["agent_memory"] = self._agent_memory
        if isinstance(self._recall_provider, str):
            if "recall_provider" in (self._agent_memory or {}):
                raise ConfigError("recall_provider() and agent_memory(recall_provider=...) were both given; "
                                  "configure one recall provider")
            raw["agent_memory"] = {**(self._agent_memory or {}), "recall_provider": self._recall_provider}
        if self._access is not None:
            raw["access"] = self._access
        if self._roster is not None:
            access = dict(raw.get("access") or {})
            before = access.get("roster") or []
            if not isinstance(before, (list, tuple)):
                raise ConfigError("access.roster: must be an array")
            access["roster"] = [*before, *roster_entries(self._roster)]
            raw["access"] = access
        return parse_config(raw)

    def _gateway(self) -> Any:
        from ..runtime import Runtime, open_runtime
        from ..server.gateway import Gateway

        custom = None if isinstance(self._recall_provider, str) else self._recall_provider
        config = self._config()
        state = self._state
        if state is not None and (state.is_file() or any(p.is_file() for p in state.parents)):
            raise StartupError(f"cannot start: persistent_state {state} is not a directory (a file holds its path)")
        if state is None:
            runtime = Runtime(config, None, clock=self._clock, recall_provider=custom)
        else:
            runtime = open_runtime(config, state, clock=self._clock, recall_provider=custom)
        return Gateway.for_runtime(runtime)

    def build(self) -> MetaHandle:
        """An embedded synchronous handle. Raises ``ConfigError``/``StartupError``."""
        return MetaHandle(EmbeddedTransport(self._gateway()))

    def build_async(self) -> AsyncMetaHandle:
        """An embedded asynchronous handle."""
        return AsyncMetaHandle(EmbeddedTransport(self._gateway()))


class Meta:
    """Entry points of the Python SDK."""

    @staticmethod
    def builder() -> MetaBuilder:
        return MetaBuilder()

    @staticmethod
    def connect(url: str, *, token: str | None = None, timeout_s: float = 30.0,
                max_answer_bytes: int = DEFAULT_MAX_RESPONSE_BYTES) -> MetaHandle:
        """A synchronous handle on a running gateway (``http://host:port``). Each call, answer included,
        takes at most ``timeout_s`` seconds and reads at most ``max_answer_bytes`` of answer."""
        return MetaHandle(HttpTransport(url, token=token, timeout_s=timeout_s, max_answer_bytes=max_answer_bytes))

    @staticmethod
    def connect_async(url: str, *, token: str | None = None, timeout_s: float = 30.0,
                      max_answer_bytes: int = DEFAULT_MAX_RESPONSE_BYTES) -> AsyncMetaHandle:
        """An asynchronous handle on a running gateway (the bounds of :meth:`connect`)."""
        return AsyncMetaHandle(AsyncHttpTransport(url, token=token, timeout_s=timeout_s,
                                                  max_answer_bytes=max_answer_bytes))

    @staticmethod
    def spawn(state_dir: str | Path, *, config: str | Path | None = None) -> MetaHandle:
        """Spawn ``meta-memory gateway --stdio`` on ``state_dir`` and return a handle over its pipes."""
        return MetaHandle(StdioTransport(state_dir, config=config))

    @staticmethod
    def spawn_async(state_dir: str | Path, *, config: str | Path | None = None) -> AsyncMetaHandle:
        """:meth:`spawn` with an asynchronous handle (calls run one at a time, off the event loop)."""
        return AsyncMetaHandle(StdioTransport(state_dir, config=config))

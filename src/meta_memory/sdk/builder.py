"""``Meta.builder()`` (embedded runtime) and ``Meta.connect(url)`` (remote gateway).

Embedded: ``Meta.builder().persistent_state(path).ledger(memory.local_json()).build()``
runs the runtime in-process and dispatches through the same method table as
the gateway (``.memory(...)`` is the spec's name of ``.ledger(...)``). Without it
the assertion ledger is held in memory only; agent memory always lives under the
state directory.
Remote: ``Meta.connect("http://127.0.0.1:8765", token=None)`` speaks JSON-RPC
over HTTP; ``Meta.spawn(state_dir)`` starts ``meta-memory gateway --stdio``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..clock import Clock
from ..config import MetaConfig, parse_config
from ..errors import ConfigError
from .handle import AsyncMetaHandle, MetaHandle
from .memory import LocalJsonMemoryConfig
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
    "recorderTool": "recorder_tool",
    "contentTrust": "content_trust",
    "operatorScope": "operator_scope",
    "recallProvider": "recall_provider",
    "sessionStateExpiryDays": "session_state_expiry_days",
    "sessionStateLimit": "session_state_limit",
    "trustedMcpServers": "trusted_mcp_servers",
    "untrustedTools": "untrusted_tools",
    "trustedTools": "trusted_tools",
}


def _snake(value: Any) -> Any:
    if isinstance(value, dict):
        return {_AGENT_MEMORY_ALIASES.get(k, k): _snake(v) for k, v in value.items()}
    return value


class MetaBuilder:
    """Fluent builder for an embedded runtime. Every option is validated by the same config
    decoder the gateway uses, so an unknown option is refused the same way (``ConfigError``)."""

    def __init__(self) -> None:
        self._state: Path | None = None
        self._memory: LocalJsonMemoryConfig | None = None
        self._agent_memory: dict[str, Any] | None = None
        self._access: dict[str, Any] | None = None
        self._clock: Clock | None = None

    def persistent_state(self, path: str | Path) -> "MetaBuilder":
        """State directory: ledger file, agent-memory databases, events."""
        self._state = Path(path)
        return self

    def ledger(self, config: LocalJsonMemoryConfig | None = None, **kwargs: Any) -> "MetaBuilder":
        """The assertion ledger's backend (``memory.local_json(...)``), persisted under the state directory.
        Any keyword (``stores=``, ``space_id=``, ``collection=``, ...) is refused: unsupported
        configuration is never a silent no-op (``ConfigError``)."""
        if kwargs:
            raise ConfigError(f"memory() got unsupported option(s): {', '.join(sorted(kwargs))}")
        if config is not None and not isinstance(config, LocalJsonMemoryConfig):
            raise ConfigError("memory() takes memory.local_json(...): local_json is the only ledger backend")
        self._memory = config or LocalJsonMemoryConfig()
        return self

    def memory(self, config: LocalJsonMemoryConfig | None = None, **kwargs: Any) -> "MetaBuilder":
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

    def clock(self, clock: Clock) -> "MetaBuilder":
        """Inject a clock (tests)."""
        self._clock = clock
        return self

    def _config(self) -> MetaConfig:
        raw: dict[str, Any] = {}
        if self._memory is not None:
            raw["memory"] = self._memory.to_dict()
        if self._agent_memory is not None:
            raw["agent_memory"] = self._agent_memory
        if self._access is not None:
            raw["access"] = self._access
        return parse_config(raw)

    def _gateway(self) -> Any:
        from ..runtime import Runtime
        from ..server.gateway import Gateway

        runtime = Runtime(self._config(), self._state, clock=self._clock)
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
    def connect(url: str, *, token: str | None = None, timeout_s: float = 30.0) -> MetaHandle:
        """A synchronous handle on a running gateway (``http://host:port``)."""
        return MetaHandle(HttpTransport(url, token=token, timeout_s=timeout_s))

    @staticmethod
    def connect_async(url: str, *, token: str | None = None, timeout_s: float = 30.0) -> AsyncMetaHandle:
        """An asynchronous handle on a running gateway."""
        return AsyncMetaHandle(AsyncHttpTransport(url, token=token, timeout_s=timeout_s))

    @staticmethod
    def spawn(state_dir: str | Path, *, config: str | Path | None = None) -> MetaHandle:
        """Spawn ``meta-memory gateway --stdio`` on ``state_dir`` and return a handle over its pipes."""
        return MetaHandle(StdioTransport(state_dir, config=config))

    @staticmethod
    def spawn_async(state_dir: str | Path, *, config: str | Path | None = None) -> AsyncMetaHandle:
        """:meth:`spawn` with an asynchronous handle (calls run one at a time, off the event loop)."""
        return AsyncMetaHandle(StdioTransport(state_dir, config=config))

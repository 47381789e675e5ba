"""Ledger backend helpers for the SDK builder (seed: "The runtime owns the assertion ledger").

``memory.local_json(health_check_endpoint=None)`` is the only persisted backend, and the one
``persistent_state(dir)`` uses when no other is chosen. ``memory.in_memory()`` is the explicit choice
of a ledger held in memory only (lost when the handle closes).
``memory.elephant(...)`` exists only to refuse with a pointer to ``local_json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NoReturn

from ..errors import ConfigError

__all__ = ["LocalJsonMemoryConfig", "InMemoryLedgerConfig", "local_json", "in_memory", "elephant"]


@dataclass(frozen=True)
class LocalJsonMemoryConfig:
    """The ``local_json`` ledger backend: state file ``<persistent_state>/memory-ledger-state.json``.

    ``health_check_endpoint``: optional ``http://host[:port]`` base URL; ``GET <it>/v1/health`` must
    answer 2xx (2 s timeout) at startup and before every persist.
    """

    health_check_endpoint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": "local_json"}
        if self.health_check_endpoint is not None:
            out["health_check_endpoint"] = self.health_check_endpoint
        return out


def local_json(health_check_endpoint: str | None = None) -> LocalJsonMemoryConfig:
    """The ``local_json`` ledger backend, optionally gated by an HTTP health check."""
    return LocalJsonMemoryConfig(health_check_endpoint=health_check_endpoint)


@dataclass(frozen=True)
class InMemoryLedgerConfig:
    """A ledger held in memory only, even with ``persistent_state(dir)``: nothing is written, and the
    assertions are gone when the handle closes (``status()`` reports ``ledger.backend = "in_memory"``)."""


def in_memory() -> InMemoryLedgerConfig:
    """The explicit choice of an in-memory ledger (``.ledger(memory.in_memory())``); without a
    ``.ledger(...)`` call, ``persistent_state(dir)`` persists the ledger as ``local_json``."""
    return InMemoryLedgerConfig()


def elephant(*args: Any, **kwargs: Any) -> NoReturn:
    """Removed backend: always raises :class:`ConfigError` pointing to ``local_json``."""
    raise ConfigError(
        "memory.elephant() was removed: the only ledger backend is local_json. "
        "Use memory.local_json(health_check_endpoint=...) and pass the old endpoint as health_check_endpoint"
    )

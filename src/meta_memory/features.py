"""Wires the optional features (agent memory, firewall, injection, review, access) onto a runtime."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .runtime import Runtime

__all__ = ["wire_features"]


def wire_features(runtime: "Runtime") -> None:
    """Attach feature services to ``runtime`` according to its config (extended as features land)."""
    return None

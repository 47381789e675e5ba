"""Whether the RPC params and result models build their validators on first use (pydantic ``defer_build``).

Built on first use, most of them are never built by a gateway that is never called with them, which takes
their build off the start (:class:`~meta_memory.rpc.params.Params`, :class:`~meta_memory.rpc.results.Result`).
pydantic rebuilds a deferred model under a lock from 2.14 on. Before, worker threads calling methods for the
first time at once could build a model nesting another from its base's empty core schema, which then refused
every field as extra, for good (2.11.0 to 2.11.4 could also take the base's validator). So with an older
pydantic (the CrewAI extra's environment: crewai pins ``pydantic<2.13``) the models are built where they are
defined, as every release before deferring them did.
"""

from __future__ import annotations

from pydantic.version import VERSION

__all__ = ["DEFER_BUILD", "defers_safely"]


def defers_safely(version: str) -> bool:
    """Whether pydantic ``version`` (``"2.14.1"``, ``"2.15.0b1"``) rebuilds a deferred model under a lock."""
    major, minor = (int("".join(c for c in part if c.isdigit()) or 0) for part in version.split(".")[:2])
    return (major, minor) >= (2, 14)


#: ``defer_build`` of the RPC params and result models: the installed pydantic's :func:`defers_safely`.
DEFER_BUILD: bool = defers_safely(VERSION)

"""The gateway's memory, reported: the process's resident memory and each bounded component beside its bound.

``meta/status`` ``agent_memory.memory`` and the ``meta_memory_memory_bytes{component}`` /
``meta_memory_memory_limit_bytes{component}`` gauges read :func:`memory_report`::

    {"rss_bytes": int | None, "peak_rss_bytes": int | None,
     "limit_bytes": int,                       # the components' bounds added up
     "components": {
        "recall_index": {"bytes", "limit_bytes", "realms", "builds", "refusals", "evictions"},
        "sqlite":       {"bytes" (None when unreadable), "limit_bytes", "open_realms"},
        "view_cache":   {"bytes", "limit_bytes", "views"},
        "vector_cache": {"bytes", "limit_bytes", "scopes", "queries"}}}   # hybrid recall only

Every figure is in bytes. ``rss_bytes`` / ``peak_rss_bytes`` are the process's ``VmRSS`` / ``VmHWM`` (Linux
``/proc/self/status``; elsewhere the peak from ``getrusage`` and no current figure). A component's
``bytes`` is its own count (each module documents how it is measured), held to ``limit_bytes`` by
eviction or refusal; what no setting bounds (the interpreter, its modules, a recall's transient objects)
is the difference between ``rss_bytes`` and the components. ``[agent_memory]`` keys: ``recall_index_mb``,
``sqlite_cache_mb``, ``view_cache_mb``, ``vector_cache_mb`` (``docs/configuration.md``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

__all__ = ["memory_report", "process_memory"]


def process_memory() -> dict[str, int | None]:
    """``{rss_bytes, peak_rss_bytes}`` of this process (``None`` where the platform does not say)."""
    try:
        fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines()
                      if ":" in line)
        return {"rss_bytes": int(fields["VmRSS"].split()[0]) * 1024,
                "peak_rss_bytes": int(fields["VmHWM"].split()[0]) * 1024}
    except (OSError, KeyError, ValueError, IndexError):
        pass
    try:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return {"rss_bytes": None, "peak_rss_bytes": peak if sys.platform == "darwin" else peak * 1024}
    except (ImportError, OSError):
        return {"rss_bytes": None, "peak_rss_bytes": None}


def memory_report(store: Any, provider: Any) -> dict[str, Any]:
    """The report above for agent memory's ``store`` and recall ``provider`` (either may report nothing:
    a store without ``memory_stats``, such as PostgreSQL's, adds no component)."""
    components: dict[str, dict[str, Any]] = {}
    stats = getattr(store, "memory_stats", None)
    if callable(stats):
        components.update(stats())
    vectors = getattr(provider, "memory_stats", None)
    if callable(vectors):
        components["vector_cache"] = vectors()
    return {**process_memory(),
            "limit_bytes": sum(int(c.get("limit_bytes") or 0) for c in components.values()),
            "components": components}

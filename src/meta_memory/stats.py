"""The one percentile the product and its benchmarks report: nearest rank over the sorted samples."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["percentile"]


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (0-100) of ``values`` by nearest rank: the sorted samples' item at index
    ``round(p / 100 * (n - 1))`` (``p`` 50 of ``[1, 2]`` is ``1``, of ``[1, 2, 3]`` is ``2``; ``p`` 100 the
    largest, ``p`` 0 the smallest); 0.0 for no values."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, max(0, int(round(p / 100 * (len(ordered) - 1)))))]

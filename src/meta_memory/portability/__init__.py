"""Export and import: a user's memory out of one state and back into another (beyond the spec).

``meta-memory export`` writes JSON Lines (:mod:`.format`): a header, every agent-memory record of the
chosen realms or identity with its provenance, trust tier, status, supersede links and timestamps,
and the ledger's assertions and conflict signals. ``meta-memory import`` reads them back through the
one validator (:class:`~meta_memory.agent_memory.batch.RestoreOp`): idempotent by memory id, secrets
refused, trust never raised, quarantined content still quarantined. ``meta-memory import --from
mem0|langgraph`` lands another memory system's records as application writes (:mod:`.foreign`).

The names below load on first use, so a command that only needs :mod:`.cli` (``meta-memory --help``, a
command over ``--url``) does not import the exporter and importer and all they use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .exporter import ExportSummary, export_jsonl
    from .importer import ImportSummary, import_jsonl

__all__ = ["ExportSummary", "ImportSummary", "export_jsonl", "import_jsonl"]


def __getattr__(name: str) -> object:
    """``ExportSummary`` and ``export_jsonl`` from :mod:`.exporter`, ``ImportSummary`` and ``import_jsonl`` from
    :mod:`.importer`, imported on first use; AttributeError for any other name."""
    if name in ("ExportSummary", "export_jsonl"):
        from . import exporter

        return getattr(exporter, name)
    if name in ("ImportSummary", "import_jsonl"):
        from . import importer

        return getattr(importer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names, the ones loaded on first use included."""
    return sorted({*globals(), *__all__})

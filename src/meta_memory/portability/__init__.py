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

from ..lazy_names import lazy_names

if TYPE_CHECKING:  # pragma: no cover
    from .exporter import ExportSummary, export_jsonl
    from .importer import ImportSummary, import_jsonl

__all__ = ["ExportSummary", "ImportSummary", "export_jsonl", "import_jsonl"]


#: Where each public name is defined (a module of this package).
_HOMES = {"ExportSummary": "exporter", "export_jsonl": "exporter", "ImportSummary": "importer",
          "import_jsonl": "importer"}

__getattr__, __dir__ = lazy_names(__name__, _HOMES)

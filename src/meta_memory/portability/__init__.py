"""Export and import: a user's memory out of one state and back into another (beyond the spec).

``meta-memory export`` writes JSON Lines (:mod:`.format`): a header, every agent-memory record of the
chosen realms or identity with its provenance, trust tier, status, supersede links and timestamps,
and the ledger's assertions and conflict signals. ``meta-memory import`` reads them back through the
one validator (:class:`~meta_memory.agent_memory.batch.RestoreOp`): idempotent by memory id, secrets
refused, trust never raised, quarantined content still quarantined. ``meta-memory import --from
mem0|langgraph`` lands another memory system's records as application writes (:mod:`.foreign`).
"""

from .exporter import ExportSummary, export_jsonl
from .importer import ImportSummary, import_jsonl

__all__ = ["ExportSummary", "ImportSummary", "export_jsonl", "import_jsonl"]

"""Shared shapes of the review area: reviewers, receipts, constants (seed: "Reviewing quarantined records").

All timestamps are UTC epoch milliseconds (``int``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from meta_memory.agent_memory.model import Author, MemoryRecord, NewMemoryRecord, Provenance
from meta_memory.agent_memory.secrets import scan_text
from meta_memory.limits import MAX_REASON_BYTES

__all__ = [
    "copy_of",
    "PROMOTION_EXPIRY_MS",
    "Reviewer",
    "receipt",
    "clip_rationale",
]

PROMOTION_EXPIRY_MS = 7 * 24 * 60 * 60 * 1000
"""Gated promotions expire seven days after they were staged (reference §9)."""


@dataclass(frozen=True, slots=True)
class Reviewer:
    """Who decides a quarantined record.

    ``operator`` with ``principal`` (the authenticated console principal, or
    ``None`` when no principal is known) or ``steward`` with the dream's
    ``run_id``. JSON: ``{"kind": "operator", "principal": "ana" | null}`` or
    ``{"kind": "steward", "run_id": "dream-..."}``.
    """

    kind: str
    principal: str | None = None
    run_id: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("operator", "steward"):
            raise ValueError("reviewer kind must be 'operator' or 'steward'")
        if self.kind == "steward" and not self.run_id:
            raise ValueError("a steward reviewer needs a run_id")

    @classmethod
    def operator(cls, principal: str | None = None) -> Reviewer:
        return cls("operator", principal=principal)

    @classmethod
    def steward(cls, run_id: str) -> Reviewer:
        return cls("steward", run_id=run_id)

    @property
    def is_operator(self) -> bool:
        return self.kind == "operator"

    def author(self) -> Author:
        """The batch author of the decision: ``operator{principal?}`` or ``steward{run_id}``."""
        if self.kind == "operator":
            return Author.operator(self.principal)
        return Author.steward(self.run_id or "")

    def to_json(self) -> dict[str, Any]:
        if self.kind == "operator":
            return {"kind": "operator", "principal": self.principal}
        return {"kind": "steward", "run_id": self.run_id}

    @classmethod
    def from_json(cls, data: Any) -> Reviewer:
        """Decode the JSON form; raises ``ValueError`` for anything else."""
        if not isinstance(data, dict):
            raise ValueError("reviewer must be an object")
        kind = data.get("kind")
        if kind == "operator":
            principal = data.get("principal")
            if principal is not None and not isinstance(principal, str):
                raise ValueError("reviewer.principal must be a string or null")
            return cls.operator(principal)
        if kind == "steward":
            run_id = data.get("run_id")
            if not isinstance(run_id, str) or not run_id:
                raise ValueError("reviewer.run_id must be a non-empty string")
            return cls.steward(run_id)
        raise ValueError("reviewer kind must be 'operator' or 'steward'")


def receipt(record: MemoryRecord) -> dict[str, Any]:
    """A record as a decision reports it (its state now, body-free).

    ``{memory_id, scope, kind, status, trust, ever_quarantined, content_hash,
    supersedes?, derived_from, created_at_ms, updated_at_ms}``.
    """
    out: dict[str, Any] = {
        "memory_id": record.id,
        "scope": record.scope.to_json(),
        "kind": record.kind.value,
        "status": record.status.to_json(),
        "trust": record.trust.value,
        "ever_quarantined": record.ever_quarantined,
        "content_hash": record.content_hash,
    }
    if record.supersedes is not None:
        out["supersedes"] = record.supersedes
    out["derived_from"] = list(record.derived_from)
    out["created_at_ms"] = record.created_at_ms
    out["updated_at_ms"] = record.updated_at_ms
    return out


def clip_rationale(text: str | None, limit: int = MAX_REASON_BYTES) -> str | None:
    """Trim ``text``; ``None`` when empty; cut to at most ``limit`` UTF-8 bytes (on a character boundary).

    For rationales that come from a steward (an operator's over-long rationale is refused instead). A text
    holding a credential (:func:`~meta_memory.agent_memory.secrets.scan_text`) is withheld, named by its
    secret class (``[withheld: matches 'github-token']``), as an operator's is refused: a rationale is
    durable (the dream's detail, the audit rows, every replay).
    """
    if text is None:
        return None
    text = text.strip()
    if not text:
        return None
    if (secret_class := scan_text(text)) is not None:
        return f"[withheld: matches '{secret_class}']"
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text
    return raw[:limit].decode("utf-8", "ignore").rstrip() or None


def copy_of(rec: MemoryRecord, provenance: Provenance) -> NewMemoryRecord:
    """A new record carrying ``rec``'s content (title, body, kind, description, tags) and its expiry under
    ``provenance``: the copy a quarantine release, a gated promotion and a harvest write (a copy of an
    expiring record expires with it, so a release never brings an expired record back as active)."""
    return NewMemoryRecord(
        title=rec.title, body=rec.body, kind=rec.kind, description=rec.description, tags=rec.tags,
        provenance=provenance, expires_at_ms=rec.expires_at_ms,
    )

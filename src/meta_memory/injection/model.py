"""Value types exchanged between the injection coordinator and its providers.

Providers (recall, manifest, ledger, usage marks) are plain callables the
runtime wires in; these frozen dataclasses are the shapes they exchange.
None of these objects ever holds an injection nonce, except
:attr:`InjectionResult.text`, which is the block itself (and is kept out of
``repr``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

#: Typed reasons an injection produced no block (reference §3B "Per-turn injection").
SKIP_PER_TURN_OFF = "per_turn_injection_off"
SKIP_EMPTY_QUERY = "contextual_with_empty_query"
SKIP_BUDGET_EXHAUSTED = "budget_exhausted"
SKIP_NO_RECORDS = "no_records"
SKIP_NOTHING_RENDERABLE = "nothing_renderable"
#: Recall (or the manifest) failed or timed out under ``recall_failure_policy = "skip"``.
#: Distinct from ``no_records`` so a host can tell an outage from an empty memory.
SKIP_RECALL_FAILED = "recall_failed"
SKIP_REASONS = (
    SKIP_PER_TURN_OFF,
    SKIP_EMPTY_QUERY,
    SKIP_BUDGET_EXHAUSTED,
    SKIP_NO_RECORDS,
    SKIP_NOTHING_RENDERABLE,
    SKIP_RECALL_FAILED,
)


def _plain(value: Any) -> str | None:
    """An enum's ``value`` or the string itself; ``None`` for missing/empty."""
    if value is None:
        return None
    text = str(getattr(value, "value", value))
    return text or None


@dataclass(frozen=True, slots=True)
class InjectableRecord:
    """One recalled record as injection renders it.

    Attributes:
        memory_id: the record id (goes into ledger rows, never rendered).
        title, body: raw text; rendering compacts whitespace, truncates and escapes.
        created_at_ms: UTC epoch ms; ``<= 0`` means unknown (no ``age`` attribute).
        scope_kind: ``identity`` / ``mob`` / ``operator`` / ``realm`` or ``None``.
        trust: trust tier name (e.g. ``agent_observed``) or ``None``.
        has_provenance: the record came with scope/trust provenance; labels are
            rendered only when defanging is on and some record has provenance.
    """

    memory_id: str
    title: str
    body: str
    created_at_ms: int = 0
    scope_kind: str | None = None
    trust: str | None = None
    has_provenance: bool = False

    @classmethod
    def from_stored(cls, record: Any, *, with_provenance: bool = True) -> InjectableRecord:
        """Adapt a stored record (duck-typed: ``id``/``memory_id``, ``title``, ``body``,
        ``created_at_ms``, optional ``scope.kind`` and ``trust``; enum values are unwrapped).

        ``with_provenance=False`` drops scope and trust (a provider that
        cannot vouch for them), so no labels render.
        """
        scope = getattr(record, "scope", None)
        kind = _plain(getattr(scope, "kind", None)) if with_provenance else None
        trust = _plain(getattr(record, "trust", None)) if with_provenance else None
        return cls(
            memory_id=str(getattr(record, "memory_id", None) or record.id),
            title=str(record.title),
            body=str(record.body),
            created_at_ms=int(getattr(record, "created_at_ms", 0) or 0),
            scope_kind=kind,
            trust=trust,
            has_provenance=bool(with_provenance and (kind or trust)),
        )


@dataclass(frozen=True, slots=True)
class IndexRow:
    """One metadata-only row of the build-time memory index (reference §3B build-time).

    ``age_days`` gives the age phrase (``saved today`` / ``saved N days ago``);
    ``None`` renders the kind alone. Same fields as the store's ``RecordMeta``
    manifest row (``id`` -> ``memory_id``).
    """

    memory_id: str
    kind: str
    title: str
    description: str = ""
    age_days: int | None = None

    @classmethod
    def from_stored(cls, record: Any, now_ms: int | None = None) -> IndexRow:
        """Adapt a manifest row or stored record (duck-typed).

        Reads ``id``/``memory_id``, ``kind``, ``title``, optional
        ``description``, and ``age_days``; without ``age_days`` the age is
        computed from ``updated_at_ms`` (else ``created_at_ms``) when
        ``now_ms`` is given.
        """
        age = getattr(record, "age_days", None)
        if age is None and now_ms is not None:
            saved = int(getattr(record, "updated_at_ms", 0) or getattr(record, "created_at_ms", 0) or 0)
            age = max(0, now_ms - saved) // 86_400_000 if saved > 0 else None
        return cls(
            memory_id=str(getattr(record, "memory_id", None) or record.id),
            kind=_plain(getattr(record, "kind", None)) or "fact",
            title=str(record.title),
            description=str(getattr(record, "description", "") or ""),
            age_days=None if age is None else int(age),
        )


@dataclass(frozen=True, slots=True)
class ScopeRef:
    """A memory scope the build reads: ``kind`` with its ``key`` within ``realm``.

    ``key`` is the identity for ``identity``, the mob id for ``mob``, the
    operator for ``operator`` and ``""`` for ``realm`` (as the store's ``Scope``).
    """

    kind: str
    realm: str
    key: str = ""


@dataclass(frozen=True, slots=True)
class RecallRequest:
    """What the recall provider is asked for (one automatic recall).

    ``query_text`` is ``None`` when the compacted text is empty; ``query_terms``
    are normalised terms (may be empty; providers also tokenise ``query_text``).
    ``scopes`` is ``None`` for a turn (provider's default read composition) and
    the build's scope set for a build.
    """

    identity: str
    realm: str
    query_text: str | None
    query_terms: tuple[str, ...]
    selection: str
    max_entries: int
    scopes: tuple[ScopeRef, ...] | None = None


@dataclass(frozen=True, slots=True)
class LedgerRow:
    """One injection-ledger row: this record went into this identity's context.

    ``session_key`` is ``None`` for build-time assembly; ``surface`` is
    ``"turn"`` or ``"build"``; ``at_ms`` is UTC epoch ms.
    """

    record_id: str
    identity: str
    session_key: str | None
    surface: str
    at_ms: int

    def to_dict(self) -> dict[str, Any]:
        """JSON shape ``{record_id, identity, session_key, surface, at_ms}``."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class InjectionResult:
    """Outcome of one injection.

    Exactly one of ``text`` / ``skip_reason`` is set. ``text`` is the quoted
    observation block to deliver as a separate injected-context body (it holds
    the nonce, so it is left out of ``repr``). ``included_ids`` are the
    records rendered, in order; ``rendered_bytes`` is ``len(text)`` in UTF-8
    bytes (0 when skipped).
    """

    text: str | None = field(default=None, repr=False)
    skip_reason: str | None = None
    included_ids: tuple[str, ...] = ()
    rendered_bytes: int = 0
    surface: str = "turn"

    @classmethod
    def skipped(cls, reason: str, surface: str = "turn") -> InjectionResult:
        """A result with no block and a typed ``skip_reason``."""
        return cls(text=None, skip_reason=reason, surface=surface)

    def to_dict(self) -> dict[str, Any]:
        """The ``meta/turn/inject`` result: ``{text, skip_reason, included_ids, rendered_bytes, surface}``."""
        return {
            "text": self.text,
            "skip_reason": self.skip_reason,
            "included_ids": list(self.included_ids),
            "rendered_bytes": self.rendered_bytes,
            "surface": self.surface,
        }


#: ``recall_fn(request) -> records`` (may block; run under the recall timeout): :class:`InjectableRecord`
#: or any stored record :meth:`InjectableRecord.from_stored` adapts.
RecallFn = Callable[[RecallRequest], Sequence[object]]
#: ``manifest_fn(scope, limit) -> rows``: newest working set of a scope, metadata only.
ManifestFn = Callable[[ScopeRef, int], Sequence[object]]  # IndexRow, or a store row IndexRow.from_stored adapts
#: ``log_injections_fn(realm, rows)``: append injection-ledger rows.
LogInjectionsFn = Callable[[str, Sequence[LedgerRow]], None]
#: ``mark_usage_fn(realm, record_ids, usage)``: usage is ``"injected"`` here.
MarkUsageFn = Callable[[str, Sequence[str], str], None]
#: ``terms_fn(query_text) -> normalised terms`` (recall's tokeniser).
TermsFn = Callable[[str], Sequence[str]]

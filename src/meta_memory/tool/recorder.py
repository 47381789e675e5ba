"""The ``memory`` recorder tool's dispatch (seed: "The `memory` recorder tool"; reference notes §4).

:class:`RecorderTool` turns one model tool call into one store operation and a
:class:`ToolResult`. The scope is pinned to the calling session
(:class:`~meta_memory.session_ref.SessionRef`: realm, identity, session key), which
the host names: the schema has no field that names an identity, realm or scope,
so arguments can never retarget a write or a read. The host's ``mob`` (the mob the
member runs in) is the one shared scope a call reaches: ``propose_to_mob`` queues a
proposal for it, and ``recall`` searches it beside the identity's own records
(:class:`RecallsMob`). Every write carries agent authorship,
and the store's write gate decides, from that session's taint in that realm,
whether it lands quarantined. Store failures become tool errors
(``is_error=True`` carrying the error's message); :meth:`RecorderTool.dispatch`
raises only for a bad *host* parameter (mob).

The store side is the :class:`RecorderOps` protocol; a host adapts its record
store to it (every operation acts in the realm of the session it is given).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple, Protocol, runtime_checkable

from meta_memory.agent_memory.writes import PriorNotFound, wrote_nothing
from meta_memory.errors import InvalidParams, MetaError
from meta_memory.identity import parse_mob
from meta_memory.injection.defang import neutralise
from meta_memory.limits import DEFAULT_MAX_ENTRIES, DEFAULT_TOOL_MAX_TTL_S, MAX_MEMORY_ENTRIES
from meta_memory.observability import count_refused_write
from meta_memory.session_ref import SessionRef
from meta_memory.tool.args import (
    ForgetAction,
    ProposeToMobAction,
    RecallAction,
    RecordDraft,
    RememberAction,
    ToolArgumentError,
    UpdateAction,
    parse_arguments,
)

__all__ = [
    "DEFAULT_MAX_ENTRIES",
    "NO_MATCHES_TEXT",
    "NO_MOB_RECALL_TEXT",
    "NO_MOB_TEXT",
    "RecallsMob",
    "RecorderOps",
    "RecorderTool",
    "ReportsDuplicates",
    "ToolResult",
    "WriteOutcome",
    "default_agent_author",
]

_log = logging.getLogger(__name__)

NO_MATCHES_TEXT: Final = "No matching memory records."
NO_MOB_TEXT: Final = "propose_to_mob is unavailable: this member is not running inside a mob"
NO_MOB_RECALL_TEXT: Final = "recall of mob memory is unavailable: this memory store cannot search a mob's records"
_AVAILABLE: Final = (
    "It becomes available to prompt assembly from the next build; this confirmation is your in-turn awareness of it."
)
_QUARANTINED: Final = (
    "stored but QUARANTINED pending review ({reason}). It will not be injected or recalled until a steward "
    "or operator promotes it."
)
_PRIOR_STAYS: Final = " The prior record remains active until review."
_DUPLICATE: Final = (
    "Memory {id} already holds this content; nothing was stored or changed (a repeated remember never "
    "changes a record: its tags, kind and description stay as they are; use action update to change them)."
)
_UNCHANGED: Final = (
    "Unchanged: memory {id} already holds this content; nothing was stored or changed (an update to the same "
    "title, body, tags, kind, description and expiry writes no new version)."
)
_DUPLICATE_QUARANTINED: Final = (
    "Memory {id} already holds this content and is QUARANTINED pending review ({reason}); nothing was stored "
    "or changed. It will not be injected or recalled until a steward or operator promotes it."
)
_FORGOT: Final = (
    "Forgot memory {id}. It stops being injected immediately; text already in a live context is only revoked "
    "by reset/respawn."
)
_NOT_FOUND: Final = "memory {id} was not found in your scope"
_FORGET_HELD: Final = (
    "Forget of memory {id} is HELD pending review ({reason}). The record stays active, and is still recalled "
    "and injected, until a steward or operator approves the forget."
)
_PROPOSED: Final = (
    "Proposed to mob scope as {id}. A steward or operator must review and commit it before it becomes shared memory."
)
_RECALL_FIELDS: Final = ("memory_id", "title", "body", "tags", "updated_at_ms")
#: What a recall row of a mob's shared memory carries besides: the mob's name.
_MOB_FIELD: Final = "mob"


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What the model sees for one tool call.

    Attributes:
        text: the result text.
        is_error: True for refusals and store failures.
        exclude_from_indexing: always True: tool results are an indexing-excluded
            message class, so confirmations and recall payloads never echo into
            session semantic memory.
    """

    text: str
    is_error: bool = False
    exclude_from_indexing: bool = True

    def to_dict(self) -> dict[str, Any]:
        """Wire shape ``{text, is_error, exclude_from_indexing}``."""
        return {"text": self.text, "is_error": self.is_error, "exclude_from_indexing": self.exclude_from_indexing}


class WriteOutcome(NamedTuple):
    """Result of an authored write: the new (or deduplicated) record id and the
    quarantine reason it landed with (``None`` when active)."""

    memory_id: str
    quarantined: str | None = None


@runtime_checkable
class RecorderOps(Protocol):
    """The store operations the recorder needs, each acting in the realm of ``session``.

    ``session`` is the calling session (:class:`~meta_memory.session_ref.SessionRef`): its
    identity (logical) names the scope ``identity{session.realm, session.identity}``, and its
    realm and key are what the write gate judges; ``author`` is the agent author built by the tool
    (the record model's ``Author.agent(identity)`` by default). Any exception is reported to the
    model as a tool error carrying its message.
    """

    def remember_authored(self, session: SessionRef, record: RecordDraft, author: Any) -> tuple[str, str | None]:
        """Create ``record`` in the identity scope through the gate (exact-content dedup
        returns the existing id). Returns ``(memory_id, quarantine_reason | None)``."""
        ...

    def supersede_authored(
        self, session: SessionRef, prior_id: str, record: RecordDraft, author: Any
    ) -> tuple[str, str | None]:
        """Supersede ``prior_id`` (must be in the identity scope) with ``record``.
        Returns ``(new_memory_id, quarantine_reason | None)``; ``(prior_id, None)`` when the new version
        would change nothing (nothing is written: the tool answers that the record is unchanged). Raises
        :class:`~meta_memory.agent_memory.writes.PriorNotFound` for an id that is not a record of the
        identity scope (unknown, or another scope's): the tool answers it ``memory <id> was not found in
        your scope``, as a ``forget`` of such an id."""
        ...

    def forget_authored(self, session: SessionRef, memory_id: str, author: Any) -> Any:
        """Tombstone ``memory_id`` if it exists in the identity scope and is not
        tombstoned already. Returns whether it did (``bool``), or an object with
        ``outcome`` ``forgotten`` | ``held`` | ``not_found`` and, when held, the
        gate's ``reason`` (:class:`meta_memory.review.forgets.ForgetRequest`): a
        forget the write gate holds leaves the record active until review."""
        ...

    def recall(
        self, session: SessionRef, query_text: str | None, selection: str, max_entries: int
    ) -> Sequence[Mapping[str, Any]]:
        """Active records of the identity scope, best first, at most ``max_entries``;
        ``selection`` is ``"contextual"`` (with ``query_text``) or ``"always"``.
        Each row has ``memory_id, title, body, tags, updated_at_ms``."""
        ...

    def mark_recalled(self, session: SessionRef, memory_ids: Sequence[str]) -> None:
        """Count an explicit recall for each id (failures are ignored by the tool)."""
        ...

    def propose(self, session: SessionRef, mob: str, record: RecordDraft, author: Any) -> str:
        """Queue ``record`` as a proposal for scope ``mob{session.realm, mob}``; returns the proposal id."""
        ...


@runtime_checkable
class RecallsMob(Protocol):
    """:class:`RecorderOps` that can also search a mob's shared memory: what ``recall`` runs when the call
    names the mob the member runs in (without it, such a recall is a tool error, never the identity's records
    alone)."""

    def recall_with_mob(
        self, session: SessionRef, mob: str, query_text: str | None, selection: str, max_entries: int
    ) -> Sequence[Mapping[str, Any]]:
        """Active records of the identity scope and of ``mob{session.realm, mob}``, each scope searched as
        :meth:`RecorderOps.recall` searches the identity's (quarantined, forgotten, superseded and expired
        records never), interleaved, at most ``max_entries``; each of the mob's rows carries ``mob``."""
        ...


@runtime_checkable
class ReportsDuplicates(Protocol):
    """:class:`RecorderOps` that also tell a new record from an existing one: the recorder then says
    truthfully that a repeated remember changed nothing (without it every remember reads "Stored")."""

    def remember_authored_created(
        self, session: SessionRef, record: RecordDraft, author: Any
    ) -> tuple[str, str | None, bool]:
        """:meth:`RecorderOps.remember_authored` plus whether a record was created (``False``: the
        identity's record of the same content was returned, unchanged)."""
        ...


def default_agent_author(identity: str) -> Any:
    """The record model's agent author for ``identity`` (``Author.agent``)."""
    from meta_memory.agent_memory.model import Author

    return Author.agent(identity)


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, MetaError):
        return exc.message
    return str(exc) or type(exc).__name__


def _row(record: Any) -> dict[str, Any]:
    """One recall row; its text passes the renderers' marker neutralisation (a recalled record
    cannot pose as an injected block, a nonce marker or a memory header in the tool result)."""
    if isinstance(record, Mapping):
        row = {name: record.get(name) for name in _RECALL_FIELDS}
        mob = record.get(_MOB_FIELD)
    else:
        row = {name: getattr(record, name, None) for name in _RECALL_FIELDS}
        mob = getattr(record, _MOB_FIELD, None)
    if isinstance(mob, str):
        row[_MOB_FIELD] = mob  # a mob's record: the member may recall it, not update or forget it
    for name in ("title", "body"):
        text = row[name]
        if isinstance(text, str):
            row[name] = neutralise(text)
    row["tags"] = [neutralise(t) if isinstance(t, str) else t for t in (row["tags"] or [])]
    return row


class RecorderTool:
    """Dispatches ``memory`` tool calls, each in the realm of its calling session.

    Args:
        ops: the store, adapted to :class:`RecorderOps`.
        max_entries: ``recall``'s default when the call names none
            (``agent_memory.max_entries``; clamped to 1..64).
        max_ttl_s: the longest ``ttl_s`` the model may give (``agent_memory.tool_max_ttl_s``, seconds);
            a longer one is refused as a tool error naming the cap, never clamped.
        author_factory: builds the agent author from the caller's identity
            (default :func:`default_agent_author`).
    """

    def __init__(
        self,
        ops: RecorderOps,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        author_factory: Callable[[str], Any] = default_agent_author,
        max_ttl_s: int = DEFAULT_TOOL_MAX_TTL_S,
    ) -> None:
        self._ops = ops
        self._max_entries = max(1, min(int(max_entries), MAX_MEMORY_ENTRIES))
        self._max_ttl_s = max_ttl_s
        self._author_factory = author_factory

    def dispatch(self, session: SessionRef, mob: str | None, arguments: object) -> ToolResult:
        """Run one tool call made from ``session``, in its realm.

        Args:
            session: the calling session (realm, logical identity, session key or ``None``).
            mob: the mob the member runs in, or ``None`` (``propose_to_mob`` needs one; ``recall``
                then searches that mob's shared memory too: the host judged that it may read it).
            arguments: the model's arguments (object or its JSON text).

        Returns:
            A :class:`ToolResult`; refusals and store failures have ``is_error=True``.

        Raises:
            InvalidParams: a bad host parameter (``mob``).
        """
        if isinstance(mob, str) and not mob.strip():
            mob = None  # no mob: ``propose_to_mob`` answers that it needs one
        if mob is not None:  # the name rule of the method's params, for a caller that skipped them
            try:
                mob = parse_mob(mob)
            except ValueError as exc:
                raise InvalidParams(str(exc), "mob") from None
        try:
            action = parse_arguments(arguments, max_ttl_s=self._max_ttl_s)
        except ToolArgumentError as exc:
            return ToolResult(exc.message, is_error=True)
        try:
            return self._run(session, mob or None, action)
        except Exception as exc:  # noqa: BLE001 - store failures are tool errors, never exceptions
            if not isinstance(exc, MetaError):
                _log.warning("memory tool %s failed for %s: %r", action.action, session.owner, exc)
            elif action.action != "recall":
                count_refused_write(exc)
            if isinstance(exc, PriorNotFound) and isinstance(action, UpdateAction):
                # an unknown id and another identity's answer alike, and as ``forget`` answers them
                return ToolResult(_NOT_FOUND.format(id=action.memory_id), is_error=True)
            return ToolResult(_error_text(exc), is_error=True)

    # ------------------------------------------------------------------ actions

    def _run(self, session: SessionRef, mob: str | None, action: Any) -> ToolResult:
        # a ttl_s past the tool's cap never gets here: parse_arguments refuses it naming 1..max_ttl_s
        if isinstance(action, RememberAction):
            author = self._author_factory(session.identity)
            if isinstance(self._ops, ReportsDuplicates):
                memory_id, reason, created = self._ops.remember_authored_created(session, action.record, author)
                if not created:
                    return ToolResult(_DUPLICATE_QUARANTINED.format(id=memory_id, reason=reason) if reason
                                      else _DUPLICATE.format(id=memory_id))
            else:
                memory_id, reason = self._ops.remember_authored(session, action.record, author)
            return ToolResult(self._written("Stored", memory_id, reason))
        if isinstance(action, UpdateAction):
            author = self._author_factory(session.identity)
            memory_id, reason = self._ops.supersede_authored(session, action.memory_id, action.record, author)
            if reason is None and wrote_nothing(action.memory_id, memory_id):
                return ToolResult(_UNCHANGED.format(id=memory_id))
            text = self._written("Updated: new record", memory_id, reason)
            return ToolResult(text + _PRIOR_STAYS if reason else text)
        if isinstance(action, ForgetAction):
            author = self._author_factory(session.identity)
            done = self._ops.forget_authored(session, action.memory_id, author)
            outcome = getattr(done, "outcome", None)
            if outcome == "held":
                return ToolResult(_FORGET_HELD.format(id=action.memory_id, reason=getattr(done, "reason", None)))
            if outcome == "forgotten" or (outcome is None and done):
                return ToolResult(_FORGOT.format(id=action.memory_id))
            return ToolResult(_NOT_FOUND.format(id=action.memory_id), is_error=True)
        if isinstance(action, RecallAction):
            return self._recall(session, mob, action)
        if isinstance(action, ProposeToMobAction):
            if not mob:
                return ToolResult(NO_MOB_TEXT, is_error=True)
            author = self._author_factory(session.identity)
            proposal_id = self._ops.propose(session, mob, action.record, author)
            return ToolResult(_PROPOSED.format(id=proposal_id))
        raise AssertionError(f"unhandled action {action!r}")  # pragma: no cover

    @staticmethod
    def _written(verb: str, memory_id: str, reason: str | None) -> str:
        if reason:
            return f"{verb} memory {memory_id} — " + _QUARANTINED.format(reason=reason)
        return f"{verb} memory {memory_id}. {_AVAILABLE}"

    def _recall(self, session: SessionRef, mob: str | None, action: RecallAction) -> ToolResult:
        limit = action.max_entries if action.max_entries is not None else self._max_entries
        limit = max(1, min(limit, MAX_MEMORY_ENTRIES))
        if mob is None:
            found = self._ops.recall(session, action.query_text, action.selection, limit)
        elif isinstance(self._ops, RecallsMob):
            found = self._ops.recall_with_mob(session, mob, action.query_text, action.selection, limit)
        else:  # never the identity's records alone, as if the mob held none
            return ToolResult(NO_MOB_RECALL_TEXT, is_error=True)
        rows = [_row(r) for r in found][:limit]
        if not rows:
            return ToolResult(NO_MATCHES_TEXT)
        try:
            self._ops.mark_recalled(session, [str(r["memory_id"]) for r in rows])
        except Exception:  # noqa: BLE001 - usage marking never fails a recall
            _log.warning("memory tool: marking explicit recall failed for %s", session.owner, exc_info=True)
        return ToolResult(json.dumps(rows, indent=2, ensure_ascii=False))

"""Strict parsing of the ``memory`` tool's arguments into typed actions (reference notes §4).

:func:`parse_arguments` takes whatever the model sent and returns one of
:class:`Remember`, :class:`Update`, :class:`Forget`, :class:`Recall`,
:class:`ProposeToMob`, or raises :class:`ToolArgumentError` whose message is the
tool-error text the model sees. It never raises anything else.

Rules, checked in this order:

1. the arguments are a JSON object (a JSON text of an object is accepted too);
2. no field outside the schema: ``unknown field 'x' (the memory tool accepts: ...)``;
3. ``action`` is one of the five: ``unknown action '<x>' (expected remember,
   update, forget, recall, or propose_to_mob)``;
4. every present field has its schema type (``null`` counts as absent); ``ttl_s`` only with
   remember or update (otherwise the error says it applies to those two only);
5. per action, the required fields: ``memory_id`` first (update, forget), then
   ``title`` (whitespace-compacted), ``body`` (trimmed), each refused as
   missing with the text: backtick-quoted name, "is required for action", the
   action in double quotes; then ``kind`` (``unknown record kind '<k>'``)
   and ``epistemic`` (``unknown epistemic status '<x>'``; ``verified_claim``
   needs ``verification_evidence``).

Epistemic status is not a record field: ``operator_said`` adds the tag
``epistemic:operator_said``; ``verified_claim`` puts a verification claim
``{checked: <evidence>, evidence: []}`` in the record's provenance; the trust tier
is ``agent_observed`` in every case.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from meta_memory.agent_memory.fields import check_ttl_s, memory_id_ref
from meta_memory.limits import MAX_MEMORY_ENTRIES
from meta_memory.recall.query_limits import query_size_error
from meta_memory.tool.schema import (
    ACTIONS,
    ALLOWED_FIELDS,
    EPISTEMIC_STATUSES,
    RECORD_KINDS,
)

__all__ = [
    "EPISTEMIC_OPERATOR_SAID_TAG",
    "ForgetAction",
    "ProposeToMobAction",
    "RecallAction",
    "RecordDraft",
    "RememberAction",
    "ToolAction",
    "ToolArgumentError",
    "UpdateAction",
    "compact_whitespace",
    "parse_arguments",
]

#: Tag a record gets when the model says a person told it the content.
EPISTEMIC_OPERATOR_SAID_TAG: Final = "epistemic:operator_said"

#: Trust tier of every record the tool writes.
TOOL_TRUST_TIER: Final = "agent_observed"

_EXPECTED_ACTIONS: Final = "expected remember, update, forget, recall, or propose_to_mob"
_STRING_FIELDS: Final = ("action", "title", "body", "description", "kind", "epistemic",
                         "verification_evidence", "memory_id", "query_text")


class ToolArgumentError(ValueError):
    """The model's arguments were refused; ``message`` is the tool-error text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def compact_whitespace(text: str) -> str:
    """Collapse every run of whitespace to one space and trim the ends."""
    return " ".join(text.split())


@dataclass(frozen=True, slots=True)
class RecordDraft:
    """A record the model asked to write, before the store gives it an id and scope.

    Attributes:
        title: whitespace-compacted, non-empty.
        body: trimmed, non-empty.
        description: whitespace-compacted (``""`` when absent).
        tags: as given (trimmed, blanks and repeats dropped), plus
            ``epistemic:operator_said`` for that status; the store normalises further.
        kind: one of :data:`~meta_memory.tool.schema.RECORD_KINDS`.
        epistemic: the status the model declared (informational; not stored as a field).
        verification: ``{"checked": str, "evidence": []}`` for ``verified_claim``, else ``None``.
        trust: always ``"agent_observed"``.
    """

    title: str
    body: str
    description: str = ""
    tags: tuple[str, ...] = ()
    kind: str = "fact"
    epistemic: str = "observed"
    verification: dict[str, Any] | None = None
    trust: str = TOOL_TRUST_TIER
    #: Seconds until the record expires (``None``: none given); the recorder checks it against
    #: ``agent_memory.tool_max_ttl_s``.
    ttl_s: int | None = None

    def to_json(self) -> dict[str, Any]:
        """``{kind, title, description, body, tags, trust, verification?}``."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "title": self.title,
            "description": self.description,
            "body": self.body,
            "tags": list(self.tags),
            "trust": self.trust,
        }
        if self.verification is not None:
            out["verification"] = {"checked": self.verification["checked"], "evidence": []}
        return out


@dataclass(frozen=True, slots=True)
class RememberAction:
    """``remember``: store ``record`` in the caller's identity scope."""

    record: RecordDraft
    action: str = field(default="remember", init=False)


@dataclass(frozen=True, slots=True)
class UpdateAction:
    """``update``: supersede ``memory_id`` (the caller's own record) with ``record``."""

    memory_id: str
    record: RecordDraft
    action: str = field(default="update", init=False)


@dataclass(frozen=True, slots=True)
class ForgetAction:
    """``forget``: tombstone ``memory_id`` in the caller's identity scope."""

    memory_id: str
    action: str = field(default="forget", init=False)


@dataclass(frozen=True, slots=True)
class RecallAction:
    """``recall``: search the caller's records.

    ``query_text`` is trimmed (``None`` when absent or blank: list the newest);
    ``max_entries`` is ``None`` for the configured default, else 1..64.
    """

    query_text: str | None = None
    max_entries: int | None = None
    action: str = field(default="recall", init=False)

    @property
    def selection(self) -> str:
        """``"contextual"`` with a query, ``"always"`` without."""
        return "contextual" if self.query_text else "always"


@dataclass(frozen=True, slots=True)
class ProposeToMobAction:
    """``propose_to_mob``: queue ``record`` as a proposal for the caller's mob scope."""

    record: RecordDraft
    action: str = field(default="propose_to_mob", init=False)


ToolAction = RememberAction | UpdateAction | ForgetAction | RecallAction | ProposeToMobAction


def _coerce_object(arguments: object) -> Mapping[str, Any]:
    if isinstance(arguments, (str, bytes, bytearray)):
        try:
            arguments = json.loads(arguments)
        except (ValueError, UnicodeDecodeError):
            raise ToolArgumentError("memory tool arguments must be a JSON object") from None
    if not isinstance(arguments, Mapping):
        raise ToolArgumentError("memory tool arguments must be a JSON object")
    return arguments


def _check_fields(args: Mapping[Any, Any]) -> None:
    unknown = [k for k in args if k not in ALLOWED_FIELDS]
    if not unknown:
        return
    names = ", ".join(f"'{k}'" if isinstance(k, str) else repr(k) for k in unknown)
    noun = "field" if len(unknown) == 1 else "fields"
    raise ToolArgumentError(f"unknown {noun} {names} (the memory tool accepts: {', '.join(ALLOWED_FIELDS)})")


def _check_types(args: Mapping[str, Any]) -> None:
    for name in _STRING_FIELDS:
        value = args.get(name)
        if value is not None and not isinstance(value, str):
            raise ToolArgumentError(f"`{name}` must be a string")
    tags = args.get("tags")
    if tags is not None and (not isinstance(tags, list) or not all(isinstance(t, str) for t in tags)):
        raise ToolArgumentError("`tags` must be an array of strings")
    max_entries = args.get("max_entries")
    if max_entries is not None and (
        isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1
    ):
        raise ToolArgumentError("`max_entries` must be an integer of at least 1")
    try:
        check_ttl_s(args.get("ttl_s"), "`ttl_s`")
    except ValueError as exc:
        raise ToolArgumentError(str(exc)) from None


def _required_text(args: Mapping[str, Any], name: str, action: str, *, compact: bool) -> str:
    raw = args.get(name) or ""
    value = compact_whitespace(raw) if compact else raw.strip()
    if not value:
        raise ToolArgumentError(f'`{name}` is required for action "{action}"')
    return value


def _memory_id(args: Mapping[str, Any], action: str) -> str:
    """The ``memory_id`` an action names: required, and no longer than any record's id can be."""
    value = _required_text(args, "memory_id", action, compact=False)
    try:
        return memory_id_ref(value)
    except ValueError as exc:
        raise ToolArgumentError(f"`memory_id`: {exc}") from None


def _tags(raw: list[str] | None) -> list[str]:
    out: list[str] = []
    for tag in raw or ():
        tag = tag.strip()
        if tag and tag not in out:
            out.append(tag)
    return out


def _record(args: Mapping[str, Any], action: str) -> RecordDraft:
    title = _required_text(args, "title", action, compact=True)
    body = _required_text(args, "body", action, compact=False)
    kind = args.get("kind")
    if kind is None:
        kind = "fact"
    if kind not in RECORD_KINDS:
        raise ToolArgumentError(f"unknown record kind '{kind}'")
    description = compact_whitespace(args.get("description") or "")
    tags = _tags(args.get("tags"))
    epistemic = args.get("epistemic")
    if epistemic is None:
        epistemic = "observed"
    verification: dict[str, Any] | None = None
    if epistemic == "operator_said":
        if EPISTEMIC_OPERATOR_SAID_TAG not in tags:
            tags.append(EPISTEMIC_OPERATOR_SAID_TAG)
    elif epistemic == "verified_claim":
        checked = (args.get("verification_evidence") or "").strip()
        if not checked:
            raise ToolArgumentError(
                '`verification_evidence` is required with epistemic="verified_claim": describe what you checked'
            )
        verification = {"checked": checked, "evidence": []}
    elif epistemic not in EPISTEMIC_STATUSES:
        raise ToolArgumentError(f"unknown epistemic status '{epistemic}'")
    return RecordDraft(
        title=title,
        body=body,
        description=description,
        tags=tuple(tags),
        kind=kind,
        epistemic=epistemic,
        verification=verification,
        ttl_s=args.get("ttl_s"),
    )


def parse_arguments(arguments: object) -> ToolAction:
    """Parse the model's ``memory`` tool arguments (rules in the module docstring).

    Args:
        arguments: the decoded JSON arguments (a ``dict``), or their JSON text.

    Returns:
        One typed action.

    Raises:
        ToolArgumentError: with the exact tool-error text; nothing else is raised.
    """
    args = _coerce_object(arguments)
    _check_fields(args)
    action = args.get("action")
    if action is None:
        raise ToolArgumentError(f"`action` is required ({_EXPECTED_ACTIONS})")
    if not isinstance(action, str):
        raise ToolArgumentError(f"`action` must be a string ({_EXPECTED_ACTIONS})")
    if action not in ACTIONS:
        raise ToolArgumentError(f"unknown action '{action}' ({_EXPECTED_ACTIONS})")
    _check_types(args)
    if args.get("ttl_s") is not None and action not in ("remember", "update"):
        # fail closed: a forget "in an hour" is no forget now, and recall/propose_to_mob set no expiry
        raise ToolArgumentError('`ttl_s` applies to actions "remember" and "update" only')
    if action == "remember":
        return RememberAction(_record(args, action))
    if action == "update":
        return UpdateAction(_memory_id(args, action), _record(args, action))
    if action == "forget":
        return ForgetAction(_memory_id(args, action))
    if action == "recall":
        query = (args.get("query_text") or "").strip() or None
        problem = query_size_error(query)
        if problem is not None:
            raise ToolArgumentError(f"`query_text` {problem[1].removeprefix('query_text ')}")
        max_entries = args.get("max_entries")
        if max_entries is not None:
            max_entries = min(max_entries, MAX_MEMORY_ENTRIES)
        return RecallAction(query_text=query, max_entries=max_entries)
    return ProposeToMobAction(_record(args, action))

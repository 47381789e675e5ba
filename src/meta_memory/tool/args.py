"""Strict parsing of the ``memory`` tool's arguments into typed actions (reference notes §4).

:func:`parse_arguments` takes whatever the model sent and returns one action, validated by that
action's pydantic model (:data:`ACTION_MODELS`: :class:`RememberAction`, :class:`UpdateAction`,
:class:`ForgetAction`, :class:`RecallAction`, :class:`ProposeToMobAction`), or raises
:class:`ToolArgumentError` whose message is the tool-error text the model sees. It never raises
anything else. Rules 1 to 3 choose the model; its validators hold rules 4 and 5, each with its text.

Rules, checked in this order:

1. the arguments are a JSON object (a JSON text of an object is accepted too);
2. no field outside the schema: ``unknown field 'x' (the memory tool accepts: ...)``;
3. ``action`` is one of the five: ``unknown action '<x>' (expected remember,
   update, forget, recall, or propose_to_mob)``;
4. every present field has its schema type (``null`` counts as absent); ``ttl_s`` only with
   remember or update (otherwise the error says it applies to those two only);
5. per action, the required fields: ``memory_id`` first (update, forget), then
   ``title`` (whitespace-compacted), ``body`` (trimmed), each refused when absent
   with the text: backtick-quoted name, "is required for action", the action in
   double quotes (a ``title`` or ``body`` sent blank: the record's own rule,
   ``title must not be empty``, as the RPC says it); then ``kind`` (``unknown record kind '<k>'``)
   and ``epistemic`` (``unknown epistemic status '<x>'``; ``verified_claim``
   needs ``verification_evidence``).

Epistemic status is not a record field: ``operator_said`` adds the tag
``epistemic:operator_said``; ``verified_claim`` puts a verification claim
``{checked: <evidence>, evidence: []}`` in the record's provenance; the trust tier
is ``agent_observed`` in every case.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from meta_memory import strict_json
from meta_memory.agent_memory.fields import (
    FieldError,
    check_given_tags,
    check_text_field,
    check_ttl_s,
    memory_id_ref,
)
from meta_memory.errors import echo
from meta_memory.integrations.langgraph_items import TAG_PREFIX as ITEM_TAG_PREFIX
from meta_memory.limits import MAX_MEMORY_ENTRIES, MAX_TTL_S
from meta_memory.recall.query_limits import query_size_error
from meta_memory.tool.schema import (
    ACTIONS,
    ALLOWED_FIELDS,
    EPISTEMIC_STATUSES,
    RECORD_KINDS,
)

__all__ = [
    "ACTION_MODELS",
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
        tags: as given (trimmed, repeats dropped; a blank one is refused), plus
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


class _Arguments(BaseModel):
    """Every member the tool's schema has, each held to its type with the tool's own text (``null``
    counts as absent). Members are declared in the order the type rule judges them, so the first
    refusal is the one a model sees. Every action model below accepts them all (a member an action
    does not use is type-checked and ignored)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    action: str
    title: str | None = None
    body: str | None = None
    description: str | None = None
    kind: str | None = None
    epistemic: str | None = None
    verification_evidence: str | None = None
    memory_id: str | None = None
    query_text: str | None = None
    tags: list[str] | None = None
    max_entries: int | None = None
    ttl_s: int | None = None

    @field_validator(*_STRING_FIELDS, mode="before")
    @classmethod
    def _string(cls, value: object, info: ValidationInfo) -> object:
        if value is not None and not isinstance(value, str):
            raise ToolArgumentError(f"`{info.field_name}` must be a string")
        return value

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, value: object) -> object:
        if value is not None and (not isinstance(value, list) or not all(isinstance(t, str) for t in value)):
            raise ToolArgumentError("`tags` must be an array of strings")
        return value

    @field_validator("max_entries", mode="before")
    @classmethod
    def _max_entries(cls, value: object) -> object:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ToolArgumentError("`max_entries` must be an integer of at least 1")
        return value

    @field_validator("ttl_s", mode="before")
    @classmethod
    def _ttl_s(cls, value: object, info: ValidationInfo) -> object:
        # the range named is the one this tool takes (``agent_memory.tool_max_ttl_s``, handed in by
        # ``parse_arguments``), never the installation's wider caller cap: a model told "1 to 100 years"
        # would only be refused again
        context = info.context if isinstance(info.context, Mapping) else {}
        try:
            return check_ttl_s(value, "`ttl_s`", context.get("max_ttl_s", MAX_TTL_S))
        except ValueError as exc:
            raise ToolArgumentError(str(exc)) from None

    def _no_ttl(self) -> None:
        """Refuse ``ttl_s`` on an action that sets no expiry (fail closed: a forget "in an hour" is no
        forget now, and recall and propose_to_mob write no record of the caller's that could expire)."""
        if self.ttl_s is not None:
            raise ToolArgumentError('`ttl_s` applies to actions "remember" and "update" only')

    def _required(self, name: str, *, compact: bool) -> str:
        """The field ``name``: absent (or ``null``) is refused as missing; a ``title`` or ``body`` sent blank
        is refused by the record's own rule, in its words (:func:`~meta_memory.agent_memory.fields.check_text_field`:
        ``title must not be empty``, as the RPC and the command line say it)."""
        raw = getattr(self, name)
        value = "" if raw is None else compact_whitespace(raw) if compact else raw.strip()
        if not value:
            if raw is not None and name in ("title", "body"):
                try:
                    check_text_field(name, raw)
                except FieldError as exc:
                    raise ToolArgumentError(exc.rule) from None
            raise ToolArgumentError(f'`{name}` is required for action "{self.action}"')
        return value

    def _memory_id(self) -> str:
        """The ``memory_id`` the action names: required, and no longer than any record's id can be."""
        value = self._required("memory_id", compact=False)
        try:
            return memory_id_ref(value)
        except ValueError as exc:
            raise ToolArgumentError(f"`memory_id`: {exc}") from None

    def _draft(self) -> RecordDraft:
        """The record the arguments describe (required ``title`` then ``body``, then ``kind`` and ``epistemic``)."""
        title = self._required("title", compact=True)
        body = self._required("body", compact=False)
        kind = self.kind if self.kind is not None else "fact"
        if kind not in RECORD_KINDS:
            raise ToolArgumentError(f"unknown record kind '{echo(str(kind))}'")
        tags = _distinct_tags(self.tags)
        epistemic = self.epistemic if self.epistemic is not None else "observed"
        verification: dict[str, Any] | None = None
        if epistemic == "operator_said":
            if EPISTEMIC_OPERATOR_SAID_TAG not in tags:
                tags.append(EPISTEMIC_OPERATOR_SAID_TAG)
        elif epistemic == "verified_claim":
            checked = (self.verification_evidence or "").strip()
            if not checked:
                raise ToolArgumentError(
                    '`verification_evidence` is required with epistemic="verified_claim": describe what you checked'
                )
            verification = {"checked": checked, "evidence": []}
        elif epistemic not in EPISTEMIC_STATUSES:
            raise ToolArgumentError(f"unknown epistemic status '{echo(str(epistemic))}'")
        return RecordDraft(title=title, body=body, description=compact_whitespace(self.description or ""),
                           tags=tuple(tags), kind=kind, epistemic=epistemic, verification=verification,
                           ttl_s=self.ttl_s)


def _distinct_tags(raw: list[str] | None) -> list[str]:
    """The tags given, trimmed, repeats dropped. Raises :class:`ToolArgumentError` for a tag the RPC refuses
    an application (:func:`~meta_memory.agent_memory.fields.check_given_tags`, its text: ``tags.1 must not be
    empty``; a blank tag is refused, never dropped unseen, and every rule names the tag by its place in the
    list sent), and for a tag the LangGraph store's items reserve
    (:data:`~meta_memory.integrations.langgraph_items.TAG_PREFIX`, any case): a model's record must never
    read back as an item the application wrote."""
    try:
        check_given_tags(raw or ())
    except FieldError as exc:
        raise ToolArgumentError(exc.rule) from None
    out: dict[str, None] = {}  # ordered and linear: a call may send tens of thousands before the count cap
    for index, tag in enumerate(raw or ()):
        tag = tag.strip()
        if tag[:len(ITEM_TAG_PREFIX)].lower() == ITEM_TAG_PREFIX:
            raise ToolArgumentError(f"`tags[{index}]`: tags beginning '{ITEM_TAG_PREFIX}' are reserved for the "
                                    "application's LangGraph store items")
        out[tag] = None
    return list(out)


class RememberAction(_Arguments):
    """``remember``: store ``record`` in the caller's identity scope."""

    action: Literal["remember"] = "remember"
    #: The record to write (built from the arguments once they are valid).
    record: RecordDraft = Field(default=None, exclude=True)  # type: ignore[assignment]

    @model_validator(mode="after")
    def _build(self) -> Self:
        object.__setattr__(self, "record", self._draft())
        return self


class _Targeted(_Arguments):
    """An action naming one of the caller's records: ``memory_id`` (``null`` counts as absent)."""

    memory_id: str = ""

    @field_validator("memory_id", mode="before")
    @classmethod
    def _absent(cls, value: object) -> object:
        return "" if value is None else value


class UpdateAction(_Targeted):
    """``update``: supersede ``memory_id`` (the caller's own record) with ``record``."""

    action: Literal["update"] = "update"
    record: RecordDraft = Field(default=None, exclude=True)  # type: ignore[assignment]

    @model_validator(mode="after")
    def _build(self) -> Self:
        object.__setattr__(self, "memory_id", self._memory_id())
        object.__setattr__(self, "record", self._draft())
        return self


class ForgetAction(_Targeted):
    """``forget``: tombstone ``memory_id`` in the caller's identity scope."""

    action: Literal["forget"] = "forget"

    @model_validator(mode="after")
    def _build(self) -> Self:
        self._no_ttl()
        object.__setattr__(self, "memory_id", self._memory_id())
        return self


class RecallAction(_Arguments):
    """``recall``: search the caller's records.

    ``query_text`` is trimmed (``None`` when absent or blank: list the newest; at most the recall's
    query size); ``max_entries`` is ``None`` for the configured default, else 1..64 (larger values are
    clamped).
    """

    action: Literal["recall"] = "recall"

    @model_validator(mode="after")
    def _build(self) -> Self:
        self._no_ttl()
        query = (self.query_text or "").strip() or None
        problem = query_size_error(query)
        if problem is not None:
            raise ToolArgumentError(f"`query_text` {problem[1].removeprefix('query_text ')}")
        object.__setattr__(self, "query_text", query)
        if self.max_entries is not None:
            object.__setattr__(self, "max_entries", min(self.max_entries, MAX_MEMORY_ENTRIES))
        return self

    @property
    def selection(self) -> str:
        """``"contextual"`` with a query, ``"always"`` without."""
        return "contextual" if self.query_text else "always"


class ProposeToMobAction(_Arguments):
    """``propose_to_mob``: queue ``record`` as a proposal for the caller's mob scope (no ``ttl_s``)."""

    action: Literal["propose_to_mob"] = "propose_to_mob"
    record: RecordDraft = Field(default=None, exclude=True)  # type: ignore[assignment]

    @model_validator(mode="after")
    def _build(self) -> Self:
        self._no_ttl()
        object.__setattr__(self, "record", self._draft())
        return self


ToolAction = RememberAction | UpdateAction | ForgetAction | RecallAction | ProposeToMobAction

#: The model of each action, in the order error messages list them (:data:`~meta_memory.tool.schema.ACTIONS`).
ACTION_MODELS: Final[dict[str, type[ToolAction]]] = {
    "remember": RememberAction,
    "update": UpdateAction,
    "forget": ForgetAction,
    "recall": RecallAction,
    "propose_to_mob": ProposeToMobAction,
}


def _coerce_object(arguments: object) -> Mapping[str, Any]:
    if isinstance(arguments, (str, bytes, bytearray)):
        try:
            arguments = strict_json.loads(arguments)
        except strict_json.DuplicateKeyError as exc:
            raise ToolArgumentError(f"memory tool arguments must be a JSON object: {exc}") from None
        except (ValueError, UnicodeDecodeError):
            raise ToolArgumentError("memory tool arguments must be a JSON object") from None
    if not isinstance(arguments, Mapping):
        raise ToolArgumentError("memory tool arguments must be a JSON object")
    return arguments


#: An unknown-field refusal names at most this many of the fields (each cut to ``errors.ECHO_CHARS``).
_SHOWN_UNKNOWN = 8


def _check_fields(args: Mapping[Any, Any]) -> None:
    unknown = [k for k in args if k not in ALLOWED_FIELDS]
    if not unknown:
        return
    shown = [f"'{echo(k)}'" if isinstance(k, str) else echo(repr(k)) for k in unknown[:_SHOWN_UNKNOWN]]
    if len(unknown) > _SHOWN_UNKNOWN:
        shown.append(f"and {len(unknown) - _SHOWN_UNKNOWN} more")
    names = ", ".join(shown)
    noun = "field" if len(unknown) == 1 else "fields"
    raise ToolArgumentError(f"unknown {noun} {names} (the memory tool accepts: {', '.join(ALLOWED_FIELDS)})")


def _tool_error(exc: ValidationError) -> ToolArgumentError:
    """The first refusal of a validation, as the tool's text (every validator above raises one)."""
    first = exc.errors()[0]
    cause = (first.get("ctx") or {}).get("error")
    if isinstance(cause, ToolArgumentError):
        return cause
    where = ".".join(str(part) for part in first["loc"])  # pragma: no cover - every member has its validator
    return ToolArgumentError(f"`{where}` is invalid")  # pragma: no cover


def parse_arguments(arguments: object, *, max_ttl_s: int = MAX_TTL_S) -> ToolAction:
    """Parse the model's ``memory`` tool arguments (rules in the module docstring).

    Args:
        arguments: the decoded JSON arguments (a ``dict``), or their JSON text.
        max_ttl_s: the longest ``ttl_s`` this tool takes, seconds (``agent_memory.tool_max_ttl_s``); a
            ``ttl_s`` outside ``1..max_ttl_s`` is refused naming that range.

    Returns:
        One typed action: the action's model (:data:`ACTION_MODELS`).

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
        raise ToolArgumentError(f"unknown action '{echo(str(action))}' ({_EXPECTED_ACTIONS})")
    try:
        return ACTION_MODELS[action].model_validate(dict(args), context={"max_ttl_s": max_ttl_s})
    except ValidationError as exc:
        raise _tool_error(exc) from None

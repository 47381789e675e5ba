"""Params models of ``meta/agent_memory/*`` (reference §10 "agent_memory param rules").

The models check the wire's shape (types, required members, caps on the wire text such as a batch's
total bytes). A record's fields (title, body, tags, metadata) are normalised and held to their rules once,
by the write planner (:func:`meta_memory.agent_memory.writes.app_record`); its refusal names the field
and reaches the caller as ``-32602``, as a params refusal does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal, Self

from pydantic import (
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ...agent_memory.fields import (
    FieldError,
    check_given_tags,
    memory_id_ref,
    normalize_tags,
)
from ...agent_memory.filters import FilterNode, parse_filter
from ...agent_memory.list_cursor import decode_cursor
from ...agent_memory.secrets import scan_text, secret_rule
from ...limits import (
    MAX_BATCH_OPS,
    MAX_DERIVED_SESSIONS,
    MAX_LIST_LIMIT,
    MAX_MANIFEST_K,
    MAX_MEMORY_ENTRIES,
    MAX_REASON_BYTES,
)
from ...recall.query_limits import MAX_QUERY_TERM_BYTES, MAX_QUERY_TERM_ENTRIES, query_size_error
from ...session_ref import check_session_key, recorded_session_key
from ..params import IdentityParams, MembersRule, Params, optional_count

__all__ = [
    "IdentityParams",
    "DerivedParams",
    "RememberParams",
    "RememberBatchItem",
    "RememberBatchParams",
    "MAX_REMEMBER_BATCH_BYTES",
    "RecallParams",
    "ForgetParams",
    "HistoryParams",
    "UpdateParams",
    "ManifestParams",
    "ListParams",
    "EraseParams",
    "EraseIdentityParams",
    "MAX_LIST_LIMIT",
]

#: Most UTF-8 bytes of titles, bodies and tags together in one ``remember_batch`` call (4 MiB).
MAX_REMEMBER_BATCH_BYTES = 4 * 1024 * 1024


def _nbytes(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _tags(value: list[str] | None) -> list[str] | None:
    """A write's ``tags`` as given: each tag held to the rule of a caller's tags
    (:func:`~meta_memory.agent_memory.fields.check_given_tags`: none blank, each named ``tags.<i>``); the
    count cap and the normalisation are the write planner's (:func:`~meta_memory.agent_memory.writes.app_record`).
    A :class:`~meta_memory.agent_memory.fields.FieldError` is a ``ValueError``: raised as it is, so the
    refusal names the tag (``tags.1``)."""
    if value is not None:
        check_given_tags(value)
    return value


class _FilterParams(IdentityParams):
    """``filter?``: a metadata filter (:mod:`meta_memory.agent_memory.filters`), parsed once here;
    :attr:`where` is the parsed model (``None``: no filter)."""

    filter: dict[str, Any] | None = None
    _where: FilterNode | None = PrivateAttr(default=None)

    @field_validator("filter")
    @classmethod
    def _parse_filter(cls, value: dict[str, Any] | None) -> Any:
        # parsed on the field, so a refusal's ``data.field`` is ``filter``; the parsed model is handed to
        # ``_keep_where`` below in the field's place (the wire object is put back there)
        try:
            return parse_filter(value)
        except FieldError as exc:
            raise ValueError(exc.rule) from None

    @model_validator(mode="wrap")
    @classmethod
    def _keep_where(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        model = handler(data)
        where = model.__dict__.get("filter")
        if isinstance(where, FilterNode) or where is None:
            model._where = where
            # the wire object again (frozen model: set in place), as validated: a JSON object or ``None``
            model.__dict__["filter"] = data.get("filter") if isinstance(data, dict) else None
        return model

    @property
    def where(self) -> FilterNode | None:
        return self._where


def _derived_sessions(value: list[str] | None) -> list[str] | None:
    """``derived_from_sessions``: 1..64 session keys, each held to the session-key rule
    (:func:`~meta_memory.session_ref.check_session_key`: non-empty, at most 512 bytes, never trimmed);
    repeats are dropped (first kept). A refusal names the key's position and the rule."""
    if value is None:
        return None
    if not value:
        raise ValueError("derived_from_sessions must name at least one session key (omit it otherwise)")
    if len(value) > MAX_DERIVED_SESSIONS:
        raise ValueError(f"derived_from_sessions must name at most {MAX_DERIVED_SESSIONS} session keys")
    keys: list[str] = []
    for i, key in enumerate(value):
        text = check_session_key(key, required=True, name=f"derived_from_sessions[{i}]")
        if text is not None and text not in keys:
            keys.append(text)
    return keys


class DerivedParams(Params):
    """``derived_from_sessions?``: sessions of the identity (in the call's realm) whose content the write was
    derived from, such as the host's own LLM summary or notes of them. Kept as provenance evidence; the write
    lands quarantined when one of them is tainted or was tainted when a reset closed it (a host opt-in beyond
    the spec's "application writes are never quarantined"). Naming a session needs ``agent.session.manage``
    on the identity."""

    derived_from_sessions: list[str] | None = None

    _v_derived = field_validator("derived_from_sessions")(lambda cls, v: _derived_sessions(v))

    def derived_sessions(self, secret: Callable[[], bytes]) -> tuple[str, ...]:
        """The named sessions as session state records them (``()`` when none): a key holding a credential
        by its digest under ``secret()``, as every session method names it
        (:func:`~meta_memory.session_ref.recorded_session_key`), so the write is judged on that session and
        its evidence refs never hold the credential."""
        return tuple(dict.fromkeys(recorded_session_key(k, secret) for k in self.derived_from_sessions or ()))


def _ttl_s(value: Any) -> int | None:
    """``ttl_s?``: seconds until the record expires, an integer (a bool, a float or a string is none). Its
    range, ``1..agent_memory.max_ttl_s``, is checked by the service, which knows the configured cap and
    names it: a refusal here would name the 100-year ceiling to a caller of a gateway capped lower."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("ttl_s must be an integer number of seconds")
    return value


class _TtlParams(Params):
    """``ttl_s?``: the record expires ``ttl_s`` seconds after this write."""

    ttl_s: int | None = None

    _v_ttl_s = field_validator("ttl_s", mode="before")(lambda cls, v: _ttl_s(v))


class _ContentParams(IdentityParams, _TtlParams):
    title: str
    body: str
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None

    _v_tags = field_validator("tags")(lambda cls, v: _tags(v))


class RememberParams(_ContentParams, DerivedParams):
    """``meta/agent_memory/remember``: identity, realm?, title, body, tags?, metadata? (a JSON object,
    ``agent_memory/fields.py`` caps), derived_from_sessions?, ttl_s?"""


class RememberBatchItem(_TtlParams):
    """One record of ``meta/agent_memory/remember_batch``: title, body, tags?, ttl_s?, metadata? (shapes only;
    the content rules, metadata's included, are the store's, applied per item so one bad record refuses only
    itself)."""

    title: str
    body: str
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None


class RememberBatchParams(IdentityParams, DerivedParams):
    """``meta/agent_memory/remember_batch``: identity, realm?, records (1..1024 items, at most 4 MiB of
    text together), derived_from_sessions? (for every record). A malformed item (not an object, a field
    of the wrong type, an unknown field) refuses the whole call naming ``records.<i>.<field>``."""

    records: list[RememberBatchItem]

    @field_validator("records")
    @classmethod
    def _records(cls, value: list[RememberBatchItem]) -> list[RememberBatchItem]:
        if not value:
            raise ValueError("records must contain at least one record")
        if len(value) > MAX_BATCH_OPS:
            raise ValueError(f"records must contain at most {MAX_BATCH_OPS} records (got {len(value)})")
        total = 0
        for item in value:
            total += _nbytes(item.title) + _nbytes(item.body) + sum(_nbytes(t) for t in item.tags or ())
            if item.metadata:
                total += _metadata_bytes(item.metadata)
            if total > MAX_REMEMBER_BATCH_BYTES:
                raise ValueError(f"records must hold at most {MAX_REMEMBER_BATCH_BYTES} bytes of text together")
        return value


def _metadata_bytes(value: Any) -> int:
    """A rough UTF-8 size of an item's metadata, for the batch's total (the exact caps are the store's)."""
    try:
        return len(json.dumps(value, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass"))
    except (ValueError, TypeError):
        return 0


def _memory_id(value: str) -> str:
    return memory_id_ref(value)


class UpdateParams(IdentityParams, _TtlParams):
    """``meta/agent_memory/update``: identity, realm?, memory_id, title?, body?, tags?, metadata?, ttl_s?,
    clear_expiry?

    An omitted (or ``null``) field keeps the prior version's value; at least one of
    ``title``, ``body``, ``tags``, ``metadata``, ``ttl_s``, ``clear_expiry: true`` is required (``tags: []``
    clears the tags; a ``metadata`` object replaces the prior's whole, keys are not merged, and ``{}`` clears
    it). ``ttl_s`` gives the new version an expiry ``ttl_s`` seconds from now; ``clear_expiry: true``
    gives it none; without either it keeps the prior's ``expires_at_ms``. The two together are refused."""

    memory_id: str
    title: str | None = None
    body: str | None = None
    tags: list[str] | None = None
    clear_expiry: bool = False
    metadata: dict[str, Any] | None = None

    _v_memory_id = field_validator("memory_id")(lambda cls, v: _memory_id(v))
    _v_tags = field_validator("tags")(lambda cls, v: _tags(v))

    @model_validator(mode="after")
    def _something_to_change(self) -> "UpdateParams":
        if self.ttl_s is not None and self.clear_expiry:
            raise MembersRule("ttl_s and clear_expiry: true are exclusive (give one)", "clear_expiry")
        if (self.title is None and self.body is None and self.tags is None and self.metadata is None
                and self.ttl_s is None and not self.clear_expiry):
            raise MembersRule("update needs at least one of title, body, tags, metadata, ttl_s, clear_expiry", "params")
        return self


class ForgetParams(IdentityParams):
    """``meta/agent_memory/forget``: identity, realm?, memory_id."""

    memory_id: str
    _v_memory_id = field_validator("memory_id")(lambda cls, v: _memory_id(v))


class HistoryParams(IdentityParams):
    """``meta/agent_memory/history``: identity, realm?, memory_id (any version of the record)."""

    memory_id: str
    _v_memory_id = field_validator("memory_id")(lambda cls, v: _memory_id(v))


class RecallParams(_FilterParams):
    """``meta/agent_memory/recall``: identity, realm?, selection? (contextual|always), query_text?,
    query_terms?, max_entries? (1..64; default from config), filter? (over the records' metadata: the
    best ``max_entries`` among the matching records)."""

    selection: str | None = None
    query_text: str | None = None
    query_terms: list[str] | None = None
    max_entries: Any = None

    @field_validator("selection")
    @classmethod
    def _selection(cls, value: str | None) -> str | None:
        if value is None:
            return None
        norm = value.strip().lower()
        if norm not in ("always", "contextual"):
            raise ValueError("selection must be 'always' or 'contextual'")
        return norm

    @field_validator("query_text")
    @classmethod
    def _query_text(cls, value: str | None) -> str | None:
        if value is None:
            return None
        text = value.strip()
        if not text:
            return None  # nothing to search for: contextual recall answers skip_reason "no_query_terms"
        problem = query_size_error(text)
        if problem is not None:
            raise ValueError(problem[1])
        return text

    @field_validator("query_terms")
    @classmethod
    def _query_terms(cls, value: list[str] | None, info: ValidationInfo) -> list[str] | None:
        if value is None:
            return None
        if len(value) > MAX_QUERY_TERM_ENTRIES:
            raise ValueError(f"query_terms must contain at most {MAX_QUERY_TERM_ENTRIES} entries")
        for term in value:
            if not term.strip():
                raise ValueError("query_terms must be an array of non-empty strings")
            if _nbytes(term) > MAX_QUERY_TERM_BYTES:
                raise ValueError(f"query_terms entries must be at most {MAX_QUERY_TERM_BYTES} bytes")
        terms = [t.strip() for t in value]
        problem = query_size_error(info.data.get("query_text"), terms)
        if problem is not None:
            raise ValueError(problem[1])
        return terms

    @field_validator("max_entries", mode="before")
    @classmethod
    def _max_entries(cls, value: Any) -> int | None:
        return optional_count(value, "max_entries", MAX_MEMORY_ENTRIES)


class ManifestParams(IdentityParams):
    """``meta/agent_memory/manifest``: identity, realm?, tier? (working_set|full), k? (1..512, working_set only)."""

    tier: Literal["working_set", "full"] | None = None
    k: Any = None

    @field_validator("k", mode="before")
    @classmethod
    def _k(cls, value: Any) -> int | None:
        return optional_count(value, "k", MAX_MANIFEST_K)

    @model_validator(mode="after")
    def _k_only_with_working_set(self) -> "ManifestParams":
        if self.k is not None and self.tier == "full":
            raise MembersRule("k is only valid with tier 'working_set'", "k")
        return self


class ListParams(_FilterParams):
    """``meta/agent_memory/list``: identity, realm?, tags? (every one must be held; normalised like a
    write's tags, at most 32), filter? (over the records' metadata), limit? (1..500, default 100),
    cursor? (the ``next_cursor`` of the page before, with the same filter)."""

    tags: list[str] | None = None
    limit: Any = Field(default=None, validate_default=True)
    cursor: str | None = None

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        # a blank tag is refused as a write's is: normalised away, it would widen the filter to every record
        check_given_tags(value)
        # a FieldError is a ValueError: raised as it is, so a rule about one tag names it (``tags.0``)
        return list(normalize_tags(value))

    @field_validator("limit", mode="before")
    @classmethod
    def _limit(cls, value: Any) -> int:
        if value is None:
            return 100
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LIST_LIMIT:
            raise ValueError(f"limit must be an integer between 1 and {MAX_LIST_LIMIT}")
        return value

    @field_validator("cursor")
    @classmethod
    def _cursor(cls, value: str | None) -> str | None:
        if value is None:
            return None
        decode_cursor(value)  # ValueError: CURSOR_RULE
        return value


class EraseIdentityParams(IdentityParams):
    """``meta/agent_memory/erase_identity``: identity, realm?, dry_run? (default false), reason? (at most
    400 bytes, no secret: kept in the erase audit rows)."""

    dry_run: bool = False
    reason: str | None = None

    @field_validator("reason")
    @classmethod
    def _reason(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if _nbytes(value) > MAX_REASON_BYTES:
            raise ValueError(f"reason must be at most {MAX_REASON_BYTES} bytes")
        secret_class = scan_text(value)  # the one scanner for every write: the reason is kept in the audit rows
        if secret_class is not None:
            raise ValueError(secret_rule("reason", secret_class))
        return value


class EraseParams(EraseIdentityParams):
    """``meta/agent_memory/erase``: identity, realm?, memory_id, dry_run?, reason?"""

    memory_id: str
    _v_memory_id = field_validator("memory_id")(lambda cls, v: _memory_id(v))

"""The params of every method that acts on the session of an identity in a realm.

``meta/session/note|reset|compacted|retire``, ``meta/turn/tool_result``, ``meta/turn/inject`` and
``meta/agent_memory/tool`` derive their params from :class:`SessionParams` (``session_key``
optional) or :class:`KeyedSessionParams` (``session_key`` required): ``identity`` (required,
logical), ``realm`` (optional; ``[agent_memory] realm`` when absent) and ``session_key``. The
handler turns them into the one :class:`~meta_memory.session_ref.SessionRef` it hands down
(:meth:`SessionParams.session_ref`), and access control judges the same realm
(``<realm>/<identity>``, :func:`~meta_memory.access.requirements.identity_resource`). A test walks
the method table and refuses any method taking ``session_key`` whose params do not derive from
this mixin.

``session_key`` is taken exactly as given and held to the one session-key rule
(:func:`~meta_memory.session_ref.check_session_key`, the name rule of identities and realms): a key with
whitespace at either end, or with control, invisible or direction-changing characters, is refused with
-32602 naming ``session_key`` and the rule, never trimmed into another session's key.

A key holding a credential (the secret scanner's classes: ``ghp_...``, ``AKIA...``) is not refused but
never recorded: :meth:`SessionParams.session_ref` hands down ``redacted-session:<32 hex>`` in its place
(:func:`~meta_memory.session_ref.recorded_session_key`), the one place that rule is applied to a session
a call names (``derived_from_sessions`` is mapped by the same function), so session state, the timeline,
``meta/status``, the injection ledger, evidence refs, traces and the answers never hold it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from pydantic import ConfigDict, Field, field_validator

from ..session_ref import SessionRef, check_session_key, recorded_session_key
from .params import REQUIRED_MARK, IdentityParams

__all__ = ["KeyedSessionParams", "SessionMembers", "SessionParams"]


class SessionParams(IdentityParams):
    """``{identity, realm?, session_key?}``; ``session_key`` at most 512 bytes, never trimmed (module doc)."""

    #: Whether ``session_key`` must be given (:class:`KeyedSessionParams`).
    session_key_required: ClassVar[bool] = False

    session_key: Any = Field(default=None, validate_default=True, json_schema_extra={"type": "string"})

    @field_validator("session_key", mode="before")
    @classmethod
    def _session_key(cls, value: Any) -> str | None:
        return check_session_key(value, required=cls.session_key_required)

    def session_ref(self, default_realm: str, secret: Callable[[], bytes],
                    manages: Callable[[str, str], bool] | None = None) -> SessionRef:
        """The session these params name; ``default_realm`` (the gateway's ``[agent_memory] realm``)
        when they name no realm. A ``session_key`` holding a credential is named by its digest under
        ``secret()`` (the installation's session-digest secret, read only then; module doc).
        ``manages(realm, identity)``: whether the caller manages that identity's sessions, so that
        another identity's taint of this key counts for this session's writes
        (:attr:`~meta_memory.session_ref.SessionRef.shares_key_with`; ``None``: every identity's counts)."""
        key = None if self.session_key is None else recorded_session_key(self.session_key, secret)
        realm = self.realm if self.realm is not None else default_realm
        shares = None if manages is None else (lambda identity: manages(realm, identity))
        return SessionRef(realm, self.identity, key, shares)


class KeyedSessionParams(SessionParams):
    """:class:`SessionParams` whose ``session_key`` is required."""

    session_key_required: ClassVar[bool] = True

    session_key: Any = Field(default=None, validate_default=True,
                             json_schema_extra={"type": "string", REQUIRED_MARK: True})


class SessionMembers(KeyedSessionParams):
    """The session members (``identity``, ``realm?``, ``session_key``) of a session method's params, every
    other member ignored: what a refusal of the params still names (held to the same rules as
    :class:`KeyedSessionParams`). Not a params model of any method: the method table reads it from refused
    params (:class:`~meta_memory.rpc.registry.Refused`), e.g. to taint the session of a refused
    ``meta/turn/tool_result``."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)

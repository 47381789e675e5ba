"""Access control as the runtime applies it: authenticate, authorise each call, judge rows and events.

Wraps :mod:`meta_memory.access` (policy, principals, per-RPC rules) and
:mod:`meta_memory.panel.visibility`. With no ``[access]`` table, or
``enabled = false``, everything is allowed and the principal is the anonymous
"no principal known" caller.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import secrets
import threading
from collections.abc import Callable, Collection, Iterator
from typing import TYPE_CHECKING, Any

from ..access.policy import AccessPolicy, RealmCreationDenied
from ..access.principal import ANONYMOUS, NO_PRINCIPAL_KNOWN, Principal, authenticate
from ..access.requirements import admit, authorize
from ..access.resources import Resource, Resources, roster_directory
from ..agent_memory.realm_list import realm_creation_judged_by
from ..events.bus import SYSTEM_IDENTITY, EventEnvelope
from ..events.cursor import EventCursor
from ..identity import DEFAULT_REALM
from ..panel.visibility import SCOPE_READS, Visibility
from ..session_ref import keyless_reason

if TYPE_CHECKING:  # pragma: no cover
    from ..access.config import AccessConfig
    from ..agent_memory.model import Scope
    from ..rpc.registry import MethodSpec

#: What a caller holds, unscoped and under no deny, to see every timeline event (and so be shown the plain
#: shared sequence): what reading every kind of scope needs (identity events need read + view, a
#: promotion's the read of its mob or operator scope).
_SEES_EVERY = tuple(sorted({action for needs in SCOPE_READS.values() for action in needs}))


__all__ = ["AccessService"]


class _CallerRealmCreation:
    """One call's :class:`~meta_memory.agent_memory.realm_list.RealmCreationJudge`. The call's action (the first
    its declaration requires) is worked out only when a realm is about to be created, not on every call."""

    def __init__(self, service: AccessService, principal: Principal, spec: MethodSpec, parsed: Any) -> None:
        self._service, self._principal, self._spec, self._parsed = service, principal, spec, parsed

    def _action(self) -> str | None:
        needs = self._spec.requires(self._parsed, self._service.resources)
        return needs[0].action if needs else None

    def judge(self, realm: str) -> None:
        action = self._action()
        if action is None or not self._service.policy.may_create_realm(self._principal, action, realm,
                                                                        self._service.listed_realms):
            raise RealmCreationDenied(action or self._spec.name, realm)

    def shows_realm_count(self) -> bool:
        action = self._action()
        return action is not None and self._service.policy.check(self._principal, action, Resource.unscoped())


class AccessService:
    """The runtime's access authority (one per runtime)."""

    def __init__(self, config: AccessConfig | None, default_realm: str = DEFAULT_REALM,
                 listed_realms: Collection[str] | None = None) -> None:
        self.config = config
        self.policy = AccessPolicy(config, default_realm)
        #: ``[agent_memory] realms`` (``None``: no allow-list): realms any allowed writer may create.
        self.listed_realms = frozenset(listed_realms) if listed_realms is not None else None
        roster = config.roster if config is not None else ()
        self.resources = Resources(roster_directory(roster), default_realm)
        self._digest_source: Callable[[], bytes] | None = None
        self._digest_secret: bytes | None = None
        self._digest_lock = threading.Lock()

    def bind_digest_secret(self, source: Callable[[], bytes]) -> None:
        """Where the session-key digest secret comes from (the runtime binds the installation's); read
        once, on the first digest shown."""
        self._digest_source = source

    @property
    def digest_secret(self) -> bytes:
        """The key of every session-key digest this runtime shows
        (:func:`~meta_memory.session_ref.session_key_digest`): the bound source's (read once), else a
        random secret of this process."""
        with self._digest_lock:
            if self._digest_secret is None:
                source = self._digest_source
                self._digest_secret = source() if source is not None else secrets.token_bytes(32)
            return self._digest_secret

    @property
    def enabled(self) -> bool:
        return self.policy.enabled

    def authenticate(self, authorization: str | None) -> Principal:
        """The principal of an ``Authorization`` header. Raises ``AuthenticationFailed`` (HTTP 401)."""
        return authenticate(authorization, self.config)

    def tokenless(self, principal: Principal | None) -> bool:
        """Whether ``principal`` is a transport's caller that sent no token to a gateway that lists tokens
        (served under ``anyone`` rules, access control on): such a caller's request body and answers get
        the smaller ``TOKENLESS_*`` caps of :mod:`meta_memory.limits`. ``None`` (an in-process caller) is not."""
        return principal is not None and principal.anonymous and self.config is not None and bool(self.config.tokens)

    def admit(self, principal: Principal | None, spec: MethodSpec) -> None:
        """The method's entry gate, judged before its params are read
        (:func:`~meta_memory.access.requirements.admit`). Raises ``AccessDenied`` (-32030)."""
        admit(self.policy, principal or ANONYMOUS, spec)

    def authorize(self, principal: Principal | None, spec: MethodSpec, parsed: Any) -> None:
        """Enforce a method's declared requirement (``spec.requires`` on its **parsed** params)
        and, on a read-only gateway, its ``spec.mutating``. Raises ``AccessDenied`` (-32030)
        or ``ReadOnlyConsole`` (-32030, ``data.read_only``)."""
        authorize(self.policy, principal or ANONYMOUS, spec, parsed, self.resources)

    @contextlib.contextmanager
    def realm_creation(self, principal: Principal | None, spec: MethodSpec, parsed: Any) -> Iterator[None]:
        """The context a call's handler runs in: with access control on, every realm the store would
        create during the call is first judged for ``principal`` on the call's action (the first its
        declaration requires: a remember's or the memory tool's ``agent.memory.write``,
        :meth:`AccessPolicy.may_create_realm`), refused with
        :class:`~meta_memory.access.policy.RealmCreationDenied` (-32030) before the realm exists
        (:func:`~meta_memory.agent_memory.realm_list.refuse_realm_creation`). A call whose declaration
        requires nothing creates no realm. The ``max_realms`` refusal tells the figures only to a caller
        holding that action unscoped. Without access control nothing is judged."""
        if not self.policy.enabled:
            yield
            return
        with realm_creation_judged_by(_CallerRealmCreation(self, principal or ANONYMOUS, spec, parsed)):
            yield

    def visibility(self, principal: Principal | None) -> Visibility:
        """Row-visibility judge for one caller (panel listings, record detail, injections)."""
        # no digest is shown without access control, so the secret is not read (nor made) then
        return Visibility(self.policy, principal or ANONYMOUS, self.resources,
                          self.digest_secret if self.policy.enabled else None)

    def memory_can_read(self, principal: Principal | None) -> bool:
        """``memory.can_read`` of the experience projection: may the caller open the Memory panel?"""
        return self.policy.can_read_memory(principal or ANONYMOUS)

    def holds_unscoped(self, principal: Principal | None, action: str) -> bool:
        """Whether ``principal`` holds ``action`` unscoped (always, without ``[access]``): the check of a
        route that is not a method, such as ``GET /metrics`` (``operator.status``)."""
        return not self.policy.enabled or self.policy.check(principal or ANONYMOUS, action, Resource.unscoped())

    def holds_on_identity(self, principal: Principal | None, action: str, realm: str, identity: str) -> bool:
        """Whether ``principal`` holds ``action`` on ``<realm>/<identity>`` (always, without ``[access]``):
        a check on an identity the params do not name as the call's own (typed agent provenance's
        ``source_id``, whose session taint needs ``agent.session.manage``)."""
        return not self.policy.enabled or self.policy.check(principal or ANONYMOUS, action,
                                                            self.resources.identity(realm, identity))

    def event_visible(self, principal: Principal | None, event: EventEnvelope) -> bool:
        """A timeline event about an identity needs read + view on it; a system event needs
        an unscoped ``agent.memory.read``, and one about a stored scope (``data.scope_kind`` and
        ``data.scope_key``: a promotion into a mob, an operator scope or the realm) also what reading that
        scope's rows needs (:meth:`Visibility.scope`: ``mob.memory.read`` on the mob, ...), so a deny that
        withholds a mob's rows withholds its events too."""
        if not self.policy.enabled:
            return True
        who = principal or ANONYMOUS
        named = event.data.get("realm")
        realm = named if isinstance(named, str) else self.resources.default_realm
        if event.identity == SYSTEM_IDENTITY:
            if not self.policy.check(who, "agent.memory.read", Resource.unscoped()):
                return False
            kind, key = event.data.get("scope_kind"), event.data.get("scope_key")
            if not isinstance(kind, str) or not isinstance(key, str):
                return True
            try:
                return self.visibility(principal).scope(realm, kind, key)
            except ValueError:  # a scope kind this release does not know: fail closed
                return False
        res = self.resources.identity(realm, event.identity)
        return self.policy.check(who, "agent.memory.read", res) and self.policy.check(who, "agent.view", res)

    def event_cursor(self, principal: Principal | None) -> EventCursor:
        """How ``principal`` is shown event ids and reads them back (:mod:`meta_memory.events.cursor`):
        the plain shared sequence when it sees every event (no ``[access]``, or each action of
        :data:`_SEES_EVERY` granted unscoped with no deny of it that applies to the caller), else opaque ids under a key of its own, derived from
        the installation's session-digest secret (so its cursors survive a restart)."""
        who = principal or ANONYMOUS
        if not self.policy.enabled or all(self.policy.check(who, action, Resource.every()) for action in _SEES_EVERY):
            return EventCursor(None)
        reader = b"\0anonymous" if who.name is None else b"principal\0" + who.name.encode("utf-8", "surrogatepass")
        return EventCursor(hmac.new(self.digest_secret, b"meta-memory event cursor\0" + reader, hashlib.sha256).digest())

    def event_json(self, principal: Principal | None, event: EventEnvelope,
                   cursor: EventCursor | None = None) -> dict[str, Any]:
        """``event`` as the wire shows it to ``principal`` (``meta/events/list``, ``GET /events``): its
        ``event_id`` written by ``cursor`` (default: :meth:`event_cursor`); a ``data.session_key`` (a taint
        transition's) in clear only to a caller holding ``agent.session.manage`` on the event's identity,
        else its digest (:meth:`Visibility.session_key`, the one rule)."""
        out = event.to_dict()
        out["event_id"] = (cursor or self.event_cursor(principal)).event_id(event.seq)
        reason = event.data.get("reason")
        if isinstance(reason, str) and keyless_reason(reason) != reason:
            out["data"] = {**event.data, "reason": keyless_reason(reason)}
        key = event.data.get("session_key")
        if isinstance(key, str) and event.identity != SYSTEM_IDENTITY:
            named = event.data.get("realm")
            realm = named if isinstance(named, str) else self.resources.default_realm
            shown = self.visibility(principal).session_key(realm, event.identity, key)
            if shown != key:
                out["data"] = {**out["data"], "session_key": shown}
        return out

    def scope_check(self, principal: Principal | None, action: str) -> Callable[[Scope], bool]:
        """``check(scope)``: whether ``principal`` holds ``action`` on a record scope (always, without
        ``[access]``). Handed to an operation that reaches scopes its params do not name (an erase's
        content closure, each scope of which needs ``agent.memory.erase``)."""
        who = principal or ANONYMOUS

        def check(scope: Scope) -> bool:
            kind, key = scope.storage()
            return self.policy.check(who, action, self.resources.scope(scope.realm, kind, key))

        return check

    def actor(self, principal: Principal | None) -> str:
        """Who a receipt (the erasure register's ``erased_by``) names: the principal's name, ``"anonymous"``
        when access control is on and the caller presented no token, ``"no principal known"`` without it."""
        if principal is not None and principal.name:
            return principal.name
        return "anonymous" if self.policy.enabled else NO_PRINCIPAL_KNOWN

    def reviewer(self, principal: Principal | None) -> dict[str, Any]:
        """The reviewer a decision records: the authenticated principal, never a caller-supplied name."""
        return (principal or ANONYMOUS).reviewer()

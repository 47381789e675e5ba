"""The LLM write gate: which memory writes land quarantined (seed: "Content trust and session taint").

The record store asks the gate once per staged batch; the verdict applies to
every create/supersede op in the batch. Reasons, first match wins (reference
notes §5):

1. a non-LLM author (``operator``, ``application``) is never quarantined;
2. posture ``llm_writes = "quarantined"`` quarantines every LLM-authored batch
   except a ``review_verdict`` batch: ``llm_writes=quarantined policy``;
2b. the session state is at its row cap (fail closed, same exception):
   ``session state at capacity; ...`` (:data:`~meta_memory.firewall.taint.CAPACITY_REASON`);
3. an ``agent`` author whose session is tainted in the realm written to (the
   named session's own taint, the current session's when none is named, pending
   taint included): ``session tainted by <source>``;
4. an evidence ref citing a tainted session:
   ``evidence session tainted by <source> (session-tainted ⇒ range-tainted)``;
   or a session closed at a reset boundary:
   ``evidence session closed at a reset boundary; distillates quarantine pending
   steward review (§8.4)``;
5. otherwise ``None`` (the write lands active).

A write **derived from sessions** (the host's own summary or notes of a
session, ``meta/agent_memory/remember`` with ``derived_from_sessions``) asks
:meth:`LlmWriteGate.derived_reason` first, for any author: when a named session
of that (realm, identity) is tainted, or was tainted when a reset closed it, or
another identity's session of that key is tainted in the realm and counts as it
does for a ``memory`` tool write from the key (``shares_key_with``), the write
lands quarantined with ``derived from a session tainted by <source>`` (``...
before its reset`` for a closed one; ``<source>`` is "another identity's session
of this key" for another identity's taint; the reason never names the session). :class:`DerivedWriteGate`
binds that check to one write for the store. This is a host opt-in beyond the
spec's "application writes are never quarantined": an application write that
names no session is still never quarantined.

A **forget** asks the same gate (:meth:`LlmWriteGate.forget_hold_reason`): the
reasons of steps 1-3 hold the tombstone for review instead of applying it, so
a tainted session (or any LLM author under the strict posture) cannot destroy
active memory on its own; the record stays active until a reviewer decides.

Authors are duck-typed so any record model fits: an object with a ``kind``
attribute (a string or an enum whose ``value`` is the string) in
``operator | application | agent | steward | distiller`` and, for agents, an
``identity`` attribute; a mapping with ``kind`` (or the serialised tag
``author``) and ``identity`` keys works too. An unknown kind is treated as an
LLM author (fail closed). Evidence refs are objects or mappings with a
``session_id``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from meta_memory.errors import ConfigError
from meta_memory.firewall.taint import CAPACITY_REASON, RESET_BOUNDARY_REASON, TaintTracker
from meta_memory.session_ref import SessionRef

__all__ = [
    "DerivedWriteGate",
    "EvidenceWriterGate",
    "LLM_WRITES_POSTURES",
    "NON_LLM_AUTHOR_KINDS",
    "POLICY_REASON",
    "LlmWriteGate",
    "author_identity",
    "derived_reason_text",
    "author_kind",
    "is_llm_author",
    "reason_class",
]

#: Accepted values of ``agent_memory.llm_writes``.
LLM_WRITES_POSTURES: Final = ("observed", "quarantined")

#: Author kinds the gate never quarantines.
NON_LLM_AUTHOR_KINDS: Final = frozenset({"operator", "application"})

#: Reason recorded for every LLM write under ``llm_writes = "quarantined"``.
POLICY_REASON: Final = "llm_writes=quarantined policy"

_REVIEW_VERDICT: Final = "review_verdict"


def derived_reason_text(source: str, *, reset: bool) -> str:
    """The quarantine reason of a write derived from a tainted session (``reset``: tainted when a reset
    closed it). It never names the session: the reason is shown to every reader of the record and of
    its ``memory.write.quarantined`` event, and a session key is a secret of whoever manages it."""
    tail = " before its reset" if reset else ""
    return f"derived from a session tainted by {source}{tail}"


#: The classes :func:`reason_class` sorts reasons into, by the text each class's reasons begin with
#: (longest first, so an evidence reason is not read as a session reason).
_REASON_CLASSES: Final = (
    (RESET_BOUNDARY_REASON, "evidence_reset_boundary"),
    ("evidence session tainted by ", "evidence_tainted"),
    ("derived from a session ", "derived_session_tainted"),
    ("derived from session ", "derived_session_tainted"),  # as stored before reasons stopped naming it
    ("session tainted by ", "session_tainted"),
    (CAPACITY_REASON, "session_capacity"),
    (POLICY_REASON, "policy"),
)


def reason_class(reason: str) -> str:
    """The fixed class of a quarantine or hold reason of this module: ``policy``, ``session_capacity``,
    ``session_tainted``, ``evidence_tainted``, ``evidence_reset_boundary``, ``derived_session_tainted``,
    else ``other``. A reason's text names what callers chose (session keys, tool and server names,
    senders); its class names none of them, so it can label a metric."""
    for prefix, name in _REASON_CLASSES:
        if reason.startswith(prefix):
            return name
    return "other"


def _text(value: Any) -> str | None:
    if value is None:
        return None
    value = getattr(value, "value", value)
    return value if isinstance(value, str) else str(value)


def _field(obj: Any, *names: str) -> Any:
    for name in names:
        if isinstance(obj, Mapping):
            if name in obj:
                return obj[name]
        elif hasattr(obj, name):
            return getattr(obj, name)
    return None


def author_kind(author: Any) -> str:
    """The author's kind string (``""`` when it has none)."""
    kind = _text(_field(author, "kind", "author"))
    return (kind or "").strip().lower()


def author_identity(author: Any) -> str | None:
    """The author's agent identity, or ``None`` when the author has none."""
    identity = _field(author, "identity")
    return identity if isinstance(identity, str) and identity.strip() else None


def is_llm_author(author: Any) -> bool:
    """True for ``agent``, ``steward``, ``distiller`` and any unknown kind (fail closed)."""
    return author_kind(author) not in NON_LLM_AUTHOR_KINDS


class LlmWriteGate:
    """Decides the quarantine reason of a staged write batch.

    Args:
        tracker: the shared :class:`~meta_memory.firewall.taint.TaintTracker`.
        llm_writes: ``"observed"`` (default; quarantine tainted-session writes)
            or ``"quarantined"`` (quarantine every LLM-authored write).

    Raises:
        ConfigError: ``llm_writes`` is not one of the two postures.
    """

    def __init__(self, tracker: TaintTracker, llm_writes: str = "observed") -> None:
        if llm_writes not in LLM_WRITES_POSTURES:
            raise ConfigError(f"agent_memory.llm_writes must be 'observed' or 'quarantined' (got '{llm_writes}')")
        self._tracker = tracker
        self._posture = llm_writes

    @property
    def llm_writes(self) -> str:
        """The configured posture."""
        return self._posture

    @property
    def tracker(self) -> TaintTracker:
        """The taint tracker this gate reads."""
        return self._tracker

    def forget_hold_reason(self, author: Any, *, realm: str, session_key: str | None = None,
                           shares_key_with: Callable[[str], bool] | None = None) -> str | None:
        """The reason a forget in ``realm`` by ``author`` must be held for review, or ``None`` to apply it now.

        The same decision as :meth:`quarantine_reason` for a fresh write from that
        session (no evidence refs): ``llm_writes=quarantined policy`` for any LLM
        author under the strict posture, ``session tainted by <source>`` for an
        agent whose session is tainted in ``realm``; never for ``operator``/``application``.
        """
        return self.quarantine_reason(author, "fresh_write", (), realm=realm, session_key=session_key,
                                      shares_key_with=shares_key_with)

    def quarantine_reason(
        self,
        author: Any,
        batch_kind: Any = "fresh_write",
        evidence: Iterable[Any] | None = (),
        *,
        realm: str,
        session_key: str | None = None,
        shares_key_with: Callable[[str], bool] | None = None,
        writer: str | None = None,
    ) -> str | None:
        """The reason this batch must land quarantined, or ``None`` to land it active.

        Args:
            author: the batch author (duck-typed; module docstring).
            batch_kind: ``"fresh_write"`` or ``"review_verdict"`` (string or enum).
            evidence: the batch's evidence refs (objects/mappings with ``session_id``).
            realm: the realm written to; taint and evidence are read in it alone (the store passes
                its batch's realm, the recorder tool its session's).
            session_key: the session the write comes from, when the caller knows
                it (the recorder tool's dispatch does): the write carries that
                session's taint (:meth:`TaintTracker.write_taint`); without it, the
                identity's current session's.
            shares_key_with: which other identities' taint of the session's key, and of an evidence
                ref's session, counts (:attr:`~meta_memory.session_ref.SessionRef.shares_key_with`;
                every identity's when ``None``).
            writer: the identity an evidence ref's session is judged as cited by when the author is no
                agent of an identity (a steward's harvest of an identity's records,
                :class:`EvidenceWriterGate`): that identity's own taint of the key counts, and another's
                as ``shares_key_with`` admits, named "another identity's session of this key" rather than
                by its source. An agent author's own identity comes first.

        Returns:
            ``None`` or one reason string of the module docstring.
        """
        if not is_llm_author(author):
            return None
        if self._posture == "quarantined" and _text(batch_kind) != _REVIEW_VERDICT:
            return POLICY_REASON
        if _text(batch_kind) != _REVIEW_VERDICT and self._tracker.at_capacity():
            return CAPACITY_REASON
        identity = author_identity(author) if author_kind(author) == "agent" else None
        if identity:
            taint = self._tracker.write_taint(SessionRef(realm, identity, session_key, shares_key_with))
            if taint is not None:
                return f"session tainted by {taint.source}"
        for ref in evidence or ():
            session_id = _field(ref, "session_id")
            if not isinstance(session_id, str) or not session_id:
                continue
            reason = self._tracker.evidence_reason(session_id, realm=realm, writer=identity or writer or None,
                                                   counts=shares_key_with)
            if reason is not None:
                return reason
        return None

    def derived_reason(self, identity: str, session_keys: Iterable[str], *, realm: str,
                       shares_key_with: Callable[[str], bool] | None = None) -> str | None:
        """Why a write derived from ``identity``'s ``session_keys`` must land quarantined, or ``None``.

        Checked for any author (the host's own writes included): the first named session of that
        (realm, identity) that is tainted, or was tainted when a reset closed it, or whose key another
        identity ``shares_key_with`` admits (every one when ``None``) holds tainted in the realm, gives
        :func:`derived_reason_text` (:meth:`~meta_memory.firewall.taint.TaintTracker.derived_taint`; another
        identity's taint read as "another identity's session of this key"). A clean session, a session reset
        clean and an unknown key add nothing; naming sessions never clears a reason another rule gives."""
        for key in session_keys:
            found = self._tracker.derived_taint(SessionRef(realm, identity, key, shares_key_with))
            if found is not None:
                taint, reset = found
                return derived_reason_text(taint.source, reset=reset)
        return None


class EvidenceWriterGate:
    """The write gate of a batch whose evidence refs cite sessions of one identity, as the store calls it:
    a harvest's promotion of the records an identity wrote from a retired session (each carries that
    session as its ``provenance.evidence``, as ``meta/agent_memory/remember`` with
    ``derived_from_sessions`` stored it). Each ref is judged as ``writer``'s citation of its key
    (:meth:`LlmWriteGate.quarantine_reason`'s ``writer``), and another identity's taint of the key counts as
    ``shares_key_with`` admits (the caller's managed identities under ``[agent_memory] shared_key_taint =
    "managed"``; every identity's when ``None``), the rule a ``memory`` tool write of that identity follows
    (:attr:`~meta_memory.session_ref.SessionRef.shares_key_with`)."""

    def __init__(self, gate: LlmWriteGate, writer: str, shares_key_with: Callable[[str], bool] | None) -> None:
        self._gate = gate
        self._writer = writer
        self._shares = shares_key_with

    def quarantine_reason(self, author: Any, batch_kind: Any, evidence: Iterable[Any] | None, *,
                          realm: str) -> str | None:
        """The gate's answer for the batch (the store's :class:`WriteGate` protocol), evidence judged as
        the bound writer's."""
        return self._gate.quarantine_reason(author, batch_kind, evidence, realm=realm, writer=self._writer,
                                            shares_key_with=self._shares)


class DerivedWriteGate:
    """The write gate of one write derived from sessions, as the store calls it.

    ``quarantine_reason(author, batch_kind, evidence)`` answers :meth:`LlmWriteGate.derived_reason`
    for ``identity``'s ``session_keys`` in ``realm`` first (another identity's taint of a key counting as
    ``shares_key_with`` admits: the writing caller's managed identities under ``[agent_memory]
    shared_key_taint = "managed"``, every identity's when ``None``), then the gate's own rules for the batch
    (an LLM author's taint, an evidence ref's session), so the derived check only ever adds quarantine.
    It is asked inside the write's transaction, so taint recorded before the write commits counts."""

    def __init__(self, gate: LlmWriteGate, identity: str, session_keys: Iterable[str], realm: str,
                 shares_key_with: Callable[[str], bool] | None = None) -> None:
        self._gate = gate
        self._identity = identity
        self._session_keys = tuple(session_keys)
        self._realm = realm
        self._shares = shares_key_with

    def quarantine_reason(self, author: Any, batch_kind: Any, evidence: Iterable[Any] | None, *,
                          realm: str) -> str | None:
        """``realm`` is the batch's realm (the store's :class:`WriteGate` protocol); it is the realm this
        gate was made for."""
        if realm != self._realm:  # pragma: no cover - the service builds the gate for the write's realm
            raise ValueError(f"derived write gate of realm {self._realm!r} asked about realm {realm!r}")
        reason = self._gate.derived_reason(self._identity, self._session_keys, realm=realm,
                                           shares_key_with=self._shares)
        if reason is not None:
            return reason
        return self._gate.quarantine_reason(author, batch_kind, evidence, realm=realm, shares_key_with=self._shares)

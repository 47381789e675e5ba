"""The host surface: session lifecycle, per-turn firewall and injection, and the ``memory`` tool.

Spec README, "The host surface". A host (any agent loop) calls these at the
same seams the seed's runtime would:

- ``meta/session/note|reset|compacted|retire``: taint and injection budgets
  follow the session; a fresh-context boundary (reset) clears taint,
  compaction keeps it but lets injection start over;
- ``meta/turn/tool_result``: classify a tool result BEFORE the model sees it
  (the taint is visible to the very next memory write of that session);
- ``meta/turn/inject``: the quoted observation block for this turn or build;
- ``meta/turn/defang``: neutralise forged memory markers in inbound text;
- ``meta/agent_memory/tool`` / ``tool_schema``: the recorder tool (an LLM-authored write).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..agent_memory.writes import wrote_nothing
from ..errors import AgentMemoryError
from ..events.bus import EventSink
from ..firewall.classify import ToolProvenance
from ..injection.build import build_scope_set
from ..session_ref import SessionRef
from ..tool.schema import memory_tool_definition
from ..tool.store_ops import StoreRecorderOps

if TYPE_CHECKING:  # pragma: no cover
    from ..agent_memory.config import AgentMemoryConfig
    from ..agent_memory.model import Author
    from ..agent_memory.store.base import AgentMemoryStore
    from ..firewall.gate import LlmWriteGate
    from ..firewall.service import Firewall
    from ..injection.coordinator import InjectionCoordinator
    from ..review.forgets import ForgetRequest
    from ..tool.args import RecordDraft
    from ..tool.recorder import RecorderTool
    from .agent_memory import AgentMemoryService

__all__ = ["HostService", "QuarantineEventOps"]

class QuarantineEventOps(StoreRecorderOps):
    """The recorder tool's store operations, plus timeline events after each write commits, and
    recall through the configured recall provider; every operation acts in its session's realm.

    Events, as the application writes emit them (ids only, each naming the realm it happened in):
    ``memory.record.created`` ``{realm, record_id}`` for a new active record,
    ``memory.record.updated`` ``{realm, record_id, supersedes}`` for an active new version,
    ``memory.record.forgotten`` ``{realm, record_id}``; a write the gate quarantined emits
    ``memory.write.quarantined`` instead (the record is not in memory until review releases it), a
    held forget ``memory.forget.held``. A duplicate remember emits nothing.
    """

    def __init__(self, store: AgentMemoryStore, gate: LlmWriteGate | None, service: AgentMemoryService,
                 events: EventSink) -> None:
        super().__init__(store, gate, recall=self._recall_rows)
        self._service = service
        self._events = events

    def mark_recalled(self, session: SessionRef, memory_ids: Sequence[str]) -> None:
        """Nothing: :meth:`_recall_rows` recalled through the service, which counted the recall once (and
        counts nothing on a read-only gateway)."""

    def _recall_rows(self, session: SessionRef, query_text: str | None, selection: str,
                     max_entries: int) -> Sequence[Any]:
        out = self._service.recall(session.realm, session.identity, selection=selection, query_text=query_text,
                                   query_terms=None, max_entries=max_entries)
        # rows already carry the wire fields the tool renders
        from types import SimpleNamespace

        return [SimpleNamespace(**r) for r in out["records"]]

    def recall_with_mob(self, session: SessionRef, mob: str, query_text: str | None, selection: str,
                        max_entries: int) -> Sequence[Any]:
        """The identity's records and ``mob``'s of the session's realm through the configured recall provider,
        under the same rules and one time budget (:meth:`AgentMemoryService.recall` with ``mob``); each of the
        mob's carries ``mob``. The caller judged that the session's host may read the mob."""
        out = self._service.recall(session.realm, session.identity, selection=selection, query_text=query_text,
                                   query_terms=None, max_entries=max_entries, mob=mob)
        rows: list[Any] = out["records"]
        return rows

    def _quarantined(self, session: SessionRef, memory_id: str, reason: str) -> None:
        self._events.emit("memory.write.quarantined",
                          {"realm": session.realm, "record_id": memory_id, "author": f"agent:{session.identity}",
                           "reason": reason}, identity=session.identity)

    def remember_authored_created(self, session: SessionRef, record: RecordDraft,
                                  author: Any) -> tuple[str, str | None, bool]:
        memory_id, reason, created = super().remember_authored_created(session, record, author)
        if created and reason is not None:
            self._quarantined(session, memory_id, reason)
        elif created:
            self._events.emit("memory.record.created", {"realm": session.realm, "record_id": memory_id},
                              identity=session.identity)
        return memory_id, reason, created

    def forget_authored(self, session: SessionRef, memory_id: str, author: Author) -> ForgetRequest:
        out = super().forget_authored(session, memory_id, author)
        if out.held and out.created:
            self._events.emit("memory.forget.held",
                              {"realm": session.realm, "record_id": out.memory_id, "forget_id": out.forget_id,
                               "reason": out.reason}, identity=session.identity)
        elif out.outcome == "forgotten":
            self._events.emit("memory.record.forgotten", {"realm": session.realm, "record_id": out.memory_id},
                              identity=session.identity)
        return out

    def supersede_authored(self, session: SessionRef, prior_id: str, record: RecordDraft,
                           author: Author) -> tuple[str, str | None]:
        memory_id, reason = super().supersede_authored(session, prior_id, record, author)
        if reason is not None:
            self._quarantined(session, memory_id, reason)
        elif not wrote_nothing(prior_id, memory_id):  # an update to the same content writes nothing
            self._events.emit("memory.record.updated",
                              {"realm": session.realm, "record_id": memory_id, "supersedes": prior_id},
                              identity=session.identity)
        return memory_id, reason


class HostService:
    """Session, turn and tool operations for a host's agent loop (one per runtime).

    Every operation takes the :class:`~meta_memory.session_ref.SessionRef` the call names (realm,
    identity, session key) and acts there alone: state of another identity, or of the same identity
    in another realm, under the same session key is never read or changed.
    """

    def __init__(self, config: AgentMemoryConfig, firewall: Firewall, injection: InjectionCoordinator,
                 tool: RecorderTool | None, store: AgentMemoryStore) -> None:
        self.config = config
        self.firewall = firewall
        self.injection = injection
        self.tool = tool
        self.store = store

    # -- sessions -------------------------------------------------------------------------------
    def note(self, session: SessionRef, tool_results: str = "reported") -> dict[str, Any]:
        """The identity now speaks from ``session.session_key`` (required); rotating to another session
        starts clean. Output ``{identity, session_key, tainted, derived_tainted}``.

        ``tool_results = "unreported"``: the session's tool results never reach the gateway, so it is
        tainted from the start (fail closed; :meth:`meta_memory.firewall.Firewall.note_session`)."""
        self.firewall.note_session(session, tool_results=tool_results)
        return self._state(session)

    def _writes_tainted(self, session: SessionRef) -> bool:
        """Whether an LLM write from ``session`` carries taint now, so the firewall quarantines it: its own
        taint, the identity's pending one, or another identity's taint of the same key in the realm that
        counts for it (:meth:`meta_memory.firewall.taint.TaintTracker.write_taint`). ``tainted`` says this,
        so a session never reads clean while its writes are held for their taint (``llm_writes =
        "quarantined"`` and a full session state quarantine every LLM write besides)."""
        return self.firewall.tracker.write_taint(session) is not None

    def _state(self, session: SessionRef, judged: SessionRef | None = None) -> dict[str, Any]:
        """``{identity, session_key, tainted, derived_tainted}``: ``tainted``, whether the session's LLM
        writes carry taint (:meth:`_writes_tainted`); ``derived_tainted``, whether content derived from the
        session (``judged``, default ``session``; ``derived_from_sessions``) lands quarantined: that
        identity's session is tainted now or a reset closed it tainted, or another identity's session of
        the key that counts for the caller is tainted
        (:meth:`meta_memory.firewall.taint.TaintTracker.derived_taint`, the rule the derived write's gate
        applies, the caller's ``shares_key_with`` as the session carries it)."""
        tainted = self._writes_tainted(session)
        judged = judged or session
        derived = judged.session_key is not None and self.firewall.tracker.derived_taint(judged) is not None
        return {"identity": session.identity, "session_key": session.session_key, "tainted": tainted,
                "derived_tainted": derived}

    def reset(self, session: SessionRef) -> dict[str, Any]:
        """A fresh-context boundary of the identity's session (``session_key`` ``None``: its current
        one): clears its taint, the session's injection budget and dedup, rotates its nonce.
        Output ``{identity, session_key, tainted, derived_tainted}`` (``derived_tainted`` judged on the
        session the reset closed: its current one when ``session_key`` is ``None``)."""
        closed = session if session.session_key is not None else SessionRef(
            session.realm, session.identity, self.firewall.tracker.current_session(session.identity, realm=session.realm),
            session.shares_key_with)
        self.firewall.reset(session)
        self.injection.session_reset(session.identity, session.session_key, session.realm)
        return self._state(session, closed)

    def compacted(self, session: SessionRef) -> dict[str, Any]:
        """Compaction of the identity's session (``session_key`` required): taint is kept; its injection
        dedup set and byte counter are cleared. Output ``{identity, session_key, tainted}``."""
        self.firewall.compacted(session)
        self.injection.session_compacted(session.identity, session.keyed(), session.realm)
        return {"identity": session.identity, "session_key": session.session_key,
                "tainted": self._writes_tainted(session)}

    # -- turns ----------------------------------------------------------------------------------
    def tool_result(self, session: SessionRef, tool_name: str, provenance: Any,
                    is_error: bool, server_tool: bool,
                    may_read_agent: Callable[[str, str], bool] | None = None) -> dict[str, Any]:
        """Classify one tool result (``{trusted, source?, session_tainted}``); taint sticks to
        ``session`` (its realm, identity and key), committed before the answer. ``may_read_agent(realm,
        identity)``: whether the caller may read another agent's session taint there (under ``[access]``;
        ``None`` without it), for typed agent provenance (``Firewall.tool_result``)."""
        prov = ToolProvenance.parse(provenance) if provenance is not None else None
        verdict = self.firewall.tool_result(session, tool_name, prov, is_error=is_error, server_tool=server_tool,
                                            may_read_agent=may_read_agent)
        return verdict.to_dict()

    def tool_result_refused(self, session: SessionRef, field: str | None, rule: str) -> None:
        """A ``meta/turn/tool_result`` of ``session`` was refused (``field``, ``rule``): the session is
        tainted all the same (:meth:`~meta_memory.firewall.service.Firewall.refused_tool_result`)."""
        self.firewall.refused_tool_result(session, field, rule)

    def inject(self, session: SessionRef, query_text: str, surface: str, mobs: Sequence[str] = (),
               operator: str | None = None,
               may_read: Callable[[str, str, str], bool] | None = None) -> dict[str, Any]:
        """The observation block for a turn (``surface="turn"``) or a build (``"build"``) of ``session``
        (a turn with a ``session_key`` spends that session's dedup set and byte budget).

        ``may_read(realm, scope_kind, scope_key)`` (the caller's panel visibility under
        ``[access]``) keeps a build's mob, operator and realm sections only where the caller may
        read them; the identity's own section is gated at entry.

        Output: ``{text, skip_reason, included_ids, rendered_bytes, surface}``; ``text`` is ``None``
        with a typed ``skip_reason`` when nothing is injected. Raises ``AgentMemoryError`` only under
        ``recall_failure_policy = "fail"``."""
        realm, identity = session.realm, session.identity
        if surface == "build":
            scopes = build_scope_set(realm, identity, mobs=mobs, operator=operator,
                                     operator_scope=self.config.operator_scope)
            if may_read is not None:
                scopes = tuple(s for s in scopes
                               if s.kind == "identity" or may_read(s.realm, s.kind, s.key or ""))
            result = self.injection.assemble_build(identity, realm, query_text, None, scopes)
        else:
            result = self.injection.inject_for_turn(identity, realm, session.session_key, query_text)
        return result.to_dict()

    def defang(self, text: str | None, blocks: Any) -> dict[str, Any]:
        """Neutralise forged memory markers: ``{text, hits}`` or ``{blocks, hits}``."""
        if blocks is not None:
            out, hits = self.injection.defang_content(blocks)
            return {"blocks": out, "hits": hits}
        out, hits = self.injection.defang(text or "")
        return {"text": out, "hits": hits}

    # -- the memory tool --------------------------------------------------------------------------
    def tool_schema(self) -> dict[str, Any]:
        """The ``memory`` tool's definition ``{name, description, input_schema}`` (and its protocol text)."""
        from ..tool.schema import RECORDER_PROTOCOL_INSTRUCTIONS

        self._require_tool()
        return {**memory_tool_definition(), "protocol": RECORDER_PROTOCOL_INSTRUCTIONS}

    def dispatch_tool(self, session: SessionRef, mob: str | None, arguments: Any) -> dict[str, Any]:
        """One ``memory`` tool call from ``session``, in its realm: ``{text, is_error, exclude_from_indexing}``."""
        return self._require_tool().dispatch(session, mob, arguments).to_dict()

    def _require_tool(self) -> RecorderTool:
        if self.tool is None:
            raise AgentMemoryError("unsupported", "the memory recorder tool is disabled (agent_memory.recorder_tool = false)")
        return self.tool

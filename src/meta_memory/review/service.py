"""One object the runtime holds for the review area: every review RPC maps to one method here.

Method table (each method's params are parsed once, by its params model in ``rpc/methods/review.py``,
and handed over as values; ``retire``'s session as a :class:`~meta_memory.session_ref.SessionRef`):

=====================================  ==========================================
``meta/memory/quarantine/decide``      :meth:`ReviewService.decide`
``meta/gating/decide``                 :meth:`ReviewService.gating_decide`
``meta/memory/steward/dream``          :meth:`ReviewService.dream`
``meta/session/retire``                :meth:`ReviewService.retire`
``meta/memory/proposals/list``         :meth:`ReviewService.proposals`
``meta/memory/proposals/decide``       :meth:`ReviewService.decide_proposal`
=====================================  ==========================================

Each method returns the JSON-ready result dict.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from meta_memory.agent_memory.model import Scope
from meta_memory.agent_memory.store.base import AgentMemoryStore
from meta_memory.clock import Clock
from meta_memory.errors import AgentMemoryError
from meta_memory.events.bus import EventBus
from meta_memory.ledger.ledger import AssertionLedger
from meta_memory.panel.visibility import Visibility
from meta_memory.review import harvest, promotions, proposals
from meta_memory.review.authority import ReviewAuthority
from meta_memory.review.config import StewardConfig
from meta_memory.review.dream import DreamReport, empty_dream, run_dream
from meta_memory.review.model import Reviewer
from meta_memory.review.quarantine import decide
from meta_memory.review.scheduler import DreamScheduler
from meta_memory.review.steward import LlmSteward, PolicySteward, Steward
from meta_memory.session_ref import SessionRef

__all__ = ["ReviewService", "build_steward"]

log = logging.getLogger(__name__)


def build_steward(config: StewardConfig) -> Steward:
    """The steward ``config`` names: :class:`PolicySteward`, or :class:`LlmSteward` (key from ``api_key_env``)."""
    if config.kind == "llm":
        key = os.environ.get(config.api_key_env) if config.api_key_env else None
        return LlmSteward(config.base_url or "", config.model or "", key, timeout_s=config.timeout_s)
    return PolicySteward(config.auto_accepts)


class ReviewService:
    """Review operations over one agent-memory store.

    Args:
        store: the agent-memory store (either backend).
        clock: the runtime clock.
        events: the runtime's :class:`~meta_memory.events.bus.EventBus` (or ``None``).
        ledger: the :class:`~meta_memory.ledger.AssertionLedger` (or ``None``).
        steward_config: ``[agent_memory.steward]`` (defaults: disabled policy steward).
        steward: override the steward the config would build (tests, embedders).
    """

    def __init__(
        self,
        store: AgentMemoryStore,
        clock: Clock,
        events: EventBus | None = None,
        ledger: AssertionLedger | None = None,
        steward_config: StewardConfig | None = None,
        steward: Steward | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.events = events
        self.ledger = ledger
        self.config = steward_config or StewardConfig()
        self.steward = steward or build_steward(self.config)
        self._scheduler: DreamScheduler | None = None

    # ----------------------------------------------------------------- RPC

    def decide(
        self, realm: str, identity: str, memory_id: str, verdict: str, expected_content_hash: str,
        rationale: str | None = None, *, principal: str | None = None,
    ) -> dict[str, Any]:
        """``meta/memory/quarantine/decide``: ``verdict`` (``release`` | ``tombstone``) on the quarantined
        record ``memory_id`` of ``identity`` in ``realm``, as reviewed at ``expected_content_hash``;
        ``principal`` is the authenticated caller (``None`` = unknown). Raises
        :class:`~meta_memory.errors.QuarantineReviewRefused` (-32043) and changes nothing on refusal."""
        out = decide(
            self.store, realm, identity, memory_id, verdict, expected_content_hash, rationale,
            Reviewer.operator(principal), clock=self.clock, events=self.events,
        )
        return out.to_dict()

    def gating_decide(
        self, realm: str, pending_id: str, decision: str, authority: ReviewAuthority | None = None
    ) -> dict[str, Any]:
        """``meta/gating/decide``: ``decision`` (``approve`` | ``deny``) on the gated promotion ``pending_id``.

        Under access control the caller must be able to review and commit in the promotion's target
        scope and its source's scope (:class:`~meta_memory.review.authority.ReviewAuthority`), else
        :class:`~meta_memory.errors.AccessDenied` (-32030) and nothing changes. An unknown ``pending_id``,
        a realm without a database and a realm no ``memory.quarantine.review`` grant of the caller
        reaches are all answered alike: ``AgentMemoryError`` ``unknown pending promotion`` (-32040), no
        realm created.
        """
        if authority is not None and authority.enforced:
            if not authority.reaches(realm):  # answered as an unknown id: the realm is not even read
                raise promotions.unknown_promotion(pending_id)
            scopes = promotions.promotion_scopes(self.store, realm, pending_id)
            if scopes is None:
                raise promotions.unknown_promotion(pending_id)
            for kind, key in scopes:
                authority.require(realm, kind, key)
        return promotions.gating_decide(
            self.store, realm, pending_id, decision, clock=self.clock, events=self.events
        ).to_dict()

    def dream(self, realm: str, authority: ReviewAuthority | None = None,
              manages: Callable[[str, str], bool] | None = None) -> dict[str, Any]:
        """``meta/memory/steward/dream``: one dream over ``realm`` now (whether or not the schedule is enabled).

        Under access control the dream offers and writes only what lies in scopes the caller may
        review and commit (:meth:`ReviewAuthority.may_act`); the rest of the realm waits for a
        dream of someone who may, or for the schedule. Its steward's contradictions become ledger
        conflict signals only when the caller holds unscoped ``ledger.write``
        (:meth:`ReviewAuthority.may_write_ledger`); otherwise each is noted ``refused: "ledger.write"``.
        A realm no ``memory.quarantine.review`` grant of the caller reaches is answered as an empty realm
        (``skipped``, ``nothing to review``) without being read; no dream creates a realm.
        ``manages(realm, identity)``: whether the caller manages that identity's sessions, so that its taint
        of a key a harvested record cites counts (:func:`~meta_memory.review.harvest.decide_harvest`;
        ``None``: every identity's counts).
        """
        enforced = authority is not None and authority.enforced
        if authority is not None and enforced and not authority.reaches(realm):
            return empty_dream(realm, self.clock).to_dict()
        may_act = authority.may_act if authority is not None and enforced else None
        may_signal = authority.may_write_ledger() if authority is not None and enforced else True
        return self.run_dream(realm, may_act=may_act, may_signal=may_signal, manages=manages).to_dict()

    def retire(self, session: SessionRef, cause: str) -> dict[str, Any]:
        """``meta/session/retire`` {identity, realm?, session_key?, cause}: record a pending harvest of
        ``session`` (in its realm) with ``cause`` (already checked: at most 400 bytes, no secret)."""
        return harvest.record_harvest(self.store, session.realm, session.identity, session.session_key, cause,
                                      clock=self.clock)

    def proposals(
        self, realm: str, status: str | None, limit: int, visibility: Visibility | None = None
    ) -> dict[str, Any]:
        """``meta/memory/proposals/list``: at most ``limit`` body-free rows of ``realm`` (``status`` one of
        ``pending``, ``held``, ``accepted``, ``rejected``, or ``None`` for all).

        ``visibility`` (the caller's :class:`~meta_memory.panel.visibility.Visibility`) keeps the
        rows whose target scope the caller may read, the rule of ``meta/memory/panel/proposals``;
        ``limit`` applies before that filter, as there; each kept row's author and taint flag are shown as
        the caller may see them (:meth:`~meta_memory.panel.visibility.Visibility.proposal_json`).
        """
        rows = proposals.list_proposals(self.store, realm, status=status, limit=limit)
        if visibility is None:
            return {"proposals": [r.summary() for r in rows]}
        return {"proposals": [visibility.proposal_json(r.realm, r.summary()) for r in rows
                              if visibility.proposal(r.realm, *r.scope.storage())]}

    def decide_proposal(
        self, realm: str, proposal_id: str, action: str, rationale: str | None = None, *,
        principal: str | None = None, authority: ReviewAuthority | None = None,
    ) -> dict[str, Any]:
        """``meta/memory/proposals/decide``: ``action`` (``accept`` | ``hold`` | ``reject``) on ``proposal_id``.

        Under access control the caller must be able to review and commit in the proposal's
        target scope (-32030 otherwise). An unknown proposal, a realm without a database and a realm no
        ``mob.memory.commit`` grant of the caller reaches are all answered alike: ``AgentMemoryError``
        ``unknown proposal`` (-32040), no realm created.
        """
        if authority is not None and authority.enforced:
            if not authority.reaches(realm, "mob.memory.commit"):  # as an unknown id: the realm is not read
                raise proposals.unknown_proposal(proposal_id)
            found = proposals.get_proposal(self.store, realm, proposal_id)
            if found is None:
                raise proposals.unknown_proposal(proposal_id)
            authority.require(realm, *found.scope.storage())
        if action == "accept":
            out = proposals.accept_proposal(
                self.store, realm, proposal_id, Reviewer.operator(principal), rationale, events=self.events
            )
            return {"status": "accepted", **out.to_dict()}
        if action == "hold":
            return {"proposal_id": proposal_id, "status": proposals.hold_proposal(self.store, realm, proposal_id)}
        return {"proposal_id": proposal_id, "status": proposals.reject_proposal(self.store, realm, proposal_id)}

    # ----------------------------------------------------------------- dreams

    def run_dream(
        self, realm: str, *, may_act: Callable[[Scope], bool] | None = None, may_signal: bool = True,
        manages: Callable[[str, str], bool] | None = None,
    ) -> DreamReport:
        """One dream over ``realm``. A ``release`` by any steward but the policy steward is a gated
        promotion, and its ``tombstone`` of a held forget leaves the forget held for an operator, unless
        ``llm_release = "direct"``; ``may_act`` bounds the scopes it touches, ``may_signal`` whether its
        contradictions reach the assertion ledger, ``manages`` whose taint of a key a harvested record
        cites counts (:meth:`dream`)."""
        gate_releases = getattr(self.steward, "kind", None) != "policy" and self.config.llm_release == "gated"
        return run_dream(
            self.store, realm, self.steward, clock=self.clock, events=self.events, ledger=self.ledger,
            caps=self.config.caps, open_loop_age_days=self.config.open_loop_age_days,
            gate_releases=gate_releases, may_act=may_act, may_signal=may_signal, manages=manages,
        )

    def dream_all_realms(self) -> list[DreamReport]:
        """One dream per realm the store holds that can be read (what the schedule runs); a realm that
        cannot (damaged, a name breaking the realm-name rule) is left for the operator (``/v1/ready``), and
        so is one whose dream fails ``corrupt`` part-way (a damaged page its open did not read): logged,
        and the realms after it still dream."""
        reports: list[DreamReport] = []
        for realm in self.store.list_realms():
            if self.store.realm_problem(realm) is not None:
                continue
            try:
                reports.append(self.run_dream(realm))
            except AgentMemoryError as exc:
                if exc.reason != "corrupt":
                    raise
                log.warning("dream of realm %r left out: %s", realm, exc.message)
        return reports

    def start_schedule(self, *, tick_s: float = 1.0) -> DreamScheduler | None:
        """Start the cadence thread when the steward is enabled; returns it (``None`` when disabled)."""
        if not self.config.enabled:
            return None
        if self._scheduler is None:
            self._scheduler = DreamScheduler(self.dream_all_realms, self.config.interval_ms, self.clock, tick_s=tick_s)
        self._scheduler.start()
        return self._scheduler

    @property
    def schedule_died(self) -> bool:
        """True when the dream schedule's thread ended although it was not stopped (``/v1/ready`` reports it)."""
        return self._scheduler is not None and self._scheduler.died

    def stop_schedule(self) -> None:
        if self._scheduler is not None:
            self._scheduler.stop()

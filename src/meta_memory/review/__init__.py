"""Review: quarantine decisions, proposals, gated promotions, the steward's dream, harvests.

Seed: "Reviewing quarantined records", "Conflict detection"; reference §6, §9.
Modules: :mod:`.quarantine` (the decision), :mod:`.forgets` (forgets the
write gate holds for review), :mod:`.authority` (which scopes a review call may
touch), :mod:`.promotions` (gated
promotions, gating check), :mod:`.proposals`, :mod:`.harvest`, :mod:`.steward`
(policy and LLM deciders), :mod:`.dream`, :mod:`.scheduler`, :mod:`.config`
(``[agent_memory.steward]``), :mod:`.params` (RPC params), :mod:`.service`
(one object per runtime). Review speaks no SQL: every step runs over a store transaction
(:meth:`~meta_memory.agent_memory.store.base.AgentMemoryStore.transaction`) or snapshot.
"""

from meta_memory.review.config import StewardCaps, StewardConfig
from meta_memory.review.dream import DreamReport, run_dream
from meta_memory.review.model import PROMOTION_EXPIRY_MS, Reviewer
from meta_memory.review.promotions import gating_check, gating_decide, promote_pending_gate
from meta_memory.review.quarantine import ReviewOutcome, decide, review_quarantined
from meta_memory.review.service import ReviewService
from meta_memory.review.steward import LlmSteward, PolicySteward

__all__ = [
    "PROMOTION_EXPIRY_MS",
    "DreamReport",
    "LlmSteward",
    "PolicySteward",
    "ReviewOutcome",
    "ReviewService",
    "Reviewer",
    "StewardCaps",
    "StewardConfig",
    "decide",
    "gating_check",
    "gating_decide",
    "promote_pending_gate",
    "review_quarantined",
    "run_dream",
]

"""The release gate's one rule (:func:`meta_memory.review.dream.gated_verdict`): which steward verdicts a
dream applies otherwise, and the downgrade it notes."""

from __future__ import annotations

import itertools

from meta_memory.review.dream import gated_verdict

QUARANTINE = ("release", "tombstone", "hold", "promote_pending_gate", "bogus")
HARVEST = ("promote", "keep", "tombstone", "bogus")


def test_the_gate_downgrades_exactly_three_verdicts() -> None:
    changed = {}
    for category, verdicts in (("quarantine", QUARANTINE), ("harvest", HARVEST)):
        for verdict, held in itertools.product(verdicts, (False, True)):
            if category == "harvest" and held:
                continue
            assert gated_verdict(category, verdict, held_forget=held, gate_releases=False) == (verdict, None)
            applied = gated_verdict(category, verdict, held_forget=held, gate_releases=True)
            if applied != (verdict, None):
                changed[(category, verdict, held)] = applied
    assert changed == {
        ("quarantine", "release", False): ("promote_pending_gate", "downgraded_from_release"),
        ("quarantine", "tombstone", True): ("hold", "downgraded_from_tombstone"),
        ("harvest", "tombstone", False): ("keep", "downgraded_from_tombstone"),
    }

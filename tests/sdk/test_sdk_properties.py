"""Properties of the bound agent over a real embedded runtime (hypothesis).

- what one identity remembers is never recalled, listed or forgettable by another identity, nor by
  the same identity in another realm;
- a record comes back through ``recall`` and ``list`` exactly as it was written.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meta_memory import Meta

WORDS = ["fig", "oak", "drawer", "passport", "deploy", "approval", "garden", "june", "north", "river", "lamp", "key"]
phrase = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
name = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=12)
tags = st.lists(st.sampled_from(["home", "work", "travel"]), max_size=3, unique=True)


#: The recall budget here (ms): this property is about who sees what, not about time, and a loaded
#: machine can stall any one call past the 500 ms default.
SLOW_MACHINE_MS = 30_000


def test_identities_and_realms_never_see_each_others_records(tmp_path: Path) -> None:
    builder = Meta.builder().persistent_state(tmp_path / "s").agent_memory(recall_timeout_ms=SLOW_MACHINE_MS)
    with builder.build() as meta:
        @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
        @given(owner=name, other=name, title=phrase, body=phrase, tag_list=tags)
        def prop(owner: str, other: str, title: str, body: str, tag_list: list[str]) -> None:
            if owner == other:
                other = other + "x"
            mine = meta.agent(f"p:{owner}", realm="props")
            rec = mine.remember(title, body, tags=tag_list)
            assert (rec.title, rec.body) == (title, body)
            if rec.created:  # an exact-content duplicate returns the earlier record, with its tags
                assert sorted(rec.tags) == sorted(tag_list)
            assert rec.memory_id in {r.memory_id for r in mine.recall(body, k=64)}
            listed = {r.memory_id: r for r in mine.list(limit=500).records}
            assert listed[rec.memory_id].body == body

            for stranger in (meta.agent(f"p:{other}", realm="props"), meta.agent(f"p:{owner}", realm="props-2")):
                assert rec.memory_id not in {r.memory_id for r in stranger.recall(body, k=64)}
                assert rec.memory_id not in {r.memory_id for r in stranger.list(limit=500).records}
                assert stranger.forget(rec.memory_id).deleted is False
            assert rec.memory_id in {r.memory_id for r in mine.list(limit=500).records}

        prop()

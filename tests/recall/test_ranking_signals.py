"""The lexical ranking's signals beyond the reference: the reply to a question, in-scope term rarity."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.recall.lexical import (
    LexicalConfig,
    LexicalRecallProvider,
    is_question,
    rarity_weights,
    written_after,
)
from meta_memory.recall.provider import RecallRequest

from .conftest import IDENTITY, T0, rec
from .store_index import StoreIndex

MINUTE = 60_000


def ask(index: StoreIndex, query: str, provider: LexicalRecallProvider | None = None) -> list[str]:
    req = RecallRequest(IDENTITY, "default", query, max_entries=8)
    return [s.record.memory_id for s in (provider or LexicalRecallProvider()).recall(req, index.reader(IDENTITY)).records]


def test_the_answer_written_after_a_matching_question_is_recalled(index: StoreIndex) -> None:
    index.add(rec("before", "Nate", "Long day at the office.", at=T0 - MINUTE))
    index.add(rec("q", "Joanna", "So what's your favorite game?", at=T0))
    index.add(rec("a", "Nate", "Xenoblade Chronicles, by far.", at=T0 + MINUTE))
    index.add(rec("later", "Nate", "Off to bed now.", at=T0 + 2 * MINUTE))
    assert ask(index, "favorite game") == ["q", "a"]  # the answer shares no word with the query
    assert ask(index, "favorite game", LexicalRecallProvider(LexicalConfig(reply_weight=0.0))) == ["q"]


def test_a_statement_lends_no_reply_score(index: StoreIndex) -> None:
    index.add(rec("s", "Joanna", "My favorite game is chess.", at=T0))
    index.add(rec("next", "Nate", "Xenoblade Chronicles, by far.", at=T0 + MINUTE))
    assert ask(index, "favorite game") == ["s"]


def test_the_reply_outranks_weak_matches_elsewhere(index: StoreIndex) -> None:
    index.add(rec("q", "Joanna", "Which dairy-free dessert flavors do you like best?", at=T0))
    index.add(rec("a", "Nate", "Coconut milk, chocolate and mixed berry.", at=T0 + MINUTE))
    index.add_many(rec(f"w{i}", "Nate", f"Flavors are fun {i}", at=T0 + (10 + i) * 10 * MINUTE) for i in range(10))
    assert ask(index, "dairy-free dessert flavors")[:2] == ["q", "a"]


def test_records_written_in_one_batch_still_find_the_reply(index: StoreIndex) -> None:
    # One timestamp for the whole batch: the write order (the reader's before/after order) decides.
    index.add_many(
        rec(mid, "Chat", body, at=T0)
        for mid, body in [("x1", "Morning."), ("x2", "Hi."), ("q", "Where did you go on the road trip?"),
                          ("a", "Woodhaven, a small town in the Midwest."), ("x3", "Nice."), ("x4", "Bye.")]
    )
    assert ask(index, "road trip") == ["q", "a"]


def test_is_question() -> None:
    assert is_question("What's your favorite game?  ")
    assert is_question("你喜欢什么？")
    assert not is_question("Is it? I think so.")
    assert not is_question("")


def test_written_after_uses_time_then_list_order() -> None:
    anchor = rec("q", "t", "b", at=T0)
    assert written_after(anchor, rec("n", "t", "b", at=T0 + 1), 0, False)
    assert not written_after(anchor, rec("n", "t", "b", at=T0 - 1), 1, True)
    tied = rec("n", "t", "b", at=T0)
    assert written_after(anchor, tied, 1, True) and not written_after(anchor, tied, 0, True)
    assert not written_after(anchor, tied, 1, False)  # one side short: the side is unknown


def _sets(*words: str) -> frozenset[str]:
    return frozenset(words)


def test_rarity_weights_shrink_a_term_every_candidate_holds() -> None:
    candidates = [_sets("nate", "turtl") if i == 0 else _sets("nate") for i in range(20)]
    weights = rarity_weights(["nate", "turtl", "absent"], candidates, 0.4)
    assert weights["turtl"] == 1.0 and weights["absent"] == 1.0
    assert 0.6 <= weights["nate"] < 0.65
    assert rarity_weights(["nate"], candidates, 0.0) == {}
    assert rarity_weights(["nate"], [], 0.4) == {}


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sets(st.sampled_from("abcdef"), max_size=6), min_size=1, max_size=40),
    st.floats(min_value=0.0, max_value=1.0),
)
def test_rarity_weights_are_bounded_and_fall_as_more_candidates_hold_a_term(docs: list[set[str]], strength: float) -> None:
    candidates = [_sets(*d) for d in docs]
    weights = rarity_weights(list("abcdef"), candidates, strength)
    df = {t: sum(t in d for d in docs) for t in "abcdef"}
    for t, w in weights.items():
        assert 1.0 - strength - 1e-9 <= w <= 1.0 + 1e-9
    for t in weights:
        for u in weights:
            if df[t] > 0 and df[u] > df[t]:
                assert weights[u] <= weights[t] + 1e-9

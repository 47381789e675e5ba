"""The LoCoMo harness's leave-one-conversation-out tuning never reads the held-out conversation."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.recall.lexical import LexicalConfig
from support import load_benchmark

from .conftest import rec
from .store_index import StoreIndex

H = load_benchmark("locomo_recall", "locomo_recall_harness")
FOLDS = ["c1", "c2", "c3", "c4", "c5"]
scores_st = st.lists(
    st.fixed_dictionaries({f: st.floats(0, 1, allow_nan=False) for f in FOLDS}), min_size=1, max_size=8
)


@settings(max_examples=200, deadline=None)
@given(scores_st, st.sampled_from(FOLDS), st.lists(st.floats(0, 1, allow_nan=False), min_size=8, max_size=8))
def test_a_folds_choice_ignores_its_own_scores(scores: list[dict[str, float]], fold: str, noise: list[float]) -> None:
    before = H.choose_per_fold(scores)[fold]
    changed = [dict(s, **{fold: noise[i]}) for i, s in enumerate(scores)]
    assert H.choose_per_fold(changed)[fold] == before


def test_each_fold_takes_the_best_of_the_others() -> None:
    scores = [
        {"a": 0.9, "b": 0.1, "c": 0.1},  # far best on a
        {"a": 0.2, "b": 0.6, "c": 0.6},  # best on b and c, and on all three together
    ]
    # Held out b (or c), point 0 wins on the other two (0.5 vs 0.4): b's own 0.6 does not count.
    assert H.choose_per_fold(scores) == {"a": 1, "b": 0, "c": 0, H.ALL_FOLDS: 1}
    assert H.choose_per_fold([{"a": 0.5, "b": 0.5}, {"a": 0.5, "b": 0.5}]) == {"a": 0, "b": 0, H.ALL_FOLDS: 0}


def test_tuned_folds_score_each_conversation_with_the_others_choice(index: StoreIndex) -> None:
    questions = []
    for cid in ("x", "y", "z"):
        for i, body in enumerate(["What is your favourite game?", "Chess, by far."]):
            index.add(rec(f"{cid}/{i}", "Chat", body, at=i * 60_000, scope=cid))
        questions.append(H.Question(cid, "favourite game", 4, {f"{cid}/1"}))
    grid = {"reply_weight": (0.0, 0.9)}
    held_out, chosen, overall = H.tuned_folds(index, questions, grid)
    assert set(held_out) == {"x", "y", "z"}
    assert all(c.reply_weight == 0.9 for c in chosen.values()) and overall.reply_weight == 0.9
    assert all(r.recall(8) == 1.0 for r in held_out.values())  # the reply is the evidence
    assert H.tuning_configs(grid) == [LexicalConfig(reply_weight=0.0), LexicalConfig(reply_weight=0.9)]


def _chats(index: StoreIndex, scope: str | None = None) -> list[object]:
    """Three conversations of a question and its reply (in ``scope``, else each in its own)."""
    questions = []
    for cid in ("x", "y", "z"):
        for i, body in enumerate(["What is your favourite game?", "Chess, by far."]):
            index.add(rec(f"{cid}/{i}", "Chat", body, at=i * 60_000, scope=scope or cid))
        questions.append(H.Question(cid, "favourite game", 4, {f"{cid}/1"}, scope=scope or ""))
    return questions


def test_the_candidate_count_sweep_scores_every_fold_and_chooses_on_the_others(index: StoreIndex, capsys) -> None:
    questions = _chats(index)
    H.candidate_limit_report(index, questions, [100, 1])
    out = capsys.readouterr().out
    for limit in ("100", "1"):
        for cid in ("x", "y", "z"):
            assert any(line.split()[:2] == [limit, cid] for line in out.splitlines()), out
    # every count finds each reply (one candidate, the question, lends it the reply's share): a tie, the first kept
    assert out.count("limit 100   R@8 1.000 (+0.000 vs 100)") == 3, out
    assert "chosen on every fold: 100" in out


def test_one_identity_asks_every_question_of_the_pooled_scope(index: StoreIndex) -> None:
    corpus = H.Corpus([H.IndexedRecord(f"x/{i}", "Chat", "b", scope_key="x") for i in range(2)],
                      [H.Question("x", "favourite game", 4, {"x/1"})], 0, 0, 0)
    pooled = H.one_identity(corpus)
    assert {r.scope_key for r in pooled.records} == {H.ONE_IDENTITY}
    assert [r.memory_id for r in pooled.records] == ["x/0", "x/1"]
    assert pooled.questions[0].identity == "x" and pooled.questions[0].scope_key == H.ONE_IDENTITY
    questions = _chats(index, H.ONE_IDENTITY)
    rank = H.provider_ranker(index, H.LexicalRecallProvider())
    ranked = rank(questions[1], 8)  # y's question, asked of the one scope: every conversation's turns answer
    assert {"x/0", "y/0", "z/0"} <= set(ranked), ranked


@pytest.mark.parametrize("text", ["0", "a,b", "", "100,10001"])
def test_candidate_limits_are_counts_in_the_configs_range(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        H.candidate_limits(text)
    assert H.candidate_limits("100,64, 32") == [100, 64, 32]

"""Per-session dedup/budget state and per-identity nonces, keyed by realm, identity and session key."""

from __future__ import annotations

import re
import threading

import pytest

from meta_memory.clock import ManualClock
from meta_memory.errors import AgentMemoryError
from meta_memory.injection import InjectionSessions
from meta_memory.session_state import memory_session_state

R = "default"


def test_nonce_is_128_bit_hex_stable_per_session_and_rotates_across_keys() -> None:
    s = InjectionSessions()
    a = s.nonce_for(R, "lead:main", "s1")
    assert re.fullmatch(r"[0-9a-f]{32}", a)
    assert s.nonce_for(R, "lead:main", "s1") == a
    b = s.nonce_for(R, "lead:main", "s2")
    assert b != a
    c = s.nonce_for(R, "lead:main", None)  # build-time
    assert c not in (a, b)
    assert s.nonce_for(R, "lead:main", "s1") not in (a, b, c)  # re-minted, never reused
    assert s.nonce_for(R, "other", "s1") != s.nonce_for(R, "lead:main", "s1")
    assert s.nonce_for("r2", "lead:main", "s1") != s.nonce_for(R, "lead:main", "s1")


def test_repr_and_stats_never_show_the_nonce() -> None:
    s = InjectionSessions()
    nonce = s.nonce_for(R, "lead:main", "s1")
    s.commit(R, "lead:main", "s1", ["m1"], 100)
    assert nonce not in repr(s) and nonce not in str(s) and nonce not in str(s.stats())


def test_commit_dedup_and_counter() -> None:
    s = InjectionSessions()
    assert s.used_bytes(R, "i", "s1") == 0 and s.injected_ids(R, "i", "s1") == frozenset()
    s.commit(R, "i", "s1", ["a", "b"], 1000)
    s.commit(R, "i", "s1", ["c", "a"], 500)
    assert s.used_bytes(R, "i", "s1") == 1500
    assert s.injected_ids(R, "i", "s1") == {"a", "b", "c"}
    assert s.injected_ids(R, "i", "s2") == frozenset()


def test_budgets_belong_to_one_identity_and_realm() -> None:
    s = InjectionSessions()
    s.commit(R, "victim", "s1", ["a"], 60_000)
    assert s.used_bytes(R, "attacker", "s1") == 0
    s.compacted(R, "attacker", "s1")  # another identity cannot refill the victim's budget
    s.reset(R, "attacker", "s1")
    s.compacted("r2", "victim", "s1")
    assert s.used_bytes(R, "victim", "s1") == 60_000 and s.injected_ids(R, "victim", "s1") == {"a"}


def test_compaction_clears_only_that_session() -> None:
    s = InjectionSessions()
    s.commit(R, "i", "s1", ["a"], 10)
    s.commit(R, "i", "s2", ["b"], 20)
    nonce = s.nonce_for(R, "i", "s1")
    s.compacted(R, "i", "s1")
    assert s.used_bytes(R, "i", "s1") == 0 and s.injected_ids(R, "i", "s1") == frozenset()
    assert s.used_bytes(R, "i", "s2") == 20
    assert s.nonce_for(R, "i", "s1") == nonce  # compaction is not a fresh-context boundary


def test_reset_reminted_nonce_and_clears_named_session() -> None:
    s = InjectionSessions()
    s.commit(R, "i", "s1", ["a"], 10)
    nonce = s.nonce_for(R, "i", "s1")
    s.reset(R, "i", "s1")
    assert s.used_bytes(R, "i", "s1") == 0
    assert s.nonce_for(R, "i", "s1") != nonce


def test_no_wholesale_clear_under_many_sessions() -> None:
    s = InjectionSessions()
    s.commit(R, "i", "spent", ["x"], 61_440)
    for k in range(3000):
        s.commit(R, f"other{k}", f"k{k}", [], 1)
    assert s.used_bytes(R, "i", "spent") == 61_440  # a flood never hands back a fresh budget


def test_at_the_row_cap_a_new_budget_is_refused_not_reset() -> None:
    clock = ManualClock()
    s = InjectionSessions(memory_session_state(clock, limit=3))
    s.commit(R, "i", "s1", ["x"], 61_440)  # identity row? no: one session row
    s.nonce_for(R, "i", "s1")  # one identity row
    s.commit(R, "j", "s2", [], 1)
    with pytest.raises(AgentMemoryError) as err:
        s.commit(R, "k", "s3", [], 1)
    assert err.value.reason == "session_limit"
    s.commit(R, "i", "s1", [], 1)  # existing sessions keep their state
    assert s.used_bytes(R, "i", "s1") == 61_441


def test_concurrent_commits_are_not_lost() -> None:
    s = InjectionSessions()

    def work(t: int) -> None:
        for i in range(200):
            s.commit(R, "i", "shared", [f"{t}-{i}"], 1)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert s.used_bytes(R, "i", "shared") == 1600
    assert len(s.injected_ids(R, "i", "shared")) == 1600

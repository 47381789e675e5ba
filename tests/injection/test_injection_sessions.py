"""Per-session dedup/budget state and per-identity nonces."""

from __future__ import annotations

import re
import threading

from meta_memory.injection import InjectionSessions


def test_nonce_is_128_bit_hex_stable_per_session_and_rotates_across_keys() -> None:
    s = InjectionSessions()
    a = s.nonce_for("lead:main", "s1")
    assert re.fullmatch(r"[0-9a-f]{32}", a)
    assert s.nonce_for("lead:main", "s1") == a
    b = s.nonce_for("lead:main", "s2")
    assert b != a
    c = s.nonce_for("lead:main", None)  # build-time
    assert c not in (a, b)
    assert s.nonce_for("lead:main", "s1") not in (a, b, c)  # re-minted, never reused
    assert s.nonce_for("other", "s1") != s.nonce_for("lead:main", "s1")


def test_repr_never_shows_nonce() -> None:
    s = InjectionSessions()
    nonce = s.nonce_for("lead:main", "s1")
    s.commit("s1", ["m1"], 100)
    assert nonce not in repr(s) and nonce not in str(s)
    assert nonce not in repr(list(s._nonces.values()))


def test_commit_dedup_and_counter() -> None:
    s = InjectionSessions()
    assert s.used_bytes("s1") == 0 and s.injected_ids("s1") == frozenset()
    s.commit("s1", ["a", "b"], 1000)
    s.commit("s1", ["c"], 500)
    assert s.used_bytes("s1") == 1500
    assert s.injected_ids("s1") == {"a", "b", "c"}
    assert s.injected_ids("s2") == frozenset()


def test_compaction_clears_only_that_session() -> None:
    s = InjectionSessions()
    s.commit("s1", ["a"], 10)
    s.commit("s2", ["b"], 20)
    nonce = s.nonce_for("i", "s1")
    s.compacted("s1")
    assert s.used_bytes("s1") == 0 and s.injected_ids("s1") == frozenset()
    assert s.used_bytes("s2") == 20
    assert s.nonce_for("i", "s1") == nonce  # compaction is not a fresh-context boundary


def test_reset_reminted_nonce_and_clears_named_session() -> None:
    s = InjectionSessions()
    s.commit("s1", ["a"], 10)
    nonce = s.nonce_for("i", "s1")
    s.reset("i", "s1")
    assert s.used_bytes("s1") == 0
    assert s.nonce_for("i", "s1") != nonce


def test_tracked_sessions_are_bounded_and_cleared_wholesale() -> None:
    s = InjectionSessions(max_sessions=4)
    for k in range(4):
        s.commit(f"s{k}", ["x"], 1)
    s.commit("s0", ["y"], 1)  # existing key: no clear
    assert s.tracked_sessions() == 4
    s.commit("s4", ["z"], 7)  # a fifth key clears everything first
    assert s.tracked_sessions() == 1
    assert s.used_bytes("s0") == 0 and s.used_bytes("s4") == 7
    default = InjectionSessions()
    for k in range(1025):
        default.commit(f"k{k}", [], 1)
    assert default.tracked_sessions() == 1


def test_nonce_identities_are_bounded() -> None:
    s = InjectionSessions(max_identities=3)
    first = s.nonce_for("a", None)
    for name in ("b", "c", "d"):
        s.nonce_for(name, None)
    assert s.nonce_for("a", None) != first  # the map was cleared, a fresh nonce minted


def test_concurrent_commits_are_not_lost() -> None:
    s = InjectionSessions()

    def work(t: int) -> None:
        for i in range(500):
            s.commit("shared", [f"{t}-{i}"], 1)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert s.used_bytes("shared") == 4000
    assert len(s.injected_ids("shared")) == 4000

"""Property tests: whatever other identities and realms do, an identity's taint ends only by its own reset,
and a write naming a session carries that session's taint alone (never a sibling session's).

Random interleavings of note / tool result / reset / compaction / injection by several identities, in
two realms, over a handful of shared session keys. The reference is a small model of *who tainted what
and who reset it*; the tracker must agree on every (realm, identity, session) after every step.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meta_memory.clock import ManualClock
from meta_memory.firewall.classify import Classification
from meta_memory.firewall.gate import LlmWriteGate
from meta_memory.firewall.taint import TaintTracker
from meta_memory.injection import InjectionSessions
from meta_memory.session_ref import SessionRef
from meta_memory.session_state import memory_session_state

IDENTITIES = ("a:1", "b:1", "c:1")
SESSIONS = ("s1", "s2", "s3")
REALMS = ("r1", "r2")
WEB = Classification(False, "web tool 'web_fetch'")

op = st.tuples(
    st.sampled_from(("note", "taint", "trusted", "reset", "reset_current", "compacted", "inject")),
    st.sampled_from(IDENTITIES),
    st.sampled_from(SESSIONS),
    st.sampled_from(REALMS),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, min_size=1, max_size=40))
def test_taint_is_cleared_only_by_the_owners_reset(ops: list[tuple[str, str, str, str]]) -> None:
    clock = ManualClock()
    state = memory_session_state(clock)
    tracker = TaintTracker(clock, state=state)
    sessions = InjectionSessions(state)
    gate = LlmWriteGate(tracker)
    tainted: set[tuple[str, str, str]] = set()
    current: dict[tuple[str, str], str] = {}
    for kind, ident, session, realm in ops:
        clock.advance(1)
        if kind == "note":
            tracker.note_session(SessionRef(realm, ident, session))
            current[(realm, ident)] = session
        elif kind in ("taint", "trusted"):
            tracker.observe(SessionRef(realm, ident, session), WEB if kind == "taint" else Classification(True))
            current[(realm, ident)] = session
            if kind == "taint":
                tainted.add((realm, ident, session))
        elif kind == "reset":
            tracker.reset(SessionRef(realm, ident, session))
            sessions.reset(realm, ident, session)
            tainted.discard((realm, ident, session))
            current.pop((realm, ident), None)
        elif kind == "reset_current":
            closed = current.pop((realm, ident), None)
            tracker.reset(SessionRef(realm, ident, None))
            if closed is not None:
                tainted.discard((realm, ident, closed))
        elif kind == "compacted":
            tracker.compacted(SessionRef(realm, ident, session))
            sessions.compacted(realm, ident, session)
        else:
            sessions.commit(realm, ident, session, [f"m-{session}"], 100)
        for r in REALMS:
            for i in IDENTITIES:
                for s in SESSIONS:
                    assert (tracker.session_taint(SessionRef(r, i, s)) is not None) == ((r, i, s) in tainted), (r, i, s)
                cur = current.get((r, i))
                assert tracker.current_session(i, realm=r) == cur
                expect = cur is not None and (r, i, cur) in tainted
                assert (tracker.identity_taint(i, realm=r) is not None) == expect
                author = {"author": "agent", "identity": i}
                # a write naming no session carries the taint of any of the identity's sessions in the realm
                any_tainted = any((r, i, s) in tainted for s in SESSIONS)
                assert (gate.quarantine_reason(author, realm=r) is not None) == any_tainted
                # a write naming its session carries that key's taint in the realm (its own, or another
                # identity's), never that of a sibling session noted later or earlier
                for s in SESSIONS:
                    named = any((r, j, s) in tainted for j in IDENTITIES)
                    assert (gate.quarantine_reason(author, realm=r, session_key=s) is not None) == named, (r, i, s)

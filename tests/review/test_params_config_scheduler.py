"""Param parsing (reference §6 messages), the steward config, the dream scheduler, and the service end to end."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.clock import ManualClock
from meta_memory.errors import ConfigError, InvalidParams, QuarantineReviewRefused
from meta_memory.recall import fts
from meta_memory.review.config import StewardConfig, parse_cadence
from meta_memory.review.scheduler import DreamScheduler
from meta_memory.review.service import ReviewService
from meta_memory.review.steward import LlmSteward, PolicySteward
from meta_memory.rpc.methods.review import (
    DecideParams,
    GatingCheckParams,
    GatingDecideParams,
    ProposalDecideParams,
    ProposalListParams,
)
from meta_memory.rpc.params import parse_params
from meta_memory.session_ref import SessionRef

from .conftest import IDENTITY, REALM, Env

BASE = {"identity": "lead:main", "memory_id": "mem-1", "verdict": "release", "expected_content_hash": "ab" * 32}


def parse_decide_params(raw: Any) -> DecideParams:
    return parse_params(DecideParams, raw)


def rule(raw: Any) -> str:
    with pytest.raises(InvalidParams) as info:
        parse_decide_params(raw)
    return info.value.message


def test_decide_params_bind_scope_verdict_and_content() -> None:
    p = parse_decide_params({**BASE, "rationale": "  confirmed  "})
    # no realm: the method table fills in the gateway's realm (RealmDefaulted)
    assert (p.realm, p.identity, p.memory_id, p.verdict, p.rationale) == (None, "lead:main", "mem-1", "release", "confirmed")
    assert p.in_realm("ops").realm == "ops" and parse_decide_params({**BASE, "realm": "hr"}).in_realm("ops").realm == "hr"
    assert parse_decide_params({**BASE, "verdict": " tombstone ", "rationale": None}).verdict == "tombstone"
    assert parse_decide_params({**BASE, "rationale": "   "}).rationale is None
    assert rule({**BASE, "verdict": "hold"}) == "Invalid params: verdict must be 'release' or 'tombstone' (got 'hold')"
    assert rule({**BASE, "verdict": 1}) == "Invalid params: verdict must be 'release' or 'tombstone'"
    assert rule({k: v for k, v in BASE.items() if k != "verdict"}) == "Invalid params: verdict must be 'release' or 'tombstone'"
    assert rule({**BASE, "expected_content_hash": " "}) == (
        "Invalid params: expected_content_hash must be the non-empty content_hash of the reviewed record"
    )
    # a value that cannot be any record's content_hash is a malformed param, not a content mismatch
    for malformed in ("abc", "AB" * 32, "ab" * 32 + "0", "sha256:" + "ab" * 32, "g" * 64):
        assert rule({**BASE, "expected_content_hash": malformed}) == (
            "Invalid params: expected_content_hash must be the reviewed record's content_hash: "
            "64 lowercase hexadecimal characters")
    assert parse_decide_params({**BASE, "expected_content_hash": f" {'ab' * 32} "}).expected_content_hash == "ab" * 32
    assert rule({**BASE, "rationale": 7}) == "Invalid params: rationale must be a string when provided"
    assert rule({**BASE, "rationale": "x" * 401}) == "Invalid params: rationale must be at most 400 bytes"
    assert rule({**BASE, "memory_id": ""}) == "Invalid params: memory_id must not be empty"
    assert rule({**BASE, "identity": ""}) == "Invalid params: identity must be a valid non-empty string"
    assert rule({**BASE, "reviewer": "mallory"}) == "Invalid params: unknown field 'reviewer'"
    assert rule({**BASE, "memory_id": "m" * 201}).startswith("Invalid params: memory_id ")
    assert rule([1]) == "Invalid params: params must be a JSON object"


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=500))
def test_rationale_rule_holds_for_any_text(text: str) -> None:
    trimmed = text.strip()
    try:
        p = parse_decide_params({**BASE, "rationale": text})
    except InvalidParams as exc:
        assert exc.field == "rationale"
        assert len(trimmed.encode("utf-8", "surrogatepass")) > 400
    else:
        assert p.rationale == (trimmed or None)
        assert len(trimmed.encode("utf-8", "surrogatepass")) <= 400


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=30))
def test_only_two_verdicts_parse(verdict: str) -> None:
    try:
        p = parse_decide_params({**BASE, "verdict": verdict})
    except InvalidParams:
        assert verdict.strip() not in ("release", "tombstone")
    else:
        assert p.verdict == verdict.strip() in ("release", "tombstone")


def test_other_params() -> None:
    assert parse_params(GatingDecideParams, {"pending_id": " gate-1 ", "decision": " approve "}).decision == "approve"
    with pytest.raises(InvalidParams, match="decision must be 'approve' or 'deny'"):
        parse_params(GatingDecideParams, {"pending_id": "gate-1", "decision": "maybe"})
    with pytest.raises(InvalidParams, match="pending_id must not be empty") as info:
        parse_params(GatingDecideParams, {"pending_id": "  ", "decision": "deny"})
    assert info.value.field == "pending_id"
    assert parse_params(GatingCheckParams, {"entity": "acme", "topic": "price"}).store is None
    assert parse_params(GatingCheckParams, {"entity": " acme ", "topic": "price", "store": " "}).store is None
    with pytest.raises(InvalidParams, match="topic is required"):  # a missing member, in the one wording
        parse_params(GatingCheckParams, {"entity": "acme"})
    with pytest.raises(InvalidParams, match="topic must be a non-empty string"):
        parse_params(GatingCheckParams, {"entity": "acme", "topic": " "})
    with pytest.raises(InvalidParams, match="store must be a string when provided"):
        parse_params(GatingCheckParams, {"entity": "acme", "topic": "price", "store": 3})
    listed = parse_params(ProposalListParams, {})
    assert (listed.status, listed.limit) == (None, 50)
    assert parse_params(ProposalListParams, {"limit": 10_000, "status": " held "}).limit == 200
    with pytest.raises(InvalidParams, match=r"unknown status 'open' \(one of: pending, held, accepted, rejected; omit it for any\)"):
        parse_params(ProposalListParams, {"status": "open"})
    for bad in (0, -1, True, "5", 1.5):
        with pytest.raises(InvalidParams, match="limit must be a positive integer when provided"):
            parse_params(ProposalListParams, {"limit": bad})
    decided = parse_params(ProposalDecideParams, {"proposal_id": "p-1", "action": " hold ", "rationale": "  "})
    assert (decided.action, decided.rationale) == ("hold", None)
    with pytest.raises(InvalidParams, match="action must be 'accept', 'hold' or 'reject'"):
        parse_params(ProposalDecideParams, {"proposal_id": "p-1", "action": "approve"})
    with pytest.raises(InvalidParams, match="rationale must be at most 400 bytes"):
        parse_params(ProposalDecideParams, {"proposal_id": "p-1", "action": "reject", "rationale": "é" * 201})
    from meta_memory.rpc.methods.review import RetireParams

    p = parse_params(RetireParams, {"identity": "rt:lead:main:2", "cause": " respawn "})
    assert p.session_key is None and p.cause == "respawn"
    assert p.session_ref("ops", lambda: b"k" * 32) == SessionRef("ops", "lead:main")
    assert parse_params(RetireParams, {"identity": "x", "realm": "hr", "session_key": "s", "cause": "c"}
                        ).session_ref("ops", lambda: b"k" * 32) == SessionRef("hr", "x", "s")
    with pytest.raises(InvalidParams, match="cause is required"):
        parse_params(RetireParams, {"identity": "lead:main"})
    with pytest.raises(InvalidParams, match="cause must be a non-empty string"):
        parse_params(RetireParams, {"identity": "lead:main", "cause": ""})
    with pytest.raises(InvalidParams, match="cause must be at most 400 bytes"):
        parse_params(RetireParams, {"identity": "lead:main", "cause": "x" * 401})


# ----------------------------------------------------------------------------- config


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=1, max_value=10**6), st.sampled_from(["s", "m", "h", "d"]), st.booleans())
def test_cadence_forms(n: int, unit: str, star: bool) -> None:
    factor = {"s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}[unit]
    text = f"{'*/' if star else ''}{n}{unit}"
    if n * factor <= 30 * 86_400_000:
        assert parse_cadence(text) == n * factor
    else:
        with pytest.raises(ValueError, match="between 1 second and 30 days"):
            parse_cadence(text)
    assert parse_cadence(n) == n * 1_000  # at most 10**6 s, under 30 days


@pytest.mark.parametrize("bad", ["", "*/0h", "6 hours", "*/6w", "-5s", 0, -1, True, 1.5])
def test_bad_cadences_are_refused(bad: Any) -> None:
    with pytest.raises(ValueError):
        parse_cadence(bad)


def test_steward_config_defaults_and_strict_parsing() -> None:
    cfg = StewardConfig.parse(None)
    assert (cfg.enabled, cfg.kind, cfg.interval_ms, cfg.caps.proposals, cfg.caps.quarantine, cfg.caps.harvests) == (
        False, "policy", 6 * 3_600_000, 32, 16, 4,
    )
    assert StewardConfig.parse(True).enabled
    cfg = StewardConfig.parse({"enabled": True, "kind": "llm", "base_url": "http://127.0.0.1:9/v1/", "model": "m",
                               "cadence": 3600, "caps": {"quarantine": 2}})
    assert cfg.base_url == "http://127.0.0.1:9/v1" and cfg.interval_ms == 3_600_000 and cfg.caps.quarantine == 2
    for raw, message in [
        ({"bogus": 1}, "agent_memory.steward.bogus: unknown key"),
        ({"kind": "llm"}, "agent_memory.steward: kind 'llm' needs base_url and model"),
        ({"cadence": "sometimes"}, "agent_memory.steward.cadence: cadence must be like"),
        ({"caps": {"harvests": -1}}, "agent_memory.steward.caps.harvests"),
        ({"enabled": "yes"}, "agent_memory.steward.enabled"),
        ({"base_url": "ftp://x"}, "agent_memory.steward.base_url: base_url must be an http(s) URL"),
        ("on", "agent_memory.steward must be a table or a boolean"),
        ({"auto_accept_proposals": "team"}, "agent_memory.steward.auto_accept_proposals: auto_accept_proposals must"),
        ({"auto_accept_proposals": ["team", " "]}, "agent_memory.steward.auto_accept_proposals"),
        ({"llm_release": "always"}, "agent_memory.steward.llm_release"),
    ]:
        with pytest.raises(ConfigError) as info:
            StewardConfig.parse(raw)
        assert str(info.value).startswith(message)


def test_auto_accept_and_llm_release_keys() -> None:
    cfg = StewardConfig.parse(None)
    assert cfg.auto_accept_proposals == () and cfg.llm_release == "gated"
    assert not cfg.auto_accepts("mob", "team")
    cfg = StewardConfig.parse({"auto_accept_proposals": [" team ", "ops", "team"], "llm_release": "direct"})
    assert cfg.auto_accept_proposals == ("ops", "team") and cfg.llm_release == "direct"
    assert cfg.auto_accepts("mob", "team") and not cfg.auto_accepts("mob", "finance")
    assert not cfg.auto_accepts("operator", "team")
    assert StewardConfig.parse({"auto_accept_proposals": ["*"]}).auto_accepts("operator", "ana")


# ----------------------------------------------------------------------------- scheduler


def wait_for(predicate: Any, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return False


def test_scheduler_runs_on_the_cadence_and_stops() -> None:
    clock = ManualClock(0)
    calls: list[int] = []
    sched = DreamScheduler(lambda: calls.append(clock.now_ms()), 60_000, clock, tick_s=0.005)
    sched.start()
    try:
        time.sleep(0.05)
        assert calls == []
        clock.advance(60_000)
        assert wait_for(lambda: len(calls) == 1)
        clock.advance(30_000)
        time.sleep(0.05)
        assert len(calls) == 1
        clock.advance(30_000)
        assert wait_for(lambda: len(calls) == 2)
    finally:
        sched.stop()
    assert not sched.running
    clock.advance(600_000)
    time.sleep(0.05)
    assert len(calls) == 2


def test_scheduler_survives_a_failing_run() -> None:
    clock = ManualClock(0)

    def boom() -> None:
        raise RuntimeError("x")

    sched = DreamScheduler(boom, 1_000, clock, tick_s=0.005)
    sched.start()
    try:
        clock.advance(1_000)
        assert wait_for(lambda: sched.failures == 1)
        clock.advance(1_000)
        assert wait_for(lambda: sched.failures == 2)
    finally:
        sched.stop()


def test_service_schedule_runs_dreams_for_every_realm(env: Env) -> None:
    env.poisoned()
    cfg = StewardConfig.parse({"enabled": True, "cadence": "*/1h"})
    svc = ReviewService(env.store, env.clock, env.events, steward_config=cfg)
    assert isinstance(svc.steward, PolicySteward)
    sched = svc.start_schedule(tick_s=0.005)
    assert sched is not None
    try:
        env.clock.advance(3_600_000)
        assert wait_for(lambda: len(env.events_of("memory.dream.completed")) == 1)
    finally:
        svc.stop_schedule()
    assert ReviewService(env.store, env.clock, steward_config=StewardConfig()).start_schedule() is None
    llm_cfg = StewardConfig.parse({"kind": "llm", "base_url": "http://127.0.0.1:1/v1", "model": "m"})
    assert isinstance(ReviewService(env.store, env.clock, steward_config=llm_cfg).steward, LlmSteward)


# ----------------------------------------------------------------------------- end to end through the service


@pytest.mark.parametrize("verdict", ["release", "tombstone"])
def test_poisoned_write_to_decision_through_the_service(env: Env, verdict: str) -> None:
    svc = ReviewService(env.store, env.clock, env.events)
    origin = env.poisoned(body="The reader prefers weekly summaries on Fridays.")
    # The operator finds it in the queue and reads it (content hash).
    with env.store.snapshot(REALM) as tx:
        queue = [tx.get(i) for i in tx.queues.quarantined(50)]
    assert [r.id for r in queue] == [origin.id]
    expr = fts.match_expression("weekly summaries")
    assert env.store.search(REALM, env.scope(), expr, 5) == []
    reviewed = (REALM, IDENTITY, origin.id, verdict, queue[0].content_hash, "checked")
    out = svc.decide(*reviewed, principal=None)
    assert out["decision"]["review"]["reviewer"] == {"kind": "operator", "principal": None}
    recalled = [r.id for r, _ in env.store.search(REALM, env.scope(), expr, 5)]
    if verdict == "release":
        assert out["outcome"] == "released" and recalled == [f"{origin.id}-released"]
    else:
        assert out["outcome"] == "tombstoned" and recalled == []
    again = svc.decide(*reviewed, principal="someone-else")
    assert again["outcome"] == f"already_{'released' if verdict == 'release' else 'tombstoned'}"
    assert again["decision"] == out["decision"]
    with pytest.raises(QuarantineReviewRefused):
        svc.decide(REALM, IDENTITY, origin.id, "tombstone" if verdict == "release" else "release",
                   queue[0].content_hash)


def test_a_realm_whose_dream_fails_corrupt_leaves_the_others_dreaming(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """A realm that opens but whose dream hits a damaged page is logged and left out; the realms after it dream."""
    from meta_memory.agent_memory import record_writes
    from meta_memory.errors import AgentMemoryError
    from meta_memory.review import service as review_service

    for realm in ("aaa", "zzz"):
        record_writes.remember(env.store, realm, "lead:main", "note", f"a note in {realm}")
    real = review_service.run_dream

    def damaged(store: Any, realm: str, *args: Any, **kw: Any) -> Any:
        if realm == "aaa":
            raise AgentMemoryError("corrupt", "realm database 'aaa.sqlite3' cannot be read")
        return real(store, realm, *args, **kw)

    monkeypatch.setattr(review_service, "run_dream", damaged)
    svc = ReviewService(env.store, env.clock, env.events, steward_config=StewardConfig.parse({"enabled": True}))
    reports = svc.dream_all_realms()
    assert [r.realm for r in reports] == [r for r in env.store.list_realms() if r != "aaa"]
    assert "zzz" in [r.realm for r in reports]

    def broken(store: Any, realm: str, *args: Any, **kw: Any) -> Any:
        raise AgentMemoryError("io", "disk gone")

    monkeypatch.setattr(review_service, "run_dream", broken)
    with pytest.raises(AgentMemoryError):  # any other failure is the schedule's to log, as before
        svc.dream_all_realms()

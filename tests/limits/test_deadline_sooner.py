"""``deadline.sooner``: part of a call ends earlier than the call, and never later."""

from __future__ import annotations

import time

import pytest

from meta_memory import deadline
from meta_memory.deadline import Deadline, bound


def test_the_earlier_end_applies_inside_and_the_outer_one_after() -> None:
    outer = Deadline(time.monotonic() + 3600)
    with bound(outer):
        with deadline.sooner(time.monotonic() - 1) as inner:
            assert deadline.expired() and inner.remaining_ms() == 0
        assert not deadline.expired() and deadline.current() is outer


def test_the_outer_end_and_cancel_reach_the_inner_deadline() -> None:
    outer = Deadline(time.monotonic() + 3600)
    hooks: list[str] = []
    with bound(outer), deadline.sooner(time.monotonic() + 7200) as inner:
        left = inner.remaining_ms()
        assert left is not None and left <= 3600 * 1000  # never later than the call's own end
        with inner.on_cancel(lambda: hooks.append("cancelled")):
            outer.cancel()
            assert inner.expired and inner.cancelled and hooks == ["cancelled"]
    with bound(Deadline(time.monotonic() - 1)), deadline.sooner(None) as late:
        assert late.expired


def test_without_a_call_deadline_only_the_earlier_end_counts() -> None:
    assert deadline.current() is None
    with deadline.sooner(time.monotonic() + 3600) as inner:
        assert not inner.expired and deadline.current() is inner
    with deadline.sooner(None) as unlimited:
        assert unlimited.remaining_ms() is None and not deadline.expired()
    assert deadline.current() is None


def test_the_reserve_is_its_cap_or_a_share_of_a_budget_too_short_for_it() -> None:
    """``reserve_ms(cap)``: the cap under a long budget, 30 % of a short one, the cap with no budget at all;
    a shorter deadline inside a longer one reserves a share of its own length."""
    assert deadline.reserve_ms(150) == 150  # no time-boxed call
    with deadline.bound(deadline.Deadline.after_ms(1_000)):
        assert deadline.reserve_ms(150) == 150
        with deadline.sooner(time.monotonic() + 0.2):
            assert deadline.reserve_ms(150) == pytest.approx(60, abs=1)
        with deadline.sooner(None):  # no earlier end of its own: the enclosing budget's
            assert deadline.reserve_ms(150) == 150
    with deadline.bound(deadline.Deadline.after_ms(100)):
        assert deadline.reserve_ms(150) == pytest.approx(30, abs=1)
    with deadline.bound(deadline.Deadline(None)):
        assert deadline.reserve_ms(150) == 150

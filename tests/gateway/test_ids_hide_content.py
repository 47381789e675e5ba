"""Record ids carry no function of the content (real gateway): an id that outlives its record (the
erasure event on the timeline) or that names a version the caller may not read cannot confirm a
guess of the text."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.gateway

TITLE = "Door code"


def _fnv1a64(data: bytes) -> int:
    h = 14695981039346656037
    for byte in data:
        h = ((h ^ byte) * 1099511628211) & ((1 << 64) - 1)
    return h


def _guess(memory_id: str) -> str | None:
    """The attacker's search: hash every four-digit PIN sentence and compare with the id's last part."""
    suffix = memory_id.rsplit("-", 1)[1]
    for pin in range(10_000):
        body = f"the door code is {pin:04d}"
        if f"{_fnv1a64((TITLE + body).encode()):016x}" == suffix:
            return body
    return None


def test_an_erased_record_id_on_the_timeline_does_not_give_away_its_pin(gateway: Any) -> None:
    secret = "the door code is 4821"
    mid = gateway.result("meta/agent_memory/remember", {"identity": "lead:main", "title": TITLE, "body": secret})["memory_id"]
    gateway.result("meta/agent_memory/erase", {"identity": "lead:main", "memory_id": mid, "reason": "privacy"})
    events = gateway.result("meta/events/list", {"limit": 1000})["events"]
    shown = [i for e in events if e["event_type"] == "memory.record.erased" for i in e["data"]["memory_ids"]]
    assert shown == [mid]
    assert _guess(shown[0]) is None


def test_the_same_content_gets_unrelated_ids_in_two_identities_and_after_forget(gateway: Any) -> None:
    params = {"title": TITLE, "body": "the door code is 1234"}
    a = gateway.result("meta/agent_memory/remember", {"identity": "lead:main", **params})["memory_id"]
    b = gateway.result("meta/agent_memory/remember", {"identity": "lead:other", **params})["memory_id"]
    gateway.result("meta/agent_memory/forget", {"identity": "lead:main", "memory_id": a})
    c = gateway.result("meta/agent_memory/remember", {"identity": "lead:main", **params})["memory_id"]
    batch = gateway.result("meta/agent_memory/remember_batch", {"identity": "lead:third", "records": [
        params, {"title": "Other", "body": "x"}]})
    ids = [a, b, c, *(r["memory_id"] for r in batch["results"])]
    suffixes = {i.rsplit("-", 1)[1] for i in ids}
    assert len(set(ids)) == len(ids) and len(suffixes) == len(ids), ids
    assert all(_guess(i) is None for i in ids)


def test_ids_count_nothing_of_what_other_identities_wrote(gateway: Any) -> None:
    """An identity's two ids, minted around other identities' writes, differ in the clock and in random
    bits only: no part counts the writes in between (a process-wide counter once did, so each id told
    its reader how many records, stages and proposals every other identity had made meanwhile)."""
    import re

    def remember(identity: str, n: int) -> str:
        return str(gateway.result("meta/agent_memory/remember",
                                  {"identity": identity, "title": f"Note {n}", "body": f"entry {n}"})["memory_id"])

    first = remember("a:one", 0)
    for n in range(25):
        remember("b:other", n)
    second = remember("a:one", 1)
    shape = re.compile(r"mem-(\d+)-([0-9a-f]+)-([0-9a-f]{16})")
    a, b = shape.fullmatch(first), shape.fullmatch(second)
    assert a and b, (first, second)
    assert int(a.group(1)) < int(b.group(1)) and a.group(2) == b.group(2) and a.group(3) != b.group(3)

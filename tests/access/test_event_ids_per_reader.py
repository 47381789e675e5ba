"""A reader who sees only its own identity's events learns nothing of the others' from event ids.

The timeline numbers events with one sequence shared by every identity. Shown as is
(``console-evt-<seq>``), two of a reader's events told it how many events other identities had between
them, and ``last_event_id`` (the last event *scanned*) counted them even when it saw none. Such a reader is
now shown opaque ids of its own, which still page ``meta/events/list`` and resume ``GET /events``; a caller
who sees every event keeps the plain sequence. Driven over a real gateway.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.events.cursor import EventCursor
from support import GatewayProcess, access_toml, start_gateway, write_config

pytestmark = pytest.mark.gateway

MINE, OTHER = "a:mine", "b:other"
WRITER, READER, AUDITOR = "event-ids-writer-0001", "event-ids-reader-0001", "event-ids-auditor-0001"
NEIGHBOUR = "event-ids-neighbour-0001"
GRANTS = [("writer", "agent.memory.write"), ("writer", "agent.memory.read"), ("writer", "agent.view")]
GRANTS += [("reader", a, {"identity": MINE}) for a in ("agent.memory.read", "agent.view")]
GRANTS += [("auditor", a) for a in ("agent.memory.read", "agent.view", "mob.memory.read", "operator.memory.read")]
GRANTS += [("neighbour", a, {"identity": OTHER}) for a in ("agent.memory.read", "agent.view")]
OPAQUE = re.compile(r"evt-[0-9a-f]{16}")


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    root = tmp_path_factory.mktemp("event-ids")
    config = write_config(root / "c.toml", access_toml({WRITER: "writer", READER: "reader", AUDITOR: "auditor",
                                                        NEIGHBOUR: "neighbour"},
                                                       GRANTS))
    gateway = start_gateway(root / "state", config=config)
    try:
        def remember(identity: str, n: int) -> None:
            gateway.result("meta/agent_memory/remember", {"identity": identity, "title": f"Note {n}",
                                                          "body": f"entry {n}"}, token=WRITER)
        remember(MINE, 0)
        for n in range(17):
            remember(OTHER, n)
        remember(MINE, 1)
        for n in range(17, 30):
            remember(OTHER, n)
        yield gateway
    finally:
        gateway.stop()


def test_a_reader_of_one_identity_is_shown_ids_that_count_nothing(gw: GatewayProcess) -> None:
    listed = gw.result("meta/events/list", {}, token=READER)
    mine = listed["events"]
    assert mine and {e["identity"] for e in mine} == {MINE}
    assert all(OPAQUE.fullmatch(e["event_id"]) for e in mine), [e["event_id"] for e in mine]
    assert "console-evt" not in json.dumps(listed)
    # the last id is its own last event's, not the last of the others' events it was not shown
    assert listed["last_event_id"] == mine[-1]["event_id"]
    # paging: after its first event, the rest of its own events; after its last, nothing and the same cursor
    rest = gw.result("meta/events/list", {"after": mine[0]["event_id"]}, token=READER)
    assert [e["event_id"] for e in rest["events"]] == [e["event_id"] for e in mine[1:]]
    done = gw.result("meta/events/list", {"after": mine[-1]["event_id"]}, token=READER)
    assert done == {"events": [], "last_event_id": mine[-1]["event_id"]}
    # limit counts its own events: one at a time walks them all
    walked, after = [], None
    while True:
        page = gw.result("meta/events/list", {"limit": 1, **({"after": after} if after else {})}, token=READER)
        if not page["events"]:
            break
        walked += [e["event_id"] for e in page["events"]]
        after = page["last_event_id"]
    assert walked == [e["event_id"] for e in mine]


def test_a_reader_cannot_probe_the_shared_sequence(gw: GatewayProcess) -> None:
    for after in (5, "5", "console-evt-5"):
        err = gw.error("meta/events/list", {"after": after}, token=READER)
        assert err["code"] == -32602 and err["data"]["field"] == "after", err
    assert gw.result("meta/events/list", {"after": 0}, token=READER)["events"]  # 0 is the start
    # another reader's ids are not cursors here (nor the auditor's plain ones)
    audited = gw.result("meta/events/list", {}, token=AUDITOR)["events"]
    assert audited and all(e["event_id"].startswith("console-evt-") for e in audited)
    assert gw.error("meta/events/list", {"after": audited[0]["event_id"]}, token=READER)["code"] == -32602


def test_an_id_made_up_or_shown_to_another_reader_is_refused_alike(gw: GatewayProcess) -> None:
    mine = gw.result("meta/events/list", {}, token=READER)["events"]
    theirs = gw.result("meta/events/list", {}, token=NEIGHBOUR)["events"]
    assert theirs and all(OPAQUE.fullmatch(e["event_id"]) for e in theirs)
    well_formed = [theirs[0]["event_id"], theirs[-1]["event_id"], "evt-" + "0" * 16, "evt-" + "f" * 16,
                   "evt-0123456789abcdef", 5, "console-evt-5"]
    messages = set()
    for after in [*well_formed, "evt-xyz"]:
        err = gw.error("meta/events/list", {"after": after}, token=READER)
        assert err["code"] == -32602 and err["data"]["field"] == "after", (after, err)
        if after in well_formed:
            messages.add(err["message"])
    assert len(messages) == 1  # one answer for every cursor it was not given: nothing to tell them apart
    # its own ids still page, the first as the last
    assert gw.result("meta/events/list", {"after": mine[0]["event_id"]}, token=READER)["events"] == mine[1:]
    # the neighbour's own ids are cursors for the neighbour
    assert gw.result("meta/events/list", {"after": theirs[0]["event_id"]}, token=NEIGHBOUR)["events"] == theirs[1:]


def test_the_stream_sends_a_reader_its_own_ids_and_resumes_from_them(gw: GatewayProcess) -> None:
    mine = gw.result("meta/events/list", {}, token=READER)["events"]

    def streamed(headers: dict[str, str]) -> list[str]:
        ids: list[str] = []
        with httpx.stream("GET", gw.url + "/events", headers={"Authorization": f"Bearer {READER}", **headers},
                          timeout=30) as resp:
            assert resp.status_code == 200
            for line in resp.iter_lines():
                if line.startswith("id: "):
                    ids.append(line[4:])
                if len(ids) == len(mine) - len(headers):
                    break
        return ids

    assert streamed({}) == [e["event_id"] for e in mine]
    assert streamed({"Last-Event-ID": mine[0]["event_id"]}) == [e["event_id"] for e in mine[1:]]
    # an id it was not given starts from the oldest retained event (it never leaves the stream silent)
    assert streamed({"Last-Event-ID": "evt-" + "f" * 16})[: len(mine) - 1] == [e["event_id"] for e in mine[:-1]]


@settings(max_examples=200)
@given(st.binary(min_size=32, max_size=32), st.integers(min_value=0, max_value=(1 << 63) - 1))
def test_an_opaque_id_reads_back_as_its_sequence_number(key: bytes, seq: int) -> None:
    cursor = EventCursor(key)
    shown = cursor.event_id(seq)
    assert OPAQUE.fullmatch(shown) and cursor.parse(shown, max(seq, 1)) == (seq or None)
    assert EventCursor(None).parse(EventCursor(None).event_id(seq), 0) == seq


@settings(max_examples=300)
@given(st.binary(min_size=32, max_size=32), st.binary(min_size=32, max_size=32),
       st.integers(min_value=1, max_value=1 << 40), st.integers(min_value=0, max_value=(1 << 64) - 1))
def test_an_id_this_reader_could_not_have_been_shown_reads_as_nothing(key: bytes, other: bytes, last_seq: int,
                                                                       made_up: int) -> None:
    cursor = EventCursor(key)
    # its own ids up to the newest number are read back; beyond it (not yet shown) they are not
    assert cursor.parse(cursor.event_id(last_seq), last_seq) == last_seq
    assert cursor.parse(cursor.event_id(1), last_seq) == 1
    assert cursor.parse(cursor.event_id(last_seq + 1), last_seq) is None
    # another reader's id, or 16 hex digits made up, deciphers here to a number in the whole 64-bit range:
    # accepted with a chance of last_seq / 2**64 (here at most 2**-24 an example, in practice far less)
    if key != other:
        assert cursor.parse(EventCursor(other).event_id(last_seq), last_seq) is None
    made = f"evt-{made_up:016x}"
    assert cursor.parse(made, last_seq) in (None, cursor._decipher(made_up))

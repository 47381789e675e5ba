"""An explicit recall answers while another caller holds the realm's writer (a batch of any identity being
written): marking the records it returned never waits behind that write; the mark lands once the writer is
free."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from meta_memory.sdk import Meta

ME = "lead:reader"


def _explicit_recalls(h: Any, realm: str, memory_id: str) -> int:
    record = h.runtime.agent_memory.store.get(realm, memory_id)
    return int(record.usage.explicit_recall_count)


def test_recall_answers_while_the_realm_writer_is_held_and_marks_usage_after(tmp_path: Path) -> None:
    with Meta.builder().persistent_state(tmp_path / "state").build() as h:
        memory_id = h.call("meta/agent_memory/remember", {"identity": ME, "title": "Harbour",
                                                          "body": "the harbour ferry"})["memory_id"]
        store = h.runtime.agent_memory.store
        held, release = threading.Event(), threading.Event()

        def hold_the_writer() -> None:  # as another identity's large batch holds it while it is written
            with store.transaction("default"):
                held.set()
                release.wait(30)

        holder = threading.Thread(target=hold_the_writer)
        holder.start()
        assert held.wait(10)
        answers: list[Any] = []
        try:
            reader = threading.Thread(target=lambda: answers.append(
                h.call("meta/agent_memory/recall", {"identity": ME, "query_text": "harbour"})))
            reader.start()
            reader.join(20)
            assert not reader.is_alive(), "the recall waited for the realm's writer"
            assert [r["title"] for r in answers[0]["records"]] == ["Harbour"]
            assert _explicit_recalls(h, "default", memory_id) == 0  # not marked while the writer is held
        finally:
            release.set()
            holder.join(30)
        deadline = time.monotonic() + 10
        while _explicit_recalls(h, "default", memory_id) == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _explicit_recalls(h, "default", memory_id) == 1  # the deferred mark landed

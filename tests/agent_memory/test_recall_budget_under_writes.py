"""An explicit recall answers within its time budget while other identities write large batches to the same
realm: marking the records it returned never waits behind their writes, nor pays for the realm's upkeep."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from meta_memory.errors import AgentMemoryError
from meta_memory.sdk import Meta

ME = "lead:reader"


def test_recall_is_not_held_past_its_budget_by_another_identitys_batches(tmp_path: Path) -> None:
    budget_ms = 100
    with Meta.builder().persistent_state(tmp_path / "state").agent_memory(recall_timeout_ms=budget_ms).build() as h:
        h.call("meta/agent_memory/remember", {"identity": ME, "title": "Harbour", "body": "the harbour ferry"})
        stop = time.monotonic() + 6

        def writer(tag: str) -> None:
            i = 0
            while time.monotonic() < stop:
                h.call("meta/agent_memory/remember_batch", {"identity": f"lead:writer-{tag}", "records": [
                    {"title": f"{tag}{i} {j}", "body": "filler " * 1000 + f"{tag} {i} {j}"} for j in range(500)]})
                i += 1

        writers = [threading.Thread(target=writer, args=(tag,)) for tag in "ab"]
        for t in writers:
            t.start()
        worst, answered = 0.0, 0
        try:
            while time.monotonic() < stop:
                started = time.monotonic()
                try:
                    out = h.call("meta/agent_memory/recall", {"identity": ME, "query_text": "harbour"})
                    answered += bool(out["records"])
                except AgentMemoryError as exc:
                    assert exc.reason == "timeout", exc  # fail closed, in time
                worst = max(worst, time.monotonic() - started)
        finally:
            for t in writers:
                t.join()
        assert answered
        assert worst < budget_ms / 1000 + 0.35, f"a recall took {worst:.3f} s under a {budget_ms} ms budget"

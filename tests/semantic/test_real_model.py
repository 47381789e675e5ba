"""The bundled all-MiniLM-L6-v2 (only when the ``semantic`` extra is installed)."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest

from meta_memory.config import parse_config
from meta_memory.recall.semantic.model import semantic_extra_missing

_MISSING = semantic_extra_missing()
pytestmark = [pytest.mark.semantic, pytest.mark.skipif(
    bool(_MISSING), reason=f"semantic extra not installed ({', '.join(_MISSING)}): pip install 'meta-memory[semantic]'"
)]


@pytest.fixture(scope="module")
def embedder():
    from meta_memory.recall.semantic.model import MiniLMEmbedder

    e = MiniLMEmbedder()
    e.load()
    return e


def test_offline_unit_vectors_that_place_paraphrases_closer(embedder) -> None:
    a, b, c = embedder.embed(["I bought a new car", "We purchased an automobile", "The soup needs more salt"])
    assert len(a) == embedder.dim == 384
    assert all(abs(math.sqrt(sum(x * x for x in v)) - 1.0) < 1e-4 for v in (a, b, c))
    cos = lambda u, v: sum(x * y for x, y in zip(u, v))  # noqa: E731
    assert cos(a, b) > 0.5 > cos(a, c)


def test_a_hybrid_runtime_finds_a_paraphrase_once_its_vector_lands(tmp_path: Path) -> None:
    from meta_memory.runtime import Runtime

    cfg = parse_config({"agent_memory": {"recall_provider": "hybrid", "recall_timeout_ms": 5000}})
    with Runtime(cfg, tmp_path / "state", start_background=False) as rt:
        svc = rt.agent_memory.service
        svc.remember("default", "lead:main", "Garage", "Last spring we purchased an automobile", [])
        svc.remember("default", "lead:main", "Kitchen", "The oven arrived on Tuesday", [])

        def titles() -> list[str]:
            out = svc.recall("default", "lead:main", selection=None, query_text="when did I buy my car",
                             query_terms=None, max_entries=None)
            return [r["title"] for r in out["records"]]

        deadline = time.monotonic() + 90
        while "Garage" not in titles() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert titles() == ["Garage"]

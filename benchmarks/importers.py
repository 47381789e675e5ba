"""Import rates from mem0 and LangGraph: ``meta-memory import --from mem0|langgraph`` on one realm.

Run: ``python benchmarks/importers.py [--mem0 2000] [--langgraph 20000] [--postgres-dsn DSN]``
(needs the ``importers`` extra; offline: mem0 runs with a hashing embedder and ``infer=False``).

In one run, with synthetic text from ``benchmarks/recall.py``:

* ``mem0``: the real ``mem0.Memory`` (local FAISS store, history database) writes ``--mem0`` memories
  across 20 users; the import then reads its docstore and history and lands them in an empty state
  (the command's code path: :func:`~meta_memory.portability.from_mem0.read_mem0` and
  :func:`~meta_memory.portability.foreign.import_foreign`, batches of 1,024 through the validator, WAL with
  ``synchronous=FULL``). mem0's own write rate is printed beside it for scale.
* ``langgraph``: the real ``SqliteStore`` holds ``--langgraph`` items under 20 users' namespaces; the
  import lands them (``identity_segment=1``), against the baseline of putting the same items one by one
  through :class:`~meta_memory.integrations.langgraph.MetaMemoryStore` (the adapter's own write path, on a
  tenth of them).

With ``--postgres-dsn`` the imports also run into a PostgreSQL-backed state (a throw-away schema).
Figures are records per second, the whole import (reading the source included).
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import random
import re
import secrets
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("MEM0_TELEMETRY", "False")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from meta_memory.agent_memory.config import AgentMemoryConfig  # noqa: E402
from meta_memory.config import MetaConfig  # noqa: E402
from meta_memory.portability.foreign import ForeignSummary, import_foreign  # noqa: E402
from meta_memory.portability.from_langgraph import LangGraphSource, read_langgraph  # noqa: E402
from meta_memory.portability.from_mem0 import locate, read_mem0  # noqa: E402
from meta_memory.runtime import Runtime  # noqa: E402
from recall import Vocabulary  # noqa: E402

DIMS = 64
USERS = 20


def _vector(text: str) -> list[float]:
    vec = [0.0] * DIMS
    for word in re.findall(r"\w+", text.lower()):
        h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
        vec[h % DIMS] += 1.0
    norm = math.sqrt(sum(x * x for x in vec)) or 1.0
    return [x / norm for x in vec]


def write_mem0(root: Path, n: int, vocab: Vocabulary) -> float:
    """``n`` memories written by mem0 itself; returns the seconds it took."""
    from langchain_core.embeddings import Embeddings
    from mem0 import Memory

    class Hashing(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [_vector(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return _vector(text)

    m = Memory.from_config({
        "embedder": {"provider": "langchain", "config": {"model": Hashing(), "embedding_dims": DIMS}},
        "vector_store": {"provider": "faiss", "config": {"path": str(root / "faiss"), "collection_name": "mem0",
                                                         "embedding_model_dims": DIMS}},
        "llm": {"provider": "openai", "config": {"api_key": "offline-never-called", "model": "gpt-4o-mini"}},
        "history_db_path": str(root / "history.db"),
    })
    t0 = time.perf_counter()
    for i in range(n):
        m.add(vocab.sentence(24), user_id=f"user{i % USERS}", infer=False)
    return time.perf_counter() - t0


def write_langgraph(path: Path, n: int, vocab: Vocabulary) -> list[tuple[tuple[str, ...], str, dict[str, Any]]]:
    from langgraph.store.base import PutOp
    from langgraph.store.sqlite import SqliteStore

    items = [(("users", f"user{i % USERS}", "notes"), f"k{i}", {"text": vocab.sentence(24), "n": i}) for i in range(n)]
    with SqliteStore.from_conn_string(str(path)) as store:
        store.setup()
        for start in range(0, n, 1000):
            store.batch([PutOp(ns, key, value) for ns, key, value in items[start:start + 1000]])
    return items


def target(root: Path, name: str, dsn: str | None) -> Runtime:
    if dsn is None:
        return Runtime(MetaConfig(), root / name)
    schema = f"mm_bench_{secrets.token_hex(4)}"
    sep = "&" if "?" in dsn else "?"
    am = AgentMemoryConfig(store="postgres", dsn=f"{dsn}{sep}options=-c%20search_path%3D{schema}")
    return Runtime(MetaConfig(agent_memory=am), root / name)


def run_mem0(root: Path, runtime: Runtime) -> tuple[int, float]:
    t0 = time.perf_counter()
    entries, _ = read_mem0(locate(root / "mem0"), now_ms=runtime.clock.now_ms())
    assert runtime.agent_memory is not None
    summary = import_foreign(runtime.agent_memory.store, entries, ForeignSummary("mem0", "bench", "default"))
    elapsed = time.perf_counter() - t0
    assert not summary.refused, summary.refused[:3]
    return summary.created, elapsed


def run_langgraph(path: Path, runtime: Runtime) -> tuple[int, float]:
    t0 = time.perf_counter()
    skipped: list[Any] = []
    with LangGraphSource(str(path)) as source:
        entries = read_langgraph(source, identity_segment=1, now_ms=runtime.clock.now_ms(), skipped=skipped)
        assert runtime.agent_memory is not None
        summary = import_foreign(runtime.agent_memory.store, entries, ForeignSummary("langgraph", "bench", "default"))
    elapsed = time.perf_counter() - t0
    assert not summary.refused, summary.refused[:3]
    return summary.created, elapsed


def adapter_puts(root: Path, items: list[tuple[tuple[str, ...], str, dict[str, Any]]]) -> float:
    from meta_memory.integrations.langgraph import MetaMemoryStore
    from meta_memory.sdk.handle import MetaHandle
    from meta_memory.sdk.transport import EmbeddedTransport
    from meta_memory.server.gateway import Gateway

    runtime = Runtime(MetaConfig(), root / "adapter")
    handle = MetaHandle(EmbeddedTransport(Gateway.for_runtime(runtime)))
    store = MetaMemoryStore(handle, identity_segment=1)
    t0 = time.perf_counter()
    for ns, key, value in items:
        store.put(ns, key, value)
    elapsed = time.perf_counter() - t0
    handle.close()
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mem0", type=int, default=2000, help="memories mem0 writes")
    ap.add_argument("--langgraph", type=int, default=20000, help="items the SqliteStore holds")
    ap.add_argument("--postgres-dsn", default=None, help="also import into a PostgreSQL-backed state")
    args = ap.parse_args()
    vocab = Vocabulary(random.Random(7))
    rows: list[tuple[str, str, int, float, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        mem0_s = write_mem0(root / "mem0", args.mem0, vocab)
        items = write_langgraph(root / "lg.sqlite", args.langgraph, vocab)
        for backend, dsn in (("sqlite", None), *((("postgres", args.postgres_dsn),) if args.postgres_dsn else ())):
            runtime = target(root, f"mem0-{backend}", dsn)
            n, s = run_mem0(root, runtime)
            runtime.close()
            rows.append(("mem0", backend, n, s, f"mem0's own add(infer=False): {args.mem0 / mem0_s:,.0f} rec/s"))
            runtime = target(root, f"lg-{backend}", dsn)
            n, s = run_langgraph(root / "lg.sqlite", runtime)
            runtime.close()
            rows.append(("langgraph", backend, n, s, ""))
        sample = items[: max(1, len(items) // 10)]
        put_s = adapter_puts(root, sample)
        rows.append(("langgraph", "sqlite", len(sample), put_s, "baseline: MetaMemoryStore.put one item at a time"))
    print(f"{'from':10} {'target':8} {'records':>8} {'seconds':>8} {'rec/s':>9}")
    for system, backend, n, s, note in rows:
        print(f"{system:10} {backend:8} {n:8,} {s:8.2f} {n / s:9,.0f}  {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

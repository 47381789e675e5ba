"""Recall latency at 1k, 10k and 100k records in one identity, beside two baselines.

For each size the same synthetic records (Zipf-distributed vocabulary, titles
of 3-7 words, bodies of 15-90 words, 0-3 tags, one record a minute) are
loaded once, and the same queries (4-9 words, mixing common and rare words
and stopwords) are timed, in one process, for:

* ``ours``      — :class:`LexicalRecallProvider` (default configuration) through
  the backend's reader;
* ``fts5``      — bare ``SELECT rowid ... WHERE records_fts MATCH ? ORDER BY
  bm25(records_fts) LIMIT 8`` over the same full-text rows;
* ``reference`` — the predecessor's full-scan scorer
  (:class:`FullScanRecallProvider`), on fewer queries at large sizes.

Calls of ``ours`` and ``fts5`` alternate query by query. Ratios reported: ours p99 / fts5 p99 (target <= 1.5 at 100k) and
reference p99 / ours p99 (target >= 10).

Backends: ``standalone`` (default; ``_standalone.StandaloneIndex``, a
benchmark-only index with the store's schema and full-text table). Another backend is any ``module:callable`` given with ``--backend``
that returns an object with ``load(records: list[IndexedRecord], identity:
str) -> None``, ``reader(identity: str)`` (a recall reader) and
``bare_fts(match: str, identity: str, limit: int) -> list`` (the bare query
over the same rows).

Run: ``python benchmarks/recall.py [--sizes 1000,10000,100000] [--queries 300]``.
"""

from __future__ import annotations

import argparse
import importlib
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import percentile  # noqa: E402
from _standalone import IndexedRecord, StandaloneIndex  # noqa: E402
from meta_memory.recall import fts  # noqa: E402
from meta_memory.recall.fullscan import FullScanRecallProvider  # noqa: E402
from meta_memory.recall.lexical import LexicalRecallProvider  # noqa: E402
from meta_memory.recall.provider import RecallRequest  # noqa: E402
from meta_memory.recall.text import STOPWORDS  # noqa: E402

IDENTITY = "identity:bench"
T0 = 1_700_000_000_000
_SYLLABLES = (
    "ka ri to mo ne sa lu vi en or an el is ar on de ta po mi ge ra be ul in fa ko se ti da no ma".split()
)
_REAL_WORDS = (
    "deploy config server client passport travel garden budget invoice meeting schedule review release "
    "database backup restore migration token secret policy access memory identity agent session report "
    "customer ticket issue priority weekly planning roadmap design prototype feedback launch metrics "
    "latency outage incident rollback cluster region network storage kitchen recipe flight hotel "
    "project deadline contract vendor payment refund shipment warehouse inventory laptop printer"
).split()


class Backend(Protocol):
    def load(self, records: list[IndexedRecord], identity: str) -> None: ...
    def reader(self, identity: str) -> Any: ...
    def bare_fts(self, match: str, identity: str, limit: int) -> list[Any]: ...


class StandaloneBackend:
    """The bundled :class:`StandaloneIndex` (same schema as the record store)."""

    def __init__(self) -> None:
        self.index = StandaloneIndex()

    def load(self, records: list[IndexedRecord], identity: str) -> None:
        self.index.add_many(records)

    def reader(self, identity: str) -> Any:
        return self.index.reader(identity)

    def bare_fts(self, match: str, identity: str, limit: int) -> list[Any]:
        return self.index.conn.execute(
            f"SELECT rowid FROM {fts.FTS_TABLE} WHERE {fts.FTS_TABLE} MATCH ?"
            f" ORDER BY bm25({fts.FTS_TABLE}) LIMIT ?",
            (match, limit),
        ).fetchall()


class Vocabulary:
    """A deterministic Zipf-distributed vocabulary of real and made-up words."""

    def __init__(self, rng: random.Random, size: int = 20_000) -> None:
        words: list[str] = list(_REAL_WORDS)
        seen = set(words)
        while len(words) < size:
            w = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))
            if w not in seen and w not in STOPWORDS:
                seen.add(w)
                words.append(w)
        rng.shuffle(words)
        self.words = words
        weights = [1.0 / (rank + 1) ** 1.05 for rank in range(len(words))]
        total = sum(weights)
        acc = 0.0
        self.cumulative = []
        for w in weights:
            acc += w / total
            self.cumulative.append(acc)
        self.rng = rng

    def sample(self, n: int) -> list[str]:
        return self.rng.choices(self.words, cum_weights=self.cumulative, k=n)

    def sentence(self, n: int) -> str:
        out = self.sample(n)
        for i in range(0, len(out), 5):  # sprinkle stopwords like real text
            out.insert(i, self.rng.choice(sorted(STOPWORDS)))
        return " ".join(out)


def make_records(n: int, vocab: Vocabulary) -> list[IndexedRecord]:
    rng = vocab.rng
    records = []
    for i in range(n):
        at = T0 + i * 60_000
        records.append(
            IndexedRecord(
                memory_id=f"rec-{i:07d}",
                title=vocab.sentence(rng.randint(3, 7)).capitalize(),
                body=vocab.sentence(rng.randint(15, 90)) + ".",
                tags=tuple(sorted(set(vocab.sample(rng.randint(0, 3))))),
                created_at_ms=at,
                updated_at_ms=at,
                scope_key=IDENTITY,
            )
        )
    return records


def make_queries(n: int, vocab: Vocabulary) -> list[str]:
    return [vocab.sentence(vocab.rng.randint(4, 9)) for _ in range(n)]


def timed(fns: Sequence[Callable[[str], Any]], queries: Sequence[str]) -> list[list[float]]:
    """Per-call milliseconds of each function; calls are interleaved query by query,
    so load changes on the machine hit every system alike."""
    out: list[list[float]] = [[] for _ in fns]
    for q in queries:
        for fn, sink in zip(fns, out):
            t0 = time.perf_counter()
            fn(q)
            sink.append((time.perf_counter() - t0) * 1000)
    return out


def run_size(size: int, n_queries: int, backend_factory: Callable[[], Backend], seed: int) -> dict[str, float]:
    vocab = Vocabulary(random.Random(seed))
    records = make_records(size, vocab)
    queries = make_queries(n_queries, vocab)
    backend = backend_factory()
    t0 = time.perf_counter()
    backend.load(records, IDENTITY)
    build_s = time.perf_counter() - t0
    reader = backend.reader(IDENTITY)
    ours = LexicalRecallProvider()
    reference = FullScanRecallProvider()

    def ask(provider: Any) -> Callable[[str], Any]:
        return lambda q: provider.recall(RecallRequest(IDENTITY, "default", q, max_entries=8), reader)

    def bare(q: str) -> Any:
        match = fts.match_expression(q)
        return backend.bare_fts(match, IDENTITY, 8) if match else []

    for q in queries[:20]:  # warm caches the same way for both
        ask(ours)(q)
        bare(q)
    ours_ms, bare_ms = timed([ask(ours), bare], queries)
    ref_queries = queries[: max(10, min(n_queries, 300_000 // size))]
    (ref_ms,) = timed([ask(reference)], ref_queries)
    row = {
        "size": size,
        "build_s": build_s,
        "ours_p50": statistics.median(ours_ms),
        "ours_p99": percentile(ours_ms, 99),
        "fts_p50": statistics.median(bare_ms),
        "fts_p99": percentile(bare_ms, 99),
        "ref_p50": statistics.median(ref_ms),
        "ref_p99": percentile(ref_ms, 99),
        "ref_queries": len(ref_queries),
    }
    row["ours_over_fts_p99"] = row["ours_p99"] / row["fts_p99"]
    row["ref_over_ours_p99"] = row["ref_p99"] / row["ours_p99"]
    return row


def _backend_factory(spec: str) -> Callable[[], Backend]:
    if spec == "standalone":
        return StandaloneBackend
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--backend", default="standalone")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    factory = _backend_factory(args.backend)
    print(f"backend: {args.backend}; {args.queries} queries per size; times in ms")
    print(
        f"{'records':>8} {'build s':>8} {'ours p50':>9} {'ours p99':>9} {'fts5 p50':>9} {'fts5 p99':>9}"
        f" {'ref p50':>9} {'ref p99':>9} {'ours/fts5':>10} {'ref/ours':>9}"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        r = run_size(size, args.queries, factory, args.seed)
        print(
            f"{size:>8} {r['build_s']:>8.2f} {r['ours_p50']:>9.2f} {r['ours_p99']:>9.2f} {r['fts_p50']:>9.2f}"
            f" {r['fts_p99']:>9.2f} {r['ref_p50']:>9.2f} {r['ref_p99']:>9.2f}"
            f" {r['ours_over_fts_p99']:>9.2f}x {r['ref_over_ours_p99']:>8.1f}x   (reference: {r['ref_queries']} queries)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

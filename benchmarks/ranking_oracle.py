"""The ranking oracle: can one identity learn which words another identity's records hold from the
*order* of its own recall results?

The attack (no access to the victim's scope, only the attacker's own writes and recalls):

* the victim ``ben`` holds ``--victim-records`` records in the same realm, drawn from a vocabulary;
* the attacker ``ana`` writes **one** ``remember_batch``: for each probe word ``w`` a record whose body
  is just ``w``, plus one control record per group whose body is a nonce word nobody else uses and
  one filler word (one token longer, so with equal statistics it ranks just below every probe), each
  record separated by two filler records that match nothing (so the write-order context lends no score
  between matched records);
* per group of 63 probes it recalls once, the 63 probe words and the nonce (64 terms, the query cap),
  ``max_entries`` 64. A probe ranked *below* the control had a lower bm25 idf than the nonce: some
  record the attacker cannot read holds the word. Three recalls test 189 words.

The probes are ``--held`` words the victim's records hold and the rest words nobody holds. Reported per
ranking path (SQLite with recall served by FTS5, SQLite with the in-process index warm, and PostgreSQL
when ``--dsn`` reaches a server): true positives (held words the attacker called held), false positives
(unheld words called held), and how many verdicts differ from the same attack run in a realm *without*
the victim's records — the oracle's yield: 0 means the ranking told the attacker nothing about ``ben``.

Run: ``python benchmarks/ranking_oracle.py [--probes 189] [--held 20] [--victim-records 400] [--seed 5]
[--dsn postgresql://postgres@127.0.0.1:5432/test]``.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import secrets
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Scope  # noqa: E402
from meta_memory.agent_memory.store.base import AgentMemoryStore  # noqa: E402
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore  # noqa: E402
from meta_memory.agent_memory.writes import RememberItem
from meta_memory.clock import ManualClock  # noqa: E402
from meta_memory.recall.lexical import LexicalRecallProvider  # noqa: E402
from meta_memory.recall.provider import RecallRequest  # noqa: E402
from meta_memory.recall.text import tokens  # noqa: E402
from meta_memory.services.recall_reader import guarded_recall  # noqa: E402

REALM = "default"
ATTACKER = "ana"
VICTIM = "ben"
GROUP = 63  # probe words per recall: with the nonce, the 64-term query cap
SYLLABLES = ["ka", "lo", "mi", "ra", "tu", "ve", "no", "shi", "pa", "dor", "len", "gri", "fa", "zu", "bel", "qua"]


def make_words(rng: random.Random, count: int) -> list[str]:
    """``count`` distinct pronounceable words, each exactly one token of the recall tokeniser."""
    out: dict[str, None] = {}
    while len(out) < count:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
        if tokens(word) == [word]:
            out[word] = None
    return list(out)


@dataclass(frozen=True)
class Scenario:
    victim_records: list[tuple[str, str]]
    probes: list[str]
    held: set[str]
    nonces: list[str]


def scenario(seed: int, n_probes: int, n_held: int, n_victim: int) -> Scenario:
    rng = random.Random(seed)
    words = make_words(rng, 600 + n_probes + 8)
    victim_vocab, unheld, nonces = words[:600], words[600:600 + n_probes], words[600 + n_probes:]
    records = [(f"note {i}", " ".join(rng.choices(victim_vocab, k=12))) for i in range(n_victim)]
    in_victim = sorted({w for _, body in records for w in body.split()})
    held = rng.sample(in_victim, n_held)
    probes = held + unheld[: n_probes - n_held]
    rng.shuffle(probes)
    return Scenario(records, probes, set(held), nonces)


def attack(store: AgentMemoryStore, sc: Scenario, with_victim: bool, before_recall: Callable[[], None]) -> set[str]:
    """Run the attack on ``store``; the words the attacker concludes another identity holds."""
    groups = [sc.probes[i:i + GROUP] for i in range(0, len(sc.probes), GROUP)]
    pads = iter(range(10**6))

    def pad() -> list[RememberItem]:  # two distinct records (equal ones would be one record)
        return [RememberItem(f"pad {next(pads)}", "pad"), RememberItem(f"pad {next(pads)}", "pad")]

    batch: list[RememberItem] = []
    victim = list(sc.victim_records) if with_victim else []
    for g, group in enumerate(groups):  # the victim's writes interleave with the attacker's history
        for word in group:
            batch += [RememberItem("probe", word), *pad()]
        batch += [RememberItem("probe", f"{sc.nonces[g]} pad"), *pad()]
    cut = len(victim) // 2
    for title, body in victim[:cut]:
        record_writes.remember(store, REALM, VICTIM, title, body)
    record_writes.remember(store, REALM, ATTACKER, "warm up", "something of my own")
    for title, body in victim[cut:]:
        record_writes.remember(store, REALM, VICTIM, title, body)
    for i in range(0, len(batch), 500):
        record_writes.remember_many(store, REALM, ATTACKER, batch[i:i + 500])
    before_recall()
    provider = LexicalRecallProvider()
    scope = Scope.identity(REALM, ATTACKER)
    called: set[str] = set()
    for g, group in enumerate(groups):
        req = RecallRequest(ATTACKER, REALM, query_text=" ".join([*group, sc.nonces[g]]), max_entries=64)
        bodies = [item.record.body for item in guarded_recall(provider, store, req, scope).records]
        control = bodies.index(f"{sc.nonces[g]} pad")
        called |= {w for w in group if w not in bodies or bodies.index(w) > control}
    return called


@contextlib.contextmanager
def sqlite_store(use_index: bool) -> Iterator[tuple[AgentMemoryStore, Callable[[], None]]]:
    with tempfile.TemporaryDirectory(prefix="ranking-oracle-") as tmp:
        store = SqliteAgentMemoryStore(Path(tmp) / "am", ManualClock(1_700_000_000_000))
        store.lexical_index.min_rows = 0
        if not use_index:
            store.lexical_index.max_bytes = 0

        def warm() -> None:
            if use_index:
                assert store.lexical_index.warm(REALM)

        try:
            yield store, warm
        finally:
            store.close()


@contextlib.contextmanager
def postgres_store(dsn: str) -> Iterator[tuple[AgentMemoryStore, Callable[[], None]]]:
    import psycopg

    from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore

    schema = f"mm_oracle_{secrets.token_hex(6)}"
    store = PostgresAgentMemoryStore(dsn, ManualClock(1_700_000_000_000), schema=schema, pool_size=2)
    try:
        yield store, lambda: None
    finally:
        store.close()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def postgres_reachable(dsn: str) -> bool:
    try:
        import psycopg

        with psycopg.connect(dsn, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception:  # noqa: BLE001 - any failure means "skip this path"
        return False
    return True


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    sc = scenario(args.seed, args.probes, args.held, args.victim_records)
    paths: list[tuple[str, Callable[[], Any]]] = [
        ("sqlite, FTS5", lambda: sqlite_store(False)),
        ("sqlite, in-process index", lambda: sqlite_store(True)),
    ]
    if args.dsn and postgres_reachable(args.dsn):
        paths.append(("postgresql", lambda: postgres_store(args.dsn)))
    rows = []
    for name, opener in paths:
        verdicts = {}
        for with_victim in (True, False):
            with opener() as (store, warm):
                verdicts[with_victim] = attack(store, sc, with_victim, warm)
        called = verdicts[True]
        rows.append({
            "path": name,
            "probes": len(sc.probes),
            "held": len(sc.held),
            "true_positives": len(called & sc.held),
            "false_positives": len(called - sc.held),
            "verdicts_that_depend_on_victim": len(verdicts[True] ^ verdicts[False]),
        })
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probes", type=int, default=189)
    parser.add_argument("--held", type=int, default=20)
    parser.add_argument("--victim-records", type=int, default=400)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--dsn", default=None, help="also attack a PostgreSQL store (a throw-away schema)")
    args = parser.parse_args(argv)
    if not 0 < args.held <= args.probes:
        parser.error("--held must be between 1 and --probes")
    print(f"ranking oracle: {args.probes} probe words ({args.held} held by the victim), "
          f"{-(-args.probes // GROUP)} recalls after one batch write")
    print(f"{'path':<26} {'true pos':>9} {'false pos':>10} {'depend on victim':>17}")
    for row in run(args):
        print(f"{row['path']:<26} {row['true_positives']:>5}/{row['held']:<3} "
              f"{row['false_positives']:>6}/{row['probes'] - row['held']:<3} "
              f"{row['verdicts_that_depend_on_victim']:>13}/{row['probes']}")


if __name__ == "__main__":
    main()

"""Secret-scan cost per 64 KiB write, as a ratio to a raw SQLite insert of the same bytes.

For four 64 KiB bodies -- ASCII prose, prose with non-ASCII text (so Unicode folding runs),
prose with a key at the very end, and an adversarial body of pattern prefixes repeated back to
back (``eyJeyJ...``, ``key=key=...``: a backtracking pattern would go quadratic) -- times
``secrets.scan`` (each field, then the fields joined) and, interleaved in the same run, one
durable SQLite insert of the same bytes (WAL, ``synchronous=FULL``, one explicit transaction,
as the store writes). When ``detect-secrets`` is installed, its line-based plugins for the same
formats are timed on the same text for comparison. Prints p50/p99 in milliseconds and the
ratios to the insert.

Then adversarial metadata at the field rules' caps, scanned as the ledger scans it
(``scan_values``) and as a record's write scans it (``scan`` over ``json_strings``): 120 members
whose keys hold a trigger word with short values (many seams), three nested credential keys over
1,600 numbers, and the same with 64-byte keys.

Usage::

    python3 benchmarks/secret_scan.py [--iterations 200] [--dir PATH] [--json]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from meta_memory.agent_memory import secrets
from meta_memory.agent_memory.secrets import json_strings, scan, scan_values
from meta_memory.stats import percentile

SIZE = 64 * 1024
SENTENCES = (
    "Caroline went to the support group yesterday and said it was powerful. ",
    "Melanie is planning a camping trip with the kids next month, near the lake. ",
    "The deploy runbook says production changes need two approvals before noon. ",
    "Remember to rotate the API key every 90 days; the password policy needs 12 characters. ",
)
NON_ASCII = "Café déjà vu — naïve façade, 東京で会いましょう, Привет, ＦＵＬＬＷＩＤＴＨ text. "


def _body(extra: str = "", tail: str = "") -> str:
    text = ""
    i = 0
    while len(text.encode("utf-8")) < SIZE - len(tail.encode("utf-8")) - 200:
        text += SENTENCES[i % len(SENTENCES)] + (extra if i % 3 == 0 else "")
        if i % 12 == 11:
            text += "\n"
        i += 1
    return text + tail


BODIES = {
    "ascii prose": _body(),
    "non-ascii prose": _body(NON_ASCII),
    "key at the end": _body(tail="deploy key AKIAIOSFODNN7EXAMPLE"),
    # pattern prefixes repeated back to back: a backtracking pattern would go quadratic here
    "adversarial": ("eyJ" * 3000 + "key=" * 3000 + "password=" * 1500 + "sk-" * 3000 + "a://" * 2000
                    + "MII" * 3000)[:SIZE],
}



def _long_key(word: str) -> str:
    return (word + "_" + "x" * 64)[:64]


METADATA = {
    "120 trigger keys": {f"token_{i}": f"v{i}" for i in range(120)},
    "nested 1600 numbers": {"secret": {"token": {"api_key": list(range(1600))}}},
    "nested, 64-byte keys": {_long_key("password"): {_long_key("secret"): {_long_key("api_key"): list(range(1400))}}},
}


def _metadata_scan(value: object) -> None:
    secrets._clean_memo.clear()  # the write path's memo would answer a repeat without scanning
    scan("Conversation notes", "", "", ("notes",), json_strings(value))


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def _detect_secrets() -> Callable[[str], object] | None:
    try:
        from detect_secrets.plugins.aws import AWSKeyDetector
        from detect_secrets.plugins.github_token import GitHubTokenDetector
        from detect_secrets.plugins.jwt import JwtTokenDetector
        from detect_secrets.plugins.keyword import KeywordDetector
        from detect_secrets.plugins.openai import OpenAIDetector
        from detect_secrets.plugins.private_key import PrivateKeyDetector
        from detect_secrets.plugins.slack import SlackDetector
        from detect_secrets.plugins.stripe import StripeDetector
    except ImportError:
        return None
    plugins = [AWSKeyDetector(), GitHubTokenDetector(), JwtTokenDetector(), KeywordDetector(), OpenAIDetector(),
               PrivateKeyDetector(), SlackDetector(), StripeDetector()]

    def run(text: str) -> object:
        found = []
        for n, line in enumerate(text.splitlines(), 1):
            for plugin in plugins:
                found += plugin.analyze_line(filename="memory.txt", line=line, line_number=n)
        return found

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    detect = _detect_secrets()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        conn = sqlite3.connect(Path(tmp) / "bench.sqlite3", isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("CREATE TABLE records (id INTEGER PRIMARY KEY, title TEXT, body TEXT)")
        results: dict[str, dict[str, float]] = {}
        for name, body in BODIES.items():
            samples: dict[str, list[float]] = {"scan": [], "insert": [], "detect-secrets": []}

            def insert(body: str = body) -> None:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("INSERT INTO records (title, body) VALUES (?, ?)", ("Conversation notes", body))
                conn.execute("COMMIT")

            scan("warm up", "", body, ("tag",))
            for i in range(args.iterations):
                samples["insert"].append(_timed(insert))
                samples["scan"].append(_timed(lambda: scan("Conversation notes", "", body, ("notes",))))
                if detect is not None and i < max(10, args.iterations // 10):
                    samples["detect-secrets"].append(_timed(lambda: detect(body)))
            row: dict[str, float] = {}
            for key, values in samples.items():
                if values:
                    row[f"{key}_p50_ms"] = percentile(values, 50)
                    row[f"{key}_p99_ms"] = percentile(values, 99)
            row["scan_over_insert_p50"] = row["scan_p50_ms"] / row["insert_p50_ms"]
            if "detect-secrets_p50_ms" in row:
                row["detect-secrets_over_insert_p50"] = row["detect-secrets_p50_ms"] / row["insert_p50_ms"]
            results[name] = row
        conn.close()
    for name, value in METADATA.items():
        ledger = [_timed(lambda value=value: scan_values({"metadata": value})) for _ in range(args.iterations)]
        record = [_timed(lambda value=value: _metadata_scan(value)) for _ in range(args.iterations)]
        results[f"metadata: {name}"] = {
            "scan_values_p50_ms": percentile(ledger, 50), "scan_values_p99_ms": percentile(ledger, 99),
            "record_scan_p50_ms": percentile(record, 50), "record_scan_p99_ms": percentile(record, 99),
        }
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()
        return 0
    print(f"secret scan per 64 KiB write ({args.iterations} iterations; ms, ratio to a durable SQLite insert)")
    for name, row in results.items():
        if name.startswith("metadata: "):
            print(f"  {name:32s} scan_values p50 {row['scan_values_p50_ms']:.2f} p99 {row['scan_values_p99_ms']:.2f}  "
                  f"record scan p50 {row['record_scan_p50_ms']:.2f} p99 {row['record_scan_p99_ms']:.2f}")
            continue
        line = (f"  {name:16s} scan p50 {row['scan_p50_ms']:.3f} p99 {row['scan_p99_ms']:.3f}  "
                f"insert p50 {row['insert_p50_ms']:.3f} p99 {row['insert_p99_ms']:.3f}  "
                f"scan/insert {row['scan_over_insert_p50']:.2f}x")
        if "detect-secrets_p50_ms" in row:
            line += (f"  detect-secrets p50 {row['detect-secrets_p50_ms']:.2f} "
                     f"({row['detect-secrets_over_insert_p50']:.1f}x)")
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

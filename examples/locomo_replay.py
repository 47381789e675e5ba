"""Replay the conversations of a LoCoMo JSON file you provide (the LoCoMo benchmark's format; the README
says where it comes from) through a running gateway and print recall@k.

    meta-memory serve --state-dir /tmp/locomo-state &
    python examples/locomo_replay.py locomo10.json --url http://127.0.0.1:8765 [--inject]

Same as ``meta-memory replay``; this file shows the library call.
"""

from __future__ import annotations

import argparse
import json

from meta_memory.replay import replay

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path")
    parser.add_argument("--url", default="http://127.0.0.1:8765")
    parser.add_argument("--inject", action="store_true")
    args = parser.parse_args()
    print(json.dumps(replay(args.path, args.url, inject=args.inject).to_dict(), indent=2))

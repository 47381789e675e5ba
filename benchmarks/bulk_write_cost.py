"""The work of ``meta/agent_memory/remember_batch`` per record, for an instruction counter.

Run: ``python benchmarks/bulk_write_cost.py --records 2000`` under
``valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null``, then again with
``--records 0``; the difference of the two instruction counts divided by 2,000 is the instructions per
record, a figure no other job on the machine can blur (``PYTHONHASHSEED=0`` keeps runs identical).

Both runs build the same texts and request bodies (synthetic text from ``benchmarks/recall.py``), open a
runtime on a fresh state directory and write a first call of 1,000 records through the dispatcher
(``Dispatcher.handle_bytes``: JSON decode, params, access, the store, results, JSON encode); the run
with ``--records N`` then writes N more in calls of 1,000.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from meta_memory.config import MetaConfig  # noqa: E402
from meta_memory.rpc.registry import CallContext  # noqa: E402
from meta_memory.runtime import Runtime  # noqa: E402
from meta_memory.server.gateway import Gateway  # noqa: E402
from recall import IDENTITY, Vocabulary  # noqa: E402

#: Records built by every run, so the runs differ only in the records written.
TEXTS = 3000
PER_CALL = 1000


def bodies(records: int, seed: int) -> list[bytes]:
    """The request bodies: the first call of 1,000 records, then ``records`` more, 1,000 per call."""
    vocab = Vocabulary(random.Random(seed))
    texts = [(vocab.sentence(5).capitalize(), vocab.sentence(40)) for _ in range(TEXTS)][: PER_CALL + records]
    return [json.dumps({"jsonrpc": "2.0", "id": i, "method": "meta/agent_memory/remember_batch",
                        "params": {"identity": IDENTITY,
                                   "records": [{"title": t, "body": b} for t, b in texts[first:first + PER_CALL]]}}
                       ).encode() for i, first in enumerate(range(0, len(texts), PER_CALL))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2000, help=f"records after the first call (at most {TEXTS - PER_CALL})")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    calls = bodies(min(args.records, TEXTS - PER_CALL), args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        runtime = Runtime(MetaConfig(), Path(tmp) / "state")
        gateway = Gateway.for_runtime(runtime)
        ctx = CallContext(transport="embedded")
        for body in calls:
            out = gateway.dispatcher.handle_bytes(body, ctx)
            if out is None or b'"refused":0' not in out:
                raise SystemExit(f"a call failed: {out!r:.300}")
        runtime.close()


if __name__ == "__main__":
    main()

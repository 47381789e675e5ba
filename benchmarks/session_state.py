"""Session state: cost of ``meta/session/note`` and ``meta/turn/tool_result``, and taint held at scale.

Usage::

    python benchmarks/session_state.py                      # 100,000 tainted sessions, 2,000 timed calls
    python benchmarks/session_state.py --sessions 20000 --ops 500

Runs an embedded runtime (a temporary state directory, the bundled SQLite store) through the same
method table as the gateway, so the figures exclude HTTP. Every figure is a ratio to a baseline
measured in the same run: ``meta/turn/defang`` of a short text, a call that touches no state.

1. Per-call cost, empty state: note (a new identity; the same identity hopping sessions; the
   identity's current session again, the per-turn case), tool result (trusted, in the current
   session; untrusted on a fresh session, the call that records taint).
2. Fills the state with ``--sessions`` sessions, one identity each: every ``--taint-every``-th is
   tainted through ``meta/turn/tool_result`` (an fsynced commit), the others noted through
   ``meta/session/note``.
3. Per-call cost again at that size, and whether the *first* tainted session's LLM write is still
   quarantined ("taint intact").

Prints one ``key=value`` line per figure.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from meta_memory.config import MetaConfig
from meta_memory.rpc.dispatch import Dispatcher
from meta_memory.rpc.methods import build_method_table
from meta_memory.rpc.registry import CallContext
from meta_memory.runtime import Runtime


class Bench:
    def __init__(self, state_dir: Path) -> None:
        self.rt = Runtime(MetaConfig(), state_dir, start_background=False)
        self.d = Dispatcher(build_method_table(), self.rt)
        self.ctx = CallContext(transport="embedded")
        self.n = 0

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.n += 1
        out = self.d.handle_message({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}, self.ctx)
        if "error" in out:
            raise RuntimeError(f"{method}: {out['error']}")
        return out["result"]

    def timed(self, ops: int, make: Any) -> float:
        """Median of five rounds of ``ops // 5`` calls, in microseconds per call."""
        rounds = []
        per = max(1, ops // 5)
        for r in range(5):
            calls = [make(r * per + i) for i in range(per)]
            t0 = time.perf_counter()
            for method, params in calls:
                self.call(method, params)
            rounds.append((time.perf_counter() - t0) / per * 1e6)
        return statistics.median(rounds)


def measure(b: Bench, ops: int, tag: str, run: str) -> dict[str, float]:
    base = b.timed(ops, lambda i: ("meta/turn/defang", {"text": "hello there"}))
    figures = {
        "note_new_identity": b.timed(ops, lambda i: (
            "meta/session/note", {"identity": f"{run}-{tag}-n:{i}", "session_key": "s"})),
        "note_same_identity_new_session": b.timed(ops, lambda i: (
            "meta/session/note", {"identity": f"{run}-{tag}-hop", "session_key": f"hop-{i}"})),
        "note_repeat_current_session": b.timed(ops, lambda i: (
            "meta/session/note", {"identity": f"{run}-{tag}-hop", "session_key": "hop-0"})),
        "tool_result_trusted": b.timed(ops, lambda i: (
            "meta/turn/tool_result", {"identity": f"{run}-{tag}-hop", "session_key": "calc",
                                      "tool_name": "calculator"})),
        "tool_result_untrusted_fresh_session": b.timed(ops, lambda i: (
            "meta/turn/tool_result", {"identity": f"{run}-{tag}-t:{i}", "session_key": f"t-{i}",
                                      "tool_name": "web_fetch"})),
    }
    print(f"{tag}.baseline_defang_us={base:.1f}")
    for name, us in figures.items():
        print(f"{tag}.{name}_us={us:.1f} {tag}.{name}_x_baseline={us / base:.2f}")
    return figures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=100_000)
    ap.add_argument("--ops", type=int, default=2_000)
    ap.add_argument("--taint-every", type=int, default=10)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="meta-bench-sessions-") as tmp:
        b = Bench(Path(tmp) / "state")
        try:
            measure(b, args.ops, "empty", "a")
            t0 = time.perf_counter()
            b.call("meta/agent_memory/remember", {"identity": "fill:0", "title": "fill", "body": "fill words"})
            for i in range(args.sessions):
                ident, session = f"fill:{i}", f"fill-s:{i}"
                if i % args.taint_every == 0:
                    b.call("meta/turn/tool_result", {"identity": ident, "session_key": session,
                                                     "tool_name": "web_search"})
                else:
                    b.call("meta/session/note", {"identity": ident, "session_key": session})
                if i and i % 20_000 == 0:
                    print(f"filled={i} elapsed_s={time.perf_counter() - t0:.1f}", flush=True)
            print(f"filled={args.sessions} fill_us_per_session={(time.perf_counter() - t0) / args.sessions * 1e6:.1f}")
            measure(b, args.ops, "full", "b")
            text = b.call("meta/agent_memory/tool", {"identity": "fill:0", "session_key": "fill-s:0", "arguments": {
                "action": "remember", "title": "late write", "body": "written after the fill"}})["text"]
            stats = b.rt.agent_memory.firewall.tracker.stats() if hasattr(b.rt, "agent_memory") else {}
            print(f"sessions_held={args.sessions} tainted={stats.get('tainted_sessions')} "
                  f"identities={stats.get('identities')} taint_intact_first_session={'QUARANTINED' in text}")
        finally:
            b.rt.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

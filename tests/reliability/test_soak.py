"""Bounded resources: a short soak of mixed loopback traffic shows no
growth of RSS, fds or threads after warm-up, and session state (taint, injection budgets, nonces)
driven far past its row cap fails closed instead of evicting."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from meta_memory.config import parse_config
from meta_memory.rpc.dispatch import Dispatcher
from meta_memory.rpc.methods import build_method_table
from meta_memory.rpc.registry import CallContext
from meta_memory.runtime import Runtime
from support import load_benchmark

SOAK_SECONDS = float(os.environ.get("META_SOAK_SECONDS", "24"))
#: Bounds after warm-up (the first quarter of the samples).
RSS_GROWTH_MIB, FD_GROWTH, THREAD_GROWTH = 48, 8, 8


def _soak_module():
    return load_benchmark("soak", "meta_soak")


@pytest.mark.gateway
@pytest.mark.slow
def test_short_soak_has_no_resource_growth(tmp_path: Path) -> None:
    soak = _soak_module()
    proc, url = soak.start_gateway_process(tmp_path / "state")
    try:
        res = soak.run_soak(url, proc.pid, SOAK_SECONDS, workers=3, interval=0.5)
        assert proc.poll() is None
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    g = res.growth()
    first, last = res.samples[0], res.samples[-1]
    print(f"\nsoak {SOAK_SECONDS:.0f}s: calls={res.calls} errors={len(res.errors)} fresh sessions/identities="
          f"{res.sessions} rss {first.rss_kib // 1024}->{last.rss_kib // 1024} MiB fds {first.fds}->{last.fds} "
          f"threads {first.threads}->{last.threads} growth after warm-up {g}")
    assert res.errors == []
    assert res.calls > 1000
    assert g["rss_mib"] <= RSS_GROWTH_MIB, g
    assert g["fds"] <= FD_GROWTH, g
    assert g["threads"] <= THREAD_GROWTH, g


def test_session_state_holds_taint_past_its_row_cap_and_fails_closed(tmp_path: Path) -> None:
    """Driven far past ``session_state_limit``, session state never evicts: new identities are refused
    (``session_limit``), every untrusted tool result is still recorded, the first tainted session's
    write is still quarantined, and while at the cap every LLM write quarantines."""
    limit = 300
    rt = Runtime(parse_config({"agent_memory": {"session_state_limit": limit}}), tmp_path / "state",
                 start_background=False)
    try:
        d = Dispatcher(build_method_table(), rt)
        ctx = CallContext(transport="embedded")
        rt_mem = rt.agent_memory
        assert rt_mem is not None
        refused = 0
        for i in range(3 * limit):
            ident, session = f"cap:{i}", f"cap-s:{i}"
            out = d.handle_message([
                {"jsonrpc": "2.0", "id": 1, "method": "meta/session/note",
                 "params": {"identity": ident, "session_key": session}},
                {"jsonrpc": "2.0", "id": 2, "method": "meta/turn/tool_result",
                 "params": {"identity": ident, "session_key": session, "tool_name": "web_fetch"}},
            ], ctx)
            note, verdict = sorted(out, key=lambda o: o["id"])
            if "error" in note:
                assert note["error"]["data"] == {"kind": "agent_memory", "reason": "session_limit"}, note
                refused += 1
            assert verdict["result"]["session_tainted"] is True, verdict  # taint is never refused
        stats = rt_mem.firewall.tracker.stats()
        assert refused > 0 and stats["tainted_sessions"] == 3 * limit
        for i in (0, 3 * limit - 1):
            out = d.handle_message({"jsonrpc": "2.0", "id": 9, "method": "meta/agent_memory/tool", "params": {
                "identity": f"cap:{i}", "session_key": f"cap-s:{i}",
                "arguments": {"action": "remember", "title": f"late {i}", "body": "late write"}}}, ctx)
            assert "QUARANTINED" in out["result"]["text"], out
        clean = d.handle_message({"jsonrpc": "2.0", "id": 10, "method": "meta/agent_memory/tool", "params": {
            "identity": "fresh:1", "session_key": "never-tainted",
            "arguments": {"action": "remember", "title": "clean", "body": "clean write"}}}, ctx)
        assert "QUARANTINED" in clean["result"]["text"] and "capacity" in clean["result"]["text"], clean
    finally:
        rt.close()

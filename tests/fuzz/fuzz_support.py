"""Fuzz-suite support: one long-lived gateway per module, raw HTTP posts, response-shape checks,
process health (alive, RSS, fds, threads) and the parameter table of every RPC method.

The gateway's stderr is drained by a thread into a bounded buffer: an unread pipe would fill
up with log lines and stall the server, which would be a harness artefact, not a product bug.
"""

from __future__ import annotations

import collections
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from support import GatewayProcess, start_gateway

#: Every JSON-RPC error code the product may answer with (spec README "JSON-RPC errors").
KNOWN_CODES = {-32700, -32600, -32601, -32602, -32603, -32001, -32004, -32010, -32030, -32040, -32043}


@dataclass
class Fuzzed:
    """A running gateway plus its drained stderr and a keep-alive client."""

    gw: GatewayProcess
    client: httpx.Client
    stderr_tail: collections.deque[str]
    inputs: int = 0

    @property
    def pid(self) -> int:
        return self.gw.proc.pid

    def post(self, body: bytes, headers: dict[str, str] | None = None, timeout: float = 60.0) -> httpx.Response:
        """POST raw bytes to ``/rpc`` (counts as one input tried)."""
        self.inputs += 1
        return self.client.post(self.gw.url + "/rpc", content=body,
                                headers={"content-type": "application/json", **(headers or {})}, timeout=timeout)

    def call(self, method: str, params: Any = None, *, id: Any = 1) -> dict[str, Any]:
        """One JSON-RPC call; returns the parsed response (asserting its shape)."""
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": id}
        if params is not None:
            msg["params"] = params
        resp = self.post(json.dumps(msg).encode())
        assert resp.status_code == 200, (resp.status_code, resp.content[:300])
        out = resp.json()
        check_response(out, id)
        return out

    def alive(self) -> None:
        """The process is running and answers ``/v1/health``."""
        assert self.gw.proc.poll() is None, f"gateway died: {''.join(self.stderr_tail)[-3000:]}"
        assert self.client.get(self.gw.url + "/v1/health", timeout=10).status_code == 200


#: The ``[gateway] backup_dir`` of every fuzzed gateway: ``meta/storage/backup`` is refused without one.
BACKUP_DIR = Path(tempfile.mkdtemp(prefix="meta-memory-fuzz-backups-"))


def start_fuzzed(state_dir: Path, config: Path | None = None) -> Fuzzed:
    if config is None:
        config = state_dir.parent / "fuzz.toml"
        # batches of 10,000 calls are fuzzed for their answers, not for the batch time budget
        config.write_text(f'[gateway]\nbackup_dir = "{BACKUP_DIR}"\nmax_batch_ms = 3600000\n', encoding="utf-8")
    gw = start_gateway(state_dir, config=config)  # support.start_gateway drains stdout/stderr into log_tail
    return Fuzzed(gw, httpx.Client(timeout=60), gw.proc.log_tail)  # type: ignore[attr-defined]


def proc_stats(pid: int) -> dict[str, int]:
    """``{rss_kib, threads, fds}`` of a live process, from ``/proc``."""
    status = Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return {
        "rss_kib": int(fields["VmRSS"].split()[0]),
        "threads": int(fields["Threads"].strip()),
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
    }


def check_response(out: Any, request_id: Any = ...) -> None:
    """A well-formed JSON-RPC 2.0 response object: jsonrpc, id, exactly one of result/error,
    an integer known code, a string message and ``data.kind``; ``data.field`` a string when present."""
    assert isinstance(out, dict), out
    assert out.get("jsonrpc") == "2.0", out
    assert "id" in out, out
    if request_id is not ...:
        assert out["id"] == request_id, (out, request_id)
    assert ("result" in out) != ("error" in out), out
    assert set(out) <= {"jsonrpc", "id", "result", "error"}, out
    if "error" in out:
        err = out["error"]
        assert isinstance(err.get("code"), int) and err["code"] in KNOWN_CODES, err
        assert isinstance(err.get("message"), str) and err["message"], err
        assert isinstance(err.get("data"), dict) and isinstance(err["data"].get("kind"), str), err
        if "field" in err["data"]:
            assert isinstance(err["data"]["field"], str) and err["data"]["field"], err
        assert "Traceback" not in err["message"], err


# ----------------------------------------------------------------------------- the method table
#
# Each method maps to ``{field: (types, nullable, valid_value)}``. ``types`` is a set of JSON
# kinds the field accepts ("str", "int", "bool", "obj", "list", "num"); ``nullable`` says whether
# an explicit ``null`` is accepted. A value of any other kind must be refused with -32602 naming
# the field. ``valid_value`` is used to build an otherwise valid request.

S, I, B, O, L = {"str"}, {"int"}, {"bool"}, {"obj"}, {"list"}
REQ, OPT = False, True

_REALM = (S, OPT, "fuzz")
_LIMIT = (I, OPT, 5)
METHODS: dict[str, dict[str, tuple[set[str], bool, Any]]] = {
    "meta/status": {},
    "meta/capabilities": {},
    "rpc.discover": {},
    "meta/storage/doctor": {},
    "meta/memory/stores": {},
    "meta/storage/backup": {"dest": (S, REQ, str(BACKUP_DIR / "copy"))},
    "meta/storage/export": {"export_id": (S, OPT, None), "realm": _REALM, "identity": (S, OPT, "fuzz:typed"),
                            "ledger": (B, OPT, False), "max_bytes": (I, REQ, 65536)},
    "meta/agent_memory/tool_schema": {},
    "meta/events/list": {"after": ({"str", "int"}, OPT, 0), "limit": (I, REQ, 10)},
    "meta/memory/index": {"entity": (S, REQ, "fuzz-entity"), "topic": (S, REQ, "fuzz"),
                          "store": (S, OPT, "timeline"), "fact": (S, OPT, "a fact"),
                          "metadata": (O, OPT, {"k": 1}), "conflict": (B, OPT, False),
                          "conflict_reason": (S, OPT, "why")},
    "meta/memory/resolve": {"entity": (S, REQ, "fuzz-entity"), "topic": (S, REQ, "fuzz"),
                            "store": (S, OPT, "timeline")},
    "meta/memory/query": {"entity": (S, OPT, "fuzz-entity"), "topic": (S, OPT, "fuzz"),
                          "store": (S, OPT, "timeline"), "query": (S, OPT, "fact")},
    "meta/agent_memory/remember": {"identity": (S, REQ, "fuzz:typed"), "realm": _REALM,
                                   "title": (S, REQ, "typed title"), "body": (S, REQ, "typed body"),
                                   "tags": (L, OPT, ["a"])},
    "meta/agent_memory/recall": {"identity": (S, REQ, "fuzz:typed"), "realm": _REALM,
                                 "selection": (S, OPT, "always"), "query_text": (S, OPT, "typed"),
                                 "query_terms": (L, OPT, ["typed"]), "max_entries": (I, OPT, 3)},
    "meta/agent_memory/forget": {"identity": (S, REQ, "fuzz:typed"), "realm": _REALM,
                                 "memory_id": (S, REQ, "mem-none")},
    "meta/agent_memory/update": {"identity": (S, REQ, "fuzz:typed"), "realm": _REALM,
                                 "memory_id": (S, REQ, "mem-none"), "title": (S, OPT, "t"),
                                 "body": (S, OPT, "b"), "tags": (L, OPT, ["a"])},
    "meta/agent_memory/manifest": {"identity": (S, REQ, "fuzz:typed"), "realm": _REALM,
                                   "tier": (S, OPT, "working_set"), "k": (I, OPT, 4)},
    "meta/agent_memory/list": {"identity": (S, REQ, "fuzz:typed"), "realm": _REALM, "tags": (L, OPT, ["a"]),
                               "limit": (I, OPT, 5), "cursor": (S, OPT, "AQAAAAAAAAAAbQ")},
    "meta/agent_memory/history": {"identity": (S, REQ, "fuzz:typed"), "realm": _REALM,
                                  "memory_id": (S, REQ, "mem-none")},
    "meta/agent_memory/erase": {"identity": (S, REQ, "fuzz:typed"), "realm": _REALM, "memory_id": (S, REQ, "mem-none"),
                                "dry_run": (B, OPT, True), "reason": (S, OPT, "fuzz")},
    "meta/agent_memory/erase_identity": {"identity": (S, REQ, "fuzz:erase"), "realm": _REALM,
                                         "dry_run": (B, OPT, True), "reason": (S, OPT, "fuzz")},
    "meta/agent_memory/remember_batch": {"identity": (S, REQ, "fuzz:typed"), "realm": _REALM,
                                         "records": (L, REQ, [{"title": "batch title", "body": "batch body"}])},
    "meta/agent_memory/tool": {"identity": (S, REQ, "fuzz:typed"), "realm": _REALM, "session_key": (S, OPT, "s-typed"),
                               "mob": (S, OPT, "mob:x"), "arguments": (O, REQ, {"action": "recall"})},
    "meta/session/note": {"identity": (S, REQ, "fuzz:typed"), "realm": _REALM, "session_key": (S, REQ, "s-typed")},
    "meta/session/reset": {"identity": (S, REQ, "fuzz:typed"), "realm": _REALM, "session_key": (S, OPT, "s-typed")},
    "meta/session/compacted": {"identity": (S, REQ, "fuzz:typed"), "session_key": (S, REQ, "s-typed"),
                               "realm": _REALM},
    "meta/session/retire": {"identity": (S, REQ, "fuzz:typed"), "realm": _REALM,
                            "session_key": (S, OPT, "s-typed"), "cause": (S, REQ, "done")},
    "meta/turn/tool_result": {"identity": (S, REQ, "fuzz:typed"), "realm": _REALM, "session_key": (S, REQ, "s-typed"),
                              "tool_name": (S, REQ, "calculator"), "provenance": (O, OPT, {"kind": "builtin"}),
                              "is_error": (B, REQ, False), "server_tool": (B, REQ, False)},
    "meta/turn/inject": {"identity": (S, REQ, "fuzz:typed"), "realm": _REALM, "session_key": (S, OPT, "s-typed"),
                         "query_text": (S, REQ, "typed"), "surface": (S, REQ, "turn"), "mobs": (L, REQ, []),
                         "operator": (S, OPT, None)},
    "meta/turn/defang": {"text": (S, OPT, "hello")},
    "meta/memory/quarantine/decide": {"identity": (S, REQ, "fuzz:typed"), "realm": _REALM,
                                      "memory_id": (S, REQ, "mem-none"), "verdict": (S, REQ, "release"),
                                      "expected_content_hash": (S, REQ, "0" * 64), "rationale": (S, OPT, "ok")},
    "meta/gating/decide": {"realm": _REALM, "pending_id": (S, REQ, "pend-none"), "decision": (S, REQ, "deny")},
    "meta/gating/check": {"entity": (S, REQ, "fuzz-entity"), "topic": (S, REQ, "fuzz"), "store": (S, OPT, None)},
    "meta/memory/steward/dream": {"realm": _REALM},
    "meta/memory/proposals/list": {"realm": _REALM, "status": (S, OPT, "pending"), "limit": _LIMIT},
    "meta/memory/proposals/decide": {"realm": _REALM, "proposal_id": (S, REQ, "prop-none"),
                                     "action": (S, REQ, "reject"), "rationale": (S, OPT, None)},
    "meta/memory/panel/records": {"realm": _REALM, "limit": _LIMIT, "scope": (S, OPT, "identity"),
                                  "identity": (S, OPT, "fuzz:typed"), "scope_key": (S, OPT, None),
                                  "status": (S, OPT, "active"), "cursor": (S, OPT, None)},
    "meta/memory/panel/record": {"memory_id": (S, REQ, "mem-none"), "realm": _REALM},
    "meta/memory/panel/overview": {"realm": _REALM},
    **{f"meta/memory/panel/{m}": {"realm": _REALM, "limit": _LIMIT}
       for m in ("quarantine", "dreams", "dream_runs", "audit_verdicts", "proposals", "injections", "harvests")},
}


def valid_params(method: str) -> dict[str, Any]:
    """An otherwise valid params object for ``method`` (optional fields whose sample is None left out)."""
    return {k: v for k, (_, _, v) in METHODS[method].items() if v is not None}


def kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "num"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "list"
    return "obj"

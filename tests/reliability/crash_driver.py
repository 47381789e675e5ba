"""Crash-harness driver: a mixed workload over HTTP, a journal of acknowledged writes, and the
invariants a realm database and the ledger must satisfy after any crash.

The workload talks to a real ``meta-memory serve`` subprocess. Every write carries a unique
ASCII token in its body (or fact), so a record can be found by content as well as by id.
A write is *acknowledged* when its HTTP response arrived; a write whose connection broke
(the process was killed under it) is *in doubt*: after the restart it must be either fully
present or fully absent, never half.
"""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from meta_memory.recall import fts
from meta_memory.storage.layout import encode_path_segment
from support import open_ro, realm_db  # re-exported: the harness reads realm files through them

LEDGER_FILE = "memory-ledger-state.json"
LEDGER_STAGE = "memory-ledger-state.tmp"
MOB = "mob:crash"


class Crashed(Exception):
    """The gateway went away under a call (connection refused/reset, or no response)."""


# ============================================================================ realm DB invariants


@contextmanager
def open_ro_or_empty(path: Path) -> Iterator[sqlite3.Connection]:
    """:func:`open_ro`, or an empty database with the realm schema when ``path`` does not exist
    (reads never create a realm: a gateway killed before its first write committed left no file)."""
    if path.exists():
        with open_ro(path) as conn:
            yield conn
        return
    from meta_memory.agent_memory.store.schema import migrate

    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.row_factory = sqlite3.Row
    try:
        conn.execute("BEGIN")
        migrate(conn, 0)
        conn.execute("COMMIT")
        yield conn
    finally:
        conn.close()


def check_realm_invariants(conn: sqlite3.Connection) -> list[str]:
    """Every structural invariant of one realm database; returns the violations (empty = consistent).

    - ``PRAGMA integrity_check`` is ``ok``;
    - the FTS rowids are exactly the rids of the active records, and each active record's FTS
      row holds exactly :func:`meta_memory.recall.fts.document` of it (no ghost, no missing hit);
    - each record has exactly one ``create``/``supersede`` audit row naming it;
    - a tombstoned record has exactly one ``tombstone`` audit row, any other record none;
    - a superseded record names an existing successor that ``supersedes`` it;
    - no audit row names a record that does not exist.
    """
    problems: list[str] = []
    ok = conn.execute("PRAGMA integrity_check").fetchone()[0]
    if ok != "ok":
        problems.append(f"integrity_check: {ok}")
    rows = conn.execute(
        "SELECT rid, memory_id, status_kind, status_detail, supersedes, title, description, body, tags FROM records"
    ).fetchall()
    by_id = {r["memory_id"]: r for r in rows}
    active = {r["rid"]: r for r in rows if r["status_kind"] == "active"}
    fts_rows = {r[0]: r for r in conn.execute(f"SELECT rowid, title, body, tags FROM {fts.FTS_TABLE}")}
    ghosts = sorted(set(fts_rows) - set(active))
    missing = sorted(set(active) - set(fts_rows))
    if ghosts:
        problems.append(f"FTS rows for non-active records (ghost hits): rids {ghosts[:10]}")
    if missing:
        problems.append(f"active records without an FTS row (missing hits): rids {missing[:10]}")
    for rid, rec in active.items():
        row = fts_rows.get(rid)
        if row is None:
            continue
        want = fts.document(rec["title"], rec["description"], rec["body"], json.loads(rec["tags"]))
        got = {"title": row[1], "body": row[2], "tags": row[3]}
        if got != want:
            problems.append(f"FTS row of rid {rid} does not match its record")
    creates: dict[str, int] = {}
    tombs: dict[str, int] = {}
    for a in conn.execute("SELECT op_kind, memory_id FROM audit"):
        mid = a["memory_id"]
        if mid is None:
            continue
        if mid not in by_id:
            problems.append(f"audit row ({a['op_kind']}) names missing record {mid}")
        if a["op_kind"] in ("create", "supersede"):
            creates[mid] = creates.get(mid, 0) + 1
        elif a["op_kind"] == "tombstone":
            tombs[mid] = tombs.get(mid, 0) + 1
    for mid, r in by_id.items():
        if creates.get(mid, 0) != 1:
            problems.append(f"record {mid} has {creates.get(mid, 0)} create/supersede audit rows (want 1)")
        want_tomb = 1 if r["status_kind"] == "tombstoned" else 0
        if tombs.get(mid, 0) != want_tomb:
            problems.append(f"record {mid} ({r['status_kind']}) has {tombs.get(mid, 0)} tombstone audit rows")
        if r["status_kind"] == "superseded":
            succ = by_id.get(r["status_detail"] or "")
            if succ is None or succ["supersedes"] != mid:
                problems.append(f"superseded record {mid} has no successor that supersedes it")
    return problems


def rids_matching(conn: sqlite3.Connection, token: str) -> list[int]:
    """FTS rowids whose document contains ``token`` (the query goes through the product's quoting)."""
    expr = fts.match_expression(token)
    assert expr is not None, token
    return [r[0] for r in conn.execute(f"SELECT rowid FROM {fts.FTS_TABLE} WHERE {fts.FTS_TABLE} MATCH ?", (expr,))]


# ============================================================================ the journal


@dataclass
class Rec:
    """One record the workload knows about. ``status`` is the expected status, ``None`` = in doubt."""

    memory_id: str
    realm: str
    identity: str
    token: str
    status: str | None
    title: str = ""
    session: str | None = None


@dataclass
class Journal:
    """What the workload was told (acknowledged) and what is in doubt."""

    records: dict[str, Rec] = field(default_factory=dict)
    pending_tokens: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # token -> (op, realm, identity)
    ledger: dict[str, str] = field(default_factory=dict)  # entity -> fact (acknowledged)
    ledger_doubt: dict[str, str] = field(default_factory=dict)
    proposals: dict[str, str] = field(default_factory=dict)  # proposal id -> token
    proposal_doubt: set[str] = field(default_factory=set)  # tokens
    imports: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # realm -> [(memory_id, token)]
    acked: dict[str, int] = field(default_factory=dict)
    doubted: dict[str, int] = field(default_factory=dict)
    lost: list[str] = field(default_factory=list)

    def ack(self, op: str) -> None:
        self.acked[op] = self.acked.get(op, 0) + 1

    def doubt(self, op: str) -> None:
        self.doubted[op] = self.doubted.get(op, 0) + 1


def _memory_id_of(text: str) -> str:
    return text.split("memory ", 1)[1].split(" ", 1)[0].rstrip(".")


# ============================================================================ the workload


class Workload:
    """Drives mixed writes against ``url`` until the connection breaks (or ``max_ops``)."""

    OPS = ("remember", "remember", "update", "forget", "tool_tainted", "tool_clean", "decide", "propose",
           "ledger", "import")

    def __init__(self, journal: Journal, state_dir: Path, rng: random.Random, run: int) -> None:
        self.j = journal
        self.state_dir = state_dir
        self.rng = rng
        self.run = run
        self.seq = 0
        self.client: httpx.Client | None = None
        self.url = ""

    # -- transport -------------------------------------------------------------------------
    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.client is not None
        self.seq += 1
        try:
            resp = self.client.post(self.url, json={"jsonrpc": "2.0", "method": method, "params": params, "id": self.seq})
            body = resp.json()
        except (httpx.TransportError, ValueError) as exc:
            raise Crashed(str(exc)) from None
        if "error" in body:
            raise AssertionError(f"{method} refused: {body['error']}")
        return body["result"]

    def token(self) -> str:
        self.seq += 1
        return f"tok{self.run}x{self.seq}z{self.rng.randrange(16**6):06x}"

    # -- one run -----------------------------------------------------------------------------
    def drive(self, url: str, max_ops: int = 10_000) -> int:
        """Issue operations until the gateway dies; returns the number acknowledged in this run."""
        self.url = url + "/rpc"
        done = 0
        with httpx.Client(timeout=10) as client:
            self.client = client
            try:
                self.taint_session()
                for _ in range(max_ops):
                    getattr(self, "op_" + self.rng.choice(self.OPS))()
                    done += 1
            except Crashed:
                pass
            finally:
                self.client = None
        return done

    def taint_session(self) -> None:
        """Taint is in memory: after every restart the tainted identity reads web content again."""
        self.call("meta/session/note", {"identity": "agent:tainted", "session_key": f"sess-t{self.run}"})
        self.call("meta/turn/tool_result", {"identity": "agent:tainted", "session_key": f"sess-t{self.run}",
                                            "tool_name": "web_fetch"})

    def _pick(self, status: str, identity_prefix: str | None = None) -> Rec | None:
        pool = [r for r in self.j.records.values() if r.status == status and r.realm == "default"
                and (identity_prefix is None or r.identity.startswith(identity_prefix))]
        return self.rng.choice(pool) if pool else None

    def op_remember(self) -> None:
        ident = f"app:{self.rng.randrange(4)}"
        tok = self.token()
        self.j.pending_tokens[tok] = ("remember", "default", ident)
        try:
            out = self.call("meta/agent_memory/remember",
                            {"identity": ident, "title": f"note {tok}", "body": f"body {tok} end"})
        except Crashed:
            self.j.doubt("remember")
            raise
        del self.j.pending_tokens[tok]
        self.j.records[out["memory_id"]] = Rec(out["memory_id"], "default", ident, tok, "active", f"note {tok}")
        self.j.ack("remember")

    def op_update(self) -> None:
        prior = self._pick("active", "app:")
        if prior is None:
            return self.op_remember()
        tok = self.token()
        self.j.pending_tokens[tok] = ("update", "default", prior.identity)
        prior.status = None
        try:
            out = self.call("meta/agent_memory/update", {"identity": prior.identity, "memory_id": prior.memory_id,
                                                         "title": f"note {tok}", "body": f"body {tok} updated"})
        except Crashed:
            self.j.doubt("update")
            raise
        del self.j.pending_tokens[tok]
        prior.status = "superseded"
        self.j.records[out["memory_id"]] = Rec(out["memory_id"], "default", prior.identity, tok, "active")
        self.j.ack("update")

    def op_forget(self) -> None:
        rec = self._pick("active", "app:")
        if rec is None:
            return self.op_remember()
        rec.status = None
        try:
            out = self.call("meta/agent_memory/forget", {"identity": rec.identity, "memory_id": rec.memory_id})
        except Crashed:
            self.j.doubt("forget")
            raise
        assert out["deleted"] is True, out
        rec.status = "tombstoned"
        self.j.ack("forget")

    def _tool_remember(self, identity: str, session: str, expect: str, op: str) -> None:
        tok = self.token()
        self.j.pending_tokens[tok] = (op, "default", identity)
        try:
            out = self.call("meta/agent_memory/tool", {"identity": identity, "session_key": session, "arguments": {
                "action": "remember", "title": f"tool {tok}", "body": f"seen {tok} on the web"}})
        except Crashed:
            self.j.doubt(op)
            raise
        assert out["is_error"] is False, out
        del self.j.pending_tokens[tok]
        mid = _memory_id_of(out["text"])
        assert ("QUARANTINED" in out["text"]) == (expect == "quarantined"), out
        self.j.records[mid] = Rec(mid, "default", identity, tok, expect, session=session)
        self.j.ack(op)

    def op_tool_tainted(self) -> None:
        self._tool_remember("agent:tainted", f"sess-t{self.run}", "quarantined", "tool_tainted")

    def op_tool_clean(self) -> None:
        self._tool_remember("agent:clean", "sess-clean", "active", "tool_clean")

    def op_decide(self) -> None:
        rec = self._pick("quarantined")
        if rec is None:
            return self.op_tool_tainted()
        detail = self.call("meta/memory/panel/record", {"memory_id": rec.memory_id})
        verdict = self.rng.choice(("release", "tombstone"))
        rec.status = None
        try:
            out = self.call("meta/memory/quarantine/decide", {
                "identity": rec.identity, "memory_id": rec.memory_id, "verdict": verdict,
                "expected_content_hash": detail["record"]["content_hash"]})
        except Crashed:
            self.j.doubt("decide_" + verdict)
            raise
        rec.status = "tombstoned"
        if verdict == "release":
            succ = out["successor"]["memory_id"]
            self.j.records[succ] = Rec(succ, "default", rec.identity, rec.token, "active")
        self.j.ack("decide_" + verdict)

    def op_propose(self) -> None:
        tok = self.token()
        self.j.proposal_doubt.add(tok)
        try:
            out = self.call("meta/agent_memory/tool", {"identity": "agent:clean", "session_key": "sess-clean",
                                                       "mob": MOB, "arguments": {"action": "propose_to_mob",
                                                                                 "title": f"prop {tok}",
                                                                                 "body": f"shared {tok} fact"}})
        except Crashed:
            self.j.doubt("propose")
            raise
        assert out["is_error"] is False, out
        self.j.proposal_doubt.discard(tok)
        pid = out["text"].split(" as ", 1)[1].split(".", 1)[0]
        self.j.proposals[pid] = tok
        self.j.ack("propose")

    def op_ledger(self) -> None:
        entity = f"ent{self.token()}"
        fact = f"fact of {entity}"
        self.j.ledger_doubt[entity] = fact
        try:
            out = self.call("meta/memory/index", {"entity": entity, "topic": "crash", "fact": fact})
        except Crashed:
            self.j.doubt("ledger_index")
            raise
        assert out["entity"] == entity, out
        del self.j.ledger_doubt[entity]
        self.j.ledger[entity] = fact
        self.j.ack("ledger_index")

    def op_import(self) -> None:
        """Drop a legacy markdown file for a new realm, then touch the realm (its first open imports it)."""
        realm = f"imported-{self.run}-{self.seq}"
        ident = "agent:legacy"
        recs = [(f"md-{realm}-{i}", self.token()) for i in range(2)]
        folder = self.state_dir / "agent-memory" / encode_path_segment(realm)
        folder.mkdir(parents=True, exist_ok=True)
        text = "".join(
            f"## legacy {tok}\n<!-- mobkit-agent-memory {json.dumps({'memory_id': mid, 'tags': ['legacy'], 'created_at_ms': 1000, 'updated_at_ms': 2000})} -->\n"
            f"imported {tok} body\n<!-- /mobkit-agent-memory -->\n\n"
            for mid, tok in recs)
        path = folder / f"{encode_path_segment(ident)}.md"
        path.write_text(text, encoding="utf-8")
        self.j.imports[realm] = recs  # the file is on disk: it must be imported exactly once, sooner or later
        try:
            out = self.call("meta/agent_memory/manifest", {"identity": ident, "realm": realm, "tier": "full"})
        except Crashed:
            self.j.doubt("import")
            raise
        assert sorted(r["id"] for r in out["records"]) == sorted(mid for mid, _ in recs), out
        self.j.ack("import")


# ============================================================================ after a restart


def verify_after_restart(j: Journal, state_dir: Path, url: str) -> dict[str, int]:
    """Resolve every in-doubt write against the restarted state and check every invariant.

    Raises ``AssertionError`` naming the first violations. Returns counts of what was checked.
    """
    problems: list[str] = []
    with httpx.Client(timeout=30) as client:
        def rpc(method: str, params: dict[str, Any]) -> Any:
            body = client.post(url + "/rpc", json={"jsonrpc": "2.0", "method": method, "params": params, "id": 1}).json()
            assert "error" not in body, (method, params, body)
            return body["result"]

        # Touch every imported realm (an in-doubt import completes on open), then every DB is checked.
        # (A realm is opened lazily: a DB file killed before its first migration committed is empty
        # until the next open migrates it, so "default" is touched too; a realm nobody wrote to has
        # no file at all.)
        rpc("meta/agent_memory/manifest", {"identity": "app:0", "tier": "full"})
        for realm in j.imports:
            rpc("meta/agent_memory/manifest", {"identity": "agent:legacy", "realm": realm, "tier": "full"})
        realms = ["default", *j.imports]
        for realm in realms:
            path = realm_db(state_dir, realm)
            if not path.exists():
                if realm != "default":  # a legacy import is opened (and created) at first access
                    problems.append(f"realm DB {path.name} missing")
                continue  # "default" is created by its first write only; lost writes are caught below
            with open_ro(path) as conn:
                try:
                    problems += [f"{realm}: {p}" for p in check_realm_invariants(conn)]
                except sqlite3.Error as exc:
                    problems.append(f"{realm}: {exc}")

        with open_ro_or_empty(realm_db(state_dir, "default")) as conn:
            rows = {r["memory_id"]: r for r in conn.execute("SELECT * FROM records")}
            by_body = lambda tok: [r for r in rows.values() if tok in r["body"]]  # noqa: E731
            # In-doubt writes: all or nothing, then adopted into the journal.
            for tok, (op, realm, ident) in list(j.pending_tokens.items()):
                found = by_body(tok)
                if len(found) > 1:
                    problems.append(f"in-doubt {op} {tok} present {len(found)} times")
                for r in found:
                    j.records[r["memory_id"]] = Rec(r["memory_id"], realm, ident, tok, r["status_kind"])
                    if op == "update":  # its prior must be superseded by it
                        prior = rows.get(r["supersedes"] or "")
                        if prior is None or prior["status_kind"] != "superseded":
                            problems.append(f"in-doubt update {tok}: prior not superseded")
                del j.pending_tokens[tok]
            for rec in list(j.records.values()):
                row = rows.get(rec.memory_id)
                if row is None:
                    problems.append(f"acknowledged record {rec.memory_id} ({rec.token}) is lost")
                    j.lost.append(rec.memory_id)
                    continue
                if rec.status is None:  # an in-doubt forget/update/decide: either outcome, adopt it
                    rec.status = row["status_kind"]
                    if rec.status == "tombstoned" and rec.identity == "agent:tainted":
                        succ = rows.get(rec.memory_id + "-released")
                        if succ is not None:
                            j.records.setdefault(succ["memory_id"], Rec(succ["memory_id"], "default", rec.identity,
                                                                         rec.token, succ["status_kind"]))
                elif row["status_kind"] != rec.status:
                    problems.append(f"record {rec.memory_id}: status {row['status_kind']}, acknowledged {rec.status}")
            # Exactly once by content; findable by token iff active.
            for rec in list(j.records.values()):
                if rec.status in ("active", "quarantined"):
                    live = [r for r in by_body(rec.token) if r["status_kind"] in ("active", "quarantined")]
                    if len(live) != 1:
                        problems.append(f"token {rec.token} live in {len(live)} records (want 1)")
                row = rows.get(rec.memory_id)
                if row is None:
                    continue
                # (a released successor carries its origin's content: the token's hits are its active rows)
                hits = rids_matching(conn, rec.token)
                want = sorted(r["rid"] for r in by_body(rec.token) if r["status_kind"] == "active")
                if sorted(hits) != want:
                    problems.append(f"FTS hits for {rec.token} are {hits}, want {want} ({row['status_kind']})")
                if row["status_kind"] == "active" and row["rid"] not in hits:
                    problems.append(f"active record {rec.memory_id} not findable by {rec.token}")
            props = {r["proposal_id"]: r["record"] for r in conn.execute("SELECT proposal_id, record FROM proposals")}
        for pid, tok in j.proposals.items():
            if pid not in props or tok not in props[pid]:
                problems.append(f"acknowledged proposal {pid} lost")
                j.lost.append(pid)
        for tok in list(j.proposal_doubt):
            n = sum(tok in rec for rec in props.values())
            if n > 1:
                problems.append(f"in-doubt proposal {tok} present {n} times")
            j.proposal_doubt.discard(tok)

        # Imports: every dropped file imported exactly once (ids unique, body present), file renamed.
        for realm, recs in j.imports.items():
            with open_ro(realm_db(state_dir, realm)) as conn:
                for mid, tok in recs:
                    n = conn.execute("SELECT COUNT(*) FROM records WHERE body LIKE ? AND status_kind = 'active'",
                                     (f"%{tok}%",)).fetchone()[0]
                    exists = conn.execute("SELECT 1 FROM records WHERE memory_id = ?", (mid,)).fetchone()
                    if n != 1 or exists is None:
                        problems.append(f"imported record {mid} present {n} times")
            folder = state_dir / "agent-memory" / encode_path_segment(realm)
            if list(folder.glob("*.md")):
                problems.append(f"markdown file in {folder.name} was not marked imported")

        # Ledger: the committed file loads; each acknowledged index exactly once; in-doubt at most once.
        ledger_file = state_dir / LEDGER_FILE  # absent until the first index commits
        assertions = json.loads(ledger_file.read_text("utf-8"))["assertions"] if ledger_file.exists() else []
        per_entity: dict[str, int] = {}
        for a in assertions:
            per_entity[a["entity"]] = per_entity.get(a["entity"], 0) + 1
        for entity, fact in j.ledger.items():
            got = rpc("meta/memory/query", {"entity": entity})["assertions"]
            if len(got) != 1 or got[0]["fact"] != fact or per_entity.get(entity) != 1:
                problems.append(f"acknowledged ledger entry {entity} present {len(got)} times")
                j.lost.append(entity)
        for entity, fact in list(j.ledger_doubt.items()):
            if per_entity.get(entity, 0) > 1:
                problems.append(f"in-doubt ledger entry {entity} present {per_entity[entity]} times")
            if per_entity.get(entity):
                j.ledger[entity] = fact
            del j.ledger_doubt[entity]
    assert not problems, "\n".join(problems[:20])
    return {"records": len(j.records), "ledger": len(j.ledger), "proposals": len(j.proposals),
            "imports": sum(len(v) for v in j.imports.values())}

"""Injection-proof storage: realm, identity, entity, topic, tag, cursor
and filter values that look like SQL, JSON paths, LIKE patterns, FTS syntax or paths are stored and
matched literally; names differing only by case or Unicode form stay distinct; realm names never
escape ``<state-dir>/agent-memory/``."""

from __future__ import annotations

import itertools
import os
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from meta_memory.ledger.normalise import canonical_token
from support import GatewayProcess, start_gateway

pytestmark = pytest.mark.gateway

HOSTILE = [
    "x') OR 1=1--", "x\" OR \"1\"=\"1", "$.a\"", "a'b", "'; DROP TABLE records; --", "%", "_", "%%", "a%b", "a_b",
    "..", ".", "/", "\\", "../../etc/passwd", "a/b", "..\\..\\x", "~", "*", "NEAR(a b)", "a AND b", "-x", "a:b",
    "default", "Default", "DEFAULT", "é", "e\u0301", "ﬁ", "fi", "İ", "i̇",
]

#: The hostile values a realm or identity may be: all but those not in Unicode NFC form, which a name may not be
#: (``"e\u0301"``: refused, so that it cannot open a second scope that displays as ``"é"``).
NAMES = [v for v in HOSTILE if unicodedata.is_normalized("NFC", v)]
NOT_NFC = [v for v in HOSTILE if v not in NAMES]


class Client:
    def __init__(self, gw: GatewayProcess) -> None:
        self.gw = gw
        self.http = httpx.Client(timeout=30)
        self.ids = itertools.count(1)

    def rpc(self, method: str, params: Any) -> dict[str, Any]:
        return self.http.post(self.gw.url + "/rpc", json={"jsonrpc": "2.0", "id": next(self.ids), "method": method,
                                                          "params": params}).json()

    def ok(self, method: str, params: Any) -> Any:
        out = self.rpc(method, params)
        assert "error" not in out, (method, params, out)
        return out["result"]


@pytest.fixture(scope="module")
def c(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    gw = start_gateway(tmp_path_factory.mktemp("literal") / "state")
    client = Client(gw)
    yield client
    client.http.close()
    gw.stop()


def _files_under(root: Path) -> list[Path]:
    return [Path(d) / f for d, _, files in os.walk(root) for f in files]


def test_hostile_realm_names_are_separate_literal_realms_inside_the_root(c: Client) -> None:
    written: dict[str, str] = {}
    assert NOT_NFC == ["e\u0301"]
    for realm in NOT_NFC:
        out = c.rpc("meta/agent_memory/remember", {"identity": "lit:realm", "realm": realm, "title": "t", "body": "b"})
        assert out["error"]["data"] == {"kind": "invalid_params", "field": "realm"}, out
    for i, realm in enumerate(NAMES):
        out = c.ok("meta/agent_memory/remember", {"identity": "lit:realm", "realm": realm, "title": f"realm {i}",
                                                  "body": f"realmbody{i} marker"})
        written[realm] = out["memory_id"]
    for realm, mid in written.items():
        got = c.ok("meta/agent_memory/recall", {"identity": "lit:realm", "realm": realm, "selection": "always"})
        assert [r["memory_id"] for r in got["records"]] == [mid], realm
    state = c.gw.state_dir.resolve()
    root = state / "agent-memory"
    dbs = [p for p in root.iterdir() if p.name.endswith(".sqlite3")]
    assert len(dbs) == len(set(NAMES))  # one file per distinct realm: case and compatibility forms are not folded
    for path in _files_under(state):
        real = Path(os.path.realpath(path))
        assert real.is_relative_to(state), path
        if real.is_relative_to(root):
            assert real.parent == root, f"a realm created a sub-directory: {path}"
    assert not (state.parent / "etc").exists() and not Path("/etc/passwd.sqlite3").exists()


def test_hostile_identities_are_distinct_scopes(c: Client) -> None:
    mids = {}
    for ident in NOT_NFC:
        out = c.rpc("meta/agent_memory/remember", {"identity": ident, "title": "t", "body": "b"})
        assert out["error"]["data"] == {"kind": "invalid_params", "field": "identity"}, out
    for i, ident in enumerate(NAMES):
        mids[ident] = c.ok("meta/agent_memory/remember", {"identity": ident, "title": f"ident {i}",
                                                          "body": f"identbody{i} marker"})["memory_id"]
    for ident, mid in mids.items():
        got = c.ok("meta/agent_memory/manifest", {"identity": ident, "tier": "full"})
        assert [r["id"] for r in got["records"]] == [mid], ident
        rec = c.ok("meta/memory/panel/record", {"memory_id": mid})["record"]
        assert rec["scope"]["identity"] == ident


def test_hostile_entities_topics_and_substring_queries_match_literally(c: Client) -> None:
    for value in NOT_NFC:  # a second spelling of a name shown alike: refused, as a realm or identity is
        out = c.rpc("meta/memory/index", {"entity": value, "topic": "t", "fact": "never kept"})
        assert out["error"]["data"] == {"kind": "invalid_params", "field": "entity"}, out
    for i, value in enumerate(NAMES):
        c.ok("meta/memory/index", {"entity": value, "topic": value, "fact": f"fact {i} {value}"})
    # Ledger names are canonical tokens (trimmed, ASCII-lowercased: seed "Indexing"), so "Default" and
    # "default" name one entity; anything else, including Unicode forms, is matched exactly.
    for value in NAMES:
        key = canonical_token(value)
        same = [v for v in NAMES if canonical_token(v) == key]
        got = c.ok("meta/memory/query", {"entity": value})["assertions"]
        assert {a["entity"] for a in got} == {key}, value
        assert sorted(a["fact"] for a in got) == sorted(f"fact {NAMES.index(v)} {v}" for v in same), value
    assert c.ok("meta/memory/query", {"query": "never kept"})["assertions"] == []
    assert canonical_token("é") != canonical_token("e\u0301") and canonical_token("İ") != canonical_token("i̇")
    # ``query`` is a literal, case-insensitive substring: ``%`` and ``_`` are not wildcards.
    for needle in ("%", "_", "'", "$.a\""):
        got = c.ok("meta/memory/query", {"query": needle})["assertions"]
        assert got and all(needle.casefold() in (a["entity"] + a["topic"] + a["fact"]).casefold() for a in got)
    assert c.ok("meta/memory/query", {"query": "1=1--' OR"})["assertions"] == []


def test_hostile_tags_and_query_text_are_literal(c: Client) -> None:
    tags = ["x') or 1=1--", "%", "_", "$.a\"", "a'b", "near(a b)"]
    out = c.ok("meta/agent_memory/remember", {"identity": "lit:tags", "title": "tagged", "body": "tagbody",
                                              "tags": tags})
    rec = c.ok("meta/memory/panel/record", {"memory_id": out["memory_id"]})["record"]
    assert rec["tags"] == sorted(tags)
    other = c.ok("meta/agent_memory/remember", {"identity": "lit:tags", "title": "plain", "body": "nothing special"})
    for q in HOSTILE + ['"', '" OR "', "*", "tagbody OR", "a NOT b", "title:plain"]:
        got = c.ok("meta/agent_memory/recall", {"identity": "lit:tags", "query_text": q})
        assert other["memory_id"] not in [r["memory_id"] for r in got["records"]] or "plain" in q.lower(), q


def test_hostile_cursor_and_filter_values_are_literal(c: Client) -> None:
    ident = "lit:panel"
    ids = [c.ok("meta/agent_memory/remember", {"identity": ident, "title": f"p{i}", "body": f"panelbody{i}"})["memory_id"]
           for i in range(3)]
    page = c.ok("meta/memory/panel/records", {"identity": ident})["records"]
    assert {r["id"] for r in page} == set(ids)
    for key in ("lit:panel' OR 1=1--", "lit:%", "lit:pane_", "%panel", "LIT:PANEL"):
        assert c.ok("meta/memory/panel/records", {"scope": "identity", "scope_key": key})["records"] == [], key
    for cursor in ("x') OR 1=1--", "%", "1:", ":x", "$.a\"", "../..", "1:%:%"):
        out = c.rpc("meta/memory/panel/records", {"identity": ident, "cursor": cursor})
        if "error" in out:
            assert out["error"]["code"] == -32602 and out["error"]["data"]["field"] == "cursor", (cursor, out)
    # A well-formed cursor whose id part is hostile is an ordinary keyset bound, not SQL.
    got = c.ok("meta/memory/panel/records", {"identity": ident, "cursor": "0:x') OR 1=1--"})["records"]
    assert got == []
    for status in ("active' OR '1'='1", "%", "_"):
        err = c.rpc("meta/memory/panel/records", {"status": status})["error"]
        assert err["code"] == -32602 and err["data"]["field"] == "status"

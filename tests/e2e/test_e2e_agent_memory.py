"""Agent memory over a real socket: recall inputs, Unicode, isolation, concurrency, dedup,
forget, app writes, identity and parameter refusals."""

from __future__ import annotations

import unicodedata
from concurrent.futures import ThreadPoolExecutor

import pytest

from e2e_support import Rpc, uid

HOSTILE_QUERIES = ["multi-agent", "don't", '"', "a:b", "(", "*", "NEAR", "AND", "-x"]


@pytest.fixture(scope="module")
def hostile(rpc: Rpc) -> tuple[str, dict[str, str]]:
    """An identity whose records each answer one of the FTS-hostile spellings."""
    ident = uid()
    ids = {
        "multi": rpc.remember(ident, "Multi-agent runtime", "the multi-agent runtime shares one scope")["memory_id"],
        "dont": rpc.remember(ident, "Reminder", "don't deploy on fridays")["memory_id"],
        "near": rpc.remember(ident, "Office", "the printer is near the window")["memory_id"],
        "colon": rpc.remember(ident, "Ports", "the mapping reads host:guest for every container")["memory_id"],
    }
    return ident, ids


@pytest.mark.parametrize("query", HOSTILE_QUERIES)
def test_hostile_query_text_never_raises_and_never_returns_the_whole_realm(rpc: Rpc, hostile, query: str) -> None:
    ident, ids = hostile
    out = rpc.recall(ident, query)
    assert set(r["memory_id"] for r in out["records"]) < set(ids.values())
    assert out["records"] or out["skip_reason"] in (None, "no_query_terms")


@pytest.mark.parametrize("query", HOSTILE_QUERIES)
def test_hostile_query_terms_never_raise(rpc: Rpc, hostile, query: str) -> None:
    ident, ids = hostile
    out = rpc.result("meta/agent_memory/recall", {"identity": ident, "query_terms": [query]})
    assert set(r["memory_id"] for r in out["records"]) < set(ids.values())


def test_hostile_spellings_find_the_record_that_holds_them(rpc: Rpc, hostile) -> None:
    ident, ids = hostile
    assert rpc.recall_ids(ident, "multi-agent")[0] == ids["multi"]
    assert rpc.recall_ids(ident, "don't deploy")[0] == ids["dont"]
    assert rpc.recall_ids(ident, "NEAR") == [ids["near"]]
    assert rpc.recall_ids(ident, "host:guest") == [ids["colon"]]
    assert rpc.recall_ids(ident, '"printer') == [ids["near"]]
    assert rpc.recall_ids(ident, "(printer*") == [ids["near"]]
    assert rpc.recall_ids(ident, "-printer") == [ids["near"]]
    assert rpc.recall_ids(ident, "printer AND NOT window OR") == [ids["near"]]


@pytest.mark.parametrize("query", ["where did I put the", "the and for with", "AND", "a:b", "-x"])
def test_stopword_or_short_only_query_returns_nothing_and_says_why(rpc: Rpc, hostile, query: str) -> None:
    ident, _ = hostile
    out = rpc.recall(ident, query)
    assert out == {"records": [], "skip_reason": "no_query_terms"}


@pytest.mark.parametrize("query", ["   ", "\t\n ", "\u3000"])
def test_whitespace_query_returns_no_records_and_says_why(rpc: Rpc, hostile, query: str) -> None:
    ident, _ = hostile
    body = rpc.rpc("meta/agent_memory/recall", {"identity": ident, "query_text": query})
    if "error" in body:  # refused as a parameter: names the field and the rule
        assert body["error"]["code"] == -32602
        assert body["error"]["data"]["field"] == "query_text"
        assert "non-empty" in body["error"]["message"]
    else:
        assert body["result"]["records"] == [] and body["result"]["skip_reason"]


def test_always_selection_lists_newest_without_a_query(rpc: Rpc) -> None:
    ident = uid()
    first = rpc.remember(ident, "First", "one")["memory_id"]
    second = rpc.remember(ident, "Second", "two")["memory_id"]
    assert rpc.recall_ids(ident, selection="always") == [second, first]
    assert rpc.recall_ids(ident, selection="always", max_entries=1) == [second]


def test_cafe_in_nfc_is_found_by_nfd_and_fullwidth(rpc: Rpc) -> None:
    ident = uid()
    nfc = unicodedata.normalize("NFC", "café")
    mid = rpc.remember(ident, "Breakfast", f"we met at the {nfc} on the corner")["memory_id"]
    nfd = unicodedata.normalize("NFD", "café")
    assert nfd != nfc
    for spelling in (nfc, nfd, "ｃａｆé", "CAFÉ"):
        assert rpc.recall_ids(ident, spelling) == [mid], spelling


def test_chinese_sentence_found_by_a_two_character_word(rpc: Rpc) -> None:
    ident = uid()
    mid = rpc.remember(ident, "饮料", "我喜欢喝绿茶")["memory_id"]
    rpc.remember(ident, "天气", "今天下雨")
    assert rpc.recall_ids(ident, "绿茶") == [mid]


def test_strasse_finds_strasse_with_eszett(rpc: Rpc) -> None:
    ident = uid()
    mid = rpc.remember(ident, "Address", "she lives on the straße by the river")["memory_id"]
    assert rpc.recall_ids(ident, "STRASSE") == [mid]
    assert rpc.recall_ids(ident, "Straße") == [mid]


NAMES = ["john_doe", "john-doe", "acme", "acme-corp", "a%"]


def test_identities_with_lookalike_names_never_see_each_other(rpc: Rpc) -> None:
    ids = {n: rpc.remember(n, "Plan", f"the quokka plan of {n}")["memory_id"] for n in NAMES}
    for n in NAMES:
        assert rpc.recall_ids(n, "quokka plan") == [ids[n]]
        assert rpc.manifest_ids(n) == [ids[n]]


def test_realms_with_lookalike_names_never_see_each_other(rpc: Rpc) -> None:
    ident = uid()
    ids = {n: rpc.remember(ident, "Plan", f"the wombat plan of realm {n}", realm=n)["memory_id"] for n in NAMES}
    for n in NAMES:
        assert rpc.recall_ids(ident, "wombat plan", realm=n) == [ids[n]]
    assert rpc.recall_ids(ident, "wombat plan") == []  # the default realm holds none
    assert len({rpc.realm_db_path(n) for n in NAMES}) == len(NAMES)
    assert all(rpc.realm_db_path(n).exists() for n in NAMES)


def test_seven_parallel_remembers_all_land(rpc: Rpc) -> None:
    ident = uid()

    def write(i: int) -> str:
        return rpc.remember(ident, f"Parallel {i}", f"parallel write number {i} of the okapi batch")["memory_id"]

    with ThreadPoolExecutor(max_workers=7) as pool:
        ids = list(pool.map(write, range(7)))
    assert len(set(ids)) == 7
    assert set(rpc.recall_ids(ident, "okapi batch", max_entries=64)) == set(ids)
    assert set(rpc.manifest_ids(ident)) == set(ids)


def test_exact_content_dedup_returns_the_first_record(rpc: Rpc) -> None:
    ident = uid()
    first = rpc.remember(ident, "Tea", "likes green tea")
    again = rpc.remember(ident, "Tea", "likes green tea")
    other = rpc.remember(ident, "Tea", "likes black tea")
    assert first["created"] is True and again["created"] is False
    assert again["memory_id"] == first["memory_id"]
    assert other["memory_id"] != first["memory_id"]
    with rpc.db() as conn:
        n = conn.execute("SELECT count(*) FROM records WHERE scope_key = ? AND status_kind = 'active'", (ident,)).fetchone()[0]
    assert n == 2


def test_forget_removes_the_record_from_recall_injection_and_manifest_at_once(rpc: Rpc) -> None:
    ident = uid()
    mid = rpc.remember(ident, "Locker code", "the gym locker is number 4711 near the sauna")["memory_id"]
    keep = rpc.remember(ident, "Gym", "the gym opens at six near the station")["memory_id"]
    session = uid("sess")
    assert mid in rpc.recall_ids(ident, "gym locker sauna")
    assert mid in rpc.inject(ident, "gym locker sauna")["included_ids"]
    assert rpc.result("meta/agent_memory/forget", {"identity": ident, "memory_id": mid}) == {"memory_id": mid, "deleted": True}
    assert mid not in rpc.recall_ids(ident, "gym locker sauna")
    assert mid not in rpc.recall_ids(ident, selection="always")
    assert mid not in rpc.manifest_ids(ident)
    out = rpc.inject(ident, "gym locker sauna", session)
    assert mid not in out["included_ids"] and keep in out["included_ids"]
    # the forgotten body's words (not "4711" alone: the block's random marker nonce may hold those digits)
    assert "number 4711" not in (out["text"] or "")
    build = rpc.inject(ident, "gym locker sauna", surface="build")
    assert "number 4711" not in (build["text"] or "") and mid not in (build["text"] or "")
    # forgetting again, or another identity's record, deletes nothing
    assert rpc.result("meta/agent_memory/forget", {"identity": ident, "memory_id": mid})["deleted"] is False
    assert rpc.result("meta/agent_memory/forget", {"identity": uid(), "memory_id": keep})["deleted"] is False
    assert keep in rpc.recall_ids(ident, "gym station")
    # the store keeps the tombstone
    assert rpc.record_row(mid)["status_kind"] == "tombstoned"


def test_app_writes_are_never_quarantined_even_from_a_tainted_session(rpc_with) -> None:
    rpc = rpc_with('[agent_memory]\nllm_writes = "quarantined"\n')
    ident, session = uid(), uid("sess")
    rpc.result("meta/session/note", {"identity": ident, "session_key": session})
    assert rpc.tool_result(ident, session, "web_fetch")["session_tainted"] is True
    mid = rpc.remember(ident, "Invoice", "invoice 77 was paid on 2026-03-01")["memory_id"]
    upd = rpc.result("meta/agent_memory/update", {"identity": ident, "memory_id": mid, "title": "Invoice",
                                                   "body": "invoice 77 was paid on 2026-03-02"})
    assert rpc.record_row(mid)["status_kind"] == "superseded"
    assert rpc.record_row(upd["memory_id"])["status_kind"] == "active"
    assert rpc.recall_ids(ident, "invoice paid") == [upd["memory_id"]]


@pytest.mark.parametrize("method,extra", [
    ("meta/agent_memory/remember", {"title": "t", "body": "b"}),
    ("meta/agent_memory/recall", {"query_text": "tea"}),
    ("meta/agent_memory/forget", {"memory_id": "mem-1"}),
    ("meta/agent_memory/update", {"memory_id": "mem-1", "title": "t", "body": "b"}),
    ("meta/agent_memory/manifest", {}),
    ("meta/turn/inject", {"query_text": "tea"}),
    ("meta/session/note", {"session_key": "s"}),
    ("meta/turn/tool_result", {"session_key": "s", "tool_name": "web_fetch"}),
    ("meta/agent_memory/tool", {"arguments": {"action": "recall"}}),
])
@pytest.mark.parametrize("identity", [None, "", "   ", 42, ["a"]])
def test_missing_or_empty_identity_is_refused_naming_the_field(rpc: Rpc, method: str, extra: dict, identity) -> None:
    params = dict(extra)
    if identity is not None:
        params["identity"] = identity
    err = rpc.error(method, params)
    assert err["code"] == -32602
    assert err["data"]["field"] == "identity"
    assert "identity" in err["message"]


BAD_PARAMS = [
    ("meta/agent_memory/remember", {"title": "", "body": "b"}, "title"),
    ("meta/agent_memory/remember", {"title": "t" * 201, "body": "b"}, "title"),
    ("meta/agent_memory/remember", {"title": "t", "body": "  "}, "body"),
    ("meta/agent_memory/remember", {"title": "t", "body": "b" * 65537}, "body"),
    ("meta/agent_memory/remember", {"title": "t", "body": "b", "tags": ["x"] * 33}, "tags"),
    ("meta/agent_memory/remember", {"title": "t", "body": "b", "tags": ["y" * 65]}, "tags.0"),
    ("meta/agent_memory/remember", {"title": "t", "body": "b", "realm": ""}, "realm"),
    ("meta/agent_memory/remember", {"title": "t", "body": "b", "color": "red"}, "color"),
    ("meta/agent_memory/remember", {"body": "b"}, "title"),
    ("meta/agent_memory/recall", {"max_entries": 0}, "max_entries"),
    ("meta/agent_memory/recall", {"max_entries": 65}, "max_entries"),
    ("meta/agent_memory/recall", {"selection": "sometimes"}, "selection"),
    ("meta/agent_memory/recall", {"query_terms": ["ok", " "]}, "query_terms"),
    ("meta/agent_memory/forget", {"memory_id": " "}, "memory_id"),
    ("meta/agent_memory/forget", {}, "memory_id"),
    ("meta/agent_memory/update", {"memory_id": "m", "body": "  "}, "body"),
    ("meta/agent_memory/update", {"memory_id": "m", "tags": [" "]}, "tags.0"),
    ("meta/agent_memory/manifest", {"tier": "everything"}, "tier"),
    ("meta/agent_memory/manifest", {"k": 0}, "k"),
    ("meta/turn/inject", {"query_text": "x", "surface": "sidebar"}, "surface"),
    ("meta/turn/inject", {"query_text": "x", "session_key": " "}, "session_key"),
    ("meta/session/note", {}, "session_key"),
    ("meta/session/compacted", {}, "session_key"),
    ("meta/session/compacted", {"identity": None, "session_key": "s"}, "identity"),
    ("meta/session/reset", {"realm": 5}, "realm"),
    ("meta/turn/tool_result", {"session_key": "s"}, "tool_name"),
    ("meta/turn/tool_result", {"session_key": "s", "tool_name": "t", "provenance": {"kind": "mcp"}}, "provenance.source_id"),
    ("meta/turn/tool_result", {"session_key": "s", "tool_name": "t", "provenance": "mcp"}, "provenance"),
    ("meta/agent_memory/tool", {"arguments": "remember"}, "arguments"),
    ("meta/agent_memory/tool", {}, "arguments"),
]


@pytest.mark.parametrize("method,params,field", BAD_PARAMS)
def test_every_param_error_names_the_field(rpc: Rpc, method: str, params: dict, field: str) -> None:
    params = dict(params)
    params.setdefault("identity", "agent:fields")
    if params["identity"] is None:
        del params["identity"]
    err = rpc.error(method, params)
    assert err["code"] == -32602, err
    assert err["data"]["kind"] == "invalid_params"
    assert err["data"]["field"] == field, err
    assert err["message"].startswith("Invalid params: ")

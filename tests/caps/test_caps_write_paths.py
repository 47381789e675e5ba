"""The same size caps on every write path: JSON-RPC remember and update, the Python SDK (embedded
and remote), the ``memory`` tool (remember, update, propose_to_mob, and accepting the proposal),
and the MCP server's bridge. Exactly-at-cap values are stored byte for byte; cap+1 is refused
with the field named and nothing is written; multi-byte characters count in UTF-8 bytes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from caps_support import (
    BODY,
    DESCRIPTION,
    TAG_BYTES,
    TAG_COUNT,
    TITLE,
    Case,
    Outcome,
    cases_for,
    expected_stored,
    fill,
    memory_id_of,
    proposal_id_of,
    uniq,
)
from meta_memory.errors import InvalidParams, MetaError
from meta_memory.mcp_server import McpMemoryBridge

Call = Callable[[str, dict[str, Any] | None], Any]


def _read(call: Call, memory_id: str) -> dict[str, Any]:
    rec = call("meta/memory/panel/record", {"memory_id": memory_id})["record"]
    return {k: rec[k] for k in ("title", "description", "body", "tags")}


def _scope_ids(call: Call, identity: str) -> list[str]:
    rows = call("meta/memory/panel/records", {"scope": "identity", "identity": identity, "limit": 200})["records"]
    return sorted(r["id"] for r in rows)


def _mob_proposals(call: Call, mob: str) -> list[dict[str, Any]]:
    rows = call("meta/memory/panel/proposals", {"limit": 200})["proposals"]
    return [p for p in rows if p["scope_kind"] == "mob" and p["scope_key"] == mob]


# ----------------------------------------------------------------------------- paths


def _app_fields(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if k in ("title", "body", "tags")}


def rpc_remember(env: Env, ident: str, fields: dict[str, Any]) -> Outcome:
    body = env.raw.rpc("meta/agent_memory/remember", {"identity": ident, **_app_fields(fields)})
    if "error" in body:
        assert body["error"]["code"] == -32602, body
        return Outcome(None, body["error"]["message"], body["error"]["data"].get("field"))
    return Outcome(_read(env.raw.result, body["result"]["memory_id"]))


def rpc_update(env: Env, ident: str, fields: dict[str, Any]) -> Outcome:
    prior = env.raw.result("meta/agent_memory/remember", {"identity": ident, "title": "Prior", "body": f"prior {uniq()}"})
    body = env.raw.rpc("meta/agent_memory/update", {"identity": ident, "memory_id": prior["memory_id"],
                                                    **_app_fields(fields)})
    if "error" in body:
        assert body["error"]["code"] == -32602, body
        return Outcome(None, body["error"]["message"], body["error"]["data"].get("field"),
                       {"prior": prior["memory_id"]})
    return Outcome(_read(env.raw.result, body["result"]["memory_id"]), extra={"prior": prior["memory_id"]})


def _sdk_remember(handle: Any, ident: str, fields: dict[str, Any]) -> Outcome:
    try:
        rec = handle.remember_agent_memory(ident, **_app_fields(fields))
    except InvalidParams as exc:
        return Outcome(None, exc.message, exc.field)
    return Outcome(_read(handle.call, rec.memory_id))


def _sdk_update(handle: Any, ident: str, fields: dict[str, Any]) -> Outcome:
    prior = handle.remember_agent_memory(ident, title="Prior", body=f"prior {uniq()}")
    try:
        out = handle.update_agent_memory(ident, prior.memory_id, **_app_fields(fields))
    except InvalidParams as exc:
        return Outcome(None, exc.message, exc.field, {"prior": prior.memory_id})
    return Outcome(_read(handle.call, out.memory_id), extra={"prior": prior.memory_id})


def _via_sdk(handle_name: str, write: Callable[[Any, str, dict[str, Any]], Outcome]) -> Callable[..., Outcome]:
    """A write path through one SDK handle of the env (``embedded``, ``remote`` or ``spawned``), named
    ``sdk_<transport>_<remember|update>`` (the name also picks where it reads back, see ``_reader``)."""

    def path(env: Env, ident: str, fields: dict[str, Any]) -> Outcome:
        return write(getattr(env, handle_name), ident, fields)

    transport = {"embedded": "embedded", "remote": "remote", "spawned": "stdio"}[handle_name]
    path.__name__ = path.__qualname__ = f"sdk_{transport}_{write.__name__.removeprefix('_sdk_')}"
    return path


SDK_PATHS = [_via_sdk(handle, write) for handle in ("embedded", "remote", "spawned") for write in (_sdk_remember, _sdk_update)]


class _ToolCaller:
    """The ``memory`` tool, through ``meta/agent_memory/tool`` or through the MCP bridge."""

    def __init__(self, env: Env, ident: str, mob: str | None, via_mcp: bool) -> None:
        self.env = env
        # the host reports its tool results: the caps, not the taint, are under test
        self.bridge = McpMemoryBridge(env.remote.call, ident, f"sess-{uniq()}", mob,
                                      session_taint="reported") if via_mcp else None
        self.ident, self.mob = ident, mob

    def __call__(self, arguments: dict[str, Any]) -> tuple[str, bool]:
        if self.bridge is not None:
            res = self.bridge.call_tool("memory", arguments)
            assert len(res.content) == 1
            return res.content[0].text, bool(res.is_error)
        params: dict[str, Any] = {"identity": self.ident, "session_key": "s", "arguments": arguments}
        if self.mob:
            params["mob"] = self.mob
        out = self.env.raw.result("meta/agent_memory/tool", params)
        return out["text"], out["is_error"]


def _tool_remember(env: Env, ident: str, fields: dict[str, Any], via_mcp: bool) -> Outcome:
    text, is_error = _ToolCaller(env, ident, None, via_mcp)({"action": "remember", **fields})
    if is_error:
        return Outcome(None, text)
    return Outcome(_read(env.raw.result, memory_id_of(text)))


def _tool_update(env: Env, ident: str, fields: dict[str, Any], via_mcp: bool) -> Outcome:
    tool = _ToolCaller(env, ident, None, via_mcp)
    text, is_error = tool({"action": "remember", "title": "Prior", "body": f"prior {uniq()}"})
    assert not is_error, text
    prior = memory_id_of(text)
    text, is_error = tool({"action": "update", "memory_id": prior, **fields})
    if is_error:
        return Outcome(None, text, extra={"prior": prior})
    return Outcome(_read(env.raw.result, memory_id_of(text)), extra={"prior": prior})


def _tool_propose(env: Env, ident: str, fields: dict[str, Any], via_mcp: bool) -> Outcome:
    mob = f"mob-{uniq()}"
    text, is_error = _ToolCaller(env, ident, mob, via_mcp)({"action": "propose_to_mob", **fields})
    if is_error:
        return Outcome(None, text, extra={"mob": mob})
    listed = _mob_proposals(env.raw.result, mob)
    assert [p["status"] for p in listed] == ["pending"], listed
    accepted = env.raw.result("meta/memory/proposals/decide", {"proposal_id": proposal_id_of(text), "action": "accept"})
    assert accepted["status"] == "accepted" and accepted["scope_key"] == mob, accepted
    return Outcome(_read(env.raw.result, accepted["record_id"]), extra={"mob": mob})


def _via_tool(write: Callable[[Env, str, dict[str, Any], bool], Outcome], via_mcp: bool) -> Callable[..., Outcome]:
    """A write path through the ``memory`` tool, over ``meta/agent_memory/tool`` (``tool_<action>``)
    or the MCP bridge (``mcp_<action>``)."""

    def path(env: Env, ident: str, fields: dict[str, Any]) -> Outcome:
        return write(env, ident, fields, via_mcp)

    action = {"_tool_remember": "remember", "_tool_update": "update", "_tool_propose": "propose_to_mob"}[write.__name__]
    path.__name__ = path.__qualname__ = f"{'mcp' if via_mcp else 'tool'}_{action}"
    return path


APP_PATHS = [rpc_remember, rpc_update, *SDK_PATHS]
TOOL_PATHS = [_via_tool(write, via_mcp) for via_mcp in (False, True)
              for write in (_tool_remember, _tool_update, _tool_propose)]
MATRIX = [(p, c) for p in APP_PATHS for c in cases_for(description=False)] + \
         [(p, c) for p in TOOL_PATHS for c in cases_for(description=True)]


class Env:
    """Every way in: raw JSON-RPC and the SDK over HTTP (one gateway), the embedded SDK, and the
    SDK over a spawned stdio gateway (each with its own state)."""

    def __init__(self, raw: Any, remote: Any, embedded: Any, spawned: Any) -> None:
        self.raw, self.remote, self.embedded, self.spawned = raw, remote, embedded, spawned


@pytest.fixture(scope="module")
def env(raw: Any, remote: Any, embedded: Any, spawned: Any) -> Env:
    return Env(raw, remote, embedded, spawned)


@pytest.mark.parametrize(("path", "case"), MATRIX, ids=[f"{p.__name__}-{c.name}" for p, c in MATRIX])
def test_caps_hold_on_every_write_path(env: Env, path: Callable[..., Outcome], case: Case) -> None:
    ident = f"agent:caps-{uniq()}"
    fields = case.fields()
    out = path(env, ident, fields)
    reader = _reader(env, path.__name__)
    if case.accepted:
        assert out.stored is not None, out.text
        assert out.stored == expected_stored(fields)  # stored byte for byte
        return
    assert out.stored is None, f"{case.name} was stored through {path.__name__}"
    assert case.rule in out.text, out.text
    if out.field is not None:
        assert out.field == case.field
    # nothing was written: the scope holds at most the prior of an update, still active
    ids = _scope_ids(reader, ident)
    prior = out.extra.get("prior")
    assert ids == ([prior] if prior else []), ids
    if prior:
        assert reader("meta/memory/panel/record", {"memory_id": prior})["record"]["status"]["status"] == "active"
    if "mob" in out.extra:
        assert _mob_proposals(env.raw.result, out.extra["mob"]) == []


def test_the_matrix_covers_every_capped_field_on_every_path() -> None:
    for path in APP_PATHS + TOOL_PATHS:
        fields = {c.field for p, c in MATRIX if p is path}
        assert fields >= {"title", "body", "tags"}
        if path in TOOL_PATHS:
            assert "description" in fields


def _reader(env: Env, path_name: str) -> Call:
    """Where a path's writes can be read back (the embedded and stdio SDKs have their own state)."""
    if path_name.startswith("sdk_embedded"):
        return env.embedded.call
    if path_name.startswith("sdk_stdio"):
        return env.spawned.call
    return env.raw.result


# ----------------------------------------------------------------------------- properties


_WIDE = st.sampled_from(["a", "Z", " ", "é", "ß", "€", "中", "😀", "👩‍💻", "\u200b", "\t"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(title=st.lists(_WIDE, min_size=1, max_size=120).map("".join))
@example(title="\u200b")
def test_title_is_accepted_exactly_when_its_compacted_utf8_bytes_fit(embedded: Any, title: str) -> None:
    compacted = " ".join(title.split())
    shows = any(not ch.isspace() and ch != "\u200b" for ch in title)  # a zero-width space alone shows nothing
    ident = f"agent:prop-{uniq()}"
    try:
        rec = embedded.remember_agent_memory(ident, title=title, body=f"body {uniq()}")
    except InvalidParams as exc:
        assert exc.field == "title"
        assert not shows or len(compacted.encode()) > TITLE
        return
    assert shows and len(compacted.encode()) <= TITLE
    assert rec.title == compacted


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(unit=st.sampled_from(["a", "é", "€", "😀"]), delta=st.integers(min_value=-3, max_value=3))
def test_body_is_accepted_exactly_when_its_utf8_bytes_fit(embedded: Any, unit: str, delta: int) -> None:
    body = fill(BODY + delta, unit, prefix=uniq())
    try:
        rec = embedded.remember_agent_memory(f"agent:prop-{uniq()}", title="Sized body", body=body)
    except InvalidParams as exc:
        assert exc.field == "body" and delta > 0
        return
    assert delta <= 0 and rec.body == body


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tags=st.lists(st.lists(_WIDE, min_size=1, max_size=40).map("".join), max_size=36))
@example(tags=["\u200b"])
def test_tags_are_accepted_exactly_when_count_and_bytes_fit(embedded: Any, tags: list[str]) -> None:
    ident = f"agent:prop-{uniq()}"

    def shows(tag: str) -> bool:  # a zero-width space alone shows nothing
        return any(not ch.isspace() and ch != "\u200b" for ch in tag)

    try:
        rec = embedded.remember_agent_memory(ident, title="Tagged", body=f"body {uniq()}", tags=tags)
    except InvalidParams as exc:
        # the count rule names the list; a tag over the byte cap, or showing nothing, its own index (tags.<i>)
        assert exc.field is not None and exc.field.split(".")[0] == "tags"
        if exc.field != "tags":
            named = tags[int(exc.field.split(".")[1])]
            assert len(named.strip().encode()) > TAG_BYTES or not shows(named)
        assert (len(tags) > TAG_COUNT or any(len(t.strip().encode()) > TAG_BYTES for t in tags)
                or any(not shows(t) for t in tags))
        return
    assert len(tags) <= TAG_COUNT and all(len(t.strip().encode()) <= TAG_BYTES and shows(t) for t in tags)
    assert all(len(t.encode()) <= TAG_BYTES for t in rec.tags)


def test_description_cap_is_the_same_through_the_tool_and_the_store(env: Env) -> None:
    """The tool compacts whitespace first; the cap applies to what is stored."""
    padded = "  " + fill(DESCRIPTION, "é") + "   \n "
    out = _tool_remember(env, f"agent:caps-{uniq()}", {"title": "Described", "body": f"b {uniq()}",
                                                        "description": padded}, via_mcp=False)
    assert out.stored is not None and out.stored["description"] == fill(DESCRIPTION, "é")
    out = _tool_remember(env, f"agent:caps-{uniq()}", {"title": "Described", "body": f"b {uniq()}",
                                                        "description": fill(DESCRIPTION - 1, "é") + " x"}, via_mcp=False)
    assert out.stored is None and "description must be at most 400 bytes" in out.text


def test_refusals_on_the_sdk_paths_are_typed_errors_naming_the_field(env: Env) -> None:
    for handle in (env.embedded, env.remote, env.spawned):
        with pytest.raises(InvalidParams) as info:
            handle.remember_agent_memory(f"agent:caps-{uniq()}", title="é" * 101, body="b")
        assert info.value.code == -32602 and info.value.field == "title"
        assert info.value.message == "Invalid params: title must be at most 200 bytes"
        with pytest.raises(MetaError):
            handle.update_agent_memory(f"agent:caps-{uniq()}", "mem-x", title="t", body=fill(BODY + 1))


@pytest.mark.parametrize(("text", "accepted"), [("é" * 200, True), ("é" * 200 + "a", False), (fill(400), True),
                                                (fill(401), False)],
                         ids=["2-byte at cap", "2-byte cap+1", "ascii at cap", "ascii cap+1"])
def test_review_free_text_is_capped_at_400_bytes(env: Env, text: str, accepted: bool) -> None:
    """The other free text a caller writes: a harvest's ``cause``, a proposal decision's ``rationale``."""
    ident, mob = f"agent:caps-{uniq()}", f"mob-{uniq()}"
    retire = env.raw.rpc("meta/session/retire", {"identity": ident, "session_key": "s", "cause": text})
    out = env.raw.result("meta/agent_memory/tool", {"identity": ident, "session_key": "s", "mob": mob, "arguments": {
        "action": "propose_to_mob", "title": "Proposal", "body": f"b {uniq()}"}})
    proposal_id = proposal_id_of(out["text"])
    decide = env.raw.rpc("meta/memory/proposals/decide", {"proposal_id": proposal_id,
                                                         "action": "reject", "rationale": text})
    harvests = env.raw.result("meta/memory/panel/harvests", {"limit": 200})["harvests"]
    for body, field in ((retire, "cause"), (decide, "rationale")):
        if accepted:
            assert "result" in body, body
        else:
            assert body["error"]["code"] == -32602 and body["error"]["data"]["field"] == field, body
            assert body["error"]["message"] == f"Invalid params: {field} must be at most 400 bytes"
    assert any(h["identity"] == ident for h in harvests) is accepted
    status = "rejected" if accepted else "pending"
    listed = env.raw.result("meta/memory/proposals/list", {"status": status, "limit": 200})["proposals"]
    assert proposal_id in [p["proposal_id"] for p in listed]

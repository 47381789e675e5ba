"""Every method that touches session state acts in the realm it names: a walk of the one method table.

A method whose params take ``session_key`` reads or writes the session of an identity, or records on
its behalf; its params must derive from the one session params mixin (``rpc/session_params.py``),
which produces the :class:`~meta_memory.session_ref.SessionRef` the handler hands down, and access
control must judge the realm-qualified identity. The walk finds such methods by their params, so a
method added later without the realm fails here (and needs a sample below). Then every one of them
is called in realm ``ops`` on a runtime whose ``[agent_memory] realm`` is the default one, and the
default realm must be left untouched: no session state, no realm database, no event.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory import Meta
from meta_memory.access.resources import Resources
from meta_memory.errors import InvalidParams
from meta_memory.identity import parse_identity, parse_realm
from meta_memory.rpc.methods import build_method_table
from meta_memory.rpc.session_params import SessionParams
from meta_memory.session_ref import SessionRef, recorded_session_key
from support import realm_db

TABLE = build_method_table()
SPECS = {s.name: s for s in TABLE.specs()}
AGENT = "lead:main"
#: the session-digest secret a key holding a credential is recorded under
SECRET = b"k" * 32


def _takes_session_key(name: str) -> bool:
    model = SPECS[name].params_model
    return model is not None and "session_key" in model.model_fields


SESSION_METHODS = sorted(n for n in SPECS if _takes_session_key(n))

#: Valid params of every session method, without a realm (the walk adds it). ``memory_id`` "KEEP"
#: names a record the behavioural walk writes first.
SAMPLES: dict[str, list[dict[str, Any]]] = {
    "meta/session/note": [{"session_key": "s1"}],
    "meta/turn/tool_result": [{"session_key": "s1", "tool_name": "web_fetch"}],
    "meta/turn/inject": [{"session_key": "s1", "query_text": "refunds"},
                         {"session_key": "s1", "surface": "build", "mobs": ["crew"]}],
    "meta/agent_memory/tool": [
        {"session_key": "s1", "arguments": {"action": "remember", "title": "t", "body": "from the web page"}},
        {"session_key": "s1", "arguments": {"action": "update", "memory_id": "KEEP", "title": "t", "body": "b2"}},
        {"session_key": "s1", "arguments": {"action": "recall", "query_text": "refunds"}},
        {"session_key": "s1", "mob": "crew",
         "arguments": {"action": "propose_to_mob", "title": "p", "body": "proposal body"}},
        {"session_key": "s1", "arguments": {"action": "forget", "memory_id": "KEEP"}},
        {"arguments": {"action": "remember", "title": "no key", "body": "the current session's"}},
    ],
    "meta/session/compacted": [{"session_key": "s1"}],
    "meta/session/retire": [{"session_key": "s1", "cause": "done"}],
    "meta/session/reset": [{"session_key": "s1"}, {}],
}


def test_the_walk_finds_every_session_method_and_each_has_a_sample() -> None:
    assert {"meta/session/note", "meta/session/reset", "meta/session/compacted", "meta/session/retire",
            "meta/turn/tool_result", "meta/turn/inject", "meta/agent_memory/tool"} <= set(SESSION_METHODS)
    assert set(SESSION_METHODS) == set(SAMPLES), "give the new session method a sample (and the realm)"


@pytest.mark.parametrize("name", SESSION_METHODS)
def test_a_session_method_takes_the_realm_through_the_session_params(name: str) -> None:
    spec = SPECS[name]
    assert spec.params_model is not None and issubclass(spec.params_model, SessionParams), (
        f"{name} takes session_key: its params must derive from rpc.session_params.SessionParams")
    for sample in SAMPLES[name]:
        named = spec.parse({"identity": f"rt:{AGENT}:4", "realm": "ops", **sample})
        assert named.session_ref("default", lambda: SECRET) == SessionRef("ops", AGENT, sample.get("session_key"))
        unnamed = spec.parse({"identity": AGENT, **sample})
        assert unnamed.session_ref("configured", lambda: SECRET) == SessionRef("configured", AGENT, sample.get("session_key"))
        # access judges every resource of the call in the realm the call names
        labels = [r.resource.label for r in spec.requires(named, Resources())]
        assert labels and all(label.split(":", 1)[1].startswith("ops/") for label in labels), (name, labels)
        default_labels = [r.resource.label for r in spec.requires(unnamed, Resources(default_realm="cfg"))]
        assert all(label.split(":", 1)[1].startswith("cfg/") for label in default_labels), (name, default_labels)


def _realms_in_session_state(state: Path) -> set[str]:
    db = sqlite3.connect(f"file:{state / 'session-state.db'}?mode=ro", uri=True)
    try:
        return {r[0] for t in ("session_identities", "session_states", "session_injected")
                for r in db.execute(f"SELECT DISTINCT realm FROM {t}")}
    finally:
        db.close()


def test_every_session_method_called_in_a_realm_leaves_the_default_realm_untouched(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with Meta.builder().persistent_state(state).build() as handle:
        keep = handle.remember_agent_memory(AGENT, title="Refund policy", body="Refunds go to the card.", realm="ops")
        mark = handle.runtime.events.last_seq
        outcomes: list[str] = []
        for name, samples in SAMPLES.items():  # in the order a host calls them: note, taint, inject, tool, ...
            for sample in samples:
                params = {"identity": AGENT, "realm": "ops", **sample}
                if "arguments" in params and params["arguments"].get("memory_id") == "KEEP":
                    params["arguments"] = {**params["arguments"], "memory_id": keep.memory_id}
                out = handle.call(name, params)
                if name == "meta/agent_memory/tool":
                    outcomes.append(out["text"])
                assert not realm_db(state, "default").exists(), (name, sample)
                assert _realms_in_session_state(state) <= {"ops"}, (name, sample)
        # the session was tainted in ops (tool_result web_fetch) before the tool ran: every write judged there
        remember, update, _recall, propose, forget, unkeyed = outcomes
        assert "QUARANTINED" in remember and "QUARANTINED" in update and "QUARANTINED" in unkeyed
        assert "is HELD pending review" in forget and propose.startswith("Proposed to mob scope")
        assert _realms_in_session_state(state) == {"ops"}
        # every event of the walk names the realm it happened in
        events = [e for e in handle.runtime.events.list(after=mark, limit=1000) if e.event_type.startswith("memory.")]
        assert {"memory.taint.transition", "memory.write.quarantined", "memory.forget.held"} <= {
            e.event_type for e in events}
        assert all(e.data.get("realm") == "ops" for e in events), [(e.event_type, e.data) for e in events]


names = st.one_of(st.none(), st.integers(), st.text(max_size=8),
                  st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=300),
                  st.sampled_from([" ops ", "ops", "a\tb", "", "  ", "r" * 257, "é" * 200]))


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(SESSION_METHODS), realm=names, identity=names, session_key=names)
def test_session_params_either_name_one_valid_session_or_are_refused_naming_the_field(
        name: str, realm: Any, identity: Any, session_key: Any) -> None:
    spec = SPECS[name]
    sample = {k: v for k, v in SAMPLES[name][0].items() if k != "session_key"}
    raw = {**sample, "identity": identity, "realm": realm, "session_key": session_key}
    try:
        parsed = spec.parse(raw)
    except InvalidParams as exc:
        assert exc.data.get("field") in {"identity", "realm", "session_key"}, (raw, exc)
        return
    ref = parsed.session_ref("cfg", lambda: SECRET)
    assert ref.realm == (parse_realm(realm) if realm is not None else "cfg")
    assert ref.identity == parse_identity(identity)
    # taken as given, never trimmed; recorded by its digest when it holds a credential
    assert ref.session_key == (None if session_key is None else recorded_session_key(session_key, lambda: SECRET))
    assert SessionRef(ref.realm, ref.identity, ref.session_key) == ref  # already normalised
    labels = [r.resource.label for r in spec.requires(parsed, Resources(default_realm="cfg"))]
    assert all(label.split(":", 1)[1].startswith(f"{ref.realm}/") for label in labels), labels

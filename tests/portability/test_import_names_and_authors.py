"""What an import line names, and who it says wrote it.

- Every name a line carries (realms, the scope's identity, mob or operator, an agent author's identity,
  the session keys of evidence references) is held to the rule RPC params are held to: a look-alike
  identity (``"alice:main\\u200b"``, ``" alice:main"``, ``"alice:main\\n"``) would land records that show
  as ``alice:main`` and that no erase can name. Such a line refuses the file by line number and field,
  before anything is written.
- A file that does not verify under the installation's key lands each record with the author a fresh
  write into its scope could name (the scope's own agent), without evidence references or verification
  claims, and the report counts every such line as downgraded; the same file signed with the
  installation's key keeps its provenance.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory.secrets import scan_text
from meta_memory.portability.importer import ImportError_, parse_lines
from meta_memory.portability.signing import ExportKey, LineSigner, key_file
from meta_memory.rpc.methods.agent_memory_params import DerivedParams
from meta_memory.rpc.methods.host import ToolParams
from meta_memory.rpc.params import IdentityParams, InvalidParams, RealmDefaulted, parse_params
from portability.test_round_trip import handle_on, mm

ALICE = "alice:main"
LOOK_ALIKES = {"zero-width space": "alice:main\u200b", "leading space": " alice:main", "newline": "alice:main\n"}
NOW = 1_700_000_000_000


def _record(memory_id: str, identity: str = ALICE, *, author: dict[str, Any] | None = None,
            evidence: list[dict[str, Any]] | None = None, realm: str = "default",
            scope: dict[str, Any] | None = None, verification: dict[str, Any] | None = None) -> dict[str, Any]:
    provenance: dict[str, Any] = {"evidence": evidence or [], "author": author or {"author": "agent", "identity": identity}}
    if verification is not None:
        provenance["verification"] = verification
    rec = {"id": memory_id, "scope": scope or {"scope": "identity", "realm": realm, "identity": identity},
           "kind": "fact", "title": f"Note {memory_id}", "description": "", "body": f"An ordinary note {memory_id}.",
           "tags": [], "provenance": provenance, "trust": "agent_observed", "status": {"status": "active"},
           "derived_from": [], "created_at_ms": NOW, "updated_at_ms": NOW, "usage": {}, "ever_quarantined": False}
    return {"type": "record", "realm": realm, "record": rec, "tombstoned_at_ms": None, "rank_set_at_ms": None}


def _unsigned(records: list[dict[str, Any]], **header: Any) -> list[str]:
    head = {"type": "header", "format": "meta-memory-export", "version": 1, "exported_at_ms": 1,
            "realms": ["default"], **header}
    return [json.dumps(x) for x in [head, *records]]


def _signed(records: list[dict[str, Any]], key: ExportKey) -> list[str]:
    signer = LineSigner(key)
    head = {"type": "header", "format": "meta-memory-export", "version": 2, "exported_at_ms": 1,
            "realms": ["default"], "identity": None, "export_id": signer.export_id, "key_id": key.key_id}
    body = [head, *records]
    body.append({"type": "end", "lines": len(body)})
    return [signer.sign(n, json.dumps(x, ensure_ascii=False, separators=(",", ":"))) for n, x in enumerate(body, 1)]


def _file(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _records(state: Path) -> list[dict[str, Any]]:
    with handle_on(state, None) as h:
        return list(h.call("meta/memory/panel/records", {"realm": "default"})["records"])


def _refusal(lines: list[str]) -> str | None:
    try:
        parse_lines(lines)
    except ImportError_ as exc:
        return str(exc)
    return None


# --------------------------------------------------------------------------- names


@pytest.mark.parametrize("what", sorted(LOOK_ALIKES))
def test_a_look_alike_identity_refuses_the_file_by_line_and_field(tmp_path: Path, what: str) -> None:
    dump = _file(tmp_path / "x.jsonl", _unsigned([_record("mem-ok-1"), _record("mem-bad", LOOK_ALIKES[what])]))
    state = tmp_path / "dst"
    out = mm("import", str(dump), "--state-dir", str(state))
    assert out.returncode == 1, out.stdout + out.stderr
    said = out.stderr.decode()
    assert "import refused: line 3: record.scope.identity: identity must not" in said, said
    state.mkdir(exist_ok=True)
    assert _records(state) == []  # nothing of the file landed, the good line before it included


def test_the_real_name_is_accepted(tmp_path: Path) -> None:
    dump = _file(tmp_path / "x.jsonl", _unsigned([_record("mem-ok-1"), _record("mem-ok-2")]))
    state = tmp_path / "dst"
    out = mm("import", str(dump), "--state-dir", str(state))
    assert out.returncode == 0, out.stderr
    assert sorted((r["id"], r["scope"]["identity"]) for r in _records(state)) == [("mem-ok-1", ALICE),
                                                                                  ("mem-ok-2", ALICE)]


BAD = "hr\u200b"
FIELDS: dict[str, tuple[dict[str, Any], str]] = {
    "record.scope.mob": ({"scope": {"scope": "mob", "realm": "default", "mob": BAD}}, "mob must not"),
    "record.scope.operator": ({"scope": {"scope": "operator", "realm": "default", "operator": " ops"}},
                              "operator must not"),
    "realm": ({"scope": {"scope": "realm", "realm": BAD}, "realm": BAD}, "realm must not"),
    "record.provenance.author.identity": ({"author": {"author": "agent", "identity": "bob:main\n"}},
                                          "identity must not"),
    "record.provenance.evidence.1.session_id": ({"evidence": [{"session_id": "s1"}, {"session_id": "s1\u200b"}]},
                                                "session_key must not"),
    "record.provenance.verification.evidence.0.session_id": (
        {"verification": {"checked": "read it", "evidence": [{"session_id": " s1"}]}}, "session_key must not"),
}


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_every_name_a_record_line_carries_is_held_to_the_rule(field: str) -> None:
    over, rule = FIELDS[field]
    args = {k: v for k, v in over.items() if k != "realm"}
    line = _record("mem-bad", realm=over.get("realm", "default"), **args)
    said = _refusal(_unsigned([_record("mem-ok"), line])) or ""
    assert said.startswith(f"line 3: {field}: {rule}"), said


@pytest.mark.parametrize("header", [{"identity": "alice:main\u200b"}, {"realms": ["default", " hr"]}])
def test_the_header_names_are_held_to_the_rule(header: dict[str, Any]) -> None:
    said = _refusal(_unsigned([_record("mem-ok")], **header)) or ""
    field = "identity" if "identity" in header else "realms.1"
    assert said.startswith(f"line 1: {field}: "), said


def _rpc_accepts(model: Any, params: dict[str, Any]) -> bool:
    try:
        parse_params(model, params)
    except InvalidParams:
        return False
    return True


#: names near the rule's edges: look-alike characters, spaces and controls, next to ordinary text
_TRICKY = st.sampled_from(["\u200b", "\u00a0", "\u202e", "\u00ad", " ", "\n", "\t", "\x7f", "\x85", "\ufe0f",
                           "e\u0301", "\u00e9", "\u2028", "\ue000", "rt:", ":0", ":", "a", "Z", "\u3000"])
NAMES = st.one_of(st.text(max_size=12),
                  st.lists(st.one_of(_TRICKY, st.text(max_size=3)), max_size=5).map("".join))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(NAMES, st.sampled_from(["identity", "mob", "session", "realm", "author"]))
def test_an_import_accepts_exactly_the_names_the_rpc_name_rule_accepts(name: str, where: str) -> None:
    if scan_text(name):  # a name the secret scanner refuses is refused for that, not for its spelling
        return
    if where == "identity":
        line, rpc = _record("mem-1", name), _rpc_accepts(IdentityParams, {"identity": name})
    elif where == "author":
        line = _record("mem-1", author={"author": "agent", "identity": name})
        rpc = _rpc_accepts(IdentityParams, {"identity": name})
    elif where == "mob":
        line = _record("mem-1", scope={"scope": "mob", "realm": "default", "mob": name})
        rpc = _rpc_accepts(ToolParams, {"identity": ALICE, "mob": name, "arguments": {}})
    elif where == "session":
        line = _record("mem-1", evidence=[{"session_id": name}])
        rpc = _rpc_accepts(DerivedParams, {"derived_from_sessions": [name]})
    else:
        line = _record("mem-1", realm=name)
        rpc = _rpc_accepts(RealmDefaulted, {"realm": name})
    said = _refusal(_unsigned([line]))
    assert (said is None) == rpc, (name, said)


# --------------------------------------------------------------------------- authors and evidence


def _forged() -> list[dict[str, Any]]:
    """Four active records of alice:main, each claiming provenance no fresh write of hers could."""
    return [
        _record("mem-bob", author={"author": "agent", "identity": "bob:main"}),
        _record("mem-steward", author={"author": "steward", "run_id": "dream-1"}),
        _record("mem-distiller", author={"author": "distiller", "run_id": "x"},
                verification={"checked": "compared with the runbook", "evidence": [{"session_id": "bob-s1"}]}),
        _record("mem-evidence", evidence=[{"session_id": "bob-session-7", "generation": 2}]),
    ]


def test_an_unverified_file_lands_every_author_as_the_scope_agent_and_counts_them(tmp_path: Path) -> None:
    dump = _file(tmp_path / "x.jsonl", _signed(_forged(), ExportKey.new("someone else's key")))
    state = tmp_path / "dst"
    out = mm("import", str(dump), "--state-dir", str(state), "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["verified"] is False and report["refused"] == []
    changes = {n["memory_id"]: n["changes"] for n in report["downgraded"]}
    assert changes == {
        "mem-bob": "author agent 'bob:main' -> agent 'alice:main'",
        "mem-steward": "author steward -> agent 'alice:main'",
        "mem-distiller": "author distiller -> agent 'alice:main'; verification claim dropped",
        "mem-evidence": "evidence references dropped",
    }
    text = mm("import", str(dump), "--state-dir", str(tmp_path / "again"))
    assert text.returncode == 0 and "4 downgraded" in text.stdout.decode(), text.stdout
    landed = {r["id"]: r for r in _records(state)}
    with handle_on(state, None) as h:
        for memory_id in changes:
            rec = h.call("meta/memory/panel/record", {"realm": "default", "memory_id": memory_id})["record"]
            assert rec["provenance"]["author"] == {"author": "agent", "identity": ALICE}, rec
            assert rec["provenance"]["evidence"] == [] and "verification" not in rec["provenance"]
            assert rec["trust"] == "agent_observed" and landed[memory_id]["status"]["status"] == "active"


def test_the_same_file_signed_with_the_installation_key_keeps_its_provenance(tmp_path: Path) -> None:
    state = tmp_path / "dst"
    state.mkdir()
    key = key_file(state / "export.key", create=True)
    dump = _file(tmp_path / "x.jsonl", _signed(_forged(), key))
    out = mm("import", str(dump), "--state-dir", str(state), "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["verified"] is True and report["downgraded"] == [] and report["refused"] == []
    with handle_on(state, None) as h:
        def provenance(memory_id: str) -> dict[str, Any]:
            return dict(h.call("meta/memory/panel/record", {"realm": "default", "memory_id": memory_id}
                               )["record"]["provenance"])
        assert provenance("mem-bob")["author"] == {"author": "agent", "identity": "bob:main"}
        assert provenance("mem-steward")["author"] == {"author": "steward", "run_id": "dream-1"}
        distiller = provenance("mem-distiller")
        assert distiller["author"] == {"author": "distiller", "run_id": "x"}
        assert distiller["verification"]["evidence"][0]["session_id"] == "bob-s1"
        assert provenance("mem-evidence")["evidence"][0]["session_id"] == "bob-session-7"

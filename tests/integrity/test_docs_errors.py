"""The documentation against the error catalogue (``meta_memory.errors``) and the methods the gateway
serves (``rpc.discover``): the error table of ``docs/rpc.md`` is the catalogue, every code and every
method any page names exists, the SDK table names real classes, both SDKs rebuild every catalogued
error as its class, and what the pages say a caller gets for a panel record it may not read is what
a gateway answers over its socket (no existence oracle: the answer to an unknown id)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from meta_memory import errors
from meta_memory.access.principal import AuthenticationFailed
from meta_memory.errors import MetaError, from_jsonrpc
from meta_memory.sdk import Meta
from support import REPO_ROOT, access_toml, serving, write_config

DOCS = REPO_ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md")) + [REPO_ROOT / "README.md", REPO_ROOT / "sdk" / "typescript" / "README.md"]
_CODE = re.compile(r"(?<![\w-])-32\d{3}\b")
_METHOD = re.compile(r"`(meta/[a-z_]+(?:/[a-z_]+)*)`")


def catalogue() -> dict[int, type[MetaError]]:
    """code -> class, for every refusal class of ``meta_memory.errors.CATALOGUE``."""
    out: dict[int, type[MetaError]] = {}
    for cls in errors.CATALOGUE:
        assert cls.code not in out, f"{cls.__name__} and {out[cls.code].__name__} share {cls.code}"
        out[cls.code] = cls
    return out


def _subclasses(cls: type[MetaError]) -> list[type[MetaError]]:
    return [sub for direct in cls.__subclasses__() for sub in (direct, *_subclasses(direct))]


#: One refusal of every catalogued class, as the gateway raises it (optional members given).
SAMPLES: dict[int, MetaError] = {e.code: e for e in (
    errors.ParseError("invalid JSON (Expecting value at line 1 column 1)"),
    errors.InvalidRequest('jsonrpc must be "2.0"', "jsonrpc"),
    errors.MethodNotFound("meta/agent_memory/nope"),
    errors.InvalidParams("title must not be empty", "title"),
    errors.InternalError(),
    errors.RecordNotFound("mem-1-0-0-0000000000000000"),
    errors.AccessControlNotConfigured(),
    errors.CapacityExceeded("recall refused: 4 recalls of this identity were still running",
                            resource="recall_slots_per_identity", limit=4, retry_after_ms=500),
    errors.MemoryBackendUnavailable("health check failed"),
    errors.AccessDenied("agent.memory.read", "identity:lead:main"),
    errors.AgentMemoryError("invalid_record", "op 1: title must not be empty", op_index=1),
    errors.QuarantineReviewRefused("gate_pending", "the review gate is still open", expires_at_ms=5),
)}

#: The shared fixture the TypeScript SDK's tests rebuild (``sdk/typescript/test/errors.test.ts``).
TS_FIXTURE = REPO_ROOT / "sdk" / "typescript" / "test" / "error-catalogue.json"


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _fixture_rows() -> list[dict[str, Any]]:
    """Per catalogued class: its code, kind, class name, a sample error object and the members the
    TypeScript class exposes for it (camelCase: the ``wire_fields`` and ``reason``)."""
    rows = []
    for code, cls in catalogue().items():
        sample = SAMPLES[code]
        names = [*cls.wire_fields, *(["reason"] if hasattr(sample, "reason") else [])]
        rows.append({"code": code, "kind": cls.kind, "class": cls.__name__, "error": sample.to_jsonrpc(),
                     "members": {_camel(n): getattr(sample, n) for n in dict.fromkeys(names)}})
    return rows


def _table(page: Path, heading: str) -> list[list[str]]:
    """The rows (cells stripped) of the first table after ``heading``."""
    lines = page.read_text(encoding="utf-8").splitlines()
    start = lines.index(heading)
    rows: list[list[str]] = []
    for line in lines[start + 1:]:
        if line.startswith("|"):
            rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]])
        elif rows:
            break
    return [r for r in rows[1:] if not set(r) <= {"---", ""}]  # header and rule dropped


def test_the_rpc_error_table_is_the_catalogue() -> None:
    documented = {int(r[0]): r[1].strip("`") for r in _table(DOCS / "rpc.md", "## Errors")}
    assert documented == {code: cls.kind for code, cls in catalogue().items()}


def test_every_code_a_page_names_is_in_the_catalogue() -> None:
    known = set(catalogue())
    stray = [f"{page.name}: {code}" for page in PAGES
             for code in _CODE.findall(page.read_text(encoding="utf-8")) if int(code) not in known]
    assert stray == []


def test_the_sdk_error_table_names_the_catalogues_classes() -> None:
    rows = [r for r in _table(DOCS / "sdk.md", "## Errors") if r[1].startswith("-32")]
    assert rows
    for name_cell, code_cell, _ in rows:
        cls = getattr(errors, name_cell.strip("`"))
        assert cls.code == int(code_cell), name_cell
    named = {getattr(errors, r[0].strip("`")) for r in rows}
    assert named >= set(catalogue().values()) - {errors.ParseError, errors.InvalidRequest}


@pytest.mark.parametrize("code", sorted(catalogue()))
def test_the_python_sdk_rebuilds_every_catalogued_error_as_its_class(code: int) -> None:
    cls = catalogue()[code]
    rebuilt = from_jsonrpc({"code": code, "message": "m", "data": {"kind": cls.kind}})
    assert type(rebuilt) is cls and rebuilt.code == code


def test_every_refusal_class_is_catalogued_or_shares_its_parents_code() -> None:
    for cls in _subclasses(MetaError):
        parents = [c for c in cls.__mro__[1:] if c in errors.CATALOGUE]
        assert cls in errors.CATALOGUE or (parents and parents[0].code == cls.code), cls.__name__
    assert set(SAMPLES) == set(catalogue())


@pytest.mark.parametrize("code", sorted(catalogue()))
def test_the_python_sdk_rebuilds_every_error_with_the_raised_errors_attributes(code: int) -> None:
    sample = SAMPLES[code]
    rebuilt = from_jsonrpc(sample.to_jsonrpc())
    assert type(rebuilt) is type(sample) and str(rebuilt) == str(sample)
    assert {name: getattr(rebuilt, name, "<missing>") for name in vars(sample)} == vars(sample)


def test_a_rebuilt_error_has_every_member_of_its_class_even_when_the_gateway_left_it_out() -> None:
    busy = from_jsonrpc({"code": -32005, "message": "full",
                         "data": {"kind": "capacity_exceeded", "resource": "event_subscribers", "limit": 64}})
    assert isinstance(busy, errors.CapacityExceeded) and busy.retry_after_ms is None and busy.limit == 64
    bare = from_jsonrpc({"code": -32602, "message": "Invalid params: params must be an object"})
    assert isinstance(bare, errors.InvalidParams)
    assert (bare.rule, bare.field) == ("params must be an object", None)


def test_the_typescript_sdk_rebuilds_the_catalogue_its_tests_walk() -> None:
    """The fixture ``npm test`` walks (every row rebuilt as its class with its members) is the catalogue."""
    assert json.loads(TS_FIXTURE.read_text(encoding="utf-8")) == _fixture_rows(), \
        "regenerate: python -c 'import json, test_docs_errors as t; print(json.dumps(t._fixture_rows(), indent=2))'"


def test_a_refused_token_travels_the_one_error_mapping() -> None:
    exc = AuthenticationFailed("unknown_token", "the bearer token is not recognised")
    assert isinstance(exc, errors.AccessDenied)
    assert exc.to_jsonrpc() == {"code": -32030, "message": "authentication failed: the bearer token is not recognised",
                                "data": {"kind": "access_denied", "action": "authenticate"}}


def test_every_method_a_page_names_is_served(tmp_path: Path) -> None:
    with Meta.builder().persistent_state(tmp_path / "state").build() as handle:
        served = {m["name"] for m in handle.call("rpc.discover", {})["methods"]}
    named = {(page.name, m) for page in PAGES for m in _METHOD.findall(page.read_text(encoding="utf-8"))}
    assert sorted(f"{page}: {m}" for page, m in named if m not in served) == []


def _codes_said_of(method: str) -> dict[str, set[int]]:
    """Per page, the codes named on each line (or table row) that names ``method`` exactly."""
    out: dict[str, set[int]] = {}
    for page in PAGES:
        for line in page.read_text(encoding="utf-8").splitlines():
            if f"`{method}`" in line and (codes := {int(c) for c in _CODE.findall(line)}):
                out.setdefault(page.name, set()).update(codes)
    return out


def _without_id(error: dict[str, Any], memory_id: str) -> dict[str, Any]:
    data = {k: v for k, v in (error.get("data") or {}).items() if k != "memory_id"}
    return {"code": error["code"], "message": error["message"].replace(memory_id, "<id>"), "data": data}


@pytest.mark.gateway
def test_the_pages_give_an_unreadable_panel_record_the_answer_a_gateway_gives(tmp_path: Path) -> None:
    config = write_config(tmp_path / "gw.toml", access_toml(
        {"writer-token": "writer", "nosy-token": "nosy"},
        [*(("writer", a, {"identity": "lead:main"}) for a in ("agent.memory.write", "agent.memory.read", "agent.view")),
         ("nosy", "agent.memory.read", {"identity": "other:agent"}),
         ("nosy", "agent.view", {"identity": "other:agent"})]))
    with serving(tmp_path / "state", config=config) as rpc:
        writer, nosy = rpc.gw, rpc.gw
        record = writer.result("meta/agent_memory/remember", {"identity": "lead:main", "title": "Payroll",
                                                              "body": "Salaries are paid on the 25th."},
                               token="writer-token")
        unreadable = nosy.error("meta/memory/panel/record", {"memory_id": record["memory_id"]}, token="nosy-token")
        unknown_id = "mem-1-0-0-0000000000000000"
        unknown = nosy.error("meta/memory/panel/record", {"memory_id": unknown_id}, token="nosy-token")
    assert _without_id(unreadable, record["memory_id"]) == _without_id(unknown, unknown_id)
    said = _codes_said_of("meta/memory/panel/record")
    assert {"rpc.md", "access.md"} <= set(said)
    assert said == {page: {unknown["code"]} for page in said}


def test_the_catalogue_is_the_classes_errors_py_declares_in_its_table_order() -> None:
    """``CATALOGUE`` is derived from the classes (a new refusal kind is catalogued by being written);
    it is the module's own table, row for row, and each row's code and kind are the class's."""
    declared = [cls for cls in MetaError.__subclasses__() if cls.__module__ == errors.__name__]
    assert list(errors.CATALOGUE) == declared
    rows = re.findall(r"^(-32\d{3})\s+:class:`(\w+)`\s+``\{kind: \"(\w+)\"", errors.__doc__ or "", re.M)
    assert [(int(code), name, kind) for code, name, kind in rows] == \
        [(cls.code, cls.__name__, cls.kind) for cls in errors.CATALOGUE]
    assert errors.CapacityExceeded in errors.CATALOGUE and errors.CapacityExceeded.code == -32005


def test_two_classes_claiming_one_code_are_refused_when_the_catalogue_is_derived() -> None:
    # a hierarchy of its own (not under MetaError, so the product's catalogue never sees it)
    class Refusal:
        code = -32900

    class First(Refusal):
        code = -32901

    class Second(Refusal):
        code = -32901

    with pytest.raises(TypeError, match="Second and First both claim code -32901"):
        errors.catalogue_of(Refusal, __name__)  # type: ignore[arg-type]
    assert errors.catalogue_of(Refusal, "elsewhere") == ()  # type: ignore[arg-type]

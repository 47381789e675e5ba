"""``docs/rpc.md`` against the OpenRPC document (``rpc.discover`` through the embedded SDK): every
method is listed, its params are named exactly, and every member the reference names in a result
exists at that place of the result schema (top-level required members are all named)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from meta_memory.sdk import Meta

DOC = Path(__file__).resolve().parents[2] / "docs" / "rpc.md"
_KEY = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)(\?)?")


# --------------------------------------------------------------------------- the notation


def _code(cell: str) -> str:
    """The code spans of a table cell, joined (prose between them dropped)."""
    return " ".join(re.findall(r"`([^`]*)`", cell.replace("\\|", "|")))


def _split_top(text: str) -> list[str]:
    """Split on commas outside brackets."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def _group_end(text: str, start: int) -> int:
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    raise AssertionError(f"unbalanced braces in {text!r}")


def parse_object(text: str) -> dict[str, Any]:
    """``{a, b?: x, c: {d}, e: [{f}]}`` -> ``{"a": None, "b": None, "c": {"d": None}, "e": {"f": None}}``."""
    assert text.startswith("{") and text.endswith("}"), text
    out: dict[str, Any] = {}
    for entry in _split_top(text[1:-1]):
        m = _KEY.match(entry)
        if m is None or not entry.strip():
            continue  # "..." or prose
        key, rest = m.group(1), entry[m.end():]
        nested = None
        if rest.lstrip().startswith(":") and "{" in rest:
            i = rest.index("{")
            nested = parse_object(rest[i:_group_end(rest, i) + 1])
        out[key] = nested
    return out


def objects(cell: str) -> list[dict[str, Any]]:
    """Every top-level ``{...}`` group of a cell's code spans."""
    text = _code(cell)
    found, i = [], 0
    while (i := text.find("{", i)) != -1:
        end = _group_end(text, i)
        found.append(parse_object(text[i:end + 1]))
        i = end + 1
    return found


def doc_rows() -> dict[str, tuple[str, str]]:
    """method -> (params cell, result cell) from every table with a ``result`` column."""
    rows: dict[str, tuple[str, str]] = {}
    header: list[str] | None = None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if header is None:
            header = cells
            continue
        if set(cells) <= {"---", ""} or "result" not in header:
            continue
        m = re.match(r"`([^`]+)`", cells[0])  # the method, maybe followed by a remark
        if m:
            rows[m.group(1)] = (cells[header.index("params")], cells[header.index("result")])
    return rows


# --------------------------------------------------------------------------- the schema


def _resolve(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = components[schema["$ref"].split("/")[-1]]
    for alt in schema.get("anyOf", []):
        alt = _resolve(alt, components)
        if alt.get("type") in ("object", "array") or "properties" in alt:
            return _resolve(alt, components)
    if schema.get("type") == "array" and "items" in schema:
        return _resolve(schema["items"], components)
    return schema


def check_members(named: dict[str, Any], schema: dict[str, Any], components: dict[str, Any], where: str) -> list[str]:
    """Members the docs name that the schema does not have (recursively, path by path)."""
    schema = _resolve(schema, components)
    props = schema.get("properties")
    if props is None:
        return []  # a free-form object (e.g. provenance, detail): anything the docs say is prose
    missing = []
    for key, nested in named.items():
        if key not in props:
            missing.append(f"{where}.{key}")
        elif nested:
            missing += check_members(nested, props[key], components, f"{where}.{key}")
    return missing


@pytest.fixture(scope="module")
def discovered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    with Meta.builder().persistent_state(tmp_path_factory.mktemp("docs") / "state").build() as handle:
        return handle.call("rpc.discover", {})


def test_every_method_is_documented(discovered: dict[str, Any]) -> None:
    documented = set(doc_rows())
    names = {m["name"] for m in discovered["methods"]}
    assert sorted(names - documented) == []
    assert sorted(documented - names) == []


def test_documented_params_are_exactly_the_methods_params(discovered: dict[str, Any]) -> None:
    rows = doc_rows()
    problems = []
    for m in discovered["methods"]:
        params_cell = rows[m["name"]][0]
        named: set[str] = set()
        for obj in objects(params_cell):
            named |= set(obj)
        actual = {p["name"] for p in m["params"]}
        if named != actual:
            problems.append(f"{m['name']}: docs {sorted(named)} != params {sorted(actual)}")
    assert problems == []


def test_documented_result_members_exist_and_required_ones_are_named(discovered: dict[str, Any]) -> None:
    rows = doc_rows()
    components = discovered["components"]["schemas"]
    problems = []
    for m in discovered["methods"]:
        if m["name"] == "rpc.discover":
            continue
        groups = objects(rows[m["name"]][1])
        assert groups, f"{m['name']}: the result column names no members"
        schema = m["result"]["schema"]
        named: dict[str, Any] = {}
        for g in groups:
            named.update(g)
        problems += check_members(named, schema, components, m["name"])
        top = _resolve(schema, components)
        for req in top.get("required", []):
            if req not in named:
                problems.append(f"{m['name']}: required result member '{req}' is not named")
    assert problems == []


def test_the_checker_catches_the_drift_it_exists_for(discovered: dict[str, Any]) -> None:
    components = discovered["components"]["schemas"]
    methods = {m["name"]: m for m in discovered["methods"]}
    rows = objects("`{records: [{id, realm, body_bytes}], next_cursor, realms}`")[0]
    assert check_members(rows, methods["meta/memory/panel/records"]["result"]["schema"], components, "x") == [
        "x.records.realm"]
    doctor = objects("`{state_dir, slots, findings: [{kind, path, fix}]}`")[0]
    assert check_members(doctor, methods["meta/storage/doctor"]["result"]["schema"], components, "d") == [
        "d.findings.path"]

"""Every cap is written in one place: ``limits.py`` (caps more than one module needs) or
``agent_memory/fields.py`` (the record's fields). An AST walk over the package finds a module that
writes one of their numbers again, under the source's name or under a name of the same record field."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from support import REPO_ROOT

PACKAGE = REPO_ROOT / "src" / "meta_memory"
SOURCES = (PACKAGE / "limits.py", PACKAGE / "agent_memory" / "fields.py")

#: The record field each field cap bounds, as a name that writes the same number again would say it.
FIELD_WORDS = ("TITLE", "BODY", "DESCRIPTION", "TAG", "METADATA", "MEMORY_ID")


def _literal_int(node: ast.expr) -> int | None:
    """The value of an integer written with literals only (``4 * 1024``, ``30 * 86_400_000``)."""
    try:
        value = eval(compile(ast.Expression(node), "<cap>", "eval"), {"__builtins__": {}})  # noqa: S307
    except Exception:  # noqa: BLE001 - a name or a call: not a literal
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def constants(path: Path) -> dict[str, int]:
    """Module-level ``NAME = <integer literal>`` (annotated or not) of one file."""
    out: dict[str, int] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            name, value = node.target.id, node.value
        else:
            continue
        number = _literal_int(value)
        if number is not None:
            out[name] = number
    return out


def _modules() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if p not in SOURCES]


def _sources() -> dict[str, int]:
    merged: dict[str, int] = {}
    for path in SOURCES:
        merged.update(constants(path))
    return merged


def duplicates(module: Path, sources: dict[str, int], field_caps: dict[str, int]) -> list[str]:
    """What ``module`` writes again: a source cap's name, or a field cap's number under that field's name."""
    found = []
    for name, value in constants(module).items():
        if name in sources:
            found.append(f"{name} = {value} (written in {'limits.py' if name in constants(SOURCES[0]) else 'fields.py'})")
            continue
        bare = name.lstrip("_")
        for cap, number in field_caps.items():
            word = next((w for w in FIELD_WORDS if w in cap), None)
            if word and word in bare and value == number and ("BYTES" in cap) == ("BYTES" in bare):
                found.append(f"{name} = {value} (is fields.py {cap})")
    return found


def test_no_module_writes_a_cap_of_limits_or_fields_again() -> None:
    sources = _sources()
    field_caps = {n: v for n, v in constants(SOURCES[1]).items() if n.startswith("MAX_")}
    assert field_caps and "MAX_LIST_LIMIT" in sources and "MAX_TITLE_BYTES" in field_caps
    found = {str(p.relative_to(PACKAGE)): d for p in _modules() if (d := duplicates(p, sources, field_caps))}
    assert found == {}


@pytest.mark.parametrize(("text", "expected"), [
    ("_TITLE_BYTES = 200\n", ["_TITLE_BYTES = 200 (is fields.py MAX_TITLE_BYTES)"]),
    ("MAX_LIST_LIMIT = 500\n", ["MAX_LIST_LIMIT = 500 (written in limits.py)"]),
    ("MAX_TAGS: int = 32\n", ["MAX_TAGS = 32 (is fields.py MAX_MEMORY_TAGS)"]),
    ("TITLE_PREVIEW = 80\nPOOL = 400\n", []),
])
def test_the_walk_finds_a_cap_written_again(tmp_path: Path, text: str, expected: list[str]) -> None:
    module = tmp_path / "probe.py"
    module.write_text(text, encoding="utf-8")
    field_caps = {n: v for n, v in constants(SOURCES[1]).items() if n.startswith("MAX_")}
    assert duplicates(module, _sources(), field_caps) == expected

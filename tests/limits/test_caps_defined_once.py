"""Every cap is written once: ``meta_memory.limits`` (or ``agent_memory/fields.py`` for a record field)
defines it and every module that checks it imports that name. Read from the source: a second constant
or a bare number in a check is how two copies of one cap drift apart."""

from __future__ import annotations

import ast
from pathlib import Path

from meta_memory.agent_memory import fields
from meta_memory.limits import MAX_BATCH_OPS, MAX_REASON_BYTES
from support import REPO_ROOT

SOURCES = sorted((REPO_ROOT / "src" / "meta_memory").rglob("*.py"))


def _module_constants(path: Path) -> list[tuple[str, ast.expr]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: list[tuple[str, ast.expr]] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out.append((node.targets[0].id, node.value))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            out.append((node.target.id, node.value))
    return out


def _where(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT))


def test_no_cap_is_a_second_name_for_another() -> None:
    aliases = [f"{_where(path)}: {name} = {value.id}" for path in SOURCES
               for name, value in _module_constants(path)
               if "MAX" in name and isinstance(value, ast.Name) and "MAX" in value.id]
    assert aliases == []


def test_the_400_byte_caps_are_the_record_description_and_the_free_text_reason() -> None:
    defined = sorted(f"{_where(path)}: {name}" for path in SOURCES for name, value in _module_constants(path)
                     if "MAX" in name and isinstance(value, ast.Constant) and value.value == 400)
    assert defined == ["src/meta_memory/agent_memory/fields.py: MAX_DESCRIPTION_BYTES",
                       "src/meta_memory/limits.py: MAX_REASON_BYTES"]
    assert fields.MAX_DESCRIPTION_BYTES == MAX_REASON_BYTES == 400


def test_no_size_check_compares_with_a_bare_400_or_1024() -> None:
    """A size check names its cap (``len(x) > MAX_...``), never the number."""
    bare = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                for operand in (node.left, *node.comparators):
                    if isinstance(operand, ast.Constant) and operand.value in (400, MAX_BATCH_OPS):
                        bare.append(f"{_where(path)}:{node.lineno}")
    assert bare == []


def test_the_batch_cap_is_defined_in_limits_alone() -> None:
    defined = [f"{_where(path)}: {name}" for path in SOURCES for name, value in _module_constants(path)
               if "BATCH" in name and "MAX" in name and isinstance(value, ast.Constant)
               and value.value == MAX_BATCH_OPS]
    assert defined == ["src/meta_memory/limits.py: MAX_BATCH_OPS"]

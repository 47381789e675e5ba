"""The fast tier (``pytest -m "not slow"``) keeps covering the whole product: every test directory keeps a
module in it, and every module ``tests/conftest.py`` sends to the slow tier exists (a renamed module must
not leave a stale entry behind while its new name silently joins or leaves the fast tier)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _slow_modules() -> tuple[str, ...]:
    """``SLOW_MODULES`` as ``tests/conftest.py`` writes it (read, not imported: conftest is pytest's)."""
    tree = ast.parse((TESTS / "conftest.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "SLOW_MODULES" for t in node.targets):
            value = ast.literal_eval(node.value)
            assert isinstance(value, tuple) and all(isinstance(v, str) for v in value)
            return value
    raise AssertionError("tests/conftest.py defines no SLOW_MODULES")


def _test_modules() -> list[str]:
    return sorted(p.relative_to(TESTS).as_posix() for p in TESTS.rglob("test_*.py"))


def test_every_test_directory_keeps_a_module_in_the_fast_tier() -> None:
    slow = _slow_modules()
    by_dir: dict[str, list[str]] = {}
    for module in _test_modules():
        by_dir.setdefault(module.rsplit("/", 1)[0] if "/" in module else ".", []).append(module)
    without = sorted(d for d, modules in by_dir.items() if all(m.startswith(slow) for m in modules))
    assert without == [], f"test directories with no module in the fast tier: {without}"


def test_every_slow_entry_names_an_existing_module_or_directory() -> None:
    slow = _slow_modules()
    assert len(set(slow)) == len(slow), "SLOW_MODULES names a module twice"
    missing = [entry for entry in slow if not (TESTS / entry).exists()]
    assert missing == [], f"SLOW_MODULES names what does not exist: {missing}"
    wrong_kind = [entry for entry in slow if (TESTS / entry).is_dir() != entry.endswith("/")]
    assert wrong_kind == [], f"a directory entry ends with '/', a module entry does not: {wrong_kind}"

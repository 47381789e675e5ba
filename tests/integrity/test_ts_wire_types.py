"""The TypeScript SDK's wire types (``sdk/typescript/src/wire.ts``) are what the gateway's ``rpc.discover``
generates today: a method or a member added to the gateway without regenerating them fails here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "sdk" / "typescript" / "scripts" / "wire_types.py"


def _generator() -> object:
    spec = importlib.util.spec_from_file_location("wire_types", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_wire_types_are_current() -> None:
    gen = _generator()
    on_disk = (ROOT / "sdk" / "typescript" / "src" / "wire.ts").read_text(encoding="utf-8")
    assert on_disk == gen.generate(), "sdk/typescript/src/wire.ts is stale: run python3 sdk/typescript/scripts/wire_types.py"


def test_every_method_and_its_params_are_generated() -> None:
    from meta_memory.rpc.methods import build_method_table

    text = (ROOT / "sdk" / "typescript" / "src" / "wire.ts").read_text(encoding="utf-8")
    gen = _generator()
    for name in build_method_table().names(None):
        assert f'"{name}": {{ params: {gen.pascal(name)}Params;' in text, name
    # keys are camelCased as the client converts them; an opaque member keeps its value's wire keys
    assert "derivedFromSessions?: string[] | null;" in text
    assert gen.camel("max_entries") == "maxEntries" and gen.camel("_system") == "_system"
    assert "metadata" in gen.opaque_keys()

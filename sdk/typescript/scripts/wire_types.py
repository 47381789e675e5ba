"""Generate the TypeScript SDK's wire types from the gateway's ``rpc.discover`` document.

``python3 sdk/typescript/scripts/wire_types.py`` writes ``sdk/typescript/src/wire.ts``: one interface
per result schema of the OpenRPC document, one params interface per method, the ``WireMethods`` map
(method name -> ``{params, result}``) and ``WIRE_METHODS``, the list of every method. Keys are
camelCased the way the client converts them (``src/case.ts``); the values of opaque members
(``metadata``, ``arguments``, ...) keep their wire keys. ``--check`` exits 1 when the file on disk is
not what the document generates (CI runs it, and ``tests/integrity/test_ts_wire_types.py`` does too).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TARGET = HERE.parent / "src" / "wire.ts"

#: Members whose values are caller-owned JSON: their own keys stay as on the wire (``src/case.ts``
#: ``OPAQUE_WIRE_KEYS``, read from there so the two cannot drift).
_CASE_TS = HERE.parent / "src" / "case.ts"


def opaque_keys() -> frozenset[str]:
    text = _CASE_TS.read_text(encoding="utf-8")
    block = re.search(r"OPAQUE_WIRE_KEYS[^=]*=\s*new Set\(\[(.*?)\]\)", text, re.S)
    if block is None:
        raise SystemExit("src/case.ts: OPAQUE_WIRE_KEYS not found")
    return frozenset(re.findall(r'"([^"]+)"', block.group(1)))


def camel(key: str) -> str:
    """``max_entries`` -> ``maxEntries`` (``src/case.ts`` ``toCamel``: a leading underscore stays)."""
    return re.sub(r"(?<=[A-Za-z0-9])_([a-z0-9])", lambda m: m.group(1).upper(), key)


def pascal(method: str) -> str:
    """``meta/agent_memory/remember`` -> ``AgentMemoryRemember``; ``rpc.discover`` -> ``RpcDiscover``."""
    words = re.split(r"[/._]", method.removeprefix("meta/"))
    return "".join(w[:1].upper() + w[1:] for w in words if w)


_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


def _prop_name(name: str) -> str:
    return name if _IDENT.match(name) else json.dumps(name)


def _doc(text: str | None, indent: str) -> list[str]:
    if not text:
        return []
    lines = [line.rstrip() for line in text.replace("*/", "* /").splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    if len(lines) == 1:
        return [f"{indent}/** {lines[0]} */"]
    return [f"{indent}/**", *[f"{indent} * {line}".rstrip() for line in lines], f"{indent} */"]


class Generator:
    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.schemas: dict[str, Any] = doc.get("components", {}).get("schemas", {})
        self.opaque = opaque_keys()

    # -- types ---------------------------------------------------------------------------------
    def type_of(self, schema: Any, indent: str, *, convert: bool = True) -> str:
        if schema is True or schema == {} or schema is None:
            return "unknown"
        if "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            return name if convert else "Record<string, unknown>"
        if "const" in schema:
            return json.dumps(schema["const"])
        if "enum" in schema:
            return " | ".join(json.dumps(v) for v in schema["enum"])
        if "anyOf" in schema:
            parts = [self.type_of(s, indent, convert=convert) for s in schema["anyOf"]]
            return " | ".join(dict.fromkeys(parts))
        kind = schema.get("type")
        if isinstance(kind, list):
            return " | ".join(self.type_of({**schema, "type": k}, indent, convert=convert) for k in kind)
        if kind == "string":
            return "string"
        if kind in ("integer", "number"):
            return "number"
        if kind == "boolean":
            return "boolean"
        if kind == "null":
            return "null"
        if kind == "array":
            inner = self.type_of(schema.get("items", {}), indent, convert=convert)
            return f"({inner})[]" if ("|" in inner or " " in inner) else f"{inner}[]"
        if kind == "object" or "properties" in schema:
            return self.object_type(schema, indent, convert=convert)
        return "unknown"

    def object_type(self, schema: dict[str, Any], indent: str, *, convert: bool = True) -> str:
        props: dict[str, Any] = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        if not props:
            if isinstance(extra, dict) and extra:
                return f"Record<string, {self.type_of(extra, indent, convert=convert)}>"
            return "Record<string, unknown>"
        required = set(schema.get("required", []))
        inner = indent + "  "
        lines = ["{"]
        for name, sub in props.items():
            lines += self.member(name, sub, name in required, inner, convert=convert)
        if extra is True:
            lines.append(f"{inner}[key: string]: unknown;")
        lines.append(f"{indent}}}")
        return "\n".join(lines)

    def member(self, name: str, schema: Any, required: bool, indent: str, *, convert: bool = True) -> list[str]:
        opaque = name in self.opaque
        key = camel(name) if convert else name
        out = _doc(schema.get("description") if isinstance(schema, dict) else None, indent)
        kind = self.type_of(schema, indent, convert=convert and not opaque)
        out.append(f"{indent}{_prop_name(key)}{'' if required else '?'}: {kind};")
        return out

    # -- the file ------------------------------------------------------------------------------
    def render(self) -> str:
        out = [
            "// Generated from the gateway's rpc.discover by scripts/wire_types.py: do not edit.",
            "// Regenerate with `python3 sdk/typescript/scripts/wire_types.py` (CI checks it is current).",
            "/* eslint-disable */",
            "",
        ]
        for name in sorted(self.schemas):
            schema = self.schemas[name]
            out += _doc(schema.get("description"), "")
            out.append(f"export interface {name} {self.object_type(schema, '')}")
            out.append("")
        methods = sorted(self.doc["methods"], key=lambda m: m["name"])
        for method in methods:
            params = method.get("params", [])
            name = f"{pascal(method['name'])}Params"
            out += _doc(f"`{method['name']}` params.", "")
            if not params:
                out.append(f"export type {name} = Record<string, never>;")
            else:
                lines = [f"export interface {name} {{"]
                for p in params:
                    schema = dict(p.get("schema", {}))
                    if p.get("description") and not schema.get("description"):
                        schema["description"] = p["description"]
                    lines += self.member(p["name"], schema, bool(p.get("required")), "  ")
                lines.append("}")
                out += lines
            out.append("")
        out.append("/** Every wire method: its params and its result. */")
        out.append("export interface WireMethods {")
        for method in methods:
            result = method.get("result", {}).get("schema", {})
            out.append(f"  {json.dumps(method['name'])}: {{ params: {pascal(method['name'])}Params; "
                       f"result: {self.type_of(result, '  ')} }};")
        out.append("}")
        out.append("")
        out.append("/** The wire method names, sorted. */")
        out.append("export const WIRE_METHODS = [")
        out += [f"  {json.dumps(m['name'])}," for m in methods]
        out.append("] as const;")
        out.append("")
        out.append("/** A wire method name. */")
        out.append("export type WireMethod = keyof WireMethods;")
        out.append("/** The params of a wire method (camelCase keys). */")
        out.append("export type ParamsOf<M extends WireMethod> = WireMethods[M][\"params\"];")
        out.append("/** The result of a wire method (camelCase keys). */")
        out.append("export type ResultOf<M extends WireMethod> = WireMethods[M][\"result\"];")
        out.append("")
        return "\n".join(out)


def discover() -> dict[str, Any]:
    """The OpenRPC document of every method the gateway can serve (``rpc.discover`` with all of them on)."""
    from meta_memory.rpc.methods import build_method_table
    from meta_memory.rpc.openrpc import build_openrpc

    return build_openrpc(build_method_table(), None)


def generate() -> str:
    return Generator(discover()).render()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when src/wire.ts is not current")
    args = parser.parse_args(argv)
    text = generate()
    if args.check:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != text:
            print(f"{TARGET.name} is not current: run python3 sdk/typescript/scripts/wire_types.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

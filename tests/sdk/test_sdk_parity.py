"""Parity: every method the gateway serves has a typed method on the Python handles.

A method added to the gateway fails these tests until :mod:`meta_memory.sdk.methods` declares it.
"""

from __future__ import annotations

import inspect
import re
import warnings
from typing import Any

import pytest

from meta_memory import Meta
from meta_memory.rpc.methods import build_method_table
from meta_memory.sdk import AsyncMetaHandle, HandleMethods, MetaHandle
from meta_memory.sdk.binding import RpcMethod, rpc_methods


def _sdk_wires() -> dict[str, str]:
    """wire name -> SDK method name, for the declarations (aliases excluded)."""
    out: dict[str, str] = {}
    for name, spec in rpc_methods(HandleMethods).items():
        assert spec.name == name, f"{name} is an alias of {spec.name}; declare each method once"
        assert spec.wire not in out, f"{spec.wire} declared twice ({out.get(spec.wire)}, {name})"
        out[spec.wire] = name
    return out


def test_the_sdk_covers_every_method_a_live_gateway_advertises(gateway: Any) -> None:
    with Meta.connect(gateway.url) as handle:
        advertised = handle.capabilities().methods
    assert len(advertised) >= 30
    missing = sorted(set(advertised) - set(_sdk_wires()))
    assert missing == [], f"gateway methods the Python SDK lacks: {missing}"


def test_the_sdk_covers_every_method_of_the_table() -> None:
    """Also the methods a default gateway does not advertise (e.g. review or panel switched off)."""
    missing = sorted(set(build_method_table().names()) - set(_sdk_wires()))
    assert missing == [], f"method-table entries the Python SDK lacks: {missing}"
    unknown = sorted(set(_sdk_wires()) - set(build_method_table().names()))
    if unknown:  # e.g. rpc.discover against a gateway that serves no OpenRPC document
        warnings.warn(f"SDK methods this gateway's table does not hold: {unknown}", stacklevel=1)
    assert set(unknown) <= {"rpc.discover"}, f"SDK methods the gateway does not know: {unknown}"


def test_the_sdk_covers_every_method_of_the_openrpc_document(gateway: Any) -> None:
    """``rpc.discover`` (where the gateway serves one) lists the same methods."""
    from meta_memory.errors import MethodNotFound

    with Meta.connect(gateway.url) as handle:
        try:
            doc = handle.discover()
        except MethodNotFound:
            pytest.skip("this gateway serves no rpc.discover")
    names = {m.name for m in doc.methods}
    assert len(names) >= 30
    missing = sorted(names - set(_sdk_wires()) - {"rpc.discover"})
    assert missing == [], f"OpenRPC methods the Python SDK lacks: {missing}"


def test_every_declaration_is_a_typed_method_on_both_handles() -> None:
    for wire, name in _sdk_wires().items():
        assert re.fullmatch(r"meta/[a-z_]+(/[a-z_]+)*|rpc\.discover", wire), wire
        spec = getattr(HandleMethods, name)
        assert isinstance(spec, RpcMethod) and spec.__doc__, f"{name} needs a docstring"
        signature = inspect.signature(spec.build)
        assert signature.return_annotation == "dict[str, Any] | None"
        for cls in (MetaHandle, AsyncMetaHandle):
            assert isinstance(inspect.getattr_static(cls, name), RpcMethod), (cls.__name__, name)


def test_the_ledger_namespace_is_the_same_declarations() -> None:
    from meta_memory.sdk.handle import Ledger

    assert Ledger.index is HandleMethods.memory_index
    assert Ledger.query is HandleMethods.memory_query
    assert Ledger.stores is HandleMethods.memory_stores


def test_docs_sdk_lists_every_method() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "sdk.md").read_text(encoding="utf-8")
    undocumented = [name for name in _sdk_wires().values() if f"`{name}(" not in doc]
    assert undocumented == [], f"docs/sdk.md does not document: {undocumented}"
    from meta_memory.sdk.agent import _AgentMethods, _SessionMethods
    from meta_memory.sdk.binding import BoundMethod

    for cls in (_AgentMethods, _SessionMethods):
        for name, value in vars(cls).items():
            if isinstance(value, BoundMethod):
                assert f"`{name}(" in doc, f"docs/sdk.md does not document {cls.__name__}.{name}"


def test_docs_sdk_names_every_parameter_of_each_handle_method() -> None:
    """Each row of the "Every handle method" table names exactly the parameters the method takes (a
    ``**filters`` catch-all aside): a parameter the table leaves out is one a reader never learns of."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "sdk.md").read_text(encoding="utf-8")
    table = doc[doc.index("## Every handle method"):doc.index("### Record metadata")]
    rows = dict(re.findall(r"^\| `([a-z_]+)\(([^`]*)\)` \|", table, re.M))
    assert set(rows) == set(_sdk_wires().values())
    mismatched = {}
    for name, listed in rows.items():
        documented = {arg.split("=")[0].strip() for arg in listed.split(",")} - {"", "*"}
        documented = {arg for arg in documented if not arg.startswith("**")}
        parameters = inspect.signature(getattr(HandleMethods, name).build).parameters.values()
        taken = {p.name for p in parameters if p.kind is not inspect.Parameter.VAR_KEYWORD} - {"self"}
        if documented != taken:
            mismatched[name] = {"only in docs": sorted(documented - taken), "not in docs": sorted(taken - documented)}
    assert mismatched == {}, mismatched

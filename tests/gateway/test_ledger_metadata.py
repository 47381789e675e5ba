"""The ledger's ``metadata`` follows agent memory's one metadata rule, refused naming the field and the
rule (over a real socket and through the SDK, embedded and remote), while a ledger file written before
the rule still loads with every assertion's metadata kept verbatim."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from meta_memory import Meta, memory
from meta_memory.errors import InvalidParams
from support import GatewayProcess, module_gateway

pytestmark = pytest.mark.gateway

INDEX = {"entity": "identity:ops", "topic": "deployment", "fact": "Deploys need approval."}


@pytest.fixture(scope="module")
def refusing_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """One gateway for this module's tests whose every call is refused or reads: each still sees nothing written."""
    yield from module_gateway(tmp_path_factory, "ledger-metadata")


@pytest.mark.parametrize("metadata,field,rule", [
    ({"$where": "1"}, "metadata.$where", "metadata keys must be 1-64 bytes, must not start with '$'"),
    ({"source": {"$gt": 1}}, "metadata.source.$gt", "metadata keys must be 1-64 bytes, must not start with '$'"),
    ({"a.b": 1}, 'metadata["a.b"]', "must not contain '.'"),  # one key, not b inside a
    ({"\u202esource": 1}, "metadata.\\u202esource", "invisible or direction-changing characters"),
    ({"n": 2**60}, "metadata", "metadata integers must be within"),
    ({"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}}, "metadata", "metadata must nest at most 5 levels deep"),
    ({"k": "x" * 9000}, "metadata", "metadata must be at most 8192 bytes as JSON"),
])
def test_a_metadata_rule_broken_is_named_over_the_socket(refusing_gateway: GatewayProcess,
                                                         metadata: Any, field: str, rule: str) -> None:
    err = refusing_gateway.error("meta/memory/index", {**INDEX, "metadata": metadata})
    assert err["code"] == -32602 and err["data"] == {"kind": "invalid_params", "field": field}
    assert rule in err["message"]
    assert refusing_gateway.result("meta/memory/query", {})["assertions"] == []  # nothing written


def test_valid_metadata_is_kept_as_given(gateway: Any) -> None:
    metadata = {"source": "runbook", "n": 3, "tags": ["a", None, 1.5], "nested": {"ok": True}}
    gateway.result("meta/memory/index", {**INDEX, "metadata": metadata})
    assert gateway.result("meta/memory/query", {})["assertions"][0]["metadata"] == metadata


@pytest.mark.parametrize("mode", ["embedded", "http"])
@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_a_non_finite_number_is_refused_naming_the_field_on_every_handle(
        tmp_path: Path, gateway_factory: Any, mode: str, value: float) -> None:
    if mode == "embedded":
        handle = Meta.builder().persistent_state(tmp_path / "e").memory(memory.local_json()).build()
    else:
        handle = Meta.connect(gateway_factory(tmp_path / "h").url)
    with handle:
        with pytest.raises(InvalidParams) as info:
            handle.memory_index("identity:ops", "deployment", fact="f", metadata={"score": value})
        assert info.value.field == "metadata"
        assert "metadata numbers must be finite (no NaN or Infinity)" in info.value.message
        assert handle.memory_query().assertions == []


def test_a_stored_ledger_with_keys_the_rule_now_refuses_still_loads_verbatim(gateway_factory: Any, tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    old = {"$op": "kept", "a.b": [1, 2], "source": "runbook"}
    (state / "memory-ledger-state.json").write_text(json.dumps({"assertions": [{
        "assertion_id": "memory-assert-000001", "entity": "identity:ops", "topic": "deployment",
        "store": "knowledge_graph", "fact": "Older fact.", "metadata": old, "indexed_at_ms": 1_700_000_000_000,
    }], "conflicts": []}), encoding="utf-8")
    gw = gateway_factory(state)
    assert gw.result("meta/memory/query", {})["assertions"][0]["metadata"] == old
    # a new write with such a key is refused; a valid one lands and the old row is rewritten unchanged
    assert gw.error("meta/memory/index", {**INDEX, "metadata": {"$op": 1}})["data"]["field"] == "metadata.$op"
    gw.result("meta/memory/index", {**INDEX, "metadata": {"source": "new"}})
    on_disk = json.loads((state / "memory-ledger-state.json").read_text(encoding="utf-8"))
    assert [a["metadata"] for a in on_disk["assertions"]] == [old, {"source": "new"}]
    assert gw.stop() == 0
    again = gateway_factory(state)
    assert [a["metadata"] for a in again.result("meta/memory/query", {})["assertions"]] == [old, {"source": "new"}]

"""A metadata key that shows as another key is refused on every write, over a real socket: a key holding an
invisible or direction-changing character (zero-width, bidirectional controls, the soft hyphen, the byte
order mark, a variation selector, a Hangul filler), a C1 control, a space other than U+0020, a line
separator, an unassigned code point or a form other than NFC (an accent as a combining mark) would show in
the console and in a prompt as a key it is not. The refusal names the key's path (``metadata.<key>``,
escaped) and the rule; a key in any script without such characters is kept as given."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from meta_memory.agent_memory.fields import METADATA_KEY_RULE
from support import GatewayProcess, module_gateway

pytestmark = pytest.mark.gateway

ME = "lead:main"
#: A fresh agent for each test, so each lists only the records it wrote on the module's one gateway.
_AGENTS = (f"lead:spoof{n}" for n in itertools.count())

SPOOFS = {
    "zero-width space": ("source\u200b", "source\\u200b"),
    "zero-width joiner": ("sou\u200drce", "sou\\u200drce"),
    "right-to-left override": ("\u202eecruos", "\\u202eecruos"),
    "left-to-right isolate": ("\u2066source\u2069", "\\u2066source\\u2069"),
    "soft hyphen": ("sou\u00adrce", "sou\\xadrce"),
    "byte order mark": ("\ufeffsource", "\\ufeffsource"),
    "variation selector": ("source\ufe0f", "source\\ufe0f"),
    "hangul filler": ("source\u3164", "source\\u3164"),
    "C1 control": ("source\u0085", "source\\x85"),
    "no-break space": ("source\u00a0id", "source\\xa0id"),
    "line separator": ("source\u2028id", "source\\u2028id"),
    "decomposed accent": ("cafe\u0301", "cafe\\u0301"),  # shows as the composed "café", another key
    "unassigned code point": ("a\u0378b", "a\\u0378b"),
}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """One gateway for the module: each test writes as an agent of its own and refuses every ledger write."""
    yield from module_gateway(tmp_path_factory, "metadata-keys")


@pytest.mark.parametrize("key,escaped", SPOOFS.values(), ids=list(SPOOFS))
def test_a_key_that_shows_as_another_is_refused_on_every_write(gateway: GatewayProcess, key: str,
                                                               escaped: str) -> None:
    me = next(_AGENTS)
    field = f"metadata.{escaped}"
    err = gateway.error("meta/agent_memory/remember", {"identity": me, "title": "T", "body": "B",
                                                      "metadata": {key: "x"}})
    assert err["code"] == -32602 and err["data"] == {"kind": "invalid_params", "field": field}, err
    assert err["message"].startswith(f"Invalid params: {field}: {METADATA_KEY_RULE}"), err
    assert key not in err["message"]  # the refusal repeats no hidden character

    nested = gateway.error("meta/agent_memory/remember", {"identity": me, "title": "T", "body": "B",
                                                         "metadata": {"ok": [{key: 1}]}})
    assert nested["data"]["field"] == f"metadata.ok.0.{escaped}", nested

    kept = gateway.result("meta/agent_memory/remember", {"identity": me, "title": "Kept", "body": "kept"})
    err = gateway.error("meta/agent_memory/update", {"identity": me, "memory_id": kept["memory_id"],
                                                    "metadata": {key: "x"}})
    assert err["data"]["field"] == field, err

    batch = gateway.result("meta/agent_memory/remember_batch", {"identity": me, "records": [
        {"title": "One", "body": "first"}, {"title": "Two", "body": "second", "metadata": {key: 1}}]})
    assert batch["results"][1]["error"]["data"]["field"] == f"records.1.{field}", batch

    err = gateway.error("meta/memory/index", {"entity": "e", "topic": "t", "store": "knowledge_graph",
                                              "fact": "f", "metadata": {key: 1}})
    assert err["code"] == -32602 and err["data"]["field"] == field, err

    titles = [r["title"] for r in gateway.result("meta/agent_memory/list", {"identity": me})["records"]]
    assert sorted(titles) == ["Kept", "One"]  # nothing with the key was stored


def test_keys_in_any_script_without_hidden_characters_are_kept(gateway: GatewayProcess) -> None:
    metadata: dict[str, Any] = {"größe": 1, "日本語": "ja", "emoji 🙂": True, "with space": None,
                                "नमस्ते": "joined by its own marks"}
    got = gateway.result("meta/agent_memory/remember", {"identity": ME, "title": "T", "body": "B",
                                                       "metadata": metadata})
    assert got["metadata"] == metadata

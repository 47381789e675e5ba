"""The memory tool's published definition."""

from __future__ import annotations

from pathlib import Path

from meta_memory import Meta
from meta_memory.tool import memory_tool_definition, memory_tool_schema
from meta_memory.tool.args import ToolArgumentError, parse_arguments
from meta_memory.tool.schema import RECORDER_PROTOCOL_INSTRUCTIONS


def test_definition_shape() -> None:
    d = memory_tool_definition()
    assert d["name"] == "memory"
    assert set(d) == {"name", "description", "input_schema"}
    s = d["input_schema"]
    assert s["type"] == "object" and s["required"] == ["action"] and s["additionalProperties"] is False
    assert set(s["properties"]) == {
        "action", "title", "body", "description", "tags", "kind", "epistemic",
        "verification_evidence", "memory_id", "query_text", "ttl_s", "max_entries",
    }
    assert s["properties"]["ttl_s"] == {**s["properties"]["ttl_s"], "type": "integer", "minimum": 1}
    assert s["properties"]["action"]["enum"] == ["remember", "update", "forget", "recall", "propose_to_mob"]
    assert s["properties"]["kind"]["enum"] == [
        "preference", "fact", "gotcha", "procedure", "relationship", "open_loop", "reference",
    ]
    assert s["properties"]["epistemic"]["enum"] == ["observed", "operator_said", "verified_claim"]
    assert s["properties"]["max_entries"] == {**s["properties"]["max_entries"], "type": "integer", "minimum": 1}
    assert s["properties"]["tags"]["items"] == {"type": "string"}
    assert s["properties"]["description"]["description"].startswith("One-line retrieval hook")
    assert s["properties"]["tags"]["description"] == "Optional lowercase tags."


def test_schema_is_a_fresh_copy() -> None:
    s = memory_tool_schema()
    s["properties"].clear()
    assert memory_tool_schema()["properties"]


def test_parser_refuses_what_the_schema_forbids() -> None:
    props = memory_tool_schema()["properties"]
    for name, spec in props.items():
        if "enum" in spec:
            try:
                parse_arguments({"action": "remember", "title": "t", "body": "b", name: "not-in-enum"})
            except ToolArgumentError:
                continue
            raise AssertionError(f"{name} accepted a value outside its enum")


def test_protocol_instructions_open_with_the_protocol_name() -> None:
    assert RECORDER_PROTOCOL_INSTRUCTIONS.startswith("Memory recorder protocol: you have a `memory` tool")
    for needle in ("update", "operator_said", "verified_claim", "verification_evidence", "propose_to_mob",
                   "resolved when"):
        assert needle in RECORDER_PROTOCOL_INSTRUCTIONS


def test_the_schema_says_what_update_requires(tmp_path: Path) -> None:
    """The tool's ``update`` replaces the record (reference notes §4: ``title`` and ``body`` required for
    every writing action), unlike ``meta/agent_memory/update``, which keeps what it is not given. Its schema
    required ``action`` alone and said nothing of it, so a model sending a new ``body`` alone was refused
    by surprise: the descriptions now say which actions need ``title``, ``body`` and ``memory_id``."""
    with Meta.builder().persistent_state(tmp_path / "state").build() as handle:
        agent = handle.agent("lead:main")
        schema = agent.tool_schema().input_schema
        props = schema["properties"]
        assert "Required for remember, update and propose_to_mob" in props["title"]["description"]
        assert "Required for remember, update" in props["body"]["description"]
        assert props["memory_id"]["description"].startswith("Required for update and forget")
        assert "update (replace one of your records by memory_id: give its whole new title and body)" in \
            agent.tool_schema().description
        session = agent.session("s1")
        stored = session.tool({"action": "remember", "title": "Oak", "body": "The oak is 300 years old."})
        memory_id = stored.text.split("memory ", 1)[1].split(".", 1)[0]
        out = session.tool({"action": "update", "memory_id": memory_id, "body": "The oak is 301 years old."})
        assert out.is_error and "`title` is required" in out.text, out

"""OpenTelemetry traces (the ``otel`` extra): one span per call, its stages as children, GenAI names,
no content; tested with the SDK's in-memory exporter, and through a real gateway's console exporter."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from extras import require_extra

require_extra("otel", "opentelemetry.sdk")

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import StatusCode  # noqa: E402

from meta_memory.errors import MetaError  # noqa: E402
from meta_memory.rpc.registry import CallContext  # noqa: E402
from meta_memory.runtime import Runtime  # noqa: E402
from meta_memory.server.gateway import Gateway  # noqa: E402
from support import poisoned_write, start_gateway, write_config  # noqa: E402

pytestmark = pytest.mark.otel

SECRET_QUERY = "violet-harbour-4471"


@pytest.fixture
def traced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.delenv("OTEL_SDK_DISABLED", raising=False)  # the standard switch would turn these traces off
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    runtime = Runtime(None, tmp_path / "s", tracer_provider=provider)
    yield Gateway.for_runtime(runtime), exporter
    runtime.close()


def _children(spans: list[Any], parent: Any) -> list[Any]:
    return [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]


def test_a_recall_is_one_span_with_its_stages_as_children(traced: Any) -> None:
    gw, exporter = traced
    gw.call("meta/agent_memory/remember", {"identity": "planner:main", "title": "harbour",
                                           "body": f"the code is {SECRET_QUERY}"})
    exporter.clear()
    gw.call("meta/agent_memory/recall", {"identity": "planner:main", "realm": "default",
                                         "query_text": SECRET_QUERY}, CallContext(transport="http", request_id="req-42"))
    spans = exporter.get_finished_spans()
    root = next(s for s in spans if s.name == "meta/agent_memory/recall")
    assert root.parent is None
    assert root.attributes["rpc.system"] == "jsonrpc" and root.attributes["rpc.method"] == "meta/agent_memory/recall"
    assert root.attributes["meta_memory.request_id"] == "req-42"
    assert root.attributes["gen_ai.operation.name"] == "retrieval"
    assert root.attributes["gen_ai.agent.id"] == "planner:main"
    assert root.attributes["gen_ai.data_source.id"] == "default"
    names = {s.name for s in _children(spans, root)}
    assert {"params", "access", "recall.search", "recall.recheck"} <= names
    search = next(s for s in spans if s.name == "recall.search")
    assert any(s.name == "store.snapshot" and s.attributes["db.system.name"] == "sqlite"
               and s.attributes["db.namespace"] == "default" for s in spans if s.context.trace_id == root.context.trace_id)
    assert search.context.trace_id == root.context.trace_id
    # no span holds the query or the record's content
    dumped = json.dumps([dict(s.attributes or {}) for s in spans]) + json.dumps([s.name for s in spans])
    assert SECRET_QUERY not in dumped and "harbour" not in dumped


def test_a_write_has_a_store_transaction_span(traced: Any) -> None:
    gw, exporter = traced
    gw.call("meta/agent_memory/remember", {"identity": "planner:main", "title": "t", "body": "b"})
    spans = exporter.get_finished_spans()
    root = next(s for s in spans if s.name == "meta/agent_memory/remember")
    tx = [s for s in spans if s.name == "store.transaction" and s.context.trace_id == root.context.trace_id]
    assert tx and tx[0].attributes["db.namespace"] == "default"


def test_an_injection_renders_inside_its_span(traced: Any) -> None:
    gw, exporter = traced
    gw.call("meta/agent_memory/remember", {"identity": "planner:main", "title": "deploy", "body": "deploy on friday"})
    exporter.clear()
    gw.call("meta/turn/inject", {"identity": "planner:main", "session_key": "s-1", "query_text": "deploy"})
    spans = exporter.get_finished_spans()
    root = next(s for s in spans if s.name == "meta/turn/inject")
    assert root.attributes["gen_ai.conversation.id"] == "s-1"
    assert any(s.name == "inject.render" and s.context.trace_id == root.context.trace_id for s in spans)


def test_a_session_key_holding_a_credential_is_not_traced(traced: Any) -> None:
    gw, exporter = traced
    token = "AKIA" + "Q7XW2LM9RK4ZP3TB"
    gw.call("meta/turn/inject", {"identity": "planner:main", "session_key": token, "query_text": "deploy"})
    gw.call("meta/session/note", {"identity": "planner:main", "session_key": token})
    spans = exporter.get_finished_spans()
    assert spans and all(token not in json.dumps(dict(s.attributes or {})) for s in spans)
    assert all("gen_ai.conversation.id" not in (s.attributes or {}) for s in spans)


def test_a_refusal_marks_the_span_failed_with_its_kind(traced: Any) -> None:
    gw, exporter = traced
    with pytest.raises(MetaError):
        gw.call("meta/agent_memory/remember", {"identity": "planner:main", "title": "t",
                                               "body": "token AKIAIOSFODNN7EXAMPLE"})
    root = next(s for s in exporter.get_finished_spans() if s.name == "meta/agent_memory/remember")
    assert root.status.status_code == StatusCode.ERROR
    assert root.attributes["error.type"] == "agent_memory"
    assert root.attributes["rpc.jsonrpc.error_code"] == -32040
    assert not root.events  # no exception event: its message could quote a value
    assert "AKIA" not in json.dumps(dict(root.attributes))


def test_traces_are_off_unless_configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_TRACES_EXPORTER", raising=False)
    runtime = Runtime(None, tmp_path / "s")
    try:
        assert not runtime.observability.tracing.enabled
    finally:
        runtime.close()
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    runtime = Runtime(None, tmp_path / "t")
    try:
        assert not runtime.observability.tracing.enabled
    finally:
        runtime.close()


def test_the_request_id_is_in_the_error_the_log_line_and_the_span(tmp_path: Path) -> None:
    """Through a real gateway: JSON logs and console spans on stderr, an error's data.request_id."""
    config = write_config(tmp_path / "c.toml", '[telemetry]\ntraces = "console"\nlog_format = "json"\n')
    gw = start_gateway(tmp_path / "s", config=config)
    try:
        body = {"jsonrpc": "2.0", "id": 1, "method": "meta/agent_memory/remember",
                "params": {"identity": "a:b", "title": "t", "body": "AKIAIOSFODNN7EXAMPLE"}}
        resp = httpx.post(gw.url + "/rpc", json=body, headers={"X-Request-Id": "ops-trace-7"})
        assert resp.headers["x-request-id"] == "ops-trace-7"
        assert resp.json()["error"]["data"]["request_id"] == "ops-trace-7"
        # a forged id (spaces, quotes, control characters) is replaced, never echoed
        forged = httpx.post(gw.url + "/rpc", json=body, headers={"X-Request-Id": 'x" injected\tline'})
        minted = forged.headers["x-request-id"]
        assert re.fullmatch(r"[0-9a-f]{16}", minted) and forged.json()["error"]["data"]["request_id"] == minted
        # a quarantined tool write logs a line during its call
        poisoned_write(gw.result, "a:b", "note", "web says hi")
    finally:
        gw.stop()
    lines = list(gw.proc.log_tail)
    spans = [json.loads(l) for l in lines if l.startswith("{") and '"trace_id"' in l and '"context"' in l]
    ours = [s for s in spans if s.get("attributes", {}).get("meta_memory.request_id") == "ops-trace-7"]
    assert ours and ours[0]["name"] == "meta/agent_memory/remember"
    logs = [json.loads(l) for l in lines if l.startswith('{"ts"')]
    assert logs, lines[-20:]
    for entry in logs:
        assert {"ts", "level", "logger", "message"} <= set(entry)
    logged = [e for e in logs if "request_id" in e]
    assert logged and all(re.fullmatch(r"[0-9a-f]{16}|ops-trace-7", e["request_id"]) for e in logged)
    assert all("trace_id" in e for e in logged)
    text = "\n".join(lines)
    assert "web says hi" not in text and "AKIAIOSFODNN7EXAMPLE" not in text


def test_a_made_up_method_name_never_reaches_a_span(tmp_path: Path) -> None:
    """Any caller, without a token, chooses the method name: as a span name or attribute it would carry
    whatever text (a pasted key, megabytes) into the trace backend, one new span name per call."""
    config = write_config(tmp_path / "c.toml", '[telemetry]\ntraces = "console"\n[access]\nenabled = true\n')
    gw = start_gateway(tmp_path / "s", config=config)
    made_up = ["sk-live-0123456789abcdefghij/exfil", "meta/agent_memory/recall\n" + "x" * 4000, "meta/status "]
    try:
        for i, name in enumerate(made_up):
            resp = httpx.post(gw.url + "/rpc", json={"jsonrpc": "2.0", "id": i, "method": name},
                              headers={"X-Request-Id": f"made-up-{i}"})
            assert resp.json()["error"]["code"] == -32601
    finally:
        gw.stop()
    spans = [json.loads(l) for l in gw.proc.log_tail if l.startswith("{") and '"trace_id"' in l and '"context"' in l]
    ours = [s for s in spans if str(s.get("attributes", {}).get("meta_memory.request_id", "")).startswith("made-up-")]
    assert len(ours) == len(made_up), [s["name"] for s in spans]
    for s in ours:
        assert s["name"] == "(unknown)" and s["attributes"]["rpc.method"] == "(unknown)", s
    dumped = json.dumps(ours)
    assert "sk-live" not in dumped and "xxxx" not in dumped and "meta/status" not in dumped

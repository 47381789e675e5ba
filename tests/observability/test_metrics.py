"""GET /metrics: Prometheus text through a real gateway, its grant, its own listener, its caps."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from meta_memory.config import parse_config
from meta_memory.runtime import Runtime
from meta_memory.server.gateway import Gateway
from support import access_toml, start_gateway, write_config

pytestmark = pytest.mark.gateway

OPS, WRITER = "ops-token-1", "writer-token-1"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition: ``(name, sorted labels) -> value`` (the parser refuses a malformed one)."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(text: str, name: str, **labels: str) -> float:
    return samples(text).get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture
def secured(tmp_path: Path) -> Any:
    cfg = write_config(tmp_path / "c.toml", access_toml(
        {OPS: "ops", WRITER: "writer"},
        [("ops", "operator.status"), ("writer", "agent.memory.write", {"identity": "a:b"}),
         ("writer", "agent.memory.read", {"identity": "a:b"}), ("writer", "agent.view", {"identity": "a:b"})])
        + '\n[gateway]\nmetrics_bind = "127.0.0.1:0"\n')
    gw = start_gateway(tmp_path / "state", config=cfg)
    yield gw
    gw.stop()


def _metrics_port(gw: Any) -> int:
    line = next(l for l in list(gw.proc.log_tail) if "metrics: http" in l)
    return int(re.search(r":(\d+)/metrics", line).group(1))


def test_metrics_need_operator_status_on_the_gateway_port(secured: Any) -> None:
    assert httpx.get(secured.url + "/metrics").status_code == 403  # anonymous: no grant
    assert httpx.get(secured.url + "/metrics", headers={"Authorization": "Bearer nope"}).status_code == 401
    refused = httpx.get(secured.url + "/metrics", headers={"Authorization": f"Bearer {WRITER}"})
    assert refused.status_code == 403 and refused.json()["error"]["data"]["kind"] == "access_denied"
    assert "meta_memory" not in refused.text
    ok = httpx.get(secured.url + "/metrics", headers={"Authorization": f"Bearer {OPS}"})
    assert ok.status_code == 200 and ok.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert samples(ok.text)  # parses as the Prometheus text format


def test_the_metrics_listener_serves_metrics_alone_without_a_token(secured: Any) -> None:
    port = _metrics_port(secured)
    own = f"http://127.0.0.1:{port}"
    assert httpx.get(own + "/metrics").status_code == 200
    # nothing else is reachable on the token-less listener
    rpc = httpx.post(own + "/rpc", json={"jsonrpc": "2.0", "method": "meta/status", "id": 1})
    assert rpc.status_code == 404
    assert httpx.get(own + "/console/").status_code == 404
    assert httpx.get(own + "/events").status_code == 404
    # a page on a foreign site reaching it through DNS rebinding is refused by the Host rule
    assert httpx.get(own + "/metrics", headers={"Host": "attacker.example"}).status_code in (400, 403, 421)


@pytest.mark.parametrize("query", ["token=x", "access_token=x", f"token={OPS}"])
def test_a_token_in_the_url_is_refused_on_both_listeners(secured: Any, query: str) -> None:
    """docs/security.md: a ``?token=`` query is refused with HTTP 400 naming it, before anything else is
    judged, even on the listener that needs no token and even when the header carries a good one."""
    field = query.split("=", 1)[0]
    for base in (secured.url, f"http://127.0.0.1:{_metrics_port(secured)}"):
        for headers in ({}, {"Authorization": f"Bearer {OPS}"}):
            refused = httpx.get(f"{base}/metrics?{query}", headers=headers)
            assert refused.status_code == 400, (base, refused.status_code)
            assert refused.json()["error"]["data"]["field"] == field and "meta_memory" not in refused.text


def test_calls_writes_and_refusals_are_counted(secured: Any) -> None:
    def remember(body: str, token: str = WRITER) -> dict[str, Any]:
        return secured.rpc("meta/agent_memory/remember", {"identity": "a:b", "title": "note", "body": body},
                           token=token)

    assert "result" in remember("the deploy window is friday")
    assert remember("the deploy window is friday")["result"]["created"] is False
    secret = remember("the key is AKIAIOSFODNN7EXAMPLE for the bucket")
    assert secret["error"]["data"]["reason"] == "secret_detected"
    assert remember("x" * 10, token="wrong-token") is not None  # 401: never reaches the table
    secured.rpc("meta/agent_memory/remember", {"identity": "c:d", "title": "t", "body": "b"}, token=WRITER)  # denied
    assert "result" in secured.rpc("meta/agent_memory/recall", {"identity": "a:b", "query_text": "deploy window"},
                                   token=WRITER)
    text = httpx.get(secured.url + "/metrics", headers={"Authorization": f"Bearer {OPS}"}).text
    assert value(text, "meta_memory_writes_total", outcome="created", reason="") == 1
    assert value(text, "meta_memory_writes_total", outcome="duplicate", reason="") == 1
    assert value(text, "meta_memory_writes_total", outcome="secret_refused", reason="aws-access-key-id") == 1
    assert value(text, "meta_memory_rpc_calls_total", method="meta/agent_memory/remember") == 4
    assert value(text, "meta_memory_rpc_errors_total", method="meta/agent_memory/remember", kind="access_denied") == 1
    assert value(text, "meta_memory_rpc_duration_seconds_count", method="meta/agent_memory/recall") == 1
    assert value(text, "meta_memory_recall_duration_seconds_count", path="recall") == 1
    assert value(text, "meta_memory_records", realm="default", status="active") == 1
    assert value(text, "meta_memory_quarantine_queue_depth", realm="default") == 0
    # metrics never carry memory content or a token
    assert "deploy" not in text and "AKIA" not in text and WRITER not in text


def test_unknown_method_names_do_not_grow_the_series(secured: Any) -> None:
    for i in range(40):
        secured.rpc(f"made/up/{i}", {}, token=OPS)
    text = httpx.get(secured.url + "/metrics", headers={"Authorization": f"Bearer {OPS}"}).text
    assert "made/up" not in text
    assert value(text, "meta_memory_rpc_errors_total", method="(unknown)", kind="method_not_found") == 40


def test_a_gateway_without_access_serves_metrics_like_every_route(gateway: Any) -> None:
    gateway.rpc("meta/agent_memory/remember", {"identity": "a:b", "title": "t", "body": "quarantine me not"})
    text = httpx.get(gateway.url + "/metrics").text
    assert value(text, "meta_memory_writes_total", outcome="created", reason="") == 1


def test_every_creation_is_counted_once(gateway: Any) -> None:
    # the series is looked up at the first creation and reused: the later ones still count, one each
    for i in range(3):
        gateway.rpc("meta/agent_memory/remember", {"identity": "a:b", "title": f"t{i}", "body": f"note number {i}"})
    gateway.rpc("meta/agent_memory/remember", {"identity": "a:b", "title": "t0", "body": "note number 0"})  # duplicate
    text = httpx.get(gateway.url + "/metrics").text
    assert value(text, "meta_memory_writes_total", outcome="created", reason="") == 3
    assert value(text, "meta_memory_writes_total", outcome="duplicate", reason="") == 1


def test_metrics_off_answer_404(tmp_path: Path) -> None:
    gw = start_gateway(tmp_path / "s", config=write_config(tmp_path / "c.toml", "[telemetry]\nmetrics = false\n"))
    try:
        assert httpx.get(gw.url + "/metrics").status_code == 404
    finally:
        gw.stop()


def _embedded(tmp_path: Path, name: str, toml: str = "") -> tuple[Runtime, Gateway]:
    import tomllib

    runtime = Runtime(parse_config(tomllib.loads(toml)), tmp_path / name)
    return runtime, Gateway.for_runtime(runtime)


def test_each_runtime_has_its_own_registry(tmp_path: Path) -> None:
    one, g1 = _embedded(tmp_path, "one")
    two, g2 = _embedded(tmp_path, "two")
    try:
        for _ in range(3):
            g1.call("meta/agent_memory/remember", {"identity": "a:b", "title": "t", "body": "one"})
        text_one, text_two = one.observability.metrics.render().decode(), two.observability.metrics.render().decode()
        assert value(text_one, "meta_memory_rpc_calls_total", method="meta/agent_memory/remember") == 3
        assert value(text_two, "meta_memory_rpc_calls_total", method="meta/agent_memory/remember") == 0
        from prometheus_client import REGISTRY

        assert REGISTRY.get_sample_value("meta_memory_rpc_calls_total", {"method": "meta/agent_memory/remember"}) is None
    finally:
        one.close()
        two.close()


def test_the_store_census_is_read_once_per_ttl_whatever_the_scrape_rate(tmp_path: Path) -> None:
    runtime, gw = _embedded(tmp_path, "s", "[telemetry]\nstats_ttl_s = 60\n")
    try:
        gw.call("meta/agent_memory/remember", {"identity": "a:b", "title": "t", "body": "b"})
        for _ in range(50):
            text = runtime.observability.metrics.render().decode()
        assert runtime.observability.metrics.census.refreshes == 1
        assert value(text, "meta_memory_records", realm="default", status="active") == 1
        # within the TTL a new record is not counted yet: the scrape did not read the store again
        gw.call("meta/agent_memory/remember", {"identity": "a:b", "title": "t2", "body": "b2"})
        text = runtime.observability.metrics.render().decode()
        assert value(text, "meta_memory_records", realm="default", status="active") == 1
        assert runtime.observability.metrics.census.refreshes == 1
    finally:
        runtime.close()


@pytest.mark.parametrize("toml, message", [
    ("[telemetry]\nstats_ttl_s = 0\n", "telemetry.stats_ttl_s must be a number of seconds from 1"),
    ("[telemetry]\ntraces = \"zipkin\"\n", "telemetry.traces must be one of 'off', 'otlp', 'console'"),
    ("[telemetry]\nlog_format = \"xml\"\n", "telemetry.log_format must be one of 'text', 'json'"),
    ("[telemetry]\nmetricz = true\n", "unknown key telemetry.metricz"),
    ("[gateway]\nmetrics_bind = \"example.com:9464\"\n", "gateway.metrics_bind must be \"host:port\""),
    ("[gateway]\nmetrics_bind = \"127.0.0.1\"\n", "gateway.metrics_bind must be \"host:port\""),
    ("[gateway]\nbackup_dir = \"relative/dir\"\n", "gateway.backup_dir must be an absolute directory path"),
])
def test_bad_telemetry_settings_are_refused_naming_the_key(toml: str, message: str) -> None:
    import tomllib

    from meta_memory.errors import ConfigError

    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_config(tomllib.loads(toml))


def test_the_memory_tool_counts_quarantined_and_refused_writes_and_taint(tmp_path: Path) -> None:
    from support import poisoned_write

    runtime, gw = _embedded(tmp_path, "s")
    try:
        poisoned_write(gw.call, "a:b", "from the web", "a claim the page made")
        out = gw.call("meta/agent_memory/tool", {"identity": "a:b", "session_key": "clean-1", "arguments": {
            "action": "remember", "title": "creds", "body": "use AKIAIOSFODNN7EXAMPLE"}})
        assert out["is_error"] is True
        text = runtime.observability.metrics.render().decode()
        assert value(text, "meta_memory_writes_total", outcome="secret_refused", reason="aws-access-key-id") == 1
        quarantined = [v for (name, labels), v in samples(text).items()
                       if name == "meta_memory_writes_total" and ("outcome", "quarantined") in labels]
        assert quarantined == [1.0]
        assert value(text, "meta_memory_taint_transitions_total", kind="tainted") == 1
        assert value(text, "meta_memory_writes_total", outcome="created", reason="") == 0
        assert value(text, "meta_memory_quarantine_queue_depth", realm="default") == 1
    finally:
        runtime.close()


def test_the_metrics_listener_may_not_share_the_gateway_port(tmp_path: Path) -> None:
    import socket
    import subprocess
    import sys

    for _ in range(5):  # a free port found here can be taken by another process before the gateway binds it
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        cfg = write_config(tmp_path / "c.toml", f'[gateway]\nmetrics_bind = "127.0.0.2:{port}"\n')
        done = subprocess.run([sys.executable, "-m", "meta_memory.cli", "serve", "--port", str(port), "--state-dir",
                               str(tmp_path / "s"), "--config", str(cfg)], capture_output=True, text=True, timeout=60)
        if "cannot listen on" not in done.stderr:
            break
    assert done.returncode == 1 and "port of its own" in done.stderr
    assert not (tmp_path / "s").exists()


def test_quarantine_reasons_are_a_fixed_set_of_labels_naming_no_session_tool_or_sender(tmp_path: Path) -> None:
    """A caller chooses session keys, tool names and peer senders, and the firewall's reason text names
    them: as a label it would add one series per choice (and publish the session keys)."""
    host = "host-token-1"
    cfg = write_config(tmp_path / "c.toml", access_toml(
        {OPS: "ops", host: "host"},
        [("ops", "operator.status"), ("host", "agent.session.manage", {"identity": "a:b"}),
         *(("host", a, {"identity": "a:b"}) for a in ("agent.memory.write", "agent.memory.read", "agent.view"))]))
    gw = start_gateway(tmp_path / "state", config=cfg)
    try:
        for i in range(12):
            key = f"private-conversation-{i}"
            tainted = gw.result("meta/turn/tool_result", {"identity": "a:b", "session_key": key,
                                                          "tool_name": f"mcp__scraper{i}__fetch_page"}, token=host)
            assert tainted["session_tainted"] is True
            out = gw.result("meta/agent_memory/tool", {"identity": "a:b", "session_key": key, "arguments": {
                "action": "remember", "title": f"note {i}", "body": "what the page said"}}, token=host)
            assert "QUARANTINED" in out["text"]
            derived = gw.result("meta/agent_memory/remember", {"identity": "a:b", "title": f"summary {i}",
                                                               "body": "the session's gist",
                                                               "derived_from_sessions": [key]}, token=host)
            assert derived["quarantined"].startswith("derived from a session tainted by ") and key not in derived["quarantined"]
        text = httpx.get(gw.url + "/metrics", headers={"Authorization": f"Bearer {OPS}"}).text
    finally:
        gw.stop()
    assert "private-conversation" not in text and "scraper" not in text
    reasons = {dict(labels)["reason"]: v for (name, labels), v in samples(text).items()
               if name == "meta_memory_writes_total" and ("outcome", "quarantined") in labels}
    assert reasons == {"session_tainted": 12, "derived_session_tainted": 12}, reasons

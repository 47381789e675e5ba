"""``GET /v1/ready``'s short answer needs no token under any access configuration, so a load balancer
probing without one never marks a healthy gateway down; the detailed answer keeps its rule.

Before, with the quickstart's tokens (``[[access.tokens]]`` without ``[access] enabled = true``) a
probe without a token got 401. Driven over a real socket against ``meta-memory serve``.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from support import access_toml, start_gateway, write_config

OPS = "tok-ops-0123456789"
HOST = "tok-host-0123456789"
SHORT = {"status": "ready", "failing": []}


def _ready(url: str, token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.get(url + "/v1/ready", headers=headers, timeout=60)


@pytest.mark.parametrize("setup", ["tokens_only", "access_enabled"])
def test_the_short_readiness_answer_needs_no_token(tmp_path: Path, setup: str) -> None:
    grants = [("ops", "operator.status"), ("host", "agent.memory.read", {"identity": "lead:main"})]
    config = write_config(tmp_path / "meta.toml", access_toml({OPS: "ops", HOST: "host"}, grants,
                                                              header=setup == "access_enabled"))
    with start_gateway(tmp_path / "state", config=config) as gw:
        for headers in ({}, {"Authorization": ""}):
            answer = httpx.get(gw.url + "/v1/ready", headers=headers, timeout=60)
            assert answer.status_code == 200, answer.text
            assert answer.json() == SHORT and answer.headers["cache-control"] == "no-store"
        # a token the gateway does not know is still refused, as on /rpc
        assert _ready(gw.url, "tok-not-a-token-000000").status_code == 401
        # the detailed answer still needs operator.status (every token holds it with access off)
        detailed = _ready(gw.url, OPS)
        assert detailed.status_code == 200 and "checks" in detailed.json()
        host = _ready(gw.url, HOST).json()
        assert ("checks" in host) is (setup == "tokens_only")
        # /rpc keeps its rule: without access control, tokens are the only guard
        rpc = httpx.post(gw.url + "/rpc", json={"jsonrpc": "2.0", "id": 1, "method": "meta/status"}, timeout=60)
        assert rpc.status_code == (401 if setup == "tokens_only" else 200)


def test_without_access_every_caller_gets_the_detailed_answer(tmp_path: Path) -> None:
    with start_gateway(tmp_path / "state") as gw:
        answer = _ready(gw.url)
        assert answer.status_code == 200 and answer.json()["status"] == "ready" and answer.json()["checks"] == []

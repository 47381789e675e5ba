"""``X-Forwarded-For`` / ``X-Forwarded-Proto`` through a real gateway (``[gateway] forwarded_allow_ips``).

By default no client's forwarded headers are honoured, loopback included: a local process can forge
neither its address (in the gateway's log and connection accounting) nor its scheme (a forged
``X-Forwarded-Proto: https`` would make ``Origin: https://127.0.0.1:PORT`` pass for the gateway's own
origin). A reverse proxy's addresses are listed in ``forwarded_allow_ips``; a bad entry stops the
gateway at start naming the key and the rule.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from meta_memory.config import parse_config
from meta_memory.errors import ConfigError
from support import GatewayProcess, write_config

FORGED_CLIENT = "203.0.113.9"


def _forged_https_origin(gw: GatewayProcess) -> httpx.Response:
    port = gw.url.rsplit(":", 1)[1]
    headers = {"Origin": f"https://127.0.0.1:{port}", "X-Forwarded-Proto": "https",
               "Content-Type": "application/json"}
    return httpx.post(gw.url + "/rpc", json={"jsonrpc": "2.0", "id": 1, "method": "meta/capabilities"},
                      headers=headers, timeout=30)


def _refusal_logged_from(gw: GatewayProcess) -> str:
    """Send a request the perimeter refuses (a foreign ``Host``) with a forged ``X-Forwarded-For`` and
    return the client the refusal's log line names."""
    resp = httpx.get(gw.url + "/v1/health", headers={"Host": "evil.example", "X-Forwarded-For": FORGED_CLIENT},
                     timeout=30)
    assert resp.status_code == 421
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for line in list(gw.proc.log_tail):  # type: ignore[attr-defined]
            if "refused GET /v1/health from " in line:
                return line.split(" from ", 1)[1].split(":", 1)[0]
        time.sleep(0.05)
    raise AssertionError("no refusal line was logged")


def test_forwarded_headers_are_ignored_by_default(gateway: GatewayProcess) -> None:
    resp = _forged_https_origin(gateway)
    assert resp.status_code == 403 and resp.json()["error"]["data"]["field"] == "origin"
    assert _refusal_logged_from(gateway) == "127.0.0.1"


def test_forwarded_headers_are_honoured_from_a_listed_proxy(gateway_factory: Any, tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "g.toml", '[gateway]\nforwarded_allow_ips = ["127.0.0.1", "10.0.0.0/8"]\n')
    gw = gateway_factory(tmp_path / "s", config=cfg)
    resp = _forged_https_origin(gw)
    assert resp.status_code == 200 and "result" in resp.json()
    assert _refusal_logged_from(gw) == FORGED_CLIENT


def test_a_proxy_list_of_other_addresses_leaves_loopback_untrusted(gateway_factory: Any, tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "g.toml", '[gateway]\nforwarded_allow_ips = ["10.1.2.3"]\n')
    gw = gateway_factory(tmp_path / "s", config=cfg)
    assert _forged_https_origin(gw).status_code == 403
    assert _refusal_logged_from(gw) == "127.0.0.1"


@pytest.mark.parametrize(("value", "rule"), [
    (["*"], r"forwarded_allow_ips\[0\]: '\*' is refused"),
    (["127.0.0.1", "proxy.internal"], r"forwarded_allow_ips\[1\]: 'proxy.internal' is not an IP address or network"),
    (["10.0.0.1/8"], r"forwarded_allow_ips\[0\]: '10.0.0.1/8' is not an IP address or network.*host bits"),
    ("127.0.0.1", r"forwarded_allow_ips must be an array of strings"),
    ([1], r"forwarded_allow_ips must be an array of strings"),
])
def test_a_bad_proxy_list_is_refused_naming_the_key(value: Any, rule: str) -> None:
    with pytest.raises(ConfigError, match=rf"gateway\.{rule}"):
        parse_config({"gateway": {"forwarded_allow_ips": value}})


def test_a_gateway_with_a_bad_proxy_list_does_not_start(gateway_factory: Any, tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "g.toml", '[gateway]\nforwarded_allow_ips = ["localhost"]\n')
    gw = gateway_factory(tmp_path / "s", config=cfg, expect_failure=True)
    assert gw.proc.wait(timeout=30) != 0
    assert "gateway.forwarded_allow_ips[0]: 'localhost' is not an IP address" in gw.proc.stderr.read()

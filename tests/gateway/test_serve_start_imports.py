"""What ``meta-memory serve`` imports before it answers ``GET /v1/health``: none of the libraries only some
requests or configurations need. An HTTP client (httpx, with the Rich and Pygments its command line pulls in) is
for a ledger endpoint's health check and an LLM steward; Rich is for the command line's tables. Each costs every
gateway start (and every test that starts one) CPU time no request of a default gateway uses."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.gateway

#: Top-level packages a default gateway must not import to start and serve its health check.
NOT_AT_START = ("httpx", "httpcore", "rich", "pygments")


def _imported_by_a_started_gateway(tmp_path: Path) -> set[str]:
    """The top-level modules a ``serve`` process (``-X importtime``) imported by the time it answered
    ``GET /v1/health``."""
    log = tmp_path / "importtime.txt"
    with log.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-X", "importtime", "-m", "meta_memory.cli", "serve", "--port", "0",
                                 "--state-dir", str(tmp_path / "state")], stdout=subprocess.PIPE, stderr=err, text=True)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert "listening on " in line, line
            url = line.split("listening on ", 1)[1].split()[0]
            deadline = time.monotonic() + 30
            while True:
                try:
                    if httpx.get(url + "/v1/health", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline, "the gateway did not answer its health check"
                time.sleep(0.05)
        finally:
            proc.kill()
            proc.wait()
    names = set()
    for entry in log.read_text(encoding="utf-8").splitlines():
        if entry.startswith("import time:") and entry.count("|") == 2:
            names.add(entry.rsplit("|", 1)[1].strip().split(".", 1)[0])
    return names


def test_serve_starts_without_an_http_client_or_rich(tmp_path: Path) -> None:
    imported = _imported_by_a_started_gateway(tmp_path)
    assert "meta_memory" in imported and "uvicorn" in imported, sorted(imported)  # the log is read
    assert not imported & set(NOT_AT_START), sorted(imported & set(NOT_AT_START))

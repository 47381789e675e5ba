"""``serve --log-format json``: every line on stderr is one JSON object, the console's address and a
refusal to start included; stdout keeps its one documented ``listening on`` line."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.gateway


def serve(state: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "meta_memory.cli", "serve", "--state-dir", str(state), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ})


def wait_served(url: str) -> None:
    """Until the gateway answers (its start-up lines are all written by then)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/v1/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.05)
    pytest.fail("the gateway did not answer")


def json_lines(text: str) -> list[dict[str, object]]:
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines, "nothing on stderr"
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            pytest.fail(f"a stderr line is not JSON: {line!r}")
    return out


def test_the_console_line_is_a_json_log_line_and_stdout_keeps_the_listening_line(tmp_path: Path) -> None:
    proc = serve(tmp_path / "s", "--port", "0", "--log-format", "json")
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("meta-memory gateway listening on http://127.0.0.1:"), first
        url = first.split("listening on ", 1)[1].split()[0]
        wait_served(url)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert out.strip() == "", out  # the one stdout line was the listening line
    said = json_lines(err)
    consoles = [line for line in said if str(line["message"]).startswith("console: ")]
    assert [c["message"] for c in consoles] == [f"console: {url}/console/"]
    assert consoles[0]["level"] == "info" and consoles[0]["logger"] == "meta_memory.gateway"


def test_text_logs_keep_the_plain_console_line(tmp_path: Path) -> None:
    proc = serve(tmp_path / "s", "--port", "0")
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split("listening on ", 1)[1].split()[0]
        wait_served(url)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert f"console: {url}/console/\n" in err


def test_a_refusal_to_start_is_a_json_line_too(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = serve(tmp_path / "s", "--port", str(port), "--log-format", "json")
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and out == ""
    [line] = json_lines(err)
    assert line["level"] == "error" and f"127.0.0.1:{port}" in str(line["message"])
    bad = tmp_path / "bad.toml"
    bad.write_text("x=")
    proc = serve(tmp_path / "s", "--port", "0", "--log-format", "json", "--config", str(bad))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    [line] = json_lines(err)
    assert line["level"] == "error" and "bad.toml" in str(line["message"])

"""A bearer token (``--token`` or ``META_MEMORY_TOKEN``) or an MCP ``--session-key`` given with whitespace
around it is refused naming where it came from (exit 2, nothing contacted), never trimmed into another
value: as a padded identity or realm already is. Driven through the ``meta-memory`` command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

NOWHERE = "http://127.0.0.1:9"  # nothing listens: a command that got past its options would exit 1, not 2


def _run(*args: str, env: dict[str, str] | None = None, stdin: bytes | None = b"") -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "META_MEMORY_TOKEN"}
    return subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], input=stdin.decode() if stdin else "",
                          capture_output=True, text=True, timeout=120, env={**base, **(env or {})})


def _commands(tmp_path: Path) -> list[list[str]]:
    locomo = tmp_path / "locomo.json"
    locomo.write_text("[]", encoding="utf-8")
    return [
        ["remember", "Title", "Body", "--identity", "lead:main", "--url", NOWHERE],
        ["recall", "query", "--identity", "lead:main", "--url", NOWHERE],
        ["export", "--url", NOWHERE, "-o", str(tmp_path / "out.jsonl")],
        ["backup", str(tmp_path / "b"), "--url", NOWHERE],
        ["replay", str(locomo), "--url", NOWHERE],
        ["mcp", "--identity", "lead:main", "--url", NOWHERE],
    ]


@pytest.mark.parametrize("token", [" tok-0123456789", "tok-0123456789 ", "tok-0123456789\n", "\ttok-0123456789", "tok-01234 56789"])
def test_a_padded_token_option_is_refused_naming_it(tmp_path: Path, token: str) -> None:
    for command in _commands(tmp_path):
        out = _run(*command, "--token", token)
        assert out.returncode == 2, (command, out.stdout, out.stderr)
        said = " ".join(out.stderr.split())
        assert "--token" in said and "must not contain whitespace" in said, (command, said)
        assert "never trimmed" in said and token.strip() not in said, (command, said)
    assert not (tmp_path / "out.jsonl").exists()


def test_a_padded_token_in_the_environment_is_refused_naming_it(tmp_path: Path) -> None:
    for command in _commands(tmp_path):
        out = _run(*command, env={"META_MEMORY_TOKEN": "tok-0123456789\n"})
        assert out.returncode == 2, (command, out.stderr)
        said = " ".join(out.stderr.split())
        assert "META_MEMORY_TOKEN" in said and "must not contain whitespace" in said, (command, said)
    out = _run("gateway", "--stdio", "--state-dir", str(tmp_path / "state"),
               env={"META_MEMORY_TOKEN": " tok-0123456789"}, stdin=b'{"jsonrpc":"2.0","method":"meta/status","id":1}\n')
    assert out.returncode != 0 and '"result"' not in out.stdout, out.stdout
    assert "META_MEMORY_TOKEN must not contain whitespace" in " ".join(out.stderr.split()), out.stderr


def test_an_empty_token_is_no_token(tmp_path: Path) -> None:
    out = _run("recall", "query", "--identity", "lead:main", "--url", NOWHERE, "--token", "")
    assert out.returncode == 1 and "whitespace" not in out.stderr, out.stderr  # it got as far as the gateway


@pytest.mark.parametrize("key", [" ide-1", "ide-1 ", "ide-1\n", "\u00a0ide-1"])
def test_a_padded_mcp_session_key_is_refused(tmp_path: Path, key: str) -> None:
    for where in (["--url", NOWHERE], ["--state-dir", str(tmp_path / "state")]):
        out = _run("mcp", "--identity", "lead:main", "--session-key", key, *where)
        assert out.returncode == 2, (where, out.stderr)
        assert "--session-key must not begin or end with whitespace" in out.stderr, out.stderr
    assert not (tmp_path / "state").exists()


@pytest.mark.parametrize("key", ["ide\u200b-1", "\u202eide-1", "ide-1\ufe0f"])
def test_an_mcp_session_key_with_hidden_characters_is_refused(tmp_path: Path, key: str) -> None:
    """The option follows the one session-key rule the gateway applies to ``session_key``."""
    out = _run("mcp", "--identity", "lead:main", "--session-key", key, "--state-dir", str(tmp_path / "state"))
    assert out.returncode == 2, out.stderr
    assert "--session-key must not contain invisible or direction-changing characters" in out.stderr, out.stderr
    assert not (tmp_path / "state").exists()

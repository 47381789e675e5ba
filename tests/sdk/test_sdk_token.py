"""``Meta.connect`` with a token that cannot be sent as it is is refused at once, naming the rule and never
the token: not a transport error repeating the header (a ``ConnectionError`` a retry loop would log again)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from meta_memory import Meta
from meta_memory.errors import ConfigError
from meta_memory.sdk import GatewayUnreachable

URL = "http://127.0.0.1:1"  # nothing listens: a token that passed the check would get as far as the socket


@pytest.mark.parametrize("token", ["s3cret-token\n", "s3cret-token ", " s3cret-token", "s3cret\ttoken",
                                   "s3cret token", "s3cret\u00a0token"])
def test_a_token_with_whitespace_is_refused_without_repeating_it(token: str) -> None:
    for connect in (Meta.connect, Meta.connect_async):
        with pytest.raises(ConfigError, match="must not contain whitespace") as info:
            connect(URL, token=token)
        assert "s3cret" not in str(info.value) and not isinstance(info.value, ConnectionError)


@pytest.mark.parametrize("token", ["s\u00e9cret-token", "s3cret\x00token", "s3cret\x7ftoken", "\u200bs3cret"])
def test_a_token_a_header_cannot_carry_is_refused_without_repeating_it(token: str) -> None:
    for connect in (Meta.connect, Meta.connect_async):
        with pytest.raises(ConfigError, match="sent over HTTP must be printable ASCII") as info:
            connect(URL, token=token)
        assert "cret" not in str(info.value)


def test_an_empty_token_is_no_token_and_a_good_one_reaches_the_transport() -> None:
    for token in ("", None, "tok-0123456789"):
        handle = Meta.connect(URL, token=token)
        try:
            with pytest.raises(GatewayUnreachable) as info:
                handle.agent("lead:main").list()
            assert "tok-0123456789" not in str(info.value)
        finally:
            handle.close()


def test_a_token_only_a_header_cannot_carry_is_refused_only_where_one_is_sent(tmp_path: Path) -> None:
    """``gateway --stdio`` and embedded commands take a non-ASCII token (it is never put in a header); with
    ``--url`` the command refuses it before contacting anything, not with a traceback."""
    env = {**os.environ, "META_MEMORY_TOKEN": "t\u00f6k-0123456789"}
    embedded = subprocess.run([sys.executable, "-m", "meta_memory.cli", "list", "--identity", "lead:main",
                               "--state-dir", str(tmp_path / "state")], capture_output=True, text=True,
                              timeout=120, env=env)
    assert "printable ASCII" not in embedded.stderr and "whitespace" not in embedded.stderr, embedded.stderr
    remote = subprocess.run([sys.executable, "-m", "meta_memory.cli", "list", "--identity", "lead:main",
                             "--url", URL], capture_output=True, text=True, timeout=120, env=env)
    assert remote.returncode == 1 and "sent over HTTP must be printable ASCII" in remote.stderr, remote.stderr
    assert "Traceback" not in remote.stderr and "t\u00f6k" not in remote.stderr

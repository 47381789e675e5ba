"""A credential a host puts in a session key is never recorded, and the session still works (real gateway).

A host that names its session with a token (``ghp_...``, ``AKIA...``) used to have that token written to
session state, the timeline, the injection ledger, the harvest queue and the evidence of records derived
from the session, and shown to whoever may manage the session. Now every session method (and
``derived_from_sessions``) records such a key as ``redacted-session:<32 hex>``, a keyed digest: nothing
under the state directory, in an answer, an event, ``meta/status`` or a log line holds the credential,
while every call naming the key still reaches its one session (its taint, a refused report's taint).
Realistic session ids are recorded as given.
"""

from __future__ import annotations

import base64
import json
import random
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support import GatewayProcess, start_gateway

pytestmark = pytest.mark.gateway

AGENT = "lead:main"
#: a GitHub personal access token's shape, an AWS access key id's, one glued to a prefix, a GitLab token's
GITHUB = "ghp_" + "Zq7Rk2Lm9Xw4" * 3
AWS = "AKIA" + "Q7XW2LM9RK4ZP3TB"
GLUED = "slack-thread-" + "github_pat_11" + "AbCdEfGh1234567890XyZw"
GITLAB = "glpat-" + "x1Y2z3W4v5U6t7S8r9Q0"
SECRET_KEYS = [GITHUB, AWS, GLUED, GITLAB]
#: the text of each credential, which must appear nowhere
CREDENTIALS = [GITHUB, AWS, "github_pat_11AbCdEfGh1234567890XyZw", GITLAB]

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_rng = random.Random(20261206)


def _b64url(n: int) -> str:
    return base64.urlsafe_b64encode(_rng.randbytes(n)).decode().rstrip("=")


#: ids hosts and frameworks mint: every one is recorded exactly as given
REALISTIC = [
    str(uuid.UUID(int=_rng.getrandbits(128), version=4)),
    uuid.UUID(int=_rng.getrandbits(128), version=4).hex,
    _rng.randbytes(16).hex(),
    _rng.randbytes(32).hex(),
    "01" + "".join(_rng.choice(_CROCKFORD) for _ in range(24)),  # a ULID
    _b64url(12), _b64url(16), _b64url(24), _b64url(32),
    "thread-123",
    "slack:C0123:1700000000.000100",
    "thread_" + "".join(_rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") for _ in range(24)),
    f"langgraph:{uuid.UUID(int=_rng.getrandbits(128), version=4)}",
    "session-1",
]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    gw = start_gateway(tmp_path_factory.mktemp("session-key-secret") / "state")
    try:
        yield gw
    finally:
        gw.stop()


def _tool(gw: GatewayProcess, key: str, title: str, **extra: Any) -> dict[str, Any]:
    params = {"identity": AGENT, "session_key": key,
              "arguments": {"action": "remember", "title": title, "body": f"{title}: the office moved to pier 9."},
              **extra}
    out: dict[str, Any] = gw.result("meta/agent_memory/tool", params)
    assert out["is_error"] is False, out
    return out


def _everything_shown(gw: GatewayProcess) -> str:
    """Every answer a reader or operator can get about the sessions, and the gateway's log, as one text."""
    shown = [
        gw.result("meta/events/list", {}),
        gw.result("meta/status", {}),
        gw.result("meta/agent_memory/list", {"identity": AGENT}),
        gw.result("meta/memory/panel/quarantine", {}),
        gw.result("meta/memory/panel/injections", {}),
        gw.result("meta/memory/panel/harvests", {}),
    ]
    log = "".join(getattr(gw.proc, "log_tail", []))
    return json.dumps(shown) + log


def _state_bytes(state: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(state.rglob("*")) if p.is_file())


@pytest.mark.parametrize("key", SECRET_KEYS, ids=["github", "aws", "glued", "gitlab"])
def test_a_session_named_by_a_credential_is_recorded_by_its_digest(gateway: GatewayProcess, key: str) -> None:
    note = gateway.result("meta/session/note", {"identity": AGENT, "session_key": key})
    recorded = note["session_key"]
    assert recorded.startswith("redacted-session:") and len(recorded) == len("redacted-session:") + 32, note
    assert note["tainted"] is False
    # the same key always names the same session: its taint follows every call naming it
    verdict = gateway.result("meta/turn/tool_result", {"identity": AGENT, "session_key": key, "tool_name": "web_fetch"})
    assert verdict["session_tainted"] is True, verdict
    assert "QUARANTINED" in _tool(gateway, key, f"tainted {key[:4]}")["text"]
    again = gateway.result("meta/session/note", {"identity": AGENT, "session_key": key})
    assert again["session_key"] == recorded and again["tainted"] is True, again
    # content derived from that session is judged on it too
    derived = gateway.result("meta/agent_memory/remember", {"identity": AGENT, "title": f"summary {key[:4]}",
                                                            "body": "the summary", "derived_from_sessions": [key]})
    assert derived["quarantined"], derived
    gateway.result("meta/turn/inject", {"identity": AGENT, "session_key": key, "query_text": "office pier"})
    gateway.result("meta/session/retire", {"identity": AGENT, "session_key": key, "cause": "done"})
    reset = gateway.result("meta/session/reset", {"identity": AGENT, "session_key": key})
    assert reset["session_key"] == recorded and reset["tainted"] is False, reset


def test_a_refused_report_taints_the_session_of_a_credential_key(gateway: GatewayProcess) -> None:
    """A report refused for another member still taints the session its key names (fail closed): the
    host keeps naming that key, so its writes from it land quarantined."""
    key = "ghp_" + "Rp4Tz8Wn1Qv6" * 3
    assert "QUARANTINED" not in _tool(gateway, key, "before the refused report")["text"]
    error = gateway.error("meta/turn/tool_result", {"identity": AGENT, "session_key": key, "tool_name": "x" * 600})
    assert error["code"] == -32602 and error["data"]["field"] == "tool_name", error
    text = _tool(gateway, key, "after the refused report")["text"]
    assert "QUARANTINED" in text and "tool result refused:" in text, text
    assert key not in json.dumps(error)


def test_no_surface_and_no_file_holds_the_credential(gateway: GatewayProcess) -> None:
    for key in SECRET_KEYS:  # the sessions exist (the order of the tests in this module does not matter)
        gateway.result("meta/turn/tool_result", {"identity": AGENT, "session_key": key, "tool_name": "web_fetch"})
    deadline = time.monotonic() + 20
    while not gateway.result("meta/memory/panel/injections", {})["injections"]:
        assert time.monotonic() < deadline, "no injection was ever logged"
        gateway.result("meta/turn/inject", {"identity": AGENT, "session_key": GITHUB, "query_text": "office pier"})
        time.sleep(0.2)
    shown = _everything_shown(gateway)
    state = _state_bytes(gateway.state_dir)
    for credential in CREDENTIALS:
        assert credential not in shown, credential
        assert credential.encode() not in state, credential
    assert "redacted-session:" in shown  # the sessions are there, by their digest


def test_realistic_session_ids_are_recorded_as_given(gateway: GatewayProcess) -> None:
    for key in REALISTIC:
        note = gateway.result("meta/session/note", {"identity": AGENT, "session_key": key})
        assert note["session_key"] == key, note
        verdict = gateway.result("meta/turn/tool_result", {"identity": AGENT, "session_key": key,
                                                           "tool_name": "calculator"})
        assert verdict == {"trusted": True, "session_tainted": False}, (key, verdict)
        reset = gateway.result("meta/session/reset", {"identity": AGENT, "session_key": key})
        assert reset["session_key"] == key, reset

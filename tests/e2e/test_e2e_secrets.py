"""Secrets never enter memory by another door: every write path refuses the leaked formats through
the real gateway, the refusal never echoes the secret, and a refused write leaves nothing behind."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from e2e_support import Rpc, uid

# The examples, each as (title, body): every one must be refused.
EXAMPLES = {
    "aws split across title and body": ("Deploy key AKIAIOSFOD", "NN7EXAMPLE was rotated last week"),
    "aws with a zero-width space": ("Deploy key", "the key is AKIAIOSFOD\u200bNN7EXAMPLE"),
    "aws in fullwidth": ("Deploy key", "the key is ＡＫＩＡIOSFODNN7EXAMPLE"),
    "openai sk-proj": ("OpenAI", "use sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAB7CD0EF for the batch job"),
    "slack xoxb": ("Slack bot", "token xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"),
    "jwt bearer header": ("API call", "send Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"
                                      ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
    "password: hunter2": ("Router", "admin login, password: hunter2"),
    "an env file's GITHUB_TOKEN": ("CI", "the runner has GITHUB_TOKEN=9f8e7d6c5b4a39281706f5e4d3c2b1a0 set"),
    "a bare token assignment": ("Bot", 'config: token = "Xq7Lm2Np9Rs4Tv6Wy8Za1Bc3De5Fg"'),
    "an ENCRYPTION_KEY": ("Backups", "ENCRYPTION_KEY: b7e4c1f8a2d5e9c3f6a0b4d8e2c5f9a1"),
}
FRAGMENTS = ("AKIAIOSFOD", "NN7EXAMPLE", "IOSFODNN", "Ab3dEf6h", "AbCdEfGh", "dozjgNry", "eyJzdWIi", "hunter2",
             "9f8e7d6c5b4a", "Xq7Lm2Np", "b7e4c1f8a2")


def _no_echo(obj: Any) -> None:
    dumped = json.dumps(obj, ensure_ascii=False)
    assert not [f for f in FRAGMENTS if f in dumped], dumped


@pytest.mark.parametrize("case", sorted(EXAMPLES))
def test_remember_refuses_every_example_without_echo_or_residue(rpc: Rpc, case: str) -> None:
    ident = uid()
    title, body = EXAMPLES[case]
    err = rpc.error("meta/agent_memory/remember", {"identity": ident, "title": title, "body": body})
    assert err["code"] == -32040 and err["data"]["reason"] == "secret_detected"
    assert "secret pattern class" in err["message"]
    _no_echo(err)
    assert rpc.manifest_ids(ident) == []


@pytest.mark.parametrize("case", sorted(EXAMPLES))
def test_the_memory_tool_refuses_every_example(rpc: Rpc, case: str) -> None:
    ident, session = uid(), uid("sess")
    title, body = EXAMPLES[case]
    out = rpc.tool(ident, {"action": "remember", "title": title, "body": body}, session)
    assert out["is_error"] is True and "secret pattern class" in out["text"]
    _no_echo(out)
    assert rpc.manifest_ids(ident) == []


def test_update_refuses_a_secret_and_the_prior_stays_as_it_was(rpc: Rpc) -> None:
    ident, session = uid(), uid("sess")
    prior = rpc.remember(ident, "Router", "the router is in the hall closet")["memory_id"]
    err = rpc.error("meta/agent_memory/update", {"identity": ident, "memory_id": prior, "title": "Router",
                                                 "body": "password: hunter2"})
    assert err["data"]["reason"] == "secret_detected"
    _no_echo(err)
    out = rpc.tool(ident, {"action": "update", "memory_id": prior, "title": "Router AKIAIOSFOD",
                           "body": "NN7EXAMPLE"}, session)
    assert out["is_error"] is True
    _no_echo(out)
    assert rpc.manifest_ids(ident) == [prior]
    assert rpc.record_row(prior)["body"] == "the router is in the hall closet"


def test_the_ledger_refuses_secrets_in_fact_metadata_and_across_fields(rpc: Rpc) -> None:
    entity = uid("identity")
    cases = [
        ({"fact": "deploy key AKIAIOSFODNN7EXAMPLE"}, "fact"),
        ({"fact": "deploy key AKIA\u200bIOSFODNN7EXAMPLE"}, "fact"),
        ({"fact": "deploys need a key", "metadata": {"headers": {"Authorization": "Bearer 8f3a9c2e1d7b4a6f9e0c3b2a"}}},
         "metadata"),
        ({"fact": "see the vault", "metadata": {"cfg": '{"password": "hunter2"}'}}, "metadata"),
        ({"conflict": True, "conflict_reason": "key xoxb-123456789012-AbCdEfGhIjKl leaked"}, "conflict_reason"),
    ]
    for extra, field in cases:
        err = rpc.error("meta/memory/index", {"entity": entity, "topic": "deployment", **extra})
        assert err["code"] == -32602 and err["data"]["field"] == field, err
        assert "secret pattern class" in err["message"]
        _no_echo(err)
    assert rpc.result("meta/memory/query", {"entity": entity})["assertions"] == []
    ok = rpc.result("meta/memory/index", {"entity": entity, "topic": "deployment", "fact": "deploys need approval",
                                          "metadata": {"source": "runbook", "password_policy": "12 characters"}})
    assert ok["assertion_id"]


def test_a_harvest_cause_holding_a_secret_is_refused(rpc: Rpc) -> None:
    ident = uid()
    err = rpc.error("meta/session/retire", {"identity": ident, "session_key": uid("sess"),
                                            "cause": "retired after leaking sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv"})
    assert err["code"] == -32602 and err["data"]["field"] == "cause"
    _no_echo(err)
    assert rpc.result("meta/session/retire", {"identity": ident, "session_key": uid("sess"),
                                              "cause": "context window full"})["recorded"] is True


def test_ordinary_memories_are_accepted(rpc: Rpc) -> None:
    ident = uid()
    for title, body in [
        ("Password policy", "Passwords need 12 characters; rotate the API key every 90 days."),
        ("Tokens", "The token bucket refills at 10 tokens per second."),
        ("Bearer", "The bearer of the package signs at the front desk."),
    ]:
        assert rpc.remember(ident, title, body)["memory_id"]


GLUED = {
    "github after tok_": "tok_ghp_" + "Ab1" * 12,
    "github after a digit": "1ghp_" + "Ab1" * 12,
    "aws after a letter": "xAKIAIOSFODNN7EXAMPLE",
    "gitlab after a letter": "xglpat-" + "a1" * 10,
    "aws before _prod": "AKIAIOSFODNN7EXAMPL1_prod",
    "aws before a word": "AKIAIOSFODNN7EXAMPL2prod",
    "jwt after a dash": "-eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "anthropic after a word": "mysk-ant-api03-" + "a1B2c3D4e5F6g7H8i9J0a1B2c3D4",
    "openai project key after a word": "keysk-proj-" + "a1B2c3D4e5F6g7H8i9J0a1B2c3D4",
    "gitlab runner token": "glrt-" + "a1B2c3D4e5F6g7H8i9J0",
    "gitlab runner registration": "GR1348941" + "a1B2c3D4e5F6g7H8i9J0",
    "slack refresh token": "xoxe-1-" + "A1B2C3D4E5F6G7H8I9J0a1b2c3d4e5f6g7h8i9j0",
    "google refresh token": "1//0" + "gA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0",
}


@pytest.mark.parametrize("case", sorted(GLUED))
def test_a_token_glued_to_a_word_is_refused_by_every_write_path(rpc: Rpc, case: str) -> None:
    token = GLUED[case]
    ident, session, entity = uid(), uid("sess"), uid("identity")
    err = rpc.error("meta/agent_memory/remember", {"identity": ident, "title": "Token", "body": f"the token is {token}"})
    assert err["code"] == -32040 and err["data"]["reason"] == "secret_detected"
    assert token[4:] not in json.dumps(err)
    out = rpc.tool(ident, {"action": "remember", "title": "Token", "body": token}, session)
    assert out["is_error"] is True and "secret pattern class" in out["text"]
    assert rpc.manifest_ids(ident) == []
    for extra, field in [({"fact": "k" + token}, "fact"),
                         ({"fact": "deploys need a key", "metadata": {"k" + token: "v"}}, "metadata")]:
        err = rpc.error("meta/memory/index", {"entity": entity, "topic": "deployment", **extra})
        # a key breaking the key rule (the JWT's dots) is named by its path, cut short as every echo is
        assert err["code"] == -32602 and re.split(r"[.[]", err["data"]["field"])[0] == field, err
        assert token[4:] not in json.dumps(err)
    assert rpc.result("meta/memory/query", {"entity": entity})["assertions"] == []
    kept = rpc.remember(ident, "Ticket", "the rotation ticket is open")["memory_id"]
    err = rpc.error("meta/agent_memory/erase", {"identity": ident, "memory_id": kept, "reason": f"ticket {token}"})
    assert err["code"] == -32602 and "reason" in err["message"] and "secret pattern class" in err["message"]
    assert rpc.manifest_ids(ident) == [kept]

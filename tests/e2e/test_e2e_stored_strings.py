"""Every string a record stores is scanned for secrets, provenance included, on both backends through
the real gateway: the ``memory`` tool's ``verification_evidence`` (stored as the verification claim),
a key split between the body and that evidence, and the environment-style password names
(``PGPASSWORD=``, ``DB_PASS=``, ``pass:``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from contract.pgsupport import dsn_with_schema, require_postgres, throwaway_schema
from e2e_support import Rpc, uid
from support import serving, write_config


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def gateway(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rpc]:
    """One gateway per backend for the module: every test writes under identities of its own (``uid()``)."""
    state = tmp_path_factory.mktemp(f"stored-strings-{request.param}")
    if request.param == "sqlite":
        with serving(state / "state", Rpc) as client:
            yield client
        return
    require_postgres()
    with throwaway_schema() as schema:
        config = write_config(state / "gateway.toml",
                              f'[agent_memory]\nstore = "postgres"\ndsn = "{dsn_with_schema(schema)}"\n')
        with serving(state / "state", Rpc, config=config) as client:
            yield client


def _no_echo(obj: Any, *fragments: str) -> None:
    dumped = json.dumps(obj, ensure_ascii=False)
    assert not [f for f in fragments if f in dumped], dumped


def _verified(title: str, body: str, evidence: str) -> dict[str, Any]:
    return {"action": "remember", "title": title, "body": body, "epistemic": "verified_claim",
            "verification_evidence": evidence}


@pytest.mark.parametrize(("body", "evidence", "fragment"), [
    ("The deploy key was rotated.", "checked the console: AKIAIOSFODNN7EXAMPLE is the new id", "IOSFODNN7"),
    ("The database login works.", "ran psql with PGPASSWORD=Tr0ub4dor&3 and it connected", "Tr0ub4dor"),
    ("The deploy key is AKIAIOSFOD", "NN7EXAMPLE confirmed in the console", "NN7EXAMPLE"),  # split across fields
    ("The bot can post.", "tested with xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGh"),
])
def test_a_secret_in_the_tools_verification_evidence_is_refused(gateway: Rpc, body: str, evidence: str,
                                                                fragment: str) -> None:
    ident, session = uid(), uid("sess")
    out = gateway.tool(ident, _verified("Checked fact", body, evidence), session)
    assert out["is_error"] is True and "secret pattern class" in out["text"], out
    _no_echo(out, fragment)
    assert gateway.manifest_ids(ident) == []


def test_clean_verification_evidence_is_stored(gateway: Rpc) -> None:
    ident, session = uid(), uid("sess")
    out = gateway.tool(ident, _verified("Router", "The router is in the hall closet.",
                                        "opened the closet and saw the router; the password policy is 12 characters"),
                       session)
    assert out["is_error"] is False, out
    assert len(gateway.manifest_ids(ident)) == 1


@pytest.mark.parametrize("body", [
    "export PGPASSWORD=hunter2 before running psql",
    "the .env has DB_PASS=hunter2",
    "router admin pass: hunter2",
    "MYSQL_PWD='s3cr3t' in the job",
    "REDIS.PASS = s3cr3t-value",
    '{"user": "bob", "pass": "hunter2"}',
])
def test_environment_style_password_names_are_refused(gateway: Rpc, body: str) -> None:
    ident = uid()
    err = gateway.error("meta/agent_memory/remember", {"identity": ident, "title": "Login", "body": body})
    assert err["data"]["reason"] == "secret_detected" and err["data"]["secret_class"] == "password-assignment"
    _no_echo(err, "hunter2", "s3cr3t")
    assert gateway.manifest_ids(ident) == []


@pytest.mark.parametrize("body", [
    "CI results: pass: 12, fail: 3",
    "pass=100 fail=0 skipped=2",
    "Pass: yes, the build is green",
    "We hiked over the mountain pass: it took 3 hours",
    "bypass: enabled for the health check",
    "PWD=/home/me/project when the job ran",
    "the job reads password=/run/secrets/db_password at start",
])
def test_ordinary_text_with_pass_words_is_stored(gateway: Rpc, body: str) -> None:
    ident = uid()
    out = gateway.remember(ident, "Notes", body)
    assert out["memory_id"]

"""Leaked credential shapes are refused through the real gateway: ``remember`` and the ``memory`` tool
refuse each with ``secret_detected`` and its class, never echo it and leave nothing behind; record and
ledger metadata holding a Docker registry login is refused; the nearest ordinary texts are kept."""

from __future__ import annotations

import base64
import json

import pytest

from e2e_support import Rpc, uid

PW = "S3cretPass99"
HEX32 = "0123456789abcdef" * 2
DOCKER_AUTH = base64.b64encode(b"deploy:" + PW.encode()).decode()

LEAKS = {
    "openpgp private key": ("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGZ1c2VyAQgA", "private-key"),
    "putty key": ("PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none", "private-key"),
    "jwk private member": ('{"kty":"OKP","crv":"Ed25519","d":"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"}',
                           "private-key"),
    "password-only redis url": (f"redis://:{PW}@cache:6379/0", "url-credentials"),
    "ruby hash password": (f'password => "{PW}"', "password-assignment"),
    "go short assignment": ('API_KEY := "abcd1234efgh5678ijkl"', "credential-assignment"),
    "sql alter user": (f"ALTER USER app WITH PASSWORD '{PW}'", "password-assignment"),
    "sql identified by": (f"CREATE USER app IDENTIFIED BY '{PW}'", "password-assignment"),
    "netrc entry": (f"machine git.example.com login bob password {PW}", "password-assignment"),
    "tab separated": (f"PASSWORD\t{PW}", "password-assignment"),
    "mysql command": (f"mysql -u root -p{PW}", "password-assignment"),
    "curl basic auth": (f"curl -u admin:{PW} https://api.example.com", "password-assignment"),
    "sshpass": (f"sshpass -p '{PW}' ssh deploy@host", "password-assignment"),
    "password option": (f"backup --password {PW}", "password-assignment"),
    "header subscript": ('headers["X-Api-Key"] = "abcdef1234567890abcd"', "credential-assignment"),
    "docker config": (f'{{"auths":{{"reg.example.com":{{"auth":"{DOCKER_AUTH}"}}}}}}', "docker-registry-auth"),
    "xml element": (f"<password>{PW}</password>", "password-assignment"),
    "vault token": ("hvs.CAESIJv5GxA0B2zPq8KZ5fB2r4nT1c9sUqXo", "vault-token"),
    "shopify token": ("shpat_" + HEX32, "shopify-token"),
    "databricks token": ("dapi" + HEX32, "databricks-token"),
    "digitalocean token": ("dop_v1_" + HEX32 * 2, "digitalocean-token"),
    "twilio key": ("SK" + HEX32, "twilio-api-key"),
    "telegram bot token": ("123456789:AAEhBOweik6ad9r_QXMENQjcrGbqCr4K-bs", "telegram-bot-token"),
    "discord bot token": ("MTIzNDU2Nzg5MDEyMzQ1Njc4.GhJkLm.AbCdEfGhIjKlMnOpQrStUvWxYz0123456", "discord-bot-token"),
    "age identity": ("AGE-SECRET-KEY-1" + "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7LQPZRY9X8GF2TVDW0S3JN54KHCE", "age-secret-key"),
    "atlassian token": ("ATATT3xFfGF0" + "aB3_" * 20, "atlassian-api-token"),
    "groq key": ("gsk_" + "aB3d" * 13, "groq-api-key"),
    "replicate token": ("r8_" + "aB3" * 12 + "x", "replicate-api-token"),
    "xai key": ("xai-" + "aB3d" * 20, "xai-api-key"),
    "npmrc auth token": ("//registry.npmjs.org/:_authToken=0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b",
                         "credential-assignment"),
    "glued stripe key": ("tok_sk_live_4eC39HqLyjWDarjtT1zdp7dc", "stripe-key"),
    "glued sendgrid key": ("xSG." + "aB3C" * 5 + "aB" + "." + "aB3C" * 10 + "aBc", "sendgrid-api-key"),
    "gitlab oauth secret": ("gloas-" + "a1" * 32, "gitlab-token"),
}


def _fragments(secret: str) -> list[str]:
    """Pieces of the secret a refusal must not repeat."""
    return [p for p in (PW, HEX32[:12], DOCKER_AUTH[:12], secret[-12:]) if p in secret]


@pytest.mark.parametrize("case", sorted(LEAKS))
def test_remember_and_the_memory_tool_refuse_the_leak_without_echo_or_residue(rpc: Rpc, case: str) -> None:
    secret, secret_class = LEAKS[case]
    ident, session = uid(), uid("sess")
    err = rpc.error("meta/agent_memory/remember", {"identity": ident, "title": "Setup notes",
                                                   "body": f"for the deploy: {secret}"})
    assert err["code"] == -32040 and err["data"]["reason"] == "secret_detected"
    assert err["data"]["secret_class"] == secret_class
    assert not [f for f in _fragments(secret) if f in json.dumps(err)]
    out = rpc.tool(ident, {"action": "remember", "title": "Setup notes", "body": secret}, session)
    assert out["is_error"] is True and f"'{secret_class}'" in out["text"]
    assert not [f for f in _fragments(secret) if f in json.dumps(out)]
    assert rpc.manifest_ids(ident) == []


def test_a_docker_login_in_metadata_is_refused_by_remember_and_the_ledger(rpc: Rpc) -> None:
    ident, entity = uid(), uid("identity")
    metadata = {"auths": {"registry": {"auth": DOCKER_AUTH}}}
    err = rpc.error("meta/agent_memory/remember", {"identity": ident, "title": "Registry", "body": "login kept",
                                                   "metadata": metadata})
    assert err["data"]["reason"] == "secret_detected" and err["data"]["secret_class"] == "docker-registry-auth"
    assert rpc.manifest_ids(ident) == []
    err = rpc.error("meta/memory/index", {"entity": entity, "topic": "registry", "fact": "login kept",
                                          "metadata": metadata})
    assert err["code"] == -32602 and err["data"]["field"] == "metadata"
    assert DOCKER_AUTH not in json.dumps(err)
    assert rpc.result("meta/memory/query", {"entity": entity})["assertions"] == []


def test_a_jwk_private_key_in_metadata_is_refused(rpc: Rpc) -> None:
    ident = uid()
    jwk = {"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
           "d": "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"}
    err = rpc.error("meta/agent_memory/remember", {"identity": ident, "title": "Signing key", "body": "kept",
                                                   "metadata": {"jwk": jwk}})
    assert err["data"]["reason"] == "secret_detected" and err["data"]["secret_class"] == "private-key"
    assert "nWGxne" not in json.dumps(err)
    public = {k: v for k, v in jwk.items() if k != "d"}
    assert rpc.remember(ident, "Signing key", "kept", metadata={"jwk": public})["memory_id"]


def test_the_nearest_ordinary_texts_are_kept(rpc: Rpc) -> None:
    ident = uid()
    err = rpc.error("meta/agent_memory/remember", {"identity": ident, "title": "DB", "body": f"mysql -u root -p{PW}"})
    assert err["data"]["reason"] == "secret_detected"
    for body in [
        "my password is in the drawer; reset your password tomorrow",
        "the machine learning password manager",
        "the user identified by their email",
        "mysql -u root -p app",
        "curl -u admin https://api.example.com",
        "connect with postgresql://user:pass@localhost:5432/dbname",
        "redis://cache:6379/0",
        '{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU"}',
        "framework_test_integrationSuiteRunner1",
    ]:
        assert rpc.remember(ident, "Notes", body)["memory_id"], body

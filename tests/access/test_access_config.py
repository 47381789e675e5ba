"""The [access] config section: strict decoding, errors naming the key, token digests, the CLI."""

from __future__ import annotations

import hashlib
import io
import re
import tomllib

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from meta_memory.access import config as access_config
from meta_memory.access.cli import hash_from_stream, token_group
from meta_memory.access.config import ACTIONS, hash_token, parse_access_section
from meta_memory.errors import ConfigError
from support import meta_memory_cli

DIGEST = "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"  # sha256("password")


def _docstring_example() -> str:
    doc = access_config.__doc__ or ""
    block = doc.split("Example (every key shown)::", 1)[1]
    lines = []
    for line in block.splitlines()[1:]:
        if line and not line.startswith("    "):
            break
        lines.append(line[4:])
    return "\n".join(lines)


def test_documented_example_decodes() -> None:
    cfg = parse_access_section(tomllib.loads(_docstring_example())["access"])
    assert cfg.enabled and not cfg.read_only
    assert cfg.tokens[0].sha256 == DIGEST and cfg.tokens[0].principal == "alice"
    assert [g.action for g in cfg.grants] == ["agent.memory.read", "memory.quarantine.review"]
    assert cfg.grants[1].on is not None and cfg.grants[1].on.kind == "identity"
    assert cfg.denies[0].who.anyone is True and cfg.denies[0].on.value == "confidential"


def test_absent_section_means_access_off() -> None:
    cfg = parse_access_section(None)
    assert not cfg.enabled and not cfg.read_only and cfg.tokens == () and cfg.grants == ()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"enabld": True}, "access.enabld: unknown key"),
        ({"enabled": "yes"}, "access.enabled:"),
        ({"enabled": 1}, "access.enabled:"),
        ({"read_only": "no"}, "access.read_only:"),
        ({"grants": [{"action": "agent.memory.eat", "who": {"anyone": True}}]}, "access.grants[0].action: unknown action 'agent.memory.eat'"),
        ({"grants": [{"action": "agent.view", "who": {"rol": "x"}}]}, "access.grants[0].who.rol: unknown key"),
        ({"grants": [{"action": "agent.view"}]}, "access.grants[0].who: required key is missing"),
        ({"grants": [{"action": "agent.view", "who": {}}]}, "access.grants[0].who: who needs exactly one"),
        ({"grants": [{"action": "agent.view", "who": {"role": "a", "label": "b"}}]}, "access.grants[0].who: who needs exactly one"),
        ({"grants": [{"action": "agent.view", "who": {"anyone": False}}]}, "anyone must be true"),
        ({"denies": [{"action": "agent.view", "who": {"anyone": True}, "on": {}}]}, "access.denies[0].on: on needs exactly one"),
        ({"denies": [{"action": "agent.view", "who": {"anyone": True}, "on": {"mob": "a", "identity": "b"}}]}, "access.denies[0].on: on needs exactly one"),
        ({"denies": [{"action": "agent.view", "who": {"anyone": True}, "on": {"realms": "x"}}]}, "access.denies[0].on.realms: unknown key"),
        ({"denies": [{"action": "agent.view", "who": {"principal": "  "}}]}, "access.denies[0].who.principal"),
        ({"grants": [{"action": "agent.view", "who": {"anyone": True}, "on": {"realm": " "}}]},
         "access.grants[0].on.realm: realm must be a non-empty string when provided"),
        ({"grants": [{"action": "agent.view", "who": {"anyone": True}, "on": {"identity": "a", "label": "b",
                                                                            "realm": "hr"}}]},
         "access.grants[0].on: on needs exactly one"),
        ({"grants": [{"action": "agent.view", "who": {"anyone": True}, "on": {"identity": " "}}]},
         "access.grants[0].on.identity: identity must be a valid non-empty string"),
        ({"roster": [{"identity": "a", "labels": "x"}]}, "access.roster[0].labels: must be an array"),
        ({"roster": [{"identity": "a", "team": "x"}]}, "access.roster[0].team: unknown key"),
        ({"roster": [{"labels": ["x"]}]}, "access.roster[0].identity: required key is missing"),
        ({"roster": [{"identity": "a"}, {"identity": "rt:a:3", "realm": "default"}]},
         "access.roster: identity 'a' in realm 'default' is listed twice"),
        ({"roster": [{"identity": " a "}]}, "access.roster[0].identity: identity must not begin or end with whitespace"),
        ({"grants": [{"action": "agent.view", "who": {"anyone": True}, "on": {"realm": " hr "}}]},
         "access.grants[0].on.realm: realm must not begin or end with whitespace"),
        ({"tokens": [{"sha256": "abc", "principal": "a"}]}, "access.tokens[0].sha256: must be the 64-hex-digit"),
        ({"tokens": [{"sha256": DIGEST, "principal": "a", "roles": "admin"}]}, "access.tokens[0].roles: must be an array"),
        ({"tokens": [{"sha256": DIGEST, "principal": "a", "token": "password"}]}, "access.tokens[0].token: unknown key"),
        ({"tokens": [{"sha256": DIGEST, "principal": "a"}, {"sha256": DIGEST.upper(), "principal": "b"}]}, "access.tokens: token digest 5e884898da28... is configured twice"),
    ],
)
def test_refusals_name_the_key(raw: dict, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_access_section(raw)
    assert message in str(info.value)


def test_non_table_section_refused() -> None:
    with pytest.raises(ConfigError, match="must be a table"):
        parse_access_section(["enabled"])  # type: ignore[arg-type]


def test_digests_and_names_are_normalised() -> None:
    cfg = parse_access_section(
        {"tokens": [{"sha256": DIGEST.upper(), "principal": " alice ", "roles": [" r "], "labels": ["l"]}]}
    )
    assert cfg.tokens[0].sha256 == DIGEST
    assert cfg.tokens[0].principal == "alice" and cfg.tokens[0].roles == ("r",)


def test_every_action_is_accepted_and_reserved_ones_too() -> None:
    rules = [{"action": a, "who": {"anyone": True}} for a in sorted(ACTIONS)]
    cfg = parse_access_section({"grants": rules, "denies": rules})
    assert {g.action for g in cfg.grants} == ACTIONS
    assert {"mob.memory.propose", "mob.memory.commit"} <= ACTIONS


def test_hash_token_known_vector_and_refusals() -> None:
    assert hash_token("password") == DIGEST
    for bad in ("", " password", "pass word", "password\n"):
        with pytest.raises(ValueError):
            hash_token(bad)


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Zs", "Cc", "Zl", "Zp")), min_size=1))
def test_hash_token_is_lowercase_sha256(token: str) -> None:
    if any(ch.isspace() for ch in token):
        return
    digest = hash_token(token)
    assert re.fullmatch(r"[0-9a-f]{64}", digest)
    assert digest == hashlib.sha256(token.encode()).hexdigest()
    assert parse_access_section({"tokens": [{"sha256": digest, "principal": "p"}]}).tokens[0].sha256 == digest


def test_cli_token_hash_reads_stdin() -> None:
    result = CliRunner().invoke(token_group, ["hash"], input="password\n")
    assert result.exit_code == 0, result.output
    assert result.output.strip() == DIGEST


def test_cli_token_hash_refuses_empty_token() -> None:
    result = CliRunner().invoke(token_group, ["hash"], input="\n")
    assert result.exit_code != 0
    assert "non-empty" in result.output


def test_cli_token_new_prints_a_token_and_its_digest() -> None:
    result = CliRunner().invoke(token_group, ["hash", "--new"])
    assert result.exit_code == 0
    token = re.search(r"token:\s+(\S+)", result.output).group(1)  # type: ignore[union-attr]
    digest = re.search(r"sha256:\s+(\S+)", result.output).group(1)  # type: ignore[union-attr]
    assert hash_token(token) == digest


def test_hash_from_stream_drops_crlf() -> None:
    assert hash_from_stream(io.StringIO("password\r\n")) == DIGEST


def test_realm_and_roster_entries_are_normalised() -> None:
    cfg = parse_access_section({
        "enabled": True,
        "grants": [{"action": "agent.view", "who": {"anyone": True}, "on": {"identity": "rt:lead:main:7", "realm": "hr"}},
                   {"action": "agent.view", "who": {"anyone": True}, "on": {"realm": "*"}}],
        "roster": [{"identity": "rt:lead:main:2", "labels": ["blue"]}, {"identity": "lead:main", "realm": "hr"}],
    })
    assert (cfg.grants[0].on.identity, cfg.grants[0].on.realm, cfg.grants[0].on.kind) == ("lead:main", "hr", "identity")
    assert (cfg.grants[1].on.realm, cfg.grants[1].on.kind) == ("*", "realm")
    assert [e.key for e in cfg.roster] == [("default", "lead:main"), ("hr", "lead:main")]


@pytest.mark.parametrize("stdin", [b"s3cret\nother\n", b"s3cret\n\n", b"s3cret\r\nother", b"\ns3cret\n"])
def test_cli_token_hash_refuses_more_than_one_line(stdin: bytes) -> None:
    """``meta-memory token hash`` read the first line and hashed it, silently dropping the rest: a token
    pasted with a second line got a digest other than the one expected. Input of more than one line is
    refused with exit 2 and a message; one line, with a single trailing newline or none, is hashed."""
    out = meta_memory_cli("token", "hash", stdin=stdin, timeout=60)
    assert out.returncode == 2 and out.stdout == b"", out
    assert b"one token on one line" in out.stderr, out.stderr
    for ok in (b"s3cret", b"s3cret\n", b"s3cret\r\n", b"\xef\xbb\xbfs3cret\r\n"):  # a byte-order mark skipped
        done = meta_memory_cli("token", "hash", stdin=ok, timeout=60)
        assert done.returncode == 0 and done.stdout.decode().strip() == hash_token("s3cret"), done

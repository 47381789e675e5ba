"""The one secret scanner: Unicode folding, field joins, the formats people leak, and no false
positives on ordinary conversation (LoCoMo turns)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory.secrets import SECRET_CLASSES, normalise_for_scan, scan, scan_text, scan_values
from support import LOCOMO_ENV, locomo_data

AWS = "AKIAIOSFODNN7EXAMPLE"
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
       ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
PKCS1_BODY = ("MIIEpQIBAAKCAQEAl8vENbLI73Z/XfRgyAeTlp6FzQx1bW9sZ2Fzd2FzZGZhc2RmYXNkZmFzZGZh\n"
              "c2RmYXNkZmFzZGZhc2RmYXNkZmFzZGY=")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # vendor-prefixed keys
        ("use sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAB7CD0EF here", "openai-api-key"),
        ("OPENAI key sk-" + "Ab1" * 16, "openai-api-key"),
        ("sk-ant-api03-" + "aB3_" * 10, "anthropic-api-key"),
        ("bot token xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "slack-token"),
        ("xoxp-1234567890-abcdefghij", "slack-token"),
        ("https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX", "slack-token"),
        ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "stripe-key"),
        ("rk_test_4eC39HqLyjWDarjtT1zdp7dc", "stripe-key"),
        ("AIzaSyD-1234567890abcdefghijklmnopqrstu", "google-api-key"),
        ("GOCSPX-abcdefghijklmnopqrstuvwx1234", "google-oauth-secret"),
        ("glpat-abcdefghij1234567890", "gitlab-token"),
        ("npm_" + "a1B2" * 9, "npm-token"),
        ("pypi-AgEIcHlwaS5vcmcCJDEyMzQ1Njc4LWFiY2QtZWZnaA", "pypi-token"),
        ("hf_" + "aB3" * 11, "huggingface-token"),
        ("SG." + "a" * 22 + "." + "b" * 43, "sendgrid-api-key"),
        # JWTs and authorization headers
        (JWT, "jwt"),
        ("Authorization: Bearer 8f3a9c2e1d7b4a6f9e0c3b2a1d4e5f6a", "bearer-token"),
        ("curl -H 'Authorization: Basic dXNlcjpwYXNz' https://api", "bearer-token"),
        # password assignments
        ("password: hunter2", "password-assignment"),
        ("password=letmein", "password-assignment"),
        ('{"user": "bob", "password": "hunter2"}', "password-assignment"),
        ("DB_PASSWORD='correct horse'", "password-assignment"),
        # environment-style names: glued (PGPASSWORD), ``pass`` as a word or joined by _ - .
        ("export PGPASSWORD=hunter2", "password-assignment"),
        ("DB_PASS=hunter2", "password-assignment"),
        ("DB_PASS=123456", "password-assignment"),
        ("pass: hunter2", "password-assignment"),
        ("redis.pass = s3cr3t", "password-assignment"),
        ('{"pass": "hunter2"}', "password-assignment"),
        ("--pass=hunter2", "password-assignment"),
        ("postgres://bob:s3cr3t@db.internal:5432/app", "url-credentials"),
        # PEM bodies with and without armour
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA", "private-key"),
        (PKCS1_BODY, "private-key"),
        ("MC4CAQAwBQYDK2VwBCIEILvFUPpfzEvtZjo2JdzOaGVsbG8gd29ybGQgaGVsbG8gd29y", "private-key"),
        ("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW", "private-key"),
        # any token or key name assigned a generated value
        ("GITHUB_TOKEN=9f8e7d6c5b4a39281706f5e4d3c2b1a0", "credential-assignment"),
        ('export HF_TOKEN="Xq7Lm2Np9Rs4Tv6Wy8Za1Bc3De5Fg"', "credential-assignment"),
        ("token: 4f9c2e7a1b8d3f6e0a5c9b2d7e1f4a8c", "credential-assignment"),
        ("ENCRYPTION_KEY=b7e4c1f8a2d5e9c3f6a0b4d8e2c5f9a1", "credential-assignment"),
        ("stripe.key = 3a8f1c6e9b2d5f0a7c4e1b8d", "credential-assignment"),
        # not secrets
        ("partition_key: tenant_id_and_date_2024", None),
        ("the sort key: created_at_ms", None),
        ("token_count: 12345678901234567", None),
        ("monkey=9f8e7d6c5b4a39281706f5e4d3c2b1a0", None),
        ("password: ********", None),
        ("password=${DB_PASSWORD}", None),
        ("password=/run/secrets/db_password", None),  # a file path: where the secret lives
        ("PWD=/home/me/app", None),  # the working directory
        ("OLDPWD=~/src/app", None),
        ("CI results: pass: 12, fail: 3", None),  # a bare ``pass`` needs a value with a letter
        ("pass=100 fail=0", None),
        ("Pass: yes", None),
        ("bypass: enabled1", None),  # ``pass`` glued to letters is another word
        ("compass: north2", None),
        ("the mountain pass: steep", None),
        ("password: <your password>", None),
        ("Password: strong and unique", None),
        ("Reset your password: it takes a minute", None),
        ("MIIH0zCCBbugAwIBAgIIXsO3pkN/pOAwDQYJKoZIhvcNAQELBQAwgZ0xCzAJBgNVBAYTAkNO", None),  # a certificate
        ("postgres://db.internal:5432/app", None),
        ("the bearer of good news arrived at 10 o'clock", None),
        ("sk-learn-compatible estimator", None),
        ("xoxb-not-a-token", None),
        ("see https://example.com/a:b@c for details", None),
    ],
)
def test_formats(text: str, expected: str | None) -> None:
    assert scan_text(text) == expected


@pytest.mark.parametrize(
    "spelled",
    [
        "AKIAIOSFOD\u200bNN7EXAMPLE",  # zero-width space
        "AKIA\u2060IOSFODNN7EXAMPLE",  # word joiner
        "\ufeffAKIAIOSFODNN7EXAM\u00adPLE",  # BOM and soft hyphen
        "ＡＫＩＡＩＯＳＦＯＤＮＮ７ＥＸＡＭＰＬＥ",  # fullwidth
        "AKIA\u202eIOSFODNN7EXAMPLE",  # bidi override
    ],
)
def test_folded_spellings_of_a_key_are_found(spelled: str) -> None:
    assert scan_text(f"key {spelled} in the logs") == "aws-access-key-id"


def test_unicode_dashes_fold_for_dashed_prefixes() -> None:
    assert scan_text("sk\u2010proj\u2011Ab3dEf6hIj9kLm2nOp5qRs8tUv") == "openai-api-key"
    assert scan_text("xoxb\u2013123456789012\u2013AbCdEfGhIjKl") == "slack-token"


def test_a_key_split_across_fields_is_found_in_the_join() -> None:
    assert scan("Deploy key AKIAIOSFOD", "", "NN7EXAMPLE was rotated", ()) == "aws-access-key-id"
    assert scan("AKIAIOSF", "ODNN7E", "XAMPLE", ()) == "aws-access-key-id"
    assert scan("password", "", ": hunter2", ()) == "password-assignment"
    # each part alone is innocent
    assert scan_text("Deploy key AKIAIOSFOD") is None and scan_text("NN7EXAMPLE was rotated") is None


def test_a_key_that_ends_a_field_is_found_whatever_field_follows() -> None:
    """The join does not glue the next field's first letter onto a key that ends a field."""
    assert scan("Router AKIAIOSFOD", "", "NN7EXAMPLE", ("deploy",)) == "aws-access-key-id"
    assert scan("Router", "", "the key AKIAIOSFOD", (), ("NN7EXAMPLE", "agent:bob")) == "aws-access-key-id"
    assert scan("AKIAIOSF", "ODNN7E", "XAMPLE", ("tag",), ("more",)) == "aws-access-key-id"


def test_every_string_a_record_stores_is_scanned() -> None:
    from meta_memory.agent_memory.model import (
        Author,
        EvidenceRef,
        NewMemoryRecord,
        Provenance,
        VerificationClaim,
    )
    from meta_memory.agent_memory.secrets import scan_record

    def record(**provenance: object) -> NewMemoryRecord:
        return NewMemoryRecord(title="t", body="b", provenance=Provenance(**{"author": Author.application(),
                                                                              **provenance}))  # type: ignore[arg-type]

    assert scan_record(record()) is None
    assert scan_record(record(author=Author.agent(f"bot:{AWS}"))) == "aws-access-key-id"
    assert scan_record(record(evidence=(EvidenceRef(f"s-{AWS}"),))) == "aws-access-key-id"
    assert scan_record(record(verification=VerificationClaim("ran PGPASSWORD=hunter2 psql"))) == "password-assignment"
    assert scan_record(record(verification=VerificationClaim("ok", (EvidenceRef(AWS),)))) == "aws-access-key-id"
    assert scan_record(record(), f"mem-{AWS}") == "aws-access-key-id"  # an explicit id


def test_a_key_in_a_tag_is_found_despite_lower_casing() -> None:
    assert scan("t", "", "b", ("akiaiosfodnn7example",)) == "aws-access-key-id"


def test_scan_values_names_the_field_and_walks_json() -> None:
    assert scan_values({"fact": f"key {AWS}", "metadata": None}) == ("fact", "aws-access-key-id")
    assert scan_values({"fact": "ok", "metadata": {"creds": [{"note": "password=hunter2"}]}}) == (
        "metadata", "password-assignment")
    assert scan_values({"fact": "ok", "metadata": {"xoxb-123456789012-AbCdEfGhIjKl": 1}}) == (
        "metadata", "slack-token")  # keys are scanned too
    assert scan_values({"entity": "AKIAIOSFOD", "topic": "NN7EXAMPLE"}) == ("entity+topic", "aws-access-key-id")
    assert scan_values({"fact": "the user likes tea", "metadata": {"source": "chat", "n": 3}}) is None


def test_stored_text_is_never_altered_by_folding() -> None:
    text = "ｆｕｌｌｗｉｄｔｈ\u200b"
    assert normalise_for_scan(text) == "fullwidth"
    assert normalise_for_scan("plain ascii") == "plain ascii"


_invisible = st.sampled_from(["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u202e", "\u2066"])


@given(st.lists(st.tuples(st.integers(0, 19), _invisible), max_size=6), st.booleans())
def test_any_invisible_padding_or_fullwidth_spelling_is_refused(inserts: list, fullwidth: bool) -> None:
    chars = list(AWS)
    if fullwidth:
        chars = [chr(ord(c) + 0xFEE0) for c in chars]
    for pos, ch in sorted(inserts, reverse=True):
        chars.insert(pos, ch)
    assert scan_text("id " + "".join(chars) + " end") == "aws-access-key-id"


@given(st.integers(1, len(AWS) - 1), st.sampled_from(["title", "description"]))
def test_any_split_of_a_key_across_fields_is_refused(cut: int, first: str) -> None:
    head, tail = "note " + AWS[:cut], AWS[cut:] + " rotated"
    fields = {"title": "", "description": "", "body": ""}
    fields[first] = head
    fields["body"] = tail
    assert scan(fields["title"], fields["description"], fields["body"], ()) == "aws-access-key-id"


@settings(max_examples=200)
@given(st.text(max_size=400), st.text(max_size=40), st.lists(st.text(max_size=20), max_size=4))
def test_scan_is_total(body: str, title: str, tags: list[str]) -> None:
    assert scan(title, "", body, tags) in (None, *SECRET_CLASSES)


def _locomo_turns() -> list[str]:
    path = locomo_data()
    if path is None:
        pytest.skip(f"LoCoMo data file not named ({LOCOMO_ENV})")
    turns: list[str] = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        for value in sample["conversation"].values():
            if isinstance(value, list):
                turns += [t["text"] for t in value if isinstance(t.get("text"), str)]
    return turns


def test_ordinary_conversation_is_never_refused() -> None:
    turns = _locomo_turns()
    assert len(turns) > 2000
    assert [t for t in turns if scan_text(t) is not None] == []
    # adjacent turns as title and body, as a memory of the conversation would be written
    assert [(a, b) for a, b in zip(turns, turns[1:]) if scan(a[:200], "", b, ())] == []


def test_ordinary_technical_prose_is_never_refused() -> None:
    prose = [
        "Remember to rotate the API key every 90 days; the password policy needs 12 characters.",
        "The token bucket refills at 10 tokens per second.",
        "Set password authentication to scram-sha-256 in pg_hba.conf.",
        "Our Slack channel is #deploys and the Stripe dashboard shows test mode.",
        "Bearer tokens expire after one hour; refresh them with the refresh flow.",
        "The secret to good bread is time: let the dough rest overnight.",
        "ssh-keygen -t ed25519 writes the private key to ~/.ssh/id_ed25519.",
        "Use sk-learn for the baseline and compare with xgboost.",
        "password reset links are valid for 24 hours.",
        "JWTs have three parts: header, payload and signature.",
    ]
    assert [p for p in prose if scan_text(p) is not None] == []


# A distinctive fixed prefix glued to a word is still a credential: ``tok_ghp_...``, ``1ghp_...``.
_BASE62 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_WORD_CHARS = _BASE62 + "_"
GHP = "ghp_" + "Ab1" * 12


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tok_" + GHP, "github-token"),
        ("1" + GHP, "github-token"),
        ("the token is k" + GHP, "github-token"),
        ("xgho_" + "Zy9" * 12, "github-token"),
        ("my_github_pat_11ABCDEFG0123456789abcdef", "github-token"),
        ("xAKIAIOSFODNN7EXAMPLE", "aws-access-key-id"),
        ("key_ASIAIOSFODNN7EXAMPLE rotated", "aws-access-key-id"),
        ("xglpat-" + "a1" * 10, "gitlab-token"),
        ("token_npm_" + "a1B2" * 9, "npm-token"),
        ("slack_xoxb-123456789012-AbCdEfGhIjKl", "slack-token"),
        ("-xoxp-1234567890-abcdefghij", "slack-token"),
        ("cfg_xapp-1-A0123456789-abcdef", "slack-token"),
        ("mywhsec_" + "aB3" * 8, "stripe-key"),
        ("keyAIzaSyD-1234567890abcdefghijklmnopqrstu", "google-api-key"),
        ("cfg_GOCSPX-abcdefghijklmnopqrstuvwx1234", "google-oauth-secret"),
        # prefixes that also end ordinary names stay word-bounded, or need a generated value when glued
        ("run_npm_installDependenciesAndBuildTheProject", None),
        ("read_github_pat_from_the_environment_now", None),
        ("framework_test_integrationSuiteRunner1", None),
        ("task-ant-colony-optimization-algorithm-v2", None),
        ("MALAYSIA AIRLINES FLIGHT 37 DEPARTED", None),
        ("hash 3F2ACCA1B0C9D8E7F6A5B4C3", None),  # ACCA inside a hex digest
        ("Maya29.pictures_from_the_summer_trip", None),
    ],
)
def test_a_distinctive_prefix_glued_to_a_word_is_found(text: str, expected: str | None) -> None:
    assert scan_text(text) == expected


def _token(prefix: str, alphabet: str, size: int, *, digit: bool = False) -> st.SearchStrategy[str]:
    body = st.text(alphabet=alphabet, min_size=size, max_size=size)
    if digit:
        body = st.tuples(body, st.integers(0, size - 1), st.sampled_from("0123456789")).map(
            lambda t: t[0][: t[1]] + t[2] + t[0][t[1] + 1 :])
    return body.map(lambda b: prefix + b)


_GLUABLE_TOKENS = st.one_of(
    st.sampled_from(["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]).flatmap(lambda p: _token(p, _BASE62, 36)),
    _token("github_pat_", _WORD_CHARS, 22, digit=True),
    st.sampled_from(["AKIA", "ASIA"]).flatmap(lambda p: _token(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)),
    _token("glpat-", _BASE62 + "_-", 20),
    _token("npm_", _BASE62, 36, digit=True),
    st.sampled_from(["xoxb-", "xoxp-", "xoxa-", "xoxs-", "xoxr-"]).flatmap(lambda p: _token(p, _BASE62, 24, digit=True)),
    _token("AIza", _BASE62 + "_-", 35),
    _token("GOCSPX-", _BASE62, 24),
)


@settings(max_examples=300)
@given(st.text(alphabet=_WORD_CHARS, min_size=1, max_size=12), _GLUABLE_TOKENS, st.sampled_from(["", " and more"]))
def test_any_word_prefix_before_a_valid_token_is_refused(prefix: str, token: str, tail: str) -> None:
    assert scan_text(token + tail) is not None  # the token alone
    assert scan_text(prefix + token + tail) is not None
    assert scan_text("note: " + prefix + token + tail) is not None
    # the ledger's fact and metadata keys use the same scanner
    assert scan_values({"fact": "k" + prefix + token, "metadata": None}) is not None
    assert scan_values({"fact": "ok", "metadata": {prefix + token: 1}}) is not None


def test_ledger_values_refuse_a_glued_token() -> None:
    assert scan_values({"fact": "k" + GHP, "metadata": None}) == ("fact", "github-token")
    assert scan_values({"fact": "ok", "metadata": {"k" + GHP: "v"}}) == ("metadata", "github-token")


# Real formats of GitLab, Slack and Google credentials, each with its length and alphabet.
_GL = "a1B2c3D4e5F6g7H8i9J0"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("runner glrt-" + _GL, "gitlab-token"),
        ("deploy gldt-" + _GL, "gitlab-token"),
        ("trigger glptt-" + _GL * 2, "gitlab-token"),
        ("scim glsoat-" + _GL, "gitlab-token"),
        ("job glcbt-64_" + _GL, "gitlab-token"),
        ("register with GR1348941" + _GL, "gitlab-token"),
        ("xglrt-" + _GL, "gitlab-token"),  # glued like glpat-
        ("refresh xoxe-1-" + "My0xLTIwNjI" * 4, "slack-token"),
        ("rotating xoxe.xoxp-1-" + "Mi0yLTQ1NjI" * 3, "slack-token"),
        ("refresh_token 1//0gA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0uV", "google-oauth-secret"),
        ("x1//0" + "eZ9y8X7w6V5u4T3s2R1q" * 2, "google-oauth-secret"),
        # near misses: too short, or not a generated value
        ("glrt-" + _GL[:19], None),
        ("the gldt-tokens page lists deploy tokens", None),
        ("GR1348941" + _GL[:19], None),
        ("xoxe-1-short", None),
        ("1//0" + "a1" * 19 + "a", None),  # 39 after the prefix
        ("1//0" + "abcdefghij" * 5, None),  # one case, no digit: not generated
        ("path/to1//0123456789012345678901234567890123456789012", None),
    ],
)
def test_gitlab_slack_and_google_credential_formats(text: str, expected: str | None) -> None:
    assert scan_text(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # an AWS key id glued to the word after it
        ("AKIAIOSFODNN7EXAMPL1_prod", "aws-access-key-id"),
        ("AKIAIOSFODNN7EXAMPL2prod", "aws-access-key-id"),
        ("xASIAIOSFODNN7EXAMPL3-staging", "aws-access-key-id"),
        # the other AWS prefixes and a split key still end a word (hex digests hold ACCA)
        ("ACCA1B2C3D4E5F6A7B8Cdeadbeef", None),
        ("QAAAwAaAKIAAQAAAAAABAAHAM0AAQAAAA", None),  # inside a base64 run: a longer upper-case run
        ("AKIA IOSF ODNN 7EXA MPL1x", None),
        # a JWT after a dash or a letter
        ("-" + JWT, "jwt"),
        ("x" + JWT, "jwt"),
        ("token_" + JWT, "jwt"),
        # sk-ant- and sk-proj- glued to a word
        ("mysk-ant-api03-" + "a1B2c3D4e5F6g7H8i9J0a1B2c3D4", "anthropic-api-key"),
        ("tasksk-ant-api03-" + "a1b2c3d4e5f6g7h8i9j0a1b2c3", "anthropic-api-key"),
        ("keysk-proj-" + "a1B2c3D4e5F6g7H8i9J0a1B2c3D4", "openai-api-key"),
        # words that happen to hold them, and a bare sk- glued to a word, are not keys
        ("task-ant-colony-optimization-algorithm-v2", None),
        ("task-proj-2024-migration-plan-for-the-team-v2", None),
        ("mask-" + "a1B2c3D4e5F6g7H8i9J0a1B2c3D4e5F6g7H8", None),
    ],
)
def test_a_credential_glued_to_a_word_on_either_side(text: str, expected: str | None) -> None:
    assert scan_text(text) == expected


@settings(max_examples=200)
@given(st.sampled_from(["AKIA", "ASIA"]), st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", min_size=16, max_size=16),
       st.text(alphabet=_WORD_CHARS + "-.", max_size=12),
       st.tuples(st.sampled_from("abcxyz_-. "), st.text(alphabet=_WORD_CHARS + "-", max_size=12)))
def test_an_aws_key_id_is_refused_whatever_word_surrounds_it(prefix: str, body: str, before: str,
                                                             after: tuple[str, str]) -> None:
    # anything before it; after it, any word that does not continue its upper-case run
    assert scan_text(before + prefix + body + "".join(after)) == "aws-access-key-id"


@settings(max_examples=200)
@given(st.text(alphabet="xyzXYZ019_-", min_size=1, max_size=12))  # letters that spell no other prefix
def test_a_jwt_is_refused_after_any_word(before: str) -> None:
    assert scan_text(before + JWT) == "jwt"
    assert scan_values({"fact": "k" + before + JWT, "metadata": None}) == ("fact", "jwt")


def test_a_jwt_anywhere_stays_linear() -> None:
    import time

    started = time.perf_counter()
    for body in ("eyJ" * 30000, "x" + "eyJ" * 30000 + ".eyJ", ("eyJ" + "a" * 9 + ".") * 8000):
        scan_text(body)
    assert time.perf_counter() - started < 2.0

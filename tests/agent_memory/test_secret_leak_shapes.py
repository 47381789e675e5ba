"""More leaked-credential shapes: OpenPGP/PuTTY/SSH2 private keys and JWK private members, password-only
URL userinfo, ``=>``/``:=`` and subscript assignments, SQL/``.netrc``/tab separators, command lines,
Docker registry logins, vendor token formats, and vendor prefixes glued to a word. Each shape is refused
with its class and its nearest benign text is not."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory.secrets import SECRET_CLASSES, json_strings, scan, scan_text

PW = "S3cretPass99"
DOCKER_AUTH = base64.b64encode(b"deploy:" + PW.encode()).decode()
HEX32 = "0123456789abcdef" * 2
JWK_X = "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU"
JWK_D = "jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI"

# (secret, class, benign texts nearest to it)
SHAPES: list[tuple[str, str, list[str]]] = [
    ("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGZ1c2VyAQgA", "private-key",
     ["-----BEGIN PGP PUBLIC KEY BLOCK-----", "export the PGP private key block to a file"]),
    ("PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none", "private-key", ["PuTTY-User-Key-File-3 is the newer format"]),
    ("PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: aes256-cbc", "private-key", ["open the .ppk file in PuTTYgen"]),
    ("Public-Lines: 2\nAAAA\nPrivate-Lines: 1\nAAAAIGb3BlbnNzaC1rZXktdjEAAAAA", "private-key",
     ["Private-Lines: counts the lines of the private part"]),
    ("---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----", "private-key", ["---- BEGIN SSH2 PUBLIC KEY ----"]),
    (f'{{"kty":"EC","crv":"P-256","x":"{JWK_X}","d":"{JWK_D}"}}', "private-key",
     [f'{{"kty":"EC","crv":"P-256","x":"{JWK_X}"}}', f'{{"d": "{JWK_D}"}}']),
    (f"redis://:{PW}@cache:6379/0", "url-credentials", ["redis://cache:6379/0", "redis://:PASS@host"]),
    (f"amqp://:{PW}@mq.internal/vhost", "url-credentials", ["amqp://guest@mq.internal/vhost"]),
    (f"mongodb://:{PW}@db.internal:27017", "url-credentials", ["mongodb://db.internal:27017"]),
    (f"postgres://:{PW}@db.internal/app", "url-credentials", ["postgresql://user:pass@localhost:5432/dbname"]),
    (f'password => "{PW}"', "password-assignment", ['password => $db_password', 'password => "${DB_PASSWORD}"']),
    (f'password := "{PW}"', "password-assignment", ["if (password := form.password) is None:"]),
    ('api_key => "abcd1234efgh5678ijkl"', "credential-assignment", ['api_key => "${API_KEY}"']),
    ('API_KEY := "abcd1234efgh5678ijkl"', "credential-assignment", ["API_KEY := os.Getenv(name)"]),
    (f"ALTER USER app WITH PASSWORD '{PW}';", "password-assignment",
     ["reset your password tomorrow", "my password is in the drawer", "ALTER USER app WITH PASSWORD 'xxxxxxxx';"]),
    (f"CREATE USER app IDENTIFIED BY '{PW}';", "password-assignment",
     ["the library is identified by 'name'", "the user identified by their email"]),
    (f"CREATE USER app IDENTIFIED WITH caching_sha2_password BY '{PW}';", "password-assignment",
     ["IDENTIFIED WITH caching_sha2_password BY '****'"]),
    (f"machine git.example.com login bob password {PW}", "password-assignment",
     ["the machine learning password manager", "machine git.example.com login bob"]),
    (f"default login bob password {PW}", "password-assignment", ["by default login asks for a password"]),
    (f"PASSWORD\t{PW}", "password-assignment", ["id\tpassword\temail"]),
    (f"mysql -u root -p{PW} app", "password-assignment", ["mysql -u root -p app", "mysql is slow -please fix"]),
    ("mysqldump -u root -proot app", "password-assignment", ["mysqldump -h db -P3306 app"]),
    (f"curl -u admin:{PW} https://api.example.com", "password-assignment",
     ["curl -u admin https://api.example.com", "curl -u $USER:$TOKEN https://api.example.com"]),
    (f"sshpass -p '{PW}' ssh deploy@host", "password-assignment", ["sshpass -p $SSHPASS ssh deploy@host"]),
    (f"backup --password {PW}", "password-assignment", ["backup --password prompt", "--password secret"]),
    ('headers["X-Api-Key"] = "abcdef1234567890abcd"', "credential-assignment",
     ['headers["X-Api-Key"] = settings.api_key', 'headers["X-Api-Key"] = "${API_KEY}"']),
    (f"params['password'] = '{PW}'", "password-assignment", ["opts['password'] = url.password"]),
    (f'{{"auths": {{"registry.example.com": {{"auth": "{DOCKER_AUTH}"}}}}}}', "docker-registry-auth",
     ['{"auth": "bm90aGluZw=="}', '{"auths": {"registry.example.com": {}}}']),
    (f"<password>{PW}</password>", "password-assignment", ["<password>${DB_PASSWORD}</password>",
                                                          "<label>password</label>"]),
    (f"<db_password>{PW}</db_password>", "password-assignment", ["<password/>"]),
    ("hvs.CAESIJv5GxA0B2zPq8KZ5fB2r4nT1c9sUqXo", "vault-token", ["hvs.example_token_for_docs"]),
    ("hvb.AAAAAQJ2q8d7ZbX9kW3mN5pR7tV9xZ1", "vault-token", ["hvb.is a batch token prefix"]),
    ("shpat_" + HEX32, "shopify-token", ["shpat_ is a Shopify admin token prefix"]),
    ("shpss_" + HEX32, "shopify-token", ["shpss_" + "g" * 32]),
    ("shpca_" + HEX32, "shopify-token", ["shpca_tokens"]),
    ("shppa_" + HEX32, "shopify-token", ["shppa_tokens"]),
    ("dapi" + HEX32, "databricks-token", ["dapi" + HEX32 + "0123", "dapi_client"]),
    ("dop_v1_" + HEX32 * 2, "digitalocean-token", ["dop_v1_" + HEX32]),
    ("doo_v1_" + HEX32 * 2, "digitalocean-token", ["doo_v1_tokens"]),
    ("SK" + HEX32, "twilio-api-key", ["ASK" + HEX32, "SK" + HEX32.upper()]),
    ("123456789:AAEhBOweik6ad9r_QXMENQjcrGbqCr4K-bs", "telegram-bot-token",
     ["123456789:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "12:30:AA meeting"]),
    ("MTIzNDU2Nzg5MDEyMzQ1Njc4.GhJkLm.AbCdEfGhIjKlMnOpQrStUvWxYz0123456", "discord-bot-token",
     ["MTIzNDU2Nzg5MDEyMzQ1Njc4.GhJkLm", "MTV.example.com"]),
    ("discord bot OTIzNDU2Nzg5MDEyMzQ1Njc4.GhJkLm.AbCdEfGhIjKlMnOpQrStUvWxYz0123456", "discord-bot-token",
     ["OTIzNDU2Nzg5MDEyMzQ1Njc4.GhJkLm.AbCdEfGhIjKlMnOpQrStUvWxYz0123456"]),
    ("AGE-SECRET-KEY-1" + "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7LQPZRY9X8GF2TVDW0S3JN54KHCE", "age-secret-key",
     ["AGE-SECRET-KEY-1 starts every age identity"]),
    ("ATATT3xFfGF0" + "aB3_" * 20, "atlassian-api-token", ["ATATT3 is the prefix"]),
    ("gsk_" + "aB3d" * 13, "groq-api-key", ["gsk_" + "abcd" * 13]),
    ("r8_" + "aB3" * 12 + "x", "replicate-api-token", ["var8_" + "aB3" * 12 + "x", "r8_" + "ab" * 18 + "x"]),
    ("xai-" + "aB3d" * 20, "xai-api-key", ["xai-" + "abcd" * 20, "taxai-" + "aB3d" * 20]),
    ("//registry.npmjs.org/:_authToken=0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b", "credential-assignment",
     ["//registry.npmjs.org/:_authToken=${NPM_TOKEN}"]),
    ("tok_sk_live_4eC39HqLyjWDarjtT1zdp7dc", "stripe-key", ["framework_test_integrationSuiteRunner1"]),
    ("xrk_live_4eC39HqLyjWDarjtT1zdp7dc", "stripe-key", ["work_live_streamingDashboardWidget2"]),
    ("tok_hf_" + "aB3C" * 8, "huggingface-token", ["self_hf_AutoTokenizerConfigurationLoader1"]),
    ("xya29.a0AfH6SMBx3Kq9Lm2Np4Rs6Tv8Wy0Za", "google-oauth-secret", ["Maya29.pictures_from_the_summer_trip"]),
    ("xSG." + "aB3C" * 5 + "aB" + "." + "aB3C" * 10 + "aBc", "sendgrid-api-key",
     ["MSG." + "a" * 22 + "." + "b" * 43]),
    ("run_npm_" + "aBCd" * 9, "npm-token", ["run_npm_installDependenciesAndBuildTheProject"]),
    ("gloas-" + "a1" * 32, "gitlab-token", ["gloas-tokens"]),
    ("glft-" + "a1" * 10, "gitlab-token", ["glft-feed"]),
    ("glimt-" + "a1" * 13, "gitlab-token", ["glimt-mail"]),
    ("glagent-" + "a1" * 25, "gitlab-token", ["glagent-config"]),
]


@pytest.mark.parametrize(("secret", "secret_class", "benign"), SHAPES, ids=[s[1] + ":" + s[0][:24] for s in SHAPES])
def test_a_leaked_shape_is_refused_and_its_nearest_benign_text_is_not(
        secret: str, secret_class: str, benign: list[str]) -> None:
    assert scan_text(secret) == secret_class
    assert scan_text(f"the config is {secret} ok") == secret_class
    assert {text: scan_text(text) for text in benign} == dict.fromkeys(benign)


@pytest.mark.parametrize("kind", ["RSA", "EC", "DSA", "OPENSSH", "ENCRYPTED", ""])
def test_every_armour_of_a_private_key_is_refused_the_openpgp_one_too(kind: str) -> None:
    header = f"-----BEGIN {kind} PRIVATE KEY-----".replace("  ", " ")
    assert scan_text(header + "\nMIIEpAIBAAKCAQEA") == "private-key"
    assert scan_text("-----BEGIN PGP PRIVATE KEY BLOCK-----") == "private-key"
    assert scan_text("-----BEGIN CERTIFICATE-----") is None


def test_every_new_class_is_listed_once() -> None:
    assert len(SECRET_CLASSES) == len(set(SECRET_CLASSES))
    assert {s[1] for s in SHAPES} <= set(SECRET_CLASSES)


def test_a_docker_login_in_metadata_is_read_with_its_key() -> None:
    metadata = {"auths": {"registry.example.com": {"auth": DOCKER_AUTH}}}
    assert scan("Registry", "", "", (), json_strings(metadata)) == "docker-registry-auth"
    assert scan("Registry", "", "", (), json_strings({"auths": {"registry.example.com": {"auth": "bm90aGluZw=="}}})) is None


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="\"'<{[($%*x#?,;/~"),
               min_size=3, max_size=40).filter(lambda v: len(v.rstrip(".:!?)]}")) >= 4 and any(c.isdigit() for c in v)
                                               and any(c.isalpha() for c in v)))
def test_any_password_in_a_netrc_entry_or_an_sql_literal_is_refused(value: str) -> None:
    assert scan_text(f"machine h.example.com login bob password {value}") == "password-assignment"
    assert scan_text(f"ALTER ROLE app WITH PASSWORD '{value}'") == "password-assignment"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["my", "password", "is", "in", "the", "drawer", "reset", "your", "machine", "login",
                                 "manager", "identified", "by", "curl", "mysql", "-p", "pass", "default", "tomorrow"]),
                min_size=1, max_size=12))
def test_prose_made_of_credential_words_is_not_refused_but_a_netrc_entry_is(words: list[str]) -> None:
    assert scan_text(" ".join(words) + " machine h.example.com login bob password S3cretPass99") == "password-assignment"
    text = " ".join(words)
    # ``machine <host> login <user> password <value>`` is a .netrc entry whatever the words
    if "login" not in words or "password" not in words:
        assert scan_text(text) is None, text


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=10**16, max_value=10**19 - 1), st.booleans())
def test_a_discord_bot_token_of_any_bot_id_is_refused(bot_id: int, named: bool) -> None:
    first = base64.b64encode(str(bot_id).encode()).decode().rstrip("=")
    token = f"{first}.GxYzAb.abcdEFGH1234ijklMNOP5678qrstUVWX90y"
    context = "the Discord bot token is " if named else "the bot token is "
    found = scan_text(context + token)
    # an id starting with 1 opens with ``MT``; any ``MT`` in the text lets the shape be looked for
    assert found == ("discord-bot-token" if named or "MT" in first else None)
    if str(bot_id).startswith("1"):
        assert found == "discord-bot-token"


def test_a_jwk_private_member_in_metadata_is_read_with_its_kty() -> None:
    private = {"keys": [{"kty": "EC", "crv": "P-256", "x": JWK_X, "d": JWK_D}]}
    public = {"keys": [{"kty": "EC", "crv": "P-256", "x": JWK_X}], "d": JWK_D}
    assert scan("Signing key", "", "", (), json_strings(private)) == "private-key"
    assert scan("Signing key", "", "", (), json_strings(public)) is None


def test_a_netrc_password_that_reads_like_an_operator_is_refused() -> None:
    """A ``.netrc`` value is the word after ``password``, even when it starts as ``=>`` or ``:=`` would (found by
    the property above); the same operators in code still read as code, not a literal."""
    for value in ("=>A0", ":=A0x", "=>s3cr3t!"):
        assert scan_text(f"machine h.example.com login bob password {value}") == "password-assignment", value
    for code in ("x := y.password", 'opts["password"] => url.password', "password =>A0"):
        assert scan_text(code) is None, code

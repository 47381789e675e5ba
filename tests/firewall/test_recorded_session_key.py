"""The key a session is recorded under (``session_ref.recorded_session_key``): the key a caller gave, unless the
secret scanner finds a credential in it; then a keyed digest that never holds it.

Properties over the ids hosts mint (UUIDs, hex, ULIDs, short base64url tokens): recorded as given, without
reading the installation's secret. Credentials of every shape the scanner names, alone or glued into a
key: recorded as ``redacted-session:<32 hex>``, the same for the same key and secret, another for another.
"""

from __future__ import annotations

import base64
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.rpc.session_params import KeyedSessionParams
from meta_memory.session_ref import (
    SECRET_SESSION_KEY_PREFIX,
    SessionRef,
    recorded_session_key,
    session_key_secret,
)

SECRET = b"s" * 32
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _unread() -> bytes:
    raise AssertionError("the secret is read only for a key holding a credential")


ids = st.one_of(
    st.uuids().map(str),
    st.uuids().map(lambda u: u.hex),
    st.binary(min_size=8, max_size=64).map(bytes.hex),
    st.text(CROCKFORD, min_size=26, max_size=26),  # a ULID
    st.binary(min_size=12, max_size=16).map(lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")),
    st.integers(0, 10**9).map(lambda n: f"thread-{n}"),
    st.tuples(st.integers(10**8, 10**9), st.integers(1_600_000_000, 1_800_000_000), st.integers(0, 999_999))
    .map(lambda t: f"slack:C0{t[0]}:{t[1]}.{t[2]:06d}"),
)


@settings(max_examples=300, deadline=None)
@given(ids)
def test_an_opaque_id_is_recorded_as_given(key: str) -> None:
    assert recorded_session_key(key, _unread) == key


@settings(max_examples=100, deadline=None)
@given(st.text("0123456789abcdef", min_size=1, max_size=512))
def test_lower_case_hex_of_any_length_never_looks_like_a_credential(key: str) -> None:
    assert session_key_secret(key) is None


CREDENTIALS = {
    "github-token": "ghp_" + "Zq7Rk2Lm9Xw4" * 3,
    "aws-access-key-id": "AKIA" + "Q7XW2LM9RK4ZP3TB",
    "gitlab-token": "glpat-" + "x1Y2z3W4v5U6t7S8r9Q0",
    "slack-token": "xoxb-" + "1234567890-abcdefghij",
    "openai-api-key": "sk-proj-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8",
    "url-credentials": "https://bot:" + "hunter2hunter2" + "@chat.example.com/thread/9",
}


@pytest.mark.parametrize(("secret_class", "credential"), CREDENTIALS.items(), ids=list(CREDENTIALS))
@pytest.mark.parametrize("template", ["{}", "session:{}", "thread-7/{}"])
def test_a_credential_is_recorded_by_its_keyed_digest(secret_class: str, credential: str, template: str) -> None:
    key = template.format(credential)
    assert session_key_secret(key) == secret_class
    recorded = recorded_session_key(key, lambda: SECRET)
    assert recorded.startswith(SECRET_SESSION_KEY_PREFIX) and len(recorded) == len(SECRET_SESSION_KEY_PREFIX) + 32
    assert credential not in recorded and session_key_secret(recorded) is None
    assert recorded == recorded_session_key(key, lambda: SECRET)  # stable: the same session every call
    assert recorded != recorded_session_key(key, lambda: b"t" * 32)  # keyed: not a plain hash of the key
    assert recorded != recorded_session_key(key + "x", lambda: SECRET)
    assert SessionRef("default", "a:main", recorded).session_key == recorded  # a valid key in turn


def test_the_params_name_the_recorded_session() -> None:
    token = CREDENTIALS["github-token"]
    params = KeyedSessionParams.model_validate({"identity": "a:main", "session_key": token})
    assert params.session_key == token  # validated as given; recorded by its digest only
    ref = params.session_ref("default", lambda: SECRET)
    assert ref.session_key == recorded_session_key(token, lambda: SECRET) and token not in str(ref)
    plain = KeyedSessionParams.model_validate({"identity": "a:main", "session_key": str(uuid.uuid4())})
    assert plain.session_ref("default", _unread).session_key == plain.session_key

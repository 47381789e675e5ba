"""The session of an identity in a realm: the one key of all session state (spec README, "The host surface").

Taint, pending taint, reset marks, injection dedup sets and byte budgets and block nonces are
kept per **(realm, logical identity, session key)**. :class:`SessionRef` is that key as one value:
every session method builds one from its params (``rpc/session_params.py``, the realm defaulting
to ``[agent_memory] realm`` there and nowhere else) and hands it down unchanged, through the host
service and the ``memory`` tool to the firewall and the session-state store, so no layer can act
in a realm the call did not name.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from .agent_memory.secrets import scan_text
from .identity import check_name, parse_identity, parse_realm
from .limits import MAX_SESSION_KEY_BYTES

__all__ = ["MAX_SESSION_KEY_BYTES", "SECRET_SESSION_KEY_PREFIX", "SESSION_KEY_DIGEST_PREFIX", "SessionRef",
           "check_session_key", "keyless_reason", "recorded_session_key", "session_key_digest",
           "session_key_secret"]


#: The prefix of a session key's digest (:func:`session_key_digest`).
SESSION_KEY_DIGEST_PREFIX = "key:"


def session_key_digest(session_key: str, secret: bytes) -> str:
    """What a reader who may not manage the session is shown instead of its key: ``key:<8 hex>``, the
    first 8 hex digits (32 bits) of the HMAC-SHA256 of the key (UTF-8) under ``secret``, the runtime's
    session-digest secret (``AccessService.digest_secret``: the installation's, so stable across restarts
    of one state directory or PostgreSQL schema). Stable, so rows of one session can still be told apart
    and matched across listings, but not the key: a session key is a bearer-like secret within its realm
    (whoever presents it acts in that session), so it is shown in clear only to a caller holding
    ``agent.session.manage`` on the identity (:meth:`meta_memory.panel.visibility.Visibility.session_key`).
    Keyed, so a weak key (``session-1``) cannot be recovered by hashing guesses without the secret."""
    mac = hmac.new(secret, session_key.encode("utf-8", "surrogatepass"), hashlib.sha256)
    return SESSION_KEY_DIGEST_PREFIX + mac.hexdigest()[:8]


#: The prefix of the key a session is recorded under when the key the caller gave holds a credential
#: (:func:`recorded_session_key`).
SECRET_SESSION_KEY_PREFIX = "redacted-session:"


def session_key_secret(session_key: str) -> str | None:
    """The credential class (:data:`meta_memory.agent_memory.secrets.SECRET_CLASSES`) the secret scanner
    finds in ``session_key`` (``github-token``, ``aws-access-key-id``, ...), else ``None``. Never the text."""
    return scan_text(session_key)


def recorded_session_key(session_key: str, secret: Callable[[], bytes]) -> str:
    """The key session state, the timeline, the injection ledger, evidence refs and every answer record
    for the session a caller named ``session_key``: the key itself, unless the secret scanner finds a
    credential in it (:func:`session_key_secret`); then ``redacted-session:<32 hex>``, the first 128 bits
    of the HMAC-SHA256 of the key (UTF-8) under ``secret()`` (the installation's session-digest secret,
    ``AccessService.digest_secret``; read only then), so a credential a host put in a session key is never
    written nor shown, while every call naming that key still reaches the one session it names (its taint,
    its injection budget, a refused report's taint). Not refused: the scanner's named detectors also match
    random ids by chance (a 43-character base64url id about once in 75,000, an upper-case UUID once in
    50,000), and such a session must keep working. ``secret`` is read at most once; a key without a
    credential (a UUID, hex, a ULID, ``thread-123``) is returned unchanged, without reading it."""
    if session_key_secret(session_key) is None:
        return session_key
    mac = hmac.new(secret(), b"meta-memory session key\0" + session_key.encode("utf-8", "surrogatepass"),
                   hashlib.sha256)
    return SECRET_SESSION_KEY_PREFIX + mac.hexdigest()[:32]


#: A quarantine reason as written before reasons stopped naming the session: ``derived from session
#: '<key>' tainted by <source>``. Such text may still be stored in a record's status or an event.
_KEYED_REASON = re.compile(r"^derived from session '.*' tainted by ", re.DOTALL)


def keyless_reason(text: str) -> str:
    """``text`` with the session key of a stored derived-write quarantine reason taken out
    (``derived from session '<key>' tainted by X`` reads ``derived from a session tainted by X``, the
    text written today); any other text is returned unchanged. Reasons and messages never carry a
    session key (spec README, "The host surface")."""
    return _KEYED_REASON.sub("derived from a session tainted by ", text, count=1)


def check_session_key(value: object, *, required: bool, name: str = "session_key") -> str | None:
    """``value`` as a session key, exactly as given: a non-blank string of at most
    :data:`MAX_SESSION_KEY_BYTES` bytes that holds to the name rule (:func:`meta_memory.identity.check_name`):
    no whitespace at either end, no control, invisible or direction-changing characters, no spaces other
    than U+0020, Unicode NFC. A key is never trimmed: ``" s1"`` is refused rather than read as ``"s1"``, so
    two spellings that look alike never name one session, nor one spelling two.

    ``None`` is returned for ``None`` unless ``required``. Raises ``ValueError`` naming ``name`` (default
    ``session_key``; the CLI passes its option) and the rule (the params layer reports it as -32602 on that
    field)."""
    if value is None:
        if required:
            raise ValueError(f"{name} must be a non-empty string")
        return None
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string")
    if not value:
        raise ValueError(f"{name} must be a non-empty string")
    if not value.strip():
        raise ValueError(f"{name} must be a non-empty string, not only whitespace or control characters "
                         "(a session key is taken as given, never trimmed)")
    return check_name(name, value, MAX_SESSION_KEY_BYTES, noun="session key")


@dataclass(frozen=True, slots=True)
class SessionRef:
    """One session of one identity in one realm.

    Attributes:
        realm: the realm the session lives in (always named: the default is applied where params
            are parsed, never below).
        identity: the *logical* identity (``rt:<id>:<generation>`` is stored as ``<id>``).
        session_key: the session; ``None`` when the caller named none (the identity's current
            session, as the firewall tracks it).
        shares_key_with: which *other* identities' taint of the same key in the realm counts for the
            session's writes, given their logical names: ``None`` (the default: every call without
            access control, and every call under ``[agent_memory] shared_key_taint = "any"``) counts every
            identity's; under ``"managed"`` and access control only the identities the caller manages
            the sessions of (``agent.session.manage``), so an identity of another principal can neither
            add quarantine to these writes nor learn through them whether its key is tainted
            (``docs/security.md``, "A write carries the taint of the session it comes from"). Not part of
            the key: two refs differing only here are equal.

    Construction normalises and checks every member (``ValueError`` naming ``realm``,
    ``identity`` or ``session_key`` and the rule), so a ``SessionRef`` is always a valid key.
    """

    realm: str
    identity: str
    session_key: str | None = None
    shares_key_with: Callable[[str], bool] | None = field(default=None, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.realm, str):
            raise ValueError("realm must be a non-empty string")
        object.__setattr__(self, "realm", parse_realm(self.realm))
        object.__setattr__(self, "identity", parse_identity(self.identity))
        object.__setattr__(self, "session_key", check_session_key(self.session_key, required=False))

    @property
    def owner(self) -> str:
        """``<realm>/<identity>``: how access control and the timeline name the session's owner."""
        return f"{self.realm}/{self.identity}"

    def keyed(self) -> str:
        """The session key, which the caller must have named (``ValueError`` naming ``session_key`` otherwise)."""
        if self.session_key is None:
            raise ValueError("session_key must be a non-empty string")
        return self.session_key

    def __str__(self) -> str:
        return f"{self.owner}#{self.session_key}" if self.session_key is not None else self.owner

"""Who is calling: bearer-token authentication into a :class:`Principal`.

Seed: "Reviewing quarantined records" — the reviewer is the authenticated
console principal, never a caller-supplied name; on a host running without app
authentication no principal is known; with access control on, an anonymous
caller is held to the same grants.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field
from typing import Any

from ..errors import AccessDenied, MetaError
from .config import AccessConfig

__all__ = ["ANONYMOUS", "AuthenticationFailed", "Principal", "authenticate"]

NO_PRINCIPAL_KNOWN = "no principal known"


@dataclass(frozen=True)
class Principal:
    """An authenticated (or anonymous) caller.

    ``name`` is the configured principal name, ``None`` when anonymous;
    ``roles``/``labels`` are matched by ``who.role``/``who.label`` rule
    selectors; ``anonymous`` callers match only ``who = { anyone = true }``.
    """

    name: str | None
    roles: frozenset[str] = field(default_factory=frozenset)
    labels: frozenset[str] = field(default_factory=frozenset)
    anonymous: bool = False

    @property
    def display(self) -> str:
        """The name for logs and receipts: the principal name, or ``"no principal known"``."""
        return self.name if self.name is not None else NO_PRINCIPAL_KNOWN

    def reviewer(self) -> dict[str, Any]:
        """The review-audit reviewer object: ``{"kind": "operator", "principal": name | None}``.

        ``principal`` is ``None`` when no principal is known (seed).
        """
        return {"kind": "operator", "principal": self.name}


#: The caller when no principal is known.
ANONYMOUS = Principal(name=None, anonymous=True)


class AuthenticationFailed(AccessDenied):
    """The ``Authorization`` header was refused; the HTTP layer answers ``401``.

    An :class:`~meta_memory.errors.AccessDenied` (-32030), so every surface maps it through the one
    error mapping (:meth:`~meta_memory.errors.MetaError.to_jsonrpc`): ``message``
    ``authentication failed: <detail>``, ``data {kind: "access_denied", action: "authenticate"}``.

    Attributes: ``status`` (401), ``www_authenticate`` (the challenge header value),
    ``reason`` (``missing_token`` | ``malformed_header`` | ``unknown_token``; not sent),
    ``detail`` (the refusal in words). The message never echoes the presented token.
    """

    status = 401
    www_authenticate = 'Bearer realm="meta-memory"'

    def __init__(self, reason: str, detail: str) -> None:
        MetaError.__init__(self, f"authentication failed: {detail}", action="authenticate")
        self.action = "authenticate"
        self.resource = None
        self.reason = reason
        self.detail = detail


def _bearer(header: str) -> str:
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or any(ch.isspace() for ch in token):
        raise AuthenticationFailed("malformed_header", "Authorization header must be 'Bearer <token>'")
    return token


def authenticate(authorization_header: str | None, config: AccessConfig | None) -> Principal:
    """Turn an HTTP ``Authorization`` header into a :class:`Principal`.

    Rules:

    * no tokens configured (or no ``[access]`` section): the host runs without
      app authentication; every caller is :data:`ANONYMOUS` ("no principal
      known"), whatever header it sends;
    * tokens configured, no header (``None`` or blank): :data:`ANONYMOUS` when
      access control is enabled (the policy then holds it to ``anyone`` rules);
      refused (``missing_token``) when access control is off, because the
      tokens are then the only guard;
    * tokens configured, a header that is not ``Bearer <token>``: refused
      (``malformed_header``); a token whose SHA-256 digest matches no entry:
      refused (``unknown_token``).

    Digests are compared with :func:`hmac.compare_digest` against every entry
    (no early exit), so timing reveals nothing about which entry came close.

    Raises :class:`AuthenticationFailed` (HTTP 401).
    """
    if config is None or not config.tokens:
        return ANONYMOUS
    if authorization_header is None or not authorization_header.strip():
        if config.enabled:
            return ANONYMOUS
        raise AuthenticationFailed("missing_token", "a bearer token is required")
    token = _bearer(authorization_header)
    digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest().encode("ascii")
    found = None
    for entry in config.tokens:
        if hmac.compare_digest(digest, entry.sha256.encode("ascii")) and found is None:
            found = entry
    if found is None:
        raise AuthenticationFailed("unknown_token", "the bearer token is not recognised")
    return Principal(
        name=found.principal,
        roles=frozenset(found.roles),
        labels=frozenset(found.labels),
        anonymous=False,
    )

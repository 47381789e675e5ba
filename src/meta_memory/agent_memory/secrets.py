"""Secret detection for durable memory (reference §8).

Durable memory must never hold credentials. Four classes, checked in this
order (first match wins), over title, then description, then body, then each
tag:

1. ``aws-access-key-id``: ``AKIA``/``ASIA`` + exactly 16 of ``[A-Z0-9]``,
   bounded by non-word characters (word = ASCII alphanumeric or ``_``).
2. ``github-token``: ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` + >= 36 ASCII
   alphanumerics, or ``github_pat_`` + >= 22 of ``[A-Za-z0-9_]``.
3. ``private-key``: both ``-----BEGIN`` and ``PRIVATE KEY-----`` appear.
4. ``credential-assignment``: a credential key name (case-insensitive) at a
   word boundary, ``=`` or ``:``, an optional quote, then a run of >= 16
   ``[A-Za-z0-9_\\-/+=.]`` containing at least one digit.

The refusal names the class, never the matched text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["SECRET_CLASSES", "scan_text", "scan"]

SECRET_CLASSES = ("aws-access-key-id", "github-token", "private-key", "credential-assignment")

_NOT_WORD_BEFORE = r"(?<![A-Za-z0-9_])"
_NOT_WORD_AFTER = r"(?![A-Za-z0-9_])"

_AWS = re.compile(_NOT_WORD_BEFORE + r"(?:AKIA|ASIA)[A-Z0-9]{16}" + _NOT_WORD_AFTER)
_GITHUB = re.compile(_NOT_WORD_BEFORE + r"(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{22})")
_CREDENTIAL_KEYS = (
    "api_key",
    "api-key",
    "apikey",
    "secret_key",
    "secret-key",
    "client_secret",
    "access_token",
    "access-token",
    "auth_token",
    "auth-token",
    "aws_secret_access_key",
    "private_token",
)
_CREDENTIAL = re.compile(
    _NOT_WORD_BEFORE
    + "(?:"
    + "|".join(re.escape(k) for k in _CREDENTIAL_KEYS)
    + r")[ \t]*[=:][ \t]*[\"']?([A-Za-z0-9_\-/+=.]{16,})",
    re.IGNORECASE,
)
_DIGIT = re.compile(r"[0-9]")


def scan_text(text: str) -> str | None:
    """The first secret class found in ``text``, or ``None``.

    Each pattern runs only when ``text`` holds a substring every match of it must contain (``AKIA``
    or ``ASIA``; ``_``; ``=`` or ``:``), so ordinary prose costs a few substring checks."""
    if ("AKIA" in text or "ASIA" in text) and _AWS.search(text):
        return "aws-access-key-id"
    if "_" in text and _GITHUB.search(text):
        return "github-token"
    if "-----BEGIN" in text and "PRIVATE KEY-----" in text:
        return "private-key"
    if "=" in text or ":" in text:
        for match in _CREDENTIAL.finditer(text):
            if _DIGIT.search(match.group(1)):
                return "credential-assignment"
    return None


def scan(title: str, description: str, body: str, tags: Iterable[str] = ()) -> str | None:
    """Scan a record's fields in order (title, description, body, each tag); first class found or ``None``.

    Tags are stored ASCII-lowercased, which would hide a case-sensitive key id (``AKIA...``), so
    each tag is also scanned upper-cased.
    """
    for text in (title, description, body):
        found = scan_text(text)
        if found is not None:
            return found
    for tag in tags:
        found = scan_text(tag) or scan_text(tag.upper())
        if found is not None:
            return found
    return None

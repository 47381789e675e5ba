"""Secret detection for everything that becomes durable memory (reference §8, widened).

Durable memory must never hold credentials. This module is the one scanner: the
staged-batch validator (every agent-memory write: remember, update, the
``memory`` tool, markdown import, proposals), quarantine release, the steward's
dream, the ledger (``meta/memory/index`` ``fact``, ``metadata``, conflict
reason) and exit-interview harvest causes all call it.

What is scanned (:func:`scan`, :func:`scan_values`):

1. every field after :func:`normalise_for_scan`: Unicode NFKC (fullwidth
   ``ＡＫＩＡ`` reads ``AKIA``), every format character removed (category ``Cf``:
   zero-width space/joiners, word joiner, BOM, soft hyphen, bidi controls), and
   Unicode dashes folded to ``-``; a value that is plain ASCII skips the work;
2. each field on its own, in order (title, description, body, each tag -- tags
   also upper-cased, as they are stored lower-cased);
3. the fields joined with nothing between them, so a key split across the title
   and the body is found.

Classes, checked in this order (first found wins; the class is all a refusal
names -- never the matched text):

============================ ==============================================================
``aws-access-key-id``        ``AKIA``/``ASIA``/``ABIA``/``ACCA``/``A3T?`` + 16 of ``[A-Z0-9]``, word-bounded
``github-token``             ``gh[pousr]_`` + >= 36 alphanumerics; ``github_pat_`` + >= 22
``private-key``              ``-----BEGIN`` + ``PRIVATE KEY-----``; or an unarmoured PEM body
                             (PKCS#1/PKCS#8/EC/OpenSSH/encrypted PKCS#8 DER prefixes + >= 40 base64)
``anthropic-api-key``        ``sk-ant-`` + >= 24 of ``[A-Za-z0-9_-]``
``openai-api-key``           ``sk-proj-``/``sk-svcacct-``/``sk-admin-`` + >= 20 (letters and digits);
                             bare ``sk-`` + >= 32 with upper, lower and digit
``slack-token``              ``xox[abposr]-`` + >= 10 (with a digit); ``xapp-``; Slack webhook URLs
``stripe-key``               ``sk_``/``rk_`` + ``live_``/``test_`` + >= 16; ``whsec_`` + >= 24
``google-api-key``           ``AIza`` + 35 of ``[A-Za-z0-9_-]``
``google-oauth-secret``      ``GOCSPX-`` + >= 20; ``ya29.`` access tokens
``gitlab-token``             ``glpat-`` + >= 20
``npm-token``                ``npm_`` + 36 alphanumerics
``pypi-token``               ``pypi-AgEIcHlwaS5vcmc`` + >= 16
``huggingface-token``        ``hf_`` + >= 30 alphanumerics
``sendgrid-api-key``         ``SG.<22>.<43>``
``jwt``                      ``eyJ<header>.eyJ<payload>.<signature>``
``bearer-token``             ``Bearer`` + a token of >= 16 with a letter and a digit;
                             ``Authorization: Basic|Token <credential>``
``url-credentials``          ``scheme://user:password@`` (not a ``$VAR``/``{placeholder}``)
``password-assignment``      ``password``/``passwd``/``passphrase``/``pwd`` (optionally prefixed,
                             optionally quoted as a JSON key), ``=`` or ``:``, then a value; see
                             :func:`_password_value_counts` for what counts (masked values and
                             ``${VAR}`` references do not)
``credential-assignment``    an API key/secret/token key name, ``=`` or ``:``, optional quote,
                             >= 16 of ``[A-Za-z0-9_-/+=.]`` containing a digit
============================ ==============================================================

Limits (documented in ``docs/security.md``): a secret paraphrased in prose
("my password is hunter2"), spelled out with spaces, encoded (base64 of a key),
or written with look-alike letters from another script is not found.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from meta_memory.textfold import fold

__all__ = [
    "SECRET_CLASSES",
    "normalise_for_scan",
    "scan",
    "scan_text",
    "scan_values",
    "secret_rule",
]

_W = "A-Za-z0-9_"
_NOT_WORD_BEFORE = rf"(?<![{_W}])"
_NOT_WORD_AFTER = rf"(?![{_W}])"
_NOT_TOKEN_BEFORE = rf"(?<![{_W}-])"
_DIGIT = re.compile(r"[0-9]")
_UPPER = re.compile(r"[A-Z]")
_LOWER = re.compile(r"[a-z]")
_LETTER = re.compile(r"[A-Za-z]")


def _has_digit_letter(value: str) -> bool:
    return bool(_DIGIT.search(value) and _LETTER.search(value))


def _mixed(value: str) -> bool:
    return bool(_DIGIT.search(value) and _UPPER.search(value) and _LOWER.search(value))


# Values that stand for a secret without being one: masked, empty-ish, or a reference to where it lives
# (``${DB_PASSWORD}``, ``%PASSWORD%``, ``<password>``, ``{{ vault.pw }}``) -- the refusal text asks for
# exactly such references.
_PLACEHOLDER_START = tuple("$%<{[(")
_PLACEHOLDER_WORDS = frozenset(
    {"none", "null", "nil", "true", "false", "empty", "redacted", "hidden", "masked", "required", "optional",
     "unset", "undefined", "string", "str", "secret", "password", "xxx", "todo", "n/a", "na", "tbd"}
)
_MASK_CHARS = frozenset("*xX•·.#-_?")


def _password_value_counts(value: str, separator: str, quoted: bool) -> bool:
    """Whether the value of a ``password``-like assignment is a credential.

    Masked values (``****``), placeholder words (``null``, ``redacted``) and references
    (``$VAR``, ``${VAR}``, ``<pw>``, ``{{ x }}``, ``%VAR%``) never count. A quoted value
    or one after ``=`` counts from 3 characters; after a bare ``:`` (prose-like
    ``password: ...``) the value must also hold a digit or a symbol, so
    ``password: hunter2`` counts and ``Password: strong and unique`` does not.
    """
    value = value.strip().rstrip(".,;:!?)]}'\"")
    if len(value) < 3 or value.startswith(_PLACEHOLDER_START):
        return False
    if value.lower() in _PLACEHOLDER_WORDS or set(value) <= _MASK_CHARS:
        return False
    if quoted or separator == "=":
        return True
    return not value.isalpha()


_Rule = tuple[str, "re.Pattern[str]", "Callable[[re.Match[str]], bool] | None"]


def _always(_: re.Match[str]) -> bool:
    return True


_CREDENTIAL_KEYS = (
    "api_key", "api-key", "apikey", "secret_key", "secret-key", "client_secret", "access_token", "access-token",
    "auth_token", "auth-token", "aws_secret_access_key", "private_token", "secret_access_key", "api_token",
    "api-token", "refresh_token", "refresh-token", "session_token", "bearer_token", "accountkey", "account_key",
    "signing_key", "secret",
)

_RULES: tuple[_Rule, ...] = (
    (
        "aws-access-key-id",
        re.compile(_NOT_WORD_BEFORE + r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}" + _NOT_WORD_AFTER),
        None,
    ),
    ("github-token", re.compile(_NOT_WORD_BEFORE + r"(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{22})"), None),
    (
        "private-key",
        re.compile(
            r"-----BEGIN[^\n]{0,40}?PRIVATE KEY-----"
            r"|(?:MII[A-Za-z0-9+/]{3}IBA(?:AK|DAN)|MIG[A-Za-z0-9+/]{2}gE(?:AMB|BBD)|MHcCAQEE|MC4CAQAwBQYDK2Vw"
            r"|MII[A-Za-z0-9+/]{3}BfBgkqhkiG9w0BBQ0|b3BlbnNzaC1rZXktdjE)[A-Za-z0-9+/=\s]{40}"
        ),
        None,
    ),
    ("anthropic-api-key", re.compile(_NOT_TOKEN_BEFORE + r"sk-ant-[A-Za-z0-9_-]{24,}"), None),
    (
        "openai-api-key",
        re.compile(_NOT_TOKEN_BEFORE + r"sk-(?:(?P<kind>proj|svcacct|admin)-)?(?P<v>[A-Za-z0-9_-]{20,})"),
        lambda m: _has_digit_letter(m["v"]) if m["kind"] else (len(m["v"]) >= 32 and _mixed(m["v"])),
    ),
    (
        "slack-token",
        re.compile(
            _NOT_TOKEN_BEFORE + r"(?:xox[abposr]-(?P<v>[A-Za-z0-9-]{10,})|xapp-[0-9]-[A-Za-z0-9-]{10,}"
            r"|hooks\.slack\.com/services/T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]{8,})"
        ),
        lambda m: m["v"] is None or bool(_DIGIT.search(m["v"])),
    ),
    ("stripe-key", re.compile(_NOT_WORD_BEFORE + r"(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})"), None),
    ("google-api-key", re.compile(_NOT_WORD_BEFORE + r"AIza[A-Za-z0-9_-]{35}"), None),
    ("google-oauth-secret", re.compile(_NOT_WORD_BEFORE + r"(?:GOCSPX-[A-Za-z0-9_-]{20,}|ya29\.[A-Za-z0-9_-]{20,})"), None),
    ("gitlab-token", re.compile(_NOT_WORD_BEFORE + r"glpat-[A-Za-z0-9_-]{20,}"), None),
    ("npm-token", re.compile(_NOT_WORD_BEFORE + r"npm_[A-Za-z0-9]{36}"), None),
    ("pypi-token", re.compile(_NOT_WORD_BEFORE + r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{16,}"), None),
    ("huggingface-token", re.compile(_NOT_WORD_BEFORE + r"hf_(?P<v>[A-Za-z0-9]{30,})"), lambda m: _mixed(m["v"])),
    ("sendgrid-api-key", re.compile(_NOT_WORD_BEFORE + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"), None),
    ("jwt", re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"), None),
    (
        "bearer-token",
        re.compile(
            r"(?i:\bbearer)[ \t]+(?P<v>[A-Za-z0-9._~+/-]{16,}=*)"
            r"|(?i:\bauthorization)[ \t]*[:=][ \t]*(?i:basic|token|digest)[ \t]+(?P<b>[A-Za-z0-9._~+/-]{8,}=*)"
        ),
        lambda m: m["b"] is not None or _has_digit_letter(m["v"]),
    ),
    (
        "url-credentials",
        re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]{1,15}://[^\s/:@]{1,64}:(?P<v>[^\s/@]{3,128})@[A-Za-z0-9\[]"),
        lambda m: not m["v"].startswith(_PLACEHOLDER_START) and not set(m["v"]) <= _MASK_CHARS,
    ),
    (
        "password-assignment",
        re.compile(
            r"(?<![A-Za-z0-9])(?:[A-Za-z0-9]+[_.-])*(?i:password|passwd|passphrase|pwd)(?P<kq>[\"'])?[ \t]*"
            r"(?P<sep>[:=])[ \t]*(?:\"(?P<dq>[^\"\n]{1,256})\"|'(?P<sq>[^'\n]{1,256})'|(?P<v>[^\s\"',;]{1,256}))"
        ),
        lambda m: _password_value_counts(
            m["dq"] or m["sq"] or m["v"] or "", m["sep"], m["dq"] is not None or m["sq"] is not None
        ),
    ),
    (
        "credential-assignment",
        re.compile(
            r"(?<![A-Za-z0-9])(?:[A-Za-z0-9]+[_.-])*(?i:"
            + "|".join(re.escape(k) for k in _CREDENTIAL_KEYS)
            + r")[\"']?[ \t]*[=:][ \t]*[\"']?(?P<v>[A-Za-z0-9_\-/+=.]{16,})"
        ),
        lambda m: bool(_DIGIT.search(m["v"])),
    ),
)

#: Every class :func:`scan` can report, in check order.
SECRET_CLASSES: tuple[str, ...] = tuple(dict.fromkeys(name for name, _, _ in _RULES))

def normalise_for_scan(text: str) -> str:
    """``text`` as the scanner reads it: NFKC, format characters removed, Unicode dashes as ``-``
    (:func:`meta_memory.textfold.fold`). Plain ASCII is returned unchanged. The stored text is never
    altered; this copy is only matched."""
    return fold(text)


def _find(text: str) -> str | None:
    for name, pattern, verify in _RULES:
        if verify is None:
            if pattern.search(text):
                return name
            continue
        for match in pattern.finditer(text):
            if verify(match):
                return name
    return None


def scan_text(text: str) -> str | None:
    """The first secret class found in ``text`` after :func:`normalise_for_scan`, or ``None``."""
    return _find(normalise_for_scan(text))


def _scan_parts(parts: list[str]) -> str | None:
    normalised = [normalise_for_scan(p) for p in parts if p]
    for part in normalised:
        found = _find(part)
        if found is not None:
            return found
    if len(normalised) > 1:
        return _find("".join(normalised))
    return None


def scan(title: str, description: str, body: str, tags: Iterable[str] = ()) -> str | None:
    """Scan a record's fields (title, description, body, each tag), then the fields joined.

    Returns the first class found (:data:`SECRET_CLASSES`) or ``None``. Tags are
    stored ASCII-lowercased, which would hide a case-sensitive key id (``AKIA...``),
    so each tag is also scanned upper-cased (alone, and in the join).
    """
    tags = list(tags)
    found = _scan_parts([title, description, body, *tags])
    if found is None and tags:
        found = _scan_parts([title, description, body, *(t.upper() for t in tags)])
    return found


def _strings(value: Any, out: list[str], depth: int = 0) -> None:
    if depth > 64:
        return
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str):
                out.append(key)
            _strings(item, out, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _strings(item, out, depth + 1)


def scan_values(fields: Mapping[str, Any]) -> tuple[str, str] | None:
    """Scan named free-form values (strings, and every key and string inside JSON objects and arrays).

    Each field is scanned on its own (its strings separately, then joined), then all
    fields joined, in ``fields`` order. Returns ``(field, class)`` for the first hit --
    ``field`` is the name of the field holding it, or ``"+".join(names)`` when only the
    join of several fields holds it -- or ``None``.
    """
    per_field: list[tuple[str, list[str]]] = []
    for name, value in fields.items():
        strings: list[str] = []
        _strings(value, strings)
        if not strings:
            continue
        found = _scan_parts(strings)
        if found is not None:
            return name, found
        per_field.append((name, strings))
    if len(per_field) > 1:
        found = _find("".join(normalise_for_scan(s) for _, strings in per_field for s in strings))
        if found is not None:
            return "+".join(name for name, _ in per_field), found
    return None


def secret_rule(what: str, secret_class: str) -> str:
    """The refusal sentence for ``what`` (a field or "content") matching ``secret_class``; never the text."""
    return (
        f"{what} matches the '{secret_class}' secret pattern class (§10.4); durable memory must never hold "
        "credentials — store a reference to where the credential lives instead"
    )

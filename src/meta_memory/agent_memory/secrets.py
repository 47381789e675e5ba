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
   also upper-cased, as they are stored lower-cased -- then every other string the
   record stores: :meth:`~meta_memory.agent_memory.model.NewMemoryRecord.scanned_strings`,
   the provenance, the ``metadata`` (:func:`json_strings`: every key and string, and each key paired
   with every string or number under it, however many arrays or objects stand between, as
   ``{"key": value}`` lines, the key trimmed of white space -- so ``{"password": "hunter2x"}``,
   ``{"password": ["hunter2x"]}`` and ``{"password ": {"v": "hunter2x"}}`` read as the assignment
   they are; an object with ``kty`` and a string ``d`` also as ``{"kty": ..., "d": ...}``, a JWK) and, for a restored record, its id, scope key, status detail and links);
3. the fields joined with nothing between them, so a key split across the title
   and the body is found.

Classes, checked in this order (first found wins; the class is all a refusal
names -- never the matched text):

============================ ==============================================================
``aws-access-key-id``        ``AKIA``/``ASIA``/``ABIA``/``ACCA``/``A3T?`` + 16 of ``[A-Z0-9]``, not
                             followed by another of ``[A-Z0-9]``; ``AKIA``/``ASIA`` whole may run on
                             into a word (``AKIA..._prod``), the others and a key split by spaces,
                             ``.``, ``_``, ``-`` not
``github-token``             ``gh[pousr]_`` + >= 36 alphanumerics; ``github_pat_`` + >= 22
``private-key``              ``-----BEGIN`` + ``PRIVATE KEY-----`` (RSA, EC, DSA, OpenSSH, PKCS#8,
                             encrypted) or ``PRIVATE KEY BLOCK-----`` (OpenPGP); SSH2 ``---- BEGIN SSH2
                             [ENCRYPTED ]PRIVATE KEY ----``; PuTTY ``PuTTY-User-Key-File-[1-3]: <type>``
                             or ``Private-Lines: <n>`` + a base64 line; an unarmoured PEM body
                             (PKCS#1/PKCS#8/EC/OpenSSH/encrypted PKCS#8 DER prefixes + >= 40 base64);
                             a JWK ``"d": "<20 or more>"`` in the same JSON object as ``"kty"``
``anthropic-api-key``        ``sk-ant-`` + >= 24 of ``[A-Za-z0-9_-]`` (glued to a word: the value opens
                             with a key kind such as ``api03-``, or mixes upper, lower and digits)
``openai-api-key``           ``sk-proj-``/``sk-svcacct-``/``sk-admin-`` + >= 20 (letters and digits);
                             bare ``sk-`` + >= 32 with upper, lower and digit; ``sk-proj-`` glued
                             to a word: the value mixes upper, lower and digits
``slack-token``              ``xox[abposr]-`` + >= 10 (with a digit); ``xoxe-<n>-`` + >= 20 (refresh
                             tokens; a rotating ``xoxe.xoxp-`` holds ``xoxp-``); ``xapp-``; Slack
                             webhook URLs
``stripe-key``               ``sk_``/``rk_`` + ``live_``/``test_`` + >= 16; ``whsec_`` + >= 24
``google-api-key``           ``AIza`` + 35 of ``[A-Za-z0-9_-]``
``google-oauth-secret``      ``GOCSPX-`` + >= 20; ``ya29.`` access tokens; ``1//0`` + >= 40 of
                             ``[A-Za-z0-9_-]`` mixing upper, lower and digits (refresh tokens)
``gitlab-token``             ``glpat-``/``glrt-``/``gldt-``/``glptt-``/``glsoat-``/``glcbt-``/``gloas-``/
                             ``glft-``/``glimt-``/``glagent-`` + >= 20 of ``[A-Za-z0-9_-]`` (access,
                             runner, deploy, pipeline trigger, SCIM OAuth, CI/CD job, OAuth application
                             secret, feed, incoming mail, agent tokens); ``GR1348941`` + >= 20 (runner
                             registration)
``npm-token``                ``npm_`` + 36 alphanumerics
``pypi-token``               ``pypi-AgEIcHlwaS5vcmc`` + >= 16
``huggingface-token``        ``hf_`` + >= 30 alphanumerics
``sendgrid-api-key``         ``SG.<22>.<43>``
``vault-token``              ``hvs.``/``hvb.``/``hvr.`` + >= 24 of ``[A-Za-z0-9_-]`` with a letter and a digit
``shopify-token``            ``shpat_``/``shpss_``/``shpca_``/``shppa_`` + 32 hex
``databricks-token``         ``dapi`` + 32 lower-case hex (letters and digits), not followed by more hex
``digitalocean-token``       ``dop_v1_``/``doo_v1_``/``dor_v1_`` + 64 lower-case hex
``twilio-api-key``           ``SK`` + 32 lower-case hex (letters and digits), a whole word
``telegram-bot-token``       8-10 digits + ``:AA`` + 33 of ``[A-Za-z0-9_-]`` (upper and lower case)
``discord-bot-token``        base64 of a numeric id (quartets ``[MNO][DTjz][AEIMQUYcgk][w-z0-5]``) +
                             ``.`` + 6 + ``.`` + 27-38; ids starting with ``1`` (``MT...``) anywhere,
                             others in a text naming ``discord``/``Discord`` or holding ``MT``
``age-secret-key``           ``AGE-SECRET-KEY-1`` + 58 of the bech32 alphabet
``atlassian-api-token``      ``ATATT3``/``ATCTT3`` + >= 60 of ``[A-Za-z0-9_=-]``
``groq-api-key``             ``gsk_`` + >= 48 alphanumerics mixing upper, lower and digits
``replicate-api-token``      ``r8_`` + 37 alphanumerics mixing upper, lower and digits
``xai-api-key``              ``xai-`` + >= 70 alphanumerics mixing upper, lower and digits
``docker-registry-auth``     ``"auth": "<base64>"`` decoding to ``user:password`` (a Docker ``config.json``)
``jwt``                      ``eyJ<header>.eyJ<payload>.<signature>``, wherever it starts
``bearer-token``             ``Bearer`` + a token of >= 16 with a letter and a digit;
                             ``Authorization: Basic|Token <credential>``
``url-credentials``          ``scheme://user:password@`` or ``scheme://:password@`` (not a
                             ``$VAR``/``{placeholder}``, nor a documented ``pass``/``password``/``secret``)
``password-assignment``      ``password``/``passwd``/``passphrase``/``pwd`` with any prefix
                             (``PGPASSWORD``, ``DB_PASSWORD``), or ``pass`` as a word or joined
                             by ``_``/``-``/``.`` (``DB_PASS``, ``pass``), optionally quoted as
                             a JSON key or a subscript (``opts["password"]``), ``=``, ``:``,
                             ``:=``, ``=>`` or a tab, then a value (after ``:=``, ``=>`` or a
                             subscript: a quoted one); ``<password>value</password>``; after
                             spaces only a quoted value without white space (SQL ``WITH PASSWORD
                             'x'``), a ``.netrc`` entry (``machine h login u password x``) or
                             ``--password x`` (>= 8, letters and digits); SQL ``IDENTIFIED [WITH
                             plugin] BY 'x'``; ``mysql ... -px``, ``sshpass -p x``, ``curl -u
                             user:x``; see :func:`_password_value_counts` for what counts (masked
                             values, ``${VAR}`` references, ``some_password``-like names and file
                             paths do not)
``credential-assignment``    an API key/secret/token key name (``_authToken`` too), optionally quoted
                             and subscripted (``headers["X-Api-Key"]``), ``=``, ``:``, ``:=`` or
                             ``=>``, optional quote, >= 16 of ``[A-Za-z0-9_-/+=.]`` containing a digit
============================ ==============================================================

What may come before a match. A distinctive fixed prefix is found wherever it occurs, glued to
a word or not (``tok_ghp_...``, ``xAKIA...``, ``1glpat-...``): ``gh[pousr]_``, ``github_pat_``
(glued: its value holds a digit), ``AKIA``/``ASIA`` whole, the GitLab prefixes, ``npm_`` (glued:
its value holds a digit or looks generated, see :func:`_generated`), ``xox?-``, ``xapp-``, Slack
webhook URLs, ``whsec_``, ``AIza``, ``GOCSPX-``, ``1//0``, ``pypi-AgEIcHlwaS5vcmc``, a JWT's ``eyJ``
(``-eyJ...``, ``xeyJ...``), ``sk-ant-``/``sk-proj-`` (glued: a value that looks generated, as
``task-ant-colony-...`` is a word), the Shopify, Databricks, DigitalOcean, age, Atlassian and Groq
prefixes, and -- glued: a value that looks generated (:func:`_generated`: upper and lower case, a
digit, and an upper-case letter followed by another or by a digit, which camelCase words lack) --
``sk_``/``rk_`` (``framework_test_integrationSuiteRunner1`` is a name), ``hf_``, ``ya29.`` and
``SG.`` (both parts). A prefix that also ends ordinary words or identifiers must start a word: bare
``sk-`` (``task-``), ``hvs.``, ``r8_``, ``xai-``, the other AWS prefixes (``ACCA`` is hex), ``SK``
and a split AWS key id.

What may come after a match: anything, except that an AWS key id must not continue into a longer run
of upper case and digits (base64 text holds such runs), and the other AWS prefixes and a split key
must end a word.

Limits (documented in ``docs/security.md``): a secret paraphrased in prose
("my password is hunter2"), spelled out with spaces, encoded (base64 of a key),
or written with look-alike letters from another script is not found.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from meta_memory.agent_memory.fields import metadata_key_path
from meta_memory.textfold import fold

__all__ = [
    "SECRET_CLASSES",
    "forget_keys",
    "normalise_for_scan",
    "scan",
    "scan_record",
    "scan_text",
    "scan_values",
    "json_strings",
    "secret_field",
    "secret_rule",
]

_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_WORD_DASH = _WORD | {"-"}
_ALNUM = _WORD - {"_"}
_DIGIT = re.compile(r"[0-9]")
_UPPER = re.compile(r"[A-Z]")
_LOWER = re.compile(r"[a-z]")
_LETTER = re.compile(r"[A-Za-z]")


def _has_digit_letter(value: str) -> bool:
    return bool(_DIGIT.search(value) and _LETTER.search(value))


def _mixed(value: str) -> bool:
    return bool(_DIGIT.search(value) and _UPPER.search(value) and _LOWER.search(value))


#: An upper-case letter followed by another or by a digit: common in generated base62, absent from
#: camelCase words (``integrationSuiteRunner1``).
_UPPER_THEN = re.compile(r"[A-Z][A-Z0-9]")


def _generated(value: str, *, digit: bool = True) -> bool:
    """Whether ``value`` looks generated rather than like a camelCase identifier: upper and lower case
    (and a digit, when ``digit``), with an upper-case letter followed by another or by a digit."""
    return bool(_UPPER.search(value) and _LOWER.search(value) and _UPPER_THEN.search(value)
                and (not digit or _DIGIT.search(value)))


# Values that stand for a secret without being one: masked, empty-ish, or a reference to where it lives
# (``${DB_PASSWORD}``, ``%PASSWORD%``, ``<password>``, ``{{ vault.pw }}``) -- the refusal text asks for
# exactly such references.
_PLACEHOLDER_START = tuple("$%<{[(")
_PLACEHOLDER_WORDS = frozenset(
    {"none", "null", "nil", "true", "false", "empty", "redacted", "hidden", "masked", "required", "optional",
     "unset", "undefined", "string", "str", "secret", "password", "xxx", "todo", "n/a", "na", "tbd"}
)
_MASK_CHARS = frozenset("*xX•·.#-_?")
#: A value naming what it stands for: ``some_password``, ``your-password``, ``example_secret``.
_PLACEHOLDER_NAME = re.compile(r"(?:some|your|my|the|a|an|example|sample|dummy|fake)[_-]?(?:password|passwd|pass|pwd|secret)")
#: What a documented URL writes for its password (``redis://:PASS@host``, ``amqp://user:secret@mq``).
_URL_PLACEHOLDERS = _PLACEHOLDER_WORDS | {"pass", "passwd", "pwd", "pw"}


#: The key names of a password: always a credential key, joined to any prefix (``PGPASSWORD``,
#: ``DB_PASSWORD``, ``mysql_pwd``).
_PASSWORD_KEYS = ("passphrase", "password", "passwd", "pwd")
#: ``pass`` alone is also an English word: it names a password only as a whole word or joined to a
#: prefix by ``_``, ``-`` or ``.`` (``DB_PASS``, ``redis.pass``), never glued to letters (``bypass``,
#: ``compass``), and a bare ``pass`` (no prefix) needs a value holding a letter (``pass: 12/15``,
#: ``pass=100`` are test tallies).
_WEAK_PASSWORD_KEYS = ("pass",)


def _is_path_reference(value: str) -> bool:
    """A file path standing for where a secret lives (``/run/secrets/db``, ``~/.pgpass``) or a working
    directory (``PWD=/home/me/app``): absolute or home-relative, with a second ``/``."""
    return value.startswith(("/", "~/")) and "/" in value[2:]


def _password_value_counts(value: str, separator: str, quoted: bool, *, bare_word: bool = False) -> bool:
    """Whether the value of a ``password``-like assignment is a credential.

    Masked values (``****``), placeholder words (``null``, ``redacted``), references
    (``$VAR``, ``${VAR}``, ``<pw>``, ``{{ x }}``, ``%VAR%``) and file paths
    (``/run/secrets/db``) never count. A quoted value or one after ``=`` counts from 3
    characters; after a bare ``:`` (prose-like ``password: ...``) the value must also hold a
    digit or a symbol, so ``password: hunter2`` counts and ``Password: strong and unique``
    does not. ``bare_word`` (an unprefixed ``pass``): the value must also hold a letter.
    """
    value = value.strip().rstrip(".,;:!?)]}'\"")
    if len(value) < 3 or value.startswith(_PLACEHOLDER_START) or _is_path_reference(value):
        return False
    if value.lower() in _PLACEHOLDER_WORDS or set(value) <= _MASK_CHARS or _PLACEHOLDER_NAME.fullmatch(value.lower()):
        return False
    if bare_word and not _LETTER.search(value):
        return False
    if quoted or separator == "=":
        return True
    return not value.isalpha()


@dataclass(frozen=True, slots=True)
class _Rule:
    """One secret class: literal ``triggers`` (any present -> run ``pattern``), matched on the text or,
    when ``lower``, on its lower-cased copy; ``verify`` decides each match (``None``: every match counts)."""

    name: str
    triggers: tuple[str, ...]
    pattern: re.Pattern[str]
    verify: Callable[[re.Match[str]], bool] | None = None
    lower: bool = False
    #: ``pattern`` starts with one of ``triggers``: try it only where a trigger occurs (common words).
    anchored: bool = False


def _after_boundary(match: re.Match[str], word: frozenset[str] = _WORD) -> bool:
    """The match does not continue a word: start of text, or a character outside ``word`` before it."""
    start = match.start()
    return start == 0 or match.string[start - 1] not in word


def _key_prefix_ok(match: re.Match[str]) -> bool:
    """A key name may carry a prefix joined by ``_``/``.``/``-`` (``OPENAI_API_KEY``), never glued letters
    (``myapi_key``): the character before the key name is not a letter or digit."""
    return _after_boundary(match, _ALNUM)


_CREDENTIAL_KEYS = (
    "api_key", "api-key", "apikey", "secret_key", "secret-key", "client_secret", "access_token", "access-token",
    "auth_token", "auth-token", "aws_secret_access_key", "private_token", "secret_access_key", "api_token",
    "api-token", "refresh_token", "refresh-token", "session_token", "bearer_token", "accountkey", "account_key",
    "signing_key", "secret", "authtoken",
)
_KEY_NAMES = "|".join(re.escape(k) for k in sorted(_CREDENTIAL_KEYS, key=len, reverse=True))
_KEY_NAME_AT_END = re.compile(r"(?<![a-z0-9])(?:" + _KEY_NAMES + r")$")
_LONGEST_KEY = max(len(k) for k in _CREDENTIAL_KEYS)


def _credential_key_before(match: re.Match[str]) -> bool:
    """The text ending where the matched ``key``/``secret``/``token`` ends is a whole credential key
    name (``api_key``, ``client_secret``, ...) that does not continue a word (see :func:`_key_prefix_ok`)."""
    text = match.string
    end = match.start() + next(len(w) for w in ("secret", "token", "key") if text.startswith(w, match.start()))
    return _KEY_NAME_AT_END.search(text, max(0, end - _LONGEST_KEY), end) is not None


#: A run of at least 16 letters and digits holding both: what a generated credential looks like, and what
#: an identifier made of words (``tenant_id_and_date_2024``) or a number is not.
_RUN = re.compile(r"[a-z0-9]{16,}")


def _random_run(value: str) -> bool:
    """Whether ``value`` (lower-cased) holds a run of 16+ letters and digits mixing both (linear time)."""
    return any(not r.isalpha() and not r.isdigit() for r in _RUN.findall(value))  # runs are [a-z0-9]


def _any_key_name_before(match: re.Match[str]) -> bool:
    """Any other name of a token or key: a whole ``token`` word, or a name joined to ``token``/``key`` by
    ``_``, ``-`` or ``.`` (``GITHUB_TOKEN``, ``HF_TOKEN``, ``ENCRYPTION_KEY``, ``stripe.key``)."""
    text, start = match.string, match.start()
    if text.startswith("secret", start):
        return False  # every ``secret`` name is already a listed key name
    joined = start >= 2 and text[start - 1] in "_-." and text[start - 2] in _ALNUM
    if text.startswith("token", start):
        return joined or _after_boundary(match, _ALNUM)
    return joined


def _credential_assignment(match: re.Match[str]) -> bool:
    """A listed credential key name with a value holding a digit, or any other token/key name (see
    :func:`_any_key_name_before`) with a value that looks generated (:func:`_random_run`)."""
    if _credential_key_before(match):
        return bool(_DIGIT.search(match["v"]))
    return _any_key_name_before(match) and _random_run(match["v"])

#: The ``.netrc`` words that may stand between ``machine <host>`` (or ``default``) and ``password``.
_NETRC_PAIRS = frozenset({"login", "account", "port"})


def _netrc_before(text: str, start: int) -> bool:
    """The words before ``start`` end a ``.netrc`` entry's head: ``machine <host> login <user>`` (then
    ``account``/``port`` pairs in any order) or ``default login <user>`` -- a ``login`` is required, so
    prose such as "the machine learning password manager" is not one."""
    if text.rfind("login", max(0, start - 256), start) < 0:
        return False  # no ``login`` close before: not an entry (one bounded search, no split)
    words = text[max(0, start - 256):start].split()[-10:]
    for i in range(len(words) - 1, -1, -1):
        head = words[i]
        rest = words[i + 2:] if head == "machine" else words[i + 1:] if head == "default" else None
        if rest is None:
            continue
        pairs = rest[0::2]
        if len(rest) % 2 == 0 and pairs and "login" in pairs and all(w in _NETRC_PAIRS for w in pairs):
            return True
    return False


def _password_assignment(match: re.Match[str]) -> bool:
    """A password key name (see :data:`_PASSWORD_KEYS`, :data:`_WEAK_PASSWORD_KEYS`) assigned a value
    that counts (:func:`_password_value_counts`): after ``=``, ``:``, ``:=``, ``=>`` or a tab, inside an
    XML element (``<db_password>...</db_password>``), or after spaces only in shapes that are no prose:
    a quoted value without white space (SQL ``WITH PASSWORD 'x'``, ``password "x"``), a ``.netrc``
    entry (``machine h login u password x``) and a command-line option (``--password x``: at least 8
    characters mixing letters and digits)."""
    text, start, key = match.string, match.start(), match["k"]
    bare_word = False
    if key in _WEAK_PASSWORD_KEYS:
        if not _after_boundary(match, _ALNUM):
            return False  # ``bypass``, ``compass``
        bare_word = not (start >= 2 and text[start - 1] in "_-." and text[start - 2] in _ALNUM)
    if match["sep"] is not None:
        quoted = match["v"] is None
        if not quoted and (match["sep"] in (":=", "=>") or match["sub"] is not None):
            if (key == "password" and match["sub"] is None and match.start("sep") > match.end("k")
                    and _after_boundary(match, _WORD_DASH) and _netrc_before(text, start)):
                # ``machine h login u password =>x``: a ``.netrc`` entry's value is the word after ``password``
                return _password_value_counts(text[match.start("sep"):].split(None, 1)[0], "=", False)
            return False  # ``x := y.password``, ``opts["password"] = url.password``: code, not a literal
        separator = "=" if match["sep"] in ("=", ":=", "=>") else ":"
        return _password_value_counts(match["dq"] or match["dl"] or match["sq"] or match["sl"] or match["v"] or "",
                                      separator, quoted, bare_word=bare_word)
    if match["tv"] is not None:  # ``PASSWORD<TAB>value``: read as ``password: value``
        return _password_value_counts(match["tv"], ":", False, bare_word=bare_word)
    if match["xv"] is not None:  # ``<password>value</password>``: the key opens an element
        at = start
        while at > 0 and (text[at - 1] in _WORD_DASH or text[at - 1] in ".:"):
            at -= 1
        return at > 0 and text[at - 1] == "<" and _password_value_counts(match["xv"], "=", True)
    if bare_word or key == "pass" or key == "pwd":
        return False  # ``pass 'utf-8' to ...`` is prose; ``pwd`` is a command
    spaced = match["sdq"] or match["ssq"]
    if spaced is not None:
        return len(spaced) >= 4 and _password_value_counts(spaced, "=", True)
    value = match["sv"] or ""
    if key == "password" and _after_boundary(match, _WORD_DASH) and _netrc_before(text, start):
        return _password_value_counts(value, "=", False)
    if start >= 2 and text[start - 2:start] == "--" and (start == 2 or text[start - 3] in " \t"):
        return len(value) >= 8 and _has_digit_letter(value) and _password_value_counts(value, "=", False)
    return False


#: How far before a command-line option its command may start (characters, on the same line).
_COMMAND_REACH = 200


def _command_before(match: re.Match[str], command: str) -> int:
    """Where ``command`` starts a word on the option's line, at most :data:`_COMMAND_REACH` characters
    before the option (itself after a space or a tab), the nearest one; -1 when it does not. One bounded
    search per option, so a text of repeated commands and options stays linear."""
    text, start = match.string, match.start()
    if start == 0 or text[start - 1] not in " \t":
        return -1
    at = text.rfind(command, max(0, start - _COMMAND_REACH), start)
    if at < 0 or (at > 0 and text[at - 1] in _ALNUM) or "\n" in text[at:start]:
        return -1
    return at


def _mysql_password(match: re.Match[str]) -> bool:
    """``mysql ... -p<password>``: a value that counts; one of letters only only after a user option."""
    at = _command_before(match, "mysql")
    if at < 0:
        return False
    quoted = match["v"] is None
    value = match["dq"] or match["sq"] or match["v"] or ""
    if not _password_value_counts(value, "=", quoted):
        return False
    return quoted or not value.isalpha() or re.search(r"[ \t](?:-u|--user)", match.string[at:match.start()]) is not None


def _option_password(match: re.Match[str]) -> bool:
    """``sshpass -p <password>``: a value that counts."""
    quoted = match["v"] is None
    return (_command_before(match, "sshpass") >= 0
            and _password_value_counts(match["dq"] or match["sq"] or match["v"] or "", "=", quoted))


def _user_password(match: re.Match[str]) -> bool:
    """``curl -u user:password``: the part after the first ``:`` counts (not ``$TOKEN``, not masked)."""
    quoted = match["v"] is None
    value = match["dq"] or match["sq"] or match["v"] or ""
    return _command_before(match, "curl") >= 0 and _password_value_counts(value.partition(":")[2], "=", quoted)


def _identified_by(match: re.Match[str]) -> bool:
    """SQL ``IDENTIFIED BY 'x'`` (a quoted value that counts, not letters only) or ``IDENTIFIED BY x`` (unquoted: at
    least 6 characters mixing letters and digits)."""
    if match["v"] is None:
        value = match["dq"] or match["sq"] or ""
        return not value.isalpha() and _password_value_counts(value, "=", True)  # not "identified by 'name'"
    value = match["v"]
    return len(value) >= 6 and _has_digit_letter(value) and _password_value_counts(value, "=", False)


def _docker_auth(match: re.Match[str]) -> bool:
    """A Docker ``config.json`` ``"auth"``: base64 of ``user:password`` whose password counts."""
    try:
        decoded = base64.b64decode(match["v"], validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return False
    user, colon, password = decoded.partition(":")
    return bool(colon) and decoded.isprintable() and _password_value_counts(password, "=", True)


#: A JWK's private exponent or key (``"d": "..."``).
_JWK_PRIVATE = '"kty"'


def _jwk_private(match: re.Match[str]) -> bool:
    """A ``"d"`` member in the same JSON object as a ``"kty"`` member: a JWK's private key."""
    text = match.string
    left = text.rfind("{", max(0, match.start() - 8192), match.start())
    right = text.find("}", match.end(), match.end() + 8192)
    if left < 0:
        return False
    inside = text[left:right if right >= 0 else match.end() + 8192]
    return _JWK_PRIVATE in inside


def _aws_key_id(match: re.Match[str]) -> bool:
    """``AKIA``/``ASIA`` + 16 whole: found glued to anything before it and to any word after it that does
    not continue its run of upper case and digits. The other prefixes, and a key split by separators,
    must start a word and end one."""
    if match["whole"] is not None and match["p"] in ("AKIA", "ASIA"):
        return True
    return _after_boundary(match, _WORD) and (match["whole"] is None or match["end"] is not None)


#: The kind and version that open an Anthropic key's value (``api03-``, ``admin01-``).
_ANTHROPIC_KIND = re.compile(r"(?:api|admin|oat|ort)[0-9]{2}-")


def _anthropic_key(match: re.Match[str]) -> bool:
    """``sk-ant-`` starting a word, or glued to one (``task-ant-colony-...`` is a word) with a value that
    opens with a key kind (``api03-``) or looks generated (upper case, lower case and digits mixed)."""
    value = match["v"]
    return _after_boundary(match, _WORD_DASH) or _ANTHROPIC_KIND.match(value) is not None or _mixed(value)


#: A Discord bot token opens with the base64 of its bot's id, ``MT`` for an id starting with ``1`` (every
#: id since 2022); an older id's token is looked for in a text naming ``Discord`` or ``discord``.
_DISCORD_TRIGGERS = ("MT", "iscord")

_RULES: tuple[_Rule, ...] = (
    _Rule("aws-access-key-id", ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
          # whole, or split by white space, dashes, dots or underscores between its characters
          # ``AKIA``/``ASIA`` + 16 whole is a key id whatever word follows it (``AKIA..._prod``,
          # ``AKIA...prod``), not the start of a longer upper-case run (base64); the other prefixes and
          # a split key must not run on into a word
          re.compile(r"(?P<p>AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])"
                     r"(?:(?P<whole>[A-Z0-9]{16})(?![A-Z0-9])(?P<end>(?![a-z_]))?|(?:[\s._-]{0,3}[A-Z0-9]){16}(?![A-Za-z0-9_]))"),
          # ``AKIA``/``ASIA`` whole may follow anything; the others (``ACCA`` is hex) and a split key start a word
          _aws_key_id),
    _Rule("github-token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
          re.compile(r"gh[pousr]_[A-Za-z0-9]{36}|github_pat_(?P<pat>[A-Za-z0-9_]{22})"),
          # glued to a word: ``github_pat_`` continues snake_case names, so its value must hold a digit
          lambda m: m["pat"] is None or _after_boundary(m, _WORD) or bool(_DIGIT.search(m["pat"]))),
    _Rule("private-key", ("PRIVATE KEY-----", "PRIVATE KEY BLOCK-----", "PRIVATE KEY ----", "PuTTY-User-Key-File-",
                          "Private-Lines", "MII", "MIG", "MHcCAQEE", "MC4CAQAw", "b3BlbnNzaC1rZXktdjE"),
          re.compile(
              # PEM (RSA, EC, DSA, OpenSSH, PKCS#8, encrypted), OpenPGP and SSH2 (``---- BEGIN ...``) armour
              r"-----BEGIN[^\n]{0,40}?PRIVATE KEY(?: BLOCK)?-----|---- BEGIN SSH2 (?:ENCRYPTED )?PRIVATE KEY ----"
              # PuTTY ``.ppk`` files: the header naming the key type, or the private lines' count and body
              r"|PuTTY-User-Key-File-[1-3]:[ \t]*(?:ssh|ecdsa)-[a-z0-9-]+"
              r"|Private-Lines:[ \t]*[0-9]+[ \t]*\r?\n[ \t]*[A-Za-z0-9+/]{16}"
              r"|(?:MII[A-Za-z0-9+/]{3}IBA(?:AK|DAN)|MIG[A-Za-z0-9+/]{2}gE(?:AMB|BBD)|MHcCAQEE|MC4CAQAwBQYDK2Vw"
              r"|MII[A-Za-z0-9+/]{3}BfBgkqhkiG9w0BBQ0|b3BlbnNzaC1rZXktdjE)[A-Za-z0-9+/=\s]{40}"
          )),
    # a JSON Web Key's private member: ``"d"`` in the same object as ``"kty"``
    _Rule("private-key", (_JWK_PRIVATE,), re.compile(r'"d"[ \t]*:[ \t]*"[A-Za-z0-9_-]{20,}+"'), _jwk_private),
    # ``sk-ant-`` anywhere; glued to a word (``task-ant-colony-...``) the value must look generated
    _Rule("anthropic-api-key", ("sk-ant-",), re.compile(r"sk-ant-(?P<v>[A-Za-z0-9_-]{24,})"),
          _anthropic_key),
    # ``sk-proj-`` anywhere (glued: a generated value); bare ``sk-`` and the other kinds start a word
    _Rule("openai-api-key", ("sk-",),
          re.compile(r"sk-(?:(?P<kind>proj|svcacct|admin)-)?(?P<v>[A-Za-z0-9_-]{20,})"),
          lambda m: (_after_boundary(m, _WORD_DASH) or (m["kind"] == "proj" and _mixed(m["v"]))) and (
              _has_digit_letter(m["v"]) if m["kind"] else (len(m["v"]) >= 32 and _mixed(m["v"])))),
    # ``xoxe-1-...`` refresh tokens; a rotating ``xoxe.xoxp-1-...`` holds ``xoxp-``
    _Rule("slack-token", ("xox", "xapp-", "hooks.slack.com"),
          re.compile(r"xox[abposr]-(?P<v>[A-Za-z0-9-]{10,})|xapp-[0-9]-[A-Za-z0-9-]{10,}|xoxe-[0-9]+-[A-Za-z0-9-]{20,}"
                     r"|hooks\.slack\.com/services/T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]{8,}"),
          lambda m: m["v"] is None or bool(_DIGIT.search(m["v"]))),
    _Rule("stripe-key", ("sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"),
          re.compile(r"(?P<sk>(?:sk|rk)_(?:live|test)_(?P<v>[A-Za-z0-9]{16,}))|whsec_[A-Za-z0-9]{24,}"),
          # ``sk_``/``rk_`` end words (``framework_test_...``): glued to one, the value looks generated
          lambda m: m["sk"] is None or _after_boundary(m, _WORD) or _generated(m["v"])),
    _Rule("google-api-key", ("AIza",), re.compile(r"AIza[A-Za-z0-9_-]{35}")),
    # client secrets, ``ya29.`` access tokens and ``1//0`` refresh tokens (a generated value)
    _Rule("google-oauth-secret", ("GOCSPX-", "ya29.", "1//0"),
          re.compile(r"GOCSPX-[A-Za-z0-9_-]{20,}|(?P<ya>ya29\.[A-Za-z0-9_-]{20,})|1//0(?P<rt>[A-Za-z0-9_-]{40,})"),
          lambda m: (m["ya"] is None or _after_boundary(m, _WORD) or _generated(m["ya"][5:]))
          and (m["rt"] is None or _mixed(m["rt"]))),
    # personal/project/group access, runner, deploy, pipeline trigger, SCIM OAuth and CI/CD job tokens;
    # runner registration tokens
    # OAuth application secrets, feed, incoming mail and agent tokens too
    _Rule("gitlab-token", ("glpat-", "glrt-", "gldt-", "glptt-", "glsoat-", "glcbt-", "gloas-", "glft-", "glimt-",
                           "glagent-", "GR1348941"),
          re.compile(r"(?:glpat|glrt|gldt|glptt|glsoat|glcbt|gloas|glft|glimt|glagent)-[A-Za-z0-9_-]{20,}"
                     r"|GR1348941[A-Za-z0-9_-]{20,}")),
    _Rule("npm-token", ("npm_",), re.compile(r"npm_(?P<v>[A-Za-z0-9]{36})"),
          # glued to a word (``run_npm_...`` is a snake_case name): the value holds a digit or mixes cases
          lambda m: _after_boundary(m, _WORD) or bool(_DIGIT.search(m["v"]))
          or _generated(m["v"], digit=False)),
    _Rule("pypi-token", ("pypi-AgEIcHlwaS5vcmc",), re.compile(r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{16,}")),
    _Rule("huggingface-token", ("hf_",), re.compile(r"hf_(?P<v>[A-Za-z0-9]{30,})"),
          # glued to a word too (``tok_hf_...``): the value looks generated
          lambda m: _mixed(m["v"]) and (_after_boundary(m, _WORD) or _generated(m["v"]))),
    _Rule("sendgrid-api-key", ("SG.",), re.compile(r"SG\.(?P<a>[A-Za-z0-9_-]{22})\.(?P<b>[A-Za-z0-9_-]{43})"),
          # glued to a word (``MSG.``): both parts mix letters and digits
          lambda m: _after_boundary(m, _WORD) or (_generated(m["a"]) and _generated(m["b"]))),
    _Rule("vault-token", ("hv",), re.compile(r"hv[sbr]\.(?P<v>[A-Za-z0-9_-]{24,})"),
          lambda m: _after_boundary(m, _ALNUM) and _has_digit_letter(m["v"])),
    _Rule("shopify-token", ("shp",),
          re.compile(r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}")),
    _Rule("databricks-token", ("dapi",), re.compile(r"dapi(?P<v>[a-f0-9]{32})(?![a-f0-9])"),
          lambda m: _has_digit_letter(m["v"])),
    _Rule("digitalocean-token", ("_v1_",), re.compile(r"do[opr]_v1_[a-f0-9]{64}")),
    # an API key SID: ``SK`` + 32 lower-case hex digits, a whole word
    _Rule("twilio-api-key", ("SK",), re.compile(r"SK(?P<v>[0-9a-f]{32})(?![A-Za-z0-9_])"),
          lambda m: _after_boundary(m, _WORD) and _has_digit_letter(m["v"])),
    # ``<bot id>:AA<33>``
    _Rule("telegram-bot-token", (":AA",), re.compile(r"(?<![0-9])[0-9]{8,10}:AA(?P<v>[A-Za-z0-9_-]{33})(?![A-Za-z0-9_-])"),
          lambda m: bool(_UPPER.search(m["v"]) and _LOWER.search(m["v"]))),
    # ``<base64 of the bot's numeric id>.<6>.<27-38>``: the id's base64 is made of digits' quartets only
    _Rule("discord-bot-token", _DISCORD_TRIGGERS,
          re.compile(r"(?:[MNO][DTjz][AEIMQUYcgk][w-z0-5]){5,6}(?:[MNO][DTjz][AEIMQUYcgk]|[MNO][AQgw])?"
                     r"\.[A-Za-z0-9_-]{6}\.(?P<v>[A-Za-z0-9_-]{27,38})(?![A-Za-z0-9_-])"),
          lambda m: _after_boundary(m, _WORD_DASH) and _has_digit_letter(m["v"])),
    _Rule("age-secret-key", ("AGE-SECRET-KEY-1",),
          re.compile(r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}")),
    _Rule("atlassian-api-token", ("TT3",), re.compile(r"AT[AC]TT3[A-Za-z0-9_=-]{60,}")),
    _Rule("groq-api-key", ("gsk",), re.compile(r"gsk_(?P<v>[A-Za-z0-9]{48,})"), lambda m: _mixed(m["v"])),
    _Rule("replicate-api-token", ("r8",), re.compile(r"r8_(?P<v>[A-Za-z0-9]{37})(?![A-Za-z0-9])"),
          lambda m: _after_boundary(m, _ALNUM) and _mixed(m["v"])),
    _Rule("xai-api-key", ("xai-",), re.compile(r"xai-(?P<v>[A-Za-z0-9]{70,})"),
          lambda m: _after_boundary(m, _ALNUM) and _mixed(m["v"])),
    # a Docker ``config.json`` registry login: base64 of ``user:password``
    _Rule("docker-registry-auth", ('"auth"',),
          re.compile(r'"auth"[ \t]*:[ \t]*"(?P<v>[A-Za-z0-9+/]{8,}={0,2})"'), _docker_auth, anchored=True),
    # Anywhere (``-eyJ...``, ``xeyJ...``). The header runs to the next ``eyJ`` at most, and every run is
    # possessive: each start reads only up to the next one, so ``eyJeyJeyJ...`` stays linear.
    _Rule("jwt", ("eyJ",),
          re.compile(r"eyJ(?:(?!eyJ)[A-Za-z0-9_-]){8,}+\.eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]*+")),
    _Rule("bearer-token", ("bearer", "authorization"),
          re.compile(r"bearer[ \t]+(?P<v>[a-z0-9._~+/-]{16,}=*)"
                     r"|authorization[ \t]*[:=][ \t]*(?:basic|token|digest)[ \t]+(?P<b>[a-z0-9._~+/-]{8,}=*)"),
          lambda m: _after_boundary(m, _WORD) and (m["b"] is not None or _has_digit_letter(m["v"])), lower=True),
    _Rule("url-credentials", ("://",),
          re.compile(r"[A-Za-z][A-Za-z0-9+.-]{1,15}://[^\s/:@]{0,64}:(?P<v>[^\s/@]{3,128})@[A-Za-z0-9\[]"),
          lambda m: _after_boundary(m, _WORD) and not m["v"].startswith(_PLACEHOLDER_START)
          and not set(m["v"]) <= _MASK_CHARS and m["v"].lower() not in _URL_PLACEHOLDERS),
    _Rule("password-assignment", ("pass", "pwd"),
          re.compile(r"(?P<k>" + "|".join(_PASSWORD_KEYS + _WEAK_PASSWORD_KEYS) + r")(?:(?P<kq>[\"'])(?P<sub>\])?)?"
                     # a quoted value may open a list (``"password": ["..."]``); it is closed, or longer
                     # than 256 characters (its first 256 are read)
                     r"(?:[ \t]*(?P<sep>:=|=>|[:=])[ \t]*(?:\[[ \t]*(?=[\"']))?"
                     r"(?:\"(?:(?P<dq>[^\"\n]{1,256})\"|(?P<dl>[^\"\n]{256}))"
                     r"|'(?:(?P<sq>[^'\n]{1,256})'|(?P<sl>[^'\n]{256}))"
                     r"|(?P<v>[^\s\"',;]{1,256}))"
                     # a tab, an XML element's text, or spaces (see ``_password_assignment``)
                     r"|\t+(?P<tv>[^\s\"',;]{1,256})"
                     r"|>(?P<xv>[^<\n]{1,256})</"
                     r"|[ \t]+(?:\"(?P<sdq>[^\"\s]{1,256})\"|'(?P<ssq>[^'\s]{1,256})'|(?P<sv>[^\s\"',;]{1,256})))"),
          _password_assignment, lower=True, anchored=True),
    # SQL ``CREATE USER ... IDENTIFIED [WITH plugin] BY 'x'``
    _Rule("password-assignment", ("identified",),
          re.compile(r"identified(?:[ \t]+with[ \t]+[a-z0-9_]{1,64})?[ \t]+by[ \t]+"
                     r"(?:\"(?P<dq>[^\"\n]{1,256})\"|'(?P<sq>[^'\n]{1,256})'|(?P<v>[^\s\"';,]{1,256}))"),
          _identified_by, lower=True, anchored=True),
    # command lines: ``mysql -u root -pS3cret``, ``sshpass -p 'S3cret' ssh ...``, ``curl -u user:S3cret``:
    # the option is matched, then its command looked for before it on its line (see ``_command_before``)
    _Rule("password-assignment", ("mysql",),
          re.compile(r"-p(?:\"(?P<dq>[^\"\n]{1,128})\"|'(?P<sq>[^'\n]{1,128})'|(?P<v>[^\s\"']{1,128}))"),
          _mysql_password),
    _Rule("password-assignment", ("sshpass",),
          re.compile(r"-p[ \t]*(?:\"(?P<dq>[^\"\n]{1,128})\"|'(?P<sq>[^'\n]{1,128})'|(?P<v>[^\s\"']{1,128}))"),
          _option_password),
    _Rule("password-assignment", ("curl",),
          re.compile(r"(?:-[uU]|--user|--proxy-user)(?:[ \t]+|=)?"
                     r"(?:\"(?P<dq>[^\"\n:]{0,128}:[^\"\n]{1,128})\"|'(?P<sq>[^'\n:]{0,128}:[^'\n]{1,128})'"
                     r"|(?P<v>[^\s\"':]{0,128}:[^\s\"']{1,128}))"),
          _user_password),
    # Every credential key name ends in key, secret or token: match that tail (fast), then check the
    # whole key name and its prefix boundary just before it.
    _Rule("credential-assignment", ("key", "secret", "token"),
          # ``=`` only as trailing padding, so ``key=key=key=...`` cannot make every attempt scan the rest.
          re.compile(r"(?:key|secret|token)(?:[\"']\]?)?[ \t]*(?:=>|:=|[=:])[ \t]*(?:\[[ \t]*(?=[\"']))?[\"']?"
                     r"(?P<v>[a-z0-9_\-/+.]{16,512}+={0,2})"),
          _credential_assignment, lower=True, anchored=True),
)

#: Every class :func:`scan` can report, in check order.
SECRET_CLASSES: tuple[str, ...] = tuple(dict.fromkeys(rule.name for rule in _RULES))

def _lower_keeping_offsets(text: str) -> str:
    """``text.lower()`` when that keeps every offset (always for ASCII); otherwise only the characters
    whose lower case is one character are lowered (``İ`` lowers to two)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(low if len(low := c.lower()) == 1 else c for c in text)

#: How far either side of a seam between two fields the join is scanned (characters).
_SEAM_WINDOW = 1024
#: How far before the first seam a secret spanning three or more fields is looked for (characters).
_SPAN_HEAD = 256
#: Spans of up to this many parts after the first are each scanned to their own end (a key ending a
#: part is word-bounded there); a longer span is scanned in one window over what follows the seam.
_SPAN_PARTS = 8


def normalise_for_scan(text: str) -> str:
    """``text`` as the scanner reads it: NFKC, format characters removed, Unicode dashes as ``-``
    (:func:`meta_memory.textfold.fold`). Plain ASCII is returned unchanged. The stored text is never
    altered; this copy is only matched."""
    return fold(text)


def _anchored(rule: _Rule, haystack: str, before: int | None = None) -> Iterator[re.Match[str]]:
    """Matches of ``rule.pattern`` starting where one of its triggers occurs (before offset ``before``
    when given), in text order."""
    starts: set[int] = set()
    end = len(haystack) if before is None else before
    for trigger in rule.triggers:
        at = haystack.find(trigger, 0, end + len(trigger) - 1)
        while 0 <= at < end:
            starts.add(at)
            at = haystack.find(trigger, at + 1, end + len(trigger) - 1)
    for start in sorted(starts):
        match = rule.pattern.match(haystack, start)
        if match is not None:
            yield match


def _triggers(rules: Iterable[_Rule]) -> tuple[str, ...]:
    """Every literal trigger of ``rules``, none listed twice nor after a shorter one it starts with (the
    shorter one is found wherever the longer one is): a text holding none of them matches none of them."""
    kept: list[str] = []
    for trigger in sorted({t for rule in rules for t in rule.triggers}):
        if not any(trigger.startswith(k) for k in kept):
            kept.append(trigger)
    return tuple(kept)


#: The prefilter of :func:`_find`: the triggers of the rules matched on the text as written, and those
#: of the rules matched on its lower-cased copy. A substring test per trigger: cheaper than one
#: alternation of them all, which the regular expression engine tries at every position.
#: Searched first (see :func:`_has_trigger`): the commonest of them in text that holds one come first.
_LOWER_TRIGGERS = tuple(sorted(_triggers(rule for rule in _RULES if rule.lower),
                               key=lambda t: (t not in ("key", "pass", "token", "secret"), t)))
#: A trigger holding a lower-case trigger (``sshpass``, ``PRIVATE KEY-----``) need not be searched: the
#: lower-cased copy of a text holding it holds that one.
_CASED_TRIGGERS = tuple(t for t in _triggers(rule for rule in _RULES if not rule.lower)
                        if not any(low in t.lower() for low in _LOWER_TRIGGERS))


#: Characters a trigger may be gated behind, the ones rarest in prose first.
_GATE_CHARS = "_:-JQXZVKWYBFHUOPLNDCTEIRGMSA0123456789/.\"qjzxkvwyfbgpmhcuidlsnotrae"


def _gated(triggers: tuple[str, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``triggers`` grouped behind a character each of the group holds (the first of :data:`_GATE_CHARS`
    it holds; ``""`` for one holding none, always searched): a text without a group's character holds
    none of its triggers, and a one-character search is a fraction of a longer one's cost."""
    groups: dict[str, list[str]] = {}
    for trigger in triggers:
        groups.setdefault(next((c for c in _GATE_CHARS if c in trigger), ""), []).append(trigger)
    return tuple((gate, tuple(members)) for gate, members in groups.items())


_CASED_GATES = _gated(_CASED_TRIGGERS)


def _has_trigger(text: str, lowered: str | None = None) -> bool:
    """Whether any rule's trigger occurs in ``text`` (already folded); ``lowered`` is its lower-cased
    copy when the caller has one. No trigger: no rule can match. The few lower-cased triggers (``key``,
    ``pass``, ``token``: the commonest in text that holds any) are searched first."""
    if lowered is None:
        lowered = _lower_keeping_offsets(text)
    for trigger in _LOWER_TRIGGERS:
        if trigger in lowered:
            return True
    for gate, triggers in _CASED_GATES:
        if gate in text:  # always true for the ungated ("")
            for trigger in triggers:
                if trigger in text:
                    return True
    return False


#: Every rule's triggers, each with the rule's index, gated as :data:`_CASED_GATES` (the rules matched on
#: the text as written) and the triggers of the rules matched on the lower-cased copy.
_RULE_GATES = tuple(
    (gate, tuple((t, i) for i, rule in enumerate(_RULES) if not rule.lower for t in rule.triggers if t in members))
    for gate, members in _gated(tuple(t for rule in _RULES if not rule.lower for t in rule.triggers))
)
_LOWER_RULE_TRIGGERS = tuple((t, i) for i, rule in enumerate(_RULES) if rule.lower for t in rule.triggers)


def _present_rules(text: str, lowered: str) -> list[_Rule]:
    """The rules, in check order, one of whose triggers occurs in ``text`` (or, for a rule matched on
    the lower-cased copy, in ``lowered``): one pass over the gated triggers instead of one per rule."""
    present: set[int] = set()
    for gate, triggers in _RULE_GATES:
        if gate in text:  # always true for the ungated ("")
            for trigger, index in triggers:
                if index not in present and trigger in text:
                    present.add(index)
    for trigger, index in _LOWER_RULE_TRIGGERS:
        if index not in present and trigger in lowered:
            present.add(index)
    return [_RULES[i] for i in sorted(present)]


def _find(
    text: str, seam: int | None = None, *, prefilter: bool = True, candidates: list[_Rule] | None = None
) -> str | None:
    """The first class matching in ``text`` (already folded); with ``seam``, only matches that
    straddle that offset count (the parts either side were scanned on their own). ``prefilter``
    (off only to test that it changes no answer) stops early when no trigger occurs. ``candidates``:
    the rules present in a text that holds ``text`` (see :func:`_present_rules`); only those are
    tried, each where one of its triggers occurs in ``text``."""
    lowered = _lower_keeping_offsets(text)
    if candidates is not None:
        rules = [r for r in candidates if any(t in (lowered if r.lower else text) for t in r.triggers)]
    elif prefilter:
        rules = _present_rules(text, lowered)  # no rule's trigger occurs: no rule can match
    else:
        rules = [r for r in _RULES if any(t in (lowered if r.lower else text) for t in r.triggers)]
    for rule in rules:
        haystack = lowered if rule.lower else text
        # an anchored match starts at its trigger: one that must straddle ``seam`` starts before it
        for match in _anchored(rule, haystack, seam) if rule.anchored else rule.pattern.finditer(haystack):
            if seam is not None and not match.start() < seam < match.end():
                continue
            if rule.verify is None or rule.verify(match):
                return rule.name
    return None


def scan_text(text: str) -> str | None:
    """The first secret class found in ``text`` after :func:`normalise_for_scan`, or ``None``."""
    return _find(normalise_for_scan(text))


def _scan_parts(parts: list[str], alone: range | None = None, seams_before: int | None = None) -> str | None:
    """Each part alone (only those at the indices of ``alone`` when given: the others were scanned
    alone already), then every run of consecutive parts joined (a secret split across parts).

    A secret split across parts ``a`` to ``b`` starts in part ``a`` and ends in part ``b``: it is looked
    for in the join of part ``a``'s last :data:`_SEAM_WINDOW` characters (:data:`_SPAN_HEAD` when parts
    lie between), the parts between (at most :data:`_SEAM_WINDOW` characters in all) and part ``b``'s
    first :data:`_SEAM_WINDOW`, and must cross the first seam; for ``b`` more than :data:`_SPAN_PARTS`
    parts on, one window over the :data:`_SEAM_WINDOW` characters after the seam. The window ends where part ``b`` ends, so a key that ends a part is word-bounded there (the
    next part's first letter does not glue onto it).

    ``seams_before``: only the seams after the first ``seams_before`` parts are looked across from (the
    windows starting later were scanned already, on the same text).

    First the join of all parts is searched once for a trigger: every trigger of a part, or crossing a
    seam, is in it, so a join without one (the common case) holds no secret anywhere."""
    normalised = [normalise_for_scan(p) for p in parts]
    if not _has_trigger("".join(normalised)):
        return None
    for index in alone if alone is not None else range(len(normalised)):
        if normalised[index]:
            found = _find(normalised[index])
            if found is not None:
                return found
    kept = [p for p in normalised if p]
    starts = len(kept) - 1
    if seams_before is not None:
        starts = min(starts, sum(1 for p in normalised[:seams_before] if p))
    for a in range(starts):
        # every window across parts ``a`` to ``b`` below is a substring of ``reach`` (what follows the seam
        # is at most the window's characters of the parts between and as many of part ``b``): a rule none
        # of whose triggers occurs in ``reach`` matches in none of them (a trigger is ASCII, and
        # lower-casing a character that gives ASCII does not depend on its neighbours)
        reach = kept[a][-_SEAM_WINDOW:] + "".join(kept[a + 1 : a + 1 + _SPAN_PARTS])[: 2 * _SEAM_WINDOW]
        candidates = _present_rules(reach, _lower_keeping_offsets(reach))
        middle = ""
        for b in range(a + 1, min(len(kept), a + 1 + _SPAN_PARTS)):
            # across two parts the whole window; across more, the secret holds every part between, so it
            # starts close to the first seam
            head = kept[a][-(_SEAM_WINDOW if b == a + 1 else _SPAN_HEAD):]
            found = (_find(head + middle + kept[b][:_SEAM_WINDOW], seam=len(head), candidates=candidates)
                     if candidates else None)
            if found is not None:
                return found
            middle += kept[b]
            if len(middle) > _SEAM_WINDOW:
                break
        else:
            if a + 1 + _SPAN_PARTS < len(kept):  # longer spans: one window over what follows the seam
                head = kept[a][-_SEAM_WINDOW:]
                found = _find(head + "".join(kept[a + 1 :])[:_SEAM_WINDOW], seam=len(head))
                if found is not None:
                    return found
    return None


#: The longest trigger (characters): a trigger that crosses into a text ends in it and starts at most
#: this many characters minus one before it.
_LONGEST_TRIGGER = max(len(t) for t in (*_CASED_TRIGGERS, *_LOWER_TRIGGERS))


def _tags_pass_has_trigger(normalised: list[str], upper: list[str]) -> bool:
    """Whether the join of the upper-cased tags pass (``upper``: title, description, body, the tags
    upper-cased, the other strings) holds a trigger, given that the first pass's join (``normalised``,
    its parts as read) holds none. The two joins share their first three parts, which hold no trigger,
    so a trigger of the second lies in what follows them, or crosses into it from their last
    :data:`_LONGEST_TRIGGER` - 1 characters: only that text is searched (the answer is the same)."""
    head = "".join(normalised[:3])[-(_LONGEST_TRIGGER - 1):]
    return _has_trigger(head + "".join(normalise_for_scan(p) for p in upper[3:]))


#: How many clean records :func:`scan` remembers (by digest) so the same content scanned twice in a
#: row -- a store's check before its duplicate lookup, then the validator's -- is scanned once.
CLEAN_MEMO_SIZE = 4096
_clean_memo: dict[bytes, None] = {}


def _record_digest(parts: list[str]) -> bytes:
    """A 128-bit BLAKE2b digest of ``parts``, each prefixed by its length in characters and ``:`` (no two
    lists of parts share the text hashed), encoded once. The memo keeps digests only, never the text."""
    framed = "".join([f"{len(part)}:{part}" for part in parts])
    return hashlib.blake2b(framed.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def scan(
    title: str, description: str, body: str, tags: Iterable[str] = (), more: Iterable[str] = ()
) -> str | None:
    """Scan a record's fields (title, description, body, each tag, then each of ``more``: every other
    string the record stores, see :func:`scan_record`), then the fields joined.

    Returns the first class found (:data:`SECRET_CLASSES`) or ``None``. Tags are
    stored ASCII-lowercased, which would hide a case-sensitive key id (``AKIA...``),
    so each tag is also scanned upper-cased (alone, and in the join).

    The scan is a pure function of the fields: the digests of the last :data:`CLEAN_MEMO_SIZE`
    clean records are remembered and answer ``None`` again without rescanning (a record that
    holds a secret is scanned every time).
    """
    tags, more = list(tags), list(more)
    key = _record_digest([title, description, body, str(len(tags)), *tags, *more])
    if key in _clean_memo:
        return None
    parts = [title, description, body, *tags, *more]
    normalised = [normalise_for_scan(p) for p in parts]
    upper = [title, description, body, *(t.upper() for t in tags), *more]
    if _has_trigger("".join(normalised)):
        found = _scan_parts(parts)
        if found is None and tags:
            # a window starting after the tags reads the same text in both passes: found nothing above
            found = _scan_parts(upper, alone=range(3, 3 + len(tags)), seams_before=3 + len(tags))
    elif tags and _tags_pass_has_trigger(normalised, upper):
        found = _scan_parts(upper, alone=range(3, 3 + len(tags)), seams_before=3 + len(tags))
    else:
        found = None  # neither pass's join holds a trigger: no rule can match anywhere
    if found is None:
        _clean_memo[key] = None
        if len(_clean_memo) > CLEAN_MEMO_SIZE:
            with contextlib.suppress(StopIteration, KeyError, RuntimeError):  # another thread evicted it first
                del _clean_memo[next(iter(_clean_memo))]
    return found


class _ScannedRecord(Protocol):
    """What :func:`scan_record` reads: a record payload or a stored record
    (:class:`~meta_memory.agent_memory.model.NewMemoryRecord`, ``MemoryRecord``)."""

    @property
    def title(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def body(self) -> str: ...
    @property
    def tags(self) -> tuple[str, ...]: ...
    def scanned_strings(self) -> tuple[str, ...]: ...


def scan_record(record: _ScannedRecord, *more: str) -> str | None:
    """:func:`scan` over every string ``record`` stores: title, description, body, tags, then its
    :meth:`~meta_memory.agent_memory.model.NewMemoryRecord.scanned_strings` (provenance: author,
    evidence session ids, profile, verification; for a stored record also its id, scope key, status
    detail and links), after ``more`` (an explicit id the write gives it). The one list of scanned
    fields: every write path, quarantine release and the steward's dream call this."""
    return scan(record.title, record.description, record.body, record.tags,
                (*(m for m in more if m), *record.scanned_strings()))


def secret_field(record: _ScannedRecord, *more: str) -> str | None:
    """The part of ``record`` that holds the secret :func:`scan_record` found in it (``None`` when it
    holds none), as a refusal names it, never echoing the secret: ``title``, ``description``, ``body``,
    ``tags.<i>``, ``memory_id`` (``more``: the explicit id a write gives it), ``provenance``, for a stored
    record ``id``, ``scope``, ``status``, ``supersedes``, ``derived_from.<i>``, and in ``metadata`` the
    path of the deepest value holding it (:func:`_metadata_field`: ``metadata.deep.k``). A secret found
    only across parts (split between the title and the body) names them joined with ``+``, as
    :func:`scan_values` does. Only a refusal calls this: each part is scanned again."""
    if scan_record(record, *more) is None:
        return None
    named: list[tuple[str, str]] = [("title", record.title), ("description", record.description),
                                    ("body", record.body)]
    for index, tag in enumerate(record.tags):
        named += [(f"tags.{index}", tag), (f"tags.{index}", tag.upper())]
    named += [("memory_id", m) for m in more if m]
    provenance = getattr(record, "provenance", None)
    named += [("provenance", s) for s in (provenance.strings() if provenance is not None else ())]
    status = getattr(record, "status", None)
    scope = getattr(record, "scope", None)
    for name, value in (("id", getattr(record, "id", None)), ("scope", getattr(scope, "key", None)),
                        ("status", getattr(status, "detail", None)), ("supersedes", getattr(record, "supersedes", None))):
        if isinstance(value, str):
            named.append((name, value))
    named += [(f"derived_from.{i}", d) for i, d in enumerate(getattr(record, "derived_from", ()))]
    for name, text in named:
        if text and scan_text(text) is not None:
            return name
    metadata = getattr(record, "metadata", None) or {}
    if metadata and scan_values({"metadata": metadata}) is not None:
        return _metadata_field(metadata, "metadata")
    groups: dict[str, Any] = {"title": record.title, "description": record.description, "body": record.body,
                              "tags": [*record.tags, *(t.upper() for t in record.tags)],
                              "provenance": [t for n, t in named if n not in ("title", "description", "body")
                                             and not n.startswith("tags.")],
                              "metadata": metadata}
    found = scan_values(groups)
    if found is not None:
        return found[0]
    return "+".join(name for name, value in groups.items() if value)


def _metadata_field(value: Any, path: str) -> str:
    """The path (:func:`~meta_memory.agent_memory.fields.metadata_key_path`) of the deepest member of the
    metadata ``value`` at ``path`` that holds the secret found in it: the value holding it alone, or the
    key whose assignment does (``metadata.password`` for ``{"password": "hunter2x"}``). A key that itself
    holds the secret, or a part of one split across the key and its value, is never named: the path
    stops at the object holding it."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if scan_values({"m": {key: item}}) is None:
                continue
            if not isinstance(key, str) or scan_text(key) is not None:
                return path
            if scan_values({"m": item}) is not None:
                return _metadata_field(item, metadata_key_path(path, key))
            pair = _pair_text(key, item)
            return metadata_key_path(path, key) if pair is not None and scan_text(pair) is not None else path
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            if scan_values({"m": item}) is not None:
                return _metadata_field(item, f"{path}.{index}")
    return path


#: How many levels of arrays and objects below a key the values paired with it are read from: a stored
#: metadata value nests at most 5 levels in all, so every value under every key is paired.
PAIR_DEPTH = 5
#: At most this many distinct values are paired with one key. Metadata that the field rules accept
#: (at most 8 KiB as canonical JSON) holds fewer: each value takes a byte and a separator at least.
MAX_PAIRED_VALUES = 4096


def _strings(value: Any, out: list[str], depth: int = 0) -> None:
    if depth > 64:
        return
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str):
                out.append(key)
                if isinstance(item, str):  # a credential split between a key and its value reads whole
                    out.append(key + item)
                pair = _pair_text(key, item)
                if pair is not None:
                    out.append(pair)
            _strings(item, out, depth + 1)
        if "kty" in value and isinstance(value.get("d"), str):
            # a JSON Web Key's members read together, as the ``private-key`` rule reads a JWK in text
            out.append('{"kty": ' + json.dumps(str(value["kty"]), ensure_ascii=False)
                       + ', "d": ' + json.dumps(value["d"], ensure_ascii=False) + "}")
    elif isinstance(value, (list, tuple)):
        for item in value:
            _strings(item, out, depth + 1)


#: What a key name's end may carry that an assignment would read as its separator (``"password:"``).
_KEY_END = re.compile(r"[\s:=]+$")


def _scalars_under(value: Any, found: dict[str, None], depth: int = 0) -> None:
    """Every string and number in ``value`` as JSON text, into ``found`` (insertion-ordered, so each
    once), through at most :data:`PAIR_DEPTH` levels of arrays and objects and at most
    :data:`MAX_PAIRED_VALUES` values. Object keys below are not values."""
    if len(found) >= MAX_PAIRED_VALUES or isinstance(value, bool):
        return
    if type(value) is int:
        found[int.__repr__(value)] = None  # what ``json.dumps`` writes for an int, without its overhead
    elif isinstance(value, (str, int, float)):
        found[json.dumps(value, ensure_ascii=False)] = None
    elif depth < PAIR_DEPTH:
        items = value.values() if isinstance(value, Mapping) else value if isinstance(value, (list, tuple)) else ()
        for item in items:
            _scalars_under(item, found, depth + 1)


def _pair_text(key: str, value: Any) -> str | None:
    """The object member ``key`` -> ``value`` as assignments the rules read whole: one ``{"key": v}``
    line for each string or number ``v`` anywhere under the key (directly, or inside arrays and objects
    up to :data:`PAIR_DEPTH` levels down), each line ending in a line break; the key read as the scanner
    reads it, trimmed of white space and of a trailing ``:`` or ``=`` (``{"password ": ["hunter2x"]}``
    reads ``{"password": "hunter2x"}``).

    ``None`` when there is nothing to pair, or when the key as the pair writes it (``{"key": ``) holds
    no rule's trigger: a match in the pair that is in neither the key nor a value alone would start
    there, at its trigger (``"auth"`` holds its quotes: ``{"auth": "<base64>"}``). The
    pairs are bounded: at most :data:`MAX_PAIRED_VALUES` per key, and a metadata value the field rules
    accept has at most 4 keys above any value, so at most 4 x 4096 = 16,384 pairs in all, in at most
    128 texts (one per key)."""
    prefix = _pair_prefix(key)
    if prefix is None:
        return None
    values: dict[str, None] = {}
    _scalars_under(value, values)
    if not values:
        return None
    # each pair ends its line: the next string read does not run on into the last value
    return "".join(prefix + v + "}\n" for v in values)


@functools.lru_cache(maxsize=4096)
def _pair_prefix(key: str) -> str | None:
    """``{"key": `` as :func:`_pair_text` writes it for ``key``, or ``None`` when it holds no rule's trigger
    (or the key reads as empty). A function of the key alone, kept for the last 4,096 keys: metadata repeats
    its keys from record to record, and a key is at most 64 bytes."""
    name = _KEY_END.sub("", normalise_for_scan(key)).strip()
    prefix = "{" + json.dumps(name, ensure_ascii=False) + ": "
    return prefix if name and _has_trigger(prefix) else None


def forget_keys() -> None:
    """Empty the metadata keys :func:`_pair_prefix` keeps (after an erase: no key of an erased record's
    metadata stays in the process's memory)."""
    _pair_prefix.cache_clear()


def json_strings(value: Any) -> list[str]:
    """What the scanner reads of a JSON value (a record's or an assertion's ``metadata``): every string
    and key, depth first, and after each key whose quoted name holds a rule's trigger the ``{"key": value}``
    lines of :func:`_pair_text` (the assignment rules need a key and its value together, whatever
    arrays or objects stand between them). Nesting beyond 64 is not read (the field rules refuse it
    before a scan)."""
    out: list[str] = []
    _strings(value, out)
    return out


def scan_values(fields: Mapping[str, Any]) -> tuple[str, str] | None:
    """Scan named free-form values (strings, and every key and string inside JSON objects and arrays).

    Each field is scanned on its own (its strings separately, then across their seams), then all
    fields across their seams, in ``fields`` order. Returns ``(field, class)`` for the first hit --
    ``field`` is the name of the field holding it, or ``"+".join(names)`` when only the join of
    several fields holds it -- or ``None``.
    """
    per_field: list[tuple[str, list[str]]] = []
    for name, value in fields.items():
        strings: list[str] = []
        _strings(value, strings)
        strings = [s for s in strings if s]
        if not strings:
            continue
        found = _scan_parts(strings)
        if found is not None:
            return name, found
        per_field.append((name, strings))
    if len(per_field) > 1:
        found = _scan_parts(["".join(strings) for _, strings in per_field])
        if found is not None:
            return "+".join(name for name, _ in per_field), found
    return None


def secret_rule(what: str, secret_class: str) -> str:
    """The refusal sentence for ``what`` (a field or "content") matching ``secret_class``; never the text."""
    return (
        f"{what} matches the '{secret_class}' secret pattern class; durable memory must never hold "
        "credentials — store a reference to where the credential lives instead"
    )

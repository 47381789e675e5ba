"""Content hashes, record ids and stage tokens (reference §2A, §2B).

- :func:`content_hash` binds a review or a dedup to exact content, read in Unicode normalisation form C
  (canonically equivalent texts, which render alike, are the same content); :func:`folded_content_hash` is the
  same hash over the whitespace-folded content (:func:`fold_whitespace`, fold 1), and
  :func:`casefolded_content_hash` over the content folded also for compatibility forms and case
  (:func:`fold_compat`, fold 2), and :func:`skeleton_content_hash` over that folded content with each
  letter of another script that looks like a Latin one read as that Latin letter (:func:`fold_skeleton`,
  fold 3): the erasure register's matches of content that differs from erased content only in whitespace,
  invisible characters, control characters, width, compatibility forms, case or look-alike letters
  (:func:`erasure_hashes` gives a write's four hashes).
- :func:`new_memory_id` mints ``mem-{now_ns}-{pid:x}-{nonce:016x}`` (``nonce``: 64 random bits, no
  function of the content); :func:`new_memory_ids` mints many, their nonces from one ``os.urandom`` call.
- :func:`mint_token` mints ``{prefix}-{now_ns}-{pid:x}-{nonce:08x}`` (32 random bits).

Ids are identifiers, not timestamps: ``now_ns`` is the wall clock in nanoseconds, raised by one
nanosecond when the clock has not moved past the previous id of this process (so a process's ids are
minted in increasing ``now_ns``); the random nonce makes them unique. No component counts what was
minted: an id shown to one identity says nothing of how many records, stages or proposals other
identities made meanwhile (a process-wide counter did). No component depends on the record's
content, so an id that outlives its record (an erasure event, a history line the caller may not
review) cannot be used to confirm a guess of the text.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
import time
import unicodedata
from importlib import resources

from meta_memory.textfold import strip_controls, strip_invisible

__all__ = [
    "canonical",
    "casefolded_content_hash",
    "content_hash",
    "ErasureHashes",
    "erasure_hashes",
    "fold_compat",
    "fold_skeleton",
    "fold_whitespace",
    "fold_texts",
    "folded_content_hash",
    "mint_token",
    "new_memory_id",
    "new_memory_ids",
    "skeleton_content_hash",
]

_clock_lock = threading.Lock()
_last_ns = 0


def _id_ns() -> int:
    """The wall clock in nanoseconds, strictly above the previous value this process minted with (a
    clock that stands still or steps back moves one nanosecond on): an ordering part that is no count."""
    global _last_ns
    with _clock_lock:
        _last_ns = max(time.time_ns(), _last_ns + 1)
        return _last_ns


def content_hash(title: str, body: str) -> str:
    """SHA-256 (64 lowercase hex chars) over ``u64le(len(title bytes)) + title + body``, title and body each
    in Unicode normalisation form C (NFC, :func:`canonical`).

    The length prefix makes the hash boundary-safe: ``("ab", "c")`` and
    ``("a", "bc")`` differ. NFC makes it canonical: two texts Unicode holds equivalent (``"Café"`` with a
    precomposed ``é`` and ``"Cafe\u0301"``, its decomposed form) render alike and hash alike, so they are
    one record to the duplicate check, the recreation rule, a review's bound hash and the erasure register.
    The text itself is stored as written.
    """
    t = canonical(title).encode("utf-8", "surrogatepass")
    digest = hashlib.sha256()
    digest.update(len(t).to_bytes(8, "little"))
    digest.update(t)
    digest.update(canonical(body).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def canonical(text: str) -> str:
    """``text`` in Unicode normalisation form C (NFC): what :func:`content_hash` hashes. ASCII text and text
    already in NFC (almost all text: keyboards and most systems write NFC) are returned as they are, after a
    check that costs no copy."""
    if text.isascii() or unicodedata.is_normalized("NFC", text):
        return text
    return unicodedata.normalize("NFC", text)


def fold_whitespace(text: str) -> str:
    """``text`` without its invisible characters (:func:`meta_memory.textfold.strip_invisible`: zero-width
    characters, joiners, variation selectors, the soft hyphen...) and its control characters read as every
    renderer shows them (:func:`meta_memory.textfold.strip_controls`: a vertical tab, a form feed or a
    separator is a space, another control but tab, line feed and carriage return is dropped), with every run of Unicode whitespace (``str.split``'s: spaces, tabs, line breaks, the no-break and other
    Unicode spaces) folded to one space and the ends trimmed. Idempotent."""
    return " ".join(_visible(text).split())


def _visible(text: str) -> str:
    """``text`` as a reader sees it: without invisible characters, its controls as every renderer shows them."""
    return strip_invisible(strip_controls(text))


def folded_content_hash(title: str, body: str, exact: str | None = None) -> str:
    """:func:`content_hash` over ``title`` and ``body`` each folded by :func:`fold_whitespace`: equal for
    two contents that differ only in whitespace or invisible characters, different when their visible
    non-whitespace text differs.

    ``exact`` (optional) is ``content_hash(title, body)`` when the caller already holds it: returned as
    is when folding changes neither text (no second SHA-256)."""
    folded_title, folded_body = fold_whitespace(title), fold_whitespace(body)
    if exact is not None and folded_title == title and folded_body == body:
        return exact
    return content_hash(folded_title, folded_body)


def fold_compat(text: str) -> str:
    """``text`` folded as :func:`fold_whitespace` folds it, and also for compatibility forms and case
    (fold 2 of the erasure register): NFKC (full-width and half-width forms, ligatures, circled and
    mathematical letters, superscripts, the no-break and ideographic spaces...) and Unicode case folding
    (``str.casefold``: ``"Straße"`` and ``"STRASSE"`` fold alike), repeated until nothing changes (a
    case folding can leave text that NFKC changes again), then invisible characters and controls (as
    :func:`fold_whitespace`) removed and whitespace runs folded. Idempotent, and
    ``fold_compat(fold_whitespace(t)) == fold_compat(t)``.

    Visible differences stay: accents and other combining marks (``"café"`` is not ``"cafe"``), letters
    of other scripts that look Latin (:func:`fold_skeleton`, fold 3, reads those as Latin), punctuation.
    ASCII text costs one ``str.lower``."""
    return _fold_forms_and_case(_visible(text))


def _fold_forms_and_case(visible: str) -> str:
    """:func:`fold_compat` of ``visible``, a text without invisible characters (no code point's NFKC form or
    case folding holds one, checked over every code point, so none is removed after them)."""
    if visible.isascii():
        return " ".join(visible.lower().split())
    folded = visible
    for _ in range(_COMPAT_ROUNDS):  # until NFKC and case folding both leave it as it is
        folded = unicodedata.normalize("NFKC", folded)
        lower = folded.casefold()
        if lower == folded:
            break
        folded = lower
    return " ".join(folded.split())


#: At most this many rounds of NFKC and case folding in :func:`fold_compat` (one or two settle every
#: text seen: the bound only keeps a pathological input from looping).
_COMPAT_ROUNDS = 4


def casefolded_content_hash(title: str, body: str, exact: str | None = None) -> str:
    """:func:`content_hash` over ``title`` and ``body`` each folded by :func:`fold_compat` (fold 2): equal
    for two contents that differ only in whitespace, invisible characters, width, compatibility forms or
    case. ``exact`` as for :func:`folded_content_hash` (returned when folding changes neither text)."""
    folded_title, folded_body = fold_compat(title), fold_compat(body)
    if exact is not None and folded_title == title and folded_body == body:
        return exact
    return content_hash(folded_title, folded_body)


def fold_skeleton(text: str) -> str:
    """``text`` folded for look-alike letters, and as :func:`fold_compat` folds it (fold 3 of the erasure
    register): a confusable "skeleton" in the sense of Unicode Technical Standard #39. ``text`` without its
    invisible characters and in NFKC, read in canonical decomposition (NFD), each character that
    Unicode's confusables data maps to a Latin prototype replaced by it (Cyrillic ``"а"`` U+0430, ``"о"``,
    ``"е"``, ``"р"``, ``"с"``, Greek ``"ο"`` U+03BF... read as Latin ``a``, ``o``, ``e``, ``p``, ``c``,
    ``o``; Cyrillic ``"Н"`` and Greek ``"Η"`` as ``H``), then folded by :func:`fold_compat`, both again
    until nothing changes, and last every whitespace character taken out: ``"pаypal"`` with a Cyrillic
    ``а`` folds as ``"PayPal"`` does, and ``"the launch code"`` as ``"thelaunchcode"``, ``"the launch
    co de"`` or ``"t h e l a u n c h c o d e"`` do (words run together or letter-spaced read as the same
    letters; a zero-width space in place of a space, which the renderers drop, is such a text).
    Idempotent.

    The mapping reads the text before case folding, as the standard's skeleton does: a capital that looks
    like a Latin capital is that capital (``"Н"`` is ``H``) though its lower case looks like another letter
    (``"н"``, like a small capital ``ʜ``, is not ``h``). So fold 3 is not a function of fold 2's text: two
    texts equal under fold 2 may differ under fold 3 (``"Н"`` and ``"н"``), and the register compares a
    write under every fold (:meth:`~meta_memory.agent_memory.erase.Erasure.matches`).

    The table (:func:`_skeleton_table`) is derived from the ``confusable-homoglyphs`` package's copy of
    Unicode's ``confusables.txt``, read once, at the first non-ASCII text: only the mappings of a non-ASCII
    character to a prototype of Latin letters (ASCII, other Latin letters, combining marks), so letters
    that look like no Latin letter stay as they are. ASCII is never mapped: ``0`` and ``O``, ``1`` and
    ``l``, ``rn`` and ``m`` stay apart (a keyboard types them; they are different text to a reader and a
    model alike), and ASCII text folds as :func:`fold_compat` folds it, its whitespace taken out. A word written wholly
    in Cyrillic or Greek is mapped too (``"вода"`` folds to ``"ʙoдa"``): two texts of those scripts fold
    alike only where they differ in letters that look alike."""
    visible = _visible(text)
    if visible.isascii():  # _without_whitespace(_fold_forms_and_case(visible)), in one pass
        return "".join(visible.lower().split())
    return _skeleton(unicodedata.normalize("NFKC", visible))


def _skeleton(visible: str, compat: str | None = None) -> str:
    """:func:`fold_skeleton` of ``visible``, a text without invisible characters (in NFKC, or ASCII);
    ``compat`` is its :func:`fold_compat` when the caller holds it."""
    if visible.isascii():
        return _without_whitespace(_fold_forms_and_case(visible) if compat is None else compat)
    table, keys = _skeleton_table(), _skeleton_keys()
    folded = visible
    for _ in range(_COMPAT_ROUNDS):  # until the mapping and fold_compat both leave it as it is
        decomposed = unicodedata.normalize("NFD", folded)
        if not keys.isdisjoint(decomposed):
            mapped = _fold_forms_and_case(decomposed.translate(table))
        elif folded is visible and compat is not None:
            mapped = compat  # nothing to map: fold_compat's text (NFKC reads NFD as the text itself)
        else:
            mapped = _fold_forms_and_case(folded)
        mapped = _without_whitespace(mapped)  # in the loop: a mark a space stood before composes again
        if mapped == folded:
            break
        folded = mapped
    return folded


def _without_whitespace(text: str) -> str:
    """``text`` with every whitespace character taken out (fold 3's last step: words run together, a word
    letter-spaced or a line break inside a word read as the same letters)."""
    return "".join(text.split())


@functools.cache
def _skeleton_table() -> dict[int, str]:
    """``{code point: prototype}`` of fold 3 (:func:`fold_skeleton`), built once from the
    ``confusable-homoglyphs`` package's ``confusables.json`` (read from the installed package itself,
    whatever its ``CONFUSABLE_DATA`` setting says, so the fold and its hashes do not move with the
    environment).

    That file keeps each line of Unicode's ``confusables.txt`` (a source character → its prototype) as an
    edge both ways. A source has one prototype and a prototype is never a source, so a character with one
    neighbour is a source and the neighbour its prototype, except in a pair of two characters seen only
    with each other: there the later code point maps to the earlier. Kept: a non-ASCII source whose
    prototype is Latin (:func:`_latin_prototype`), its prototype in NFD, or, as ASCII is never mapped, the
    ASCII source of that prototype that reads as it does (:func:`_ascii_reading`: Cyrillic ``"І"`` is
    ``I``, not the prototype ``l``). Raises ``ImportError`` when the package is missing, ``OSError`` or
    ``ValueError`` when its data is unreadable: a write that needs fold 3 then fails, never let through
    unchecked (nothing is cached, so the next write tries again)."""
    data = json.loads(resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text("utf-8"))
    neighbours: dict[str, set[str]] = {}
    for key, entries in data.items():
        neighbours.setdefault(_unmarked(key), set()).update(_unmarked(e["c"]) for e in entries)
    table: dict[int, str] = {}
    for source, protos in neighbours.items():
        if len(source) != 1 or source.isascii() or len(protos) != 1:
            continue
        (proto,) = protos
        if proto == source or not _latin_prototype(proto):
            continue
        if not proto.isascii() and neighbours.get(proto) == {source} and proto > source:
            continue  # a pair seen only with each other: the later code point maps to the earlier
        if proto.isascii():
            proto = _ascii_reading(source, proto, [s for s in neighbours.get(proto, ()) if len(s) == 1
                                                   and s.isascii() and neighbours.get(s) == {proto}])
        table[ord(source)] = unicodedata.normalize("NFD", proto)
    return table


def _ascii_reading(source: str, proto: str, ascii_sources: list[str]) -> str:
    """What ``source`` maps to when its prototype ``proto`` is ASCII and ASCII characters are themselves
    sources of it (``I``, ``1`` and ``|`` of ``l``; ``0`` of ``O``; ``m`` of ``rn``): ASCII is never mapped,
    so the one of them a reader takes ``source`` for. A digit reads as the ASCII digit, a letter as the
    single ASCII letter of its case (a capital as ``I``, a small letter or one without case as ``l``);
    anything else, or when none fits, as ``proto``."""
    kind = unicodedata.category(source)

    def reads_as(c: str) -> bool:
        if kind == "Nd":
            return c.isdigit()
        return kind.startswith("L") and len(c) == 1 and c.isalpha() and c.isupper() == source.isupper()

    return next((c for c in (proto, *sorted(ascii_sources)) if reads_as(c)), proto)


@functools.cache
def _skeleton_keys() -> frozenset[str]:
    """The characters :func:`_skeleton_table` maps (a text holding none is left as it is: one scan)."""
    return frozenset(map(chr, _skeleton_table()))


def _unmarked(text: str) -> str:
    """``text`` without the left-to-right marks ``confusables.json`` wraps right-to-left characters in."""
    return text.replace("\u200e", "")


def _latin_prototype(proto: str) -> bool:
    """Whether ``proto`` is a prototype fold 3 maps to: ASCII, Latin letters and combining marks only, one
    of them at least an ASCII character or a Latin letter."""
    def latin(c: str) -> bool:
        return c.isascii() or unicodedata.name(c, "").startswith("LATIN ")

    return all(latin(c) or unicodedata.category(c).startswith("M") for c in proto) and any(map(latin, proto))


def skeleton_content_hash(title: str, body: str, exact: str | None = None) -> str:
    """:func:`content_hash` over ``title`` and ``body`` each folded by :func:`fold_skeleton` (fold 3): equal
    for two contents that differ only in whitespace (its runs, or whitespace taken out or put in anywhere),
    invisible characters, width, compatibility forms, case or look-alike letters of other scripts. ``exact``
    as for :func:`folded_content_hash`."""
    folded_title, folded_body = fold_skeleton(title), fold_skeleton(body)
    if exact is not None and folded_title == title and folded_body == body:
        return exact
    return content_hash(folded_title, folded_body)


#: A write's hashes for the erasure register: ``(content hash, fold-1 hash, fold-2 hash, fold-3 hash)``.
ErasureHashes = tuple[str, str, str, str]


def erasure_hashes(title: str, body: str, exact: str | None = None) -> ErasureHashes:
    """``(content hash, fold-1 hash, fold-2 hash, fold-3 hash)`` of a write of ``title`` and ``body``: what
    the erasure register compares with every row (:meth:`~meta_memory.agent_memory.erase.Erasure.matches`).
    The fold-1 and fold-2 hashes find the rows registered before the register kept fold 2 or fold 3 too.
    ``exact`` is ``content_hash(title, body)`` when the caller holds it. Each hash is :func:`content_hash`
    of the title's and the body's texts of one fold (:func:`fold_texts`)."""
    exact = content_hash(title, body) if exact is None else exact
    (_, title1, title2, title3), (_, body1, body2, body3) = fold_texts(title), fold_texts(body)
    fold1 = exact if title1 == title and body1 == body else content_hash(title1, body1)
    fold2 = fold1 if title2 == title1 and body2 == body1 else content_hash(title2, body2)
    fold3 = fold2 if title3 == title2 and body3 == body2 else content_hash(title3, body3)
    return exact, fold1, fold2, fold3


def fold_texts(text: str) -> tuple[str, str, str, str]:
    """``(text, fold 1, fold 2, fold 3)`` of ``text``: what :func:`erasure_hashes` hashes of a title or a body
    (:func:`fold_whitespace`, :func:`fold_compat`, :func:`fold_skeleton`, each computed from the one before)."""
    # fold 2 from fold 1's text (fold_compat(fold_whitespace(t)) == fold_compat(t)): the invisible
    # characters are removed once; fold 3 from fold 1's text likewise (fold_skeleton(fold_whitespace(t)) ==
    # fold_skeleton(t)), and, for ASCII text, fold 2's text without its whitespace (nothing ASCII is mapped)
    text1 = fold_whitespace(text)
    text2 = _fold_forms_and_case(text1)
    text3 = _without_whitespace(text2) if text1.isascii() else _skeleton(unicodedata.normalize("NFKC", text1), text2)
    return text, text1, text2, text3


#: Bytes of randomness at the end of each minted memory id (16 hex digits).
ID_NONCE_BYTES = 8


def _memory_id(nonce: str) -> str:
    return f"mem-{_id_ns()}-{os.getpid():x}-{nonce}"


def new_memory_id() -> str:
    """A fresh record id ``mem-{now_ns}-{pid:x}-{nonce:016x}``; ``nonce`` is 64 random bits
    (``os.urandom``), so the id says nothing about the record's content: an id shown after the record
    is erased, withheld or quarantined cannot be checked against guessed texts."""
    return _memory_id(os.urandom(ID_NONCE_BYTES).hex())


def new_memory_ids(count: int) -> list[str]:
    """``count`` fresh ids as :func:`new_memory_id` mints them, their nonces drawn in one ``os.urandom`` call."""
    if count <= 0:
        return []
    width = 2 * ID_NONCE_BYTES
    pool = os.urandom(ID_NONCE_BYTES * count).hex()
    return [_memory_id(pool[k:k + width]) for k in range(0, width * count, width)]


def mint_token(prefix: str) -> str:
    """A unique stage/audit/proposal token ``{prefix}-{now_ns}-{pid:x}-{nonce:08x}`` (32 random bits; no
    count of the tokens minted before it).

    Prefixes in use: ``direct``, ``stage``, ``review``, ``import``,
    ``import-audit``, ``prop``.
    """
    return f"{prefix}-{_id_ns()}-{os.getpid():x}-{os.urandom(4).hex()}"

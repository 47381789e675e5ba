"""The one text normalisation used by writes, queries and recall alike.

Everything that compares text for recall goes through this module, so the
full-text index and the query can never disagree about what a word is
(spec README, "Going beyond the reference": Unicode-aware recall; reference
notes §3.1, §3.2, §3.6).

Rules:

* :func:`normalize` — NFKC, then Unicode case folding (repeated until
  stable, so it is idempotent): ``ｃａｆé``, ``café`` (NFC) and ``cafe\\u0301``
  (NFD) all become ``café``; ``STRASSE`` and ``straße`` both become ``strasse``.
  Turkish and Azerbaijani dotted and dotless i fold onto ``i`` after case
  folding (``İstanbul``, ``istanbul`` and ``ISTANBUL`` agree; ``ılık`` and
  ``ILIK`` too), and emoji variation selectors are dropped.
* Characters that show nothing inside a word are ignored, on both sides
  (:func:`meta_memory.textfold.strip_ignorable`): zero-width spaces, joiners
  and non-joiners, the word joiner, the BOM, the soft hyphen and the other
  format characters (``Cf``), the combining grapheme joiner and variation
  selectors: ``pass\u200bport`` and ``pass\u00adport`` are the word
  ``passport``, as a reader sees them. Bidirectional controls still separate
  words (they stand where a right-to-left run meets a left-to-right one).
* A *word* is a run of letters, combining marks and digits of any script, with
  ``_`` and ``-`` allowed inside (as the reference keeps them). Leading and
  trailing ``_``/``-`` are dropped.
* A hyphenated or underscored word yields itself *and* its parts:
  ``multi-agent`` -> ``multi-agent``, ``multi``, ``agent``.
* Runs of CJK characters (Han, Hiragana, Katakana, Hangul) have no spaces
  between words. The index side (:func:`tokens`, :func:`token_set`) keeps every
  character and every overlapping bigram (``我喜欢`` -> ``我``, ``喜``, ``欢``,
  ``我喜``, ``喜欢``); the query side (:func:`query_terms`) asks for the bigrams
  of a longer run and for the character itself of a one-character run, so a
  single character (``茶``) finds ``我喜欢喝绿茶`` while a longer query still
  matches on bigrams.
* Each emoji (a pictographic symbol; a pair of regional indicators, i.e. a
  flag, counts as one) is a token of its own, on both sides; skin-tone
  modifiers and joiners are not tokens.
* A non-CJK token is kept when it has at least :data:`MIN_TOKEN_CHARS`
  characters (so ``S3``, ``AI``, ``Q3``, ``v2``, ``Go``, ``UK`` are searchable)
  and is neither one of the reference's 45 :data:`STOPWORDS` nor one of the
  two-letter function words :data:`SHORT_STOPWORDS` (``is``, ``of``, ``it``...).
  A two-letter word written in capitals in the text is an acronym and is kept
  even when it spells a short stopword (``US``, ``IT``): both sides apply the
  rule to the text they are given, so they still agree.
* One character is a token in two cases, on both sides alike. A single decimal
  digit of any script (``str.isdecimal`` after normalising: ``3``, ``٣``, and
  ``³`` or ``③``, which NFKC makes ``3``): ``deploy to level 3`` holds the
  token ``3``, ``level-3`` the tokens ``level-3``, ``level``, ``3``, and
  ``3.5`` the tokens ``3`` and ``5``. And a single letter written alone in
  capitals in the text, as the acronym rule above reads capitals (``plan B``,
  ``vitamin C``, the ``R`` and ``C`` languages; ``C++`` and ``C#`` are the word
  ``C``), but for the English words ``A`` and ``I`` (:data:`ONE_LETTER_WORDS`):
  ``plan b`` in lower case has no token ``b``, so ``plan b`` does not find
  ``plan B`` by it, nor the reverse. Other languages' one-letter words written
  at a sentence's start (Polish ``W``, Spanish ``Y``) are tokens too, of little
  weight where they are common. Any other one-letter word is dropped.
* A kept all-ASCII-letter token is reduced by a light English suffix
  stemmer (:func:`stem`): ``travels`` -> ``travel``, ``researching`` ->
  ``research``; ``hiking``, ``hikes``, ``hike`` -> ``hik``. Measured on LoCoMo it adds
  about two points of recall@8; other scripts are left as they are.

Nothing here raises: any ``str`` (lone surrogates, NUL, emoji, ...) is
accepted, and tokens only ever contain letters, marks, digits, ``_`` and
``-``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from functools import lru_cache
from itertools import chain

from meta_memory.textfold import ignorable_code_points, strip_ignorable

__all__ = [
    "STOPWORDS",
    "SHORT_STOPWORDS",
    "MIN_TOKEN_CHARS",
    "ONE_LETTER_WORDS",
    "normalize",
    "compact_whitespace",
    "tokens",
    "index_text",
    "query_tokens",
    "token_set",
    "query_terms",
    "is_cjk",
    "stem",
    "word_runs",
    "is_word_run",
]

#: The reference's stopwords (§3.2), compared after normalisation.
STOPWORDS: frozenset[str] = frozenset(
    """about after again also and are ask but can could did does for from had has have how into just
    may not now only our out put should that the their then there this was what when where which
    who why with would you your""".split()
)

#: Two-letter English function words, dropped like :data:`STOPWORDS` (the reference needed no
#: list of them: it dropped every word under three characters).
SHORT_STOPWORDS: frozenset[str] = frozenset(
    "am an as at be by do he if in is it me my no of oh on or so to up us we".split()
)

_DROPPED = STOPWORDS | SHORT_STOPWORDS

#: Minimum length, in characters, of a non-CJK token (the reference: 3), but for a single digit and a single
#: letter written in capitals (see the module doc).
MIN_TOKEN_CHARS = 2

#: Letters that, written alone in capitals, are English words rather than names: not tokens (``A``, ``I``).
ONE_LETTER_WORDS: frozenset[str] = frozenset("ai")

# Code point ranges treated as CJK (split into bigrams). NFKC has already
# mapped half-width katakana and compatibility jamo/ideographs onto these.
_CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x3005, 0x3007),  # 々 〆 〇
    (0x3040, 0x309F),  # Hiragana
    (0x30A0, 0x30FF),  # Katakana (incl. ー)
    (0x3130, 0x318F),  # Hangul compatibility Jamo
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xA960, 0xA97F),  # Hangul Jamo extended-A
    (0xAC00, 0xD7FF),  # Hangul syllables + Jamo extended-B
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0x20000, 0x3FFFF),  # CJK extensions B.. (planes 2 and 3)
)


def _char_class(ranges: Iterable[tuple[int, int]]) -> str:
    return "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ranges)


def _mark_ranges() -> list[tuple[int, int]]:
    """Ranges of combining marks (category M*), which ``\\w`` does not match."""
    ranges: list[tuple[int, int]] = []
    for cp in (*range(0x0300, 0x20000), *range(0xE0100, 0xE01F0)):
        if unicodedata.category(chr(cp))[0] == "M":
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1] = (ranges[-1][0], cp)
            else:
                ranges.append((cp, cp))
    return ranges


# Blocks holding emoji; only their pictographic symbols (category So) are emoji tokens, so
# skin-tone modifiers (Sk) and anything else in these blocks are not.
_EMOJI_BLOCKS: tuple[tuple[int, int], ...] = (
    (0x2300, 0x23FF),
    (0x2600, 0x27BF),
    (0x2B00, 0x2BFF),
    (0x1F000, 0x1F2FF),
    (0x1F300, 0x1FAFF),
)
_REGIONAL_INDICATORS = (0x1F1E6, 0x1F1FF)


def _emoji_ranges() -> list[tuple[int, int]]:
    ranges: list[tuple[int, int]] = []
    lo_ri, hi_ri = _REGIONAL_INDICATORS
    for lo, hi in _EMOJI_BLOCKS:
        for cp in range(lo, hi + 1):
            if unicodedata.category(chr(cp)) != "So" or lo_ri <= cp <= hi_ri:
                continue
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1] = (ranges[-1][0], cp)
            else:
                ranges.append((cp, cp))
    return ranges


def _ignorable_ranges() -> list[tuple[int, int]]:
    """Ranges of the characters that show nothing inside a word (:func:`meta_memory.textfold.strip_ignorable`)."""
    ranges: list[tuple[int, int]] = []
    for cp in ignorable_code_points():
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1] = (ranges[-1][0], cp)
        else:
            ranges.append((cp, cp))
    return ranges


_CJK_CLASS = _char_class(_CJK_RANGES)


@lru_cache(maxsize=1)
def _mark_class() -> str:
    """The combining marks as a character-class body (a scan of Unicode: made on first use, not at import)."""
    return _char_class(_mark_ranges())


@lru_cache(maxsize=1)
def _word_only() -> re.Pattern[str]:
    """A word: letters/digits (``\\w``, which also admits ``_``), combining marks and ``-`` (built on first use)."""
    return re.compile(r"[\w" + _mark_class() + r"\-]+")


@lru_cache(maxsize=1)
def _emoji() -> re.Pattern[str]:
    """A flag (two regional indicators) or one emoji (built on first use)."""
    return re.compile(f"[{_char_class([_REGIONAL_INDICATORS])}]{{2}}|[{_char_class(_emoji_ranges())}]")


@lru_cache(maxsize=1)
def _word_finder() -> re.Pattern[str]:
    """A token source in text as written: a word (as :func:`_word_only`, and holding the characters that show
    nothing inside a word, so ``"pass\u200bport"`` is found whole, then read without them by
    :func:`_word_variants`: no pass over the whole text), a flag or one emoji. Built on first use (the
    characters come from :func:`meta_memory.textfold.ignorable_code_points`' scan of Unicode)."""
    word = r"[\w" + _mark_class() + _char_class(_ignorable_ranges()) + r"\-]+"
    return re.compile(f"{word}|{_emoji().pattern}")


# The same words in ASCII text (no marks, no emoji there; \w of ASCII is [A-Za-z0-9_]), much faster.
_ASCII_WORD = re.compile(r"[A-Za-z0-9_\-]+")
# The same again for a whole text encoded: every byte that is not one of those characters becomes a space,
# so the words are the runs ``bytes.split()`` returns (a translation table is a fraction of a regex's cost).
_ASCII_WORD_BYTES = bytes(c if chr(c) in "_-" or (c < 128 and chr(c).isalnum()) else 0x20 for c in range(256))
# Within a word: CJK runs and everything else.
_CJK_SPLIT = re.compile(f"([{_CJK_CLASS}]+)|([^{_CJK_CLASS}]+)")
_CJK_CHAR = re.compile(f"[{_CJK_CLASS}]")
_JOINERS = re.compile(r"[-_]+")

_MAX_NORMALIZE_ROUNDS = 4


@lru_cache(maxsize=1)
def _fold_after_casefold() -> dict[int, str | None]:
    """The translation applied after case folding, built on first use. Case folding maps dotted capital I to
    "i" + combining dot above (removed after it by :data:`_DOT_ABOVE_AFTER_I`), dotless i stays "ı": both
    become "i", so Turkish text and its ASCII spelling agree. Every character that shows nothing inside a word
    is removed (variation selectors, which only pick an emoji's or a character's presentation, zero-width
    characters, the soft hyphen...: :func:`meta_memory.textfold.ignorable_code_points`)."""
    table: dict[int, str | None] = dict.fromkeys(ignorable_code_points())
    table[0x131] = "i"
    return table


_DOT_ABOVE_AFTER_I = re.compile("(?<=[ij])\u0307")


def normalize(text: str) -> str:
    """NFKC + casefold + the Turkish i fold, the characters that show nothing inside a word removed
    (:func:`meta_memory.textfold.strip_ignorable`), repeated until stable (idempotent). Never raises.

    Input: any ``str``. Output: the normalised ``str`` (may be longer, e.g.
    ``ß`` -> ``ss``; ``İ`` -> ``i``; ``ı`` -> ``i``; variation selectors, zero-width characters and the
    soft hyphen removed).
    """
    if text.isascii():
        return text.lower()  # NFKC leaves ASCII unchanged; casefold of ASCII is lower()
    current = text
    for _ in range(_MAX_NORMALIZE_ROUNDS):
        folded = unicodedata.normalize("NFKC", current).casefold().translate(_fold_after_casefold())
        nxt = unicodedata.normalize("NFKC", _DOT_ABOVE_AFTER_I.sub("", folded))
        if nxt == current:
            break
        current = nxt
    return current


def compact_whitespace(text: str) -> str:
    """Split on Unicode whitespace and join with single spaces (reference §3.6)."""
    return " ".join(text.split())


def word_runs(text: str) -> list[str]:
    """The maximal runs of word characters (letters, digits and ``_`` of any script, combining marks, ``-``) of
    ``text``, in order, with repeats: wherever ``text`` holds a string for which :func:`is_word_run` is true, it
    lies inside one of them."""
    if text.isascii():
        return _ASCII_WORD.findall(text)
    return _word_only().findall(text)


def is_word_run(term: str) -> bool:
    """True when ``term`` is non-empty and made of word characters alone (those of :func:`word_runs`)."""
    return _word_only().fullmatch(term) is not None


def is_cjk(char: str) -> bool:
    """True when ``char`` (one character) is Han, Hiragana, Katakana or Hangul."""
    return bool(_CJK_CHAR.match(char))


def _keep(token: str, capitals: bool = False) -> bool:
    """Whether the normalised non-CJK ``token`` is a token; ``capitals``: its word was written in capitals."""
    if len(token) < MIN_TOKEN_CHARS:
        return token.isdecimal() or (capitals and token.isalpha() and token not in ONE_LETTER_WORDS)
    return token not in _DROPPED or (capitals and len(token) == 2 and token in SHORT_STOPWORDS)


def _in_capitals(word: str) -> bool:
    """True when ``word`` (as written, ``_``/``-`` at its ends aside) is one or two characters, all capitals:
    an acronym (``US``) or a one-letter name (``B`` of plan B)."""
    core = word.strip("-_")
    return len(core) <= 2 and core.isupper()


_VOWELS = frozenset("aeiouy")
_NO_UNDOUBLE = frozenset("lsz")


def _undouble(word: str) -> str:
    if len(word) >= 4 and word[-1] == word[-2] and word[-1] not in _VOWELS and word[-1] not in _NO_UNDOUBLE:
        return word[:-1]
    return word


def stem(token: str) -> str:
    """Light English suffix stemming of an ASCII-letter token; any other token is returned unchanged.

    Steps: plural (``-ies`` -> ``-y``, ``-sses`` -> ``-ss``, ``-s`` except
    after ``s``/``u``/``i``); then ``-ing`` / ``-ed`` when a vowel stays in a
    stem of >= 3 letters (undoubling ``running`` -> ``run``); then a final
    ``-e`` on words of >= 4 letters. Deterministic and idempotent.
    """
    if not (token.isascii() and token.isalpha()) or len(token) < 4:
        return token
    word = token
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and word[-2] not in "sui":
        word = word[:-1]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix):
            base = word[: -len(suffix)]
            if len(base) >= 3 and any(ch in _VOWELS for ch in base):
                word = _undouble(base)
            break
    if word.endswith("e") and len(word) >= 4:
        word = word[:-1]
    return word


def _word_tokens(segment: str, capitals: bool) -> Iterator[str]:
    """Tokens of one non-CJK segment of a word (already normalised); ``capitals`` as :func:`_in_capitals`."""
    word = segment.strip("-_")
    if not word:
        return
    if _keep(word, capitals):
        yield stem(word)
    if "-" in word or "_" in word:
        for part in _JOINERS.split(word):
            if part and part != word and _keep(part):
                yield stem(part)


def _cjk_tokens(run: str, index: bool) -> Iterator[str]:
    if len(run) == 1:
        yield run
        return
    if index:
        yield from run
    for i in range(len(run) - 1):
        yield run[i : i + 2]


def _word_variants(word: str, index: bool) -> tuple[str, ...]:
    """The tokens one word or emoji of the text (as written) yields, on the index or the query side."""
    if word.isascii():  # letters, digits, "_" and "-" only: no emoji, and normalising is lower-casing
        return tuple(_word_tokens(word.lower(), _in_capitals(word)))
    if _emoji().fullmatch(word):
        return (word,)
    word = strip_ignorable(word)  # "pass\u200bport" is the word "passport"
    if not word:
        return ()
    capitals = _in_capitals(word)
    norm = normalize(word)
    if norm.isascii() and _word_only().fullmatch(norm):
        return tuple(_word_tokens(norm, capitals))
    out: list[str] = []
    # Case folding may yield characters that are not word characters: split again.
    for part in _word_only().findall(norm):
        for cjk, other in _CJK_SPLIT.findall(part):
            out.extend(_cjk_tokens(cjk, index) if cjk else _word_tokens(other, capitals))
    return tuple(out)


#: Words of at most this many characters are remembered (per side, and joined for the index); a longer one
#: is tokenised afresh each time. Each cache holds at most 65,536 words, so with this cap a few MiB, whatever
#: a flood of long distinct words (a body may be one 64 KiB word) brings: uncapped, several GiB.
CACHED_WORD_CHARS = 64

# Cached per side: natural text repeats its words.
_index_cached = lru_cache(maxsize=65_536)(lambda word: _word_variants(word, True))
_query_cached = lru_cache(maxsize=65_536)(lambda word: _word_variants(word, False))


def _index_variants(word: str) -> tuple[str, ...]:
    return _index_cached(word) if len(word) <= CACHED_WORD_CHARS else _word_variants(word, True)


def _query_variants(word: str) -> tuple[str, ...]:
    return _query_cached(word) if len(word) <= CACHED_WORD_CHARS else _word_variants(word, False)


#: ASCII word (its bytes, at most :data:`CACHED_WORD_CHARS`) -> its index tokens joined by single spaces (""
#: when none); a plain dict read with ``map(dict.get)`` costs less per word than a cached function; emptied
#: when full.
_INDEX_JOINED: dict[bytes, str] = {}
_INDEX_JOINED_SIZE = 65_536


def _index_joined_ascii(word: bytes) -> str:
    """The index tokens of one ASCII word (as its bytes), joined by single spaces, remembered."""
    joined = " ".join(_word_variants(word.decode("ascii"), True))
    if len(word) > CACHED_WORD_CHARS:
        return joined
    if len(_INDEX_JOINED) >= _INDEX_JOINED_SIZE:
        _INDEX_JOINED.clear()
    _INDEX_JOINED[word] = joined
    return joined


def _token_list(text: str, index: bool) -> list[str]:
    # Words are found after NFKC but before case folding (so a capitalised acronym is recognised),
    # then each is normalised on its own (case folding maps characters one by one).
    variants = _index_variants if index else _query_variants
    if text.isascii():
        words = _ASCII_WORD.findall(text)
    else:
        words = _word_finder().findall(unicodedata.normalize("NFKC", text))
    return list(chain.from_iterable(map(variants, words)))


def tokens(text: str) -> list[str]:
    """All index tokens of ``text`` in order, with repeats (for the full-text index).

    Example: ``"The Multi-Agent café, S3 我喜欢 🍵"`` ->
    ``["multi-agent", "multi", "agent", "café", "s3", "我", "喜", "欢", "我喜", "喜欢", "🍵"]``;
    ``"A plan B for level 3"`` -> ``["plan", "b", "level", "3"]``.
    """
    return _token_list(text, True)


def index_text(text: str) -> str:
    """``" ".join(tokens(text))``, what a full-text column stores; for ASCII text without building the list.

    Example: ``"The Multi-Agent café"`` -> ``"multi-agent multi agent café"``.
    """
    if text.isascii():
        words = text.encode("ascii").translate(_ASCII_WORD_BYTES).split()
        joined: list[str | None] = list(map(_INDEX_JOINED.get, words))
        if None in joined:  # words not seen yet
            joined = [_index_joined_ascii(w) if j is None else j for w, j in zip(words, joined, strict=True)]
        return " ".join(filter(None, joined))
    return " ".join(_token_list(text, True))


def query_tokens(text: str) -> list[str]:
    """The query tokens of ``text`` in order, with repeats (what :func:`query_terms` collects).

    They differ from :func:`tokens` only for CJK: a run of two or more CJK characters is
    searched by its bigrams, not also by each character.
    """
    return _token_list(text, False)


def token_set(text: str) -> frozenset[str]:
    """The distinct index tokens of ``text`` (reference ``insert_terms``)."""
    return frozenset(_token_list(text, True))


def query_terms(query_text: str | None, extra_terms: Iterable[str] = ()) -> list[str]:
    """The sorted, distinct search terms of a query (reference §3.1).

    Query tokens of ``query_text`` united with those of every string in
    ``extra_terms`` (the caller's ``query_terms``), all through the same
    tokeniser. Every query term of a text is among the index tokens of the same
    text. A query made only of stopwords and one-letter words (but a digit, and a letter in capitals other than
    ``A`` and ``I``) yields ``[]``: ``query_terms("where did I put the") == []``, ``query_terms("level 3") ==
    ["3", "level"]``.
    """
    terms: set[str] = set()
    if query_text:
        terms.update(_token_list(query_text, False))
    for extra in extra_terms:
        if isinstance(extra, str) and extra:
            terms.update(_token_list(extra, False))
    return sorted(terms)


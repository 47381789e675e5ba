"""Normalisation and tokenisation: the named examples and properties."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from meta_memory.recall.text import (
    SHORT_STOPWORDS,
    STOPWORDS,
    compact_whitespace,
    index_text,
    is_cjk,
    normalize,
    query_terms,
    stem,
    token_set,
    tokens,
)
from meta_memory.textfold import BIDI_CONTROLS, INVISIBLE_FILLERS, is_invisible


def test_reference_has_45_stopwords() -> None:
    assert len(STOPWORDS) == 45
    assert {"the", "where", "would", "your", "about"} <= STOPWORDS


def test_cafe_spellings_normalise_alike() -> None:
    nfc = unicodedata.normalize("NFC", "café")
    nfd = unicodedata.normalize("NFD", "café")
    assert nfc != nfd
    assert normalize(nfc) == normalize(nfd) == normalize("ｃａｆé") == normalize("CAFÉ") == "café"


def test_sharp_s_folds() -> None:
    assert normalize("STRASSE") == normalize("straße") == "strasse"
    assert query_terms("STRASSE") == query_terms("straße")


def test_stopword_only_and_short_queries_have_no_terms() -> None:
    assert query_terms("where did I put the") == []
    assert query_terms("a an to of it is") == []
    assert query_terms("I am at the office, is it up to us?") == [stem("office")]
    assert query_terms("") == []
    assert query_terms(None, ["", "the", "!!"]) == []


def test_passport_query_terms() -> None:
    assert query_terms("I need the passport for travel") == ["need", "passport", "travel"]


def test_hyphenated_words_yield_whole_and_parts() -> None:
    assert tokens("multi-agent") == ["multi-agent", "multi", "agent"]
    assert tokens("snake_case_name") == ["snake_case_name", stem("snake"), stem("case"), stem("name")]
    assert tokens("-x") == []
    assert tokens("--leading-dash--") == ["leading-dash", "lead", "dash"]


def test_cjk_runs_index_characters_and_bigrams_and_query_bigrams() -> None:
    assert tokens("我喜欢喝绿茶") == ["我", "喜", "欢", "喝", "绿", "茶", "我喜", "喜欢", "欢喝", "喝绿", "绿茶"]
    assert query_terms("我喜欢喝绿茶") == sorted(["我喜", "喜欢", "欢喝", "喝绿", "绿茶"])
    assert "绿茶" in token_set("我喜欢喝绿茶")
    assert tokens("茶") == ["茶"] == query_terms("茶")
    assert set(query_terms("茶")) <= token_set("我喜欢喝绿茶")
    assert query_terms("カタカナ") == sorted(["カタ", "タカ", "カナ"])
    assert query_terms("한국어") == sorted(["한국", "국어"])


def test_other_scripts_are_words() -> None:
    assert tokens("Ελληνικά κείμενα") == ["ελληνικά", "κείμενα"]
    assert tokens("привет мир") == ["привет", "мир"]
    assert tokens("हिन्दी") == ["हिन्दी"]  # combining marks stay inside the word


def test_mixed_latin_and_cjk_word_splits() -> None:
    assert tokens("abc绿茶") == ["abc", "绿", "茶", "绿茶"]
    assert query_terms("abc绿茶") == ["abc", "绿茶"]


def test_light_stemming() -> None:
    assert stem("travels") == "travel"
    assert stem("researching") == stem("research") == "research"
    assert stem("hiking") == stem("hike") == stem("hikes") == stem("hiked")
    assert stem("running") == stem("runs") == "run"
    assert stem("families") == "family"
    assert stem("status") == "status"
    assert stem("café") == "café"  # not ASCII: untouched
    assert query_terms("passports") == query_terms("passport")


def test_compact_whitespace() -> None:
    assert compact_whitespace("  a\t\n b\u3000c  ") == "a b c"
    assert compact_whitespace("") == ""


_TEXT = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=60)


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_normalize_is_idempotent(text: str) -> None:
    once = normalize(text)
    assert normalize(once) == once


def _is_emoji(tok: str) -> bool:
    return all(unicodedata.category(ch) == "So" for ch in tok) and len(tok) <= 2


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_tokens_are_words_or_emoji(text: str) -> None:
    for tok in tokens(text):
        assert tok and tok[0] not in "-_" and tok[-1] not in "-_"
        assert not any(ch.isspace() for ch in tok)
        if _is_emoji(tok):
            continue
        for ch in tok:
            assert ch in "-_" or unicodedata.category(ch)[0] in "LMN", (tok, ch)


# ASCII text with every kind of character the word split meets: letters of both cases, digits, joiners,
# whitespace of every ASCII kind, punctuation and control characters.
_ASCII_TEXT = st.text(alphabet=st.characters(max_codepoint=127), max_size=80) | st.lists(
    st.sampled_from(["US", "it", "IT", "Multi-Agent", "-x-", "a_b_", "running", "\x1c", "\x0b", " ", ",", "S3"]),
    max_size=12,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(_ASCII_TEXT | _TEXT)
def test_index_text_is_the_tokens_joined(text: str) -> None:
    assert index_text(text) == " ".join(tokens(text))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_unicode_normal_forms_give_the_same_terms(text: str) -> None:
    expected = query_terms(text)
    for form in ("NFC", "NFD", "NFKC", "NFKD"):
        assert query_terms(unicodedata.normalize(form, text)) == expected


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_query_terms_are_sorted_distinct_and_stable(text: str) -> None:
    terms = query_terms(text)
    assert terms == sorted(set(terms))
    assert query_terms(" ".join(terms)) == sorted(set(query_terms(" ".join(terms))))
    # A stopword typed is dropped; a stem may still spell one ("note" -> "not"), and stays searchable.
    assert all(t not in STOPWORDS or any(stem(w) == t != w for w in _words(text)) for t in terms)
    # one character: a digit, a letter written alone in capitals ("B" of plan B; not "A", "I"), CJK, an emoji
    assert all(len(t) >= 2 or t.isdecimal() or (t.isalpha() and t not in "ai") or is_cjk(t) or _is_emoji(t)
               for t in terms)


def _words(text: str) -> list[str]:
    """The input's words as the stemmer sees them (normalised, split on anything but letters)."""
    return re.findall(r"[a-z]+", normalize(text))


def test_a_word_whose_stem_spells_a_stopword_is_searchable() -> None:
    assert query_terms("NOTE") == query_terms("notes") == ["not"]
    assert query_terms("not") == []
    assert "not" in token_set("a note about the trip") and "not" not in token_set("it is not here")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(categories=("Lu", "Ll")), min_size=1, max_size=12))
def test_case_does_not_matter(word: str) -> None:
    # Letters whose upper case folds elsewhere (Turkish dotless i) are a known limit of casefolding.
    assume(word.upper().casefold() == word.casefold() == word.lower().casefold())
    # A two-letter word in capitals is an acronym ("US", "IT"), kept even when it spells a short stopword, and a
    # single letter in capitals is a name ("plan B"), kept where a lower-case one is not.
    assume(normalize(word) not in SHORT_STOPWORDS and all(len(t) > 1 for t in query_terms(word.upper())))
    assert query_terms(word.upper()) == query_terms(word.lower()) == query_terms(word)


# -- every word a user types is searchable ---------------------------------------------------------


def test_short_alphanumeric_tokens_are_kept() -> None:
    for word in ("S3", "AI", "Q3", "v2", "Go", "UK", "ok", "4k", "tv"):
        assert query_terms(word) == [word.lower()], word
        assert word.lower() in token_set(f"notes about {word} here")
    assert query_terms("a I") == []


def test_capitalised_two_letter_stopwords_are_acronyms() -> None:
    assert query_terms("US") == ["us"] and query_terms("IT department") == ["department", "it"]
    assert query_terms("us") == [] and query_terms("it") == []
    assert {"us", "it"} <= token_set("The US office runs IT support")
    assert "it" not in token_set("is it done")


def test_turkish_dotted_and_dotless_i_fold_after_casefold() -> None:
    body = token_set("İstanbul ofisi ılık")
    for query in ("istanbul", "ISTANBUL", "İSTANBUL", "İstanbul"):
        assert query_terms(query) == ["istanbul"], query
    assert query_terms("ILIK") == query_terms("ılık") == query_terms("ilik") == ["ilik"]
    assert {"istanbul", "ilik", "ofisi"} <= body
    assert normalize("İ") == "i" and normalize("ı") == "i"


def test_emoji_are_tokens() -> None:
    assert query_terms("🍵") == ["🍵"]
    assert query_terms("❤️") == query_terms("❤") == ["❤"]  # the variation selector is dropped
    assert "🍵" in token_set("morning tea🍵 with friends")
    assert tokens("👍🏽") == ["👍"]  # skin-tone modifier is not a token
    assert tokens("🇬🇧 🇫🇷") == ["🇬🇧", "🇫🇷"]  # a flag is one token
    assert tokens("👨\u200d👩\u200d👧") == ["👨", "👩", "👧"]


_WORD_CHARS = st.characters(categories=("Lu", "Ll", "Lo", "Nd", "So"), exclude_characters="\u0130\u0131")
_WORDS = st.lists(st.text(alphabet=_WORD_CHARS, min_size=1, max_size=8), min_size=1, max_size=8)


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_query_terms_of_a_text_are_among_its_index_tokens(text: str) -> None:
    assert set(query_terms(text)) <= token_set(text)


@settings(max_examples=300, deadline=None)
@given(_WORDS)
def test_each_word_finds_the_text_it_is_written_in(words: list[str]) -> None:
    doc = token_set(" ".join(words))
    for word in words:
        assert set(query_terms(word)) <= doc, word


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="abcdefgiIıİklmnoprstuzçğöşüÇĞÖŞÜ", min_size=1, max_size=10), max_size=6))
def test_turkish_spellings_of_i_give_the_same_terms(words: list[str]) -> None:
    text = " ".join(words)
    ascii_i = text.translate(str.maketrans({"ı": "i", "İ": "I"}))
    assert query_terms(text) == query_terms(ascii_i)
    assert token_set(text) == token_set(ascii_i)
    assert normalize(normalize(text)) == normalize(text)


def test_a_flood_of_long_distinct_words_is_not_kept() -> None:
    """Words past ``CACHED_WORD_CHARS`` are tokenised afresh, never remembered: a stream of records each one
    long distinct word (a body may be one 64 KiB word) leaves the word caches as they were, and the tokens
    are the same as for a short word."""
    from meta_memory.recall import text as t

    before = (t._index_cached.cache_info().currsize, t._query_cached.cache_info().currsize, len(t._INDEX_JOINED))
    for i in range(200):
        word = f"w{i:04d}" + "x" * 5_000
        assert t.index_text(f"{word} harbour") == " ".join(t.tokens(f"{word} harbour")) == f"{word} harbour"
        assert t.query_tokens(word) == [word]
    after = (t._index_cached.cache_info().currsize, t._query_cached.cache_info().currsize, len(t._INDEX_JOINED))
    assert all(b <= a <= b + 1 for b, a in zip(before, after, strict=True)), (before, after)  # "harbour" at most
    assert all(len(word) <= t.CACHED_WORD_CHARS for word in t._INDEX_JOINED)


#: Characters that show nothing inside a word: format characters (``Cf``: zero-width space, joiners, word
#: joiner, BOM, soft hyphen, tag characters...) but the bidirectional controls, and the other default-ignorable
#: code points (the combining grapheme joiner, variation selectors, Mongolian selectors, reserved ones).
_INSIDE_A_WORD = st.characters(categories=("Cf",)).filter(lambda c: ord(c) not in BIDI_CONTROLS) | st.sampled_from(
    ["\u034f", "\u180b", "\u180f", "\u2065", "\ufe00", "\ufe0e", "\ufe0f", "\ufff0", "\U000e0100", "\U000e0fff"])
_WORD = st.text(alphabet=st.characters(categories=("Ll", "Lu", "Lo", "Nd")), min_size=2, max_size=12)


@settings(max_examples=400, deadline=None)
@given(_WORD, st.lists(_INSIDE_A_WORD, min_size=1, max_size=3), st.data())
def test_an_invisible_character_inside_a_word_keeps_the_word(word: str, hidden: list[str],
                                                             data: st.DataObject) -> None:
    assert all(is_invisible(c) and ord(c) not in INVISIBLE_FILLERS for c in hidden)
    wanted = query_terms(word)
    assume(wanted)  # a stopword or a one-letter word has no term
    chars = list(word)
    for c in hidden:  # each inside the word, never at either end
        chars.insert(data.draw(st.integers(1, len(chars) - 1)), c)
    spelled = "".join(chars)
    text = f"the {spelled} here"
    assert set(wanted) <= token_set(text)  # the index side finds the word as written plainly
    assert query_terms(spelled) == wanted  # the query side reads the hidden spelling as the word
    assert normalize(spelled) == normalize(word)  # the substring rule of re-ranking too
    assert index_text(text) == index_text(f"the {word} here")


def test_bidirectional_controls_still_split_words() -> None:
    for c in sorted(BIDI_CONTROLS):
        assert tokens(f"pass{chr(c)}port") == ["pass", "port"]
    assert tokens("Hello\u2068שלום\u2069") == ["hello", "שלום"]

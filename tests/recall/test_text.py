"""Normalisation and tokenisation: the named examples and properties."""

from __future__ import annotations

import unicodedata

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from meta_memory.recall.text import (
    STOPWORDS,
    compact_whitespace,
    normalize,
    query_terms,
    stem,
    token_set,
    tokens,
)


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
    assert query_terms("") == []
    assert query_terms(None, ["", "the", "!!"]) == []


def test_passport_query_terms() -> None:
    assert query_terms("I need the passport for travel") == ["need", "passport", "travel"]


def test_hyphenated_words_yield_whole_and_parts() -> None:
    assert tokens("multi-agent") == ["multi-agent", "multi", "agent"]
    assert tokens("snake_case_name") == ["snake_case_name", stem("snake"), stem("case"), stem("name")]
    assert tokens("-x") == []
    assert tokens("--leading-dash--") == ["leading-dash", "lead", "dash"]


def test_cjk_runs_become_bigrams() -> None:
    assert tokens("我喜欢喝绿茶") == ["我喜", "喜欢", "欢喝", "喝绿", "绿茶"]
    assert "绿茶" in token_set("我喜欢喝绿茶")
    assert tokens("茶") == ["茶"]
    assert tokens("カタカナ") == ["カタ", "タカ", "カナ"]
    assert tokens("한국어") == ["한국", "국어"]


def test_other_scripts_are_words() -> None:
    assert tokens("Ελληνικά κείμενα") == ["ελληνικά", "κείμενα"]
    assert tokens("привет мир") == ["привет", "мир"]
    assert tokens("हिन्दी") == ["हिन्दी"]  # combining marks stay inside the word


def test_mixed_latin_and_cjk_word_splits() -> None:
    assert tokens("abc绿茶") == ["abc", "绿茶"]


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


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_tokens_are_letters_marks_digits_and_joiners_only(text: str) -> None:
    for tok in tokens(text):
        assert tok and tok[0] not in "-_" and tok[-1] not in "-_"
        for ch in tok:
            assert ch in "-_" or unicodedata.category(ch)[0] in "LMN", (tok, ch)


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
    assert all(t not in STOPWORDS for t in terms)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(categories=("Lu", "Ll")), min_size=1, max_size=12))
def test_case_does_not_matter(word: str) -> None:
    # Letters whose upper case folds elsewhere (Turkish dotless i) are a known limit of casefolding.
    assume(word.upper().casefold() == word.casefold() == word.lower().casefold())
    assert query_terms(word.upper()) == query_terms(word.lower()) == query_terms(word)

"""Canonical tokens, stores and texts (reference §1.4–1.5)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from meta_memory.ledger.normalise import (
    DEFAULT_STORE,
    SUPPORTED_STORES,
    WHITESPACE,
    canonical_store,
    canonical_text,
    canonical_token,
)


def test_supported_stores_in_reference_order() -> None:
    assert SUPPORTED_STORES == ("knowledge_graph", "vector", "timeline", "todo", "top_of_mind")
    assert DEFAULT_STORE == "knowledge_graph"


def test_token_trims_and_lowercases_ascii_only() -> None:
    assert canonical_token("  Identity:OPS \t") == "identity:ops"
    assert canonical_token("ÉTÉ Straße") == "ÉtÉ straße"
    assert canonical_token("   ") is None
    assert canonical_token("") is None
    assert canonical_token(None) is None
    # U+001C is not Unicode White_Space: it stays.
    assert canonical_token("\x1cA") == "\x1ca"
    assert canonical_token("\u3000Vector\u00a0") == "vector"


def test_store_must_be_supported() -> None:
    assert canonical_store(" TOP_OF_MIND ") == "top_of_mind"
    assert canonical_store("graph") is None
    assert canonical_store(" ") is None


def test_text_keeps_case() -> None:
    assert canonical_text("  Production deploys NEED approval. ") == "Production deploys NEED approval."
    assert canonical_text(" \n ") is None


@given(st.text())
def test_token_is_idempotent_and_changes_only_ascii_case_and_edges(value: str) -> None:
    token = canonical_token(value)
    if token is None:
        assert value.strip(WHITESPACE) == ""
        return
    assert canonical_token(token) == token
    assert token == token.strip(WHITESPACE)
    assert not any("A" <= ch <= "Z" for ch in token)
    core = value.strip(WHITESPACE)
    assert len(token) == len(core)
    for original, canon in zip(core, token, strict=True):
        assert canon == (original.lower() if "A" <= original <= "Z" else original)


@given(st.sampled_from(SUPPORTED_STORES), st.text(alphabet=" \t\n"), st.text(alphabet=" \t\n"), st.data())
def test_any_casing_of_a_supported_store_is_accepted(store: str, left: str, right: str, data: st.DataObject) -> None:
    flips = data.draw(st.lists(st.booleans(), min_size=len(store), max_size=len(store)))
    mixed = "".join(ch.upper() if flip else ch for ch, flip in zip(store, flips, strict=True))
    assert canonical_store(left + mixed + right) == store


@given(st.text())
def test_store_is_supported_or_none(value: str) -> None:
    assert canonical_store(value) in (*SUPPORTED_STORES, None)

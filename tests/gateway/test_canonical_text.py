"""Canonically equal text is one record, and invisible characters inside a word do not hide it from recall,
through the SDK and a real gateway on SQLite and PostgreSQL.

- ``"Café"`` typed with a precomposed ``é`` (NFC) and with ``e`` + U+0301 (NFD) render alike: the second write
  is the first record (``created`` false, the same id), whichever form came first, in a single remember, in
  a batch and after an update; the record keeps the text as first written.
- A zero-width space, a soft hyphen, a word joiner or a BOM inside ``passport`` leaves the word ``passport``
  to recall, on the stored side and on the query side; bidirectional controls still separate words.
"""

from __future__ import annotations

import itertools
import unicodedata
from collections.abc import Iterator

import pytest

from contract.pgsupport import dsn_with_schema, require_postgres, throwaway_schema
from meta_memory import Meta
from meta_memory.sdk.agent import Agent
from meta_memory.sdk.handle import MetaHandle
from support import module_gateway

NFC_TITLE, NFC_BODY = "Café", "Lunch at the Café Noël with Zoë"
NFD_TITLE, NFD_BODY = (unicodedata.normalize("NFD", t) for t in (NFC_TITLE, NFC_BODY))


_AGENTS = itertools.count(1)


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def meta(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MetaHandle]:
    """The SDK connected to one gateway of each backend, shared by the module's tests (each as its own agent)."""
    if request.param == "sqlite":
        for gw in module_gateway(tmp_path_factory, "canon-sqlite"):
            with Meta.connect(gw.url) as handle:
                yield handle
        return
    require_postgres()
    with throwaway_schema() as schema:
        for gw in module_gateway(tmp_path_factory, "canon-postgres",
                                 f'[agent_memory]\nstore = "postgres"\ndsn = "{dsn_with_schema(schema)}"\n'):
            with Meta.connect(gw.url) as handle:
                yield handle


@pytest.fixture
def agent(meta: MetaHandle) -> Agent:
    """The SDK's agent handle of an identity no other test of the module writes as (``agent:canon<n>``)."""
    return meta.agent(f"agent:canon{next(_AGENTS)}")


@pytest.mark.parametrize("first", ["nfc", "nfd"])
def test_a_canonically_equal_remember_is_the_same_record(agent: Agent, first: str) -> None:
    assert NFD_TITLE != NFC_TITLE and len(NFD_BODY) == len(NFC_BODY) + 3  # other code points, the same text
    forms = [(NFC_TITLE, NFC_BODY), (NFD_TITLE, NFD_BODY)]
    if first == "nfd":
        forms.reverse()
    one = agent.remember(*forms[0])
    two = agent.remember(*forms[1])
    assert one.created and not two.created
    assert two.memory_id == one.memory_id
    assert (two.title, two.body) == forms[0]  # the record as first written
    listed = list(agent.iter_records())
    assert [r.memory_id for r in listed] == [one.memory_id]
    assert (listed[0].title, listed[0].body) == forms[0]


def test_a_batch_holding_both_forms_makes_one_record(agent: Agent) -> None:
    stored = agent.remember("Note", "the Zoë file").memory_id
    result = agent.remember_batch([
        {"title": NFC_TITLE, "body": NFC_BODY},
        {"title": NFD_TITLE, "body": NFD_BODY},
        {"title": "Note", "body": unicodedata.normalize("NFD", "the Zoë file")},
    ])
    first, second, third = result.results
    assert first.created and not second.created and second.memory_id == first.memory_id
    assert not third.created and third.memory_id == stored
    assert (result.created, result.existing) == (1, 2)
    assert len(list(agent.iter_records())) == 2


def test_an_update_to_decomposed_text_is_found_by_the_composed_form(agent: Agent) -> None:
    old = agent.remember("Note", "draft").memory_id
    updated = agent.update(old, title=NFD_TITLE, body=NFD_BODY)
    again = agent.remember(NFC_TITLE, NFC_BODY)
    assert not again.created and again.memory_id == updated.memory_id


@pytest.mark.parametrize("hidden", ["\u200b", "\u00ad", "\u2060", "\ufeff", "\u200d", "\u200c", "\u034f"])
def test_an_invisible_character_inside_a_word_does_not_hide_it(agent: Agent, hidden: str) -> None:
    agent.remember("Travel", f"pass{hidden}port in the drawer")
    agent.remember("Other", "keys on the hook")
    found = agent.recall("where is my passport")
    assert [r.body for r in found] == [f"pass{hidden}port in the drawer"]
    # the query side too: the same character inside the query's word
    assert [r.body for r in agent.recall(f"my pass{hidden}port")] == [found[0].body]


def test_a_bidirectional_control_still_separates_words(agent: Agent) -> None:
    agent.remember("Names", "pass\u2067port\u2069 office")  # an isolate: where two directions' runs meet
    agent.remember("Names", "pass\u200bport office")
    assert [r.body for r in agent.recall("passport")] == ["pass\u200bport office"]
    assert len(agent.recall("office")) == 2

"""Any text and its decomposed form (NFD) are one record: the second remember returns the first record,
whichever form came first (a property over generated text, on the SQLite store)."""

from __future__ import annotations

import itertools
import tempfile
import unicodedata
from pathlib import Path

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import ManualClock
from meta_memory.errors import AgentMemoryError

# letters of any script with the marks NFD splits off (and some that compose), digits, spaces, punctuation
_TEXT = st.text(alphabet=st.characters(categories=("L", "Mn", "Nd", "Zs", "P"), exclude_characters="\ufe0e\ufe0f"),
                min_size=1, max_size=40)
_identities = itertools.count()


@settings(max_examples=60, deadline=None)
@given(_TEXT, _TEXT, st.booleans())
def test_a_text_and_its_decomposed_form_are_one_record(title: str, body: str, decomposed_first: bool) -> None:
    forms = [(unicodedata.normalize(f, title), unicodedata.normalize(f, body)) for f in ("NFC", "NFD")]
    if decomposed_first:
        forms.reverse()
    identity = f"agent:canon-{next(_identities)}"
    with tempfile.TemporaryDirectory() as tmp, SqliteAgentMemoryStore(Path(tmp), ManualClock(1_760_000_000_000)) \
            as store:
        try:
            first, created = record_writes.remember(store, "r", identity, *forms[0])
        except AgentMemoryError:
            assume(False)  # not a record (an empty title, a field over its cap...)
            return
        assert created
        again, created = record_writes.remember(store, "r", identity, *forms[1])
        assert not created and again.memory_id == first.memory_id
        assert (again.title, again.body) == (first.title, first.body)  # kept as first written

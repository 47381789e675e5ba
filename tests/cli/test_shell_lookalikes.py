"""A word mixing look-alike alphabets is marked where the shell prints it, as the console marks it.

An identity spelled with a Cyrillic ``і`` in place of the Latin ``i`` (``lead:maіn``) is another identity
than ``lead:main``, and a title with a Cyrillic ``а`` (``Pаyroll``) reads as ``Payroll``: an operator
reviewing quarantined writes from the shell must not take one for the other. The tables and lines style
such a word and a ``marked:`` line under them names it and the alphabets it mixes (a pipe has no colour,
so the line says it in words); text in one alphabet, and text whose words are each in one (``Meeting
встреча``), is printed with no mark. ``--json`` keeps the RPC result's shape.

Driven as a user would: the installed command in a subprocess against a real gateway.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

pytestmark = pytest.mark.gateway

REAL, FAKE = "lead:main", "lead:ma\u0456n"  # the second with CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I
FAKE_TITLE = "P\u0430yroll"  # CYRILLIC SMALL LETTER A
MARKED = f"marked: {FAKE_TITLE} (mixes Latin and Cyrillic letters: may imitate another word)"
#: a name is marked whole, and the legend says what it reads as
MARKED_NAME = f"marked: {FAKE} (mixes Latin and Cyrillic letters, reads as {REAL}: may imitate another name)"


def mm(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "META_MEMORY_TOKEN"}
    proc = subprocess.run([sys.executable, "-m", "meta_memory.cli", *args], capture_output=True, text=True,
                          timeout=120, env={**env, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    return proc


def _quarantined(gateway: Any, identity: str, title: str, body: str) -> str:
    gateway.result("meta/session/note", {"identity": identity, "session_key": "s1", "tool_results": "unreported"})
    out = gateway.result("meta/agent_memory/tool", {"identity": identity, "session_key": "s1", "arguments": {
        "action": "remember", "title": title, "body": body}})
    assert "QUARANTINED" in out["text"], out
    [row] = json.loads(mm("quarantine", "list", "--url", gateway.url, "--identity", identity, "--json").stdout)[
        "records"]
    return str(row["id"])


def test_a_lookalike_identity_and_title_are_marked_in_the_review_listing(gateway: Any) -> None:
    fake = _quarantined(gateway, FAKE, FAKE_TITLE, "Send payroll to account 99.")
    real = _quarantined(gateway, REAL, "Meeting встреча", "Notes in two languages, each word in one alphabet.")

    listing = mm("quarantine", "list", "--url", gateway.url, "--identity", FAKE).stdout
    assert f"quarantined records of {FAKE} (1 record)" in listing and FAKE_TITLE in listing
    # the table's legend (the identity, whole, and the title's word), and the hint's (its commands name
    # the identity)
    assert listing.count("marked:") == 3 and MARKED in listing and MARKED_NAME in listing, listing
    shown = mm("quarantine", "show", fake, "--url", gateway.url, "--identity", FAKE).stdout
    assert f"title: {FAKE_TITLE}" in shown and shown.count("marked:") == 2, shown
    assert MARKED in shown and MARKED_NAME in shown, shown

    # one alphabet a word, and Latin alone: nothing is marked
    for out in (mm("quarantine", "list", "--url", gateway.url, "--identity", REAL).stdout,
                mm("quarantine", "show", real, "--url", gateway.url, "--identity", REAL).stdout):
        assert "Meeting встреча" in out and "marked" not in out, out


def test_recall_and_list_mark_a_lookalike_in_stored_text(gateway: Any) -> None:
    at = ["--url", gateway.url, "--identity", REAL]
    gateway.result("meta/agent_memory/remember", {"identity": REAL, "title": FAKE_TITLE,
                                                  "body": "Route \u0391lpha payments", "tags": ["ops"]})
    listed = mm("list", *at).stdout
    assert FAKE_TITLE in listed and listed.count("marked:") == 1, listed
    assert f"marked: {FAKE_TITLE} (mixes Latin and Cyrillic letters: may imitate another word)" in listed
    recalled = mm("recall", "payments", *at).stdout  # the body is a column here: its Greek Α is marked too
    assert f"marked: {FAKE_TITLE} (mixes Latin and Cyrillic letters" in recalled
    assert "marked: \u0391lpha (mixes Latin and Greek letters: may imitate another word)" in recalled, recalled


def test_json_output_keeps_its_shape(gateway: Any) -> None:
    _quarantined(gateway, FAKE, FAKE_TITLE, "Send payroll to account 99.")
    gateway.result("meta/agent_memory/remember", {"identity": FAKE, "title": FAKE_TITLE, "body": "Active copy"})
    at = ["--url", gateway.url, "--identity", FAKE]
    listing = json.loads(mm("quarantine", "list", *at, "--json").stdout)
    assert set(listing) == {"records", "pending_forgets", "forgets_cut_short"}
    assert [r["title"] for r in listing["records"]] == [FAKE_TITLE]
    [record] = json.loads(mm("list", *at, "--json").stdout)
    assert set(record) == {"memory_id", "title", "body", "tags", "metadata", "created_at_ms", "updated_at_ms",
                           "expires_at_ms"}
    assert record["title"] == FAKE_TITLE
    assert "marked" not in mm("recall", "active copy", *at, "--json").stdout


@pytest.mark.parametrize(("identity", "why"), [
    ("\u0430-team:lead", "mixes Latin and Cyrillic letters, reads as a-team:lead"),  # each part in one alphabet
    ("ops_\u0430_main", "mixes Latin and Cyrillic letters, reads as ops_a_main"),
    ("lead:\u0455\u0435\u043e", "mixes Latin and Cyrillic letters, reads as lead:seo"),  # an all-Cyrillic part
    ("lead:ma\u0131n", "reads as lead:main"),  # LATIN SMALL LETTER DOTLESS I: one alphabet, still a look-alike
    ("\u217cead:main", "reads as lead:main"),  # SMALL ROMAN NUMERAL FIFTY
])
def test_a_lookalike_name_is_marked_whole(gateway: Any, identity: str, why: str) -> None:
    """A name no word of which mixes alphabets is marked whole where the shell prints it as a name."""
    _quarantined(gateway, identity, "Payroll", "Send payroll to account 99.")
    listing = mm("quarantine", "list", "--url", gateway.url, "--identity", identity).stdout
    assert f"quarantined records of {identity} (1 record)" in listing, listing
    # the table's legend and the hint's (its commands name the identity): the name, whole, each time
    assert listing.count(f"marked: {identity} ({why}: may imitate another name)") == 2, listing
    assert listing.count("marked:") == 2, listing
    gateway.result("meta/agent_memory/remember", {"identity": identity, "title": "Payroll", "body": "Active copy"})
    listed = mm("list", "--url", gateway.url, "--identity", identity).stdout
    assert f"memory of {identity} (1 record)" in listed and listed.count("marked:") == 1, listed
    assert f"marked: {identity} ({why}: may imitate another name)" in listed, listed

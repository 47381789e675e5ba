"""The rule of which names may imitate another (``meta_memory.mixed_script.name_mark``): a name is judged
whole, separators and all, and marked when its letters come from two look-alike alphabets or when it reads
as another, all-ASCII name; the terminal marks it whole and its legend says why; ``serve`` warns of such
names, and of rules that can never apply, in ``[access]``."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.access.config import ACTIONS, parse_access_section
from meta_memory.access.notes import access_warnings
from meta_memory.mixed_script import READS_AS, mixed_script_words, name_mark, reads_as
from meta_memory.terminal import MARK_STYLE, NAME_MARK_STYLE, legend, name_text, printable, text
from meta_memory.textfold import LOOK_ALIKE_LETTERS


@pytest.mark.parametrize(("name", "why"), [
    ("\u0430-team:lead", "mixes Latin and Cyrillic letters, reads as a-team:lead"),
    ("ops_\u0430_main", "mixes Latin and Cyrillic letters, reads as ops_a_main"),
    ("lead:\u0455\u0435\u043e", "mixes Latin and Cyrillic letters, reads as lead:seo"),
    ("\u0455\u0435\u043e", "reads as seo"),  # all Cyrillic, nothing to mix with
    ("\u0421\u041e\u0420", "reads as COP"),  # capitals read as capitals
    ("lead:m\u2c9fin", "mixes Latin and Coptic letters, reads as lead:moin"),
    ("lead:ma\ua4f2n", "mixes Latin and Lisu letters, reads as lead:main"),
    ("lead:ma\u0131n", "reads as lead:main"),  # Latin dotless i
    ("lead:ma\u026an", "reads as lead:main"),  # Latin small capital I
    ("\u217cead:main", "reads as lead:main"),  # small Roman numeral fifty
    ("lead:\uff4d\uff41\uff49\uff4e", "reads as lead:main"),  # fullwidth
    ("agent:\u0438\u0432\u0430\u043d", "mixes Latin and Cyrillic letters"),  # a Cyrillic name beside a Latin one
])
def test_a_name_that_may_imitate_another_is_marked_and_says_why(name: str, why: str) -> None:
    assert name_mark(name) == why
    assert mixed_script_words(name) == [] or "-" not in name  # the word rule alone misses the separated ones


@pytest.mark.parametrize("name", ["lead:main", "\u0438\u0432\u0430\u043d", "\u5f20\u4e09:lead",
                                  "jos\u00e9:main", "\u65e5\u672c", "\u0391\u03b8\u03b7\u03bd\u03ac"])
def test_a_name_in_one_alphabet_that_reads_as_no_ascii_name_is_not_marked(name: str) -> None:
    """ASCII; all-Cyrillic ``иван`` (its reading keeps Cyrillic letters); Han beside Latin (Han is not a
    look-alike alphabet); an accented Latin letter; all-Greek ``Αθηνά``."""
    assert name_mark(name) is None


_SEPARATORS = st.sampled_from(list(":_-./@"))
_LOOKALIKES = sorted(c for c in LOOK_ALIKE_LETTERS if not c.isascii())


@settings(max_examples=300)
@given(st.lists(st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789"), min_size=1, max_size=6),
                min_size=1, max_size=4), _SEPARATORS, st.data())
def test_one_lookalike_letter_anywhere_in_an_ascii_name_marks_it_and_reads_back(
        parts: list[str], sep: str, data: st.DataObject) -> None:
    real = sep.join(parts)
    assert name_mark(real) is None and reads_as(real) is None
    at = data.draw(st.integers(0, len(real) - 1))
    char = data.draw(st.sampled_from(_LOOKALIKES))
    fake = real[:at] + char + real[at + 1:]
    why = name_mark(fake)
    assert why is not None
    shown = READS_AS[char]
    assert reads_as(unicodedata.normalize("NFC", fake)) in (real[:at] + shown + real[at + 1:], None)
    assert why.endswith(f"reads as {real[:at] + shown + real[at + 1:]}")


@given(st.text(max_size=24))
def test_a_name_mark_adds_no_character_and_covers_the_whole_name(value: str) -> None:
    shown = name_text(value)
    assert shown.plain == printable(value)
    marked = [(s.start, s.end) for s in shown.spans if s.style == NAME_MARK_STYLE]
    assert marked == ([(0, len(shown.plain))] if name_mark(value) is not None and shown.plain else [])
    assert not any(s.style == MARK_STYLE for s in shown.spans if marked)


def test_the_legend_names_a_marked_name_and_what_it_reads_as() -> None:
    fake = "\u0430-team:lead"
    line = text(f"quarantined records of {fake}: P\u0430yroll", names=(fake, "default"))
    note = legend(line)
    assert note is not None and note.plain.splitlines() == [
        f"marked: {fake} (mixes Latin and Cyrillic letters, reads as a-team:lead: may imitate another name)",
        "marked: P\u0430yroll (mixes Latin and Cyrillic letters: may imitate another word)"]
    assert legend(text("records of lead:main", names=("lead:main",))) is None


def _access(rules: str) -> object:
    import tomllib

    return parse_access_section(tomllib.loads("[access]\nenabled = true\n" + rules)["access"])


@pytest.mark.parametrize("action", ["ledger.read", "ledger.write", "operator.status", "operator.backup"])
@pytest.mark.parametrize("on", ['{ realm = "*" }', '{ identity = "lead:main" }', '{ mob = "ops" }'])
def test_a_scoped_grant_of_an_unscoped_action_is_warned_of(action: str, on: str) -> None:
    [warning] = access_warnings(_access(  # type: ignore[arg-type]
        f'[[access.grants]]\naction = "{action}"\nwho = {{ anyone = true }}\non = {on}\n'))
    assert warning.startswith(f"access.grants[0] ({action} on ") and "can never apply" in warning


def test_rules_that_apply_are_not_warned_of() -> None:
    rules = "".join(f'[[access.grants]]\naction = "{a}"\nwho = {{ anyone = true }}\n' for a in sorted(ACTIONS))
    rules += "".join(f'[[access.grants]]\naction = "{a}"\nwho = {{ anyone = true }}\non = {{ realm = "hr" }}\n'
                     for a in sorted(ACTIONS - {"ledger.read", "ledger.write", "operator.status", "operator.backup"}))
    # a scoped deny of a copy still closes the copies it could match
    rules += '[[access.denies]]\naction = "operator.backup"\nwho = { anyone = true }\non = { realm = "hr" }\n'
    assert access_warnings(_access(rules)) == []  # type: ignore[arg-type]
    assert access_warnings(None) == []


def test_a_scoped_deny_of_an_unscoped_action_and_lookalike_names_are_warned_of() -> None:
    warnings = access_warnings(_access(  # type: ignore[arg-type]
        '[[access.grants]]\naction = "agent.memory.read"\nwho = { anyone = true }\non = { identity = "lead:ma\u0456n" }\n'
        '[[access.denies]]\naction = "ledger.read"\nwho = { anyone = true }\non = { realm = "hr" }\n'
        '[[access.roster]]\nidentity = "\u0455\u0435\u043e:bot"\nrealm = "hr"\n'))
    assert warnings == [
        "access.grants[0] (agent.memory.read on identity \"lead:ma\u0456n\") names identity 'lead:ma\u0456n', which "
        "mixes Latin and Cyrillic letters, reads as lead:main: it may imitate another name, and the rule applies "
        "to this one only (see docs/security.md, \"Names\")",
        "access.denies[0] (ledger.read on realm \"hr\") can never apply: ledger.read is judged unscoped only, so a "
        "deny with 'on' closes nothing (drop 'on' to make it unscoped, or drop the rule; see docs/access.md)",
        "access.roster[0] names identity '\u0455\u0435\u043e:bot', which mixes Latin and Cyrillic letters, reads "
        "as seo:bot: it may imitate another name (see docs/security.md, \"Names\")",
    ]

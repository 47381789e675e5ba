from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory import secrets as secrets_module
from meta_memory.agent_memory.secrets import SECRET_CLASSES, scan, scan_text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("found AKIAIOSFODNN7EXAMPLE in the logs", "aws-access-key-id"),
        ("ASIAIOSFODNN7EXAMPLE", "aws-access-key-id"),
        ("xAKIAIOSFODNN7EXAMPLE", "aws-access-key-id"),  # a distinctive prefix glued to a word
        ("AKIAIOSFODNN7EXAMPLEX", None),  # a longer upper-case run (base64) is not a key id
        ("akiaiosfodnn7example", None),
        ("key=AKIAIOSFODNN7EXAMPLE.", "aws-access-key-id"),
        ("token ghp_" + "a1" * 18 + " here", "github-token"),
        ("ghp_" + "a" * 35, None),
        ("xghp_" + "a" * 36, "github-token"),
        ("github_pat_" + "A_1" * 8, "github-token"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIE...", "private-key"),
        ("-----BEGIN CERTIFICATE-----", None),
        ('api_key = "zXy1aB2cD3eF4gH5iJ6k"', "credential-assignment"),
        ("API-KEY: zXy1aB2cD3eF4gH5iJ6k", "credential-assignment"),
        ("client_secret='abcdefghijklmnop9'", "credential-assignment"),
        ("x-auth-token=abcdefghijklmnop9", "credential-assignment"),
        ("api_key = your-api-key-goes-here", None),
        ("api_key = abc123", None),
        ("myapi_key = zXy1aB2cD3eF4gH5iJ6k", "credential-assignment"),  # any *_key name with a generated value
        ("myapikey = zXy1aB2cD3eF4gH5iJ6k", None),  # glued letters: not a key name
        ("OPENAI_API_KEY=zXy1aB2cD3eF4gH5iJ6k", "credential-assignment"),
        ("the api key is somewhere safe", None),
    ],
)
def test_secret_classes(text: str, expected: str | None) -> None:
    assert scan_text(text) == expected


def test_first_match_wins_in_field_order() -> None:
    aws = "AKIAIOSFODNN7EXAMPLE"
    pk = "-----BEGIN PRIVATE KEY-----"
    assert scan("title " + pk, "", "body " + aws, ()) == "private-key"
    assert scan("t", "d", "b", ("fine", "api_key=zXy1aB2cD3eF4gH5iJ6k")) == "credential-assignment"
    # Within one field, the class order decides.
    assert scan("t", "", f"{pk} and {aws}", ()) == "aws-access-key-id"
    assert scan("plain title", "plain", "plain body", ("tag",)) is None


_words = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)


@settings(deadline=None)  # the first non-ASCII text builds the folding table (a few hundred ms)
@given(_words, _words)
def test_aws_key_is_found_between_separators(before: str, after: str) -> None:
    text = f"{before} AKIAIOSFODNN7EXAMPLE {after}"
    assert scan_text(text) is not None


@given(st.text(max_size=300))
def test_scan_never_crashes(text: str) -> None:
    assert scan_text(text) in (None, *SECRET_CLASSES)


# --------------------------------------------------------------------------- the scanner's shortcuts

_TRIGGER_WORDS = sorted({t for rule in secrets_module._RULES for t in rule.triggers})
_fragments = st.one_of(st.sampled_from(_TRIGGER_WORDS), st.sampled_from(["=", ": ", "'", '"', " ", "_", "-", "."]),
                       st.text(alphabet="abcXYZ019+/=_-. :", max_size=30))


@settings(deadline=None, max_examples=300)
@given(st.lists(_fragments, max_size=12).map("".join))
def test_the_trigger_prefilter_changes_no_answer(text: str) -> None:
    assert secrets_module._find(text) == secrets_module._find(text, prefilter=False)


_prose_fragments = st.one_of(_fragments, st.sampled_from(["The ", "Again ", "I ", "notes.", "\n", "PRIVATE KEY-----"]),
                             st.text(max_size=12))


@settings(deadline=None, max_examples=500)
@given(st.lists(_prose_fragments, max_size=12).map("".join))
def test_the_gated_trigger_search_changes_no_answer(text: str) -> None:
    """Triggers searched only where a character of theirs occurs answer as every trigger searched."""
    lowered = secrets_module._lower_keeping_offsets(text)
    every = any(t in text for t in secrets_module._CASED_TRIGGERS) or any(
        t in lowered for t in secrets_module._LOWER_TRIGGERS)
    assert secrets_module._has_trigger(text) == every


def _scan_parts_unfiltered(parts: list[str]) -> str | None:
    """The parts scan without any shortcut: each part, then every run of consecutive parts joined (a
    part's tail, the parts between, the last part's head), every rule tried."""
    window = secrets_module._SEAM_WINDOW
    normalised = [secrets_module.normalise_for_scan(p) for p in parts if p]
    normalised = [p for p in normalised if p]
    for part in normalised:
        if (found := secrets_module._find(part, prefilter=False)) is not None:
            return found
    span = secrets_module._SPAN_PARTS
    for a in range(len(normalised) - 1):
        for b in range(a + 1, min(len(normalised), a + 1 + span)):
            middle = "".join(normalised[a + 1 : b])
            if len(middle) > window:
                break
            head = normalised[a][-(window if b == a + 1 else secrets_module._SPAN_HEAD):]
            joined = head + middle + normalised[b][:window]
            if (found := secrets_module._find(joined, seam=len(head), prefilter=False)) is not None:
                return found
        else:
            if a + 1 + span < len(normalised):
                head = normalised[a][-window:]
                joined = head + "".join(normalised[a + 1 :])[:window]
                if (found := secrets_module._find(joined, seam=len(head), prefilter=False)) is not None:
                    return found
    return None


@settings(deadline=None, max_examples=300)
@given(st.lists(st.lists(_fragments, max_size=6).map("".join), min_size=1, max_size=12))
def test_the_join_prefilter_changes_no_answer(parts: list[str]) -> None:
    """One trigger search over the joined parts answers a clean record; a trigger split across parts
    (``AK`` + ``IA...``) is in the join too."""
    assert secrets_module._scan_parts(parts) == _scan_parts_unfiltered(parts)


def _scan_unfiltered(title: str, description: str, body: str, tags: list[str]) -> str | None:
    """:func:`scan` with every shortcut off: the parts scan unfiltered, then again with the tags upper-cased."""
    found = _scan_parts_unfiltered([title, description, body, *tags])
    if found is None and tags:
        found = _scan_parts_unfiltered([title, description, body, *(t.upper() for t in tags)])
    return found


_tag_fragments = st.one_of(st.sampled_from([t.lower() for t in _TRIGGER_WORDS]), st.sampled_from(["-", "_", "."]),
                           st.text(alphabet="abciaz019-_.", max_size=12))


@settings(deadline=None, max_examples=300)
@given(st.lists(_fragments, max_size=6).map("".join), st.lists(_fragments, max_size=8).map("".join),
       st.lists(st.lists(_tag_fragments, max_size=4).map("".join), max_size=5))
def test_the_upper_cased_tags_pass_changes_no_answer(title: str, body: str, tags: list[str]) -> None:
    """The second pass (tags upper-cased, so a lower-cased key id ``akia...`` is still found) searches only
    the tags and the characters just before them for a trigger when the first pass's join held none: the
    answer is the unfiltered scan's, a trigger split between the body and the first tag included."""
    assert scan(title, "", body, tags) == _scan_unfiltered(title, "", body, tags)


def test_a_lower_cased_key_id_in_a_tag_or_across_the_body_and_a_tag_is_found() -> None:
    assert scan("notes", "", "nothing here", ("akiaiosfodnn7example",)) == "aws-access-key-id"
    assert scan("notes", "", "see AK", ("iaiosfodnn7example",)) == "aws-access-key-id"


def test_a_secret_split_across_title_and_body_is_found() -> None:
    assert scan("notes AK", "", "IAIOSFODNN7EXAMPLE here", ()) == "aws-access-key-id"
    assert scan("gh", "", "p_" + "a1" * 18, ()) == "github-token"


def test_a_remembered_clean_record_does_not_hide_a_changed_one() -> None:
    assert scan("Deploy notes", "", "rotate the keys on friday", ("ops",)) is None
    assert scan("Deploy notes", "", "rotate the keys on friday", ("ops",)) is None
    assert scan("Deploy notes", "", "rotate the keys on friday AKIAIOSFODNN7EXAMPLE", ("ops",)) == "aws-access-key-id"
    assert scan("Deploy notes", "", "rotate the keys on friday", ("AKIAIOSFODNN7EXAMPLE",)) == "aws-access-key-id"
    # the same fields moved between title and body are another record
    assert scan("Deploy notesrotate", "", " the keys on friday", ("ops",)) is None


def test_a_secret_is_refused_every_time_it_is_scanned() -> None:
    for _ in range(3):
        assert scan("t", "", "token: ghp_" + "a" * 36, ()) == "github-token"


@pytest.mark.parametrize("sep", ["\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\u3164", "\uffa0", "\u2800"])
def test_a_secret_whose_words_a_separating_control_splits_is_found(sep: str) -> None:
    """The renderers show a vertical tab, a form feed, a separator, a next line or a blank filler (a Hangul
    filler, the braille blank) as a space; the scan reads them so too, so the model is never shown a secret the scan would have refused in its spaced form."""
    for spaced in ("mysql -u root -pS3cretPass99", "GRANT ALL ON db.* TO app IDENTIFIED BY 'S3cretPass99'"):
        assert scan_text(spaced) is not None
        assert scan_text(spaced.replace(" ", sep)) == scan_text(spaced), repr(sep)

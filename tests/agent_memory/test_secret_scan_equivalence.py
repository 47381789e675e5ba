"""The metadata scan's faster rule selection and number pairing find exactly what the slower path found."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory import secrets as secrets_module
from meta_memory.agent_memory.secrets import json_strings, scan, scan_values


def _reference_find(text: str, seam: int | None = None, *, prefilter: bool = True) -> str | None:
    """The rule loop as it was: every rule's triggers tested one rule at a time."""
    lowered = secrets_module._lower_keeping_offsets(text)
    if prefilter and not secrets_module._has_trigger(text, lowered):
        return None
    for rule in secrets_module._RULES:
        haystack = lowered if rule.lower else text
        if not any(t in haystack for t in rule.triggers):
            continue
        matches = (secrets_module._anchored(rule, haystack, seam) if rule.anchored
                   else rule.pattern.finditer(haystack))
        for match in matches:
            if seam is not None and not match.start() < seam < match.end():
                continue
            if rule.verify is None or rule.verify(match):
                return rule.name
    return None


def _reference_scan_parts(parts: list[str], alone: range | None = None, seams_before: int | None = None) -> str | None:
    """Every window across the seams tried with every rule, as it was (``seams_before`` ignored: every
    seam is looked across from)."""
    m = secrets_module
    normalised = [m.normalise_for_scan(p) for p in parts]
    if not m._has_trigger("".join(normalised)):
        return None
    for index in alone if alone is not None else range(len(normalised)):
        if normalised[index]:
            found = _reference_find(normalised[index])
            if found is not None:
                return found
    kept = [p for p in normalised if p]
    for a in range(len(kept) - 1):
        middle = ""
        for b in range(a + 1, min(len(kept), a + 1 + m._SPAN_PARTS)):
            head = kept[a][-(m._SEAM_WINDOW if b == a + 1 else m._SPAN_HEAD):]
            found = _reference_find(head + middle + kept[b][: m._SEAM_WINDOW], seam=len(head))
            if found is not None:
                return found
            middle += kept[b]
            if len(middle) > m._SEAM_WINDOW:
                break
        else:
            if a + 1 + m._SPAN_PARTS < len(kept):
                head = kept[a][-m._SEAM_WINDOW:]
                found = _reference_find(head + "".join(kept[a + 1 :])[: m._SEAM_WINDOW], seam=len(head))
                if found is not None:
                    return found
    return None


def _reference_scalars_under(value: Any, found: dict[str, None], depth: int = 0) -> None:
    """Every scalar written by ``json.dumps``, as it was."""
    if len(found) >= secrets_module.MAX_PAIRED_VALUES or isinstance(value, bool):
        return
    if isinstance(value, (str, int, float)):
        found[json.dumps(value, ensure_ascii=False)] = None
    elif depth < secrets_module.PAIR_DEPTH:
        items = value.values() if isinstance(value, Mapping) else value if isinstance(value, (list, tuple)) else ()
        for item in items:
            _reference_scalars_under(item, found, depth + 1)


_WORDS = ["token", "akia", "iosfodnn7example", "ghp_", "aKIA", "api_key", "password", "pass", "secret", "sk-", "AKIA", "ghp_", "eyJ", "xoxb-", "Bearer ",
          "://", "@", "=", ":", '"', " ", "_", "-", ".", "hunter2x", "IOSFODNN7EXAMPLE", "0123456789abcdef",
          "Ab1", "x", "Z9", "\u200b", "ｓｋ-", "ＡＫＩＡ"]
_TEXT = st.lists(st.sampled_from(_WORDS), max_size=6).map("".join)
_SCALAR = st.one_of(_TEXT, st.integers(-10**20, 10**20), st.floats(allow_nan=False), st.booleans(), st.none())
_METADATA = st.dictionaries(
    _TEXT,
    st.recursive(_SCALAR, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
                 max_leaves=12),
    max_size=8,
)


def _both(value: dict[str, Any], tags: tuple[str, ...] = ()) -> tuple[object, object]:
    secrets_module._clean_memo.clear()
    fast = (scan_values({"metadata": value, "fact": "note"}), scan("t", "", "b", tags, json_strings(value)))
    secrets_module._clean_memo.clear()
    with mock.patch.object(secrets_module, "_scan_parts", _reference_scan_parts), \
            mock.patch.object(secrets_module, "_scalars_under", _reference_scalars_under):
        slow = (scan_values({"metadata": value, "fact": "note"}), scan("t", "", "b", tags, json_strings(value)))
    secrets_module._clean_memo.clear()
    return fast, slow


@settings(max_examples=300, deadline=None)
@given(_METADATA, st.lists(_TEXT, max_size=3).map(tuple))
def test_the_metadata_scan_finds_exactly_what_the_reference_path_found(
    value: dict[str, Any], tags: tuple[str, ...]
) -> None:
    fast, slow = _both(value, tags)
    assert fast == slow


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80), st.integers(min_value=0, max_value=80))
def test_the_rule_selection_finds_exactly_what_the_rule_loop_found(text: str, seam: int) -> None:
    text = secrets_module.normalise_for_scan(text + "token=Ab1Ab1Ab1Ab1Ab1Ab1" if seam % 3 == 0 else text)
    assert secrets_module._find(text) == _reference_find(text)
    assert secrets_module._find(text, seam=seam) == _reference_find(text, seam=seam)


def test_the_adversarial_metadata_finds_what_it_did() -> None:
    many = {f"token_{i}": f"v{i}" for i in range(120)}
    nested = {"secret": {"token": {"api_key": list(range(1600))}}}
    assert _both(many) == ((None, None), (None, None))
    assert _both(many, ("notes", "akia")) == ((None, None), (None, None))
    assert _both(nested) == ((None, None), (None, None))
    planted = {**many, "api_token": "Ab1" * 8}
    fast, slow = _both(planted)
    assert fast == slow and fast[1] is not None
    assert re.fullmatch(r"[a-z-]+", fast[1])


_FRAGMENTS = ["api", "_", "key", "tok", "en", "=", ":", '"', " ", "pass", "word", "AK", "IA", "IOSFODNN7",
              "EXAMPLE", "Ab1Ab1Ab1", "Ab1Ab1Ab1Ab1", "gh", "p_", "x" * 40, "sk-", "ant-", "://u:p", "@h",
              "eyJhbGciOi", ".", "eyJzdWIiOi", "sig", "v1", "\n", "hunter2x", "xoxb-", "1234567890"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_FRAGMENTS), max_size=3).map("".join), min_size=2, max_size=24))
def test_a_secret_split_across_many_parts_is_found_as_before(parts: list[str]) -> None:
    assert secrets_module._scan_parts(parts) == _reference_scan_parts(parts)


def test_a_key_split_across_the_last_tag_and_the_metadata_is_still_found() -> None:
    # the tag is stored lower-cased: only its upper-cased pass joins it to the key id's rest
    for tags in (("akia",), ("notes", "akia"), ("x", "y", "akia")):
        fast, slow = _both({"IOSFODNN7EXAMPLE": "note"}, tags)
        assert fast == slow
        assert fast[1] == "aws-access-key-id"

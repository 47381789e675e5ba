"""The rules on a backup's ``dest`` as written (no ``..``, lengths a file system takes, no character that
hides or reorders what the name shows), checked before the disk is read: every path holding a ``..``
component is refused, every plain one within the limits passes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from meta_memory.limits import MAX_FILE_NAME_BYTES
from meta_memory.storage.backup import MAX_DEST_NAME_BYTES, BackupError, check_dest_text
from meta_memory.textfold import is_invisible

_component = st.text(st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs", "Cc")), min_size=1,
                     max_size=40).filter(lambda c: c not in (".", "..") and not any(map(is_invisible, c)))


@given(st.lists(_component, max_size=5), st.lists(_component, max_size=5), st.sampled_from(["", "/"]))
def test_any_dot_dot_component_is_refused(before: list[str], after: list[str], trailing: str) -> None:
    dest = "/" + "/".join([*before, "..", *after]) + trailing
    with pytest.raises(BackupError) as refused:
        check_dest_text(dest)
    assert refused.value.field == "dest" and "'..'" in refused.value.rule


@given(st.lists(_component, min_size=1, max_size=8))
def test_a_plain_path_within_the_limits_passes(parts: list[str]) -> None:
    check_dest_text("/" + "/".join(parts))


@pytest.mark.parametrize(("dest", "rule"), [
    ("/b/" + "a" * (MAX_FILE_NAME_BYTES + 1) + "/c", "longer than 255 bytes"),
    ("/b/" + "a" * (MAX_DEST_NAME_BYTES + 1), "at most 237 bytes"),
    ("/b/" + "a" * (MAX_DEST_NAME_BYTES + 1) + "/", "at most 237 bytes"),
    ("/" + "/".join(["d" * 200] * 21), "at most 4095 bytes"),
    ("/b/x\x00y", "NUL"),
    ("/b/\u202eevil", "direction-changing characters (U+202E"),
    ("/b/\u2066x\u2069/c", "direction-changing characters (U+2066"),
    ("/b/ok\u200b", "invisible"),
    ("/b/line\nbreak", "control"),
    ("/b/c1\x85", "control"),
])
def test_lengths_are_refused_naming_the_rule(dest: str, rule: str) -> None:
    with pytest.raises(BackupError) as refused:
        check_dest_text(dest)
    assert rule in refused.value.rule and refused.value.field == "dest"
    check_dest_text("/b/" + "a" * MAX_DEST_NAME_BYTES)  # the longest name accepted

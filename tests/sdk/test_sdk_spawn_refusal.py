"""``Meta.spawn`` on a state directory the child gateway cannot open says why, in the exception."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from meta_memory import Meta
from meta_memory.errors import MetaError

pytestmark = pytest.mark.gateway


def test_a_held_state_directory_is_named_in_the_error(gateway: Any) -> None:
    handle = Meta.spawn(gateway.state_dir)
    try:
        with pytest.raises(MetaError) as refused:
            handle.agent("lead:main").recall("anything")
    finally:
        handle.close()
    message = str(refused.value)
    assert message.startswith("stdio gateway exited (code 1): the state directory")
    assert "is already in use by another meta-memory runtime" in message


def test_a_file_given_as_state_directory_is_named_in_the_error(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    handle = Meta.spawn(not_a_dir)
    try:
        with pytest.raises(MetaError, match=r"stdio gateway exited \(code 2\): .*is a file"):
            handle.agent("lead:main").remember("t", "b")
    finally:
        handle.close()


def test_a_working_spawn_still_answers_and_closes(tmp_path: Path) -> None:
    with Meta.spawn(tmp_path / "state") as handle:
        assert handle.agent("lead:main").remember("Plant", "Water the fern.").created is True

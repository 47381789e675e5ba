"""An embedded handle on a state directory that cannot be one is refused as the builder documents
(``ConfigError`` / ``StartupError`` naming the path), never with a bare ``OSError``. Before, a path
naming a file, or a directory whose ``agent-memory`` is a file, raised ``FileExistsError`` /
``NotADirectoryError`` from deep inside the runtime, and ``persistent_state(None)`` a ``TypeError``."""

from __future__ import annotations

from pathlib import Path

import pytest

from meta_memory import Meta
from meta_memory.errors import ConfigError, StartupError


def test_a_state_dir_that_is_a_file_is_refused_naming_it(tmp_path: Path) -> None:
    afile = tmp_path / "notes.txt"
    afile.write_text("not a directory")
    with pytest.raises(StartupError) as refused:
        Meta.builder().persistent_state(afile).build()
    assert not isinstance(refused.value, OSError)
    assert "persistent_state" in str(refused.value) and str(afile) in str(refused.value)
    assert "not a directory" in str(refused.value)

    with pytest.raises(StartupError) as below:
        Meta.builder().persistent_state(afile / "state").build_async()
    assert str(afile / "state") in str(below.value)


def test_a_state_dir_whose_parts_are_files_is_refused_naming_the_file(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "agent-memory").write_text("")
    with pytest.raises(StartupError) as refused:
        Meta.builder().persistent_state(state).build()
    assert "cannot start" in str(refused.value) and "agent-memory" in str(refused.value)


def test_persistent_state_of_no_path_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="persistent_state: must be a path"):
        Meta.builder().persistent_state(None)  # type: ignore[arg-type]


def test_a_directory_held_by_an_unclosed_handle_of_this_process_says_so(tmp_path: Path) -> None:
    """A notebook cell run twice builds a second handle while the first is still open: the refusal says
    the holder is this very process and how to let go, not only "another meta-memory runtime"."""
    first = Meta.builder().persistent_state(tmp_path / "s").build()
    try:
        with pytest.raises(StartupError) as refused:
            Meta.builder().persistent_state(tmp_path / "s").build()
        said = str(refused.value)
        assert "this process" in said and "close()" in said and "with" in said, said
    finally:
        first.close()
    Meta.builder().persistent_state(tmp_path / "s").build().close()  # closed: free again

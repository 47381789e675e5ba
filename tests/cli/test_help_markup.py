"""Every command's ``--help`` is plain text: no reStructuredText markup (double or single backticks)
from the docstrings it is drawn from reaches the terminal."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from meta_memory.cli import main


def _every_command() -> list[list[str]]:
    found: list[list[str]] = [[]]

    def _subcommands(group: click.Group) -> list[tuple[str, click.Command]]:
        with click.Context(group) as ctx:  # as --help lists them: a lazily loaded command included
            found = [(name, group.get_command(ctx, name)) for name in group.list_commands(ctx)]
        return [(name, command) for name, command in found if command is not None]

    def walk(group: click.Group, path: list[str]) -> None:
        for name, command in _subcommands(group):
            found.append([*path, name])
            if isinstance(command, click.Group):
                walk(command, [*path, name])

    walk(main, [])
    return found


def test_the_walk_finds_the_commands_whose_help_held_markup() -> None:
    names = {" ".join(c) for c in _every_command()}
    assert {"", "import", "remember", "list", "erase", "doctor", "backup", "mcp", "token hash"} <= names, names


@pytest.mark.parametrize("command", _every_command(), ids=lambda c: " ".join(c) or "meta-memory")
def test_help_holds_no_backticks(command: list[str]) -> None:
    for width in (80, 400):  # the command list truncates summaries, so read them whole too
        result = CliRunner().invoke(main, [*command, "--help"], terminal_width=width)
        assert result.exit_code == 0, result.output
        marked = [line for line in result.output.splitlines() if "`" in line]
        assert not marked, marked

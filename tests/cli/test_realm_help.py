"""Every command's ``--realm`` help names the default that applies: the serving runtime's configured
``[agent_memory] realm``, never a fixed "default"."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from meta_memory.cli import main


def _commands_with_realm() -> list[list[str]]:
    found: list[list[str]] = []

    def _subcommands(group: click.Group) -> list[tuple[str, click.Command]]:
        with click.Context(group) as ctx:  # as --help lists them: a lazily loaded command included
            found = [(name, group.get_command(ctx, name)) for name in group.list_commands(ctx)]
        return [(name, command) for name, command in found if command is not None]

    def walk(group: click.Group, path: list[str]) -> None:
        for name, command in _subcommands(group):
            if isinstance(command, click.Group):
                walk(command, [*path, name])
            elif any("--realm" in getattr(p, "opts", ()) for p in command.params):
                found.append([*path, name])

    walk(main, [])
    return found


def test_the_commands_naming_a_realm_are_found() -> None:
    names = {" ".join(c) for c in _commands_with_realm()}
    assert {"remember", "recall", "forget", "list", "mcp", "replay", "import"} <= names, names


@pytest.mark.parametrize("command", [c for c in _commands_with_realm() if c != ["export"]], ids=" ".join)
def test_realm_help_names_the_configured_realm(command: list[str]) -> None:
    result = CliRunner().invoke(main, [*command, "--help"], terminal_width=400)
    assert result.exit_code == 0, result.output
    line = " ".join(result.output.split()).split("--realm TEXT", 1)[1].split(").", 1)[0]
    assert "[agent_memory] realm" in line and 'default: "default"' not in line, line

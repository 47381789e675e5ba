"""The README's Commands table names every command of ``meta-memory --help``, and every option it shows
for a command is one the command takes: a reader of the table finds each command there, and no option
the table shows is refused as unknown."""

from __future__ import annotations

import re
from pathlib import Path

import click

from meta_memory.cli import main

README = Path(__file__).resolve().parents[2] / "README.md"


def _rows() -> dict[str, str]:
    """``{command name: the row's usage cell}`` of the Commands table (``quarantine``, ``token``: a group's row)."""
    table = README.read_text(encoding="utf-8").split("## Commands", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in table.splitlines():
        found = re.match(r"\| `meta-memory ([a-z-]+)((?:\\\||[^|])*)\|", line)  # a cell's \| is no border
        if found:
            rows.setdefault(found.group(1), "")
            rows[found.group(1)] += found.group(2)
    return rows


def _options(command: click.Command) -> set[str]:
    if isinstance(command, click.Group):
        return {o for sub in command.commands.values() for o in _options(sub)}
    return {o for p in command.params for o in getattr(p, "opts", ()) + getattr(p, "secondary_opts", ())}


def test_every_command_has_a_row_and_every_option_shown_exists() -> None:
    rows = _rows()
    assert isinstance(main, click.Group)
    assert sorted(set(main.commands) - set(rows)) == []
    for name, usage in rows.items():
        shown = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])\b", usage))
        assert shown - _options(main.commands[name]) == set(), (name, usage)

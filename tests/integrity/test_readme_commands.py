"""The README's Commands table names every command of ``meta-memory --help``, and every option it shows
for a command is one the command takes: a reader of the table finds each command there, and no option
the table shows is refused as unknown."""

from __future__ import annotations

import json
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


def _subcommands(group: click.Group) -> dict[str, click.Command]:
    """``{name: command}`` of ``group`` as ``--help`` lists them (a lazily loaded command included)."""
    with click.Context(group) as ctx:
        found = {name: group.get_command(ctx, name) for name in group.list_commands(ctx)}
    return {name: command for name, command in found.items() if command is not None}


def _options(command: click.Command) -> set[str]:
    if isinstance(command, click.Group):
        return {o for sub in _subcommands(command).values() for o in _options(sub)}
    return {o for p in command.params for o in getattr(p, "opts", ()) + getattr(p, "secondary_opts", ())}


def test_every_command_has_a_row_and_every_option_shown_exists() -> None:
    rows = _rows()
    assert isinstance(main, click.Group)
    commands = _subcommands(main)
    assert sorted(set(commands) - set(rows)) == []
    for name, usage in rows.items():
        shown = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])\b", usage))
        assert shown - _options(commands[name]) == set(), (name, usage)


def _leaves(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    out: list[tuple[str, click.Command]] = []
    for name, command in _subcommands(group).items():
        if isinstance(command, click.Group):
            out += _leaves(command, f"{prefix}{name} ")
        else:
            out.append((prefix + name, command))
    return out


def test_every_option_a_commands_help_names_is_one_it_takes() -> None:
    """A command's help text points only at options it has: ``replay --help`` spoke of ``--state-dir``,
    which replay does not take (a shared option's help written for the commands that open a state directory)."""
    assert isinstance(main, click.Group)
    leaves = _leaves(main)
    for name, command in leaves:
        with click.Context(command, info_name=f"meta-memory {name}") as ctx:
            text = " ".join(command.get_help(ctx).split()).replace("- ", "-")  # words the help wrapped at a hyphen
        for found in re.finditer(r"(?<![\w-])(--[a-z][a-z0-9-]*)\b", text):
            option = found.group(1)
            if option == "--help" or option in _options(command):
                continue
            # another command's option, named right after that command ("'discard --content-hash'")
            before = text[max(0, found.start() - 12):found.start()]
            assert any(other.split()[-1] in before and option in _options(cmd) for other, cmd in leaves), (name, option)


#: The options a memory command's ``[…]`` stands for (the ``remember`` row spells them out).
_SHARED = {"--realm", "--url", "--token", "--state-dir", "--config", "--json"}


def test_every_option_a_command_takes_is_in_its_row() -> None:
    """A reader of the table alone finds every option: the ``export`` row left out ``--url``/``--token``,
    so a user of a live gateway ran it on the gateway's state directory and was refused as busy. An option
    counts as shown under any of its names (``-o`` for ``--output``); ``[…]`` stands for the options the
    ``remember`` row spells out."""
    rows = _rows()
    assert isinstance(main, click.Group)
    commands = _subcommands(main)
    shared = _SHARED & set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)\b", rows["remember"]))
    assert shared == _SHARED
    missing: dict[str, list[str]] = {}
    for name, usage in rows.items():
        shown = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])\b", usage))
        if "[…]" in usage:
            shown |= _SHARED
        cmds = _subcommands(commands[name]).values() if isinstance(commands[name], click.Group) else [commands[name]]
        for command in cmds:
            for param in command.params:
                names = set(getattr(param, "opts", ())) | set(getattr(param, "secondary_opts", ()))
                if isinstance(param, click.Option) and not param.hidden and "--help" not in names \
                        and not names & shown:
                    missing.setdefault(name, []).append(sorted(names)[-1])
    assert missing == {}


def test_the_export_rows_move_to_another_installation_runs_as_printed_and_verifies(tmp_path: Path) -> None:
    """The export row's example of moving memory to another installation, run as printed (``OLD`` and ``NEW``
    the two state directories): it exits 0 and the import says the file verified, nothing downgraded."""
    import os
    import shlex
    import subprocess
    import sys

    [row] = [line for line in README.read_text(encoding="utf-8").splitlines() if line.startswith("| `meta-memory export ")]
    [example] = [span for span in re.findall(r"`([^`]*)`", row) if "meta-memory import" in span]
    cli = f"{shlex.quote(sys.executable)} -m meta_memory.cli"
    old, new = tmp_path / "old", tmp_path / "new"
    seeded = subprocess.run([sys.executable, "-m", "meta_memory.cli", "remember", "moved", "a record to move",
                             "--identity", "lead:main", "--state-dir", str(old)], capture_output=True, text=True,
                            timeout=120)
    assert seeded.returncode == 0, seeded.stderr
    command = re.sub(r"\bOLD\b", shlex.quote(str(old)), re.sub(r"\bNEW\b", shlex.quote(str(new)), example))
    command = command.replace("meta-memory ", cli + " ")
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ})
    assert done.returncode == 0, (example, done.stdout, done.stderr)
    said = done.stdout + done.stderr
    assert "file verified" in said and "0 downgraded" in said, said
    listed = subprocess.run([sys.executable, "-m", "meta_memory.cli", "list", "--identity", "lead:main",
                             "--state-dir", str(new), "--json"], capture_output=True, text=True, timeout=120)
    assert [r["title"] for r in json.loads(listed.stdout)] == ["moved"], listed.stderr

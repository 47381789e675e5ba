"""The ``token`` group is imported when named, not at start-up: a command other than ``token`` (``--version``,
any memory command) does not import the access configuration and its pydantic models, yet ``--help`` lists
``token`` with its summary and ``token hash`` runs as before."""

from __future__ import annotations

import subprocess
import sys

import click
from click.testing import CliRunner

from meta_memory.access.config import hash_token
from meta_memory.cli import main


def _modules_after(args: list[str]) -> set[str]:
    """The ``meta_memory.access`` modules imported once ``meta-memory ARGS`` ran (in a fresh interpreter)."""
    probe = ("import sys\nfrom meta_memory.cli import main\n"
             "try:\n    main(sys.argv[1:], prog_name='meta-memory')\nexcept SystemExit:\n    pass\n"
             "print('MODULES:', *sorted(m for m in sys.modules if m.startswith('meta_memory.access')))")
    done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, check=True,
                          timeout=60)
    last = done.stdout.splitlines()[-1].split()
    assert last[:1] == ["MODULES:"], done.stdout
    return set(last[1:])


def test_a_command_other_than_token_does_not_import_it() -> None:
    imported = _modules_after(["--version"])
    assert not imported & {"meta_memory.access.cli", "meta_memory.access.config"}, imported


def test_naming_token_imports_it() -> None:
    assert "meta_memory.access.cli" in _modules_after(["token", "--help"])


def test_help_lists_token_with_its_summary() -> None:
    result = CliRunner().invoke(main, ["--help"], terminal_width=400)
    assert result.exit_code == 0, result.output
    assert "  token " in result.output and "Bearer tokens for the gateway and console." in result.output
    with click.Context(main) as ctx:
        assert isinstance(main, click.Group) and "token" in main.list_commands(ctx)
        token = main.get_command(ctx, "token")
    assert isinstance(token, click.Group) and token.name == "token" and "hash" in token.commands


def test_token_hash_runs() -> None:
    result = CliRunner().invoke(main, ["token", "hash"], input="s3cret-token\n")
    assert result.exit_code == 0, result.output
    assert result.output.strip() == hash_token("s3cret-token")


def test_an_unknown_command_is_still_refused() -> None:
    result = CliRunner().invoke(main, ["tokens"])
    assert result.exit_code == 2 and "No such command 'tokens'" in result.output, result.output

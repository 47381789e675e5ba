"""``meta-memory token hash``: print the SHA-256 digest to put in ``[[access.tokens]]``.

The token is read from standard input (one line; the trailing newline is
dropped) or, on a terminal, from a hidden prompt — never from the command line,
where it would land in shell history and process listings. ``--new`` mints a
random token first and prints both (the token once, to keep; the digest for
the config file).
"""

from __future__ import annotations

import secrets
import sys
from typing import TextIO

import click

from .config import hash_token

__all__ = ["token_group", "token_hash_command", "hash_from_stream"]


def hash_from_stream(stream: TextIO) -> str:
    """Read one token line from ``stream`` and return its digest.

    Raises ``click.UsageError`` for an empty or whitespace-bearing token.
    """
    line = stream.readline()
    token = line[:-1] if line.endswith("\n") else line
    token = token[:-1] if token.endswith("\r") else token
    try:
        return hash_token(token)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


@click.command("hash")
@click.option("--new", "mint", is_flag=True, help="Mint a random token and print it with its digest.")
def token_hash_command(mint: bool) -> None:
    """Print the sha256 digest of a bearer token for [[access.tokens]] (token read from stdin)."""
    if mint:
        token = secrets.token_urlsafe(32)
        click.echo(f"token:  {token}")
        click.echo(f"sha256: {hash_token(token)}")
        return
    if sys.stdin.isatty():
        token = click.prompt("token", hide_input=True)
        try:
            click.echo(hash_token(token))
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
        return
    click.echo(hash_from_stream(sys.stdin))


@click.group("token")
def token_group() -> None:
    """Bearer tokens for the gateway and console."""


token_group.add_command(token_hash_command)

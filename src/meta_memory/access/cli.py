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


#: The most of stdin read for one token (a bearer token is far shorter): more is refused, never cut.
MAX_TOKEN_INPUT_CHARS = 64 * 1024


def hash_from_stream(stream: TextIO) -> str:
    """Read one token from ``stream`` (the whole input: one line, a single trailing newline, LF or CRLF,
    allowed; a leading byte-order mark, as some editors and shells write one, is skipped: no token holds one)
    and return its digest.

    Raises ``click.UsageError`` for an empty or whitespace-bearing token, and for input of more than one
    line or over :data:`MAX_TOKEN_INPUT_CHARS` characters (reading only the first line would hash a
    token other than the one piped in, silently).
    """
    text = stream.read(MAX_TOKEN_INPUT_CHARS + 1)
    if len(text) > MAX_TOKEN_INPUT_CHARS:
        raise click.UsageError(f"stdin must hold one token (at most {MAX_TOKEN_INPUT_CHARS} characters)")
    text = text.removeprefix("\ufeff")
    token = text[:-1] if text.endswith("\n") else text
    token = token[:-1] if token.endswith("\r") else token
    if "\n" in token or "\r" in token:
        raise click.UsageError("stdin must hold one token on one line (a single trailing newline allowed); "
                               "it holds more than one line")
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
        click.echo(f"token: {token}")
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

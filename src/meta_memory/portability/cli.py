"""``meta-memory export`` and ``meta-memory import`` (see :mod:`meta_memory.portability`).

Both run on a state directory (and the ``--config`` that names its stores, e.g. PostgreSQL) with no
gateway holding it: the state-directory lock refuses a second runtime. A ``rich`` progress bar goes
to stderr on long runs; the summary goes to stdout (JSON with ``--json``). Exit codes: 0 success,
1 a refusal (damaged file, refused record, busy state directory), 2 a usage error.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from ..terminal import one_line

__all__ = ["register"]

_state = click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path), default=".meta/state",
                      show_default=True, help="State directory (no gateway may be running on it).")
_config = click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
                       help="TOML configuration naming the stores (e.g. agent_memory.store = \"postgres\").")


@contextmanager
def _progress(enabled: bool, label: str, total: int | None) -> Iterator[Any]:
    if not enabled:
        yield lambda n: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)


def _private_output(path: Path) -> Any:
    """The export file, created (or truncated) owner-only (``0600``) whatever the umask: it holds every memory."""
    import os

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "w", encoding="utf-8")


def _runtime(state_dir: Path, config_path: Path | None) -> Any:
    from ..cli import build_runtime
    from ..errors import StartupError

    try:
        return build_runtime(state_dir, config_path, one_shot=True)
    except StartupError as exc:
        click.echo(one_line(f"meta-memory: {exc}"), err=True)
        sys.exit(1)


@click.command("export")
@_state
@_config
@click.option("--realm", default=None, help="Only this realm (default: every realm).")
@click.option("--identity", default=None, help="Only this identity's records (implies --no-ledger).")
@click.option("--ledger/--no-ledger", default=None, help="Include the assertion ledger (default: unless filtered).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write here (default: stdout).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def export_command(state_dir: Path, config_path: Path | None, realm: str | None, identity: str | None,
                   ledger: bool | None, output: Path | None, quiet: bool) -> None:
    """Export memory as JSON Lines: records (every status, with provenance and links) and the ledger."""
    from .exporter import export_jsonl

    include_ledger = ledger if ledger is not None else (realm is None and identity is None)
    if not state_dir.is_dir():  # an export never creates the state it is asked to read
        click.echo(f"meta-memory: no state directory at {state_dir.resolve()} (pass --state-dir)", err=True)
        sys.exit(1)
    runtime = _runtime(state_dir, config_path)
    try:
        out = _private_output(output) if output is not None else sys.stdout
        try:
            with _progress(not quiet and output is not None, "exporting records", None) as advance:
                summary = export_jsonl(runtime, out, realm=realm, identity=identity, ledger=include_ledger,
                                       progress=advance)
        finally:
            if output is not None:
                out.close()
    except ValueError as exc:
        click.echo(one_line(f"meta-memory: {exc}"), err=True)
        sys.exit(1)
    finally:
        runtime.close()
    if output is not None:
        realms = ", ".join(f"{r}: {n}" for r, n in summary.records.items()) or "no realms"
        click.echo(one_line(f"exported {_count(summary.total_records, 'record')} ({realms}), "
                            f"{_count(summary.assertions, 'assertion')}, {_count(summary.conflicts, 'conflict signal')} "
                            f"to {output}"))


@click.command("import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path, allow_dash=True))
@_state
@_config
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def import_command(path: Path, state_dir: Path, config_path: Path | None, as_json: bool, quiet: bool) -> None:
    """Import an export file (``-`` for stdin) through the validator: idempotent, trust never raised."""
    from ..errors import MetaError
    from .importer import ImportError_, import_jsonl, parse_lines

    lines = sys.stdin.buffer.read().splitlines() if str(path) == "-" else path.read_bytes().splitlines()
    try:  # the first pass, before the state directory is opened (or created): a bad file touches nothing
        parsed = parse_lines(lines)
    except ImportError_ as exc:
        click.echo(one_line(f"meta-memory: import refused: {exc}"), err=True)
        sys.exit(1)
    total = len(parsed.records)
    runtime = _runtime(state_dir, config_path)
    try:
        with _progress(not quiet and total >= 1000, "importing records", total) as advance:
            summary = import_jsonl(runtime, parsed, progress=advance)
    except (ImportError_, MetaError) as exc:
        click.echo(one_line(f"meta-memory: import refused: {exc}"), err=True)
        sys.exit(1)
    finally:
        runtime.close()
    figures = {"created": summary.created, "skipped_present": summary.skipped_present,
               "conflicts": summary.conflicts, "trust_lowered": summary.trust_lowered,
               "assertions": summary.assertions, "assertions_present": summary.assertions_present,
               "conflict_signals": summary.conflict_signals}
    if as_json:
        click.echo(json.dumps(figures, indent=2))
        return
    click.echo(
        f"imported {_count(summary.total_created, 'record')} ({summary.skipped_present} already present, "
        f"{_count(len(summary.conflicts), 'conflicting id')} kept as they were, {summary.trust_lowered} with trust "
        f"lowered), {_count(summary.assertions, 'assertion')} ({summary.assertions_present} already present), "
        f"{_count(summary.conflict_signals, 'conflict signal')}"
    )
    if summary.conflicts:
        click.echo(one_line("conflicting ids (stored with other content, not overwritten): "
                            + ", ".join(summary.conflicts[:20]) + (" …" if len(summary.conflicts) > 20 else "")),
                   err=True)


def _count(n: int, noun: str) -> str:
    """``1 record``, ``2 records``: a count with its noun in the singular or the plural."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def register(group: click.Group) -> None:
    group.add_command(export_command)
    group.add_command(import_command)

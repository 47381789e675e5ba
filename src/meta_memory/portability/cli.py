"""``meta-memory export`` and ``meta-memory import`` (see :mod:`meta_memory.portability`).

Both run on a state directory (and the ``--config`` that names its stores, e.g. PostgreSQL) with no
gateway holding it: the state-directory lock refuses a second runtime. ``export --url`` asks a
running gateway instead (``meta/storage/export``, the ``operator.backup`` grant) and writes the same
lines, page by page, signed with that gateway's installation key. An export is signed with the
installation's export key (or ``--key-file``'s); an import trusts a file only when it verifies under
one of those keys, and otherwise lands it no more trusted than a fresh write (:mod:`.policy`). A
``rich`` progress bar goes to stderr on long runs; the summary goes to stdout (JSON with ``--json``),
naming every downgraded and refused line. Under ``--key-file``, and for a file that says it is signed
with this installation's own key, the file must verify: one that does not is refused whole (nothing
written) unless ``--accept-unverified``. Exit codes: 0 success, 1 a refusal (damaged file, including one
that does not verify under the ``--key-file`` given or the installation key it names; a refused record or
line — the rest landed —, an unreadable key file, busy state directory), 2 a usage error. Under ``--json`` a
refusal (exit 1) is also one ``{"error": {code, message, data: {kind, ...}}}`` object on stdout, as every
command's (:func:`meta_memory.shell.refuse`).

``import --from mem0 PATH`` and ``import --from langgraph SOURCE`` read another memory system instead
(:mod:`.foreign`, :mod:`.from_mem0`, :mod:`.from_langgraph`; ``docs/migration.md``): the source is read
and checked before the state directory is opened, ``--dry-run`` writes nothing, and the report names
every skipped, conflicting and refused line of the source.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import click
from click.core import ParameterSource

from ..limits import MAX_TTL_S
from ..shell import (
    STATE_DIR_PATH,
    gateway_url_option,
    local_error,
    meta_error,
    no_state_dir,
    not_both,
    realm_option,
    refuse,
    token_hint,
    token_option,
    unreachable,
)
from ..terminal import one_line

#: Up to this many noted lines, an import names each; past it, it counts them by reason (``--verbose``: each).
LISTED_LINES = 10
#: The line numbers a reason's count shows.
FIRST_LINES = 5
_QUOTED = re.compile(r"'[^']*'")

__all__ = ["register"]

_state = click.option("--state-dir", type=STATE_DIR_PATH, default=".meta/state",
                      show_default=True, help="State directory (no gateway may be running on it).")
_config = click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
                       help="TOML configuration naming the stores (e.g. agent_memory.store = \"postgres\").")


@contextmanager
def _progress(enabled: bool, label: str, total: int | None) -> Iterator[Any]:
    """A transient progress bar on stderr, drawn only when stderr is a terminal: off a terminal (a pipe, a log
    file) rich would still end the bar with a bare newline, so nothing is drawn and nothing is written."""
    from rich.console import Console

    console = Console(stderr=True)
    if not enabled or not console.is_terminal:
        yield lambda n: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)


def _refuse_existing(path: Path) -> NoReturn:
    """Refuse an export ``-o`` path that exists (file, link or anything else) without ``--force``: exit 1."""
    click.echo(one_line(f"meta-memory: refusing to overwrite {path} (-o/--output): it already exists, and an "
                        "export never replaces a file unless --force is given; name a new path, or pass "
                        "--force to replace it"), err=True)
    sys.exit(1)


def _private_output(path: Path, *, force: bool) -> Any:
    """The export file, created (or with ``force``, truncated) owner-only (``0600``) whatever the umask: it
    holds every memory.

    Without ``force`` an existing path (file, link or anything else) is refused, as ``backup`` refuses an
    existing destination: nothing is opened, truncated or written. With ``force`` an existing path is
    written only when it is a regular file of this user, checked on the opened file before anything is
    truncated or written: a FIFO, a device, or a file another user planted where the export goes (``/tmp``)
    is theirs to read whatever mode is set. Refused with one line and exit 1."""
    import errno

    flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | (0 if force else os.O_EXCL)
    try:
        # O_NONBLOCK: a FIFO nobody reads fails at once (ENXIO) instead of waiting for its planter
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if exc.errno == errno.EEXIST:
            _refuse_existing(path)
        click.echo(one_line(f"meta-memory: cannot write the export to {path}: {exc.strerror}"), err=True)
        sys.exit(1)
    try:
        _refuse_not_ours(path, os.fstat(fd))
    except SystemExit:
        os.close(fd)
        raise
    os.set_blocking(fd, True)
    os.ftruncate(fd, 0)
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "w", encoding="utf-8")


def _refuse_not_ours(path: Path, info: os.stat_result) -> None:
    """The one rule of an existing export destination (``info``: its ``fstat`` once opened, or its ``lstat``
    before a ``--force`` export is staged beside it): a regular file of this user, else one line on stderr
    naming the problem and exit 1 (a FIFO, a device or a symbolic link, or a file another user planted)."""
    import stat

    problem = None
    if not stat.S_ISREG(info.st_mode):
        problem = "it is not a regular file (a FIFO or a device would hand every memory to whoever reads it)"
    elif hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        problem = f"it belongs to another user (uid {info.st_uid}), who could read every memory whatever its mode"
    if problem is not None:
        click.echo(one_line(f"meta-memory: refusing to write the export to {path}: {problem}; "
                            "remove it or name a new path"), err=True)
        sys.exit(1)


def _runtime(state_dir: Path, config_path: Path | None) -> Any:
    from ..cli import build_runtime
    from ..errors import StartupError

    try:
        return build_runtime(state_dir, config_path, one_shot=True)
    except StartupError as exc:
        refuse(str(exc), local_error("startup", " ".join(str(exc).split())))


def _open_output(path: Path, *, force: bool) -> tuple[Any, Path]:
    """The export file to write and the path it is written at. A new path is written in place
    (:func:`_private_output`). With ``force``, an existing path is checked as :func:`_private_output` checks
    it (a regular file of this user, else refused, exit 1) and left as it is while the export is written
    beside it under a hidden name (``.<name>.partial-<8 hex>``): :func:`_finish_output` renames it over
    the path on success and :func:`_drop_output` removes it on a refusal, so a refused ``--force`` export
    (an unknown realm, an unreachable gateway) never destroys the file it was to replace."""
    import secrets

    if not (force and os.path.lexists(path)):
        return _private_output(path, force=force), path
    _refuse_not_ours(path, os.lstat(path))
    staged = path.with_name(f".{path.name}.partial-{secrets.token_hex(4)}")
    return _private_output(staged, force=False), staged


def _finish_output(written: Path, path: Path) -> None:
    """Put a complete export written at ``written`` (:func:`_open_output`) at ``path``."""
    if written != path:
        os.replace(written, path)


def _drop_output(written: Path) -> None:
    """Remove what a refused export wrote (a new file, or the staged copy beside the file it was to replace)."""
    written.unlink(missing_ok=True)


def _output_path(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """Click callback of ``export -o``: ``None`` (stdout) for ``-``, as ``import -`` reads stdin, never a
    file named ``-``."""
    return None if value is not None and str(value) == "-" else value


_key_file = click.option("--key-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
                         help="Export key file: export signs with it (created owner-only when missing); import "
                              "also trusts files it signed. Default: this installation's key.")


@click.command("export")
@_state
@_config
@click.option("--realm", default=None, help="Only this realm (default: every realm).")
@click.option("--identity", default=None, help="Only this identity's records (implies --no-ledger).")
@click.option("--ledger/--no-ledger", default=None, help="Include the assertion ledger (default: unless filtered).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              callback=_output_path,
              help="Write here, a new file (default, or '-': stdout); an existing one is refused unless --force.")
@click.option("--force", is_flag=True, help="Replace an existing --output file.")
@_key_file
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--url", default=None, callback=gateway_url_option,
              help="Export from the running gateway at this URL instead of a state directory.")
@click.option("--token", envvar="META_MEMORY_TOKEN", show_envvar=True, default=None, callback=token_option,
              help="Bearer token holding operator.backup, for --url (prefer the environment variable).")
def export_command(state_dir: Path, config_path: Path | None, realm: str | None, identity: str | None,
                   ledger: bool | None, output: Path | None, force: bool, key_file: Path | None, quiet: bool,
                   url: str | None, token: str | None) -> None:
    """Export memory as JSON Lines: records (every status, with provenance and links) and the ledger, signed."""
    from ..errors import MetaError
    from .exporter import export_jsonl
    from .signing import LineSigner, installation_key
    from .signing import key_file as read_key_file

    if url is not None:
        ctx = click.get_current_context()
        not_both("--url", True, "--state-dir/--config",
                 ctx.get_parameter_source("state_dir") is not ParameterSource.DEFAULT or config_path is not None)
        if key_file is not None:
            raise click.UsageError("--key-file signs a local export; a gateway signs with its own installation key "
                                   "(its state directory's export.key, or the installation_keys table on "
                                   "PostgreSQL): to import the file into another installation as verified, "
                                   "carry that key and name it there with import --key-file")
        _export_remote(url, token, realm, identity, ledger, output, quiet, force)
        return
    include_ledger = ledger if ledger is not None else (realm is None and identity is None)
    if not state_dir.is_dir():  # an export never creates the state it is asked to read
        click.echo(one_line(f"meta-memory: {no_state_dir(state_dir)}"), err=True)
        sys.exit(1)
    if output is not None and not force and os.path.lexists(output):
        _refuse_existing(output)  # before a key is made: an export refused here signs nothing
    runtime = _runtime(state_dir, config_path)
    written: Path | None = None
    try:
        key = read_key_file(key_file, create=True) if key_file is not None else installation_key(runtime, create=True)
        assert key is not None  # created when missing
        out, written = _open_output(output, force=force) if output is not None else (sys.stdout, None)
        try:
            with _progress(not quiet and output is not None, "exporting records", None) as advance:
                summary = export_jsonl(runtime, out, signer=LineSigner(key), realm=realm, identity=identity,
                                       ledger=include_ledger, progress=advance)
        finally:
            if output is not None:
                out.close()
    except (ValueError, MetaError) as exc:  # KeyFileError is a ValueError
        if output is not None and written is not None:
            _drop_output(written)  # a partial export is no export; a file --force was to replace stays
        click.echo(one_line(f"meta-memory: {exc.message if isinstance(exc, MetaError) else exc}"), err=True)
        sys.exit(1)
    finally:
        runtime.close()
    if output is not None and written is not None:
        _finish_output(written, output)
    _warn_skipped(summary.skipped_realms)
    signed = f"signed with {key.where} (key id {key.key_id})"
    if output is not None:
        realms = ", ".join(f"{r}: {n}" for r, n in summary.records.items()) or "no realms"
        click.echo(one_line(f"exported {_count(summary.total_records, 'record')} ({realms}), "
                   f"{_count(summary.assertions, 'assertion')}, {_count(summary.conflicts, 'conflict signal')} "
                   f"to {output}, {signed}"))
    elif not quiet:
        click.echo(f"meta-memory: export {signed}", err=True)


def _export_remote(url: str, token: str | None, realm: str | None, identity: str | None, ledger: bool | None,
                   output: Path | None, quiet: bool, force: bool) -> None:
    """``export --url``: fetch the gateway's export a page at a time into ``output`` (or stdout)."""
    from ..errors import MetaError
    from ..sdk.transport import GatewayUnreachable, HttpTransport

    transport = HttpTransport(url, token=token, timeout_s=120.0)
    out, written = _open_output(output, force=force) if output is not None else (sys.stdout, None)
    records: dict[str, int] = {}
    counts = {"assertion": 0, "conflict": 0}
    skipped: dict[str, str] = {}
    failed: str | None = None
    try:
        with _progress(not quiet and output is not None, "exporting records", None) as advance:
            params: dict[str, Any] = {k: v for k, v in (("realm", realm), ("identity", identity), ("ledger", ledger))
                                      if v is not None}
            while True:
                page = transport.call("meta/storage/export", params)
                for line in page["lines"]:
                    out.write(line + "\n")
                    kind = _line_type(line)
                    if kind[0] == "header":
                        skipped = _skipped_realms(line)
                    elif kind[0] == "record":
                        records[kind[1]] = records.get(kind[1], 0) + 1
                    elif kind[0] in counts:
                        counts[kind[0]] += 1
                advance(len(page["lines"]))
                if page["done"]:
                    break
                params = {"export_id": page["export_id"]}
    except MetaError as exc:
        hint = token_hint(exc, token)
        failed = f"export refused ({exc.kind}): {exc.message}" + (f"; {hint}" if hint else "")
    except GatewayUnreachable as exc:
        failed = unreachable(exc)
    finally:
        transport.close()
        if output is not None:
            out.close()
    if failed is not None:
        if written is not None:
            _drop_output(written)  # a partial export is no export; a file --force was to replace stays
        click.echo(f"meta-memory: {failed}", err=True)
        sys.exit(1)
    if output is not None and written is not None:
        _finish_output(written, output)
    _warn_skipped(skipped)
    if output is not None:
        shown = ", ".join(f"{r}: {n}" for r, n in records.items()) or "no realms"
        click.echo(f"exported {_count(sum(records.values()), 'record')} ({shown}), "
                   f"{_count(counts['assertion'], 'assertion')}, {_count(counts['conflict'], 'conflict signal')} "
                   f"to {output}")


def _warn_skipped(skipped: dict[str, str]) -> None:
    """One line on stderr per realm an identity's export left out (``{realm: reason}``)."""
    for realm, reason in skipped.items():
        click.echo(one_line(f"meta-memory: warning: realm '{realm}' could not be read ({reason}) and is not in "
                            "the export; run `meta-memory doctor`, then export it again"), err=True)


def _skipped_realms(line: str) -> dict[str, str]:
    """``{realm: reason}`` of a header line's ``skipped_realms`` (empty when it has none)."""
    try:
        entries = json.loads(line).get("skipped_realms") or []
    except (ValueError, AttributeError):
        return {}
    return {str(e.get("realm")): str(e.get("reason")) for e in entries if isinstance(e, dict)}


def _line_type(line: str) -> tuple[str, str]:
    """``(type, realm)`` of an export line (``("", "")`` when it is not an object)."""
    try:
        obj = json.loads(line)
    except ValueError:
        return "", ""
    if not isinstance(obj, dict):
        return "", ""
    return str(obj.get("type", "")), str(obj.get("realm", ""))


_EXPORT_PATH = click.Path(exists=True, dir_okay=False, path_type=Path, allow_dash=True)


@click.command("import")
@click.argument("source", metavar="PATH")
@click.option("--from", "system", type=click.Choice(["meta-memory", "mem0", "langgraph"]), default="meta-memory",
              show_default=True, help="What PATH is: a meta-memory export file, a mem0 installation (its docstore "
                                      "or directory), or a LangGraph SqliteStore file or PostgresStore DSN.")
@_state
@_config
@_key_file
@click.option("--allow-scope", "allow_scopes", multiple=True, metavar="SCOPE",
              help="Let an unverified file write into this shared scope: realm, mob:NAME or operator:NAME (repeatable).")
@click.option("--allow-ledger", is_flag=True, help="Index the ledger lines of an unverified file too.")
@click.option("--accept-unverified", is_flag=True,
              help="Land a file that must verify and does not (under --key-file, or signed with this "
                   "installation's key) as untrusted input (every line downgraded, edited lines quarantined) "
                   "instead of refusing it whole.")
@realm_option("--from mem0|langgraph: the realm to land in")
@click.option("--identity", default=None,
              help="--from mem0|langgraph: the identity every record lands under (langgraph default: langgraph).")
@click.option("--identity-from", type=click.Choice(["user_id", "agent_id", "run_id"]), default=None,
              help="--from mem0: the payload field naming each memory's identity (default user_id).")
@click.option("--identity-segment", type=click.IntRange(min=0), default=None,
              help="--from langgraph: the namespace label naming each item's identity (as MetaMemoryStore's).")
@click.option("--mem0-collection", default="mem0", show_default=True, help="--from mem0: the vector store collection.")
@click.option("--mem0-history", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="--from mem0: the history database (default: history.db beside the docstore).")
@click.option("--dry-run", is_flag=True, help="--from mem0|langgraph: check and report everything, write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON (every noted line).")
@click.option("--verbose", is_flag=True,
              help=f"Name every downgraded, skipped, conflicting or refused line; without it more than "
                   f"{LISTED_LINES} are counted by reason, with the first line numbers of each.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def import_command(source: str, system: str, state_dir: Path, config_path: Path | None, key_file: Path | None,
                   allow_scopes: tuple[str, ...], allow_ledger: bool, accept_unverified: bool, realm: str | None,
                   identity: str | None, identity_from: str | None, identity_segment: int | None, mem0_collection: str,
                   mem0_history: Path | None, dry_run: bool, as_json: bool, verbose: bool, quiet: bool) -> None:
    """Import an export file ("-" for stdin) through the validator: idempotent, trust never raised, and a
    file that does not verify lands no more trusted or visible than a fresh write. With --key-file, or
    when the file says it is signed with this installation's own key, the file must verify (under it or
    this installation's key): one that does not is refused whole, exit 1, nothing written, unless
    --accept-unverified. --from mem0 or --from langgraph imports
    another memory system's records as application writes instead."""
    from ..errors import MetaError
    from .importer import ImportError_, import_jsonl, parse_lines, read_lines, verify
    from .policy import ScopeAllowance
    from .signing import KeyFileError, installation_key
    from .signing import key_file as read_key_file

    ctx = click.get_current_context()
    foreign_only = {"realm": realm, "identity": identity, "identity_from": identity_from,
                    "identity_segment": identity_segment, "mem0_history": mem0_history, "dry_run": dry_run or None}
    if system != "meta-memory":
        if key_file is not None or allow_scopes or allow_ledger or accept_unverified:
            raise click.UsageError("--key-file, --allow-scope, --allow-ledger and --accept-unverified apply to "
                                   "meta-memory export files only")
        _import_foreign(source, system, state_dir, config_path, realm=realm, identity=identity,
                        identity_from=identity_from, identity_segment=identity_segment, collection=mem0_collection,
                        history=mem0_history, dry_run=dry_run, as_json=as_json, verbose=verbose, quiet=quiet)
        return
    given = [name for name, value in foreign_only.items() if value is not None]
    if given:
        raise click.UsageError(f"--{given[0].replace('_', '-')} applies to --from mem0 or --from langgraph only")
    path = _EXPORT_PATH.convert(source, ctx.command.params[0], ctx)
    try:
        allowance = ScopeAllowance.parse(allow_scopes)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--allow-scope") from None
    try:
        named = read_key_file(key_file, create=False) if key_file is not None else None
    except KeyFileError as exc:
        refuse(f"import refused: {exc}")
    try:  # the first pass, before the state directory is opened (or created): a bad file touches nothing
        # read a line at a time: a file (or a line) larger than memory is refused, never read whole
        if str(path) == "-":
            parsed = parse_lines(read_lines(sys.stdin.buffer))
        else:
            with path.open("rb") as stream:
                parsed = parse_lines(read_lines(stream))
    except ImportError_ as exc:
        said = f"import refused: {exc}"
        refuse(said, local_error("refused", said, line=exc.line))
    except OSError as exc:
        refuse(f"import refused: {path}: {exc.strerror or exc}")
    total = len(parsed.records)

    def refuse_unverified(detail: str) -> NoReturn:
        under = f"--key-file {key_file}" if named is not None else "this installation's export key"
        refuse(f"import refused: the file does not verify under {under}: {detail}; nothing was written (pass "
               "--accept-unverified to land it as untrusted input: every line downgraded, edited lines quarantined)")

    verified_first = False
    if named is not None and not accept_unverified and not state_dir.exists():
        # a state directory that does not exist yet holds no installation key: the file must verify under
        # the named key alone, and is checked before the directory is created, so a refused import leaves
        # no empty state behind for a later command to answer from
        checked = verify(parsed, [named])
        if not checked.verified:
            refuse_unverified(checked.detail)
        verified_first = True
    runtime = _runtime(state_dir, config_path)
    try:
        own = installation_key(runtime, create=False)
        keys = [k for k in (own, named) if k is not None]
        # The file must verify when the operator named the key it must carry, or when it says it was signed
        # with this installation's own key: one that does not then is damaged (edited, cut short), not foreign.
        claims_own = own is not None and parsed.header is not None and parsed.header.key_id == own.key_id
        if (named is not None or claims_own) and not accept_unverified and not verified_first:
            checked = verify(parsed, keys)
            if not checked.verified:
                refuse_unverified(checked.detail)
        with _progress(not quiet and total >= 1000, "importing records", total) as advance:
            summary = import_jsonl(runtime, parsed, keys=keys, allow_scopes=allowance, allow_ledger=allow_ledger,
                                   progress=advance)
    except MetaError as exc:
        refuse(f"import refused: {exc.message}", meta_error(exc))
    except ImportError_ as exc:
        said = f"import refused: {exc}"
        refuse(said, local_error("refused", said, line=exc.line))
    except KeyFileError as exc:
        refuse(f"import refused: {exc}")
    finally:
        runtime.close()
    if as_json:
        click.echo(json.dumps(summary.to_json(), indent=2))
    else:
        duplicates = (f"{_count(len(summary.duplicates), 'duplicate')} of active records "
                      f"({sum(d.landed for d in summary.duplicates)} landed tombstoned), " if summary.duplicates else "")
        click.echo(
            f"imported {_count(summary.total_created, 'record')} ({summary.skipped_present} already present, "
            f"{duplicates}{_count(len(summary.conflicts), 'conflicting id')} kept as they were, {len(summary.downgraded)} "
            f"downgraded, {summary.trust_lowered} with trust lowered), "
            f"{_count(summary.assertions, 'assertion')} ({summary.assertions_present} already present), "
            f"{_count(summary.conflict_signals, 'conflict signal')}"
        )
        if summary.verified:
            click.echo(f"file verified: {summary.verification}")
        else:
            click.echo(f"file NOT verified: {summary.verification}; nothing in it was trusted beyond a fresh write "
                       f"({_count(len(summary.downgraded), 'line')} landed downgraded, "
                       f"{len(summary.refused)} refused)")
        _report_lines([("downgraded", note.line, note.memory_id, note.why) for note in summary.downgraded]
                      + [("duplicate", d.line, d.memory_id, d.why) for d in summary.duplicates]
                      + [("refused", note.line, note.memory_id, note.why) for note in summary.refused], verbose)
        if summary.conflicts:
            click.echo(one_line("conflicting ids (stored with other content, not overwritten): "
                                + ", ".join(summary.conflicts[:20]) + (" …" if len(summary.conflicts) > 20 else "")),
                       err=True)
    if summary.refused:
        sys.exit(1)


def _import_foreign(source: str, system: str, state_dir: Path, config_path: Path | None, *, realm: str | None,
                    identity: str | None, identity_from: str | None, identity_segment: int | None, collection: str,
                    history: Path | None, dry_run: bool, as_json: bool, verbose: bool, quiet: bool) -> None:
    """``import --from mem0|langgraph``: read the source (refused whole before the state is opened when it
    cannot be read), land its records through :func:`~.foreign.import_foreign`, print the report."""
    from ..clock import SystemClock
    from ..errors import MetaError
    from ..identity import parse_identity, parse_realm
    from .foreign import ForeignNote, ForeignRecord, ForeignSourceError, ForeignSummary, import_foreign

    if identity is not None:
        try:
            identity = parse_identity(identity)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--identity") from None
    if realm is not None:
        try:
            realm = parse_realm(realm)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--realm") from None
    if system == "mem0" and identity_segment is not None:
        raise click.UsageError("--identity-segment applies to --from langgraph")
    if system == "langgraph" and (identity_from is not None or history is not None):
        raise click.UsageError("--identity-from and --mem0-history apply to --from mem0")
    not_both("--identity", identity is not None, "--identity-from/--identity-segment",
             identity_from is not None or identity_segment is not None)
    now_ms = SystemClock().now_ms()
    skipped: list[ForeignNote] = []
    closer: Any = None
    try:
        entries: Any
        if system == "mem0":
            from .from_mem0 import locate, read_mem0

            where = locate(Path(source), collection=collection, history=history)
            entries, skipped = read_mem0(where, identity=identity, identity_from=identity_from or "user_id",
                                         now_ms=now_ms)
            shown = where.describe()
        else:
            from .from_langgraph import LangGraphSource, read_langgraph

            closer = LangGraphSource(source)
            shown = closer.shown
            entries = read_langgraph(closer, identity=identity or "langgraph", identity_segment=identity_segment,
                                     now_ms=now_ms, skipped=skipped)
    except ForeignSourceError as exc:
        refuse(f"import refused: {exc}")
    # a dry run on a state that does not exist yet reads nothing and creates nothing
    open_state = not dry_run or config_path is not None or state_dir.is_dir()
    runtime = _runtime(state_dir, config_path) if open_state else None
    try:
        feature = runtime.agent_memory if runtime is not None else None
        if runtime is not None and feature is None:
            refuse("import refused: agent memory is disabled in this configuration")
        target = realm or (runtime.default_realm if runtime is not None else "default")
        if runtime is not None:
            try:
                runtime.check_realm(target)
            except MetaError as exc:
                refuse(f"import refused: {exc.message}", meta_error(exc))
        summary = ForeignSummary(system=system, source=shown, realm=target, dry_run=dry_run)
        total = len(entries) if isinstance(entries, list) else None
        with _progress(not quiet and (total is None or total >= 1000), f"importing from {system}", total) as advance:
            import_foreign(feature.store if feature is not None else None,
                           (e for e in entries if isinstance(e, (ForeignRecord, ForeignNote))), summary,
                           max_ttl_s=feature.config.max_ttl_s if feature is not None else MAX_TTL_S,
                           progress=advance)
        summary.skipped[:0] = skipped
    except ForeignSourceError as exc:
        refuse(f"import stopped: {exc} (the batches before it landed; run it again to resume)")
    except MetaError as exc:
        refuse(f"import stopped: {exc.message}", meta_error(exc))
    finally:
        if closer is not None:
            closer.close()
        if runtime is not None:
            runtime.close()
    _report_foreign(summary, as_json, verbose)
    if summary.refused:
        sys.exit(1)


def _report_foreign(summary: Any, as_json: bool, verbose: bool = False) -> None:
    if as_json:
        click.echo(json.dumps(summary.to_json(), indent=2))
        return
    verb = "would import" if summary.dry_run else "imported"
    click.echo(one_line(
        f"{verb} {_count(summary.created, 'record')} from {summary.system} into realm {summary.realm} "
        f"({summary.present} already present, {_count(summary.duplicates, 'duplicate')} of stored records, "
        f"{_count(len(summary.conflicts), 'conflict')} kept as stored, {len(summary.skipped)} skipped, "
        f"{len(summary.refused)} refused) from {summary.source}"))
    if summary.not_carried:
        click.echo(one_line("read but not carried (the record rules refuse them; the records landed without): "
                            + ", ".join(f"{name} of {_count(n, 'record')}" for name, n in summary.not_carried.items())))
    _report_lines([(kind, note.line, note.source_id, note.why)
                   for kind, notes in (("skipped", summary.skipped), ("conflict", summary.conflicts),
                                       ("refused", summary.refused))
                   for note in notes], verbose)



def _report_lines(notes: Iterable[tuple[str, int, str | None, str]], verbose: bool) -> None:
    """An import's noted lines, each ``(kind, line number, record id or None, why)``: one line each with
    ``verbose`` or when there are at most :data:`LISTED_LINES`; else, per kind, the count of lines under each
    reason (a downgrade's changes counted one by one; quoted values, such as ids and authors, folded into
    ``'…'``), most frequent first, with the first :data:`FIRST_LINES` line numbers of each."""
    notes = list(notes)
    if verbose or len(notes) <= LISTED_LINES:
        for kind, line, memory_id, why in notes:
            click.echo(one_line(f"{kind} line {line}" + (f" ({memory_id})" if memory_id else "") + f": {why}"))
        return
    kinds: dict[str, tuple[set[int], dict[str, list[int]]]] = {}
    for kind, line, _memory_id, why in notes:
        lines, reasons = kinds.setdefault(kind, (set(), {}))
        lines.add(line)
        for reason in _QUOTED.sub("'…'", why).split("; ") if kind == "downgraded" else [_QUOTED.sub("'…'", why)]:
            reasons.setdefault(reason, []).append(line)
    for kind, (lines, reasons) in kinds.items():
        click.echo(one_line(f"{kind}: {_count(len(lines), 'line')}, by reason (--verbose names each line):"))
        for reason, at in sorted(reasons.items(), key=lambda item: (-len(item[1]), item[1][0])):
            first = ", ".join(str(n) for n in at[:FIRST_LINES]) + (", …" if len(at) > FIRST_LINES else "")
            click.echo("  " + one_line(f"{_count(len(at), 'line')}: {reason} (line{'s' if len(at) > 1 else ''} "
                                       f"{first})"))


def _count(n: int, noun: str) -> str:
    """``1 record``, ``2 records``: a count with its noun in the singular or the plural."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def register(group: click.Group) -> None:
    group.add_command(export_command)
    group.add_command(import_command)

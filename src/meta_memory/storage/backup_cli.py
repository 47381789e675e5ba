"""``meta-memory backup DEST``: a consistent copy of a state directory (:mod:`meta_memory.storage.backup`).

``--url`` asks a running gateway (``meta/storage/backup``, the ``operator.backup`` grant): ``DEST`` is
a path on the gateway's machine, inside its ``[gateway] backup_dir`` (a relative ``DEST`` is sent as
given and resolved by the gateway against ``backup_dir``, not against this shell's directory), and the
gateway keeps serving while it copies. ``--state-dir`` copies a stopped installation here (refused while a gateway holds
the directory: ask that gateway with ``--url`` instead). Exit codes: 0 success, 1 a refusal (an
existing or disallowed ``DEST``, a busy directory, an unreachable gateway), 2 a usage error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..shell import (
    STATE_DIR_PATH,
    gateway_url_option,
    local_error,
    meta_error,
    no_state_dir,
    not_both,
    refuse,
    token_hint,
    token_option,
    unreachable,
)
from ..terminal import json_text

__all__ = ["backup_command", "register"]

#: How long ``--url`` waits for the gateway's answer by default: a large state takes a while to copy.
DEFAULT_TIMEOUT_S = 3600.0


@click.command("backup")
@click.argument("dest", type=click.Path(path_type=Path))
@click.option("--url", default=None, callback=gateway_url_option,
              help="Ask the gateway at this URL (DEST is then a path on its machine, inside [gateway] backup_dir; "
                   "a relative DEST is resolved by the gateway against backup_dir).")
@click.option("--token", envvar="META_MEMORY_TOKEN", show_envvar=True, default=None, callback=token_option,
              help="Bearer token holding operator.backup (prefer the environment variable).")
@click.option("--state-dir", type=STATE_DIR_PATH, default=None,
              help="Copy this stopped installation's state directory instead.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="TOML configuration of the --state-dir installation (names a PostgreSQL store, if any).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(1, 86_400), default=DEFAULT_TIMEOUT_S,
              show_default=True, help="Seconds to wait for the gateway's answer (--url).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def backup_command(dest: Path, url: str | None, token: str | None, state_dir: Path | None, config_path: Path | None,
                   timeout_s: float, as_json: bool) -> None:
    """Write a consistent copy of every database and the ledger into the new directory DEST.

    With --url, DEST is on the gateway's machine: an absolute path inside its [gateway] backup_dir, or a
    path relative to backup_dir ("backup --url URL nightly" writes backup_dir/nightly). With
    --state-dir, a relative DEST is relative to the current directory."""
    not_both("--url", url is not None, "--state-dir", state_dir is not None)
    if url is None and state_dir is None:
        raise click.UsageError("give either --url (a running gateway) or --state-dir (a stopped installation)")
    if url is not None and config_path is not None:
        raise click.UsageError("--config applies to --state-dir only (the gateway uses its own)")
    if url is not None:
        report = _remote(url, token, dest, timeout_s)
    else:
        assert state_dir is not None
        report = _local(state_dir, config_path, dest)
    for path in report.get("removed_partials") or []:
        click.echo(f"removed {path}: the unfinished working copy of a backup that was killed", err=True)
    if as_json:
        click.echo(json_text(report))
        return
    click.echo(f"backed up {len(report['files'])} files ({report['bytes']} bytes) to {report['dest']} in "
               f"{report['seconds']} s; consistent as of {report['began_at_ms']} (UTC epoch ms)")
    if report["elsewhere"]:
        click.echo("note: agent memory lives in PostgreSQL here: back it up with pg_dump as well "
                   "(docs/deployment.md, Backup and restore)", err=True)


def _remote(url: str, token: str | None, dest: Path, timeout_s: float) -> dict[str, Any]:
    from ..errors import MetaError
    from ..sdk.transport import GatewayUnreachable, HttpTransport

    transport = HttpTransport(url, token=token, timeout_s=timeout_s)
    try:
        # a relative DEST goes as given: the gateway resolves it against its backup_dir, not our directory
        result: dict[str, Any] = transport.call("meta/storage/backup", {"dest": str(dest)})
        return result
    except MetaError as exc:
        hint = token_hint(exc, token)
        refuse(f"backup refused ({exc.kind}): {exc.message}" + (f"; {hint}" if hint else ""), meta_error(exc))
    except GatewayUnreachable as exc:
        said = unreachable(exc)
        refuse(said, local_error("unreachable", said))
    finally:
        transport.close()
    raise AssertionError("unreachable")  # pragma: no cover


def _local(state_dir: Path, config_path: Path | None, dest: Path) -> dict[str, Any]:
    from ..cli import build_runtime
    from ..errors import MetaError, StartupError, ValueRuleBroken

    if not state_dir.is_dir():  # a backup never creates the state it is asked to copy
        refuse(no_state_dir(state_dir))
    try:
        runtime = build_runtime(state_dir, config_path, one_shot=True)
    except StartupError as exc:
        refuse(str(exc), local_error("startup", " ".join(str(exc).split())))
    try:
        report: dict[str, Any] = runtime.backup(dest).to_dict()
        return report
    except ValueRuleBroken as exc:
        refuse(f"backup refused: {exc.rule}")
    except MetaError as exc:
        refuse(f"backup refused: {exc.message}")
    finally:
        runtime.close()
    raise AssertionError("unreachable")  # pragma: no cover


def register(group: click.Group) -> None:
    group.add_command(backup_command)

"""The ``meta-memory`` (alias ``meta_gateway``) command line.

Commands: ``serve`` (HTTP gateway), ``gateway --stdio``, ``doctor``,
``storage-adopt-predecessor``, ``replay`` (LoCoMo replay over HTTP), ``mcp``
(the ``memory`` tool over MCP stdio), ``token hash``, and agent memory from the
shell: ``remember``, ``recall``, ``update``, ``history``, ``forget``, ``list``, ``erase`` (``shell.py``).
Exit codes: 0 success, 1 a refusal (startup refused, bad config), 2 usage error.
"""

from __future__ import annotations

import importlib
import json
import logging
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn

import click
from click.core import ParameterSource

from .errors import ConfigError, StartupError
from .shell import STATE_DIR_PATH, gateway_url_option, not_both, realm_option, token_option

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Mapping

    from .config import MetaConfig
    from .runtime import Runtime

DEFAULT_STATE_DIR = ".meta/state"

_state_dir_option = click.option(
    "--state-dir", type=STATE_DIR_PATH, default=DEFAULT_STATE_DIR,
    show_default=True, help="Persistent state directory (ledger file, agent-memory databases, events).",
)
_config_option = click.option(
    "--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="TOML configuration file.",
)


def _load(config_path: Path | None) -> MetaConfig:
    from .config import MetaConfig, load_config  # on use: a command that reads no configuration starts without it

    config = load_config(config_path) if config_path is not None else MetaConfig()
    if config.memory is None:
        from .ledger.config import LedgerConfig

        config = config.with_memory(LedgerConfig(kind="local_json"))
    return config


def build_runtime(state_dir: Path, config_path: Path | None, *, one_shot: bool = False) -> Runtime:
    """The runtime ``serve``/``gateway``/``mcp`` run: ledger persisted under ``state_dir`` as
    ``local_json`` unless the config says otherwise. ``one_shot``: a shell command that does one thing
    and exits (it waits for another one-shot's turn on the directory). Raises StartupError/ConfigError."""
    return _start_runtime(_load(config_path), state_dir, one_shot=one_shot)


def _start_runtime(config: MetaConfig, state_dir: Path, *, one_shot: bool = False) -> Runtime:
    """``Runtime(config, state_dir)``, with a store that cannot open (an unreachable PostgreSQL, an
    unwritable directory) turned into a one-line :class:`StartupError` instead of a traceback. A gateway
    process (not ``one_shot``) holds nothing but the runtime, so its recall index may freeze the heap
    after a large build (:func:`meta_memory.recall.lexical_index.settle_after_large_builds`)."""
    from .recall.lexical_index import settle_after_large_builds
    from .runtime import open_runtime

    if not one_shot:
        settle_after_large_builds()
    return open_runtime(config, state_dir, one_shot=one_shot)


def _one_line(text: str) -> str:
    """One line, terminal controls escaped (a message may quote a file, a config value or a gateway's answer)."""
    from .terminal import one_line

    return one_line(text)


def _json_logs() -> bool:
    """Whether log lines are JSON (``serve --log-format json``): then every line on stderr is a JSON object."""
    from .observability.logs import JsonFormatter

    return any(isinstance(h.formatter, JsonFormatter) for h in logging.getLogger().handlers)


def _say(message: str, *, level: int = logging.INFO, prefix: str = "") -> None:
    """A note on stderr: ``prefix`` and ``message`` as text, or ``message`` as a log line of
    ``meta_memory.gateway`` when log lines are JSON."""
    if _json_logs():
        logging.getLogger("meta_memory.gateway").log(level, "%s", message)
    else:
        click.echo(prefix + message, err=True)


def _fail(exc: Exception) -> None:
    if _json_logs():  # a refusal to start is one JSON line too, like every other line on stderr
        logging.getLogger("meta_memory.gateway").error("%s", str(exc))
    else:
        click.echo(f"meta-memory: {_one_line(str(exc))}", err=True)
    sys.exit(1)


#: The commands that keep running and serve: they log INFO lines (an operator's record of what the server did).
#: Every other command is one-shot and logs warnings and above only, so the background work of the runtime it
#: opens (an expiry sweep, an index build) does not print on its stderr beside its answer.
SERVING_COMMANDS = frozenset({"serve", "gateway", "mcp"})


class LazyGroup(click.Group):
    """A click group whose ``lazy`` subcommands are imported when first named (run, or listed by ``--help``).

    ``lazy`` maps a command name to ``"module:attribute"`` (a :class:`click.Command`); once loaded the command
    is added like any other, so ``list_commands``/``get_command`` (and ``--help``) show the same group as
    eager registration would. A command that only one invocation in many uses (``token``) thus costs the
    others nothing at start-up.
    """

    def __init__(self, *args: Any, lazy: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy: dict[str, str] = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = self.lazy.pop(cmd_name, None)
        if target is not None:
            module_name, _, attribute = target.partition(":")
            command = getattr(importlib.import_module(module_name), attribute)
            if not isinstance(command, click.Command):
                raise TypeError(f"{target} is not a click command")
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, lazy={"token": "meta_memory.access.cli:token_group"},
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="meta-memory")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Identity-first memory for multi-agent LLM runtimes."""
    from .observability.logs import configure_logging

    if not logging.getLogger().handlers:  # an embedding program's (or a test's) logging stays its own
        level = logging.INFO if ctx.invoked_subcommand in SERVING_COMMANDS else logging.WARNING
        configure_logging("text", level)  # each message on one line, whatever a caller put into it
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request drowns the output


_log_format_option = click.option(
    "--log-format", type=click.Choice(["text", "json"]), default=None,
    help="Log lines as text, or one JSON object per line with the request id (default: [telemetry] log_format).")


def _apply_log_format(log_format: str | None, config: MetaConfig) -> MetaConfig:
    """``config`` with ``--log-format`` (which wins over ``[telemetry] log_format``) in force; JSON lines
    are set up here (text is the default already)."""
    from dataclasses import replace

    chosen: Literal["text", "json"] = "json" if (log_format or config.telemetry.log_format) == "json" else "text"
    if chosen == "json":
        from .observability.logs import configure_logging

        configure_logging("json")
    return replace(config, telemetry=replace(config.telemetry, log_format=chosen))


def _loopback_of(sock: socket.socket) -> str:
    """The loopback address that reaches a wildcard-bound socket: ``127.0.0.1``, or ``::1`` for an IPv6
    socket that takes no IPv4 connections."""
    if sock.family == socket.AF_INET6 and sock.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY):
        return "::1"
    return "127.0.0.1"




def _is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_option(ctx: click.Context, param: click.Parameter, value: str) -> str:  # noqa: ARG001
    """``serve --host`` as given, refused when blank or padded: the socket layer reads ``""`` as every
    address, so an unset ``--host "$HOST"`` would otherwise listen on all of them (fail closed)."""
    if not value.strip() or value != value.strip():
        raise click.BadParameter(f"must name the address to listen on, without spaces (127.0.0.1, ::1, a host name, "
                                 f"or 0.0.0.0 for every address), not {value!r}")
    return value


@main.command()
@_state_dir_option
@click.option("--host", default="127.0.0.1", show_default=True, callback=_host_option,
              help="Address to listen on. A wildcard (0.0.0.0, ::) listens on every address but serves only "
                   "requests whose Host is a loopback name or listed in [gateway] allowed_hosts.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="0 picks a free port.")
@_config_option
@click.option("--ssl-certfile", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Terminate TLS: PEM certificate (chain) file. Needs --ssl-keyfile.")
@click.option("--ssl-keyfile", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Terminate TLS: PEM private key file. Needs --ssl-certfile.")
@click.option("--ssl-keyfile-password", envvar="META_MEMORY_SSL_KEYFILE_PASSWORD", default=None, show_envvar=True,
              help="Password of an encrypted --ssl-keyfile (prefer the environment variable).")
@_log_format_option
def serve(state_dir: Path, host: str, port: int, config_path: Path | None, ssl_certfile: Path | None,
          ssl_keyfile: Path | None, ssl_keyfile_password: str | None, log_format: str | None) -> None:
    """Run the HTTP gateway: JSON-RPC at POST /rpc, GET /v1/health, /metrics, /events, /console/."""
    from .server.gateway import Gateway
    from .server.perimeter import is_wildcard_bind
    from .server.run import TlsFiles, base_url, build_server, check_tls, listen, serve_http

    if log_format == "json":  # from the first line: a refusal to start is a JSON line as well
        from .observability.logs import configure_logging

        configure_logging("json")
    if (ssl_certfile is None) != (ssl_keyfile is None):
        _say("--ssl-certfile and --ssl-keyfile go together", level=logging.ERROR, prefix="meta-memory: ")
        sys.exit(2)
    tls = TlsFiles(ssl_certfile, ssl_keyfile, ssl_keyfile_password) if ssl_certfile and ssl_keyfile else None
    try:
        config = _load(config_path)
        if tls is not None:  # a bad pair, like a bad config or a busy port, never creates the state directory
            check_tls(tls)
    except (ConfigError, StartupError) as exc:
        _fail(exc)
    config = _apply_log_format(log_format, config)
    metrics_sock: socket.socket | None = None
    metrics_bind = config.gateway.metrics_bind
    try:  # the ports first: a gateway that cannot listen never opens (or creates) its state directory
        sock = listen(host, port)
    except StartupError as exc:
        _fail(exc)
    if metrics_bind is not None:
        try:
            metrics_sock = msock = listen(*metrics_bind)
        except StartupError as exc:
            sock.close()
            _fail(exc)
        if msock.getsockname()[1] == sock.getsockname()[1]:
            # the token-less listener is told apart by its port: it must never share the gateway's
            for s in (sock, msock):
                s.close()
            _fail(StartupError("gateway.metrics_bind must use a port of its own, not the gateway's"))
    sockets = [s for s in (sock, metrics_sock) if s is not None]
    try:
        runtime = _start_runtime(config, state_dir)
    except (StartupError, ConfigError) as exc:
        for s in sockets:
            s.close()
        _fail(exc)
    gateway = Gateway.for_runtime(runtime)
    try:
        server = build_server(gateway, host, tls,
                              metrics_port=metrics_sock.getsockname()[1] if metrics_sock is not None else None)
    except StartupError as exc:
        for s in sockets:
            s.close()
        runtime.close()
        _fail(exc)
    url = base_url(sock, host, tls)
    click.echo(f"meta-memory gateway listening on {url} (state dir {state_dir.resolve()})", err=False)
    if is_wildcard_bind(host):
        # a wildcard listens on every address but is no host name the perimeter serves: show a loopback URL
        _say(f"console: {base_url(sock, _loopback_of(sock), tls)}/console/ (other names this host is reached "
             "by need [gateway] allowed_hosts)")
    else:
        _say(f"console: {url}/console/")
    # startup notes go through logging: one JSON object per line under --log-format json
    startup = logging.getLogger("meta_memory.gateway")
    if runtime.agent_memory is not None:
        from .firewall.service import content_trust_warning

        trust_warning = content_trust_warning(runtime.agent_memory.firewall.policy)
        if trust_warning is not None:
            startup.warning(trust_warning)
    from .access.notes import access_warnings

    shared_key_taint = runtime.agent_memory.config.shared_key_taint if runtime.agent_memory is not None else None
    for note in access_warnings(runtime.config.access, shared_key_taint):
        startup.warning("%s", note)
    if metrics_sock is not None and metrics_bind is not None:
        startup.info("metrics: %s/metrics (no token: keep this address private)",
                     base_url(metrics_sock, metrics_bind[0], tls))
    if not _is_loopback(host):
        if not runtime.access.enabled:
            startup.warning("listening on %s with no [access] configuration: any caller that reaches this port can "
                            "read and change memory. Configure bearer tokens (see docs/access.md).", host)
        if tls is None:
            startup.warning("listening on %s without TLS: bearer tokens and memory cross the network in clear. Use "
                            "--ssl-certfile/--ssl-keyfile or a TLS proxy (see docs/security.md).", host)
        if not runtime.config.gateway.allowed_hosts:
            served = "a loopback name" if is_wildcard_bind(host) else "a loopback name or the bind address"
            startup.warning("only requests whose Host is %s are served; list the names clients use in [gateway] "
                            "allowed_hosts (see docs/security.md).", served)
    sys.stdout.flush()
    try:
        serve_http(server, sock, metrics_sock)
    finally:
        runtime.close()
    sys.exit(0)


@main.command()
@click.option("--stdio", is_flag=True, required=True, help="Serve newline-delimited JSON-RPC on stdin/stdout.")
@_state_dir_option
@_config_option
@_log_format_option
def gateway(stdio: bool, state_dir: Path, config_path: Path | None, log_format: str | None) -> None:
    """Serve the same method table over stdin/stdout (what an SDK spawns)."""
    from .server.gateway import Gateway
    from .server.stdio import serve_stdio

    try:
        runtime = _start_runtime(_apply_log_format(log_format, _load(config_path)), state_dir)
    except (StartupError, ConfigError) as exc:
        _fail(exc)
    refused: StartupError | None = None
    try:
        code = serve_stdio(Gateway.for_runtime(runtime))
    except StartupError as exc:
        refused = exc
    finally:
        runtime.close()
    if refused is not None:
        _fail(refused)
    sys.exit(code)


@main.command()
@_state_dir_option
@_config_option
@click.option("--quick", is_flag=True,
              help="Check each database's header and schema page only, not every page (PRAGMA quick_check).")
@click.option("--backup-dir", "backup_dirs", multiple=True, type=click.Path(file_okay=False, path_type=Path),
              help="A directory backups are written into, searched for the working copies of killed backups "
                   "(besides the state directory's parent and [gateway] backup_dir). Repeatable.")
def doctor(state_dir: Path, config_path: Path | None, quick: bool, backup_dirs: tuple[Path, ...]) -> None:
    """Inspect a state directory offline and say how to fix each finding: file-name twins, predecessor files,
    leftover stages, a malformed ledger, damaged or truncated databases, a -wal without its database, low disk,
    an installation key file that cannot be used or that others may read, the working copy a killed backup
    left (beside the state directory, in [gateway] backup_dir, in each --backup-dir).

    Prints the report as JSON: non-ASCII letters of paths kept as text, control and invisible characters
    escaped. Safe while a gateway runs (nothing is written). Exits 1 when the report is not "ok" (a finding
    blocks start-up or is an error, or the directory is missing)."""
    from .config import load_config
    from .storage.layout import StorageLayout
    from .terminal import json_text

    floor: int | None = None
    dirs = list(backup_dirs)
    try:
        if config_path is not None:
            gateway_config = load_config(config_path).gateway
            floor = gateway_config.min_free_disk_mb
            dirs += [Path(gateway_config.backup_dir)] if gateway_config.backup_dir else []
    except StartupError as exc:
        _fail(exc)
    report = StorageLayout(state_dir).doctor(thorough=not quick, min_free_disk_mb=floor, backup_dirs=dirs)
    # valid JSON with paths as written (/tmp/mémoire), control and invisible characters escaped
    click.echo(json_text(report))
    if not report["ok"]:
        sys.exit(1)


@main.command("storage-adopt-predecessor")
@click.option("--state-dir", type=STATE_DIR_PATH, required=True)
@click.option("--apply", "apply_", is_flag=True, help="Rename the file; without it, print what would happen.")
def storage_adopt_predecessor(state_dir: Path, apply_: bool) -> None:
    """Adopt a predecessor ledger (elephant-memory-state.json) in place, byte for byte."""
    from .storage.adopt import adopt_predecessor

    try:
        report = adopt_predecessor(state_dir, apply=apply_)
    except (StartupError, OSError) as exc:  # OSError: the lock file, the rename or the fsync (it names the path)
        _fail(exc)
    click.echo("\n".join(report.lines))


@main.command()
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--url", default="http://127.0.0.1:8765", show_default=True, callback=gateway_url_option,
              help="Gateway base URL.")
@click.option("--token", envvar="META_MEMORY_TOKEN", show_envvar=True, default=None, callback=token_option,
              help="Bearer token, when the gateway requires one (prefer the environment variable).")
@click.option("--inject", is_flag=True, help="Also ask each question through meta/turn/inject.")
@realm_option("Realm to write into", state_dir=False)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Replay only the first N conversations.")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def replay(path: Path, url: str, token: str | None, inject: bool, realm: str | None, limit: int | None,
           as_json: bool) -> None:
    """Replay a LoCoMo file through a gateway: remember every turn, ask every question, print recall@k."""
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    from .replay import CATEGORIES, KS, ReplayRefused
    from .replay import replay as run_replay
    from .sdk.transport import GatewayUnreachable
    from .shell import local_error, refuse

    console = Console(stderr=as_json)
    # a progress bar on a terminal only: off one, its erase would leave an empty line in the output
    with Progress(console=console, transient=True, disable=not console.is_terminal) as progress:
        try:
            report = run_replay(path, url, token=token, inject=inject, realm=realm, limit=limit, progress=progress)
        except ReplayRefused as exc:  # the gateway's error as it answered, under --json
            refuse(str(exc), exc.error)
        except GatewayUnreachable as exc:  # replay has no --state-dir: the message without the shell's hint
            refuse(str(exc), local_error("unreachable", str(exc)))
        except (RuntimeError, OSError, ValueError) as exc:  # a file of another shape, or unreadable
            refuse(str(exc))
    data = report.to_dict()
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    table = Table(title=f"recall@k over {data['questions']} questions ({data['turns']} turns)")
    table.add_column("category")
    for k in KS:
        table.add_column(f"@{k}", justify="right")
    for name in ["overall", *CATEGORIES.values()]:
        table.add_row(name, *("n/a" if data["recall_at"][name][k] is None else f"{data['recall_at'][name][k]:.3f}"
                              for k in KS))
    console.print(table)
    console.print(f"skipped questions: {data['skipped_questions']}, malformed evidence ids: "
                  f"{data['malformed_evidence_ids']}, recall latency ms: {data['recall_latency_ms']}")
    if "inject" in data:
        console.print(f"inject: {data['inject']}")


def _refuse_option(option: str, exc: ValueError) -> NoReturn:
    """Exit 2 with ``exc``'s rule said of ``option`` (``identity must be ...`` reads ``--identity must be ...``)."""
    text, subject = str(exc), option.lstrip("-")
    text = option + text[len(subject):] if text.startswith(subject + " ") else f"{option}: {text}"
    click.echo(f"meta-memory: {text}", err=True)
    sys.exit(2)


@main.command("mcp")
@_state_dir_option
@click.option("--identity", required=True, help="The agent identity whose memory the tool reads and writes.")
@realm_option("Realm of the session and of every write")
@_config_option
@click.option("--session-key", default=None, help="Session the calls come from (default: a fresh mcp-<hex> key).")
@click.option("--mob", default=None, help="Mob the agent runs in (enables propose_to_mob; recall then also searches "
                                           "the mob's shared records, which under [access] needs mob.memory.read on it).")
@click.option("--url", default=None, callback=gateway_url_option,
              help="Forward to a running gateway (http://host:port) instead of opening --state-dir: the host's "
                   "meta/turn/tool_result calls to that gateway then taint this server's session.")
@click.option("--token", envvar="META_MEMORY_TOKEN", show_envvar=True, default=None, callback=token_option,
              help="Bearer token sent to the --url gateway (prefer the environment variable: a command line "
                   "is visible to other local users).")
@click.option("--session-taint", type=click.Choice(["unknown", "reported"]), default="unknown", show_default=True,
              help="unknown: this server cannot see the client's other tool results, so the session counts as "
                   "tainted and every write is quarantined for review (fail closed). reported: the host reports "
                   "every tool result of this identity and --session-key to the --url gateway "
                   "(meta/turn/tool_result), so the normal posture applies.")
def mcp_command(state_dir: Path, identity: str, realm: str | None, config_path: Path | None,
                session_key: str | None, mob: str | None, url: str | None, token: str | None,
                session_taint: str) -> None:
    """Serve the memory tool over MCP stdio; every call is an LLM-authored write of IDENTITY."""
    from .identity import parse_identity, parse_realm
    from .session_ref import check_session_key

    try:
        identity = parse_identity(identity)
    except ValueError as exc:
        _refuse_option("--identity", exc)
    try:
        realm = parse_realm(realm) if realm is not None else None
    except ValueError as exc:
        _refuse_option("--realm", exc)
    try:
        # the one session-key rule: the host reports tool results under the key it knows, so a key is
        # taken as given, never trimmed
        check_session_key(session_key, required=False, name="--session-key")
    except ValueError as exc:
        click.echo(f"meta-memory: {exc}", err=True)
        sys.exit(2)
    if url is not None and config_path is not None:
        click.echo("meta-memory: --url uses the gateway's own config; drop --config", err=True)
        sys.exit(2)
    not_both("--url", url is not None, "--state-dir",
             click.get_current_context().get_parameter_source("state_dir") is not ParameterSource.DEFAULT)
    if url is not None and session_taint == "reported" and session_key is None:
        # a fresh mcp-<hex> key is one no host knows: nothing would report its tool results
        raise click.UsageError("--session-taint reported with --url needs --session-key: the key the host "
                               "reports this session's tool results under (meta/turn/tool_result)")

    from dataclasses import replace

    from .agent_memory.config import AgentMemoryConfig
    from .mcp_server import McpMemoryBridge, default_session_key, serve_mcp_stdio

    session = session_key if session_key else default_session_key()
    if session_taint == "reported" and url is None:
        click.echo("meta-memory: warning: --session-taint reported without --url: nothing can report this "
                   "session's tool results, so writes from a tainted session land active (firewall off)", err=True)
    if url is not None:
        import httpx

        from .errors import MetaError
        from .sdk import Meta
        from .sdk.transport import GatewayUnreachable
        from .shell import token_hint, unreachable

        handle = Meta.connect(url, token=token)
        refused: str | None = None
        try:
            serve_mcp_stdio(McpMemoryBridge(handle.call, identity, session, mob or None, session_taint, realm))
        except MetaError as exc:  # the gateway refused the bridge's first call (e.g. no or a wrong token)
            hint = token_hint(exc, token)
            refused = f"the gateway at {url} refused the bridge: {exc.message}" + (f"; {hint}" if hint else "")
        except GatewayUnreachable as exc:  # nothing listens there (yet)
            refused = unreachable(exc)
        except httpx.HTTPError as exc:
            refused = unreachable(GatewayUnreachable(url, exc))
        finally:
            handle.close()
        if refused is not None:
            _fail(StartupError(refused))
        sys.exit(0)

    from .rpc.registry import CallContext
    from .server.gateway import Gateway

    try:
        config = _load(config_path)
        agent_memory = config.agent_memory or AgentMemoryConfig.model_validate({})
        if not agent_memory.enabled:
            raise StartupError("agent memory is disabled (agent_memory.enabled = false); the memory tool needs it")
        if realm is not None:
            agent_memory = agent_memory.model_copy(update={"realm": realm})
        runtime = _start_runtime(replace(config, agent_memory=agent_memory), state_dir)
    except StartupError as exc:
        _fail(exc)
    gateway = Gateway.for_runtime(runtime)
    ctx = CallContext(transport="mcp")
    bridge = McpMemoryBridge(lambda method, params: gateway.call(method, params, ctx), identity, session, mob or None,
                             session_taint, realm)
    try:
        serve_mcp_stdio(bridge, runtime.config.gateway.max_request_bytes)
    finally:
        runtime.close()
    sys.exit(0)


def _register_memory_commands() -> None:
    from .portability.cli import register as register_portability
    from .shell import register
    from .storage.backup_cli import register as register_backup

    register(main)
    register_portability(main)
    register_backup(main)


_register_memory_commands()


if __name__ == "__main__":  # pragma: no cover
    main()

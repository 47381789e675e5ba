"""Agent memory from the shell: ``meta-memory remember | recall | update | history | forget | list | erase``, and an
operator's review of quarantined records: ``meta-memory quarantine list | show | release | discard``.

Each command works on one identity (``--identity``, optionally ``--realm``), either against a running
gateway (``--url``, default ``http://127.0.0.1:8765``; ``--token`` or ``META_MEMORY_TOKEN`` for a
bearer token) or embedded on a state directory (``--state-dir``: the runtime runs in this process,
and is refused while a gateway holds that directory; two commands on one directory take turns). Output is a ``rich`` table by default and the
RPC result as JSON with ``--json`` (``recall``: ``{records, skip_reason, degraded_reason?}``).
A word that mixes look-alike alphabets (``lead:maіn`` with a Cyrillic ``і``, ``Pаyroll``), in an identity
or in stored text, is styled in the table or line and named on a ``marked:`` line under it, with the
alphabets it mixes (:mod:`meta_memory.terminal`); ``--json`` carries no mark (its shape is the RPC result's).

Writes from the shell are application writes (``meta/agent_memory/remember|update|forget``), exactly like an
app calling the RPC: they are never quarantined, and they pass the same validator (caps, secret
refusal). Exit codes: 0 success; 1 a refusal by the gateway (the JSON-RPC error's message and
``data.kind`` are printed, the field it names spelled as the argument or option typed: :func:`as_typed`), an unreachable gateway or a refused start; 2 a usage error. With ``--json`` a
refusal (exit 1) is also printed on stdout as ``{"error": {code, message, data: {kind, ...}}}``: the
JSON-RPC error object, or ``code: null`` with ``kind`` ``unreachable`` or ``startup``; a usage error (exit
2) is text on stderr only. ``erase --all`` needs ``--yes`` (or a confirmation at a terminal). A refusal
``access_denied`` of a gateway call that carried no token says how to send one.

The ``quarantine`` commands call the review methods (``meta/memory/panel/records`` with ``status:
"quarantined"``, ``meta/memory/panel/record``, ``meta/memory/panel/quarantine``'s held forgets and
``meta/memory/quarantine/decide``), so they need the reviewer's grants (``memory.quarantine.review`` and
the rest, docs/access.md) under ``[access]``; the reviewer recorded is the token's principal (none
embedded).
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import click

from . import strict_json
from .limits import MAX_LIST_LIMIT
from .terminal import json_text, marked_console, name_text, one_line, text

__all__ = ["register", "gateway_url_option", "realm_option"]

DEFAULT_URL = "http://127.0.0.1:8765"
#: Seconds a command waits to connect to the gateway, and then for its answer.
GATEWAY_TIMEOUT_S = 30.0
#: What a command says after "cannot reach the meta-memory gateway at <url>": how to get one, or do without.
NO_GATEWAY_HINT = ("start one with `meta-memory serve` (or name another with --url), or pass --state-dir DIR to "
                   "work on a state directory without a gateway")


def unreachable(exc: Exception) -> str:
    """What a command says when the gateway at its ``--url`` could not be reached (a
    :class:`~meta_memory.sdk.transport.GatewayUnreachable`): its message, with :data:`NO_GATEWAY_HINT` unless
    something answered there (not a gateway, or the message already says what to do: a call sent and not
    answered in time may have been applied, so "start one" would be wrong advice)."""
    from .sdk.transport import GatewayUnreachable, NotAGateway

    said = str(exc)
    if isinstance(exc, GatewayUnreachable) and not isinstance(exc, NotAGateway) and not exc.explained:
        said += f"; {NO_GATEWAY_HINT}"
    return said


def token_hint(exc: Exception, token: str | None) -> str | None:
    """The line a command adds when a gateway refused a call that carried no bearer token, else ``None``."""
    from .errors import MetaError

    if token is None and isinstance(exc, MetaError) and exc.kind == "access_denied":
        return ("no bearer token was sent: pass --token TOKEN or set META_MEMORY_TOKEN (a gateway with [access] "
                "configured refuses a call without one)")
    return None


def not_both(first: str, first_given: bool, second: str, second_given: bool) -> None:
    """The one rule of two options (or an argument and an option) a command takes one of: given both, a
    usage error (exit 2) before anything is sent, naming each as typed: ``give --ttl-s or --clear-expiry,
    not both``. Every such pair of every command refuses here."""
    if first_given and second_given:
        raise click.UsageError(f"give {first} or {second}, not both")


class _StateDirPath(click.Path):
    """The type of every ``--state-dir``: a directory's path (not a file's), refused when blank (a usage
    error, exit 2): ``""`` would be the current directory, so an unset ``--state-dir "$STATE"`` would write
    databases and a lock file where the command runs and answer from an empty memory."""

    def __init__(self) -> None:
        super().__init__(file_okay=False, path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            self.fail("must name a directory, not a blank value (the current directory is '.')", param, ctx)
        return super().convert(value, param, ctx)


#: The ``type`` of every ``--state-dir`` option (:class:`_StateDirPath`).
STATE_DIR_PATH = _StateDirPath()


def gateway_url_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Click callback of every ``--url``: a URL that cannot name a gateway is a usage error (exit 2)."""
    from .errors import ConfigError
    from .sdk.transport import check_gateway_url

    if value is None:
        return None
    try:
        return check_gateway_url(value)
    except ConfigError as exc:
        raise click.BadParameter(str(exc)) from None


def realm_option(what: str, *, state_dir: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The ``--realm`` option of a command whose calls name a realm (``None`` when not given): ``what`` it
    sets, then the default every such call gets, the serving runtime's ``[agent_memory] realm`` (and, for a
    command that also opens a state directory, ``state_dir``, that of ``--config``)."""
    local = '; with --state-dir, that of --config; "default" when none is set' if state_dir else ""
    return click.option(
        "--realm", default=None,
        help=f"{what} (default: the [agent_memory] realm the gateway is configured with{local}).")


def local_error(kind: str, said: str, **data: Any) -> dict[str, Any]:
    """The ``--json`` error of a refusal no gateway answered: ``{code: null, message: said, data: {kind, ...}}``
    (``kind``: ``unreachable``, ``startup`` or ``refused``; ``data`` adds what the refusal names, e.g. an
    import file's ``line``), beside a gateway's own JSON-RPC error."""
    return {"code": None, "message": said, "data": {"kind": kind, **data}}


def meta_error(exc: Any) -> dict[str, Any]:
    """The ``--json`` error of a :class:`~meta_memory.errors.MetaError`: its JSON-RPC error object as a
    gateway answers it (``{code, message, data: {kind, field?, reason?, ...}}``)."""
    from .rpc.registry import to_jsonable

    error: dict[str, Any] = to_jsonable(exc.to_jsonrpc())
    return error


def print_error(error: dict[str, Any], *, as_json: bool | None = None) -> None:
    """Print ``{"error": error}`` on stdout when the command runs with ``--json`` (``as_json``; by default the
    running command's own ``--json``): the one shape every command's refusal takes there, ``error`` being a
    gateway's JSON-RPC error (:func:`meta_error`) or :func:`local_error`. Without ``--json``, nothing."""
    if as_json is None:
        ctx = click.get_current_context(silent=True)
        as_json = bool(ctx is not None and ctx.params.get("as_json"))
    if as_json:
        click.echo(json_text({"error": error}))


def refuse(message: str, error: dict[str, Any] | None = None) -> NoReturn:
    """Refuse and exit 1: ``message`` on stderr (one line after ``meta-memory:``, controls escaped) and, under
    ``--json``, ``{"error": error}`` on stdout (:func:`print_error`; ``error`` defaults to
    :func:`local_error` of kind ``refused`` with the same message)."""
    said = " ".join(message.split())
    click.echo(one_line(f"meta-memory: {said}"), err=True)
    print_error(error or local_error("refused", said))
    sys.exit(1)


def no_state_dir(state_dir: Path) -> str:
    """The refusal of a command reading a state directory that does not exist (none creates it to read it)."""
    return (f"no state directory at {state_dir.resolve()} (check --state-dir; `meta-memory remember` or "
            "`meta-memory serve` creates one)")


def token_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Click callback of every ``--token`` (and ``META_MEMORY_TOKEN``): ``None`` or an empty value is no
    token; a token holding whitespace (at either end, or inside) is a usage error (exit 2) naming where it
    came from (:func:`meta_memory.sdk.transport.check_token`; one a header cannot carry is refused where
    one is built, with ``--url``, before anything is sent). A token is sent as given, never trimmed: no
    configured token holds whitespace, so a padded one is a copy mistake to report, not to guess at."""
    from .errors import ConfigError
    from .sdk.transport import check_token

    try:
        return check_token(value, header=False)  # the header rule applies where one is sent (with --url)
    except ConfigError as exc:
        source = ctx.get_parameter_source(param.name) if param.name else None
        where = "META_MEMORY_TOKEN" if source is click.core.ParameterSource.ENVIRONMENT else "the token given"
        raise click.BadParameter(f"{where}: {exc}") from None


def _target_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options every memory command shares: who, where, and how to print."""
    options: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
        click.option("--identity", required=True, help="Agent identity whose memory this reads or writes."),
        realm_option("Realm of the records"),
        click.option("--url", default=None, callback=gateway_url_option,
                     help=f"Gateway base URL (default {DEFAULT_URL}; not with --state-dir)."),
        click.option("--token", default=None, envvar="META_MEMORY_TOKEN", show_envvar=True, callback=token_option,
                     help="Bearer token for a gateway with access control (prefer the environment variable)."),
        click.option("--state-dir", type=STATE_DIR_PATH, default=None,
                     help="Run embedded on this state directory instead of calling a gateway."),
        click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     help="TOML configuration (embedded mode only)."),
        click.option("--json", "as_json", is_flag=True, help="Print the RPC result as JSON."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@contextmanager
def _handle(url: str | None, token: str | None, state_dir: Path | None, config_path: Path | None, *,
            creates: bool = False) -> Iterator[Any]:
    """A synchronous SDK handle on the gateway or on an embedded runtime; closed on exit.

    Only a write (``creates``) may start a state directory that does not exist yet; any other command
    on a missing ``state_dir`` raises :class:`~meta_memory.errors.StartupError` naming it, so a mistyped
    path is never answered from a fresh, empty directory."""
    from .errors import StartupError
    from .sdk.handle import MetaHandle
    from .sdk.transport import EmbeddedTransport, HttpTransport

    not_both("--url", url is not None, "--state-dir", state_dir is not None)
    if state_dir is None and config_path is not None:
        raise click.UsageError("--config applies to embedded mode (--state-dir) only")
    if state_dir is not None and not creates and not state_dir.is_dir():
        raise StartupError(no_state_dir(state_dir))
    if state_dir is not None:
        from .cli import build_runtime
        from .server.gateway import Gateway

        runtime = build_runtime(state_dir, config_path, one_shot=True)  # waits its turn behind another command
        handle = MetaHandle(EmbeddedTransport(Gateway.for_runtime(runtime)))
    else:
        handle = MetaHandle(HttpTransport(url or DEFAULT_URL, token=token, timeout_s=GATEWAY_TIMEOUT_S))
    try:
        yield handle
    finally:
        handle.close()


def _check_realm_held(runtime: Any, realm: str) -> None:
    """Refuse (``-32602``, field ``realm``) a read on the operator's own state directory that named a realm
    holding nothing there, as ``export --realm`` does, rather than answer "0 records" from a mistyped name.
    Asked once the read ran (a read creates no realm), so a name the read refused by its own rule is
    refused as it was; the realm a call naming none reads (``[agent_memory] realm``) is never refused. Over
    ``--url`` nothing is asked: the gateway's empty answer is kept, since telling a caller which realms
    exist would make every read an existence check under access control."""
    from .agent_memory.realm_list import no_such_realm
    from .errors import InvalidParams

    feature = runtime.agent_memory
    store = feature.store if feature is not None else None
    if store is None or realm == runtime.default_realm:
        return
    held = store.list_realms()
    if realm not in held:
        raise InvalidParams(no_such_realm(realm, held), "realm")


def _run(ctx: dict[str, Any], call: Callable[[Any], Any], show: Callable[[Any], None], *,
         creates: bool = False, wire: Callable[[Any], Any] | None = None, reads_realm: str | None = None) -> None:
    """Run ``call(handle)``; print its result (table, or JSON: ``wire(result)`` when given, else the result
    as JSON); map every failure to exit code 1 (with ``--json``, also a ``{"error": {...}}`` object on
    stdout: the gateway's error as it answered). Notes a command added to a refusal
    (``BaseException.add_note``) follow it on stderr, one line each. ``creates``: the command is a write
    that may start a missing ``--state-dir``. ``reads_realm``: the realm a read names (``--realm``), refused on a
    ``--state-dir`` where it holds nothing (:func:`_check_realm_held`)."""
    from .errors import MetaError, StartupError
    from .rpc.registry import to_jsonable
    from .sdk.transport import GatewayUnreachable

    try:
        with _handle(ctx["url"], ctx["token"], ctx["state_dir"], ctx["config_path"], creates=creates) as handle:
            result = call(handle)
            if reads_realm is not None and ctx["state_dir"] is not None:
                _check_realm_held(handle.runtime, reads_realm)
    except MetaError as exc:
        refused(exc, ctx)
    except (GatewayUnreachable, StartupError) as exc:
        said = unreachable(exc)
        click.echo(one_line(f"meta-memory: {said}"), err=True)
        kind = "unreachable" if isinstance(exc, GatewayUnreachable) else "startup"
        print_error(local_error(kind, said), as_json=ctx["as_json"])
        sys.exit(1)
    if ctx["as_json"]:
        click.echo(json_text(to_jsonable(wire(result) if wire is not None else result)))
    else:
        show(result)


def refused(exc: Any, ctx: dict[str, Any] | None = None) -> NoReturn:
    """Refuse with a :class:`~meta_memory.errors.MetaError` and exit 1: ``refused (<kind>): <message>
    [field=...]`` on stderr in the command line's names (:func:`as_typed`), the notes a command added, the
    token hint (``ctx``: the command's target options), and under ``--json`` the error on stdout. The one
    shape of a gateway's refusal and of the same rule the command applies before sending anything."""
    detail = ", ".join(f"{k}={v}" for k, v in exc.data.items() if k in ("field", "reason", "action"))
    said = as_typed(exc.message, exc.data.get("field"), click.get_current_context(silent=True))
    click.echo(one_line(f"meta-memory: refused ({exc.kind}): {said}" + (f" [{detail}]" if detail else "")),
               err=True)
    for note in getattr(exc, "__notes__", ()):  # what the command adds to the gateway's answer
        click.echo(one_line(f"meta-memory: {note}"), err=True)
    if ctx is not None and ctx["state_dir"] is None and (hint := token_hint(exc, ctx["token"])) is not None:
        click.echo(f"meta-memory: {hint}", err=True)
    print_error(meta_error(exc), as_json=None if ctx is None else ctx["as_json"])
    sys.exit(1)


def typed_names(command: click.Command) -> dict[str, str]:
    """The RPC fields a command's parameters carry, each with the name a user types for it: a parameter
    whose Python name is an RPC field (``query_text`` of ``recall``'s ``QUERY``, ``tags`` of ``--tag``,
    ``max_entries`` of ``-k/--max-entries``; ``filter_`` of ``--filter``, a trailing ``_`` keeping a
    built-in's name free) carries that field. An argument is named by its metavar (``QUERY``), an option by
    its long flag (``--max-entries``)."""
    names: dict[str, str] = {}
    for param in command.params:
        if param.name is None:
            continue
        if isinstance(param, click.Argument):
            names[param.name.rstrip("_")] = param.human_readable_name
        else:
            names[param.name.rstrip("_")] = next((o for o in param.opts if o.startswith("--")), param.opts[0])
    return names


def as_typed(message: str, field: object, ctx: click.Context | None) -> str:
    """A gateway's refusal ``message`` speaking the command line's names: the field it names (``field``, the
    refusal's ``data.field``; every one when that is ``params``, a rule over several) and any other of the
    command's fields spelled with an underscore (never a word of prose: ``ttl_s``, ``clear_expiry``) are
    replaced, as whole unquoted words, by the argument or option the user typed (:func:`typed_names`):
    ``query_text must be at most 16384 bytes`` from ``recall`` reads ``QUERY must be at most 16384
    bytes``; ``update needs at least one of title, body, ...`` from ``update`` reads ``... of --title,
    --body, ...``. A field the command has no parameter for (a nested ``records.0.title``) is left as the
    gateway wrote it, and so is ``--json``'s error object (the JSON-RPC error as answered). One value of
    a repeated option named by its index (``tags.1 must be at most 64 bytes``) reads as that option and its
    place on the command line (``--tag #2 must be at most 64 bytes``)."""
    if ctx is None:
        return message
    names = typed_names(ctx.command)
    item = re.fullmatch(r"([a-z_]+)\.(\d+)", field) if isinstance(field, str) else None
    if item is not None and item.group(1) in names:  # one value of a repeated option: ``tags.1``, the 2nd --tag
        message = re.sub(rf"(?<![\w.$'\"-]){re.escape(item.group(0))}(?![\w.'\"-])",
                         f"{names[item.group(1)]} #{int(item.group(2)) + 1}", message)
    replaced = [name for name in names if field in (name, "params") or "_" in name]
    if not replaced:
        return message
    words = re.compile(r"(?<![\w.$'\"-])(" + "|".join(map(re.escape, sorted(replaced, key=len, reverse=True)))
                       + r")(?![\w.'\"-])")
    return words.sub(lambda m: names[m.group(1)], message)


def _count(n: int, noun: str) -> str:
    """``1 record``, ``2 records``: a count with its noun in the singular or the plural."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _console() -> Any:
    # a pipe gets a wide table (ids never wrap); a terminal gets its own width. Stored text reaches it as
    # terminal.text(...) (printed as written, a word mixing look-alike alphabets marked, and the marks
    # explained under each print); markup and emoji codes are off for anything else too.
    return marked_console(soft_wrap=False, width=None if sys.stdout.isatty() else 160, markup=False, emoji=False,
                          highlight=False)


def _captioned(caption: Any, table: Any) -> Any:
    """``caption`` on a line of its own above ``table``: the table as wide as its content, the caption as
    long as it reads (a table's own title would be folded to the table's width: ``(0`` on one line,
    ``records)`` on the next; a terminal narrower than the caption still folds it)."""
    from rich.console import Group

    return Group(caption, table)


def _records_table(title: str, records: list[Any], *, with_body: bool, names: tuple[str, ...] = ()) -> Any:
    from rich.table import Table

    caption = text(title, names=names)  # the identity it names is marked as a name
    table = Table()
    table.add_column("memory_id", no_wrap=True, style="cyan")
    table.add_column("title")
    if with_body:
        table.add_column("body", overflow="fold", max_width=60)
    table.add_column("tags")
    for r in records:
        row = [r.memory_id, r.title] + ([r.body] if with_body else []) + [", ".join(r.tags)]
        table.add_row(*(text(cell) for cell in row))
    return _captioned(caption, table)


def _ctx(**kw: Any) -> dict[str, Any]:
    return {k: kw[k] for k in ("url", "token", "state_dir", "config_path", "as_json")}


def _where_options(kw: dict[str, Any]) -> list[str]:
    """The options naming where a command ran (``--url``, ``--state-dir``, ``--config``), shell-quoted, for a
    hint's next command to run against the same memory (the token stays out: it is read from the
    environment or typed again)."""
    named = (("--url", kw.get("url")), ("--state-dir", kw.get("state_dir")), ("--config", kw.get("config_path")))
    return [f"{option} {shlex.quote(str(value))}" for option, value in named if value is not None]


def _utf8(name: str, text: str) -> str:
    """``text`` unless it cannot be UTF-8 (bytes the shell passed undecoded): a usage error naming it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise click.UsageError(f"{name} is not valid UTF-8 text") from None
    return text


def _read_body(body: str, *, name: str = "BODY") -> str:
    """The body ``name`` gives: its text, or stdin's for ``-`` (text that is not UTF-8: a usage error).

    Stdin is read up to one byte past the record body's cap
    (:data:`meta_memory.agent_memory.fields.MAX_BODY_BYTES`), never more: a longer body is refused here,
    before anything is sent or opened, as every gateway and ``--state-dir`` refuses it
    (``BODY must be at most 65536 bytes [field=body]``), whatever the gateway's request cap."""
    if body == "-":
        from .agent_memory.fields import MAX_BODY_BYTES, text_cap_rule
        from .errors import InvalidParams

        data = sys.stdin.buffer.read(MAX_BODY_BYTES + 1)
        if len(data) > MAX_BODY_BYTES:
            refused(InvalidParams(text_cap_rule("body"), "body"))
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise click.UsageError(f"{name} from stdin is not valid UTF-8 text") from None
    return _utf8(name, body)


#: Records per ``meta/agent_memory/list`` page the shell asks for (the method's own maximum).
_LIST_PAGE = MAX_LIST_LIMIT


def _json_object(name: str, value: str | None) -> dict[str, Any] | None:
    """An option's JSON object (``--metadata``, ``--filter``), or a usage error naming the option. Its
    contents are the gateway's to judge (caps, keys, operators): a refusal names the field and the rule."""
    if value is None:
        return None
    try:
        parsed = strict_json.loads(_utf8(name, value))
    except ValueError as exc:
        raise click.UsageError(f"{name} must be a JSON object ({exc})") from None
    except RecursionError:
        raise click.UsageError(f"{name} must be a JSON object (nested too deep)") from None
    if not isinstance(parsed, dict):
        raise click.UsageError(f"{name} must be a JSON object (got {strict_json.kind_of(parsed)})")
    return parsed


def _stored_as(identity: str) -> str:
    """How the gateway names ``identity`` once written: its logical identity (a roster id's respawn layers
    removed, ``rt:lead:main:3`` -> ``lead:main``), with the name typed beside it when they differ."""
    from .identity import parse_identity

    logical = parse_identity(identity)  # the gateway accepted it: the same rule holds here
    return identity if logical == identity else f"{logical} (named {identity})"


@click.command("remember")
@click.argument("title")
@click.argument("body")
@click.option("--tag", "tags", multiple=True, help="A tag (repeat for several).")
@click.option("--ttl-s", "ttl_s", type=click.IntRange(min=1), default=None,
              help="Seconds until the record expires (1..[agent_memory] max_ttl_s); without it, never.")
@click.option("--metadata", default=None, metavar="JSON",
              help='A JSON object kept with the record and filterable on recall, e.g. \'{"project": "apollo"}\'.')
@_target_options
def remember_command(title: str, body: str, tags: tuple[str, ...], ttl_s: int | None, metadata: str | None,
                     identity: str, realm: str | None, **kw: Any) -> None:
    """Remember TITLE with BODY ("-" reads the body from stdin) for one identity."""
    meta = _json_object("--metadata", metadata)
    text = _read_body(body)
    title = _utf8("TITLE", title)

    def show(record: Any) -> None:
        who = _stored_as(identity)
        added = ", ".join(record.tags_added)
        said = (f"remembered for {who}" if record.created else
                f"already remembered for {who}: an active record holds this title and body (tags merged into a "
                f"new version of {record.supersedes}; {'tags' if len(record.tags_added) > 1 else 'tag'} added: "
                f"{added})" if record.supersedes else
                f"already remembered for {who}: an active record holds this title and body (nothing new written)")
        _console().print(_records_table(said, [record], with_body=False, names=(identity, who)))

    def call(h: Any) -> Any:
        record = h.remember_agent_memory(identity, title=title, body=text, tags=list(tags) or None,
                                         realm=realm, ttl_s=ttl_s, metadata=meta)
        if not record.created:
            _not_applied(record, identity, realm, kw, ttl_s=ttl_s, metadata=metadata if meta is not None else None,
                         differs=meta is not None and dict(record.metadata or {}) != meta)
        return record

    _run(_ctx(**kw), call, show, creates=True)


def _not_applied(record: Any, identity: str, realm: str | None, kw: dict[str, Any], *, ttl_s: int | None,
                 metadata: str | None, differs: bool) -> None:
    """Warn on stderr that a ``remember`` answered by a record already holding its title and body left
    its ``--ttl-s`` and ``--metadata`` unapplied (the record keeps its expiry and metadata; a tag merge's
    new version too), with the ``update`` that would apply them. Nothing when neither was given, or when
    the metadata given is what the record holds already."""
    options = [*([f"--ttl-s {ttl_s}"] if ttl_s is not None else []),
               *([f"--metadata {shlex.quote(metadata)}"] if metadata is not None and differs else [])]
    if not options:
        return
    names = " and ".join(o.split(" ", 1)[0] for o in options)
    written = (f"its tags were merged into a new version, which keeps the expiry and metadata of {record.supersedes}"
               if record.supersedes else "nothing new was written")
    target = " ".join([f"--identity {shlex.quote(identity)}", *([f"--realm {shlex.quote(realm)}"] if realm else []),
                       *_where_options(kw)])
    click.echo(one_line(f"meta-memory: warning: {names} not applied: an active record already holds this title and "
                        f"body and {written}; to apply {'them' if len(options) > 1 else 'it'}: meta-memory update "
                        f"{record.memory_id} {' '.join(options)} {target}"), err=True)


@click.command("recall")
@click.argument("query_text", metavar="QUERY")
@click.option("-k", "--max-entries", "max_entries", type=click.IntRange(1, 64), default=None,
              help="How many records at most (1..64; default: the gateway's agent_memory.max_entries).")
@click.option("--filter", "filter_", default=None, metavar="JSON",
              help='Only records whose metadata matches, e.g. \'{"project": "apollo", "n": {"$gte": 3}}\'.')
@_target_options
def recall_command(query_text: str, max_entries: int | None, filter_: str | None, identity: str, realm: str | None,
                   **kw: Any) -> None:
    """Recall the records of one identity that best match QUERY, best first."""
    flt = _json_object("--filter", filter_)
    query = _utf8("QUERY", query_text)

    def show(records: list[Any]) -> None:
        if not records:
            from .recall.text import query_terms

            if not query_terms(query):  # the gateway skipped the search (skip_reason "no_query_terms")
                _console().print(text(f"nothing searched: {query!r} has no searchable word (common words such as "
                                      "'the' and a lower-case letter alone are skipped); ask with the words the memory holds"))
            else:
                _console().print(text(f"no memory of {identity} matches {query!r}", names=(identity,)))
            return
        _console().print(_records_table(f"recall for {identity}: {query!r}", records, with_body=True,
                                        names=(identity,)))

    def wire(records: Any) -> dict[str, Any]:  # the RPC result, as --json prints every command's
        out = {"records": list(records), "skip_reason": records.skip_reason}
        if records.degraded_reason is not None:
            out["degraded_reason"] = records.degraded_reason
        return out

    _run(_ctx(**kw), lambda h: h.recall_agent_memory(identity, realm=realm, query_text=query, max_entries=max_entries,
                                                     filter=flt), show, wire=wire, reads_realm=realm)


@click.command("forget")
@click.argument("memory_id")
@_target_options
def forget_command(memory_id: str, identity: str, realm: str | None, **kw: Any) -> None:
    """Forget MEMORY_ID of one identity (a tombstone: it leaves recall and injection at once).

    A record already forgotten changes nothing and exits 0; a superseded version is refused, exit 1, naming
    its current version (forget that one); an id the identity has no record under (another identity's
    included: they are told alike) is refused, exit 1."""
    from .errors import MetaError, RecordNotFound

    def forgetting(h: Any) -> tuple[Any, str | None]:
        result = h.forget_agent_memory(identity, memory_id, realm=realm)
        if result.deleted:
            return result, None
        # nothing was tombstoned: the record's history tells an unknown id (refused) from one not active
        try:
            versions = h.history_agent_memory(identity, memory_id, realm=realm).versions
        except RecordNotFound:
            raise RecordNotFound(memory_id) from None
        except MetaError:  # e.g. no read grant: the state stays untold
            return result, None
        return result, next((v.status for v in versions if v.memory_id == memory_id), None)

    def show(outcome: tuple[Any, str | None]) -> None:
        result, status = outcome
        if result.deleted:
            word = "forgotten"
        elif status == "tombstoned":
            word = "was already forgotten (nothing changed)"
        elif status is not None:
            word = f"is not active: {status} (nothing changed)"
        else:
            word = "was not active (nothing changed)"
        _console().print(text(f"{result.memory_id} {word}"))

    _run(_ctx(**kw), forgetting, show, wire=lambda outcome: outcome[0])


@click.command("update")
@click.argument("memory_id")
@click.option("--title", default=None, help="The new title (without it, the current one is kept).")
@click.option("--body", default=None, help='The new body ("-" reads it from stdin; without it, the current one is kept).')
@click.option("--tag", "tags", multiple=True,
              help="A tag of the new version (repeat for several): the tags given replace the current ones.")
@click.option("--clear-tags", is_flag=True, help="The new version holds no tag (not with --tag).")
@click.option("--metadata", default=None, metavar="JSON",
              help="A JSON object replacing the current metadata whole (keys are not merged; '{}' clears it).")
@click.option("--ttl-s", "ttl_s", type=click.IntRange(min=1), default=None,
              help="The new version expires this many seconds from now (1..[agent_memory] max_ttl_s).")
@click.option("--clear-expiry", is_flag=True, help="The new version never expires (not with --ttl-s).")
@_target_options
def update_command(memory_id: str, title: str | None, body: str | None, tags: tuple[str, ...], clear_tags: bool,
                   metadata: str | None, ttl_s: int | None, clear_expiry: bool, identity: str, realm: str | None,
                   **kw: Any) -> None:
    """Update MEMORY_ID of one identity: a new version supersedes it (meta/agent_memory/update).

    Only what is given is sent and changed; the rest is kept from the current version. At least one of
    --title, --body, --tag/--clear-tags, --metadata, --ttl-s, --clear-expiry is needed. An update that
    changes nothing writes no version and says so, exit 0. An id the identity has no active record under
    (unknown, another identity's or realm's, told alike; a superseded, forgotten or expired version) is
    refused as the gateway refuses it, exit 1. --json prints the RPC result: {memory_id, supersedes, record}
    (supersedes null when nothing changed)."""
    not_both("--tag", bool(tags), "--clear-tags", clear_tags)
    not_both("--ttl-s", ttl_s is not None, "--clear-expiry", clear_expiry)
    if title is None and body is None and not tags and not clear_tags and metadata is None and ttl_s is None \
            and not clear_expiry:
        raise click.UsageError("give at least one of --title, --body, --tag, --clear-tags, --metadata, --ttl-s, "
                               "--clear-expiry (what the new version changes)")
    mid = _utf8("MEMORY_ID", memory_id)
    new_title = None if title is None else _utf8("--title", title)
    new_body = None if body is None else _read_body(body, name="--body")
    new_tags = [] if clear_tags else ([_utf8("--tag", t) for t in tags] or None)
    meta = _json_object("--metadata", metadata)

    def show(result: Any) -> None:
        if result.supersedes is None:
            said = f"nothing changed: {result.memory_id} already holds this (no new version written)"
        else:
            said = f"updated for {_stored_as(identity)}: {result.memory_id} supersedes {result.supersedes}"
        _console().print(_records_table(said, [result.record], with_body=True, names=(identity,)))

    _run(_ctx(**kw), lambda h: h.update_agent_memory(identity, mid, title=new_title, body=new_body, tags=new_tags,
                                                     realm=realm, ttl_s=ttl_s, clear_expiry=clear_expiry,
                                                     metadata=meta), show)


def _when(ms: int | None) -> str:
    """An epoch-milliseconds time as UTC, to the second (``2026-12-07 08:15:02``; ``-`` for none)."""
    from datetime import UTC, datetime

    return "-" if ms is None else datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _by(author: Any) -> str:
    """Who a history row names: ``agent lead:main``, ``steward run-1``, ``application``."""
    if author is None:
        return "-"
    return " ".join(part for part in (author.author, author.identity or author.run_id) if part)


@click.command("history")
@click.argument("memory_id")
@_target_options
def history_command(memory_id: str, identity: str, realm: str | None, **kw: Any) -> None:
    """Show every version of MEMORY_ID (any of its versions) of one identity, oldest first: its id, the
    change that wrote it, when (UTC), by whom, its status and title, then a line for each later change of
    that version (a forget, a release, a retier: what, when, by whom) (meta/agent_memory/history; at most
    200 versions, and the command says when more are linked).

    Quarantined content is withheld and an erased version shows only that it was erased. An id the
    identity has no record under (unknown, another identity's or realm's, told alike) is refused, exit 1.
    --json prints the RPC result: {memory_id, order, versions, truncated}."""
    mid = _utf8("MEMORY_ID", memory_id)

    def show(found: Any) -> None:
        from rich.table import Table

        caption = text(f"history of {mid} for {identity} ({_count(len(found.versions), 'version')}, oldest first)",
                       names=(identity,))
        table = Table()
        table.add_column("memory_id", no_wrap=True, style="cyan")
        for name in ("change", "when (UTC)", "by", "status"):  # each version supersedes the row above it
            table.add_column(name, no_wrap=True)
        table.add_column("title", overflow="fold", min_width=12)
        table.add_column("tags", overflow="fold")
        for v in found.versions:
            title = f"({v.withheld}: withheld)" if v.withheld else (v.title or "")
            row = [v.memory_id, v.reason, _when(v.created_at_ms), _by(v.author), v.status, title,
                   ", ".join(v.tags or ())]
            table.add_row(*(text(cell) for cell in row))
            for later in v.changes[1:]:  # what changed it since (a forget, a release, a retier), on lines of its own
                table.add_row(*(text(cell) for cell in ("", later.change, _when(later.at_ms), _by(later.by), "", "",
                                                        "")))
        console = _console()
        console.print(_captioned(caption, table))
        if found.truncated:
            console.print(text(f"more versions are linked to {mid}: the {len(found.versions)} oldest are shown"))

    _run(_ctx(**kw), lambda h: h.history_agent_memory(identity, mid, realm=realm), show)


@click.command("list")
@click.option("--limit", type=click.IntRange(1, MAX_LIST_LIMIT), default=None,
              help=f"At most this many records (1..{MAX_LIST_LIMIT}, the bound of meta/agent_memory/list's "
                   "limit), newest updated first; without it every active record that passes --tag/--filter is "
                   "listed, read page by page.")
@click.option("--tag", "tags", multiple=True,
              help="Only records holding this tag (repeat: every one must be held).")
@click.option("--filter", "filter_", default=None, metavar="JSON",
              help='Only records whose metadata matches, e.g. \'{"project": "apollo"}\' (as recall --filter).')
@click.option("--cursor", default=None, metavar="CURSOR",
              help="Go on after an earlier list --limit: the cursor it printed when more records followed (with "
                   "the same --tag and --filter).")
@_target_options
def list_command(limit: int | None, tags: tuple[str, ...], filter_: str | None, cursor: str | None, identity: str,
                 realm: str | None, **kw: Any) -> None:
    """List the active records of one identity, newest updated first (a table of ids, titles and tags).

    The records are read page by page from meta/agent_memory/list (--tag: every tag held,
    --filter: a metadata condition, --limit: at most that many, 1..500; without it every matching
    record, however many). When --limit stops before the last record, the command says so and prints the
    cursor to go on from (--cursor CURSOR, the same --tag and --filter): after the table, or on stderr with
    --json. --json prints one shape whatever the options: a JSON array of the records as that method
    returns them, each {memory_id, title, body, tags, metadata, created_at_ms, updated_at_ms,
    expires_at_ms} ([] when none)."""
    flt = _json_object("--filter", filter_)
    wanted = [_utf8("--tag", t) for t in tags]
    start = None if cursor is None else _utf8("--cursor", cursor)

    def matching(h: Any) -> tuple[list[Any], str | None]:
        found: list[Any] = []
        at: str | None = start
        while limit is None or len(found) < limit:
            page = h.list_agent_memory(identity, realm=realm, tags=wanted or None, filter=flt, cursor=at,
                                       limit=_LIST_PAGE if limit is None else min(_LIST_PAGE, limit - len(found)))
            found.extend(page.records)
            at = page.next_cursor
            if at is None:
                break
        return found, at

    def more(after: str) -> str:
        again = " ".join(["--limit", str(limit), *(f"--tag {shlex.quote(t)}" for t in wanted),
                          *([f"--filter {shlex.quote(filter_ or '')}"] if flt else [])])
        return f"more records follow: list them with --cursor {after} {again}"

    def show_records(out: tuple[list[Any], str | None]) -> None:
        records, after = out
        what = " ".join([*(f"#{t}" for t in wanted), *([json.dumps(flt, sort_keys=True)] if flt else [])])
        shown = _count(len(records), "record") + ("" if after is None else " shown, more follow")
        title = f"memory of {identity}" + (f" matching {what}" if what else "") + f" ({shown})"
        _console().print(_records_table(title, records, with_body=False, names=(identity,)))
        if after is not None:
            _console().print(text(more(after)))

    def wire(out: tuple[list[Any], str | None]) -> list[Any]:
        if out[1] is not None:  # the JSON array keeps its shape: the way on goes to stderr
            click.echo(one_line(f"meta-memory: {more(out[1])}"), err=True)
        return out[0]

    _run(_ctx(**kw), matching, show_records, wire=wire, reads_realm=realm)


@click.command("erase")
@click.argument("memory_id", required=False)
@click.option("--all", "everything", is_flag=True, help="Erase every record of the identity.")
@click.option("--dry-run", is_flag=True, help="Only count what would be erased.")
@click.option("--reason", default=None, help="Why (kept in the erase audit rows).")
@click.option("--yes", is_flag=True, help="Confirm --all (without it a terminal asks; anything else is refused).")
@_target_options
def erase_command(memory_id: str | None, everything: bool, dry_run: bool, reason: str | None, yes: bool,
                  identity: str, realm: str | None, **kw: Any) -> None:
    """Erase MEMORY_ID (or --all of the identity) for good: every version and derived copy, no tombstone.
    --all needs --yes, or a "y" at the terminal's prompt; --dry-run needs neither.

    An id the identity holds nothing under any more is refused, exit 1, as the gateway refuses it
    (-32001 not_found, naming the id): one already erased (erasing twice changes nothing; the message
    says it was already erased when the caller may read the identity), an unknown id, and another
    identity's or realm's (told alike). --all of an identity holding nothing says nothing was erased, exit 0."""
    from .errors import RecordNotFound

    not_both("MEMORY_ID", bool(memory_id), "--all", everything)
    if not memory_id and not everything:
        raise click.UsageError("give a MEMORY_ID or --all")
    if everything and not dry_run and not yes:
        where = f"realm {realm!r}" if realm else "the default realm"
        if not sys.stdin.isatty():
            raise click.UsageError(f"erase --all erases every record of {identity} in {where} for good: pass --yes "
                                   "to confirm (--dry-run counts them first)")
        click.confirm(f"Erase every record of {identity} in {where} for good?", abort=True, err=True)

    def show(result: dict[str, Any]) -> None:
        if not result["count"] and not result.get("proposals"):
            where = f"realm {realm}" if realm else "the default realm"
            _console().print(text(f"{identity} holds no record or proposal in {where}: nothing "
                                  f"{'would be' if result['dry_run'] else 'was'} erased", names=(identity, realm or "")))
            return
        verb = "would erase" if result["dry_run"] else "erased"
        # one id's erase counts every version and copy of it: say so, lest "3 records" read as other records
        others = result["count"] - 1
        which = "" if everything else f": {memory_id}" + (
            f" and {others} other {'version or copy' if others == 1 else 'versions and copies'} of it"
            if others > 0 else "")
        _console().print(text(f"{verb} {_count(result['count'], 'record')} in "
                              f"{', '.join(result['scopes']) or 'no scope'}"
                              + (f" and {_count(len(result['proposals']), 'proposal')}" if result.get("proposals")
                                 else "") + which, names=(identity, realm or "")))

    def call(h: Any) -> Any:
        if everything:
            return h.erase_identity_agent_memory(identity, realm=realm, dry_run=dry_run, reason=reason)
        try:
            return h.erase_agent_memory(identity, memory_id, realm=realm, dry_run=dry_run, reason=reason)
        except RecordNotFound as refused:
            refused.add_note(_erase_refusal_note(h, identity, str(memory_id), realm))
            raise

    _run(_ctx(**kw), call, show)


def _erase_refusal_note(h: Any, identity: str, memory_id: str, realm: str | None) -> str:
    """What an erase refused as ``not_found`` means: the id's history tells one already erased (when the
    caller may read it); otherwise an unknown id and another identity's are told alike."""
    from .errors import MetaError

    try:
        versions = h.history_agent_memory(identity, memory_id, realm=realm).versions
    except MetaError:  # unknown here, or no read grant: the state stays untold
        versions = []
    if any(v.memory_id == memory_id and v.status == "erased" for v in versions):
        return f"{memory_id} was already erased from {identity}: nothing is left to erase (nothing changed)"
    return (f"{identity} holds no record {memory_id}: an unknown id, one already erased, or another identity's "
            "or realm's (nothing changed)")


# -- operator review of quarantined records (seed: "Reviewing quarantined records") ------------------------

#: Rows per ``meta/memory/panel/records`` page ``quarantine list`` asks for (the method's own maximum).
_PANEL_PAGE = 200


def _reviewed_record(h: Any, identity: str, memory_id: str, realm: str | None) -> Any:
    """``meta/memory/panel/record`` of ``memory_id`` when it is a record of ``identity`` (in ``realm`` when
    given, else in any realm); another identity's record is refused exactly as an unknown id
    (``RecordNotFound``, -32001)."""
    from .errors import RecordNotFound

    found = h.memory_panel_record(memory_id, realm=realm)
    scope = found.record.scope
    if scope.scope != "identity" or scope.identity != identity:
        raise RecordNotFound(memory_id)
    return found


#: the most held forgets one ``meta/memory/panel/quarantine`` call lists (its limit's ceiling)
_FORGETS_LISTED = 200


def _held_forgets(h: Any, identity: str, realm: str | None) -> tuple[list[Any], bool]:
    """The held forgets (``meta/memory/panel/quarantine``'s ``pending_forgets``, every identity's the caller may
    review, newest first, at most :data:`_FORGETS_LISTED`) of ``identity``'s records, and whether the listing was
    full (older held forgets of the identity may not be shown)."""
    queue = h.memory_panel_quarantine(realm=realm, limit=_FORGETS_LISTED)
    mine = [f for f in queue.pending_forgets if f.scope_kind == "identity" and f.scope_key == identity]
    return mine, len(queue.pending_forgets) >= _FORGETS_LISTED


@click.group("quarantine")
def quarantine_group() -> None:
    """Review the quarantined records of an identity: list them, show one, release or discard it.

    A write the firewall's gate judged untrusted (the 'memory' tool from a tainted session: under
    'meta-memory mcp' without '--session-taint reported', every write) lands quarantined: kept, but never
    recalled or injected until a review releases it. These commands are that operator review, over a
    gateway (--url, with --token when it has access control) or embedded on a state directory
    (--state-dir, while no gateway holds it): 'release' makes the content active memory of the identity
    (meta/memory/quarantine/decide, verdict "release"), 'discard' tombstones it (verdict "tombstone").
    A held forget (a tainted session's forget, waiting) is decided the same way: 'discard' applies the
    forget, 'release' keeps the record. Exit codes as the memory commands': 1 on a refusal."""


@quarantine_group.command("list")
@_target_options
def quarantine_list(identity: str, realm: str | None, **kw: Any) -> None:
    """List the quarantined records of one identity, newest updated first, with why each was quarantined,
    and the forgets of its records held for review. Without --realm every realm is listed.

    --json prints {records, pending_forgets, forgets_cut_short}: meta/memory/panel/records rows (body-free),
    meta/memory/panel/quarantine's held forgets of the identity, and whether that queue (every identity's, newest
    first) was read to its limit, so older held forgets of the identity may not be listed."""

    def listing(h: Any) -> tuple[list[Any], list[Any], bool]:
        rows: list[Any] = []
        cursor: str | None = None
        while True:
            page = h.memory_panel_records(realm=realm, scope="identity", identity=identity, status="quarantined",
                                          limit=_PANEL_PAGE, cursor=cursor)
            rows.extend(page.records)
            cursor = page.next_cursor
            if cursor is None:
                return (rows, *_held_forgets(h, identity, realm))

    def show(out: tuple[list[Any], list[Any], bool]) -> None:
        from rich.table import Table
        from rich.text import Text

        rows, forgets, full = out
        console = _console()
        where = f" in realm {realm}" if realm else ""
        if full:
            console.print(text(f"the newest {_FORGETS_LISTED} held forgets of every identity were read: older held "
                               f"forgets of {identity} may not be listed (the console's Quarantine tab pages them all)",
                               names=(identity,)))
        if not rows and not forgets:
            console.print(text(f"nothing of {identity}{where} that you may review awaits review",
                               names=(identity, realm or "")))
            return
        if rows:
            table = Table(title=text(f"quarantined records of {identity}{where} ({_count(len(rows), 'record')})",
                                     names=(identity, realm or "")),
                          title_justify="left")
            for name in ("memory_id", "realm", "title", "tags", "quarantined because"):
                table.add_column(name, no_wrap=name == "memory_id", style="cyan" if name == "memory_id" else "")
            for r in rows:
                table.add_row(text(r.id), name_text(r.scope.realm),
                              *(text(cell) for cell in (r.title, ", ".join(r.tags), r.status.reason or "")))
            console.print(table)
        if forgets:
            table = Table(title=text(f"forgets of {identity}'s records held for review ({len(forgets)})",
                                     names=(identity,)),
                          title_justify="left")
            for name in ("memory_id", "realm", "title", "held because"):
                table.add_column(name, no_wrap=name == "memory_id", style="cyan" if name == "memory_id" else "")
            for f in forgets:
                table.add_row(text(f.memory_id), name_text(f.realm), *(text(cell) for cell in (f.title, f.reason or "")))
            console.print(table)
        target = " ".join([f"--identity {shlex.quote(identity)}", *([f"--realm {shlex.quote(realm)}"] if realm else []),
                           *_where_options(kw)])
        # real commands, pasteable as printed: the first listed id filled in, what each does said above them
        first = rows[0].id if rows else forgets[0].memory_id
        console.print(text(f"review them with the commands below (each one line, to paste as it is), shown for "
                           f"{first}; for another, put its memory_id in place of {first}: show reads one; release "
                           "makes it active memory (a held forget: keeps the record); discard tombstones it (a held "
                           "forget: applies the forget)"))
        commands = [text(f"  meta-memory quarantine {verb} {shlex.quote(first)} {target}", names=(identity, realm or ""))
                    for verb in ("show", "release", "discard")]
        console.print(Text("\n").join(commands), soft_wrap=True)  # one print: one legend of the marked names

    _run(_ctx(**kw), listing, show,
         wire=lambda out: {"records": list(out[0]), "pending_forgets": list(out[1]), "forgets_cut_short": out[2]})


@quarantine_group.command("show")
@click.argument("memory_id")
@_target_options
def quarantine_show(memory_id: str, identity: str, realm: str | None, **kw: Any) -> None:
    """Show MEMORY_ID of one identity as a reviewer reads it: title, tags, why it was quarantined, the body
    and its content hash (what 'release'/'discard --content-hash' binds the decision to).

    --json prints the meta/memory/panel/record result."""
    mid = _utf8("MEMORY_ID", memory_id)

    def show(found: Any) -> None:
        r = found.record
        console = _console()
        lines = [f"{r.id} of {identity} in realm {found.realm}: {r.status.status}"
                 + (f" ({r.status.reason})" if r.status.reason else ""),
                 f"title: {r.title}", f"tags: {', '.join(r.tags)}", f"content_hash: {r.content_hash}"]
        if found.pending_forget is not None:
            lines.append(f"a forget of this record is held for review ({found.pending_forget.reason or 'no reason'})")
        console.print(*(text(line, names=(identity, found.realm)) for line in lines[:1]),
                      *(text(line) for line in [*lines[1:], "body:"]), text(r.body), sep="\n")

    _run(_ctx(**kw), lambda h: _reviewed_record(h, identity, mid, realm), show)


#: a content hash as the store writes it (SHA-256, lower-case hex)
_CONTENT_HASH = re.compile(r"[0-9a-f]{64}")


def _decide_command(verdict: str, name: str, summary: str) -> click.Command:
    @click.command(name, help=summary)
    @click.argument("memory_id")
    @click.option("--content-hash", default=None, metavar="HASH",
                  help="The content_hash 'quarantine show' printed: the decision is refused (content_mismatch) "
                       "unless the record still holds that content. Without it, the record's content as read "
                       "just before the decision.")
    @click.option("--rationale", default=None, help="Why (at most 400 bytes; kept in the decision's audit row).")
    @_target_options
    def command(memory_id: str, content_hash: str | None, rationale: str | None, identity: str, realm: str | None,
                **kw: Any) -> None:
        mid = _utf8("MEMORY_ID", memory_id)
        why = None if rationale is None else _utf8("--rationale", rationale)
        if content_hash is not None and not _CONTENT_HASH.fullmatch(content_hash):
            raise click.BadParameter("must be the 64 lower-case hexadecimal characters 'quarantine show' prints as "
                                     "content_hash", param_hint="--content-hash")

        def decide(h: Any) -> Any:
            found = _reviewed_record(h, identity, mid, realm)
            return h.memory_quarantine_decide(identity, mid, verdict=verdict, realm=found.realm, rationale=why,
                                              expected_content_hash=content_hash or found.record.content_hash)

        def show(result: Any) -> None:
            outcome = result.outcome
            if result.forget is not None:
                said = {"released": "kept: the held forget was released, the record stays active",
                        "already_released": "was already kept: the held forget was released before",
                        "tombstoned": "the forget was applied: the record is forgotten",
                        "already_tombstoned": "the forget was already applied"}[outcome]
            elif outcome == "released":
                said = (f"released: {result.successor.memory_id} is active memory of {identity}"
                        if result.duplicate_of is None else
                        f"released into {result.duplicate_of}, the active record already holding this content")
            elif outcome == "already_released":
                said = "was already released" + (f" as {result.successor.memory_id}" if result.successor else "")
            elif outcome == "tombstoned":
                said = "discarded (tombstoned: it is never recalled or injected)"
            else:
                said = "was already discarded (nothing changed)"
            _console().print(text(f"{mid} {said}", names=(identity,)))

        _run(_ctx(**kw), decide, show)

    return command


quarantine_group.add_command(_decide_command(
    "release", "release",
    "Release MEMORY_ID of one identity from quarantine: its content becomes active memory of the identity "
    "(a -released successor at agent_observed trust; the quarantined original is tombstoned, nothing is "
    "deleted). A held forget on MEMORY_ID is refused instead: the record stays active. A record holding a "
    "secret is never released (secret_detected: discard it). --json prints the meta/memory/quarantine/decide "
    "result."))
quarantine_group.add_command(_decide_command(
    "tombstone", "discard",
    "Discard MEMORY_ID of one identity: the quarantine verdict \"tombstone\", so it is never recalled or "
    "injected (the original is kept for audit, not erased: 'meta-memory erase' removes it for good). A held "
    "forget on MEMORY_ID is applied instead. --json prints the meta/memory/quarantine/decide result."))


def register(group: click.Group) -> None:
    """Add the memory commands to the ``meta-memory`` group."""
    for command in (remember_command, recall_command, update_command, history_command, forget_command,
                    list_command, erase_command, quarantine_group):
        group.add_command(command)

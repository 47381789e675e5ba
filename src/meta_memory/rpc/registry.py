"""The one method table: ``name -> (params parser, handler)``.

Every surface (HTTP, stdio, the embedded SDK, MCP) dispatches through a
:class:`MethodTable`, so behaviour cannot drift between transports. Domain
modules contribute their methods with :meth:`MethodTable.method`, and each
registration declares what the method requires (``requires=``, a
:class:`~meta_memory.access.requirements.Requires` evaluated on the parsed
params) and whether it changes state (``mutating=``): that declaration is the
only place access control learns about a method.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from ..access.requirements import Requires
from ..errors import AgentMemoryError, InternalError, InvalidParams, MetaError, MethodNotFound, ValueRuleBroken, echo
from ..observability.requests import UNKNOWN_METHOD
from ..observability.tracing import span
from .params import RealmDefaulted, check_json_value, parse_params, rule_to_invalid_params

if TYPE_CHECKING:  # pragma: no cover
    from ..runtime import Runtime

__all__ = ["CallContext", "FreshJson", "MethodSpec", "MethodTable", "Refused", "to_jsonable"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CallContext:
    """Who is calling and how.

    ``principal`` is the authenticated principal (``None`` only before access
    control is consulted); ``transport`` is ``"http"``, ``"stdio"``,
    ``"embedded"`` or ``"mcp"``.
    """

    principal: Any = None
    transport: str = "embedded"
    request_id: str | None = None
    """The transport's id of the request (``X-Request-Id``, or minted): see :mod:`meta_memory.observability.requests`."""


Handler = Callable[["Runtime", CallContext, Any], Any]


class FreshJson:
    """A handler's plain-data answer built for this one call out of JSON values alone: dicts, lists, strings,
    numbers, booleans and ``None``, none of them held by anything else (no kept record's tags or metadata, no
    pydantic model). :meth:`MethodSpec.answer` holds ``value`` to the result model as it holds any plain data,
    then sends it as it is instead of copying it through :func:`to_jsonable` first (a recall's answer: a fresh
    dict of eight records' fresh dicts, the copy about a tenth of what the method table adds to the call)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


@dataclass(frozen=True)
class Refused:
    """What a method still does when its params are refused (``-32602``), for a caller allowed to act.

    ``members`` is a lenient params model holding only the members the hook needs (for
    ``meta/turn/tool_result``: the session, ``identity``, ``realm?``, ``session_key``; other members
    ignored). When the refused params hold valid ``members``, and the caller passes the method's own
    access requirement on them (``requires=``, judged on those members exactly as on a normal call),
    the realm allow-list and the state-directory check, ``handle(runtime, ctx, members, refusal)`` runs
    before the refusal is answered; otherwise nothing runs. The call is answered with the refusal
    either way. A failure of ``handle`` is logged, never answered in the refusal's place.
    """

    members: type[BaseModel]
    handle: Callable[["Runtime", CallContext, Any, InvalidParams], None]


@dataclass(frozen=True)
class MethodSpec:
    """One RPC method.

    ``parse`` turns raw ``params`` into a typed value (raising ``InvalidParams``);
    ``handler(runtime, ctx, parsed)`` returns an instance of ``result`` (the method's result model) or
    the plain data it describes (a dict, validated against ``result`` before it is sent: :meth:`answer`).
    ``requires`` is the method's access requirement, evaluated on the
    parsed value; ``mutating`` is ``True``/``False`` or a predicate on the parsed
    value (a read-only gateway refuses a call for which it holds). ``available``
    decides whether the method is advertised on a given runtime (e.g. panel
    methods need a panel-capable store). ``unavailable_hint`` (text, or a function of the runtime giving it)
    is added to the method-not-found message when it is not advertised: why, and what turns it on; ``params_model`` and ``result`` (pydantic models, or a type such as
    ``dict[str, Any]``) describe the method in the OpenRPC document (``rpc.discover``), and ``result``
    is what every answer of the method is held to. ``refused`` is what a refusal of its params still does
    (:class:`Refused`; ``None``: nothing).
    """

    name: str
    parse: Callable[[Any], Any]
    handler: Handler
    requires: Requires
    mutating: bool | Callable[[Any], bool]
    summary: str = ""
    available: Callable[["Runtime"], bool] = field(default=lambda runtime: True)
    unavailable_hint: str | Callable[["Runtime"], str] = ""
    params_model: type[BaseModel] | None = None
    result: Any = None
    refused: Refused | None = None
    _adapter: TypeAdapter[Any] | None = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        if not isinstance(self.requires, Requires):
            raise TypeError(f"method {self.name!r} must declare requires= (a Requires)")
        if not (isinstance(self.mutating, bool) or callable(self.mutating)):
            raise TypeError(f"method {self.name!r} must declare mutating= (a bool or a predicate)")
        if self.result is None:
            raise TypeError(f"method {self.name!r} must declare result= (its result model)")
        if not _is_model(self.result):
            object.__setattr__(self, "_adapter", TypeAdapter(self.result))

    def answer(self, value: Any) -> Any:
        """The handler's ``value`` as JSON-compatible data, held to ``result``.

        An instance of the result model is dumped as it is (it was validated when built); plain data
        (a dict a service built) is validated against ``result`` and sent unchanged, member for member (a
        :class:`FreshJson` answer: its ``value`` so validated, and sent without being copied).
        A result that does not fit is the gateway's own fault: it is logged and the call is answered
        ``-32603`` (:class:`~meta_memory.errors.InternalError`), never sent half-formed.
        """
        model = self.result
        fresh = type(value) is FreshJson
        if fresh:
            value = value.value
        elif self._adapter is None and isinstance(value, model):
            return value.model_dump(mode="json")
        try:
            if self._adapter is None:
                model.model_validate(value)
            else:
                self._adapter.validate_python(value)
        except ValidationError as exc:
            log.error("method %s answered outside its result model: %s", self.name, exc)
            raise InternalError() from None
        return value if fresh else to_jsonable(value)

    def is_mutating(self, parsed: Any) -> bool:
        """Whether this call (with its parsed params) changes state."""
        if isinstance(self.mutating, bool):
            return self.mutating
        return bool(self.mutating(parsed))


def _is_model(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, BaseModel)


#: Values :func:`to_jsonable` returns as they are (checked by exact type, before any other test).
_PLAIN = frozenset({str, int, float, bool, type(None)})


def to_jsonable(value: Any) -> Any:
    """Results to JSON-compatible data: pydantic models dumped in JSON mode, recursively (dicts and
    lists are copied; strings, numbers, booleans and ``None`` are kept without a call per value)."""
    if type(value) in _PLAIN:
        return value
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=False)
    if isinstance(value, dict):
        return {k: v if type(v) in _PLAIN else to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [v if type(v) in _PLAIN else to_jsonable(v) for v in value]
    return value


def _first_line(doc: str | None) -> str:
    lines = (doc or "").strip().splitlines()
    return lines[0] if lines else ""


class MethodTable:
    """Registry of :class:`MethodSpec` by name."""

    def __init__(self) -> None:
        self._methods: dict[str, MethodSpec] = {}

    def add(self, spec: MethodSpec) -> None:
        if spec.name in self._methods:
            raise ValueError(f"method {spec.name!r} registered twice")
        self._methods[spec.name] = spec

    def method(
        self,
        name: str,
        params: type[BaseModel] | Callable[[Any], Any] | None = None,
        *,
        requires: Requires,
        mutating: bool | Callable[[Any], bool],
        summary: str = "",
        available: Callable[["Runtime"], bool] | None = None,
        unavailable_hint: str | Callable[["Runtime"], str] = "",
        result: Any = None,
        params_model: type[BaseModel] | None = None,
        refused: Refused | None = None,
    ) -> Callable[[Handler], Handler]:
        """Decorator registering ``handler`` under ``name``.

        ``params`` is a :class:`~meta_memory.rpc.params.Params` model, a parser
        callable, or ``None`` (params must be absent or an empty object).
        ``requires``, ``mutating`` and ``result`` are mandatory (see :class:`MethodSpec`). ``params_model``
        documents a parser callable's params; ``result`` is the result's model: every answer is held to it
        (:meth:`MethodSpec.answer`). ``refused`` is what a refusal of the params still does (:class:`Refused`).
        """

        described: type[BaseModel] | None = params_model
        if params is None:
            from .params import NoParams

            described = NoParams
            parser: Callable[[Any], Any] = lambda raw: parse_params(NoParams, raw)
        elif isinstance(params, type) and issubclass(params, BaseModel):
            model = params
            described = model
            parser = lambda raw: parse_params(model, raw)
        else:
            parser = params

        def register(handler: Handler) -> Handler:
            self.add(
                MethodSpec(
                    name=name,
                    parse=parser,
                    handler=handler,
                    requires=requires,
                    mutating=mutating,
                    summary=summary or _first_line(handler.__doc__),
                    available=available or (lambda runtime: True),
                    unavailable_hint=unavailable_hint,
                    params_model=described,
                    result=result,
                    refused=refused,
                )
            )
            return handler

        return register

    def extend(self, specs: Iterable[MethodSpec]) -> None:
        for spec in specs:
            self.add(spec)

    def get(self, name: str, runtime: "Runtime") -> MethodSpec:
        """The spec for ``name``; raises :class:`MethodNotFound` if unknown or unadvertised."""
        spec = self._methods.get(name)
        if spec is None:
            raise MethodNotFound(name)
        if not spec.available(runtime):
            why = spec.unavailable_hint(runtime) if callable(spec.unavailable_hint) else spec.unavailable_hint
            hint = f" ({why})" if why else ""
            raise MethodNotFound(name, f"Method not found: {echo(name)}{hint}")
        return spec

    def specs(self, runtime: "Runtime | None" = None) -> list[MethodSpec]:
        """The specs advertised on ``runtime`` (all when ``None``), sorted by name."""
        return [self._methods[n] for n in self.names(runtime)]

    def names(self, runtime: "Runtime | None" = None) -> list[str]:
        """Sorted names of the methods advertised on ``runtime`` (all when ``None``)."""
        return sorted(n for n, s in self._methods.items() if runtime is None or s.available(runtime))

    def call(self, runtime: "Runtime", ctx: CallContext, name: str, params: Any) -> Any:
        """Admit, parse, authorise (on the parsed params), run and serialise one call.

        Raises :class:`~meta_memory.errors.MetaError` on refusal: first ``AccessDenied`` from the
        method's entry gate, before the params are read
        (:meth:`~meta_memory.services.access.AccessService.admit`: a caller holding none of the actions
        the method always needs, on any scope, such as an anonymous caller without an ``anyone`` grant,
        learns nothing of how its params are checked); then ``InvalidParams``; then ``AccessDenied`` on
        the parsed params; then ``InvalidParams`` naming ``realm`` for a
        realm outside ``[agent_memory] realms``: judged after access, so a caller without the grant
        learns nothing about which realms are served). A domain rule refusal
        (:class:`~meta_memory.errors.ValueRuleBroken`, from the parser or the handler) becomes
        ``InvalidParams`` here, the one place every transport passes.

        A state-changing call on a runtime whose state directory was removed or replaced while it ran is
        refused before it runs (:meth:`~meta_memory.runtime.Runtime.check_state_dir`); a read that then
        fails in the store (``io``, ``corrupt``) is refused naming that cause
        (:meth:`~meta_memory.runtime.Runtime.explain_failed_read`).

        Every call is observed (:meth:`meta_memory.observability.Observability.call`): counted, timed
        and, when traces are on, run inside its span with ``params`` and ``access`` child spans. A name
        the table does not hold is observed as ``(unknown)`` (its span's name and ``rpc.method``), never
        as the text the caller sent.
        """
        # the caller chooses the name: spans and metrics see it only when the table has it
        known_name = name if name in self._methods else UNKNOWN_METHOD
        with runtime.observability.call(known_name, ctx.transport, ctx.request_id) as observed:
            spec = self.get(name, runtime)
            observed.known = True
            with span("access"):  # the entry gate: a caller who can never be allowed learns nothing of the params
                runtime.access.admit(ctx.principal, spec)
            try:
                with span("params"):
                    check_json_value(params)
                    parsed = spec.parse(params)
                    if isinstance(parsed, RealmDefaulted):
                        parsed = parsed.in_realm(runtime.default_realm)
                observed.describe(parsed)
                with span("access"):
                    runtime.access.authorize(ctx.principal, spec, parsed)
                    runtime.check_realm(getattr(parsed, "realm", None))
                if spec.is_mutating(parsed):
                    runtime.check_state_dir(name)
                try:
                    # a realm the handler would create is judged for the caller first (docs/access.md, Realms)
                    with runtime.access.realm_creation(ctx.principal, spec, parsed):
                        result = spec.answer(spec.handler(runtime, ctx, parsed))
                except AgentMemoryError as exc:
                    explained = runtime.explain_failed_read(exc)
                    if explained is exc:
                        raise
                    raise explained from None
            except ValueRuleBroken as exc:
                refusal = rule_to_invalid_params(exc)
                self._after_refusal(runtime, ctx, spec, params, refusal)
                raise refusal from None
            except InvalidParams as exc:
                self._after_refusal(runtime, ctx, spec, params, exc)
                raise
            observed.done(result)
            return result

    @staticmethod
    def _after_refusal(runtime: "Runtime", ctx: CallContext, spec: MethodSpec, params: Any,
                       refusal: InvalidParams) -> None:
        """Run ``spec.refused`` for a caller allowed to act on the members it names (:class:`Refused`)."""
        hook = spec.refused
        if hook is None:
            return
        try:
            members = parse_params(hook.members, params)
            if isinstance(members, RealmDefaulted):
                members = members.in_realm(runtime.default_realm)
            runtime.access.authorize(ctx.principal, spec, members)
            runtime.check_realm(getattr(members, "realm", None))
            runtime.check_state_dir(spec.name)
        except (MetaError, ValueRuleBroken):
            return  # no members this caller may act on: nothing runs
        try:
            with runtime.access.realm_creation(ctx.principal, spec, members):
                hook.handle(runtime, ctx, members, refusal)
        except Exception:  # noqa: BLE001 - the refusal is the answer; the hook's failure is logged
            log.exception("method %s: the hook of a refused call failed", spec.name)

"""How one declaration becomes a sync method and an async method, both typed.

A method of the SDK is declared once, as a descriptor on a class shared by the sync and the
async side. Reading it from an object of a :class:`SyncSide` class gives ``Callable[P, R]``;
from an :class:`AsyncSide` class it gives ``Callable[P, Awaitable[R]]``. Type checkers see the
difference through the overloads of ``__get__``; at run time the object's ``_invoke`` decides
(the sync one returns the value, the async one a coroutine).

- :func:`rpc` declares a gateway method: the decorated function turns the Python arguments
  into the JSON-RPC params; ``parse`` turns the JSON result into the typed result.
- :func:`bound` declares a convenience method whose body calls other SDK methods (the agent
  and session objects): the body is written against the sync handle and returns, on the
  async side, the awaitable the async handle gave.
- :func:`sdk_names` (a decorator) and :class:`renaming` (a context manager) make the refusals of a
  convenience method that renames a wire field (``k`` for ``max_entries``) name the argument the
  caller typed, not the wire field.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, Concatenate, Generic, Literal, ParamSpec, Self, TypeVar, cast, overload

from ..errors import InvalidParams

__all__ = ["SyncSide", "AsyncSide", "RpcMethod", "BoundMethod", "rpc", "bound", "rpc_methods", "renaming",
           "sdk_names"]

P = ParamSpec("P")
R = TypeVar("R")


class SyncSide:
    """Marker base: SDK methods read from this object return values."""


class AsyncSide:
    """Marker base: SDK methods read from this object return awaitables."""


class _SideMethod(Generic[P, R]):
    """A descriptor typed by the side it is read from: ``Callable[P, R]`` from a :class:`SyncSide`
    object, ``Callable[P, Awaitable[R]]`` from an :class:`AsyncSide` one, itself from the class."""

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Self: ...
    @overload
    def __get__(self, obj: SyncSide, owner: type | None = None) -> Callable[P, R]: ...
    @overload
    def __get__(self, obj: AsyncSide, owner: type | None = None) -> Callable[P, Awaitable[R]]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> Callable[P, Any]: ...

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        return self if obj is None else self._bind(obj)

    def _bind(self, obj: Any) -> Callable[..., Any]:  # pragma: no cover - each kind binds its own way
        raise NotImplementedError


class RpcMethod(_SideMethod[P, R]):
    """One gateway method: ``wire`` name, params builder, result parser (see :func:`rpc`)."""

    def __init__(self, wire: str, build: Callable[..., dict[str, Any] | None], parse: Callable[[Any], R]) -> None:
        self.wire = wire
        self.build = build
        self.parse = parse
        self.name = build.__name__
        self.__doc__ = build.__doc__
        signature = inspect.signature(build)
        # what ``help(handle.method)`` shows: the caller's arguments (no ``self``), no params-dict return
        self.signature = signature.replace(parameters=list(signature.parameters.values())[1:],
                                           return_annotation=inspect.Signature.empty)

    def _bind(self, obj: Any) -> Callable[..., Any]:
        build, wire, parse = self.build, self.wire, self.parse

        @functools.wraps(build)
        def method(*args: Any, **kwargs: Any) -> Any:
            return obj._invoke(wire, build(obj, *args, **kwargs), parse)

        del method.__wrapped__
        method.__signature__ = self.signature  # type: ignore[attr-defined]
        return method

    def __repr__(self) -> str:
        return f"<rpc {self.name} -> {self.wire}>"


class BoundMethod(_SideMethod[P, R]):
    """A convenience method over other SDK methods (see :func:`bound`)."""

    def __init__(self, func: Callable[..., Any]) -> None:
        self.func = func
        self.__doc__ = func.__doc__

    def _bind(self, obj: Any) -> Callable[..., Any]:
        return functools.partial(self.func, obj)


def rpc(wire: str, parse: Callable[[Any], R]) -> Callable[[Callable[Concatenate[Any, P], dict[str, Any] | None]], RpcMethod[P, R]]:
    """Declare the SDK method of gateway method ``wire``; ``parse`` types its result."""

    def declare(build: Callable[Concatenate[Any, P], dict[str, Any] | None]) -> RpcMethod[P, R]:
        return RpcMethod(wire, build, parse)

    return declare


def bound(func: Callable[Concatenate[Any, P], R]) -> BoundMethod[P, R]:
    """Declare a convenience method typed ``R`` on the sync side and ``Awaitable[R]`` on the async side."""
    return BoundMethod(func)


def rpc_methods(cls: type) -> dict[str, RpcMethod[Any, Any]]:
    """Every :class:`RpcMethod` reachable on ``cls`` by attribute name (aliases included)."""
    out: dict[str, RpcMethod[Any, Any]] = {}
    for klass in reversed(cls.__mro__):
        for name, value in vars(klass).items():
            if isinstance(value, RpcMethod):
                out[name] = value
    return out


def _in_sdk_names(exc: InvalidParams, renames: Mapping[str, str]) -> InvalidParams | None:
    """``exc`` restated in the SDK's argument names when its ``field`` is (or lies inside) a renamed
    wire field (``query_terms.0`` -> ``terms.0``); ``None`` when it names no renamed field."""
    field = exc.field
    for wire, name in renames.items():
        if field is not None and (field == wire or field.startswith((wire + ".", wire + "["))):
            rule = exc.rule
            for other_wire, other_name in renames.items():
                rule = re.sub(rf"(?<!\w){re.escape(other_wire)}(?!\w)", other_name, rule)
            return InvalidParams(rule, name + field[len(wire):])
    return None


class renaming:  # noqa: N801 - used as a context manager, like contextlib's
    """``with renaming({"limit": "page_size"}): ...`` re-raises an ``InvalidParams`` about a wire field
    of ``renames`` (wire name -> SDK argument name) as the same refusal naming the SDK argument, in
    ``field`` and in the rule text. Any other error passes unchanged."""

    def __init__(self, renames: Mapping[str, str]) -> None:
        self.renames = dict(renames)

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> Literal[False]:
        if isinstance(exc, InvalidParams):
            restated = _in_sdk_names(exc, self.renames)
            if restated is not None:
                raise restated from None
        return False


def sdk_names(**renames: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Declare that a convenience method passes SDK argument ``name`` as wire field ``wire``
    (``@sdk_names(max_entries="k")``): its refusals name ``name`` (see :class:`renaming`), on the sync
    side (raised by the call) and the async side (raised by the awaitable it returns) alike."""

    def wrap(func: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(func)
        def method(*args: P.args, **kwargs: P.kwargs) -> R:
            with renaming(renames):
                out = func(*args, **kwargs)
            if inspect.isawaitable(out):
                awaitable = out

                async def awaited() -> Any:
                    with renaming(renames):
                        return await awaitable

                return cast(R, awaited())
            return out

        return method

    return wrap

"""The handle: one interface over every mode (embedded or remote; sync or async).

The gateway's methods are declared once, in :class:`~meta_memory.sdk.methods.HandleMethods`.
:class:`MetaHandle` returns their typed results; :class:`AsyncMetaHandle` returns awaitables of
the same results. Both offer:

- every gateway method under the spec's names (``remember_agent_memory``, ``turn_inject``, ...);
- ``handle.ledger``: the assertion ledger (``index``, ``resolve``, ``query``, ``stores``), the same calls
  as ``memory_index``, ``memory_resolve``, ``memory_query``, ``memory_stores``;
- ``handle.agent(identity, realm=...)``: an :class:`~meta_memory.sdk.agent.Agent` bound to one
  identity (``remember``, ``recall``, ``session(...)``, ...).

Every method raises the typed :class:`~meta_memory.errors.MetaError` the gateway gave (see
:mod:`meta_memory.sdk.methods`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable, Hashable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import pydantic

from ..errors import echo
from ..limits import DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_PER_KEY
from .agent import Agent, AsyncAgent
from .binding import AsyncSide, SyncSide
from .methods import HandleMethods
from .transport import AsyncTransport, HandleClosed, ThreadedTransport, Transport, UnreadableAnswer

if TYPE_CHECKING:  # pragma: no cover
    from ..runtime import Runtime

__all__ = ["MetaHandle", "AsyncMetaHandle", "MobHandle", "AsyncMobHandle", "Ledger", "AsyncLedger"]

S = TypeVar("S")


class _LedgerMethods:
    """The assertion ledger's methods under their own names (seed: Indexing, Conflict detection, Querying,
    Memory store info)."""

    index = HandleMethods.memory_index
    resolve = HandleMethods.memory_resolve
    query = HandleMethods.memory_query
    stores = HandleMethods.memory_stores

    def __init__(self, handle: HandleMethods) -> None:
        self._handle = handle

    def _invoke(self, method: str, params: dict[str, Any] | None, parse: Callable[[Any], Any]) -> Any:
        return self._handle._invoke(method, params, parse)


class Ledger(_LedgerMethods, SyncSide):
    """``handle.ledger`` on a sync handle: ``index(...)``, ``resolve(...)``, ``query(...)``, ``stores()``."""


class AsyncLedger(_LedgerMethods, AsyncSide):
    """``handle.ledger`` on an async handle: the same methods, returning awaitables."""


def _identity(value: Any) -> Any:
    return value


#: Gateway methods whose recall runs under the gateway's caps of provider calls (``DEFAULT_MAX_PER_KEY``
#: at once per ``(realm, identity)``, ``DEFAULT_MAX_IN_FLIGHT`` in all; beyond either a call waits for a
#: slot within its time budget, then is refused as ``capacity_exceeded``).
_CAPPED_METHODS = frozenset({"meta/agent_memory/recall", "meta/turn/inject", "meta/agent_memory/tool"})


def _cap_key(method: str, params: dict[str, Any] | None) -> Hashable | None:
    """The ``(realm, identity)`` a call of ``method`` counts against on the gateway, or ``None``."""
    if method not in _CAPPED_METHODS or not isinstance(params, dict):
        return None
    identity, realm = params.get("identity"), params.get("realm")
    if not isinstance(identity, str) or not (realm is None or isinstance(realm, str)):
        return None  # the gateway refuses the params; nothing to queue for
    return (realm, identity)


class _SlotBook(Generic[S]):
    """Per-key semaphores of a handle's capped calls, counted by their users (in flight or waiting) so a
    key with none is dropped. ``make(n)`` builds a semaphore of ``n`` slots; callers serialise
    :meth:`enter`/:meth:`leave` (a lock for threads; one event loop for tasks)."""

    def __init__(self, limit: int, make: Callable[[int], S]) -> None:
        self._limit, self._make = limit, make
        self._slots: dict[Hashable, tuple[S, int]] = {}

    def enter(self, key: Hashable) -> S:
        sem, users = self._slots.get(key) or (self._make(self._limit), 0)
        self._slots[key] = (sem, users + 1)
        return sem

    def leave(self, key: Hashable) -> None:
        sem, users = self._slots[key]
        if users == 1:
            del self._slots[key]
        else:
            self._slots[key] = (sem, users - 1)

    def idle(self) -> bool:
        """No call in flight or waiting, for any key."""
        return not self._slots


class _ThreadSlots:
    """At most ``limit`` calls in flight per key, and ``total`` in all, from one sync handle (its threads
    queue for a slot), so a handle shared by many threads stays within the gateway's caps instead of
    being refused. Keys with no call in flight or waiting are dropped.

    One lock and two counts: a call takes its key's slot and one of all together, when both are free
    (no deadlock, no call holding one while it waits for the other). Waiting calls are served in the
    order they came: a freed slot goes to the longest-waiting call it can serve (one of another key whose
    slots are full is passed over, never waited for), and a new call does not take a slot while an
    earlier one waits for it. So no thread of a shared handle waits while later threads go ahead of it.
    :meth:`enter` and :meth:`leave` are the calls' own path (no context manager per call)."""

    def __init__(self, limit: int, total: int = DEFAULT_MAX_IN_FLIGHT) -> None:
        self._limit, self._total = limit, total
        self._lock = threading.Lock()
        self._freed = threading.Condition(self._lock)
        self._running: dict[Hashable, int] = {}  # per key: calls in flight
        self._all = 0  # calls in flight, every key
        self._queue: collections.deque[tuple[object, Hashable]] = collections.deque()  # waiting (ticket, key)

    def _free(self, key: Hashable) -> bool:
        return self._all < self._total and self._running.get(key, 0) < self._limit

    def _next(self) -> object | None:
        """The ticket of the longest-waiting call whose slots are free, if any."""
        return next((ticket for ticket, key in self._queue if self._free(key)), None)

    def enter(self, key: Hashable) -> None:
        """Take ``key``'s slot and one of all, waiting for them (in turn) as long as it takes."""
        with self._lock:
            if self._queue or not self._free(key):
                entry = (object(), key)
                self._queue.append(entry)
                try:
                    while self._next() is not entry[0]:
                        self._freed.wait()
                finally:
                    self._queue.remove(entry)
                    if self._queue:  # a slot may be left for the next in line (or this call gave up)
                        self._freed.notify_all()
            self._running[key] = self._running.get(key, 0) + 1
            self._all += 1

    def leave(self, key: Hashable) -> None:
        """Give back the slots :meth:`enter` took for ``key``."""
        with self._lock:
            self._all -= 1
            left = self._running[key] - 1
            if left:
                self._running[key] = left
            else:
                del self._running[key]
            if self._queue:
                self._freed.notify_all()

    @contextlib.contextmanager
    def slot(self, key: Hashable | None) -> Iterator[None]:
        """:meth:`enter` and :meth:`leave` around the block (nothing for ``None``)."""
        if key is None:
            yield
            return
        self.enter(key)
        try:
            yield
        finally:
            self.leave(key)

    def idle(self) -> bool:
        """No call in flight or waiting, for any key."""
        with self._lock:
            return not self._all and not self._queue


class _TaskSlots:
    """:class:`_ThreadSlots` for the tasks of one event loop (an async handle)."""

    def __init__(self, limit: int, total: int = DEFAULT_MAX_IN_FLIGHT) -> None:
        self._book: _SlotBook[asyncio.Semaphore] = _SlotBook(limit, asyncio.Semaphore)
        self._total_limit = total
        self._total: asyncio.Semaphore | None = None  # made in the handle's loop, at its first capped call

    @contextlib.asynccontextmanager
    async def slot(self, key: Hashable | None) -> AsyncIterator[None]:
        if key is None:
            yield
            return
        sem = self._book.enter(key)
        if self._total is None:
            self._total = asyncio.Semaphore(self._total_limit)
        try:
            async with sem, self._total:  # always the key's slot first, then one of all: no deadlock
                yield
        finally:
            self._book.leave(key)

    def idle(self) -> bool:
        """No call in flight or waiting, for any key."""
        return self._book.idle()


class _VectorWait:
    """One wait for hybrid ranking to complete: ``done(status)`` reads a ``meta/status`` result and
    returns the vector-backlog report once no record waits for a vector, ``None`` to poll again
    after ``pause_s``; ``TimeoutError`` past the deadline, ``ValueError`` without agent memory."""

    def __init__(self, timeout_s: float, poll_s: float) -> None:
        self.timeout_s = timeout_s
        self.deadline = time.monotonic() + max(0.0, timeout_s)
        self.pause_s = max(0.01, poll_s)

    def done(self, status: Any) -> dict[str, Any] | None:
        report = ((status or {}).get("agent_memory") or {}).get("vector_backlog")
        if not isinstance(report, dict):
            raise ValueError("meta/status has no agent_memory.vector_backlog: agent memory is off on this gateway")
        if report.get("complete"):
            return report
        if time.monotonic() >= self.deadline:
            realms = ", ".join(f"{r['realm']}: {r['pending']}" for r in report.get("realms") or [] if r.get("pending"))
            skipped = ", ".join(f"{s['realm']} ({s['reason']})" for s in report.get("skipped_realms") or [])
            raise TimeoutError(f"{report.get('pending')} record(s) still wait for a vector after "
                               f"{self.timeout_s:g} s ({realms})"
                               + (f"; realms that cannot be read: {skipped}" if skipped else ""))
        return None


def _parsed(transport: object, method: str, parse: Callable[[Any], Any], raw: Any) -> Any:
    """``parse(raw)``: the typed result of ``method``. A result that is not the method's shape (a wrong
    type, a missing field: pydantic's ``ValidationError``, or a parser's ``KeyError``/``TypeError``) is
    :class:`UnreadableAnswer` (``rule`` ``"result"``) naming the method and the dotted path of the first
    field that is not, never the parser's own exception."""
    try:
        return parse(raw)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": str(exc)}
        field = ".".join(str(part) for part in first["loc"]) or "result"
        problem = str(first["msg"])
    except (KeyError, TypeError, AttributeError) as exc:
        field = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else "result"
        problem = "missing" if isinstance(exc, KeyError) else f"not the shape it answers ({type(exc).__name__})"
    where = getattr(transport, "url", None) or "the gateway"
    raise UnreadableAnswer(where, "result", f"its result for {method} is not the shape that method answers: "
                           f"{echo(field)}: {echo(problem)}", method=method, field=field) from None


def _runtime(transport: object) -> Runtime | None:
    """``transport``'s in-process runtime, handed out (:meth:`EmbeddedTransport.hand_out`: a handle dropped
    after this no longer closes what its caller keeps); ``None`` for a remote transport."""
    hand_out = getattr(transport, "hand_out", None)
    if callable(hand_out):
        runtime: Runtime = hand_out()
        return runtime
    gateway = getattr(transport, "gateway", None)
    return gateway.runtime if gateway is not None else None


class MetaHandle(HandleMethods, SyncSide):
    """Synchronous handle over a transport (embedded, HTTP or stdio). Use as a context manager."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport
        self._slots = _ThreadSlots(DEFAULT_MAX_PER_KEY)
        self._closed = False

    def _invoke(self, method: str, params: dict[str, Any] | None, parse: Callable[[Any], Any]) -> Any:
        if self._closed:
            raise HandleClosed()
        key = _cap_key(method, params)
        if key is None:
            return _parsed(self._transport, method, parse, self._transport.call(method, params))
        self._slots.enter(key)  # this handle's recalls of one identity queue
        try:
            return _parsed(self._transport, method, parse, self._transport.call(method, params))
        finally:
            self._slots.leave(key)

    @property
    def ledger(self) -> Ledger:
        """The assertion ledger: ``index``, ``query``, ``stores``."""
        return Ledger(self)

    def agent(self, identity: str, *, realm: str | None = None) -> Agent:
        """An :class:`Agent` bound to ``identity`` in ``realm`` (the gateway's default realm when ``None``).
        Nothing is sent until a method is called; the gateway validates ``identity`` then."""
        return Agent(self, identity, realm)

    @property
    def runtime(self) -> Any:
        """The in-process runtime (embedded mode only; ``None`` when remote). Once taken, it is the caller's
        to keep: the handle's collection no longer closes it (``close()`` on the handle still does)."""
        return _runtime(self._transport)

    def wait_for_vectors(self, timeout_s: float = 60.0, poll_s: float = 0.25) -> dict[str, Any]:
        """Poll ``meta/status`` until hybrid ranking is complete: no active record waits for a vector.

        Returns the final ``agent_memory.vector_backlog`` report (``{"provider", "pending", "realms",
        "complete", ...}``; at once for lexical recall, whose ``pending`` is always 0). ``timeout_s``
        and ``poll_s`` are seconds. Raises ``TimeoutError`` naming the records still pending (and any
        realm whose database cannot be read, ``skipped_realms``) when ``timeout_s`` passes, ``ValueError`` for a gateway without agent memory, and the typed
        ``MetaError`` the gateway gave (e.g. ``PermissionDenied`` without ``operator.status``).
        """
        wait = _VectorWait(timeout_s, poll_s)
        while (report := wait.done(self._invoke("meta/status", None, _identity))) is None:
            time.sleep(wait.pause_s)
        return report

    def close(self) -> None:
        """Close the transport (an embedded runtime stops); a later call raises :class:`HandleClosed`.
        Closing again does nothing."""
        if self._closed:
            return
        self._closed = True
        self._transport.close()

    def __enter__(self) -> "MetaHandle":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncMetaHandle(HandleMethods, AsyncSide):
    """Asynchronous handle: every method returns an awaitable. Use with ``async with``."""

    def __init__(self, transport: AsyncTransport | ThreadedTransport) -> None:
        self._transport = transport
        self._slots = _TaskSlots(DEFAULT_MAX_PER_KEY)
        self._closed = False

    def _invoke(self, method: str, params: dict[str, Any] | None, parse: Callable[[Any], Any]) -> Any:
        async def run() -> Any:
            if self._closed:
                raise HandleClosed()
            transport = self._transport
            async with self._slots.slot(_cap_key(method, params)):  # this handle's recalls of one identity queue
                if isinstance(transport, ThreadedTransport):
                    raw = await transport.acall(method, params)
                else:
                    raw = await transport.call(method, params)
            return _parsed(transport, method, parse, raw)

        return run()

    @property
    def ledger(self) -> AsyncLedger:
        """The assertion ledger: ``index``, ``query``, ``stores`` (awaitables)."""
        return AsyncLedger(self)

    def agent(self, identity: str, *, realm: str | None = None) -> AsyncAgent:
        """An :class:`AsyncAgent` bound to ``identity`` in ``realm``."""
        return AsyncAgent(self, identity, realm)

    @property
    def runtime(self) -> Any:
        """The in-process runtime (embedded mode only; ``None`` when remote). Once taken, it is the caller's
        to keep: the handle's collection no longer closes it (``close()`` on the handle still does)."""
        return _runtime(self._transport)

    async def wait_for_vectors(self, timeout_s: float = 60.0, poll_s: float = 0.25) -> dict[str, Any]:
        """:meth:`MetaHandle.wait_for_vectors` without blocking the event loop (same result and errors)."""
        wait = _VectorWait(timeout_s, poll_s)
        while (report := wait.done(await self._invoke("meta/status", None, _identity))) is None:
            await asyncio.sleep(wait.pause_s)
        return report

    async def aclose(self) -> None:
        """Close the transport; a later call raises :class:`HandleClosed`. Closing again does nothing."""
        if self._closed:
            return
        self._closed = True
        transport = self._transport
        if isinstance(transport, ThreadedTransport):
            transport.close()
        else:
            await transport.aclose()

    async def __aenter__(self) -> "AsyncMetaHandle":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


#: The spec's name of the handle ("Append through the runtime ... ``MobHandle.memory_index(...)`` in
#: Python"): the same class, so ``MobHandle.memory_index(...)`` is :meth:`MetaHandle.memory_index`.
MobHandle = MetaHandle
#: The asynchronous handle under the spec's name.
AsyncMobHandle = AsyncMetaHandle

"""``meta/storage/export``: the export file of a running gateway, fetched a page at a time.

A thin transport around :func:`~meta_memory.portability.exporter.export_jsonl`: the first call
starts the writer on a worker thread, writing into a bounded buffer; each call takes the next lines
off it (up to ``max_bytes``). So the lines are exactly the bytes ``meta-memory export`` writes to a
file, whatever the writer puts in them, and a gateway never holds more than the buffer of one
export in memory: the writer waits while the caller has not fetched.

Caps, failing closed: at most :data:`MAX_OPEN_EXPORTS` exports at once (one more is refused with
``capacity_exceeded``, saying when the first place frees); an export nobody fetched for
:data:`IDLE_TIMEOUT_S` seconds is abandoned (its writer stops, its id is forgotten); an export id is
answered only to the principal that started it (anyone else gets the same ``invalid_params`` as for an unknown id).

An erase stops every export under way that covers its realm (:meth:`ExportStreams.stop_for_erase`): the
lines its writer had read and buffered before the erase committed may hold the erased content, which the
installation must not hand out once the erase has answered. Its next fetch is refused (``invalid_params``
naming ``export_id``, saying to start the export again); the export started again reads what is left.
"""

from __future__ import annotations

import math
import os
import queue
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import CapacityExceeded, InvalidParams

if TYPE_CHECKING:  # pragma: no cover
    from ..runtime import Runtime

__all__ = ["ExportStreams", "IDLE_TIMEOUT_S", "MAX_OPEN_EXPORTS", "STOPPED_BY_ERASE"]

MAX_OPEN_EXPORTS = 2
IDLE_TIMEOUT_S = 120.0
#: Lines buffered ahead of the caller per export.
_BUFFER_LINES = 2048
#: The refusal of a fetch of an export an erase stopped (:meth:`ExportStreams.stop_for_erase`).
STOPPED_BY_ERASE = ("this export was stopped: an erase committed after it started, and the lines it had read may "
                    "hold the erased content; start the export again")
#: How long one call waits for the writer's next line before answering with what it has.
_PAGE_WAIT_S = 10.0
_DONE = object()


class _Abandoned(Exception):
    """The caller stopped fetching: the writer gives up."""


class _QueueWriter:
    """The file the export writer writes to: each ``write`` (one JSON line) goes into a bounded queue."""

    def __init__(self, lines: "queue.Queue[Any]", cancelled: threading.Event) -> None:
        self._lines = lines
        self._cancelled = cancelled

    def write(self, text: str) -> int:
        """Queue one line; waits while the buffer is full, and gives up (the export is abandoned) when
        nobody fetched for :data:`IDLE_TIMEOUT_S` seconds."""
        given_up_at = time.monotonic() + IDLE_TIMEOUT_S
        while True:
            if self._cancelled.is_set():
                raise _Abandoned
            try:
                self._lines.put(text, timeout=0.5)
                return len(text)
            except queue.Full:
                if time.monotonic() > given_up_at:
                    self._cancelled.set()
                    raise _Abandoned from None

    def flush(self) -> None:
        return None


@dataclass
class _Export:
    owner: str
    #: The realm the export was started on (``None``: every realm).
    realm: str | None = None
    lines: "queue.Queue[Any]" = field(default_factory=lambda: queue.Queue(_BUFFER_LINES))
    cancelled: threading.Event = field(default_factory=threading.Event)
    touched: float = field(default_factory=time.monotonic)
    error: BaseException | None = None
    done: bool = False
    #: Set when an erase of a realm it covers committed after it started (:meth:`ExportStreams.stop_for_erase`).
    stopped_by_erase: bool = False
    busy: threading.Lock = field(default_factory=threading.Lock)


class ExportStreams:
    """The exports under way on one runtime (``meta/storage/export``)."""

    def __init__(self, runtime: "Runtime") -> None:
        self._runtime = runtime
        self._lock = threading.Lock()
        self._open: dict[str, _Export] = {}

    def _expire(self) -> None:
        now = time.monotonic()
        for export_id, export in list(self._open.items()):
            if now - export.touched > IDLE_TIMEOUT_S:
                export.cancelled.set()
                del self._open[export_id]

    def start(self, owner: str, *, realm: str | None, identity: str | None, ledger: bool) -> str:
        """Start an export for ``owner``; its id. Raises ``CapacityExceeded`` when
        :data:`MAX_OPEN_EXPORTS` are under way, and ``ReadOnlyConsole`` (-32030, ``data.read_only``) on a
        read-only gateway when the installation has no export key yet: a read-only gateway signs with an
        existing key only and never creates one."""
        from ..access.policy import ReadOnlyConsole
        from .exporter import export_jsonl
        from .signing import LineSigner, installation_key

        read_only = self._runtime.access.policy.read_only
        key = installation_key(self._runtime, create=not read_only)  # the gateway signs with its own key
        if key is None:
            refusal = ReadOnlyConsole("operator.backup")
            refusal.message = ("access denied: console is read-only and this installation has no export key yet "
                               "(a read-only gateway never creates one; export once from a writable gateway or "
                               "with `meta-memory export`)")
            refusal.args = (refusal.message,)
            raise refusal

        with self._lock:
            self._expire()
            if len(self._open) >= MAX_OPEN_EXPORTS:
                raise _full(self._open.values())
            export_id = os.urandom(12).hex()
            export = self._open[export_id] = _Export(owner, realm)

        def run() -> None:
            try:
                export_jsonl(self._runtime, _QueueWriter(export.lines, export.cancelled),  # type: ignore[arg-type]
                             signer=LineSigner(key), realm=realm, identity=identity, ledger=ledger)
            except _Abandoned:
                return
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's next fetch
                export.error = exc
            try:
                _put_until_cancelled(export, _DONE)
            except _Abandoned:
                return

        threading.Thread(target=run, name="meta-memory-export", daemon=True).start()
        return export_id

    def fetch(self, owner: str, export_id: str, max_bytes: int) -> dict[str, Any]:
        """The next lines of export ``export_id`` (at least one unless it is done), up to ``max_bytes``:
        ``{export_id, lines, done}``. Raises ``InvalidParams`` (``export_id``) for an unknown, expired
        or someone else's export, or one an erase stopped (:data:`STOPPED_BY_ERASE`), and
        (``realm``/``identity``) when the writer refused its filters."""
        with self._lock:
            self._expire()
            export = self._open.get(export_id)
            if export is None or export.owner != owner:
                raise InvalidParams("unknown or expired export (an export is kept 120 s after its last fetch)",
                                    "export_id")
            if export.stopped_by_erase:
                del self._open[export_id]
                raise InvalidParams(STOPPED_BY_ERASE, "export_id")
            export.touched = time.monotonic()
        if not export.busy.acquire(blocking=False):
            raise InvalidParams("this export is being fetched by another call; fetch its pages in order",
                                "export_id")
        try:
            lines: list[str] = []
            size = 0
            deadline = time.monotonic() + _PAGE_WAIT_S
            while size < max_bytes:
                try:
                    item = export.lines.get(timeout=max(0.0, deadline - time.monotonic()) if not lines else 0.05)
                except queue.Empty:
                    break
                if item is _DONE:
                    export.done = True
                    break
                text = str(item)
                lines.append(text[:-1] if text.endswith("\n") else text)
                size += len(text.encode("utf-8"))
            export.touched = time.monotonic()
        finally:
            export.busy.release()
        if export.stopped_by_erase:  # an erase committed while this call took lines: hand none of them out
            with self._lock:
                self._open.pop(export_id, None)
            raise InvalidParams(STOPPED_BY_ERASE, "export_id")
        if export.done:
            with self._lock:
                self._open.pop(export_id, None)
            if export.error is not None:
                error = export.error
                if isinstance(error, ValueError):
                    raise InvalidParams(str(error), "realm" if "realm" in str(error) else "identity")
                raise error
        return {"export_id": export_id, "lines": lines, "done": export.done}

    def stop_for_erase(self, realm: str, memory_ids: Sequence[str]) -> None:
        """An erase of ``memory_ids`` in ``realm`` committed: stop every export under way that covers ``realm``
        (started on it, or on every realm). Its writer gives up and its buffered lines are dropped; its next
        fetch is refused with :data:`STOPPED_BY_ERASE`, and a fetch already running hands out no more lines.
        Called by the runtime after each committed erase (``FeatureContext.on_erased``)."""
        if not memory_ids:
            return
        with self._lock:
            for export in self._open.values():
                if export.realm is None or export.realm == realm:
                    export.stopped_by_erase = True
                    export.cancelled.set()
                    _drain(export.lines)

    def close(self) -> None:
        """Abandon every export (the runtime closes)."""
        with self._lock:
            for export in self._open.values():
                export.cancelled.set()
            self._open.clear()


def _drain(lines: "queue.Queue[Any]") -> None:
    """Drop every line buffered in ``lines``."""
    while True:
        try:
            lines.get_nowait()
        except queue.Empty:
            return


def _full(exports: Iterable[_Export]) -> CapacityExceeded:
    """The refusal of an export while :data:`MAX_OPEN_EXPORTS` are under way: when the first place frees if
    nobody fetches its export again (``retry_after_ms``, and in the message: a caller that stopped fetching,
    an interrupted ``meta-memory export --url``, cannot end its export sooner, since no call abandons one)."""
    wait_s = max(0.0, min(e.touched for e in exports) + IDLE_TIMEOUT_S - time.monotonic())
    return CapacityExceeded(
        f"{MAX_OPEN_EXPORTS} exports are under way; an export holds its place until it ends or has gone "
        f"{IDLE_TIMEOUT_S:.0f} s without a fetch (an interrupted one too), so retry in {math.ceil(wait_s)} s",
        resource="exports", limit=MAX_OPEN_EXPORTS, retry_after_ms=max(1, math.ceil(wait_s * 1000)))


def _put_until_cancelled(export: _Export, item: Any) -> None:
    given_up_at = time.monotonic() + IDLE_TIMEOUT_S
    while not export.cancelled.is_set() and time.monotonic() <= given_up_at:
        try:
            export.lines.put(item, timeout=0.5)
            return
        except queue.Full:
            continue
    export.cancelled.set()
    raise _Abandoned

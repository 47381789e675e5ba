"""JSON-RPC 2.0 framing over the method table: single calls, batches, notifications.

Transports hand raw bytes (or a decoded JSON value) to :class:`Dispatcher`
and write back whatever it returns; ``None`` means "no response" (a
notification, or a batch of notifications). Errors are mapped in exactly one
place, :func:`error_response`: a :class:`~meta_memory.errors.MetaError` keeps
its code and data; anything else is logged with its traceback and answered
with a bare ``-32603 Internal error``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .. import strict_json
from ..errors import CapacityExceeded, InternalError, InvalidRequest, MetaError, ParseError
from ..limits import DEFAULT_MAX_BATCH_MS, DEFAULT_MAX_RESPONSE_BYTES, TOKENLESS_MAX_RESPONSE_BYTES
from ..observability.requests import bound_request_id
from .params import MAX_PARAMS_DEPTH, PARAMS_OBJECT_RULE
from .registry import CallContext, MethodTable

if TYPE_CHECKING:  # pragma: no cover
    from ..runtime import Runtime

__all__ = ["Answer", "AnswerHold", "Dispatcher", "error_response", "decode_body", "encode"]

log = logging.getLogger("meta_memory.rpc")

_MISSING = object()


def error_response(request_id: Any, exc: BaseException) -> dict[str, Any]:
    """The JSON-RPC error response for ``exc`` (the single error-mapping point)."""
    if isinstance(exc, MetaError):
        err = exc.to_jsonrpc()
    else:
        log.exception("internal error while serving a request", exc_info=exc)
        err = InternalError().to_jsonrpc()
    return {"jsonrpc": "2.0", "error": err, "id": request_id}


def decode_body(body: bytes | str) -> Any:
    """Decode a request body. Raises :class:`ParseError` on invalid UTF-8 or invalid JSON, and on JSON nested
    too deep for the reader: that one carries the body's top-level ``id`` when it is well-formed and holds
    a valid one (read without recursion, :func:`~meta_memory.strict_json.top_level_member`), so the answer
    names the request (JSON-RPC 2.0 answers ``id: null`` only when the id cannot be detected)."""
    if isinstance(body, bytes):
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError(f"request body is not valid UTF-8 (byte {exc.start})") from None
    else:
        text = body
    try:
        return strict_json.loads(text)
    except RecursionError:
        top_id = strict_json.top_level_member(text, "id")
        raise ParseError(f"request nesting is too deep for the JSON reader (params nest at most {MAX_PARAMS_DEPTH} "
                         "levels of objects and arrays)",
                         request_id=top_id if top_id is not strict_json.MISSING and _valid_id(top_id) else None
                         ) from None
    except json.JSONDecodeError as exc:
        raise ParseError(f"invalid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except ValueError as exc:  # e.g. an integer literal past the interpreter's digit limit
        raise ParseError(f"invalid JSON ({exc})") from None


def encode(payload: Any) -> bytes:
    """Serialise a response (UTF-8, no ASCII escaping, lone surrogates escaped)."""
    try:
        return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(payload, ensure_ascii=True, separators=(",", ":")).encode("ascii")


@dataclass(frozen=True, slots=True)
class Answer:
    """What a transport writes back: ``parts``, the response's bytes in order (a batch's answers one part
    each, so a transport may send them as they are and let each go; none = no response), and, for a single
    call refused with ``capacity_exceeded`` that says when to retry, ``retry_after_ms`` (HTTP answers it
    with 503 and ``Retry-After``)."""

    parts: list[bytes]
    retry_after_ms: int | None = None

    @property
    def body(self) -> bytes | None:
        """The whole response (``None`` = no response)."""
        return b"".join(self.parts) if self.parts else None

    @property
    def size(self) -> int:
        """The response's length in bytes."""
        return sum(len(part) for part in self.parts)


class AnswerHold(Protocol):
    """Where a transport keeps count of the answer bytes it holds over every request (HTTP: ``[gateway]
    max_buffered_response_bytes``). :meth:`Dispatcher.answer` asks :meth:`admit` before each call starts and
    hands :meth:`count` each answer's bytes as it is encoded; both may be called from a worker thread."""

    def admit(self) -> CapacityExceeded | None:
        """``None`` when a call may start now, else the refusal answered in its place (it is not run)."""

    def count(self, size: int) -> None:
        """``size`` more bytes of this request's answers are held (never refused: they are built)."""


def _retry_after_ms(response: Any) -> int | None:
    """``data.retry_after_ms`` of a single ``capacity_exceeded`` error response, else ``None``."""
    if not isinstance(response, dict) or not isinstance(error := response.get("error"), dict):
        return None
    data = error.get("data")
    if not isinstance(data, dict) or data.get("kind") != "capacity_exceeded":
        return None
    value = data.get("retry_after_ms")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


@dataclass(slots=True)
class _Budget:
    """A running batch's refusal, once one is due (set by the batch's time budget or by its consumer's
    byte count), and the position of the call last started."""

    refusal: CapacityExceeded | None = None
    position: int = 0


def _valid_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, (int, float)) and not isinstance(value, bool))


class Dispatcher:
    """Runs decoded JSON-RPC messages against one runtime through one method table.

    ``max_batch`` bounds the number of calls in one batch (larger batches are
    refused with ``-32600`` naming ``batch``). ``max_batch_ms`` bounds the time one batch runs
    (milliseconds, wall clock, from its first call): a call of the batch not started when it is spent is
    not run and is answered, in its place, with ``-32005 capacity_exceeded`` (``resource:
    "batch_time"``, ``limit`` = ``max_batch_ms``, ``retry_after_ms``); a notification not started gets no
    answer, as any notification. A call already running finishes under its own deadline.

    ``max_response_bytes`` bounds the encoded answers one request produces (UTF-8 bytes, counted as each
    answer is encoded, in :meth:`answer`; a caller that sent no token to a gateway listing tokens gets at
    most ``TOKENLESS_MAX_RESPONSE_BYTES``, see :meth:`response_cap`): once a batch's answers pass it, each
    call not yet started is answered ``-32005 capacity_exceeded`` (``resource: "response_bytes"``, ``limit``)
    in its place, not run (so at most one answer more is sent: the one that passed it); an answer larger than
    the cap on its own (a single call's, or one in a batch) is replaced by that error, its call having run.
    A transport's :class:`AnswerHold` bounds the answers held over every request the same way: a call not
    yet started when it refuses is answered with its refusal, not run. :meth:`handle_message` (decoded data, for in-process
    callers) counts no bytes.
    """

    def __init__(self, table: MethodTable, runtime: "Runtime", *, max_batch: int = 10_000,
                 max_batch_ms: int = DEFAULT_MAX_BATCH_MS,
                 max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES) -> None:
        self.table = table
        self.runtime = runtime
        self.max_batch = max_batch
        self.max_batch_ms = max_batch_ms
        self.max_response_bytes = max_response_bytes

    def response_cap(self, ctx: CallContext) -> tuple[int, str]:
        """The bytes of answers ``ctx``'s request may produce and the rule that sets them (for refusals):
        ``[gateway] max_response_bytes``, lowered to ``TOKENLESS_MAX_RESPONSE_BYTES`` for a caller that
        sent no token to a gateway that lists tokens."""
        if self.runtime.access.tokenless(ctx.principal) and TOKENLESS_MAX_RESPONSE_BYTES < self.max_response_bytes:
            return TOKENLESS_MAX_RESPONSE_BYTES, "for a caller without a token"
        return self.max_response_bytes, "[gateway] max_response_bytes"

    def handle_bytes(self, body: bytes | str, ctx: CallContext) -> bytes | None:
        """Full pipeline for a transport: decode, dispatch, encode. ``None`` = no response."""
        return self.answer(body, ctx).body

    def answer(self, body: bytes | str, ctx: CallContext, hold: AnswerHold | None = None) -> Answer:
        """:meth:`handle_bytes` with what a transport may add to the body (see :class:`Answer`); each answer's
        bytes are counted in ``hold``, and a call it refuses is answered with that refusal, not run."""
        try:
            message = decode_body(body)
        except ParseError as exc:
            data = encode(self._name_request(error_response(exc.request_id, exc), ctx))
            if hold is not None:
                hold.count(len(data))
            return Answer([data])
        with bound_request_id(ctx.request_id):
            cap = self.response_cap(ctx)
            if isinstance(message, list) and message and len(message) <= self.max_batch:
                return Answer(self._encode_batch(message, ctx, cap, hold))
            refusal = None if hold is None or isinstance(message, list) else hold.admit()
            response = (self._handle_message(message, ctx) if refusal is None
                        else self._refuse_one(message, refusal, ctx))
            if response is None:
                return Answer([])
            data = encode(response)
            if len(data) > cap[0]:
                data = self._too_large(response, len(data), cap, ctx)
            if hold is not None:
                hold.count(len(data))
        return Answer([data], _retry_after_ms(response))

    def _encode_batch(self, batch: list[Any], ctx: CallContext, cap: tuple[int, str],
                      hold: AnswerHold | None = None) -> list[bytes]:
        """A batch's answers encoded one by one and counted against ``cap`` and in ``hold`` (see
        :class:`Dispatcher`)."""
        budget = _Budget(refusal=None if hold is None else hold.admit())
        parts: list[bytes] = []
        total = 0
        for response in self._run_batch(batch, ctx, budget):
            if response is None:
                continue
            data = encode(response)
            if len(data) > cap[0]:
                data = self._too_large(response, len(data), cap, ctx)
            parts.append((b"," if parts else b"[") + data)
            total += len(data) + 1
            if hold is not None:
                hold.count(len(data) + 1)
            if total > cap[0] and budget.refusal is None:
                budget.refusal = CapacityExceeded(
                    f"the batch's answers passed the cap of {cap[0]} bytes of answers per request ({cap[1]}): "
                    f"its calls after position {budget.position} were not run; send them again",
                    resource="response_bytes", limit=cap[0])
            if budget.refusal is None and hold is not None:
                budget.refusal = hold.admit()
        if parts:
            parts.append(b"]")
        return parts

    def _too_large(self, response: dict[str, Any], size: int, cap: tuple[int, str], ctx: CallContext) -> bytes:
        """The error sent in place of one answer of ``size`` bytes, larger than the whole ``cap``."""
        refusal = CapacityExceeded(
            f"the answer of this call is {size} bytes, over the cap of {cap[0]} bytes of answers per request "
            f"({cap[1]}): it was run but its answer is not sent; ask for less (a smaller limit or page)",
            resource="response_bytes", limit=cap[0])
        return encode(self._name_request(error_response(response.get("id"), refusal), ctx))

    def handle_message(self, message: Any, ctx: CallContext) -> Any:
        """Dispatch a decoded message (object or batch array) with ``ctx.request_id`` bound to it (log
        lines and spans carry it; error responses name it in ``data.request_id`` when the runtime's
        logs or traces can be searched for it)."""
        with bound_request_id(ctx.request_id):
            return self._handle_message(message, ctx)

    def _handle_message(self, message: Any, ctx: CallContext) -> Any:
        if isinstance(message, list):
            if not message:
                return error_response(None, InvalidRequest("batch must not be empty", "batch"))
            if len(message) > self.max_batch:
                return error_response(
                    None, InvalidRequest(f"batch has {len(message)} calls; the cap is {self.max_batch}", "batch")
                )
            responses = [r for r in self._run_batch(message, ctx, _Budget()) if r is not None]
            return responses or None
        return self._handle_one(message, ctx)

    def _run_batch(self, batch: list[Any], ctx: CallContext, budget: "_Budget") -> Iterator[dict[str, Any] | None]:
        """Each call's answer in order; once ``budget.refusal`` is set (by the consumer, between two answers)
        or :attr:`max_batch_ms` is spent, the calls left are refused, never run."""
        ends_at = time.monotonic() + self.max_batch_ms / 1000
        for i, message in enumerate(batch):
            budget.position = i
            if budget.refusal is None and time.monotonic() >= ends_at:
                budget.refusal = CapacityExceeded(
                    f"the batch ran out of time: its calls from position {i} on were not run (a batch may run "
                    f"[gateway] max_batch_ms = {self.max_batch_ms} ms); send them again",
                    resource="batch_time", limit=self.max_batch_ms, retry_after_ms=self.max_batch_ms)
            refusal = budget.refusal
            yield self._handle_one(message, ctx) if refusal is None else self._refuse_one(message, refusal, ctx)

    def _refuse_one(self, message: Any, refusal: CapacityExceeded, ctx: CallContext) -> dict[str, Any] | None:
        """The answer of a batch call that was not run: its framing error if it has one (nothing runs for
        those), none for a notification, else ``refusal`` under its id."""
        if not isinstance(message, dict) or not _valid_id(message.get("id")):
            return self._handle_one(message, ctx)
        if "id" not in message:
            return None
        return self._name_request(error_response(message["id"], refusal), ctx)

    def _handle_one(self, message: Any, ctx: CallContext) -> dict[str, Any] | None:
        response = self._answer_one(message, ctx)
        return None if response is None else self._name_request(response, ctx)

    def _name_request(self, response: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
        """An error response with ``data.request_id`` when the runtime's logs or traces carry it."""
        if "error" in response and ctx.request_id is not None and self.runtime.observability.names_request_ids:
            response["error"].setdefault("data", {})["request_id"] = ctx.request_id
        return response

    def _answer_one(self, message: Any, ctx: CallContext) -> dict[str, Any] | None:
        if not isinstance(message, dict):
            return error_response(None, InvalidRequest("request must be a JSON object"))
        raw_id = message.get("id", _MISSING)
        request_id = raw_id if raw_id is not _MISSING and _valid_id(raw_id) else None
        if raw_id is not _MISSING and not _valid_id(raw_id):
            return error_response(None, InvalidRequest("id must be a string, a number or null", "id"))
        if message.get("jsonrpc") != "2.0":
            return error_response(request_id, InvalidRequest('jsonrpc must be exactly "2.0"', "jsonrpc"))
        method = message.get("method")
        if not isinstance(method, str) or not method:
            return error_response(request_id, InvalidRequest("method must be a non-empty string", "method"))
        extra = set(message) - {"jsonrpc", "method", "params", "id"}
        if extra:
            return error_response(request_id, InvalidRequest(f"unknown member '{sorted(extra)[0]}'", sorted(extra)[0]))
        params = message.get("params")
        if "params" in message and not isinstance(params, (dict, list)):
            # not a JSON-RPC request (params, when present, is structured): -32600; an array is one, refused
            # -32602 by the params parser; both in the words of the one rule, params are a JSON object
            return error_response(request_id, InvalidRequest(PARAMS_OBJECT_RULE, "params"))
        is_notification = raw_id is _MISSING
        try:
            result = self.table.call(self.runtime, ctx, method, params)
        except Exception as exc:  # noqa: BLE001 - mapped in one place
            return None if is_notification else error_response(request_id, exc)
        if is_notification:
            return None
        return {"jsonrpc": "2.0", "result": result, "id": request_id}

"""Every refusal the product can give, one class per kind.

Domain code raises these; the JSON-RPC surfaces translate them in exactly one
place (:func:`meta_memory.rpc.dispatch.error_response`) through
:meth:`MetaError.to_jsonrpc`. The codes and ``data.kind`` values are the table
in the spec README ("JSON-RPC errors"):

=========  ==========================================  ===================================
code       class                                       ``data``
=========  ==========================================  ===================================
-32700     :class:`ParseError`                         ``{kind: "parse_error"}``
-32600     :class:`InvalidRequest`                     ``{kind: "invalid_request", field?}``
-32601     :class:`MethodNotFound`                     ``{kind: "method_not_found"}``
-32602     :class:`InvalidParams`                      ``{kind: "invalid_params", field?}``
-32603     :class:`InternalError`                      ``{kind: "internal"}``
-32001     :class:`RecordNotFound`                     ``{kind: "not_found", memory_id}``
-32004     :class:`AccessControlNotConfigured`         ``{kind: "access_control_not_configured"}``
-32005     :class:`CapacityExceeded`                   ``{kind: "capacity_exceeded", resource, limit}``
-32010     :class:`MemoryBackendUnavailable`           ``{kind: "memory_backend"}``
-32030     :class:`AccessDenied`                       ``{kind: "access_denied", action, resource}``
-32040     :class:`AgentMemoryError`                   ``{kind: "agent_memory", reason, op_index?, ...}``
-32043     :class:`QuarantineReviewRefused`            ``{kind: "memory_quarantine_review_refused", reason, ...}``
=========  ==========================================  ===================================

Domain rules broken by a value (the assertion ledger's field rules, a tool provenance's shape) are
:class:`ValueRuleBroken` subclasses carrying ``field`` and ``rule``; they know nothing of JSON-RPC.
The method table (:meth:`meta_memory.rpc.registry.MethodTable.call`, the path every transport takes)
answers them as :class:`InvalidParams` through :func:`meta_memory.rpc.params.rule_to_invalid_params`.

The classes above, in that order, are :data:`CATALOGUE` (derived from the classes declared here):
the one table the reverse mapping
(:func:`from_jsonrpc`, which the remote SDK transports use) is derived from. A refusal that shares a
catalogued code subclasses that code's class (an HTTP token refused is
:class:`~meta_memory.access.principal.AuthenticationFailed`, an :class:`AccessDenied`) and travels the
same mapping.

Start-up refusals (bad configuration, a predecessor ledger, file-name twins,
a malformed ledger file) are :class:`StartupError`; they never reach a client
because the gateway does not start.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from typing import Any, ClassVar

from meta_memory.textfold import escape_char, is_invisible

__all__ = [
    "MetaError",
    "ParseError",
    "InvalidRequest",
    "MethodNotFound",
    "InvalidParams",
    "InternalError",
    "RecordNotFound",
    "AccessControlNotConfigured",
    "CapacityExceeded",
    "MemoryBackendUnavailable",
    "AccessDenied",
    "AgentMemoryError",
    "QuarantineReviewRefused",
    "StartupError",
    "ConfigError",
    "known_keys",
    "ValueRuleBroken",
    "CATALOGUE",
    "catalogue_of",
    "from_jsonrpc",
    "ECHO_CHARS",
    "echo",
]

#: A refusal repeats at most this many characters of a name the caller sent (a method, a field, a key).
ECHO_CHARS = 64


#: Characters a refusal never repeats as they are: control characters (a terminal's escape sequences),
#: surrogates, line/paragraph separators, private-use code points and unassigned ones (noncharacters among
#: them: a font of one's own, or a byte each, carries text a reader does not see but a model reads), and
#: every invisible character (:func:`meta_memory.textfold.is_invisible`: format characters such as bidi
#: overrides, zero-width and tag characters, variation selectors, the combining grapheme joiner, blank fillers).
_UNSHOWN_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp", "Co", "Cn"})


def _unshown(ch: str) -> bool:
    """Whether a refusal writes ``ch`` as its escape (:data:`_UNSHOWN_CATEGORIES`)."""
    return unicodedata.category(ch) in _UNSHOWN_CATEGORIES or is_invisible(ch)


def echo(name: str, limit: int = ECHO_CHARS) -> str:
    """``name`` as a refusal may repeat it: its first ``limit`` characters (:data:`ECHO_CHARS` unless a
    caller quotes more, such as a whole rule), ``...`` after them when it is longer (a caller's name may be
    megabytes long; the answer stays small), every invisible or controlling character among them written as
    its escape (``\\u202e``, ``\\x1b``, ``\\U000f0000``: :func:`~meta_memory.textfold.escape_char`), so a
    refusal carries no hidden text or terminal control back to a model, a log or a terminal."""
    head = name if len(name) <= limit else name[:limit]
    shown = "".join(escape_char(ch) if _unshown(ch) else ch for ch in head)
    return shown if len(name) <= limit else shown + "..."


class ValueRuleBroken(Exception):
    """A value broke a domain rule. Not a JSON-RPC error: the RPC layer answers it as ``-32602``.

    Attributes:
        rule: the rule in words, e.g. ``fact is required unless conflict=true``.
        field: the offending field's name (``None`` when the whole value is at fault).
    """

    def __init__(self, rule: str, field: str | None = None) -> None:
        super().__init__(rule)
        self.rule = rule
        self.field = field


class MetaError(Exception):
    """Base of every refusal that maps to a JSON-RPC error.

    Attributes:
        code: the JSON-RPC error code (class constant).
        kind: the ``data.kind`` string (class constant).
        message: the human-readable ``error.message``.
        data: extra ``error.data`` members (``kind`` is always added).

    A subclass names in ``wire_fields`` the attributes its constructor copies into ``data``;
    :func:`from_jsonrpc` sets each of them (``None`` when the gateway left it out), and
    :meth:`_rebuild` restores what a constructor derives from the message, so a rebuilt error has the
    attributes of the one the gateway raised.
    """

    code: ClassVar[int] = -32603
    kind: ClassVar[str] = "internal"
    wire_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.data: dict[str, Any] = {k: v for k, v in data.items() if v is not None}

    def to_jsonrpc(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` object: ``{code, message, data: {kind, ...}}``."""
        return {"code": self.code, "message": self.message, "data": {"kind": self.kind, **self.data}}

    def _rebuild(self) -> None:
        """Set the attributes the constructor sets, from ``self.message`` and ``self.data`` (see
        :func:`from_jsonrpc`)."""
        for name in self.wire_fields:
            setattr(self, name, self.data.get(name))

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"{type(self).__name__}({self.message!r}, {self.data!r})"


class ParseError(MetaError):
    """-32700: the request body is not valid JSON (or not valid UTF-8).

    ``request_id`` is the id the answer carries: ``None`` unless the body's top-level ``id`` could still
    be read (a well-formed body nested too deep for the JSON reader)."""

    code = -32700
    kind = "parse_error"
    request_id: str | int | float | None = None

    def __init__(self, detail: str = "invalid JSON", *, request_id: str | int | float | None = None) -> None:
        super().__init__(f"Parse error: {detail}")
        self.request_id = request_id


class InvalidRequest(MetaError):
    """-32600: valid JSON that is not a JSON-RPC 2.0 request object."""

    code = -32600
    kind = "invalid_request"
    wire_fields = ("field",)
    PREFIX: ClassVar[str] = "Invalid request: "

    def __init__(self, rule: str, field: str | None = None) -> None:
        super().__init__(self.PREFIX + rule, field=field)
        self.rule = rule
        self.field = field

    def _rebuild(self) -> None:
        super()._rebuild()
        self.rule = self.message.removeprefix(self.PREFIX)


class MethodNotFound(MetaError):
    """-32601: no such method in the method table (or it is unadvertised)."""

    code = -32601
    kind = "method_not_found"
    wire_fields = ("method",)

    def __init__(self, method: str, message: str | None = None) -> None:
        method = echo(method)
        super().__init__(message or f"Method not found: {method}", method=method)
        self.method = method


class InvalidParams(MetaError):
    """-32602: params broke a rule. ``message`` is ``Invalid params: <rule>``; ``data.field`` names the field."""

    code = -32602
    kind = "invalid_params"
    wire_fields = ("field",)
    PREFIX: ClassVar[str] = "Invalid params: "

    def __init__(self, rule: str, field: str | None = None) -> None:
        super().__init__(self.PREFIX + rule, field=field)
        self.rule = rule
        self.field = field

    def _rebuild(self) -> None:
        super()._rebuild()
        self.rule = self.message.removeprefix(self.PREFIX)


class InternalError(MetaError):
    """-32603: an unexpected failure. The message never carries a traceback."""

    code = -32603
    kind = "internal"

    def __init__(self, message: str = "Internal error") -> None:
        super().__init__(message)


class RecordNotFound(MetaError):
    """-32001: unknown memory record (panel ``record`` and similar look-ups)."""

    code = -32001
    kind = "not_found"
    wire_fields = ("memory_id",)

    def __init__(self, memory_id: str) -> None:
        super().__init__(f"unknown memory record '{memory_id}'", memory_id=memory_id)
        self.memory_id = memory_id


class AccessControlNotConfigured(MetaError):
    """-32004: the method needs access control and none is configured."""

    code = -32004
    kind = "access_control_not_configured"

    def __init__(self, message: str = "access control is not configured") -> None:
        super().__init__(message)


class CapacityExceeded(MetaError):
    """-32005: a server-wide capacity is full (e.g. ``resource = "event_subscribers"``, ``"recall_slots"``);
    retry later.

    ``data``: ``resource`` (what is full), ``limit`` (the configured cap) and, when the gateway can tell,
    ``retry_after_ms`` (when to retry; over HTTP also the ``Retry-After`` header, in whole seconds)."""

    code = -32005
    kind = "capacity_exceeded"
    wire_fields = ("resource", "limit", "retry_after_ms")

    def __init__(self, message: str, *, resource: str, limit: int, retry_after_ms: int | None = None) -> None:
        super().__init__(message, resource=resource, limit=limit, retry_after_ms=retry_after_ms)
        self.resource = resource
        self.limit = limit
        self.retry_after_ms = retry_after_ms


class MemoryBackendUnavailable(MetaError):
    """-32010: the ledger backend failed its health check or its persist.

    Message: ``Memory backend unavailable: <reason>`` (seed: Health checks; reference §1.12).
    """

    code = -32010
    kind = "memory_backend"
    PREFIX: ClassVar[str] = "Memory backend unavailable: "

    def __init__(self, reason: str) -> None:
        super().__init__(self.PREFIX + reason)
        self.reason = reason

    def _rebuild(self) -> None:
        self.reason = self.message.removeprefix(self.PREFIX)


class AccessDenied(MetaError):
    """-32030: ``access denied: <action>`` with ``data {action, resource}``."""

    code = -32030
    kind = "access_denied"
    wire_fields = ("action", "resource")

    def __init__(self, action: str, resource: str | None = None) -> None:
        super().__init__(f"access denied: {action}", action=action, resource=resource)
        self.action = action
        self.resource = resource


class AgentMemoryError(MetaError):
    """-32040: the agent-memory store refused.

    ``reason`` is one of ``invalid_record``, ``secret_detected``,
    ``scope_not_writable``, ``timeout``, ``unsupported``, ``invalid_config``,
    ``io``, ``session_limit`` (the session state is at its row cap; new
    sessions are refused, never an old one evicted), ``limit`` (a configured resource cap, named in
    the message, e.g. ``max_realms``), ``erased`` (the write would bring back an erased record id, or
    erased content into the scope it was erased from: the erasure register, ``agent_memory/erase.py``;
    the message names the id or the scope, never the content), ``review_pending`` (an erase reached
    content a pending gated promotion waits on), ``disk_full`` (a write found no space left; the message names the
    disk; nothing was written and reads keep working), ``corrupt`` (a realm database is damaged or not a
    database; the message names the file and the doctor; other realms are served).
    ``op_index`` names the op of a staged batch when one is at fault; with ``secret_detected``,
    ``secret_class`` names the class and ``field`` the part of the record that held it (``title``,
    ``tags.1``, ``metadata.deep.k``; ``records.<i>.<path>`` in a bulk write), never the text.
    The message carries the reference's Display prefix, e.g.
    ``invalid agent memory record: op 0: title must not be empty``.
    """

    code = -32040
    kind = "agent_memory"
    wire_fields = ("reason", "op_index", "secret_class", "field")

    PREFIXES: ClassVar[dict[str, str]] = {
        "invalid_record": "invalid agent memory record: ",
        "secret_detected": "invalid agent memory record: ",
        "scope_not_writable": "invalid agent memory record: ",
        "invalid_config": "invalid agent memory config: ",
        "io": "agent memory I/O error: ",
        "parse": "agent memory parse error: ",
        "timeout": "agent memory timeout: ",
        "unsupported": "agent memory unsupported operation: ",
        "session_limit": "agent memory session limit: ",
        "limit": "agent memory limit reached: ",
        "erased": "agent memory write refused: ",
        "disk_full": "agent memory disk full: ",
        "corrupt": "agent memory store damaged: ",
    }

    @classmethod
    def over_limit(cls, refused: str, key: str, limit: int) -> AgentMemoryError:
        """The refusal of a write past a configured resource cap: reason ``limit``, the message saying what
        was refused and why (``refused``, with the figures) and naming the key and its value, e.g.
        ``cannot create realm 'r3': 3 realms exist and agent_memory.max_realms = 3``."""
        return cls("limit", f"{refused} and agent_memory.{key} = {limit}")

    def __init__(
        self,
        reason: str,
        detail: str,
        *,
        op_index: int | None = None,
        secret_class: str | None = None,
        field: str | None = None,
    ) -> None:
        prefix = self.PREFIXES.get(reason, "agent memory error: ")
        super().__init__(prefix + detail, reason=reason, op_index=op_index, secret_class=secret_class, field=field)
        self.reason = reason
        self.detail = detail
        self.op_index = op_index
        self.secret_class = secret_class
        self.field = field

    def _rebuild(self) -> None:
        super()._rebuild()
        self.detail = self.message.removeprefix(self.PREFIXES.get(str(self.reason), "agent memory error: "))


class QuarantineReviewRefused(MetaError):
    """-32043: a quarantine decision was refused (seed: Reviewing quarantined records).

    ``reason``: ``not_found``, ``content_mismatch``, ``not_quarantined``,
    ``gate_pending`` (+ ``expires_at_ms``), ``successor_conflict``,
    ``secret_detected`` (+ ``class``), ``stale_update``. ``field`` names the param at fault when one is:
    ``expected_content_hash`` for ``content_mismatch`` (``None`` otherwise).
    """

    code = -32043
    kind = "memory_quarantine_review_refused"
    wire_fields = ("reason", "field")
    PREFIX: ClassVar[str] = "quarantine review refused: "

    def __init__(self, reason: str, detail: str, *, field: str | None = None, **extra: Any) -> None:
        super().__init__(self.PREFIX + detail, reason=reason, field=field, **extra)
        self.reason = reason
        self.detail = detail
        self.field = field

    def _rebuild(self) -> None:
        super()._rebuild()
        self.detail = self.message.removeprefix(self.PREFIX)


class StartupError(Exception):
    """The runtime refuses to start (predecessor ledger, twins, malformed ledger file, bad config)."""


class ConfigError(StartupError, ValueError):
    """Configuration refused at decode; the message names the key and the rule."""


def known_keys(keys: Iterable[str]) -> str:
    """What a configuration refusal of an unknown key adds: the keys its table takes, sorted,
    ``(known: denies, enabled, grants, roster, tokens)``. Every table's refusal ends with it."""
    return f"(known: {', '.join(sorted(keys))})"


#: How a configuration value of each TOML type is named in a refusal.
_CONFIG_KINDS: tuple[tuple[type, str], ...] = (
    (bool, "a boolean"), (int, "an integer"), (float, "a float"), (str, "a string"),
    (list, "an array"), (dict, "a table"),
)


def shown_config_value(value: object) -> str:
    """A refused configuration value as a refusal shows it, at most 60 characters of it: an integer as
    written (``8``), a string quoted (``'8MB'``), anything else with its TOML type (``inf (a float)``,
    ``true (a boolean)``, ``[1, 2] (an array)``)."""
    text = str(value).lower() if isinstance(value, bool) else repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return text
    kind = next((name for cls, name in _CONFIG_KINDS if isinstance(value, cls)), f"a {type(value).__name__}")
    return f"{text} ({kind})"


def catalogue_of(base: type[MetaError], module: str) -> tuple[type[MetaError], ...]:
    """The refusal classes ``module`` declares directly under ``base``, in declaration order: one per
    code (a class elsewhere, or a subclass of one of these, shares its parent's code and is rebuilt as
    the parent). Raises ``TypeError`` when two of them claim one code."""
    classes = tuple(cls for cls in base.__subclasses__() if cls.__module__ == module)
    seen: dict[int, str] = {}
    for cls in classes:
        if cls.code in seen:
            raise TypeError(f"{cls.__name__} and {seen[cls.code]} both claim code {cls.code}")
        seen[cls.code] = cls.__name__
    return classes


#: Every JSON-RPC refusal class, one per code, in the order of the table above: derived from the
#: classes this module declares (:func:`catalogue_of`), so a new refusal kind is catalogued by being
#: written. The one source of the code -> class mapping (:func:`from_jsonrpc`); the TypeScript SDK's
#: table mirrors it (checked through ``sdk/typescript/test/error-catalogue.json``).
CATALOGUE: tuple[type[MetaError], ...] = catalogue_of(MetaError, __name__)

_BY_CODE: dict[int, type[MetaError]] = {cls.code: cls for cls in CATALOGUE}


def from_jsonrpc(error: dict[str, Any]) -> MetaError:
    """Rebuild the typed error a gateway sent (the remote SDK raises the same classes as embedded).

    ``error`` is a JSON-RPC error object ``{code, message, data?}``; the class is the catalogued one
    for ``code`` (:data:`CATALOGUE`). Every member of ``data`` but ``kind`` becomes an attribute, and
    the class's own attributes are set as its constructor sets them (``None`` when ``data`` lacks
    them): e.g. ``CapacityExceeded.retry_after_ms``, ``InvalidParams.rule`` and ``field``. Unknown
    codes become a plain :class:`MetaError` carrying the code.
    """
    code = error.get("code")
    message = str(error.get("message", ""))
    data = dict(error.get("data") or {})
    cls = _BY_CODE.get(code) if isinstance(code, int) else None
    exc = (cls or MetaError).__new__(cls or MetaError)
    Exception.__init__(exc, message)
    exc.message = message
    data.pop("kind", None)
    exc.data = data
    if cls is None:
        exc.code = code if isinstance(code, int) else -32603  # type: ignore[misc]
    for key, value in data.items():
        if key not in ("message", "data", "code", "kind"):
            setattr(exc, key, value)
    exc._rebuild()
    return exc

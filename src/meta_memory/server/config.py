"""``[gateway]``: transport limits and the HTTP perimeter, decoded strictly.

Keys (all optional):

=========================  =====================================================  ==========
key                        meaning                                                default
=========================  =====================================================  ==========
``max_request_bytes``      request bodies (and stdio lines) above it are refused  8 MiB
``max_batch``              calls per JSON-RPC batch                               10,000
``max_batch_ms``           milliseconds one batch may run; its calls not started  60,000
                           by then are answered ``capacity_exceeded`` (10..
                           3,600,000)
``max_response_bytes``     bytes of encoded answers one request may produce:       256 MiB
                           once its answers pass it, a batch's calls not yet
                           started are answered ``capacity_exceeded``, unrun
                           (at most one answer more is sent: the one that
                           passed it); a single answer above it is replaced
                           by that error (64 KiB..4 GiB)
``max_buffered_``          bytes of ``POST /rpc`` bodies held at once, over        64 MiB
``request_bytes``          every connection; past it a request is answered 503
                           with ``Retry-After`` unread (at least
                           ``max_request_bytes``, which it follows when
                           unset and larger; 1 KiB..16 GiB); a caller without
                           a token holds at most 1/8 of it, one principal half
``max_buffered_``          bytes of encoded answers held at once, over every       512 MiB
``response_bytes``         connection, until each is handed to its connection;
                           past it, calls not yet started are answered
                           ``capacity_exceeded`` unrun; a caller without a
                           token holds at most 1/8 of it, one principal half
                           (1 MiB..64 GiB)
``events_retention``       timeline events kept durably                           10,000
``max_event_subscribers``  concurrent ``GET /events`` streams                     64
``max_connections``        open connections over every client (1..1,048,576);     from
                           one more is answered 503 and closed at once; never     ``ulimit
                           served above what the open-file limit leaves after     -n``
                           a reserve of an eighth of it (at least 256)
``max_connections_``       open connections from one peer address (an IPv6 /64)  512
``per_ip``                 (1..1,048,576); one more is answered 503 and closed
``reserve_connections``    connections admitted past either cap when no held one  32
                           can be displaced, each for requests that carry an
                           accepted token or ``GET /v1/health`` (anything else
                           is answered 503 and closed, unrun); 0 = none (0..256)
``max_tokenless_``         requests without an accepted bearer token in progress  32
``requests``               at once on a gateway that lists tokens (health,
                           ``/events`` and ``metrics_bind`` scrapes aside); one
                           more is answered 503 with ``Retry-After`` and closed,
                           unrun (1..10,000)
``header_timeout_s``       seconds a connection may take to send request headers  10
``body_timeout_s``         seconds a request may take to send its whole body      30
``send_timeout_s``         seconds a connection's send buffer may stay full with  30
                           its client reading none of it before the connection
                           is dropped and the answers held for it given back
``allowed_hosts``          extra ``Host`` names served (besides loopback, bind)   ``[]``
``allowed_origins``        extra browser origins allowed (enables CORS for them)  ``[]``
``min_free_disk_mb``       ``GET /v1/ready`` answers 503 below this much free      256
                           space (MiB) on the state directory's disk; 0 = no
                           floor (0..10,000,000)
``integrity_check_``       seconds between two background ``PRAGMA quick_check``  3600
``interval_s``             runs of one realm database (0 = never; 60..2,592,000)
``metrics_bind``           ``"host:port"`` of a second listener serving only      none
                           ``GET /metrics``, with no token (the address guards
                           it: keep it on loopback or a private network)
``backup_dir``             the absolute path of an existing directory under        none
                           which ``meta/storage/backup`` may write (the method
                           is refused without it; a missing one refuses start)
``forwarded_allow_ips``    IP addresses or networks (``10.0.0.0/8``) of reverse   ``[]``
                           proxies whose ``X-Forwarded-For`` and
                           ``X-Forwarded-Proto`` are honoured; empty: those
                           headers are ignored from every client, loopback too
=========================  =====================================================  ==========

``allowed_hosts`` entries are host names or IP literals without a port, or a
``*.domain`` wildcard (any sub-domain, not the domain itself). ``allowed_origins``
entries are ``http(s)://host[:port]`` with no path. ``forwarded_allow_ips`` entries
are IP addresses or networks. A bare ``*`` is refused in all three: a wildcard would
switch the perimeter off, or let any client forge its address and scheme (see
``docs/security.md``).
Every rule violation is a :class:`~meta_memory.errors.ConfigError` naming the key.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..errors import ConfigError, known_keys, shown_config_value
from ..limits import (
    DEFAULT_MAX_BATCH_MS,
    DEFAULT_MAX_BUFFERED_REQUEST_BYTES,
    DEFAULT_MAX_BUFFERED_RESPONSE_BYTES,
    DEFAULT_MAX_CONNECTIONS_PER_IP,
    DEFAULT_MAX_RESPONSE_BYTES,
    MAX_CONNECTIONS,
)
from ..storage.disk import DEFAULT_MIN_FREE_MB

__all__ = ["DEFAULT_MAX_REQUEST_BYTES", "GatewayConfig", "normalise_host", "normalise_origin",
           "normalise_proxy_address", "parse_bind", "parse_gateway_section"]

DEFAULT_MAX_REQUEST_BYTES = 8 * 1024 * 1024

_HOST_NAME = re.compile(r"(?:\*\.)?[a-z0-9_](?:[a-z0-9_-]{0,62})(?:\.[a-z0-9_](?:[a-z0-9_-]{0,62}))*\.?")


@dataclass(frozen=True)
class GatewayConfig:
    """``[gateway]`` (see the module docstring for each key, its unit and default)."""

    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    max_batch: int = 10_000
    max_batch_ms: int = DEFAULT_MAX_BATCH_MS
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    max_buffered_request_bytes: int = DEFAULT_MAX_BUFFERED_REQUEST_BYTES
    max_buffered_response_bytes: int = DEFAULT_MAX_BUFFERED_RESPONSE_BYTES
    events_retention: int = 10_000
    max_event_subscribers: int = 64
    max_connections: int | None = None  # None: what the open-file limit leaves (server.protocol.connection_budget)
    max_connections_per_ip: int = DEFAULT_MAX_CONNECTIONS_PER_IP
    reserve_connections: int = 32
    max_tokenless_requests: int = 32
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    send_timeout_s: float = 30.0
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    min_free_disk_mb: int = DEFAULT_MIN_FREE_MB
    integrity_check_interval_s: int = 3600
    metrics_bind: tuple[str, int] | None = None
    backup_dir: str | None = None
    forwarded_allow_ips: tuple[str, ...] = ()


_INT_KEYS = ("max_request_bytes", "max_batch", "max_batch_ms", "max_response_bytes", "max_buffered_request_bytes",
             "max_buffered_response_bytes", "events_retention", "max_event_subscribers",
             "max_connections", "max_connections_per_ip", "reserve_connections", "max_tokenless_requests",
             "min_free_disk_mb", "integrity_check_interval_s")
#: Accepted ranges of the ``[gateway]`` integers (inclusive): request bodies from 1 KiB to 1 GiB,
#: batches up to 100,000 calls running 10 ms to an hour, answers from 64 KiB to 4 GiB per request, up to 16 GiB
#: of bodies and 64 GiB of answers buffered at once, up to 10,000,000 retained timeline events, up to
#: 10,000 SSE subscribers, up to 1,048,576 open connections (the open-file limit bounds them further), up to 256
#: more in reserve (within the open-file limit's reserve of at least 256 descriptors) and up to 10,000 requests
#: without an accepted token in progress at once.
GATEWAY_INT_RANGES: dict[str, tuple[int, int]] = {
    "max_request_bytes": (1024, 1024 * 1024 * 1024),
    "max_batch": (1, 100_000),
    "max_batch_ms": (10, 3_600_000),
    "max_response_bytes": (64 * 1024, 4 * 1024 * 1024 * 1024),
    "max_buffered_request_bytes": (1024, 16 * 1024 * 1024 * 1024),
    "max_buffered_response_bytes": (1024 * 1024, 64 * 1024 * 1024 * 1024),
    "events_retention": (1, 10_000_000),
    "max_event_subscribers": (1, 10_000),
    "max_connections": (1, MAX_CONNECTIONS),
    "max_connections_per_ip": (1, MAX_CONNECTIONS),
    "reserve_connections": (0, 256),
    "max_tokenless_requests": (1, 10_000),
    "min_free_disk_mb": (0, 10_000_000),
    "integrity_check_interval_s": (0, 30 * 86_400),
}
_SECONDS_KEYS = ("header_timeout_s", "body_timeout_s", "send_timeout_s")
_LIST_KEYS = ("allowed_hosts", "allowed_origins", "forwarded_allow_ips")
_PATH_KEYS = ("metrics_bind", "backup_dir")
_MAX_TIMEOUT_S = 3600.0


def normalise_host(value: str) -> str:
    """A ``Host`` name as the perimeter compares it: lower-case, no trailing dot, IPv6 unbracketed
    and compressed. Raises ``ValueError`` when ``value`` is neither a host name nor an IP literal."""
    text = value.strip().lower()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        pass
    if not _HOST_NAME.fullmatch(text) or len(text) > 253:
        raise ValueError(f"{value!r} is not a host name or IP address (no scheme, port or path)")
    return text.rstrip(".")


def normalise_origin(value: str) -> str:
    """A browser origin as the perimeter compares it: ``scheme://host[:port]``, lower-case, default
    port dropped. Raises ``ValueError`` for anything else (a path, a query, user info, ``null``)."""
    text = value.strip()
    parts = urlsplit(text)
    if parts.scheme.lower() not in ("http", "https"):
        raise ValueError(f"{value!r} is not an origin: the scheme must be http or https")
    if parts.path or parts.query or parts.fragment or parts.username is not None or parts.password is not None:
        raise ValueError(f"{value!r} is not an origin: write scheme://host[:port] with no path or trailing slash")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"{value!r} is not an origin: the port is not a number from 0 to 65535") from None
    if not parts.hostname:
        raise ValueError(f"{value!r} is not an origin: it names no host")
    host = normalise_host(parts.hostname)
    if host.startswith("*"):
        raise ValueError(f"{value!r} is not an origin: wildcards are not allowed")
    scheme = parts.scheme.lower()
    shown = f"[{host}]" if ":" in host else host
    if port is None or port == (443 if scheme == "https" else 80):
        return f"{scheme}://{shown}"
    return f"{scheme}://{shown}:{port}"


def normalise_proxy_address(value: str) -> str:
    """A ``forwarded_allow_ips`` entry: an IP address (``127.0.0.1``, ``::1``) or network (``10.0.0.0/8``),
    compressed. Raises ``ValueError`` for anything else (a host name, ``*``, a network with host bits set)."""
    text = value.strip()
    try:
        if "/" in text:
            return str(ipaddress.ip_network(text, strict=True))
        return str(ipaddress.ip_address(text))
    except ValueError as exc:
        raise ValueError(f"{value[:100]!r} is not an IP address or network (write 127.0.0.1, ::1 or "
                         f"10.0.0.0/8; host names are not resolved): {exc}") from None


def parse_gateway_section(raw: Any) -> GatewayConfig:
    """Decode ``[gateway]``. Raises :class:`ConfigError` naming the first bad key."""
    if not isinstance(raw, dict):
        raise ConfigError("[gateway] must be a table")
    allowed = set(_INT_KEYS) | set(_SECONDS_KEYS) | set(_LIST_KEYS) | set(_PATH_KEYS)
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise ConfigError(f"unknown key gateway.{unknown[0]} {known_keys(allowed)}")
    values: dict[str, Any] = {}
    for key in _INT_KEYS:
        if key in raw:
            value = raw[key]
            low, high = GATEWAY_INT_RANGES[key]
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise ConfigError(f"gateway.{key} must be an integer between {low} and {high}; "
                                  f"got {shown_config_value(value)}")
            if key == "integrity_check_interval_s" and 0 < value < 60:
                raise ConfigError(f"gateway.{key} must be 0 (never) or at least 60 seconds; got {value!r}")
            values[key] = value
    for key in _SECONDS_KEYS:
        if key in raw:
            value = raw[key]
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 < value <= _MAX_TIMEOUT_S:
                raise ConfigError(f"gateway.{key} must be a number of seconds above 0 and at most {_MAX_TIMEOUT_S:g}; "
                                  f"got {shown_config_value(value)}")
            values[key] = float(value)
    for key, normalise in (("allowed_hosts", normalise_host), ("allowed_origins", normalise_origin),
                           ("forwarded_allow_ips", normalise_proxy_address)):
        if key in raw:
            items = raw[key]
            if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
                raise ConfigError(f"gateway.{key} must be an array of strings")
            out: list[str] = []
            for i, item in enumerate(items):
                if item.strip() == "*":
                    what = "proxy address" if key == "forwarded_allow_ips" else "name"
                    raise ConfigError(f"gateway.{key}[{i}]: '*' is refused; list each {what} explicitly")
                try:
                    norm = normalise(item)
                except ValueError as exc:
                    raise ConfigError(f"gateway.{key}[{i}]: {exc}") from None
                if norm not in out:
                    out.append(norm)
            values[key] = tuple(out)
    if "metrics_bind" in raw:
        values["metrics_bind"] = parse_bind(raw["metrics_bind"], "gateway.metrics_bind")
    if "backup_dir" in raw:
        value = raw["backup_dir"]
        if not isinstance(value, str) or not value.startswith("/") or "\0" in value or not value.isprintable():
            raise ConfigError("gateway.backup_dir must be an absolute directory path (starting with '/')")
        if not os.path.isdir(value):  # refused at start, not on every later backup call as the caller's fault
            raise ConfigError(f"gateway.backup_dir must name an existing directory: {value!r} "
                              f"{'is not a directory' if os.path.exists(value) else 'does not exist'} (create it "
                              f"first: meta/storage/backup writes each backup as a new directory inside it)")
        values["backup_dir"] = value
    if "max_buffered_request_bytes" not in values:  # room for one body of the largest size, at least
        values["max_buffered_request_bytes"] = max(DEFAULT_MAX_BUFFERED_REQUEST_BYTES,
                                                   values.get("max_request_bytes", DEFAULT_MAX_REQUEST_BYTES))
    config = GatewayConfig(**values)
    if config.max_buffered_request_bytes < config.max_request_bytes:
        raise ConfigError(f"gateway.max_buffered_request_bytes must be at least gateway.max_request_bytes "
                          f"({config.max_request_bytes}), or a body of the largest size could never be read; "
                          f"got {config.max_buffered_request_bytes}")
    return config


def parse_bind(value: Any, key: str) -> tuple[str, int]:
    """``"host:port"`` (``"[::1]:9464"`` for IPv6) as ``(host, port)``; the host an IP literal or
    ``localhost``. Raises :class:`ConfigError` naming ``key``."""
    rule = f"{key} must be \"host:port\" with an IP address or localhost and a port from 0 to 65535 (0 picks a free one)"
    if not isinstance(value, str):
        raise ConfigError(rule)
    host, sep, port = value.strip().rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(rule)
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if host != "localhost":
        try:
            host = str(ipaddress.ip_address(host))
        except ValueError:
            raise ConfigError(rule) from None
    return host, int(port)

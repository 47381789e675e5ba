"""Running the HTTP gateway under uvicorn: the listening socket, TLS, deadlines, graceful stop.

``meta-memory serve`` calls :func:`listen` then :func:`serve_http`. The
server uses :mod:`meta_memory.server.protocol` (header, body and send deadlines
and the connection caps from ``[gateway]``), terminates TLS itself when given a certificate and key, and on
SIGINT/SIGTERM finishes in-flight requests, ends open ``/events`` streams and
returns (exit code 0).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import signal
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import uvicorn

from ..errors import StartupError
from .gateway import Gateway
from .http import create_app
from .protocol import connection_budget, guarded_protocol, install_accept_error_filter

__all__ = ["TlsFiles", "base_url", "build_server", "check_tls", "listen", "max_connections", "serve_http"]

log = logging.getLogger("meta_memory.http")


@dataclass(frozen=True)
class TlsFiles:
    """A PEM certificate chain and its private key (``keyfile_password`` for an encrypted key)."""

    certfile: Path
    keyfile: Path
    keyfile_password: str | None = None


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``0`` picks a free port). Raises :class:`StartupError`."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # proto set: asyncio then enables TCP_NODELAY
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise StartupError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)
    return sock


def base_url(sock: socket.socket, host: str, tls: TlsFiles | None) -> str:
    """``http(s)://host:port`` of a listening socket (an IPv6 literal in brackets)."""
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"{'https' if tls else 'http'}://{shown}:{sock.getsockname()[1]}"


class _GracefulServer(uvicorn.Server):
    """uvicorn's server, but SIGINT/SIGTERM finish in-flight requests and the process exits 0
    (uvicorn would re-raise the signal after shutdown); open ``/events`` streams end at once."""

    stopping: threading.Event | None = None  # the gateway's streams watch it

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        def handler(signum: int, frame: FrameType | None) -> None:  # noqa: ARG001
            if self.should_exit and signum == signal.SIGINT:
                self.force_exit = True
            self.should_exit = True
            if self.stopping is not None:
                self.stopping.set()

        previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)


def max_connections(configured: int | None, budget: int | None = None) -> int:
    """The ``[gateway] max_connections`` served: ``configured``, but never above ``budget`` (default:
    :func:`~meta_memory.server.protocol.connection_budget`, what the open-file limit leaves), which is also
    the value when unset. A configured value above the budget is logged once as a warning."""
    budget = connection_budget() if budget is None else budget
    if configured is None:
        return budget
    if configured > budget:
        log.warning("gateway.max_connections = %d is more than the open-file limit (ulimit -n) leaves room for; "
                    "serving at most %d connections (raise the limit to serve more)", configured, budget)
        return budget
    return configured


def _tls_problem(tls: TlsFiles) -> str | None:
    """Which of ``tls``'s files is wrong and how, once ``ssl`` refused the pair (its own words, ``[SSL] PEM
    lib``, name neither): a file that holds no PEM block of its kind, or a key of another certificate."""
    for option, path, kind, marker in (("--ssl-certfile", tls.certfile, "certificate", b"CERTIFICATE-----"),
                                       ("--ssl-keyfile", tls.keyfile, "private key", b"PRIVATE KEY-----")):
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            return f"{option} {path}: {exc.strerror or exc}"
        if b"-----BEGIN " not in data or marker not in data:
            return (f"{option} {path} holds no PEM {kind} (a '-----BEGIN ...{marker.decode()}' block; a DER "
                    "file converts with `openssl x509 -inform der` or `openssl pkey -inform der`)")
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(str(tls.certfile), str(tls.keyfile), password=tls.keyfile_password)
    except ssl.SSLError as exc:
        if "KEY_VALUES_MISMATCH" in str(exc):
            return (f"--ssl-keyfile {tls.keyfile} does not belong to the certificate in --ssl-certfile "
                    f"{tls.certfile} (their public keys differ)")
    except OSError:
        pass
    return None


def check_tls(tls: TlsFiles) -> None:
    """Load ``tls``'s certificate chain and key as the server will, before anything else starts, so a bad
    pair is refused without opening (or creating) the state directory. Raises :class:`StartupError`
    naming the option and what is wrong with its file."""
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(str(tls.certfile), str(tls.keyfile), password=tls.keyfile_password)
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
        reason = getattr(exc, "strerror", None) or getattr(exc, "reason", None) or str(exc)
        raise StartupError(f"cannot load the TLS certificate or key: {_tls_problem(tls) or reason}") from None


def build_server(gateway: Gateway, host: str, tls: TlsFiles | None = None,
                 metrics_port: int | None = None) -> uvicorn.Server:
    """The uvicorn server for ``gateway`` bound (for the ``Host`` rule) to ``host``; ``metrics_port`` is
    the port of the ``[gateway] metrics_bind`` listener, when there is one (it serves ``/metrics`` only).

    Raises :class:`StartupError` when the certificate or key cannot be loaded."""
    settings = gateway.runtime.config.gateway
    app = create_app(gateway, bind_host=host, metrics_port=metrics_port)
    extra: dict[str, Any] = {}
    if tls is not None:
        extra = {"ssl_certfile": str(tls.certfile), "ssl_keyfile": str(tls.keyfile),
                 "ssl_keyfile_password": tls.keyfile_password}
    if gateway.runtime.config.telemetry.log_format == "json":
        extra["log_config"] = None  # uvicorn's own lines go through the root logger's JSON lines too
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=5, lifespan="off",
                            http=guarded_protocol(settings.header_timeout_s, settings.body_timeout_s,
                                                 settings.send_timeout_s, max_connections(settings.max_connections),
                                                 settings.max_connections_per_ip, settings.reserve_connections),
                            ws="none", server_header=False,  # no route speaks WebSocket
                            # forwarded headers only from the configured proxies ([gateway] forwarded_allow_ips):
                            # uvicorn's default trusts any loopback client, which could forge its address and scheme
                            proxy_headers=bool(settings.forwarded_allow_ips),
                            forwarded_allow_ips=list(settings.forwarded_allow_ips), **extra)
    try:
        config.load()
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
        reason = getattr(exc, "strerror", None) or getattr(exc, "reason", None) or str(exc)
        why = _tls_problem(tls) if tls is not None else None
        raise StartupError(f"cannot load the TLS certificate or key: {why or reason}") from None
    install_accept_error_filter()
    server = _GracefulServer(config)
    server.stopping = gateway.stopping
    return server


#: Modules a serving gateway imports on a background thread as it starts, so that no request waits
#: for them: numpy (a fraction of a second), which the recall index uses.
PRELOADED_MODULES = ("numpy",)


def _preload() -> None:
    for name in PRELOADED_MODULES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def serve_http(server: uvicorn.Server, sock: socket.socket, metrics_sock: socket.socket | None = None) -> None:
    """Serve on ``sock`` (and the ``metrics_bind`` listener ``metrics_sock``) until SIGINT/SIGTERM
    (:data:`PRELOADED_MODULES` load meanwhile)."""
    threading.Thread(target=_preload, name="meta-memory-preload", daemon=True).start()
    server.run(sockets=[sock] if metrics_sock is None else [sock, metrics_sock])

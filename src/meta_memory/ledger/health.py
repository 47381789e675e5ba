"""The ledger's HTTP health check (seed: Health checks; reference §1.10).

``GET <endpoint without trailing "/">/v1/health`` with a 2-second timeout for
connecting, sending and reading; any 2xx status is healthy. It runs at the
startup load and before every persist, never per query.

Failure reasons follow the reference's wording, e.g.
``healthcheck connect failed for 'http://127.0.0.1:9/v1/health': ...`` or
``healthcheck status failed for '<url>': HTTP 503``.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import httpx

__all__ = ["HEALTHCHECK_TIMEOUT_S", "HealthCheckFailed", "HealthChecker", "health_url"]

#: Connect, write and read timeout of one health check, in seconds (``MEMORY_LEDGER_HEALTHCHECK_TIMEOUT``).
HEALTHCHECK_TIMEOUT_S: float = 2.0


class HealthCheckFailed(Exception):
    """The endpoint did not answer 2xx in time. ``reason`` is the diagnostic text."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def health_url(endpoint: str) -> str:
    """``endpoint`` with trailing slashes removed, plus ``/v1/health``."""
    return endpoint.strip().rstrip("/") + "/v1/health"


def _cause_chain(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        chain.append(current)
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return chain


def _detail(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__


class HealthChecker:
    """Performs health checks against one endpoint.

    Args:
        endpoint: HTTP(S) base URL (already validated by the config decoder).
        timeout_s: per-phase timeout in seconds (default 2).

    Thread-safe; reuses one HTTP client (and its TLS context) but sends
    ``Connection: close`` so every check opens a fresh connection, as the
    reference does. Proxy environment variables are ignored.
    """

    def __init__(self, endpoint: str, timeout_s: float = HEALTHCHECK_TIMEOUT_S) -> None:
        import httpx  # on use: a gateway whose ledger has no endpoint starts without it

        self.endpoint = endpoint
        self.url = health_url(endpoint)
        self._client: httpx.Client = httpx.Client(
            timeout=httpx.Timeout(timeout_s),
            headers={"Connection": "close"},
            follow_redirects=False,
            trust_env=False,
        )

    def check(self) -> None:
        """Run one check.

        Raises:
            HealthCheckFailed: resolve, connect, write or read failed or timed
                out, or the status was not 2xx. ``reason`` names the URL.
        """
        import httpx

        url = self.url
        try:
            response = self._client.get(url)
        except httpx.ConnectTimeout as exc:
            raise HealthCheckFailed(f"healthcheck connect failed for '{url}': timed out") from exc
        except httpx.WriteTimeout as exc:
            raise HealthCheckFailed(f"healthcheck write failed for '{url}': timed out") from exc
        except (httpx.ReadTimeout, httpx.PoolTimeout) as exc:
            raise HealthCheckFailed(f"healthcheck read failed for '{url}': timed out") from exc
        except httpx.ConnectError as exc:
            if any(isinstance(e, socket.gaierror) for e in _cause_chain(exc)):
                raise HealthCheckFailed(f"healthcheck resolve failed for '{url}': {_detail(exc)}") from exc
            raise HealthCheckFailed(f"healthcheck connect failed for '{url}': {_detail(exc)}") from exc
        except httpx.RemoteProtocolError as exc:
            raise HealthCheckFailed(f"healthcheck read failed for '{url}': {_detail(exc)}") from exc
        except httpx.HTTPError as exc:
            raise HealthCheckFailed(f"healthcheck request failed for '{url}': {_detail(exc)}") from exc
        if not 200 <= response.status_code <= 299:
            raise HealthCheckFailed(f"healthcheck status failed for '{url}': HTTP {response.status_code}")

    def close(self) -> None:
        """Release the HTTP client."""
        self._client.close()

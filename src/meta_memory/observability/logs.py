"""Structured logs: one JSON object per line, opt-in (``--log-format json`` or ``[telemetry] log_format``).

Each line is ``{"ts": ISO-8601 UTC with milliseconds, "level", "logger", "message", "request_id"?,
"trace_id"?, "span_id"?, "exc_type"?, "exc"?}``: ``request_id`` while a call runs
(:mod:`.requests`), the trace and span ids while a span is recording (:mod:`.tracing`).
The gateway's own log calls never put a bearer token or memory content (titles, bodies, tags,
queries) into a message; the formatter adds no request data of its own beyond the ids.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, Literal

from .requests import current_request_id

__all__ = ["JsonFormatter", "configure_logging"]

_TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """A :class:`logging.Formatter` writing one JSON object per record (see the module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"
        out: dict[str, Any] = {"ts": ts, "level": record.levelname.lower(), "logger": record.name,
                               "message": record.getMessage()}
        request_id = current_request_id()
        if request_id is not None:
            out["request_id"] = request_id
        from .tracing import current_trace_ids

        ids = current_trace_ids()
        if ids is not None:
            out["trace_id"], out["span_id"] = ids
        if record.exc_info and record.exc_info[0] is not None:
            out["exc_type"] = record.exc_info[0].__name__
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def configure_logging(log_format: Literal["text", "json"], level: int = logging.INFO) -> None:
    """Send the root logger's lines to stderr in ``log_format`` (replacing its handlers)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(_TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request drowns the output

"""Structured logs: one JSON object per line, opt-in (``--log-format json`` or ``[telemetry] log_format``);
else text lines (:class:`TextFormatter`), one per record as well.

Each line is ``{"ts": ISO-8601 UTC with milliseconds, "level", "logger", "message", "request_id"?,
"trace_id"?, "span_id"?, "exc_type"?, "exc"?}``: ``request_id`` while a call runs
(:mod:`.requests`), the trace and span ids while a span is recording (:mod:`.tracing`).
The gateway's own log calls never put a bearer token or memory content (titles, bodies, tags,
queries) into a message; the formatter adds no request data of its own beyond the ids.

A message may quote what a caller chose (a session key, a tool or MCP server name, a path): in a text
line every character of the message that could end the line or rewrite the terminal (C0 and C1 controls
but the tab, the line and paragraph separators) is written as a Python escape (``\\n``, ``\\u2028``),
so no caller can forge a line. A traceback keeps its own lines after the message. A JSON line escapes
those three too (JSON itself leaves ``U+0085``, ``U+2028`` and ``U+2029`` raw).
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from typing import Any, Literal

from .requests import current_request_id

__all__ = ["JsonFormatter", "TextFormatter", "configure_logging"]

_TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: What may not appear raw in a text line's message: C0 controls but the tab, DEL, C1 controls
#: (``U+0085`` ends a line for some readers) and the line and paragraph separators.
_LINE_BREAKERS = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def _escaped(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


class TextFormatter(logging.Formatter):
    """``<time> <LEVEL> <logger>: <message>``, the message on one line (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__(_TEXT_FORMAT)

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - the logging API's name
        line = super().formatMessage(record)
        return _LINE_BREAKERS.sub(_escaped, line)


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
        line = json.dumps(out, ensure_ascii=False, separators=(",", ":"))
        # JSON leaves these raw, and readers that split on every line break (str.splitlines) would cut there
        return line.replace("\x85", "\\u0085").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def configure_logging(log_format: Literal["text", "json"], level: int = logging.INFO) -> None:
    """Send the root logger's lines to stderr in ``log_format`` (replacing its handlers)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request drowns the output

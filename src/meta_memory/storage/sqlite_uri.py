"""The ``file:`` URI a SQLite database file is opened by when a mode must be named (one place).

SQLite reads a URI's path up to the first ``?`` or ``#`` and decodes every ``%HH`` in it, so a path
holding one of those (a state directory named ``st#1``, a realm whose file name is percent-encoded,
``%C3%A9quipe.sqlite3``) written into the URI as it is opens another file: the one before the ``#``
(created where the mode allows it), or the decoded name. :func:`file_uri` percent-encodes the path.
An absolute path is written after an empty authority (``file:///srv/state``): written after ``file:``
alone, a path spelled with two leading slashes (``//srv/state``, the same directory to the system)
would be read as the authority ``srv`` and refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal
from urllib.parse import quote

__all__ = ["file_uri"]


def file_uri(path: Path | str, mode: Literal["ro", "rw", "rwc"]) -> str:
    """``file:<path percent-encoded, "/" kept>?mode=<mode>`` for ``sqlite3.connect(..., uri=True)``, an
    absolute path after an empty authority (``file:///…``): opens exactly ``path`` (relative paths stay
    relative to the working directory)."""
    text = str(path)
    return f"file:{'//' if text.startswith('/') else ''}{quote(text)}?mode={mode}"

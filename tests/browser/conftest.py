"""The browser every console test drives: Debian's headless chromium under Playwright (no download).

Each test module still skips itself (or fails under ``CI``) when ``/usr/bin/chromium`` or Playwright
is missing; this file holds what they share: the launch flags and a module-scoped ``browser``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
#: Flags for a sandbox-less, offline headless chromium (background networking would hit a closed network).
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless chromium per test module."""
    from playwright import sync_api

    pw = sync_api.sync_playwright().start()
    b = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
    try:
        yield b
    finally:
        b.close()
        pw.stop()

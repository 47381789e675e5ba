"""The browser every console test drives: Debian's headless chromium under Playwright (no download).

Each test module still skips itself (or fails under ``CI``) when ``/usr/bin/chromium`` or Playwright
is missing (``browser_support.require_chromium``); this file holds the module-scoped ``browser``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # browser_support, under --import-mode=importlib

from browser_support import ARGS, CHROMIUM  # noqa: E402


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

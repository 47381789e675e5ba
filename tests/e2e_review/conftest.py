"""Fixtures for the review and timeline end-to-end tests: real gateway subprocesses over HTTP."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # e2e_review_support, under --import-mode=importlib

from e2e_review_support import Client
from support import serving


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    """One default-configured gateway per test module (tests use fresh identities)."""
    with serving(tmp_path_factory.mktemp("review") / "state", Client) as c:
        yield c

"""The RPC params and result models build their validators on first use (pydantic ``defer_build``) only where
pydantic rebuilds such a model under a lock (2.14 on): the gateway's worker threads may build them at once, and
before 2.14 a model being rebuilt dropped its placeholder core schema, so a model nesting it that another thread
built meanwhile could take its base's empty schema and refuse every field as extra, for good. The declared
floor stays below 2.13, which the CrewAI extra's environment needs (crewai pins ``pydantic<2.13``)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from pydantic.version import VERSION

from meta_memory.rpc.deferred import DEFER_BUILD, defers_safely
from meta_memory.rpc.params import Params
from meta_memory.rpc.results import Result

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


@pytest.mark.parametrize(("version", "safe"), [
    ("2.7.4", False), ("2.11.3", False), ("2.12.5", False), ("2.13.0", False), ("2.14.0", True),
    ("2.14.1", True), ("2.15.0b1", True), ("2.20.0", True), ("3.0.0", True), ("1.10.13", False),
])
def test_a_deferred_build_is_chosen_only_where_pydantic_rebuilds_under_a_lock(version: str, safe: bool) -> None:
    assert defers_safely(version) is safe


def test_the_models_defer_exactly_when_the_installed_pydantic_is_safe() -> None:
    assert DEFER_BUILD is defers_safely(VERSION)
    assert Params.model_config.get("defer_build") is DEFER_BUILD
    assert Result.model_config.get("defer_build") is DEFER_BUILD


def test_the_declared_floor_admits_the_crewai_environment() -> None:
    deps = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["dependencies"]
    (pydantic,) = [d for d in deps if re.match(r"pydantic\s*[<>=!~ ]", d)]
    floor = re.search(r">=\s*(\d+)\.(\d+)", pydantic)
    assert floor is not None, pydantic
    assert (int(floor[1]), int(floor[2])) <= (2, 12), pydantic  # crewai 1.15: pydantic>=2.11.9,<2.13

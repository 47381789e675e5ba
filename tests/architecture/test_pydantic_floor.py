"""The RPC params and result models build their validators on first use (pydantic ``defer_build``), which the
gateway's worker threads may do at once. pydantic rebuilds a deferred model under a lock from 2.14 on; before,
a model being rebuilt dropped its placeholder core schema, so a model nesting it that another thread built
meanwhile could take its base's empty schema and refuse every field as extra, for good. The declared floor
must leave those releases out."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from meta_memory.rpc.params import Params
from meta_memory.rpc.results import Result

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_models_built_on_first_use_require_a_pydantic_that_rebuilds_them_under_a_lock() -> None:
    assert Params.model_config.get("defer_build") and Result.model_config.get("defer_build")
    deps = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["dependencies"]
    (pydantic,) = [d for d in deps if re.match(r"pydantic\s*[<>=!~ ]", d)]
    floor = re.search(r">=\s*(\d+)\.(\d+)", pydantic)
    assert floor is not None, pydantic
    # 2.11.0-2.11.4: a racing rebuild could use the base's validator; up to 2.13: rebuilds take no lock
    assert (int(floor[1]), int(floor[2])) >= (2, 14), pydantic

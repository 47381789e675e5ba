"""Fixtures the export and import tests share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from contract.pgsupport import dsn_with_schema, require_postgres, throwaway_schema
from support import write_config


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def configs(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path | None, Path | None]]:
    """(source config, target config): ``None`` for the default SQLite stores, else two PostgreSQL schemas."""
    if request.param == "sqlite":
        yield None, None
        return
    require_postgres()
    with throwaway_schema() as a, throwaway_schema() as b:
        yield tuple(  # type: ignore[misc]
            write_config(tmp_path / f"{n}.toml", f'[agent_memory]\nstore = "postgres"\ndsn = "{dsn_with_schema(s)}"\n')
            for n, s in (("source", a), ("target", b))
        )

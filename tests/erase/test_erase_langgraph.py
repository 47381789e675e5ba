"""The LangGraph store goes through remember and update, so the erasure register guards it too: an
erased item put again is refused, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from extras import require_extra

require_extra("langgraph", "langgraph")

from contract.pgsupport import dsn_with_schema, require_postgres, throwaway_schema  # noqa: E402
from meta_memory.cli import build_runtime  # noqa: E402
from meta_memory.errors import AgentMemoryError  # noqa: E402
from meta_memory.integrations.langgraph import MetaMemoryStore  # noqa: E402
from meta_memory.sdk.handle import MetaHandle  # noqa: E402
from meta_memory.sdk.transport import EmbeddedTransport  # noqa: E402
from meta_memory.server.gateway import Gateway  # noqa: E402
from support import write_config  # noqa: E402

pytestmark = pytest.mark.langgraph


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def handle(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MetaHandle]:
    if request.param == "sqlite":
        h = MetaHandle(EmbeddedTransport(Gateway.for_runtime(build_runtime(tmp_path / "state", None))))
        yield h
        h.close()
        return
    require_postgres()
    with throwaway_schema() as schema:
        config = write_config(tmp_path / "pg.toml", f'[agent_memory]\nstore = "postgres"\ndsn = "{dsn_with_schema(schema)}"\n')
        h = MetaHandle(EmbeddedTransport(Gateway.for_runtime(build_runtime(tmp_path / "state", config))))
        yield h
        h.close()


def test_an_erased_item_put_again_is_refused(handle: MetaHandle) -> None:
    store = MetaMemoryStore(handle)
    ns = ("users", "u1", "health")
    store.put(ns, "diagnosis", {"condition": "quokkazanzibar syndrome"})
    store.put(ns, "diet", {"likes": "tea"})
    (record,) = [r for r in handle.list_agent_memory("langgraph").records if r.title == "diagnosis"]
    handle.call("meta/agent_memory/erase", {"identity": "langgraph", "memory_id": record.memory_id})
    assert store.get(ns, "diagnosis") is None
    with pytest.raises(AgentMemoryError) as exc:
        store.put(ns, "diagnosis", {"condition": "quokkazanzibar syndrome"})
    assert exc.value.data["reason"] == "erased" and "quokkazanzibar" not in exc.value.message
    assert store.get(ns, "diagnosis") is None and store.get(ns, "diet") is not None
    store.put(ns, "diagnosis", {"condition": "none"})  # other content under the key is the user's to write
    assert store.get(ns, "diagnosis").value == {"condition": "none"}  # type: ignore[union-attr]

"""``meta-memory import --from mem0``: memories the real mem0 package wrote (offline: a hashing embedder,
``infer=False``, its local FAISS store and history database) land as application writes through the
command, on SQLite and PostgreSQL targets; deleted memories stay out, a secret is refused by line, a
second run writes nothing, ``--dry-run`` writes nothing, and an attacker's pickle runs nothing."""

from __future__ import annotations

import hashlib
import json
import math
import os
import pickle
import pickletools
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from extras import require_extra

os.environ["MEM0_TELEMETRY"] = "False"  # before mem0 is imported: no network at run time
require_extra("importers", "mem0")
require_extra("importers", "faiss")

from meta_memory.portability.foreign import ForeignSourceError  # noqa: E402
from meta_memory.portability.from_mem0 import DocstoreUnpickler, load_docstore, title_of  # noqa: E402
from portability.test_round_trip import config_args, handle_on  # noqa: E402
from support import meta_memory_cli as mm  # noqa: E402

pytestmark = pytest.mark.importers

DIMS = 64


def _vector(text: str) -> list[float]:
    vec = [0.0] * DIMS
    for word in re.findall(r"\w+", text.lower()):
        h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
        vec[h % DIMS] += 1.0
    norm = math.sqrt(sum(x * x for x in vec)) or 1.0
    return [x / norm for x in vec]


def mem0_memory(root: Path) -> Any:
    """mem0's open-source ``Memory`` on local files, no network (the LLM is never called with infer=False)."""
    from langchain_core.embeddings import Embeddings
    from mem0 import Memory

    class Hashing(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [_vector(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return _vector(text)

    return Memory.from_config({
        "embedder": {"provider": "langchain", "config": {"model": Hashing(), "embedding_dims": DIMS}},
        "vector_store": {"provider": "faiss", "config": {"path": str(root / "faiss"), "collection_name": "mem0",
                                                         "embedding_model_dims": DIMS}},
        "llm": {"provider": "openai", "config": {"api_key": "offline-never-called", "model": "gpt-4o-mini"}},
        "history_db_path": str(root / "history.db"),
    })


def build_mem0(root: Path) -> dict[str, str]:
    m = mem0_memory(root)
    ids: dict[str, str] = {}

    def add(name: str, text: str, **kw: Any) -> None:
        ids[name] = m.add(text, infer=False, **kw)["results"][0]["id"]

    add("tea", "Alice prefers tea over coffee in the morning", user_id="alice", metadata={"topic": "drinks"})
    add("deploy", "Deploys run on Fridays after the review", user_id="alice")
    add("bob", "Bob waters the garden on Sundays", user_id="bob")
    add("gone", "The old door code is written on the fridge", user_id="alice")
    add("agent", "The ops agent restarts the cache nightly", agent_id="ops-bot")
    m.update(ids["tea"], "Alice prefers green tea in the morning")
    m.delete(ids["gone"])
    return ids


def recall(h: Any, identity: str, query: str) -> list[str]:
    return [r.body for r in h.recall_agent_memory(identity, query_text=query)]


def test_mem0_memories_land_as_application_writes_naming_mem0(tmp_path: Path, configs: Any) -> None:
    _, target = configs
    ids = build_mem0(tmp_path / "mem0")
    state = tmp_path / "state"
    dry = mm("import", "--from", "mem0", str(tmp_path / "mem0"), "--state-dir", str(state), *config_args(target),
             "--dry-run", "--json")
    assert dry.returncode == 1, dry.stderr  # the agent's memory has no user_id: refused by line
    report = json.loads(dry.stdout)
    assert report["dry_run"] is True and report["created"] == 3
    assert [n["source_id"] for n in report["refused"]] == [ids["agent"]]
    assert "no user_id" in report["refused"][0]["reason"]
    if target is None:
        assert not state.exists()  # a dry run on a new state creates nothing

    done = mm("import", "--from", "mem0", str(tmp_path / "mem0"), "--state-dir", str(state), *config_args(target))
    assert done.returncode == 1, done.stderr
    out = done.stdout.decode()
    assert "imported 3 records from mem0 into realm default" in out
    assert re.search(rf"refused line \d+ \({ids['agent']}\): no user_id", out)
    assert "not carried" not in out and "not_carried" not in out  # mem0's metadata fits the record rules: it is the record's metadata
    with handle_on(state, target) as h:
        assert recall(h, "alice", "green tea") == ["Alice prefers green tea in the morning"]
        tea = h.recall_agent_memory("alice", query_text="green tea", filter={"topic": "drinks"})
        assert [(r.body, r.metadata) for r in tea] == [("Alice prefers green tea in the morning", {"topic": "drinks"})]
        assert h.recall_agent_memory("alice", query_text="green tea", filter={"topic": "garden"}) == []
        assert recall(h, "alice", "door code fridge") == []  # deleted in mem0: not imported
        assert recall(h, "bob", "garden") == ["Bob waters the garden on Sundays"]
        assert recall(h, "bob", "green tea") == []  # each mem0 user is its own identity
        listed = h.list_agent_memory("alice").records
        tea = next(r for r in listed if "green tea" in r.body)
        assert tea.title == "Alice prefers green tea in the morning"
        assert tea.updated_at_ms > tea.created_at_ms  # mem0's own times, the update after the add
        row = h.call("meta/memory/panel/record", {"realm": "default", "memory_id": tea.memory_id})["record"]
        assert row["provenance"]["author"] == {"author": "application"}
        assert row["provenance"]["imported_from"] == {"system": "mem0", "source_id": ids["tea"]}
        assert row["trust"] == "agent_observed" and row["status"]["status"] == "active"

    # the agent's memory under a fixed identity; everything else is already present
    again = mm("import", "--from", "mem0", str(tmp_path / "mem0"), "--state-dir", str(state), *config_args(target),
               "--identity", "ops", "--json")
    report = json.loads(again.stdout)
    assert again.returncode == 0, again.stderr
    assert report["created"] == 1 and report["refused"] == []
    twice = mm("import", "--from", "mem0", str(tmp_path / "mem0"), "--state-dir", str(state), *config_args(target),
               "--identity-from", "agent_id", "--json")
    report = json.loads(twice.stdout)
    # the agent's memory now names identity ops-bot: already imported under ops, kept as it was
    assert report["created"] == 0 and [n["source_id"] for n in report["conflicts"]] == [ids["agent"]]
    assert len(report["refused"]) == 3  # the user memories have no agent_id


def test_a_secret_in_a_mem0_memory_is_refused_by_line_and_the_rest_land(tmp_path: Path) -> None:
    m = mem0_memory(tmp_path / "mem0")
    m.add("The staging key is AKIAIOSFODNN7EXAMPLE for the bucket", user_id="alice", infer=False)
    m.add("Alice likes hiking in the hills", user_id="alice", infer=False)
    done = mm("import", "--from", "mem0", str(tmp_path / "mem0"), "--state-dir", str(tmp_path / "s"), "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["created"] == 1 and len(report["refused"]) == 1
    refused = report["refused"][0]
    assert refused["line"] == 1 and refused["reason"].startswith("secret_detected")
    assert refused["source_id"] == ""  # a refusal for a secret names no source text
    assert b"AKIAIOSFODNN7EXAMPLE" not in done.stdout + done.stderr
    with handle_on(tmp_path / "s", None) as h:
        assert [r.body for r in h.list_agent_memory("alice").records] == ["Alice likes hiking in the hills"]


def _legacy_pickle(tmp_path: Path) -> Path:
    """The docstore as mem0 releases before JSON wrote it: ``pickle.dump((docstore, index_to_id), f)``."""
    build_mem0(tmp_path / "mem0")
    saved = json.loads((tmp_path / "mem0" / "faiss" / "mem0.json").read_text())
    (tmp_path / "mem0" / "faiss" / "mem0.json").unlink()
    pkl = tmp_path / "mem0" / "faiss" / "mem0.pkl"
    with pkl.open("wb") as f:
        pickle.dump((saved["docstore"], {int(k): v for k, v in saved["index_to_id"].items()}), f)
    return pkl


def test_a_legacy_pickle_docstore_needs_no_class_and_imports(tmp_path: Path) -> None:
    pkl = _legacy_pickle(tmp_path)
    opcodes = {op.name for op, _, _ in pickletools.genops(pkl.read_bytes())}
    assert not opcodes & {"GLOBAL", "STACK_GLOBAL", "INST", "OBJ", "REDUCE", "EXT1", "EXT2", "EXT4", "PERSID",
                          "BINPERSID"}
    done = mm("import", "--from", "mem0", str(tmp_path / "mem0"), "--state-dir", str(tmp_path / "s"), "--json")
    assert json.loads(done.stdout)["created"] == 3


class _Boom:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def test_a_pickle_that_calls_os_system_is_refused_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    root = tmp_path / "mem0"
    root.mkdir()
    with (root / "mem0.pkl").open("wb") as f:
        pickle.dump(({"m1": {"data": "hello", "user_id": "alice", "x": _Boom(marker)}}, {0: "m1"}), f)
    done = mm("import", "--from", "mem0", str(root), "--state-dir", str(tmp_path / "s"))
    assert done.returncode == 1
    assert b"import refused" in done.stderr
    assert b"posix.system" in done.stderr or b"os.system" in done.stderr  # the refusal names what it would call
    assert not marker.exists()
    assert not (tmp_path / "s").exists()  # refused before the state was opened
    with pytest.raises(pickle.UnpicklingError):
        DocstoreUnpickler(open(root / "mem0.pkl", "rb")).load()  # noqa: SIM115
    assert not marker.exists()


def test_damaged_or_oversized_sources_are_refused_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "mem0"
    root.mkdir()
    (root / "mem0.json").write_text('{"docstore": {"m1": "not an object"}}')
    done = mm("import", "--from", "mem0", str(root), "--state-dir", str(tmp_path / "s"))
    assert done.returncode == 1 and b"not a mem0 docstore" in done.stderr
    (root / "mem0.json").write_text('{"docstore": {"m1": {"data": "hi", "user_id": "alice"}}}')
    (root / "history.db").write_bytes(b"this is not a database" * 100)
    done = mm("import", "--from", "mem0", str(root), "--state-dir", str(tmp_path / "s"))
    assert done.returncode == 1 and b"history" in done.stderr and b"Traceback" not in done.stderr
    sqlite3.connect(root / "history.db.2").close()
    done = mm("import", "--from", "mem0", str(root), "--mem0-history", str(root / "history.db.2"),
              "--state-dir", str(tmp_path / "s"))
    assert done.returncode == 1 and b"not a mem0 history database" in done.stderr
    assert not (tmp_path / "s").exists()
    (root / "mem0.json").write_text("[" * 200_000 + "]" * 200_000)
    done = mm("import", "--from", "mem0", str(root), "--state-dir", str(tmp_path / "s"))
    assert done.returncode == 1 and b"nested too deep" in done.stderr and b"Traceback" not in done.stderr
    (root / "mem0.json").write_text('{"docstore": {"m1": {"data": "hi", "user_id": "alice"}}}')
    monkeypatch.setattr("meta_memory.portability.from_mem0.MAX_SOURCE_BYTES", 16)
    with pytest.raises(ForeignSourceError, match="byte limit"):
        load_docstore(root / "mem0.json")


def test_titles_are_the_first_words() -> None:
    assert title_of("Alice prefers green tea") == "Alice prefers green tea"
    assert title_of("one two three four five six seven eight nine ten") == "one two three four five six seven eight…"
    assert title_of("x" * 300) == "x" * 80 + "…"


def test_a_pickle_sharing_one_list_many_times_is_left_out_at_once(tmp_path: Path) -> None:
    """A few KiB of pickle whose memo shares one list at every level unfolds to billions of values: the
    metadata check stops once what it read is past the 8 KiB cap (the memory lands, its metadata is left
    out and counted), rather than walking every copy for hours and running out of memory."""
    root = tmp_path / "mem0"
    root.mkdir()
    inner = [0] * 3000
    middle = [inner] * 3000
    with (root / "mem0.pkl").open("wb") as f:
        pickle.dump(({"m1": {"data": "Alice likes green tea", "user_id": "alice", "blob": [middle] * 3000}},
                     {0: "m1"}), f)
    assert (root / "mem0.pkl").stat().st_size < 64 * 1024
    done = mm("import", "--from", "mem0", str(root), "--state-dir", str(tmp_path / "s"), "--json", timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["created"] == 1 and report["not_carried"] == {"metadata": 1}
    with handle_on(tmp_path / "s", None) as h:
        [record] = h.list_agent_memory("alice").records
        assert record.body == "Alice likes green tea" and record.metadata == {}


def test_content_erased_anywhere_is_not_imported_again(tmp_path: Path) -> None:
    """A memory whose text was erased from one identity is refused (its line, ``erased``) when another mem0
    store brings the same text for another user: an import refuses content erased anywhere."""
    state = tmp_path / "state"
    first, second = mem0_memory(tmp_path / "first"), mem0_memory(tmp_path / "second")
    first.add("The vault code is in the blue folder", infer=False, user_id="alice")
    second.add("The vault code is in the blue folder", infer=False, user_id="carol")
    second.add("The cache restarts nightly", infer=False, user_id="carol")
    done = mm("import", "--from", "mem0", str(tmp_path / "first"), "--state-dir", str(state), "--json")
    assert done.returncode == 0, done.stderr
    with handle_on(state, None) as h:
        (vault,) = h.list_agent_memory("alice").records
        h.call("meta/agent_memory/erase", {"identity": "alice", "memory_id": vault.memory_id})
    again = mm("import", "--from", "mem0", str(tmp_path / "second"), "--state-dir", str(state), "--json")
    report = json.loads(again.stdout)
    assert again.returncode == 1 and report["created"] == 1, report
    assert [n["reason"].split(":")[0] for n in report["refused"]] == ["erased"], report
    assert b"blue folder" not in again.stdout + again.stderr
    with handle_on(state, None) as h:
        assert [r.body for r in h.list_agent_memory("carol").records] == ["The cache restarts nightly"]


@pytest.mark.parametrize("kind", ["json", "pkl"])
def test_a_docstore_of_too_many_tiny_values_is_refused_before_it_is_built(tmp_path: Path, kind: str) -> None:
    """A few MiB of empty lists would unfold to 20 to 60 times that in memory: a file over the value limit
    is refused whole, naming the file and the limit, before anything is built or written."""
    from meta_memory.portability.from_mem0 import MAX_SOURCE_VALUES

    root = tmp_path / "mem0"
    root.mkdir()
    payload = {"data": "Alice likes green tea", "user_id": "alice", "blob": [[] for _ in range(MAX_SOURCE_VALUES)]}
    path = root / f"mem0.{kind}"
    if kind == "json":
        path.write_text(json.dumps({"docstore": {"m1": payload}, "index_to_id": {"0": "m1"}}))
    else:
        path.write_bytes(pickle.dumps(({"m1": payload}, {0: "m1"})))
    done = mm("import", "--from", "mem0", str(root), "--state-dir", str(tmp_path / "s"), timeout=120)
    assert done.returncode == 1, done.stdout
    assert f"{path} holds over {MAX_SOURCE_VALUES} values".encode() in done.stderr
    assert b"Traceback" not in done.stderr
    assert not (tmp_path / "s").exists()  # refused before the state was opened


def test_a_history_of_too_many_rows_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from meta_memory.portability.from_mem0 import load_history

    db = tmp_path / "history.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE history (memory_id TEXT, event TEXT, created_at TEXT)")
        conn.executemany("INSERT INTO history VALUES (?, 'ADD', '2024-01-01')", [(f"m{i}",) for i in range(5)])
    conn.close()
    monkeypatch.setattr("meta_memory.portability.from_mem0.MAX_SOURCE_VALUES", 4)
    with pytest.raises(ForeignSourceError, match="holds over 4 values"):
        load_history(db)

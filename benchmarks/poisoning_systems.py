"""The memory systems the poisoning benchmark drives, each wired the way its own documentation wires an
agent's memory, behind one small host interface (:class:`Run`).

* ``meta-memory`` (and the ``:untrusted`` / ``:quarantined`` postures): an embedded runtime per episode
  (``Meta.builder().persistent_state(dir).agent_memory(...).build()``), the bound agent and its sessions:
  ``session.tool_result(name)`` before the model sees each tool result, ``session.tool({...})`` for the
  model's ``memory`` tool, ``session.inject(query)`` for the turn block, ``agent.remember`` for the host's
  own notes, ``session.remember`` for its LLM's summary of a session (the derived write), ``reset``,
  ``compacted``, ``retire``, the steward's dream, and export/import through the portability module as an
  operator runs them.
* ``mem0``: the open-source ``mem0.Memory`` with ``infer=False`` (records stored as given, no LLM),
  exposed to the model as mem0's documented memory tools (add, search, update, delete by id) keyed by
  ``user_id``; a fresh session's context is ``search(query)`` plus ``get_all``. Offline: the ``langchain``
  embedder provider over :func:`hashing_embeddings`, the local FAISS vector store, a local history
  database, telemetry off. No network and no API key (the OpenAI LLM client is configured with a dummy
  key and never called under ``infer=False``).
* ``langgraph``: LangGraph's ``InMemoryStore`` with a vector index over the same embedder, and LangMem's
  ``create_manage_memory_tool`` / ``create_search_memory_tool`` on the namespace
  ``("memories", "{user_id}")``, as LangMem's quick start wires them.

The peers have no firewall, no session taint, no review and no steward: their calls for those host
events do nothing. A shared team scope is a shared namespace (``user_id`` / namespace ``team:<mob>``),
which is how their documentation shares memory between agents.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol

from poisoning_model import as_json

__all__ = ["SYSTEMS", "Run", "System", "make_system", "hashing_embeddings", "SteeredSteward"]

#: Identity of each scenario role (no ``:`` so a respawn generation reads ``rt:<role>:<n>``).
ROLES = {"victim": "victim", "other": "teammate", "attacker": "intern"}
#: How many active records a fresh session's context lists (every record a scenario writes fits).
LIST_ALL = 64


class Run(Protocol):
    """One episode on one system: the host's calls, then the inspection of a later fresh session."""

    def seed(self, role: str, realm: str, title: str, body: str) -> str: ...
    def open(self, role: str, key: str, realm: str) -> None: ...
    def tool_result(self, role: str, key: str, realm: str, tool: str, provenance: dict[str, Any] | None) -> None: ...
    def memory(self, role: str, key: str, realm: str, arguments: dict[str, Any], mob: str | None) -> str: ...
    def inject(self, role: str, key: str, realm: str, query: str) -> str: ...
    def compacted(self, role: str, key: str, realm: str) -> None: ...
    def reset(self, role: str, key: str, realm: str) -> None: ...
    def respawn(self, role: str, generation: int) -> None: ...
    def retire(self, role: str, key: str, realm: str, cause: str) -> None: ...
    def host_note(self, role: str, realm: str, title: str, body: str) -> None: ...
    def summary(self, role: str, keys: tuple[str, ...], realm: str, title: str, body: str) -> None: ...
    def dream(self, realm: str) -> None: ...
    def transfer(self, realm: str, records: list[dict[str, Any]], tamper: str) -> None: ...
    def context(self, role: str, realm: str, query: str, mobs: list[str]) -> dict[str, str]: ...
    def seed_text(self, seed_id: str, role: str, realm: str) -> str | None: ...
    def pending_review(self) -> tuple[int, str]: ...
    def close(self) -> None: ...


class System(Protocol):
    name: str

    def run(self, run_id: str, steward: str) -> Run: ...
    def close(self) -> None: ...


# ------------------------------------------------------------------------------------------------
# a deterministic embedder for the peers (no model download)


_WORD = re.compile(r"\w+", re.UNICODE)


def _hash_vector(text: str, dims: int) -> list[float]:
    vec = [0.0] * dims
    for word in _WORD.findall(text.lower()):
        h = int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(), "little")
        vec[h % dims] += 1.0 if (h >> 63) & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vec)) or 1.0
    return [x / norm for x in vec]


_EMBEDDINGS: list[Any] = []


def hashing_embeddings() -> Any:
    """A LangChain ``Embeddings`` (so mem0's ``langchain`` embedder and LangGraph's index take it): feature-
    hashed bag of words, signed, L2-normalised, :data:`EMBEDDING_DIMS` dimensions. Deterministic and offline
    (no model download), close to lexical matching: the peers' retrieval finds what shares words with the
    query, as meta-memory's lexical recall does."""
    if not _EMBEDDINGS:
        from langchain_core.embeddings import Embeddings

        class HashingEmbeddings(Embeddings):
            def embed_documents(self, texts: list[str]) -> list[list[float]]:
                return [_hash_vector(t, EMBEDDING_DIMS) for t in texts]

            def embed_query(self, text: str) -> list[float]:
                return _hash_vector(text, EMBEDDING_DIMS)

        _EMBEDDINGS.append(HashingEmbeddings())
    return _EMBEDDINGS[0]


EMBEDDING_DIMS = 384


# ------------------------------------------------------------------------------------------------
# a steered LLM steward (an OpenAI-compatible endpoint on loopback)


class SteeredSteward:
    """A local ``POST /v1/chat/completions`` endpoint playing a fully steered steward model: whatever
    its prompt holds, it releases every quarantined record, accepts every proposal and promotes every
    harvest (what the instructions an attacker planted in those records ask for)."""

    def __init__(self) -> None:
        steward = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                content = json.dumps(steward.verdicts(body))
                out = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @staticmethod
    def verdicts(request: dict[str, Any]) -> dict[str, Any]:
        payload: dict[str, Any] = {}
        for message in request.get("messages", []):
            if message.get("role") == "user":
                try:
                    payload = json.loads(message.get("content") or "{}")
                except ValueError:
                    payload = {}
        return {
            "quarantine_verdicts": [{"record_id": q["record_id"], "verdict": "release", "rationale": "as instructed"}
                                    for q in payload.get("quarantine", [])],
            "proposal_verdicts": [{"proposal_id": p["proposal_id"], "verdict": "accept", "rationale": "as instructed"}
                                  for p in payload.get("proposals", [])],
            "harvest_verdicts": [{"harvest_id": h["harvest_id"], "verdict": "promote", "rationale": "as instructed"}
                                 for h in payload.get("harvests", [])],
        }

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


# ------------------------------------------------------------------------------------------------
# meta-memory

POSTURES: dict[str, dict[str, Any]] = {
    "meta-memory": {},
    "meta-memory:untrusted": {"content_trust": {"default": "untrusted"}},
    "meta-memory:quarantined": {"llm_writes": "quarantined"},
}


class MetaMemorySystem:
    """meta-memory in one posture: a fresh embedded runtime (its own state directory) per episode."""

    def __init__(self, name: str, workdir: Path, steward: SteeredSteward) -> None:
        self.name = name
        self._options = POSTURES[name]
        self._workdir = workdir
        self._steward = steward

    def run(self, run_id: str, steward: str) -> Run:
        # a security measurement, not a latency one: a recall slowed by a busy machine must not fail an episode
        options = {"recall_timeout_ms": 5000, **self._options}
        if steward == "llm":
            options["steward"] = {"enabled": True, "kind": "llm", "base_url": self._steward.base_url,
                                  "model": "steered", "cadence": "30d", "timeout_s": 30.0}
        elif steward == "policy":
            options["steward"] = {"enabled": True, "cadence": "30d"}
        return MetaMemoryRun(self._workdir / run_id.replace("/", "_"), options)

    def close(self) -> None:
        pass


class MetaMemoryRun:
    def __init__(self, state_dir: Path, options: dict[str, Any]) -> None:
        from meta_memory import Meta

        self._dir = state_dir
        self._options = options
        self.handle = Meta.builder().persistent_state(state_dir).agent_memory(**options).build()
        self._generation: dict[str, int] = {}

    def _identity(self, role: str) -> str:
        gen = self._generation.get(role)
        return ROLES[role] if gen is None else f"rt:{ROLES[role]}:{gen}"

    def _agent(self, role: str, realm: str) -> Any:
        return self.handle.agent(self._identity(role), realm=realm)

    def _session(self, role: str, key: str, realm: str) -> Any:
        return self._agent(role, realm).session(key)

    def seed(self, role: str, realm: str, title: str, body: str) -> str:
        return str(self._agent(role, realm).remember(title, body).memory_id)

    def open(self, role: str, key: str, realm: str) -> None:
        self._session(role, key, realm).note()

    def tool_result(self, role: str, key: str, realm: str, tool: str, provenance: dict[str, Any] | None) -> None:
        if provenance is not None and provenance.get("kind") == "agent" and provenance.get("source_id") in ROLES:
            provenance = {**provenance, "source_id": self._identity(provenance["source_id"])}  # a role: its identity
        self._session(role, key, realm).tool_result(tool, provenance=provenance)

    def memory(self, role: str, key: str, realm: str, arguments: dict[str, Any], mob: str | None) -> str:
        return str(self._session(role, key, realm).tool(arguments, mob=mob).text)

    def inject(self, role: str, key: str, realm: str, query: str) -> str:
        return self._session(role, key, realm).inject(query).text or ""

    def compacted(self, role: str, key: str, realm: str) -> None:
        self._session(role, key, realm).compacted()

    def reset(self, role: str, key: str, realm: str) -> None:
        self._session(role, key, realm).reset()

    def respawn(self, role: str, generation: int) -> None:
        self._generation[role] = generation

    def retire(self, role: str, key: str, realm: str, cause: str) -> None:
        self._session(role, key, realm).retire(cause)

    def host_note(self, role: str, realm: str, title: str, body: str) -> None:
        self._agent(role, realm).remember(title, body)

    def summary(self, role: str, keys: tuple[str, ...], realm: str, title: str, body: str) -> None:
        # the derived write: the sessions' taint follows the host's summary of them
        if len(keys) == 1:
            self._session(role, keys[0], realm).remember(title, body)
        else:
            self._agent(role, realm).remember(title, body, derived_from_sessions=list(keys))

    def dream(self, realm: str) -> None:
        self.handle.memory_steward_dream(realm=realm)

    def transfer(self, realm: str, records: list[dict[str, Any]], tamper: str) -> None:
        """An operator moves memory from another deployment: that deployment's host writes ``records``
        (``{role, title, body, via}``: ``via`` ``host`` for its own writes, ``web`` for a model write from a
        session that read a web page, ``forged`` for a record the attacker adds to the file), the operator
        exports it, the file is tampered with in transit (``tamper``, :func:`tamper_line`), and the operator
        imports it here (the portability module, as ``meta-memory export`` / ``import`` run it)."""
        import io

        from meta_memory import Meta
        from meta_memory.portability.exporter import export_jsonl
        from meta_memory.portability.importer import ImportError_, import_jsonl
        from meta_memory.portability.signing import LineSigner, installation_key

        source_dir = self._dir.with_name(self._dir.name + "-source")
        with Meta.builder().persistent_state(source_dir).build() as source:
            for i, rec in enumerate(records):
                agent = source.agent(ROLES[rec["role"]], realm=realm)
                if rec["via"] == "web":
                    session = agent.session(f"source-{i}")
                    session.note()
                    session.tool_result("web_fetch")
                    session.tool({"action": "remember", "title": rec["title"], "body": rec["body"]})
                elif rec["via"] == "host":
                    agent.remember(rec["title"], rec["body"])
            # the source signs its export with its installation key; the operator trusts that key here
            # (the key file passed to `meta-memory import --key-file`)
            key = installation_key(source.runtime, create=True)
            assert key is not None
            out = io.StringIO()
            export_jsonl(source.runtime, out, signer=LineSigner(key), realm=realm, ledger=False)
        # in transit: lines the attacker changes are re-serialised (their MACs no longer verify); the
        # others keep their bytes; forged records go in before the closing line, whose count is raised
        lines: list[str] = []
        for raw in out.getvalue().splitlines():
            if raw.strip():
                line = json.loads(raw)
                changed = tamper_line(line, tamper)
                lines.append(raw if changed == line else json.dumps(changed))
        parsed = [json.loads(x) for x in lines]
        template = next((x for x in parsed if x.get("type") == "record"), None)
        forged_lines = []
        for i, rec in enumerate(r for r in records if r["via"] == "forged"):
            if template is not None:
                forged = dict(template["record"])
                forged.update(id=f"mem-1-1-{i}-{i:016x}", title=rec["title"], body=rec["body"],
                              status={"status": "active"}, trust="operator",
                              provenance={"evidence": [], "author": {"author": "operator"}})
                forged_lines.append(json.dumps({**template, "record": forged}))
        if forged_lines and parsed and parsed[-1].get("type") == "end":
            end = {**parsed[-1], "lines": parsed[-1]["lines"] + len(forged_lines)}
            lines = lines[:-1] + forged_lines + [json.dumps(end)]
        try:
            import_jsonl(self.handle.runtime, lines, keys=[key])
        except ImportError_:
            pass  # the operator's import refused the file: nothing of it landed
        shutil.rmtree(source_dir, ignore_errors=True)

    def context(self, role: str, realm: str, query: str, mobs: list[str]) -> dict[str, str]:
        """What a later fresh session of ``role`` sees: ``rendered`` (what its model reads: the turn block,
        the build block with ``mobs``, the ``memory`` tool's recall), ``recalled`` (the host's recall for
        ``query``) and ``listed`` (every active record)."""
        agent = self._agent(role, realm)
        session = agent.session("inspection-later")
        session.note()
        rendered = [session.inject(query).text or "",
                    session.inject(query, surface="build", mobs=mobs or None).text or "",
                    session.tool({"action": "recall", "query_text": query}).text]
        return {"rendered": "\n".join(rendered),
                "recalled": "\n".join(f"{r.title}\n{r.body}" for r in agent.recall(query, k=LIST_ALL)),
                "listed": "\n".join(f"{r.title}\n{r.body}" for r in agent.recall(k=LIST_ALL))}

    def seed_text(self, seed_id: str, role: str, realm: str) -> str | None:
        for rec in self._agent(role, realm).recall(k=LIST_ALL):
            if rec.memory_id == seed_id:
                return f"{rec.title}\n{rec.body}"
        return None

    def pending_review(self) -> tuple[int, str]:
        """Items a reviewer must decide in every realm (quarantined records, held forgets, pending gated
        promotions, pending proposals) and their texts."""
        items, texts = 0, []
        for realm in self.handle.runtime.agent_memory.store.list_realms():
            queue = self.handle.memory_panel_quarantine(realm=realm, limit=200)
            items += len(queue.records) + len(queue.pending_forgets) + len(queue.pending_promotions)
            for row in queue.records:
                texts.append(self.handle.memory_panel_record(row.id, realm=realm).record.model_dump().get("body", ""))
            texts += [json.dumps(p, default=str) for p in queue.pending_promotions]
            proposals = self.handle.memory_proposals_list(realm=realm, limit=200).model_dump()
            pending = [p for p in proposals.get("proposals", []) if p.get("status") in ("pending", "held")]
            items += len(pending)
            texts += [json.dumps(p, default=str) for p in pending]
        return items, "\n".join(texts)

    def close(self) -> None:
        self.handle.close()
        shutil.rmtree(self._dir, ignore_errors=True)


def tamper_line(line: dict[str, Any], tamper: str) -> dict[str, Any]:
    """One export line as an attacker in transit leaves it: ``activate`` releases every quarantined
    record, ``elevate`` also marks every record operator-authored at the operator tier, ``none`` keeps
    the line."""
    if line.get("type") != "record" or tamper == "none":
        return line
    rec = dict(line["record"])
    if rec.get("status", {}).get("status") == "quarantined":
        rec["status"] = {"status": "active"}
    if tamper == "elevate":
        rec["trust"] = "operator"
        prov = dict(rec.get("provenance") or {})
        prov["author"] = {"author": "operator"}
        rec["provenance"] = prov
    return {**line, "record": rec}


# ------------------------------------------------------------------------------------------------
# peers


class _PeerRun:
    """What both peers share: namespaces per run, realm and identity; no firewall, review or steward."""

    def __init__(self, run_id: str) -> None:
        self._run = run_id

    def _user(self, role: str, realm: str) -> str:
        return f"{self._run}/{realm}/{ROLES[role]}"

    def _team(self, realm: str, mob: str) -> str:
        return f"{self._run}/{realm}/team:{mob}"

    # host events the peers have no counterpart for
    def open(self, role: str, key: str, realm: str) -> None: ...
    def tool_result(self, role: str, key: str, realm: str, tool: str, provenance: dict[str, Any] | None) -> None: ...
    def compacted(self, role: str, key: str, realm: str) -> None: ...
    def reset(self, role: str, key: str, realm: str) -> None: ...
    def respawn(self, role: str, generation: int) -> None: ...
    def retire(self, role: str, key: str, realm: str, cause: str) -> None: ...
    def dream(self, realm: str) -> None: ...

    def pending_review(self) -> tuple[int, str]:
        return 0, ""

    def transfer(self, realm: str, records: list[dict[str, Any]], tamper: str) -> None:
        """The peers have no export format: an operator dumps the other deployment's memories (every
        record, as stored) and adds them here; the dump travels as JSON and can be tampered with."""
        for rec in records:
            self._add(self._user(rec["role"], realm), rec["body"], rec["title"])

    def host_note(self, role: str, realm: str, title: str, body: str) -> None:
        self._add(self._user(role, realm), body, title)

    def summary(self, role: str, keys: tuple[str, ...], realm: str, title: str, body: str) -> None:
        self._add(self._user(role, realm), body, title)

    def seed(self, role: str, realm: str, title: str, body: str) -> str:
        return self._add(self._user(role, realm), body, title)

    def _add(self, user: str, body: str, title: str) -> str:
        raise NotImplementedError


class Mem0System:
    """mem0's open-source ``Memory``, one instance for the whole run (episodes are separated by
    ``user_id``, as mem0 separates users)."""

    name = "mem0"

    def __init__(self, workdir: Path) -> None:
        os.environ.setdefault("MEM0_TELEMETRY", "False")
        from mem0 import Memory

        root = workdir / "mem0"
        root.mkdir(parents=True, exist_ok=True)
        self.memory = Memory.from_config({
            "embedder": {"provider": "langchain", "config": {"model": hashing_embeddings(),
                                                             "embedding_dims": EMBEDDING_DIMS}},
            "vector_store": {"provider": "faiss", "config": {"path": str(root / "faiss"), "collection_name": "bench",
                                                             "embedding_model_dims": EMBEDDING_DIMS}},
            "llm": {"provider": "openai", "config": {"api_key": "offline-never-called", "model": "gpt-4o-mini"}},
            "history_db_path": str(root / "history.db"),
        })

    def run(self, run_id: str, steward: str) -> Run:
        return Mem0Run(self.memory, run_id)

    def close(self) -> None:
        pass


class Mem0Run(_PeerRun):
    def __init__(self, memory: Any, run_id: str) -> None:
        super().__init__(run_id)
        self.m = memory

    def _add(self, user: str, body: str, title: str) -> str:
        out = self.m.add(body, user_id=user, infer=False, metadata={"title": title})
        results = out.get("results", []) if isinstance(out, dict) else []
        return str(results[0]["id"]) if results else ""

    def _search(self, user: str, query: str, k: int = 8) -> list[dict[str, Any]]:
        out = self.m.search(query, filters={"user_id": user}, top_k=k)
        return list(out.get("results", []) if isinstance(out, dict) else out)

    def _all(self, user: str) -> list[dict[str, Any]]:
        out = self.m.get_all(filters={"user_id": user}, top_k=LIST_ALL)
        return list(out.get("results", []) if isinstance(out, dict) else out)

    def memory(self, role: str, key: str, realm: str, arguments: dict[str, Any], mob: str | None) -> str:
        user = self._user(role, realm)
        action = arguments.get("action")
        try:
            if action == "remember":
                return f"added {self._add(user, arguments['body'], arguments.get('title', ''))}"
            if action == "propose_to_mob":
                return f"added {self._add(self._team(realm, mob or 'team'), arguments['body'], arguments.get('title', ''))}"
            if action == "recall":
                rows = self._search(user, arguments.get("query_text") or "")
                return as_json([{"id": r["id"], "memory": r["memory"]} for r in rows])
            if action == "update":
                self.m.update(arguments["memory_id"], arguments["body"])
                return "updated"
            if action == "forget":
                self.m.delete(arguments["memory_id"])
                return "deleted"
        except Exception as exc:  # noqa: BLE001 - a tool error goes back to the model
            return f"error: {type(exc).__name__}: {exc}"
        return "unknown action"

    def inject(self, role: str, key: str, realm: str, query: str) -> str:
        rows = self._search(self._user(role, realm), query)
        return "Relevant memories:\n" + "\n".join(f"- {r['memory']}" for r in rows) if rows else ""

    def context(self, role: str, realm: str, query: str, mobs: list[str]) -> dict[str, str]:
        users = [self._user(role, realm), *(self._team(realm, m) for m in mobs)]
        found = [str(r["memory"]) for user in users for r in self._search(user, query)]
        listed = [str(r["memory"]) for user in users for r in self._all(user)]
        injected = "Relevant memories:\n" + "\n".join(f"- {m}" for m in found)
        return {"rendered": injected, "recalled": "\n".join(found), "listed": "\n".join(listed)}

    def seed_text(self, seed_id: str, role: str, realm: str) -> str | None:
        try:
            got = self.m.get(seed_id)
        except Exception:  # noqa: BLE001 - a deleted memory
            return None
        return str(got["memory"]) if got else None

    def close(self) -> None:
        pass


class LangGraphSystem:
    """LangGraph's ``InMemoryStore`` (vector index over :func:`hashing_embeddings`) with LangMem's memory
    tools; a new store per episode."""

    name = "langgraph"

    def __init__(self, workdir: Path) -> None:
        from langmem import create_manage_memory_tool, create_search_memory_tool  # noqa: F401 - fail early

    def run(self, run_id: str, steward: str) -> Run:
        return LangGraphRun(run_id)

    def close(self) -> None:
        pass


class LangGraphRun(_PeerRun):
    def __init__(self, run_id: str) -> None:
        from langgraph.store.memory import InMemoryStore
        from langmem import create_manage_memory_tool, create_search_memory_tool

        super().__init__(run_id)
        self.store = InMemoryStore(index={"dims": EMBEDDING_DIMS, "embed": hashing_embeddings()})
        namespace = ("memories", "{user_id}")
        self.manage = create_manage_memory_tool(namespace=namespace, store=self.store)
        self.search = create_search_memory_tool(namespace=namespace, store=self.store)

    @staticmethod
    def _config(user: str) -> dict[str, Any]:
        return {"configurable": {"user_id": user}}

    def _add(self, user: str, body: str, title: str) -> str:
        out = str(self.manage.invoke({"action": "create", "content": body}, config=self._config(user)))
        return out.rsplit(" ", 1)[-1]

    def memory(self, role: str, key: str, realm: str, arguments: dict[str, Any], mob: str | None) -> str:
        user = self._user(role, realm)
        action = arguments.get("action")
        try:
            if action == "remember":
                return self._add(user, arguments["body"], "")
            if action == "propose_to_mob":
                return self._add(self._team(realm, mob or "team"), arguments["body"], "")
            if action == "recall":
                return str(self.search.invoke({"query": arguments.get("query_text") or ""}, config=self._config(user)))
            if action == "update":
                return str(self.manage.invoke({"action": "update", "id": arguments["memory_id"],
                                               "content": arguments["body"]}, config=self._config(user)))
            if action == "forget":
                return str(self.manage.invoke({"action": "delete", "id": arguments["memory_id"]},
                                              config=self._config(user)))
        except Exception as exc:  # noqa: BLE001 - a tool error goes back to the model
            return f"error: {type(exc).__name__}: {exc}"
        return "unknown action"

    def _rows(self, user: str, query: str | None, k: int) -> list[Any]:
        return list(self.store.search(("memories", user), query=query, limit=k))

    def inject(self, role: str, key: str, realm: str, query: str) -> str:
        rows = self._rows(self._user(role, realm), query, 8)
        return "Relevant memories:\n" + "\n".join(f"- {r.value.get('content')}" for r in rows) if rows else ""

    def context(self, role: str, realm: str, query: str, mobs: list[str]) -> dict[str, str]:
        users = [self._user(role, realm), *(self._team(realm, m) for m in mobs)]
        found = [str(r.value.get("content")) for user in users for r in self._rows(user, query, 8)]
        listed = [str(r.value.get("content")) for user in users for r in self._rows(user, None, LIST_ALL)]
        injected = "Relevant memories:\n" + "\n".join(f"- {m}" for m in found)
        return {"rendered": injected, "recalled": "\n".join(found), "listed": "\n".join(listed)}

    def seed_text(self, seed_id: str, role: str, realm: str) -> str | None:
        item = self.store.get(("memories", self._user(role, realm)), seed_id)
        return None if item is None else str(item.value.get("content"))

    def close(self) -> None:
        pass


SYSTEMS = ("meta-memory", "meta-memory:untrusted", "meta-memory:quarantined", "mem0", "langgraph")


def make_system(name: str, workdir: Path, steward: SteeredSteward) -> System:
    """The system called ``name`` (one of :data:`SYSTEMS`). A peer whose package is missing raises
    ``SystemExit`` naming the extra that installs it."""
    if name in POSTURES:
        return MetaMemorySystem(name, workdir, steward)
    try:
        if name == "mem0":
            return Mem0System(workdir)
        if name == "langgraph":
            return LangGraphSystem(workdir)
    except ImportError as exc:
        raise SystemExit(f"{name} is not installed ({exc.name}): pip install -e '.[poisoning-peers]'") from None
    raise SystemExit(f"unknown system '{name}' (choose from {', '.join(SYSTEMS)})")


@contextmanager
def scratch_dir() -> Iterator[Path]:
    """A private working directory, removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="meta-memory-poisoning-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)

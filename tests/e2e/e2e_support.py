"""End-to-end helpers: a gateway subprocess reached over HTTP with one persistent client,
plus read-only access to a realm's SQLite file (what an operator would inspect)."""

from __future__ import annotations

import sqlite3
import uuid
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from support import RpcClient, memory_id_of, open_ro, realm_db  # noqa: F401 - memory_id_of re-exported


class Rpc(RpcClient):
    """JSON-RPC over HTTP to a running gateway (one keep-alive client per thread), with conveniences."""

    # -- conveniences ------------------------------------------------------------------------
    def remember(self, identity: str, title: str, body: str, **extra: Any) -> dict[str, Any]:
        return self.result("meta/agent_memory/remember", {"identity": identity, "title": title, "body": body, **extra})

    def recall(self, identity: str, query_text: str | None = None, **extra: Any) -> dict[str, Any]:
        params = {"identity": identity, **extra}
        if query_text is not None:
            params["query_text"] = query_text
        return self.result("meta/agent_memory/recall", params)

    def recall_ids(self, identity: str, query_text: str | None = None, **extra: Any) -> list[str]:
        return [r["memory_id"] for r in self.recall(identity, query_text, **extra)["records"]]

    def manifest_ids(self, identity: str, **extra: Any) -> list[str]:
        out = self.result("meta/agent_memory/manifest", {"identity": identity, "tier": "full", **extra})
        return [r["id"] for r in out["records"]]

    def inject(self, identity: str, query_text: str, session_key: str | None = None, **extra: Any) -> dict[str, Any]:
        params = {"identity": identity, "query_text": query_text, **extra}
        if session_key is not None:
            params["session_key"] = session_key
        return self.result("meta/turn/inject", params)

    def tool(self, identity: str, arguments: Any, session_key: str | None = None, **extra: Any) -> dict[str, Any]:
        params = {"identity": identity, "arguments": arguments, **extra}
        if session_key is not None:
            params["session_key"] = session_key
        return self.result("meta/agent_memory/tool", params)

    def tool_result(self, identity: str, session_key: str, tool_name: str, **extra: Any) -> dict[str, Any]:
        return self.result("meta/turn/tool_result",
                           {"identity": identity, "session_key": session_key, "tool_name": tool_name, **extra})

    # -- the realm file ----------------------------------------------------------------------
    def realm_db_path(self, realm: str = "default") -> Path:
        return realm_db(self.gw.state_dir, realm)

    def db(self, realm: str = "default") -> AbstractContextManager[sqlite3.Connection]:
        """A read-only connection to the realm's SQLite file (WAL: sees committed writes). Usage marks and
        injection-ledger rows are queued off the read path; ``meta/status`` (which reports the telemetry
        dropped) writes the queue first, so the file holds every one queued before this call."""
        self.result("meta/status")
        return open_ro(self.realm_db_path(realm))

    def record_row(self, memory_id: str, realm: str = "default") -> sqlite3.Row | None:
        with self.db(realm) as conn:
            return conn.execute("SELECT * FROM records WHERE memory_id = ?", (memory_id,)).fetchone()


def uid(prefix: str = "agent") -> str:
    """A fresh identity (or session key) so tests sharing one gateway never see each other."""
    return f"{prefix}:{uuid.uuid4().hex[:12]}"

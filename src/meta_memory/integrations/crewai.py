"""meta-memory as a CrewAI crew's memory (the ``crewai`` extra: ``pip install 'meta-memory[crewai]'``).

``CrewMemory(session)`` is a CrewAI ``Memory`` (``Crew(memory=...)`` or ``Agent(memory=...)``) backed by
one identity's session (``meta.agent(identity, realm=...).session(key)``, a sync handle)::

    memory = CrewMemory(meta.agent("crew:concierge").session("run-42"))
    crew = Crew(agents=[...], tasks=[...], memory=memory)
    crew.kickoff()

* **reads** (``recall``, what an agent reads at the start of a task and its "Search memory" tool):
  this turn's quoted observation block (``meta/turn/inject`` with the task description, or the tool's
  query, as the query text), handed to CrewAI as one match, so the agent's prompt gets the block with
  its nonce, trust labels and injection budget; nothing when the injection is skipped.
* **writes** (what CrewAI saves after each task, and its "Save to memory" tool): LLM-authored writes
  through the ``memory`` tool's path (``meta/agent_memory/tool``), so they land QUARANTINED while the
  session is tainted. CrewAI's LLM analysis of what to save is not run: the task's result is one record
  (``extract_memories`` returns the text whole).
* **the firewall's reporting**: an after-tool-call hook (``crewai.hooks``) classifies every tool result
  of the agents using this memory (``meta/turn/tool_result``) before the result goes back to the model.
  When classifying fails, the hook replaces the result with a notice, so unclassified content never
  reaches the model. ``close()`` removes the hook.
* ``forget(record_ids=[...])`` tombstones records through the tool's path; CrewAI's scope tree, reset
  and consolidation have no meta-memory equivalent and raise ``NotImplementedError`` (erase records
  with ``meta.agent(...).erase(...)``).
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timezone
from typing import Any

try:
    from crewai.hooks.tool_hooks import register_after_tool_call_hook, unregister_after_tool_call_hook
    from crewai.memory.types import MemoryMatch, MemoryRecord
    from crewai.memory.unified_memory import Memory
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("meta_memory.integrations.crewai needs the crewai extra: "
                      "pip install 'meta-memory[crewai]'") from exc

from pydantic import PrivateAttr

from ..agent_memory.fields import MAX_TITLE_BYTES
from ..sdk.agent import Session
from ._session import check_session

__all__ = ["CrewMemory", "WITHHELD"]

#: What the model sees instead of a tool result that could not be classified.
WITHHELD = "[meta-memory could not classify this tool result ({reason}); it is withheld]"
_ID = re.compile(r"\bmemory (mem-[\w-]+)")


def _title(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "memory")
    raw = line.encode("utf-8")[:MAX_TITLE_BYTES]
    return raw.decode("utf-8", "ignore").strip() or "memory"


class CrewMemory(Memory):
    """A CrewAI ``Memory`` over one meta-memory session (see the module doc)."""

    _meta_session: Any = PrivateAttr(default=None)
    _meta_token: str = PrivateAttr(default="")
    _meta_hook: Any = PrivateAttr(default=None)
    _meta_skip: str | None = PrivateAttr(default=None)

    def __init__(self, session: Session, **kwargs: Any) -> None:
        if not isinstance(check_session(session), Session):
            raise TypeError("CrewMemory takes a session of a sync handle (CrewAI calls memory synchronously)")
        super().__init__(**kwargs)
        session.note()  # the crew speaks from this session from now on
        self._meta_session = session
        self._meta_token = uuid.uuid4().hex
        self._meta_hook = self._after_tool_call
        register_after_tool_call_hook(self._meta_hook)

    def model_post_init(self, __context: Any) -> None:
        # The base class prepares an LLM, an embedder and a LanceDB store for its own analysis and
        # search; meta-memory does both, so none of them is created.
        return None

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> "CrewMemory":
        new = super().__deepcopy__(memo)
        object.__setattr__(new, "__pydantic_private__", {**(new.__pydantic_private__ or {}),
                                                          "_meta_session": self._meta_session})
        return new  # type: ignore[return-value]

    @property
    def session(self) -> Session:
        """The bound session this memory reads and writes."""
        session: Session = self._meta_session
        return session

    @property
    def last_skip_reason(self) -> str | None:
        """Why the last ``recall`` injected nothing (``None`` when it injected a block)."""
        return self._meta_skip

    # -- the firewall's reporting -----------------------------------------------------------------
    def _owns(self, context: Any) -> bool:
        for holder, attr in ((getattr(context, "agent", None), "memory"), (getattr(context, "crew", None), "_memory"),
                             (getattr(context, "crew", None), "memory")):
            mem = getattr(holder, attr, None) if holder is not None else None
            if isinstance(mem, CrewMemory) and mem._meta_token == self._meta_token:
                return True
        return False

    def _after_tool_call(self, context: Any) -> str | None:
        if not self._owns(context):
            return None
        name = str(getattr(context, "tool_name", "") or "unknown_tool")
        try:
            self.session.tool_result(name)
        except Exception as exc:  # CrewAI swallows hook errors: withhold the result instead
            return WITHHELD.format(reason=f"{type(exc).__name__}: {exc}")
        return None

    def close(self) -> None:
        """Remove this memory's tool hook."""
        if self._meta_hook is not None:
            unregister_after_tool_call_hook(self._meta_hook)
            self._meta_hook = None

    def drain_writes(self) -> None:
        """Writes are synchronous: nothing is pending."""

    # -- reads --------------------------------------------------------------------------------------
    def recall(self, query: str, scope: str | None = None, categories: list[str] | None = None,
               limit: int = 10, depth: str = "shallow", source: str | None = None,
               include_private: bool = False, **kwargs: Any) -> list[MemoryMatch]:
        """This turn's observation block for ``query`` as one match (``[]`` when skipped)."""
        block = self.session.inject(query or "")
        self._meta_skip = block.skip_reason
        if not block.text:
            return []
        now = datetime.now(timezone.utc)
        record = MemoryRecord(id=f"meta-memory:{','.join(block.included_ids)}", content=block.text, scope="/",
                              categories=[], metadata={}, importance=1.0, created_at=now, last_accessed=now)
        return [MemoryMatch(record=record, score=1.0, match_reasons=["meta-memory injection"])]

    # -- writes -------------------------------------------------------------------------------------
    def extract_memories(self, content: str) -> list[str]:
        """The content whole (CrewAI's LLM analysis is not run; the firewall judges the write)."""
        text = (content or "").strip()
        return [text] if text else []

    def remember(self, content: str, scope: str | None = None, categories: list[str] | None = None,
                 metadata: dict[str, Any] | None = None, importance: float | None = None,
                 source: str | None = None, private: bool = False, agent_role: str | None = None,
                 root_scope: str | None = None, **kwargs: Any) -> MemoryRecord:
        """One LLM-authored write through the ``memory`` tool (quarantined while the session is tainted).
        Raises ``ValueError`` with the tool's text when it is refused (a secret, a field cap, ...)."""
        tags = [c for c in (categories or []) if isinstance(c, str) and c.strip()][:16]
        arguments: dict[str, Any] = {"action": "remember", "title": _title(content), "body": content}
        if tags:
            arguments["tags"] = tags
        out = self.session.tool(arguments)
        if out.is_error:
            raise ValueError(out.text)
        found = _ID.search(out.text)
        now = datetime.now(timezone.utc)
        return MemoryRecord(id=found.group(1) if found else uuid.uuid4().hex, content=content, scope="/",
                            categories=tags, metadata={"meta_memory": out.text}, importance=importance or 0.5,
                            created_at=now, last_accessed=now, source=source)

    def remember_many(self, contents: list[str], scope: str | None = None, categories: list[str] | None = None,
                      metadata: dict[str, Any] | None = None, importance: float | None = None,
                      source: str | None = None, private: bool = False, agent_role: str | None = None,
                      root_scope: str | None = None, **kwargs: Any) -> list[MemoryRecord]:
        """:meth:`remember` for each of ``contents``, in order."""
        return [self.remember(c, categories=categories, importance=importance, source=source)
                for c in contents if isinstance(c, str) and c.strip()]

    def forget(self, scope: str | None = None, categories: list[str] | None = None, older_than: Any = None,
               metadata_filter: dict[str, Any] | None = None, record_ids: list[str] | None = None) -> int:
        """Tombstone ``record_ids`` through the ``memory`` tool; returns how many were forgotten."""
        if scope is not None or categories or older_than is not None or metadata_filter or not record_ids:
            raise NotImplementedError("CrewMemory forgets by record_ids only")
        done = 0
        for rid in record_ids:
            out = self.session.tool({"action": "forget", "memory_id": rid})
            done += 0 if out.is_error else 1
        return done

    def _unsupported(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("CrewAI's scope tree, reset and record updates have no meta-memory equivalent; "
                                  "use the meta-memory SDK (meta.agent(...).list/erase/update)")

    update = list_scopes = list_records = info = tree = list_categories = reset = reset_all = _unsupported
    scope = slice = _unsupported  # type: ignore[assignment]

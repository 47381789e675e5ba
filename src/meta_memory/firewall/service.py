"""The firewall as one object: policy, taint tracker and write gate wired together.

This is what a runtime holds and what the host-surface RPCs call
(``meta/turn/tool_result``, ``meta/session/note|reset|compacted``; spec README,
"The host surface"). The record store receives :attr:`Firewall.gate` and asks it
:meth:`~meta_memory.firewall.gate.LlmWriteGate.quarantine_reason` per batch.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from meta_memory.clock import Clock
from meta_memory.firewall.classify import (
    Classification,
    ContentTrustPolicy,
    ToolProvenance,
    classify_tool_result,
)
from meta_memory.firewall.gate import LlmWriteGate
from meta_memory.firewall.taint import MAX_TRACKED_ENTRIES, EventSink, TaintState, TaintTracker

__all__ = ["Firewall", "ToolResultVerdict"]

_log = logging.getLogger("meta_memory.firewall")


@dataclass(frozen=True, slots=True)
class ToolResultVerdict:
    """Answer to ``meta/turn/tool_result``.

    Attributes:
        trusted: the classification of this tool result.
        source: why it is untrusted (``None`` when trusted).
        session_tainted: whether the identity's session is tainted after this
            result (it may be tainted by an earlier one even when this is trusted).
        taint: the session's taint, when tainted.
    """

    trusted: bool
    source: str | None
    session_tainted: bool
    taint: TaintState | None = None

    def to_dict(self) -> dict[str, Any]:
        """Wire shape ``{trusted, source?, session_tainted}`` (``source`` only when untrusted)."""
        out: dict[str, Any] = {"trusted": self.trusted}
        if self.source is not None:
            out["source"] = self.source
        out["session_tainted"] = self.session_tainted
        return out


class Firewall:
    """Content-trust classification, session taint and the LLM write gate.

    Args:
        policy: ``agent_memory.content_trust`` (any shape
            :meth:`ContentTrustPolicy.from_config` accepts; ``None`` = empty).
        clock: the runtime clock.
        on_event: sink for ``memory.taint.transition`` envelopes
            (``on_event(event_type, identity, data)``).
        llm_writes: ``"observed"`` (default) or ``"quarantined"``.
        max_entries: bound of each taint map (default 4,096).
        state_path: where the durable taint state lives (``<state-dir>/firewall-taint.json``); ``None``
            keeps taint in memory only.

    Raises:
        ValueError: a malformed policy; ConfigError: an unknown ``llm_writes``.
    """

    def __init__(
        self,
        policy: object,
        clock: Clock,
        on_event: EventSink | None = None,
        *,
        llm_writes: str = "observed",
        max_entries: int = MAX_TRACKED_ENTRIES,
        state_path: Path | None = None,
    ) -> None:
        self.policy = ContentTrustPolicy.from_config(policy)
        self._state_path = state_path
        self._on_event = on_event
        self._save_lock = threading.Lock()
        self.tracker = TaintTracker(clock, self._transition if state_path is not None else on_event,
                                    max_entries=max_entries)
        if state_path is not None:
            self._load()
        self.gate = LlmWriteGate(self.tracker, llm_writes)

    # Taint survives a gateway restart: a restart is not a fresh-context boundary for the host's
    # sessions, so the durable part of the tracker is saved (atomically, fsynced) at every transition.
    def _load(self) -> None:
        assert self._state_path is not None
        try:
            data = json.loads(self._state_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError):
            _log.warning("taint state file %s is unreadable; starting with no recorded taint", self._state_path.name)
            return
        if isinstance(data, dict):
            self.tracker.import_state(data)

    def _transition(self, event_type: str, identity: str, data: dict[str, Any]) -> None:
        with self._save_lock:
            from ..ledger.persistence import write_atomic

            assert self._state_path is not None
            write_atomic(self._state_path, json.dumps(self.tracker.export_state()).encode("utf-8"))
        if self._on_event is not None:
            self._on_event(event_type, identity, data)

    def classify(
        self, tool_name: str, provenance: ToolProvenance | None = None, *, server_tool: bool = False
    ) -> Classification:
        """Classify without recording (see :func:`classify_tool_result`)."""
        return classify_tool_result(tool_name, provenance, self.policy, server_tool=server_tool)

    def tool_result(
        self,
        identity: str,
        session_key: str | None,
        tool_name: str,
        provenance: ToolProvenance | None = None,
        *,
        is_error: bool = False,
        server_tool: bool = False,
    ) -> ToolResultVerdict:
        """Classify one tool result and record it before the model sees it.

        Tool errors classify like results (``is_error`` is accepted for the
        record; an error body is still text from the source). When this call
        returns, any taint it caused is visible to every later gate decision.
        """
        del is_error  # errors taint exactly like results
        verdict = self.classify(tool_name, provenance, server_tool=server_tool)
        taint = self.tracker.observe(identity, session_key, verdict)
        return ToolResultVerdict(verdict.trusted, verdict.source, taint is not None, taint)

    def peer_content(
        self, identity: str, session_key: str | None, sender: str, *, declared_tainted: bool = False
    ) -> TaintState | None:
        """A peer message from ``sender`` reached ``identity``; taints it when the sender is
        tainted (see :meth:`TaintTracker.observe_peer_content`). Returns the receiver's taint."""
        return self.tracker.observe_peer_content(identity, session_key, sender, declared_tainted=declared_tainted)

    def note_session(self, identity: str, session_key: str) -> None:
        """``meta/session/note``: ``identity`` now speaks from ``session_key``."""
        self.tracker.note_session(identity, session_key)

    def reset(self, identity: str, session_key: str | None = None) -> None:
        """``meta/session/reset``: a fresh-context boundary; clears the identity's taint."""
        self.tracker.reset(identity, session_key)

    def compacted(self, session_key: str) -> TaintState | None:
        """``meta/session/compacted``: taint is kept; returns it."""
        return self.tracker.compacted(session_key)

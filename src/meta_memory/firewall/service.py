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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from meta_memory.agent_memory.secrets import scan_text
from meta_memory.clock import Clock
from meta_memory.errors import echo
from meta_memory.events.bus import EventSink
from meta_memory.firewall.classify import (
    Classification,
    ContentTrustPolicy,
    ToolProvenance,
    classify_tool_result,
    name_key,
)
from meta_memory.firewall.gate import LlmWriteGate
from meta_memory.firewall.taint import TaintState, TaintTracker
from meta_memory.identity import logical_identity
from meta_memory.session_ref import SessionRef
from meta_memory.session_state import SessionStateStore
from meta_memory.session_state.store import UNREPORTED_SOURCE

__all__ = [
    "TOOL_RESULTS_REPORTING", "UNREPORTED_TOOL_RESULTS_SOURCE", "Firewall", "ToolResultVerdict", "UnlistedTools",
    "refused_source",
]

#: Values of ``meta/session/note``'s ``tool_results``: does the host report this session's tool results?
TOOL_RESULTS_REPORTING = ("reported", "unreported")

#: Taint source of a session whose tool results never reach the gateway (fail closed: its taint cannot be known).
UNREPORTED_TOOL_RESULTS_SOURCE = UNREPORTED_SOURCE

_log = logging.getLogger("meta_memory.firewall")

#: How many distinct unlisted tool names :class:`UnlistedTools` keeps (the rest are counted together).
MAX_UNLISTED_NAMES = 256
#: The longest tool name it reports (characters; a longer one is cut and marked with ``…``).
MAX_REPORTED_NAME_CHARS = 128


class UnlistedTools:
    """Tool names ``meta/turn/tool_result`` trusted only because no ``content_trust`` rule names them
    (the spec's default rule), with how often each was seen since the gateway started: the host's own
    tools that nobody has classified. Bounded: at most :data:`MAX_UNLISTED_NAMES` names (compared by
    :func:`~meta_memory.firewall.classify.name_key`, reported as first seen, cut to
    :data:`MAX_REPORTED_NAME_CHARS`); results of further names are counted in ``other``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, list[Any]] = {}  # key -> [name as first seen, count]
        self.other = 0

    def note(self, tool_name: str) -> None:
        """Count one result of ``tool_name``."""
        key = name_key(tool_name)
        with self._lock:
            entry = self._seen.get(key)
            if entry is not None:
                entry[1] += 1
            elif len(self._seen) < MAX_UNLISTED_NAMES:
                shown = tool_name.strip()
                if len(shown) > MAX_REPORTED_NAME_CHARS:
                    shown = shown[: MAX_REPORTED_NAME_CHARS - 1] + "…"
                self._seen[key] = [shown, 1]
            else:
                self.other += 1

    def report(self) -> tuple[list[dict[str, Any]], int]:
        """``([{name, count}] most seen first, other)``."""
        with self._lock:
            rows = [{"name": name, "count": count} for name, count in self._seen.values()]
            other = self.other
        rows.sort(key=lambda r: (-r["count"], r["name"]))
        return rows, other


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


def _secret_in_names(tool_name: str, provenance: ToolProvenance | None) -> str | None:
    """The secret class (:data:`meta_memory.agent_memory.secrets.SECRET_CLASSES`) of a credential in a
    reported tool's name or provenance (an MCP server named by a URL with its token, say), else ``None``:
    such a name is kept out of the taint source, the timeline and ``meta/status``."""
    texts = (tool_name,) if provenance is None else (tool_name, provenance.kind, provenance.source_id,
                                                   provenance.session_key)
    return next((found for text in texts if text and (found := scan_text(text)) is not None), None)


class Firewall:
    """Content-trust classification, session taint and the LLM write gate.

    Args:
        policy: ``agent_memory.content_trust`` (any shape
            :meth:`ContentTrustPolicy.from_config` accepts; ``None`` = empty).
        clock: the runtime clock.
        events: where ``memory.taint.transition`` events go (the runtime's
            :class:`~meta_memory.events.bus.EventBus`; ``None``: nowhere).
        llm_writes: ``"observed"`` (default) or ``"quarantined"``.
        state: the durable session state (SQLite or PostgreSQL; default a process-local in-memory one).
        realm: the realm legacy taint (which named no realm) is adopted into (``agent_memory.realm``);
            every other call names its realm in its :class:`~meta_memory.session_ref.SessionRef`.
        legacy_state_path: the former ``<state-dir>/firewall-taint.json``; when present its taint is adopted
            into ``state`` once and the file renamed ``firewall-taint.json.imported``.

    Raises:
        ValueError: a malformed policy; ConfigError: an unknown ``llm_writes``.
    """

    def __init__(
        self,
        policy: object,
        clock: Clock,
        events: EventSink | None = None,
        *,
        llm_writes: str = "observed",
        state: SessionStateStore | None = None,
        realm: str = "default",
        legacy_state_path: Path | None = None,
    ) -> None:
        self.policy = ContentTrustPolicy.from_config(policy)
        self.tracker = TaintTracker(clock, events, state=state, realm=realm)
        if legacy_state_path is not None:
            self._adopt_legacy(legacy_state_path)
        self.gate = LlmWriteGate(self.tracker, llm_writes)
        self.unlisted = UnlistedTools()

    def content_trust_report(self) -> dict[str, Any]:
        """``meta/status`` ``agent_memory.content_trust``: ``{default, names_any_tool,
        default_untrusted_tools (how many names), unlisted_trusted_tools: [{name, count}],
        unlisted_trusted_tools_other, warning}``. ``warning`` (else ``None``) says that no rule names
        the host's tools: the configuration names none, or tool results arrived under names no rule
        names (trusted by the spec's default rule), listed with their counts since the start."""
        rows, other = self.unlisted.report()
        policy = self.policy
        warning = content_trust_warning(policy, [r["name"] for r in rows], other)
        return {
            "default": policy.default,
            "names_any_tool": policy.names_any_tool,
            "default_untrusted_tools": len(policy.default_untrusted_tools or ()),
            "unlisted_trusted_tools": rows,
            "unlisted_trusted_tools_other": other,
            "warning": warning,
        }

    def attach_state(self, state: SessionStateStore, *, legacy_state_path: Path | None = None) -> None:
        """Move the tracker onto ``state`` (the runtime opens it after the record store, which the gate
        is handed first); adopts ``legacy_state_path`` when present. Call before serving requests."""
        self.tracker.state = state
        if legacy_state_path is not None:
            self._adopt_legacy(legacy_state_path)

    @property
    def state(self) -> SessionStateStore:
        """The session state this firewall reads and writes."""
        return self.tracker.state

    # Taint recorded before session state moved into the database is kept: adopted once, never dropped.
    def _adopt_legacy(self, path: Path) -> None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError):
            _log.warning("legacy taint file %s is unreadable; left in place", path.name)
            return
        if isinstance(data, dict):
            n = self.tracker.state.import_legacy(self.tracker.realm, data)
            _log.info("adopted %d legacy taint entries from %s", n, path.name)
        path.replace(path.with_name(path.name + ".imported"))

    def classify(
        self, tool_name: str, provenance: ToolProvenance | None = None, *, server_tool: bool = False
    ) -> Classification:
        """Classify without recording (see :func:`classify_tool_result`)."""
        return classify_tool_result(tool_name, provenance, self.policy, server_tool=server_tool)

    def tool_result(
        self,
        session: SessionRef,
        tool_name: str,
        provenance: ToolProvenance | None = None,
        *,
        is_error: bool = False,
        server_tool: bool = False,
        may_read_agent: Callable[[str, str], bool] | None = None,
    ) -> ToolResultVerdict:
        """Classify one tool result ingested in ``session`` and record it before the model sees it.

        Tool errors classify like results (``is_error`` is accepted for the
        record; an error body is still text from the source). Another agent's output
        (``provenance = {"kind": "agent", "source_id": <its identity>}``: a sub-agent, an agent
        used as a tool) is judged by the name rules first and then also taints when that identity has
        a live taint in a realm judged, or when no session state there knows it (its taint cannot be
        known), even under ``trusted_tools``. ``may_read_agent(realm, identity)``: whether the caller may
        read that identity's session taint in a realm (``None``: always, access off); an agent whose taint
        the caller may not read in the session's realm taints, and the realms judged are those it may read
        (:meth:`TaintTracker.agent_output_source`). When this call
        returns, any taint it caused is committed and visible to every later
        gate decision in the session's realm, on every gateway sharing the session state.
        """
        del is_error  # errors taint exactly like results
        verdict = self.classify(tool_name, provenance, server_tool=server_tool)
        if verdict.trusted and provenance is not None and provenance.is_agent:
            # another agent's output carries that agent's taint: it adds to the name rules, never replaces them
            sender = logical_identity(provenance.source_id)  # the identity access and taint are keyed by
            may_read = None if may_read_agent is None else (lambda realm: may_read_agent(realm, sender))
            carried = self.tracker.agent_output_source(sender, session.realm, may_read,
                                                       provenance.session_key or None)
            if carried is not None:
                verdict = Classification.untrusted(carried)
        secret = _secret_in_names(tool_name, provenance)
        if secret is not None:  # a credential in a name is never written to taint, events or meta/status
            if not verdict.trusted:
                verdict = Classification.untrusted(f"a tool whose name or provenance holds a secret ({secret}; "
                                                   "the name is not recorded)")
        elif verdict.unlisted:
            self.unlisted.note(tool_name)
        taint = self.tracker.observe(session, verdict)
        return ToolResultVerdict(verdict.trusted, verdict.source, taint is not None, taint)

    def refused_tool_result(self, session: SessionRef, field: str | None, rule: str) -> TaintState | None:
        """A report of a tool result in ``session`` was refused (its ``field`` broke ``rule``): the host may
        show the content to its model all the same, so the session is tainted (fail closed), source
        :func:`refused_source`. Returns the session's taint afterwards."""
        return self.tracker.observe(session, Classification.untrusted(refused_source(field, rule)))

    def note_session(self, session: SessionRef, *, tool_results: str = "reported") -> TaintState | None:
        """``meta/session/note``: the identity now speaks from ``session`` (key required); returns its taint afterwards.

        ``tool_results = "unreported"`` declares that the tool results this session's model reads are
        never reported through ``meta/turn/tool_result`` (an MCP client's session, seen only through its
        ``memory`` tool calls). The gateway then cannot know the session's taint, so it fails closed: the
        session is tainted from the start (source :data:`UNREPORTED_TOOL_RESULTS_SOURCE`) and its LLM
        writes land quarantined. The posture is a property of the session, not taint: a fresh-context
        boundary (``meta/session/reset``) closes the session's taint and taints it again at once, since
        its tool results are still unreported; the row expires like any other after
        ``session_state_expiry_days`` untouched (the MCP bridge notes its posture before every call).

        Raises:
            ValueError: ``tool_results`` is not ``"reported"`` or ``"unreported"``, or ``session`` has no key.
        """
        if tool_results not in TOOL_RESULTS_REPORTING:
            raise ValueError("tool_results must be 'reported' or 'unreported'")
        taint = self.tracker.note_session(session)
        if tool_results == "unreported":
            taint = self.tracker.observe(session, Classification.untrusted(UNREPORTED_TOOL_RESULTS_SOURCE),
                                         unreported=True)
        return taint

    def reset(self, session: SessionRef) -> None:
        """``meta/session/reset``: a fresh-context boundary of ``session`` (no key: the identity's current
        one); clears its taint."""
        self.tracker.reset(session)

    def compacted(self, session: SessionRef) -> TaintState | None:
        """``meta/session/compacted``: taint is kept; returns it (key required)."""
        return self.tracker.compacted(session)


#: The longest refusal rule a taint source quotes (characters; a longer one is cut and marked with ``…``).
MAX_REFUSAL_RULE_CHARS = 160


def refused_source(field: str | None, rule: str) -> str:
    """The taint source of a refused tool-result report: ``tool result refused: <rule>`` (``<field>: <rule>``
    when the rule does not start with its field). The rule may quote what the caller sent (an unknown
    member's name): it is shown as every refusal repeats a caller's text (:func:`meta_memory.errors.echo`:
    invisible and controlling characters as escapes), cut to :data:`MAX_REFUSAL_RULE_CHARS` characters."""
    said = rule if field is None or rule.startswith(field) else f"{field}: {rule}"
    return f"tool result refused: {echo(said, MAX_REFUSAL_RULE_CHARS)}"


def content_trust_warning(policy: ContentTrustPolicy, unlisted: list[str] | None = None, other: int = 0) -> str | None:
    """The sentence ``serve`` prints at start and ``meta/status`` reports when no ``content_trust`` rule
    names the host's tools, else ``None``: the configuration names no tool or server (and leaves
    unlisted tools trusted), or ``unlisted`` tool names (``other`` more) were trusted only because no
    rule names them. It also names the ``trusted_tools`` entries that can never take effect
    (:meth:`ContentTrustPolicy.ineffective_trusted_tools`)."""
    ineffective = policy.ineffective_trusted_tools()
    useless = (f"content_trust.trusted_tools entries that can never trust their tool: {', '.join(ineffective)}; "
               "remove them" if ineffective else None)
    unnamed = _unnamed_tools_warning(policy, unlisted, other)
    return "; ".join(w for w in (unnamed, useless) if w) or None


def _unnamed_tools_warning(policy: ContentTrustPolicy, unlisted: list[str] | None, other: int) -> str | None:
    if policy.default == "untrusted":
        return None
    shown = ", ".join(repr(n) for n in (unlisted or [])[:8])
    more = len(unlisted or []) - 8 + other
    if unlisted:
        seen = f"tool results arrived under names no rule names and were trusted: {shown}" + (
            f" and {more} more" if more > 0 else "")
    elif not policy.names_any_tool:
        seen = "the configuration names none of the host's tools"
    else:
        return None
    return (
        f"no [agent_memory.content_trust] rule names the host's tools ({seen}). Only the builtin web tools and "
        f"{len(policy.default_untrusted_tools or ())} known outside-content tool names taint a session; every "
        "other tool result is trusted, so a tool of yours that reads web pages, mail or files can let outside "
        "text into memory. List such tools in untrusted_tools and your pure ones in trusted_tools, or set "
        "default = \"untrusted\" (docs/security.md, Content-trust classification)."
    )

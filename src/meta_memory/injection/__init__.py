"""Agent memory injection: the quoted observation block, budgets, sessions, nonces and defanging.

Public surface (reference §3B; seed "Agent memory injection"):

* :class:`InjectionCoordinator` with :meth:`~InjectionCoordinator.inject_for_turn`,
  :meth:`~InjectionCoordinator.assemble_build`, :meth:`~InjectionCoordinator.defang`,
  :meth:`~InjectionCoordinator.session_compacted`, :meth:`~InjectionCoordinator.session_reset`;
* :class:`InjectionOptions` (from ``agent_memory`` config);
* value types :class:`InjectableRecord`, :class:`IndexRow`, :class:`ScopeRef`,
  :class:`RecallRequest`, :class:`LedgerRow`, :class:`InjectionResult`;
* :func:`defang` / :func:`defang_content` (pure), :class:`InjectionSessions`;
* :func:`build_scope_set`, :func:`build_query_text`;
* :data:`RECORDER_PROTOCOL_INSTRUCTIONS`, :data:`BUILD_MEMORY_PROTOCOL`.
"""

from .build import build_query_text, build_scope_set
from .coordinator import InjectionCoordinator
from .defang import defang, defang_content
from .model import (
    SKIP_REASONS,
    IndexRow,
    InjectableRecord,
    InjectionResult,
    LedgerRow,
    RecallRequest,
    ScopeRef,
)
from .options import InjectionOptions
from .protocol import BUILD_MEMORY_PROTOCOL, RECORDER_PROTOCOL_INSTRUCTIONS
from .sessions import InjectionSessions
from .timebox import TimeBox

__all__ = [
    "BUILD_MEMORY_PROTOCOL",
    "RECORDER_PROTOCOL_INSTRUCTIONS",
    "SKIP_REASONS",
    "IndexRow",
    "InjectableRecord",
    "InjectionCoordinator",
    "InjectionOptions",
    "InjectionResult",
    "InjectionSessions",
    "LedgerRow",
    "RecallRequest",
    "ScopeRef",
    "TimeBox",
    "build_query_text",
    "build_scope_set",
    "defang",
    "defang_content",
]

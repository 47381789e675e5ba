"""The memory firewall: content-trust classification, session-sticky taint and
the LLM write gate (seed: "Content trust and session taint")."""

from meta_memory.firewall.classify import (
    ALWAYS_UNTRUSTED_TOOLS,
    Classification,
    ContentTrustPolicy,
    ToolProvenance,
    classify_tool_result,
)
from meta_memory.firewall.gate import POLICY_REASON, LlmWriteGate
from meta_memory.firewall.service import Firewall, ToolResultVerdict
from meta_memory.firewall.taint import TAINT_EVENT, ResetBoundary, TaintState, TaintTracker

__all__ = [
    "ALWAYS_UNTRUSTED_TOOLS",
    "Classification",
    "ContentTrustPolicy",
    "Firewall",
    "LlmWriteGate",
    "POLICY_REASON",
    "ResetBoundary",
    "TAINT_EVENT",
    "TaintState",
    "TaintTracker",
    "ToolProvenance",
    "ToolResultVerdict",
    "classify_tool_result",
]

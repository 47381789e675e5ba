"""JSON-RPC 2.0: the one method table every transport uses, and its framing."""

from .registry import CallContext, MethodSpec, MethodTable

__all__ = ["CallContext", "MethodSpec", "MethodTable"]

"""The assertion ledger's refusal of a request that breaks one of its rules (reference §1.7, §1.12)."""

from __future__ import annotations

from meta_memory.errors import ValueRuleBroken

__all__ = ["LedgerValidationError"]


class LedgerValidationError(ValueRuleBroken):
    """An index, query or stores request broke a ledger rule.

    Attributes:
        rule: the reference's rule text, e.g. ``entity must be a non-empty string``.
        field: the member it names (``entity``, ``store``, ``metadata``, ``params`` ...).

    Clients see it as JSON-RPC ``-32602`` ``Invalid params: <rule>`` with ``data.field``.
    """

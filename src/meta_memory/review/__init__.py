"""Review: quarantine decisions, proposals, gated promotions, the steward's dream, harvests.

Seed: "Reviewing quarantined records", "Conflict detection"; reference §6, §9.
"""

"""Fixed limits and markers of memory injection (reference §3B "Constants").

Every size is a count of UTF-8 bytes; every time is milliseconds.
"""

from __future__ import annotations

from typing import Final

# Defined once in meta_memory.limits; injection modules read them from this catalogue.
from ..limits import DAY_MS as DAY_MS
from ..limits import DEFAULT_INSTRUCTION_HEADER as DEFAULT_INSTRUCTION_HEADER

MAX_INJECTED_TITLE_BYTES: Final = 160
MAX_INJECTED_BODY_BYTES: Final = 2048
#: Cap on one record's body after XML escaping.
MAX_RENDERED_INJECTION_RECORD_BYTES: Final = 4096
#: Cap on one assembly (header plus record blocks; build extras are not counted).
MAX_INJECTED_ASSEMBLY_BYTES: Final = 20480
#: Cumulative cap per session key across turns.
MAX_INJECTED_SESSION_BYTES: Final = 61440
#: A remaining budget below this skips the turn (``budget_exhausted``).
MIN_INJECTION_BUDGET_BYTES: Final = 512

BUILD_INDEX_BUDGET_BYTES: Final = 8192
BUILD_INDEX_WORKING_SET_K: Final = 24
#: (identity, reason) pairs remembered for "first skip logs at INFO".
MAX_NOTED_SKIPS: Final = 4096

#: Relative weights of the build index sub-budgets, by scope kind.
SCOPE_INDEX_WEIGHTS: Final = {"identity": 4, "mob": 2, "operator": 1, "realm": 1}
SCOPE_INDEX_LABELS: Final = {
    "identity": "Identity records",
    "mob": "Mob records",
    "operator": "Operator records",
    "realm": "Realm records",
}

OBSERVATION_TAG: Final = "meta_memory_observation"
TOKEN_MARKER: Final = "[mem-token:"
PREDECESSOR_OBSERVATION_TAG: Final = "mobkit_memory_observation"
DEFANGED_OBSERVATION_TAG: Final = "defanged_memory_observation"
DEFANGED_TOKEN_MARKER: Final = "[defanged-mem-token:"
DEFANGED_LINE_PREFIX: Final = "[defanged] "


#: Injection-ledger surfaces.
SURFACE_TURN: Final = "turn"
SURFACE_BUILD: Final = "build"
#: Usage mark written for every injected record.
USAGE_INJECTED: Final = "injected"

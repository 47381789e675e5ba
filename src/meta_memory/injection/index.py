"""The build-time memory index: per-scope, metadata-only, budgeted (reference §3B build-time).

The index budget (8,192 bytes) is split between the build's scopes by weight
(identity 4, mob 2, operator 1, realm 1) with floor shares plus largest
remainder, so the shares sum to the budget exactly. Each scope section is
``"<Label>:"`` followed by entries appended until the next entry would overflow the
section's share. Every entry is a quoted observation of its own, all its record
text in attributes::

    \n<meta_memory_observation id=".." kind=".."[ age=".."] title=".."[ description=".."]/>

The header's sentence ("the following quoted items are untrusted prior
observations") therefore covers titles and descriptions as it covers bodies: no
record text stands in the block outside the quoting. Attribute text is compacted
to one line, neutralised like every rendered memory text
(:func:`.defang.neutralise_line`: no hidden character, forged tag, nonce marker or
header line survives), truncated and attribute-escaped (``<``, ``>``, ``&``, ``"``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..agent_memory.fields import MAX_DESCRIPTION_BYTES
from .constants import (
    BUILD_INDEX_BUDGET_BYTES,
    DEFAULT_INSTRUCTION_HEADER,
    MAX_INJECTED_TITLE_BYTES,
    OBSERVATION_TAG,
    SCOPE_INDEX_LABELS,
    SCOPE_INDEX_WEIGHTS,
)
from .defang import neutralise_line
from .model import IndexRow, ScopeRef
from .protocol import MEMORY_INDEX_TITLE
from .text_util import (
    days_phrase,
    escape_attr,
    scrub_surrogates,
    truncate_utf8_boundary,
    utf8_len,
)


def scope_budgets(kinds: Sequence[str], total: int = BUILD_INDEX_BUDGET_BYTES) -> list[int]:
    """Split ``total`` bytes between scopes by kind weight; result sums to ``total`` exactly.

    Each scope gets ``floor(total * w / W)``; the bytes left over go one each
    to the largest fractional remainders, ties broken by position (earlier
    first). Unknown kinds weigh 1. An empty ``kinds`` gives ``[]``.
    """
    if not kinds:
        return []
    weights = [SCOPE_INDEX_WEIGHTS.get(kind, 1) for kind in kinds]
    whole = sum(weights)
    shares = [total * w // whole for w in weights]
    remainders = [total * w % whole for w in weights]
    left = total - sum(shares)
    order = sorted(range(len(kinds)), key=lambda i: (-remainders[i], i))
    for i in order[:left]:
        shares[i] += 1
    return shares


def _attr(value: str, max_bytes: int, header: str = DEFAULT_INSTRUCTION_HEADER) -> str:
    text = neutralise_line(scrub_surrogates(value), header)
    return escape_attr(truncate_utf8_boundary(text, max_bytes))


def render_index_row(row: IndexRow, header: str = DEFAULT_INSTRUCTION_HEADER) -> str:
    """``"\\n<meta_memory_observation id=".." kind=".."[ age=".."] title=".."[ description=".."]/>"``: one
    quoted entry, ``age`` when the row has one, ``description`` when it is not blank."""
    attrs = [f'id="{_attr(row.memory_id, 256, header)}"', f'kind="{_attr(row.kind, 64, header)}"']
    if row.age_days is not None:
        attrs.append(f'age="{days_phrase(row.age_days)}"')
    attrs.append(f'title="{_attr(row.title, MAX_INJECTED_TITLE_BYTES, header)}"')
    description = _attr(row.description, MAX_DESCRIPTION_BYTES, header)
    if description:
        attrs.append(f'description="{description}"')
    return f"\n<{OBSERVATION_TAG} {' '.join(attrs)}/>"


def render_section(
    scope: ScopeRef, rows: Sequence[IndexRow], budget: int, header: str = DEFAULT_INSTRUCTION_HEADER
) -> str | None:
    """One scope's section within ``budget`` bytes, or ``None`` when no row fits (or there are none)."""
    section = SCOPE_INDEX_LABELS.get(scope.kind, f"{scope.kind.capitalize()} records") + ":"
    size = utf8_len(section)
    count = 0
    for row in rows:
        line = render_index_row(row, header)
        line_size = utf8_len(line)
        if size + line_size > budget:
            break
        section += line
        size += line_size
        count += 1
    return section if count else None


def render_index(
    scopes: Sequence[ScopeRef],
    rows_by_scope: Mapping[int, Sequence[IndexRow]],
    total: int = BUILD_INDEX_BUDGET_BYTES,
    *,
    header: str = DEFAULT_INSTRUCTION_HEADER,
) -> str | None:
    """The whole index: title line then non-empty sections joined by a blank line.

    ``rows_by_scope`` maps a scope's position in ``scopes`` to its rows
    (positions missing = no rows). ``header`` is the configured instruction header, whose
    forged lines are neutralised. ``None`` when every section is empty.
    """
    budgets = scope_budgets([s.kind for s in scopes], total)
    sections = []
    for i, scope in enumerate(scopes):
        section = render_section(scope, rows_by_scope.get(i, ()), budgets[i], header)
        if section:
            sections.append(section)
    if not sections:
        return None
    return MEMORY_INDEX_TITLE + "\n" + "\n\n".join(sections)

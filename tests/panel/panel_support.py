"""Writes between the pages of a walk, shared by the pager's property tests."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Protocol

from hypothesis import strategies as st


class _Rows(Protocol):
    rows: dict[str, Any]


class Writes:
    """A callable that writes to every realm's store between two pages: it moves up to two drawn rows to a
    newer ``updated_at_ms`` and may add one new row (``new_row(memory_id, updated_at_ms)``), each at the next
    tick of one clock. ``touched`` names every ``(realm, memory_id)`` written so far: the rows a walk may
    leave out (a row written in front of the cursor is not listed again)."""

    def __init__(self, stores: Mapping[str, _Rows], data: st.DataObject, new_row: Callable[[str, int], Any]) -> None:
        self.stores = stores
        self.data = data
        self.new_row = new_row
        self.clock = 100
        self.touched: set[tuple[str, str]] = set()

    def __call__(self) -> None:
        for realm, store in self.stores.items():
            for mid in self.data.draw(st.lists(st.sampled_from(sorted(store.rows) or ["-"]), max_size=2)):
                if mid in store.rows:
                    self.clock += 1
                    store.rows[mid] = replace(store.rows[mid], updated_at_ms=self.clock)
                    self.touched.add((realm, mid))
            if self.data.draw(st.booleans()):
                self.clock += 1
                new = f"n{self.clock}"
                store.rows[new] = self.new_row(new, self.clock)
                self.touched.add((realm, new))

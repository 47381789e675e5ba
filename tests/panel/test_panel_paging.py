"""The record listing's pager: readable rows only, one listing across realms, exact next_cursor."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from access_strategies import IDENTITIES, MOBS, configs, principals
from meta_memory.access.config import AccessConfig
from meta_memory.access.policy import AccessPolicy
from meta_memory.access.principal import Principal
from meta_memory.access.resources import IdentityAttributes, Resources
from meta_memory.errors import InvalidParams
from meta_memory.panel.cursor import Cursor, parse_cursor
from meta_memory.panel.paging import Page, SourcePage, StalledCursor, limit_then_filter, page_records, parse_limit
from meta_memory.panel.visibility import Visibility
from panel_support import Writes

REALMS = ["r1", "r2", "r3"]


@dataclass(frozen=True)
class Row:
    memory_id: str
    updated_at_ms: int
    scope_kind: str = "identity"
    scope_key: str = "i1"
    status: str = "active"
    ever_quarantined: bool = False


def key(row: Row) -> Cursor:
    return Cursor(row.updated_at_ms, row.memory_id)


class Store:
    """An in-memory realm store honouring the RowSource contract; ``cap`` limits rows per answer."""

    def __init__(self, rows: list[Row], cap: int | None = None) -> None:
        self.rows = {r.memory_id: r for r in rows}
        self.cap = cap
        self.calls = 0

    def __call__(self, after: Cursor | None, limit: int) -> SourcePage[Row]:
        self.calls += 1
        ordered = sorted(self.rows.values(), key=key, reverse=True)
        if after is not None:
            ordered = [r for r in ordered if key(r) < after]
        take = min(limit, self.cap) if self.cap else limit
        rows = ordered[:take]
        more = len(ordered) > take
        return SourcePage(rows, key(rows[-1]) if more and rows else None)


def walk(stores: dict[str, Store], readable, limit: int, between=None) -> list[Page[Row]]:
    pages: list[Page[Row]] = []
    cursor: Cursor | None = None
    for _ in range(10_000):
        page = page_records(stores, readable, limit, cursor, key=key)
        pages.append(page)
        if page.next_cursor is None:
            return pages
        cursor = parse_cursor(page.next_cursor)
        if between:
            between(len(pages))
    raise AssertionError("walk did not end")


def check_page_shape(page: Page[Row], limit: int) -> None:
    keys = [key(r) for _, r in page.rows]
    assert keys == sorted(keys, reverse=True)
    if len(page.rows) > limit:  # only to keep one key's rows (from several realms) together
        assert len({keys[i] for i in range(limit - 1, len(keys))}) == 1
        assert len({realm for realm, r in page.rows[limit - 1 :]}) == len(page.rows) - limit + 1
    if page.next_cursor is not None:
        assert page.rows and page.next_cursor == keys[-1].encode()


# ------------------------------------------------------------------ strategies

scopes = st.one_of(
    st.sampled_from(IDENTITIES).map(lambda i: ("identity", i)),
    st.sampled_from(MOBS).map(lambda m: ("mob", m)),
    st.just(("operator", "op")),
    st.just(("realm", "")),
)
statuses = st.sampled_from(["active", "active", "superseded", "quarantined", "tombstoned"])


@st.composite
def realm_rows(draw: st.DrawFn) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = {}
    for realm in REALMS:
        ids = draw(st.lists(st.sampled_from([f"m{i}" for i in range(12)]), unique=True, max_size=12))
        rows = []
        for mid in ids:
            kind, k = draw(scopes)
            rows.append(Row(mid, draw(st.integers(0, 4)), kind, k, draw(statuses), draw(st.booleans())))
        out[realm] = rows
    return out


directory_attrs = {"i1": IdentityAttributes(frozenset({"r1"}), frozenset({"l1"})), "i2": IdentityAttributes(frozenset({"r2"}))}
RESOURCES = Resources(directory=lambda realm, ident: directory_attrs.get(ident))


def expected(rows: dict[str, list[Row]], readable) -> list[tuple[str, Row]]:
    flat = [(realm, r) for realm in REALMS for r in rows.get(realm, []) if readable(realm, r)]
    # flat is in realm order; a stable descending sort keeps realm order within one key
    return sorted(flat, key=lambda p: (p[1].updated_at_ms, p[1].memory_id), reverse=True)


# ------------------------------------------------------------------ properties


@settings(max_examples=200, deadline=None)
@given(realm_rows(), configs(), principals, st.integers(1, 7), st.sampled_from([None, 1, 2, 3]))
def test_walk_yields_exactly_the_readable_rows_in_order(
    rows: dict[str, list[Row]], cfg: AccessConfig, principal: Principal, limit: int, cap: int | None
) -> None:
    v = Visibility(AccessPolicy(cfg), principal, RESOURCES)
    stores = {realm: Store(rows[realm], cap) for realm in REALMS}
    pages = walk(stores, v.record, limit)
    listed = [p for page in pages for p in page.rows]
    assert listed == expected(rows, v.record)  # exactly the readable rows, in order, no duplicates
    assert all(v.record(realm, r) for realm, r in listed)  # never an unreadable row
    for page in pages:
        check_page_shape(page, limit)
    assert all(p.rows for p in pages[:-1]) and (pages[-1].rows or len(pages) == 1)


@settings(max_examples=120, deadline=None)
@given(realm_rows(), st.integers(1, 5), st.data())
def test_walk_survives_changes_between_pages(rows: dict[str, list[Row]], limit: int, data: st.DataObject) -> None:
    stores = {realm: Store(rows[realm]) for realm in REALMS}
    writes = Writes(stores, data, Row)
    everyone = lambda realm, row: True  # noqa: E731
    pages = walk(stores, everyone, limit, between=lambda _: writes())
    listed = [(realm, r.memory_id) for page in pages for realm, r in page.rows]
    assert len(listed) == len(set(listed))  # no row twice
    keys = [key(r) for page in pages for _, r in page.rows]
    assert keys == sorted(keys, reverse=True)  # one ordered walk
    stable = {(realm, r.memory_id) for realm in REALMS for r in rows[realm]} - writes.touched
    assert stable <= set(listed)  # no gaps among rows that kept their key


def test_next_cursor_comes_exactly_when_more_readable_rows_follow() -> None:
    rows = [Row(f"m{i}", 10 - i, scope_key="i1" if i < 3 else "i2") for i in range(8)]
    readable = lambda realm, r: r.scope_key == "i1"  # noqa: E731
    page = page_records({"r1": Store(rows)}, readable, 3, key=key)
    assert [r.memory_id for _, r in page.rows] == ["m0", "m1", "m2"]
    assert page.next_cursor is None  # five more rows exist, none readable
    page = page_records({"r1": Store(rows)}, readable, 2, key=key)
    assert page.next_cursor == "9:m1"


def test_rows_of_one_key_in_two_realms_stay_together() -> None:
    stores = {"a": Store([Row("x", 5), Row("w", 4)]), "b": Store([Row("x", 5), Row("y", 3)])}
    page = page_records(stores, lambda realm, r: True, 1, key=key)
    assert [(realm, r.memory_id) for realm, r in page.rows] == [("a", "x"), ("b", "x")]
    assert page.next_cursor == "5:x"
    page = page_records(stores, lambda realm, r: True, 1, parse_cursor("5:x"), key=key)
    assert [(realm, r.memory_id) for realm, r in page.rows] == [("a", "w")]


def test_restricted_caller_costs_few_fetches() -> None:
    rows = [Row(f"m{i:05d}", i, scope_key="i1" if i % 997 == 0 else "i2") for i in range(5000)]
    store = Store(rows)
    page = page_records({"r1": store}, lambda realm, r: r.scope_key == "i1", 2, key=key, max_batch=1000)
    assert [r.memory_id for _, r in page.rows] == ["m04985", "m03988"]
    assert page.next_cursor == "3988:m03988"
    assert store.calls <= 12


# ------------------------------------------------------------------ the store guard


def test_a_store_whose_cursor_does_not_move_is_refused() -> None:
    def stuck(after: Cursor | None, limit: int) -> SourcePage[Row]:
        return SourcePage([], after or Cursor(5, "a"))

    with pytest.raises(StalledCursor) as info:
        page_records({"r1": stuck}, lambda realm, r: True, 3, key=key)
    assert info.value.to_jsonrpc()["code"] == -32040 and "does not move" in info.value.message
    assert info.value.realm == "r1"


def test_a_store_returning_rows_before_the_cursor_is_refused() -> None:
    def replay(after: Cursor | None, limit: int) -> SourcePage[Row]:
        return SourcePage([Row("z", 9)], Cursor(1, "a"))

    with pytest.raises(StalledCursor, match="not past cursor"):
        page_records({"r1": replay}, lambda realm, r: True, 3, Cursor(5, "a"), key=key)


def test_a_store_whose_cursor_lags_its_rows_is_refused() -> None:
    def lagging(after: Cursor | None, limit: int) -> SourcePage[Row]:
        return SourcePage([Row("b", 4), Row("a", 3)], Cursor(4, "b"))

    with pytest.raises(StalledCursor, match="before its own last row"):
        page_records({"r1": lagging}, lambda realm, r: True, 5, key=key)


def test_a_store_returning_too_many_rows_is_refused() -> None:
    def greedy(after: Cursor | None, limit: int) -> SourcePage[Row]:
        return SourcePage([Row(f"m{i}", 100 - i) for i in range(limit + 1)], None)

    with pytest.raises(StalledCursor, match="rows for a limit"):
        page_records({"r1": greedy}, lambda realm, r: True, 2, key=key)


def test_dict_rows_and_id_attribute_are_keyed() -> None:
    rows = [{"memory_id": "b", "updated_at_ms": 2}, {"memory_id": "a", "updated_at_ms": 1}]
    page = page_records({"r": lambda after, n: SourcePage(rows[:n], None)}, lambda realm, r: True, 1)
    assert page.next_cursor == "2:b"


@pytest.mark.parametrize(("value", "want"), [(None, 50), (1, 1), (0, 1), (-5, 1), (200, 200), (10_000, 200)])
def test_parse_limit_clamps(value: Any, want: int) -> None:
    assert parse_limit(value) == want


@pytest.mark.parametrize("value", [True, 2.5, "10", [1]])
def test_parse_limit_refuses_non_integers(value: Any) -> None:
    with pytest.raises(InvalidParams, match="limit must be an integer"):
        parse_limit(value)


def test_other_listings_limit_before_filtering() -> None:
    rows = list(range(10))
    assert limit_then_filter(rows, 4, lambda r: r % 2 == 1) == [1, 3]  # fewer than the limit
    assert limit_then_filter(rows, 4, lambda r: True) == [0, 1, 2, 3]

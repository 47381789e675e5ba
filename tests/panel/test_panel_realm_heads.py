"""The every-realm listing given each realm's newest keys: the same walk, reading only the realms a page needs."""

from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.panel.cursor import Cursor, parse_cursor
from meta_memory.panel.paging import Page, RealmHead, SourcePage, page_records
from panel_support import Writes

REALMS = [f"r{i}" for i in range(6)]


@dataclass(frozen=True)
class Row:
    memory_id: str
    updated_at_ms: int
    readable: bool = True


def key(row: Row) -> Cursor:
    return Cursor(row.updated_at_ms, row.memory_id)


class Store:
    """One realm's rows as a RowSource; ``calls`` counts the reads of it."""

    def __init__(self, rows: list[Row]) -> None:
        self.rows = {r.memory_id: r for r in rows}
        self.calls = 0

    def ordered(self) -> list[Row]:
        return sorted(self.rows.values(), key=key, reverse=True)

    def __call__(self, after: Cursor | None, limit: int) -> SourcePage[Row]:
        self.calls += 1
        ordered = [r for r in self.ordered() if after is None or key(r) < after]
        rows = ordered[:limit]
        return SourcePage(rows, key(rows[-1]) if len(ordered) > limit and rows else None)

    def head(self, keep: int) -> RealmHead:
        ordered = self.ordered()
        return RealmHead(tuple(key(r) for r in ordered[:keep]), len(ordered) <= keep)


def readable(realm: str, row: Row) -> bool:
    return row.readable


@st.composite
def fleets(draw: st.DrawFn) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = {}
    for realm in REALMS:
        ids = draw(st.lists(st.sampled_from([f"m{i}" for i in range(10)]), unique=True, max_size=6))
        # few distinct times: ties of one key across realms (one memory id in two realms) are common
        out[realm] = [Row(mid, draw(st.integers(0, 6)), draw(st.booleans() | st.just(True))) for mid in ids]
    return out


def walk(stores: dict[str, Store], limit: int, heads_of, between=None) -> list[Page[Row]]:
    pages: list[Page[Row]] = []
    cursor: Cursor | None = None
    for _ in range(1000):
        page = page_records(stores, readable, limit, cursor, key=key, heads=heads_of())
        pages.append(page)
        if page.next_cursor is None:
            return pages
        cursor = parse_cursor(page.next_cursor)
        if between:
            between()
    raise AssertionError("walk did not end")


@settings(max_examples=300, deadline=None)
@given(fleets(), st.integers(1, 6), st.integers(1, 7), st.sets(st.sampled_from(REALMS)))
def test_the_walk_with_heads_is_the_walk_without(rows: dict[str, list[Row]], limit: int, keep: int,
                                                 headless: set[str]) -> None:
    plain = walk({r: Store(rows[r]) for r in REALMS}, limit, lambda: None)
    stores = {r: Store(rows[r]) for r in REALMS}
    headed = walk(stores, limit, lambda: {r: s.head(keep) for r, s in stores.items() if r not in headless})
    assert [(p.rows, p.next_cursor) for p in headed] == [(p.rows, p.next_cursor) for p in plain]


@settings(max_examples=300, deadline=None)
@given(fleets(), st.integers(1, 6))
def test_a_page_reads_only_the_realms_that_hold_its_rows_or_the_next(rows: dict[str, list[Row]], limit: int) -> None:
    everyone = {r: [replace(x, readable=True) for x in rows[r]] for r in REALMS}
    listing = sorted(((r, x) for r in REALMS for x in everyone[r]), key=lambda p: key(p[1]), reverse=True)
    cursor: Cursor | None = None
    seen = 0
    while True:
        stores = {r: Store(everyone[r]) for r in REALMS}
        page = page_records(stores, readable, limit, cursor, key=key,
                            heads={r: s.head(10) for r, s in stores.items()})
        assert page.rows == listing[seen:seen + len(page.rows)]
        seen += len(page.rows)
        needed = {r for r, _ in page.rows}
        if seen < len(listing):  # the realms holding the next row (one key may be in several realms)
            needed |= {r for r, x in listing[seen:] if key(x) == key(listing[seen][1])}
        assert {r for r, s in stores.items() if s.calls} <= needed
        if page.next_cursor is None:
            break
        cursor = parse_cursor(page.next_cursor)
    assert seen == len(listing)


@settings(max_examples=200, deadline=None)
@given(fleets(), st.integers(1, 5), st.integers(1, 4), st.data())
def test_heads_read_before_writes_lose_no_row_that_kept_its_key(rows: dict[str, list[Row]], limit: int, keep: int,
                                                                 data: st.DataObject) -> None:
    """Heads read before the realms changed (a write the kept keys do not know of yet): rows written or moved
    meanwhile may be left out of the walk, as rows written in front of the cursor are; every other row is
    listed once, in order."""
    stores = {r: Store(rows[r]) for r in REALMS}
    writes = Writes(stores, data, Row)
    stale = [{r: s.head(keep) for r, s in stores.items()}]

    def mutate() -> None:
        stale[0] = {r: s.head(keep) for r, s in stores.items()}  # read now, used after the writes below
        writes()

    pages = walk(stores, limit, lambda: stale[0], between=mutate)
    listed = [(realm, r.memory_id) for page in pages for realm, r in page.rows]
    assert len(listed) == len(set(listed))
    keys = [key(r) for page in pages for _, r in page.rows]
    assert keys == sorted(keys, reverse=True)
    stable = {(realm, r.memory_id) for realm in REALMS for r in rows[realm] if r.readable} - writes.touched
    assert stable <= set(listed)
    assert all(r.readable for page in pages for _, r in page.rows)


def test_a_realm_whose_keys_are_all_newer_than_the_cursor_is_not_read() -> None:
    stores = {"a": Store([Row("x", 9)]), "b": Store([Row("y", 5), Row("z", 4)])}
    heads = {r: s.head(16) for r, s in stores.items()}
    page = page_records(stores, readable, 1, Cursor(9, "x"), key=key, heads=heads)
    assert [(r, x.memory_id) for r, x in page.rows] == [("b", "y")] and page.next_cursor == "5:y"
    assert stores["a"].calls == 0


def test_an_empty_realm_is_never_read() -> None:
    stores = {"a": Store([]), "b": Store([Row("y", 5)])}
    page = page_records(stores, readable, 5, key=key, heads={r: s.head(16) for r, s in stores.items()})
    assert [x.memory_id for _, x in page.rows] == ["y"] and page.next_cursor is None
    assert stores["a"].calls == 0


@settings(max_examples=300, deadline=None)
@given(fleets(), st.integers(1, 6), st.integers(1, 7), st.integers(1, 3), st.booleans())
def test_a_bound_on_realm_reads_ends_pages_early_and_loses_no_row(rows: dict[str, list[Row]], limit: int, keep: int,
                                                                  max_reads: int, stop_empty: bool) -> None:
    plain = [p for page in walk({r: Store(rows[r]) for r in REALMS}, limit, lambda: None) for p in page.rows]
    stores = {r: Store(rows[r]) for r in REALMS}
    cursor: Cursor | None = None
    listed: list[tuple[str, Row]] = []
    for _ in range(1000):
        for s in stores.values():
            s.calls = 0
        page = page_records(stores, readable, limit, cursor, key=key, max_reads=max_reads, stop_empty=stop_empty,
                            heads={r: s.head(keep) for r, s in stores.items()})
        listed += page.rows
        if not stop_empty:  # every cursor names a row a page showed
            assert page.rows or page.next_cursor is None
        assert len(page.rows) <= limit or len({key(x) for _, x in page.rows[limit - 1:]}) == 1
        if page.next_cursor is None:
            break
        following = parse_cursor(page.next_cursor)
        assert cursor is None or following < cursor, "every page moves the walk on"
        if page.rows:
            assert page.next_cursor == key(page.rows[-1][1]).encode()
        cursor = following
    else:
        raise AssertionError("walk did not end")
    assert listed == plain  # every readable row once, in order


def test_a_page_stopped_short_of_a_realm_resumes_above_it() -> None:
    stores = {f"r{i}": Store([Row(f"m{i}", 10 - i, readable=False)]) for i in range(4)}
    stores["r4"] = Store([Row("m4", 1)])
    heads = {r: s.head(16) for r, s in stores.items()}
    first = page_records(stores, readable, 5, key=key, heads=heads, max_reads=2)
    assert first.rows == [] and first.next_cursor == "8:m2~"  # r0 and r1 read, r2 not
    assert [s.calls for s in stores.values()] == [1, 1, 0, 0, 0]
    second = page_records(stores, readable, 5, parse_cursor(first.next_cursor), key=key, heads=heads, max_reads=2)
    assert second.rows == [] and second.next_cursor == "1:m4~"
    third = page_records(stores, readable, 5, parse_cursor(second.next_cursor), key=key, heads=heads, max_reads=2)
    assert [(r, x.memory_id) for r, x in third.rows] == [("r4", "m4")] and third.next_cursor is None


def test_a_page_that_may_not_stop_empty_reads_on_to_its_first_row() -> None:
    stores = {f"r{i}": Store([Row(f"m{i}", 10 - i, readable=False)]) for i in range(4)}
    stores["r4"] = Store([Row("m4", 1), Row("m5", 0)])
    heads = {r: s.head(16) for r, s in stores.items()}
    page = page_records(stores, readable, 1, key=key, heads=heads, max_reads=2, stop_empty=False)
    assert [(r, x.memory_id) for r, x in page.rows] == [("r4", "m4")] and page.next_cursor == "1:m4"

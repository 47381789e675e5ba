"""Dates for recall: what a query asks about, what a record speaks of, and the ranking they steer."""

from __future__ import annotations

from datetime import date, datetime, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.recall.dates import DateQuery, overlaps, own_day, query_dates, record_dates
from meta_memory.recall.lexical import LexicalConfig, LexicalRecallProvider
from meta_memory.recall.provider import RecallRequest

from .conftest import IDENTITY, rec
from .store_index import StoreIndex


def day(y: int, m: int, d: int) -> tuple[int, int]:
    n = date(y, m, d).toordinal()
    return (n, n)


def days(spans: list[tuple[int, int]]) -> list[tuple[date, date]]:
    return [(date.fromordinal(a), date.fromordinal(b)) for a, b in spans]


def test_query_dates_read_days_months_and_yearless_months() -> None:
    assert query_dates("What dish did Nate make on 9 November, 2022?") == [DateQuery(span=day(2022, 11, 9))]
    assert query_dates("Which book on 8th December, 2023?") == [DateQuery(span=day(2023, 12, 8))]
    assert query_dates("What game on November 7, 2022?") == [DateQuery(span=day(2022, 11, 7))]
    assert query_dates("the forest picture shared on December 1,2023") == [DateQuery(span=day(2023, 12, 1))]
    july = query_dates("Where did Joanna travel in July 2022?")
    assert days([q.span for q in july if q.span]) == [(date(2022, 7, 1), date(2022, 7, 31))]
    assert query_dates("Which outdoor spot did Joanna visit in May?") == [DateQuery(month=5)]
    assert query_dates("what may happen if I march on") == []  # the verbs, not the months
    assert query_dates("When did she adopt the dog?") == [] and query_dates(None) == []
    feb = query_dates("on 31 February, 2022")  # no such day: the month is what is left
    assert days([q.span for q in feb if q.span]) == [(date(2022, 2, 1), date(2022, 2, 28))]


def test_a_records_own_day_comes_from_its_title_else_its_time() -> None:
    assert own_day("Joanna — 11:54 am on 2 May, 2022", "", 0) == date(2022, 5, 2).toordinal()
    at = int(datetime(2024, 3, 5, 23, 0, tzinfo=timezone.utc).timestamp() * 1000)
    assert own_day("Notes", "nothing dated", at) == date(2024, 3, 5).toordinal()


def test_relative_dates_resolve_against_the_records_day() -> None:
    title = "Joanna — 11:54 am on 2 May, 2022"  # a Monday
    got = set(days(record_dates(title, "I watched it last night", 0)))
    assert (date(2022, 5, 1), date(2022, 5, 1)) in got
    assert (date(2022, 4, 29), date(2022, 4, 29)) in set(days(record_dates(title, "I went last Friday", 0)))
    assert (date(2022, 4, 30), date(2022, 5, 1)) in set(days(record_dates(title, "We hiked last weekend", 0)))
    assert (date(2022, 5, 7), date(2022, 5, 8)) in set(days(record_dates(title, "Baking this weekend!", 0)))
    assert (date(2022, 4, 1), date(2022, 4, 30)) in set(days(record_dates(title, "It was last month", 0)))
    assert (date(2021, 1, 1), date(2021, 12, 31)) in set(days(record_dates(title, "Since last year", 0)))
    assert any(a <= date(2022, 4, 11) <= b for a, b in days(record_dates(title, "three weeks ago", 0))[1:])
    assert (date(2022, 4, 27), date(2022, 4, 27)) in set(days(record_dates(title, "5 days ago", 0)))
    assert days(record_dates(title, "Nothing relative here.", 0)) == [(date(2022, 5, 2), date(2022, 5, 2))]


def test_a_full_date_in_a_title_does_not_also_count_as_its_whole_month() -> None:
    spans = record_dates("Nate — 7:37 pm on 15 April, 2022", "Dyed my hair", 0)
    assert all(b - a == 0 for a, b in spans)


def test_a_yearless_month_query_matches_that_month_in_any_year() -> None:
    may = DateQuery(month=5)
    assert may.matches([day(2019, 5, 12)]) and may.matches([(date(2022, 4, 20).toordinal(), date(2022, 5, 2).toordinal())])
    assert not may.matches([day(2022, 6, 1)])


@settings(max_examples=200, deadline=None)
@given(st.dates(min_value=date(1900, 1, 1), max_value=date(2200, 12, 31)))
def test_a_day_query_matches_exactly_the_records_of_that_day(d: date) -> None:
    asked = query_dates(f"What happened on {d.day} {d.strftime('%B')}, {d.year}?")
    assert asked == [DateQuery(span=(d.toordinal(), d.toordinal()))]
    title = f"Sam — 9:00 am on {d.day} {d.strftime('%B')}, {d.year}"
    assert asked[0].matches(record_dates(title, "Plain text.", 0))
    other = date.fromordinal(d.toordinal() + 2)
    assert not asked[0].matches(record_dates(f"Sam — on {other.day} {other.strftime('%B')}, {other.year}", "Plain.", 0))


@given(st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**6))
def test_overlaps_is_symmetric(a: int, b: int, c: int, d: int) -> None:
    x, y = (min(a, b), max(a, b)), (min(c, d), max(c, d))
    assert overlaps(x, y) == overlaps(y, x) == (max(x[0], y[0]) <= min(x[1], y[1]))


def test_a_dated_question_prefers_the_turn_of_that_day(index: StoreIndex) -> None:
    # Same words, two days of one month: the question's date picks the record that speaks of it.
    index.add(rec("may12", "Joanna — 9:00 am on 12 May, 2022", "I watched a great movie last night!", at=1))
    index.add(rec("may20", "Joanna — 9:00 am on 20 May, 2022", "I watched a great movie last night!", at=2))
    req = RecallRequest(IDENTITY, "default", "What movie did Joanna watch on 11 May, 2022?", max_entries=8)
    dated = LexicalRecallProvider(LexicalConfig(date_weight=0.5)).recall(req, index.reader(IDENTITY)).records
    undated = LexicalRecallProvider(LexicalConfig(date_weight=0.0)).recall(req, index.reader(IDENTITY)).records
    assert [s.record.memory_id for s in dated] == ["may12", "may20"]
    assert [s.record.memory_id for s in undated] == ["may20", "may12"]  # newer first on equal words

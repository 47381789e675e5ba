"""Dates for recall: the dates a query asks about, and the dates a record speaks of.

One job: turn English date expressions into inclusive day spans, so the lexical
provider can prefer the records whose dates fall where a query points
(``LexicalConfig.date_weight``). Nothing here raises; unreadable text yields no span.

Query side (:func:`query_dates`), absolute mentions only (a query's own "now" is unknown):

* a day: ``9 November, 2022``, ``8th December 2023``, ``November 7, 2022``,
  ``December 1,2023``;
* a month of a year: ``May 2022``, ``in January, 2024``;
* a month of any year: ``in May``, ``in December`` (a capitalised month name:
  lowercase ``may`` is the verb, as are ``march`` and ``august`` in lowercase).

Record side (:func:`record_dates`): the record's own day is the first full date
written in its title (a host that titles turns ``"<speaker> — <date>"``), else
the first in its body, else the UTC day of ``created_at_ms``. Its spans are
that day, every absolute date in the title and body (a month without a year
takes the own day's year), and every relative expression of the body resolved
against the own day:

* ``yesterday``, ``last night`` -> the day before; ``today``, ``tonight``,
  ``this morning|afternoon|evening`` -> the day; ``tomorrow`` -> the day after;
* ``last week`` -> the 13 days before; ``next week`` -> the 13 days after;
  ``the other day``, ``recently``, ``a few days ago`` -> the 7 days before;
* ``last weekend`` -> the Saturday and Sunday before; ``this weekend`` -> the
  coming (or current) Saturday and Sunday;
* ``last <weekday>`` (and ``on <weekday>``) -> the latest such weekday before the day;
* ``last month`` / ``next month`` / ``last year`` / ``next year`` -> that calendar month / year;
* ``<n> days|weeks|months|years ago`` (digits or ``a``/``one``..``ten``) -> that day / week / month / year.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

__all__ = ["DateQuery", "query_dates", "record_dates", "own_day", "overlaps"]

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_MONTHS["sept"] = 9
_MONTH_NAMES = "|".join(sorted(_MONTHS, key=len, reverse=True))  # longest first: "may" before "ma..."
_FULL_MONTHS = "|".join(name for name in calendar.month_name if name)
_WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10}

_ORD = r"(?:st|nd|rd|th)?"
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}}){_ORD}\s+(?:of\s+)?({_MONTH_NAMES})\.?,?\s*(\d{{4}})\b", re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH_NAMES})\.?\s+(\d{{1,2}}){_ORD},?\s*(\d{{4}})\b", re.I)
_MONTH_YEAR = re.compile(rf"\b({_MONTH_NAMES})\.?,?\s+(\d{{4}})\b", re.I)
_MONTH_ALONE = re.compile(rf"\b({_FULL_MONTHS})\b")  # case-sensitive: "May" the month, not "may"
_AGO = re.compile(r"\b(\d{1,2}|an?|one|two|three|four|five|six|seven|eight|nine|ten)\s+(day|week|month|year)s?\s+ago\b", re.I)
_WEEKDAY = re.compile(r"\b(?:last|on)\s+(" + "|".join(_WEEKDAYS) + r")\b", re.I)
_PHRASES: tuple[tuple[re.Pattern[str], int, int], ...] = tuple(
    (re.compile(rf"\b{p}\b", re.I), lo, hi)
    for p, lo, hi in (
        (r"yesterday|last night", -1, -1),
        (r"today|tonight|this (?:morning|afternoon|evening)", 0, 0),
        (r"tomorrow", 1, 1),
        (r"last week", -13, -1),
        (r"next week", 1, 13),
        (r"the other day|recently|a few days ago|a couple of days ago", -7, -1),
    )
)

# One pass that tells whether a body can hold any relative expression at all (most do not).
_ANY_RELATIVE = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|last|next|this|recently|other day|ago|on\s+(?:"
    + "|".join(_WEEKDAYS) + r"))\b",
    re.I,
)

#: An inclusive span of days, as ``date.toordinal()`` values.
Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class DateQuery:
    """What a query asks about: a span of days, or (``month`` set, no span) a month of any year."""

    span: Span | None = None
    month: int | None = None

    def matches(self, spans: Iterable[Span]) -> bool:
        """True when any of ``spans`` overlaps the query's span (or touches its month, in any year)."""
        for lo, hi in spans:
            if self.span is not None and overlaps(self.span, (lo, hi)):
                return True
            if self.month is not None and _touches_month(lo, hi, self.month):
                return True
        return False


def overlaps(a: Span, b: Span) -> bool:
    """Whether two inclusive day spans share a day."""
    return a[0] <= b[1] and b[0] <= a[1]


def _touches_month(lo: int, hi: int, month: int) -> bool:
    if hi - lo >= 365:
        return True
    d = date.fromordinal(lo)
    while d.toordinal() <= hi:
        if d.month == month:
            return True
        d = (d.replace(day=1) + timedelta(days=32)).replace(day=1)
    return False


def _day(year: int, month: int, day: int) -> Span | None:
    try:
        n = date(year, month, day).toordinal()
    except ValueError:
        return None
    return (n, n)


def _month(year: int, month: int) -> Span | None:
    if not (1 <= month <= 12 and date.min.year <= year <= date.max.year):
        return None
    last = calendar.monthrange(year, month)[1]
    return (date(year, month, 1).toordinal(), date(year, month, last).toordinal())


def _full_date_matches(text: str) -> list[tuple[int, int, Span]]:
    """``(start, end, day span)`` of every full date in ``text``, in text order."""
    found: list[tuple[int, int, Span]] = []
    if not any(map(str.isdigit, text)):
        return found
    for m in _DAY_MONTH_YEAR.finditer(text):
        span = _day(int(m.group(3)), _MONTHS[m.group(2).lower()], int(m.group(1)))
        if span:
            found.append((m.start(), m.end(), span))
    for m in _MONTH_DAY_YEAR.finditer(text):
        span = _day(int(m.group(3)), _MONTHS[m.group(1).lower()], int(m.group(2)))
        if span:
            found.append((m.start(), m.end(), span))
    return sorted(found)


def _full_dates(text: str) -> list[tuple[int, Span]]:
    """``(position, day span)`` of every full date in ``text``."""
    return [(start, span) for start, _, span in _full_date_matches(text)]


def _month_years(text: str) -> list[Span]:
    """Month-of-a-year spans of ``text``, leaving out the month and year of a full date."""
    out: list[Span] = []
    if not any(map(str.isdigit, text)):
        return out
    taken = [(a, b) for a, b, _ in _full_date_matches(text)]
    for m in _MONTH_YEAR.finditer(text):
        if any(a <= m.start() < b for a, b in taken):
            continue
        span = _month(int(m.group(2)), _MONTHS[m.group(1).lower()])
        if span:
            out.append(span)
    return out


def query_dates(text: str | None) -> list[DateQuery]:
    """The dates ``text`` (a query) names; ``[]`` when it names none (see the module doc)."""
    if not text:
        return []
    out = [DateQuery(span=s) for _, s in _full_dates(text)]
    if not out:
        out = [DateQuery(span=s) for s in _month_years(text)]
    if not out:
        out = [DateQuery(month=_MONTHS[m.group(1).lower()]) for m in _MONTH_ALONE.finditer(text)]
    return out


def own_day(title: str, body: str, created_at_ms: int) -> int:
    """The record's own day (``date.toordinal()``): first full date of the title, else of the body,
    else the UTC day of ``created_at_ms``."""
    for text in (title, body):
        found = _full_dates(text)
        if found:
            return found[0][1][0]
    return datetime.fromtimestamp(max(0, created_at_ms) / 1000, tz=timezone.utc).date().toordinal()


def _shift_months(d: date, months: int) -> Span | None:
    index = d.year * 12 + d.month - 1 + months
    return _month(index // 12, index % 12 + 1)


def record_dates(title: str, body: str, created_at_ms: int) -> list[Span]:
    """The distinct day spans a record speaks of (see the module doc); the first is its own day."""
    day = own_day(title, body, created_at_ms)
    spans: list[Span] = [(day, day)]
    anchor = date.fromordinal(day)
    for text in (title, body):
        spans.extend(s for _, s in _full_dates(text))
        spans.extend(_month_years(text))
    for m in _MONTH_ALONE.finditer(body):
        span = _month(anchor.year, _MONTHS[m.group(1).lower()])
        if span:
            spans.append(span)
    if not _ANY_RELATIVE.search(body):
        return list(dict.fromkeys(spans))
    for pattern, lo, hi in _PHRASES:
        if pattern.search(body):
            spans.append((day + lo, day + hi))
    if re.search(r"\blast weekend\b", body, re.I):
        sunday = day - ((anchor.weekday() - 6) % 7 or 7)
        spans.append((sunday - 1, sunday))
    if re.search(r"\bthis weekend\b", body, re.I):
        saturday = day + (5 - anchor.weekday()) % 7 if anchor.weekday() <= 5 else day - 1
        spans.append((saturday, saturday + 1))
    for m in _WEEKDAY.finditer(body):
        target = day - ((anchor.weekday() - _WEEKDAYS[m.group(1).lower()]) % 7 or 7)
        spans.append((target, target))
    for word, months in (("last month", -1), ("next month", 1), ("last year", -12), ("next year", 12)):
        if re.search(rf"\b{word}\b", body, re.I):
            span = _shift_months(anchor, months) if "month" in word else _month(anchor.year + months // 12, 1)
            if span and "year" in word:
                span = (span[0], date(anchor.year + months // 12, 12, 31).toordinal())
            if span:
                spans.append(span)
    for m in _AGO.finditer(body):
        raw = m.group(1).lower()
        n = int(raw) if raw.isdigit() else _NUMBERS[raw]
        unit = m.group(2).lower()
        if unit == "day":
            spans.append((day - n, day - n))
        elif unit == "week":
            spans.append((day - 7 * n - 3, day - 7 * n + 3))
        elif unit == "month":
            span = _shift_months(anchor, -n)
            if span:
                spans.append(span)
        else:
            span = _month(anchor.year - n, 1)
            if span:
                spans.append((span[0], date(anchor.year - n, 12, 31).toordinal()))
    return list(dict.fromkeys(spans))

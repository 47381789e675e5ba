"""The console Memory panel's ten reads, judged for one caller.

Seed: "Console Memory panel" (every row rule) and "Reviewing quarantined
records" (quarantined content stays reviewer-only); reference §7 (constants
and result shapes).

A :class:`PanelService` binds a :class:`~meta_memory.panel.store.MemoryPanelStore`
to one caller's :class:`~meta_memory.panel.visibility.Visibility`; each method
returns the JSON-ready result of one ``meta/memory/panel/*`` RPC. Entry gates
(each method's ``requires=``) run before these methods; here every row is judged:

* ``records`` pages across realms with :func:`~meta_memory.panel.paging.page_records`,
  cutting pages from readable rows only;
* ``quarantine`` pages its records the same way (newest created first), with its own cursor;
  under access control both hand the store the caller's readable scopes, so its statement reads
  readable rows only (every row is still judged here);
* the other listings apply ``limit`` to the store's rows first and filter after
  (:func:`~meta_memory.panel.paging.limit_then_filter`), so a restricted caller
  can receive fewer than ``limit`` rows; across every realm, a store with ``newest`` (each realm's
  newest row of a listing, kept while its files do not change) has only the realms that can hold the
  ``limit`` newest rows read (:meth:`PanelService._newest`);
* ``dreams`` / ``dream_runs`` list a realm's runs only when the caller may read
  its whole dream history, and report ``withheld_by_access``;
* ``overview`` shows a scope row when its scope is readable, and leaves out the
  records holding quarantined content unless the caller may review them there
  (``quarantined_content_withheld``), so no count covers a row the caller may not read.

A read of every realm (no ``realm`` named) leaves out a realm that cannot be opened
(:meth:`PanelService.readable_realms`) and, through :class:`_Served`, a realm whose read fails
``corrupt`` part-way (a damaged page past its header that opening the realm did not read): the
realm is named in ``skipped_realms`` and none of its rows is listed. A call naming the realm is
refused (-32040) as before.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any, Generic, TypeVar

from ..errors import AgentMemoryError, RecordNotFound
from .cursor import Cursor
from .paging import MAX_REALM_READS, RealmHead, RowSource, SourcePage, limit_then_filter, newest_rows, page_records
from .store import (
    MemoryPanelStore,
    PromotionRow,
    ReadableScopes,
    RecordFilters,
    RecordRow,
    ScopeOverviewRow,
    dream_run_json,
    held_forget_json,
    promotion_json,
    proposal_json,
)
from .visibility import DreamAccess, RealmFacts, RecordFacts, Visibility, record_facts

__all__ = [
    "CHAIN_MAX",
    "DREAMS_DEFAULT_LIMIT",
    "DREAMS_MAX_LIMIT",
    "PanelService",
    "RECORD_INJECTIONS_MAX",
]

#: Supersede chain length bound (reference §7).
CHAIN_MAX = 32
#: Injection-ledger rows shown in a record's detail (reference §7).
RECORD_INJECTIONS_MAX = 50
#: ``dreams`` / ``dream_runs`` limit default and maximum (reference §7).
DREAMS_DEFAULT_LIMIT = 20
DREAMS_MAX_LIMIT = 100

T = TypeVar("T")


R = TypeVar("R")
X = TypeVar("X")


def _skip_entry(realm: str, problem: AgentMemoryError) -> dict[str, str]:
    """``{realm, reason, message}`` of a realm an all-realm read left out (``reason``: ``corrupt``, ``io`` or
    ``invalid_name``)."""
    reason = "invalid_name" if problem.reason == "invalid_record" else problem.reason
    message = problem.message.removeprefix(AgentMemoryError.PREFIXES.get(problem.reason, ""))
    return {"realm": realm, "reason": reason, "message": message}


class _Served:
    """The realms one read serves, and those it left out.

    ``named``: the realm the call named (``None`` = every realm). When every realm is read, a read of one
    realm refused ``corrupt`` drops that realm (named in ``skipped``, its rows kept out of the answer)
    and the others are served; a call naming a realm, or any other refusal, raises as it was."""

    def __init__(self, named: str | None, realms: list[str], skipped: list[dict[str, str]]) -> None:
        self.named = named
        self.realms = list(realms)
        self.skipped = list(skipped)
        self.dropped: set[str] = set()

    def _drop(self, realm: str, exc: AgentMemoryError) -> None:
        if self.named is not None or exc.reason != "corrupt":
            raise exc
        if realm not in self.dropped:
            self.dropped.add(realm)
            self.realms = [r for r in self.realms if r != realm]
            self.skipped.append(_skip_entry(realm, exc))

    def each(self, fn: Callable[[str], R], realms: Iterable[str] | None = None) -> dict[str, R]:
        """``{realm: fn(realm)}`` over the served realms (or ``realms``, in order), less those dropped."""
        out: dict[str, R] = {}
        for r in list(self.realms if realms is None else realms):
            if r in self.dropped:
                continue
            try:
                out[r] = fn(r)
            except AgentMemoryError as exc:
                self._drop(r, exc)
        return out

    def source(self, realm: str, fetch: RowSource[R]) -> RowSource[R]:
        """``fetch`` (one realm's row source), a refusal dropping the realm and ending its rows."""
        return _GuardedSource(self, realm, fetch)

    def answer(self) -> dict[str, Any]:
        """``{realms, skipped_realms?}`` of the answer."""
        return {"realms": self.realms, **_skipped(self.skipped)}


class _GuardedSource(Generic[R]):
    """One realm's :class:`RowSource` whose refusal drops the realm in its :class:`_Served`."""

    __slots__ = ("served", "realm", "fetch")

    def __init__(self, served: _Served, realm: str, fetch: RowSource[R]) -> None:
        self.served = served
        self.realm = realm
        self.fetch = fetch

    def __call__(self, after: Cursor | None, limit: int) -> SourcePage[R]:
        try:
            return self.fetch(after, limit)
        except AgentMemoryError as exc:
            self.served._drop(self.realm, exc)
            return SourcePage([], None)


class _Lazy(Generic[X, R]):
    """One realm's listing as a :class:`RowSource` whose setup (the request's filters; under access control
    the caller's readable scopes of the realm, a read of it) runs when it is first asked for rows, so a
    realm the page never reaches is never read: ``read(setup(), after, limit)``."""

    __slots__ = ("setup", "read", "value", "made")

    def __init__(self, setup: Callable[[], X], read: Callable[[X, Cursor | None, int], SourcePage[R]]) -> None:
        self.setup = setup
        self.read = read
        self.value: X | None = None
        self.made = False

    def __call__(self, after: Cursor | None, limit: int) -> SourcePage[R]:
        if not self.made:
            self.value, self.made = self.setup(), True
        return self.read(self.value, after, limit)  # type: ignore[arg-type]


def _merge(per_realm: Iterable[Sequence[T]], key: Callable[[T], Any], limit: int) -> list[T]:
    """Merge realm listings newest first (stable: realm order breaks ties) and keep ``limit`` rows."""
    rows = [row for rows in per_realm for row in rows]
    rows.sort(key=key, reverse=True)
    return rows[:limit]


class PanelService:
    """The panel reads for one caller.

    Args:
        store: the wired :class:`MemoryPanelStore`.
        visibility: the caller's row judge (``runtime.access.visibility(principal)``).

    Store failures surface as :class:`~meta_memory.errors.AgentMemoryError` (-32040).
    """

    def __init__(self, store: MemoryPanelStore, visibility: Visibility) -> None:
        self.store = store
        self.vis = visibility

    @property
    def _enforced(self) -> bool:
        return self.vis.policy.enabled

    # ------------------------------------------------------------------ helpers

    def realms(self, realm: str | None) -> list[str]:
        """The realms a call covers: ``[realm]`` when it exists, ``[]`` when it does not, else every realm;
        under access control only realms the caller may know of (``Visibility.realm_named``), so an
        unreachable realm is answered exactly like a missing one."""
        known = [r for r in self.store.list_realms() if not self._enforced or self.vis.realm_named(r)]
        if realm is None:
            return known
        return [realm] if realm in known else []

    def readable_realms(self, realm: str | None) -> tuple[list[str], list[dict[str, str]]]:
        """``(realms, skipped_realms)``: :meth:`realms`, less, when no realm is named, every realm that
        cannot be read now (its store's ``realm_problem``: a damaged database, a file that cannot be opened,
        a name that breaks the realm-name rule), each as ``{realm, reason, message}`` (``reason``:
        ``corrupt``, ``io`` or ``invalid_name``). So one such realm leaves the others listed, and says so;
        a call naming it is refused as before (-32040)."""
        realms = self.realms(realm)
        probe = getattr(self.store, "realm_problem", None)  # an embedder's store may not have it
        if realm is not None or probe is None:
            return realms, []
        kept: list[str] = []
        skipped: list[dict[str, str]] = []
        for r in realms:
            problem = probe(r)
            if problem is None:
                kept.append(r)
            else:
                skipped.append(_skip_entry(r, problem))
        return kept, skipped

    def _served(self, realm: str | None) -> _Served:
        """:meth:`readable_realms` as a :class:`_Served`."""
        return _Served(realm, *self.readable_realms(realm))

    def _record_visible(self, realm: str, row: RecordRow) -> bool:
        return self.vis.record(realm, record_facts(row))

    # ------------------------------------------------------------------ records

    def records(
        self,
        *,
        realm: str | None,
        scope_kind: str | None,
        scope_key: str | None,
        status: str | None,
        limit: int,
        cursor: Cursor | None,
        terms: tuple[str, ...] = (),
    ) -> dict[str, Any]:
        """``meta/memory/panel/records``: ``{records: [body-free row + body_bytes], next_cursor, realms}``.

        Newest updated first across every selected realm; the page is cut from the rows
        the caller may read; ``next_cursor`` (``"<updated_at_ms>:<memory_id>"``) comes
        exactly when more readable rows follow. ``terms`` (lowercased) narrow the rows in the
        store (:class:`RecordFilters`) before the page is cut. Under access control the store is also
        given the caller's readable scopes (:meth:`Visibility.readable_scopes`), so it never reads a
        row the caller may not read (how long a search takes does not depend on them); every row
        is still judged here, so a store that ignores them lists the same page. Raises ``StalledCursor`` (-32040) for a
        store whose cursor does not move.

        Without ``realm``, a store with ``realm_heads`` (:meth:`SqlitePanelStore.realm_heads
        <meta_memory.panel.store.SqlitePanelStore.realm_heads>`) gives each realm's newest keys and the realms
        that cannot be read (``skipped_realms``) in one pass, and the page reads only the realms that can hold
        its rows (:func:`~meta_memory.panel.paging.page_records`); each realm's filters are worked out when it
        is first read. A page starts reading at most :data:`~meta_memory.panel.paging.MAX_REALM_READS` realms:
        past them it ends early (filters that match rows in few realms), fewer rows than ``limit`` and a
        ``next_cursor`` that resumes where it stopped: its last row, or, without access control, for a page
        without rows, the position above the realm it did not read (``"<ms>:<id>~"``). Under access control a
        page without rows reads on instead, so no cursor names a row the caller may not read.
        """
        heads: dict[str, RealmHead] | None = None
        realm_heads = getattr(self.store, "realm_heads", None)  # an embedder's store may not have it
        if realm is None and realm_heads is not None:
            realms = self.realms(None)
            heads, problems = realm_heads(realms)
            served = _Served(None, [r for r in realms if r not in problems],
                             [_skip_entry(r, problems[r]) for r in realms if r in problems])
        else:
            served = self._served(realm)
        sources = {
            r: served.source(r, _Lazy(partial(self._record_filters, r, scope_kind, scope_key, status, terms),
                                      partial(self.store.records_page, r)))
            for r in served.realms
        }
        page = page_records(sources, lambda r, row: self._record_visible(r, row), limit, cursor, heads=heads,
                            max_reads=MAX_REALM_READS if heads is not None else None, stop_empty=not self._enforced)
        return {
            "records": [self.vis.record_json(r, row.listing_json()) for r, row in page.rows if r not in served.dropped],
            "next_cursor": page.next_cursor,
            **served.answer(),
        }

    def _record_filters(self, realm: str, scope_kind: str | None, scope_key: str | None, status: str | None,
                        terms: tuple[str, ...]) -> RecordFilters:
        """The listing's filters for one realm, with the caller's readable scopes under access control."""
        readable = self.vis.readable_scopes(realm, self.store.realm_scopes(realm)) if self._enforced else None
        return RecordFilters(scope_kind, scope_key, status, terms, readable)

    def record(self, *, memory_id: str, realm: str | None) -> dict[str, Any]:
        """``meta/memory/panel/record``: ``{realm, record (with body and content_hash), chain, injections}``.

        Realms are searched in order. Raises :class:`RecordNotFound` (-32001) when no
        realm holds the id *or* the caller may not read the record there: unknown and
        unreadable ids get the same refusal, so the answer is no existence oracle. ``chain`` lists the readable rows of the
        supersede chain (ancestors oldest first, the record, committed successors, then
        trailing uncommitted claimants), each with ``chain_role``; ``injections`` the
        newest 50 ledger rows whose identity the caller may also read. ``pending_forget`` (the
        held forget waiting on this record) is added for callers who may review its scope.
        """
        served = self._served(realm)
        for r in list(served.realms):
            row = served.each(lambda x: self.store.record(x, memory_id), [r]).get(r)
            if row is None:
                continue
            if self.vis.record_denial(r, record_facts(row)) is not None:
                continue
            chain = [
                {**self.vis.record_json(r, link.listing_json()), "chain_role": role}
                for role, link in self._chain(r, row)
                if self._record_visible(r, link)
            ]
            injections = [
                {**inj.to_json(), "session_key": self.vis.session_key(r, inj.identity, inj.session_key)}
                for inj in self.store.record_injections(r, memory_id, RECORD_INJECTIONS_MAX)
                if self.vis.injection(r, record_facts(row), inj.identity)
            ]
            out = {"realm": r, "record": self.vis.record_json(r, row.detail_json()), "chain": chain, "injections": injections}
            held = self.store.held_forget(r, memory_id)
            if held is not None and self.vis.record(r, RecordFacts(held.scope_kind, held.scope_key, "quarantined", True)):
                out["pending_forget"] = held_forget_json(held)
            return out
        raise RecordNotFound(memory_id)

    def _walk(
        self, realm: str, start: RecordRow, link: Callable[[RecordRow], str | None], seen: set[str]
    ) -> list[RecordRow]:
        """The rows reached from ``start`` by following ``link`` (nearest first), until a missing
        or already ``seen`` row or :data:`CHAIN_MAX` seen rows; each row reached joins ``seen``."""
        out: list[RecordRow] = []
        cur = start
        while (next_id := link(cur)) and len(seen) < CHAIN_MAX:
            nxt = self.store.records_by_ids(realm, [next_id]).get(next_id)
            if nxt is None or nxt.memory_id in seen:
                break
            seen.add(nxt.memory_id)
            out.append(nxt)
            cur = nxt
        return out

    def _chain(self, realm: str, row: RecordRow) -> list[tuple[str, RecordRow]]:
        """The supersede chain around ``row`` (cycle-safe, at most :data:`CHAIN_MAX` rows)."""
        seen = {row.memory_id}
        ancestors = self._walk(realm, row, lambda r: r.supersedes, seen)
        chain: list[tuple[str, RecordRow]] = [("ancestor", a) for a in reversed(ancestors)]
        chain.append(("self", row))
        successors = self._walk(realm, row, lambda r: r.superseded_by, seen)
        chain.extend(("successor", s) for s in successors)
        tip = successors[-1] if successors else row
        committed = tip.superseded_by is not None and tip.superseded_by in seen
        if not committed and len(seen) < CHAIN_MAX:
            for claimant in self.store.claimants(realm, tip.memory_id, CHAIN_MAX):
                if claimant.memory_id in seen or len(seen) >= CHAIN_MAX:
                    continue
                seen.add(claimant.memory_id)
                chain.append(("claimant", claimant))
        return chain

    # ------------------------------------------------------------------ quarantine

    def quarantine(self, *, realm: str | None, limit: int, cursor: Cursor | None = None) -> dict[str, Any]:
        """``meta/memory/panel/quarantine``: ``{records, next_cursor, pending_promotions, pending_forgets, realms}``.

        ``records``: quarantined rows (body-free, each with the ``content_hash`` a decision binds to,
        ``null`` from a store that does not read it), newest created first across every selected realm,
        one page cut from the rows the caller may read (as the record listing pages,
        :func:`~meta_memory.panel.paging.page_records`, keyed ``(created_at_ms, memory_id)``);
        ``next_cursor`` (``"<created_at_ms>:<memory_id>"`` of the page's last row) comes exactly when
        more readable quarantined rows follow, and ``cursor`` resumes after it. Under access control the
        store is given the caller's readable scopes (:meth:`Visibility.readable_scopes`) and reads only
        the quarantined rows the caller may review, before the page's ``limit``; each row is judged
        again here. ``pending_promotions``:
        unresolved gated promotions a caller may see (target scope, every source scope, and a source
        record's own visibility; an unresolved source is withheld under access control), ``limit``
        applied before the access filter. ``pending_forgets``: forgets held for review whose record
        still stands, newest first, shown to callers who may review quarantined content of the
        record's scope. Both side lists are the same on every page.

        Without ``realm``, a store with ``quarantine_head`` (each realm's newest queue keys, kept while its
        files do not change) has a page read only the realms that can hold its rows, at most
        :data:`~meta_memory.panel.paging.MAX_REALM_READS` of them started per page, as the record listing
        pages (a page may then end early with fewer rows and a ``next_cursor`` that resumes it).
        """
        served = self._served(realm)
        head_of = getattr(self.store, "quarantine_head", None)  # an embedder's store may not have it
        newest = getattr(self.store, "newest", None)
        heads: dict[str, RealmHead] | None = None
        firsts: dict[str, dict[str, Any]] = {"pending_promotions": {}, "held_forgets": {}}
        if realm is None and head_of is not None:
            def summary(r: str) -> RealmHead:
                # what the page and both side lists need of the realm, read while it is open
                if newest is not None:
                    for listing, got in firsts.items():
                        got[r] = newest(r, listing)
                return head_of(r)  # type: ignore[no-any-return]
            heads = served.each(summary)
        known = heads is not None and newest is not None
        sources = {r: served.source(r, _Lazy(partial(self._quarantine_readable, r), partial(self._quarantined_page, r)))
                   for r in served.realms}
        # every row is judged again here: a store that ignores ``readable`` lists the same page
        page = page_records(sources, lambda r, row: self._record_visible(r, row), limit, cursor, key=_created_key,
                            heads=heads, max_reads=MAX_REALM_READS if heads is not None else None,
                            stop_empty=not self._enforced)
        promos = self._newest(served, "pending_promotions", self.store.pending_promotions,
                              lambda p: (p.created_at_ms, p.pending_id), limit,
                              known=firsts["pending_promotions"] if known else None)
        visible = self._visible_promotions([p for p in promos if p.realm not in served.dropped])
        forgets = self._newest(served, "held_forgets", self.store.held_forgets,
                               lambda f: (f.created_at_ms, f.forget_id), limit,
                               known=firsts["held_forgets"] if known else None)
        forgets = [f for f in forgets if f.realm not in served.dropped]
        held = limit_then_filter(
            forgets, limit, lambda f: self.vis.record(f.realm, RecordFacts(f.scope_kind, f.scope_key, "quarantined", True))
        )
        return {
            "records": [self.vis.record_json(r, _queue_json(x)) for r, x in page.rows if r not in served.dropped],
            "next_cursor": page.next_cursor,
            "pending_promotions": [promotion_json(p) for p in visible],
            "pending_forgets": [held_forget_json(f) for f in held],
            **served.answer(),
        }

    def _newest(self, served: _Served, listing: str, fetch: Callable[[str, int], Sequence[T]],
                key: Callable[[T], Any], limit: int, realms: Sequence[str] | None = None,
                known: Mapping[str, Any] | None = None) -> list[T]:
        """The ``limit`` newest rows (by ``key``) of ``listing`` across the served realms (or ``realms``),
        merged newest first (realm order breaks ties), each realm asked for ``fetch(realm, limit)``. Without
        a named realm, a store with ``newest`` (:meth:`SqlitePanelStore.newest
        <meta_memory.panel.store.SqlitePanelStore.newest>`, each realm's newest row of the listing, kept
        while its files do not change) reads only the realms that can hold them
        (:func:`~meta_memory.panel.paging.newest_rows`); ``known``: those newest rows, when already read. A
        realm that cannot be read is dropped in ``served``."""
        chosen = list(served.realms if realms is None else realms)
        newest = getattr(self.store, "newest", None)  # an embedder's store may not have it
        if served.named is not None or newest is None:
            fetched = served.each(lambda r: fetch(r, limit), chosen)
        else:
            heads = dict(known) if known is not None else served.each(lambda r: newest(r, listing), chosen)
            got = newest_rows(chosen, heads, lambda r: served.each(lambda x: fetch(x, limit), [r]).get(r, ()),
                              key, limit)
            fetched = {r: got[r] for r in chosen if r in got and r not in served.dropped}
        return _merge(fetched.values(), key, limit)

    def _quarantine_readable(self, realm: str) -> ReadableScopes | None:
        """The caller's readable scopes of ``realm`` for the queue's statement: under access control and
        for a store whose ``quarantined`` takes them; else ``None`` (no filter in the store)."""
        if not self._enforced or not _filters_quarantine(self.store):
            return None
        return self.vis.readable_scopes(realm, self.store.realm_scopes(realm))

    def _quarantined_page(self, realm: str, readable: ReadableScopes | None, after: Cursor | None,
                          limit: int) -> SourcePage[RecordRow]:
        """One realm's quarantine queue as a :class:`~meta_memory.panel.paging.RowSource`, filtered in the
        store by ``readable`` when given. A store whose ``quarantined`` takes no ``after`` (written before
        the queue paged) lists its first page only."""
        if not _pages_quarantine(self.store):
            return SourcePage(self.store.quarantined(realm, limit)[:limit] if after is None else [], None)
        if readable is not None:
            rows = self.store.quarantined(realm, limit + 1, after, readable=readable)
        else:
            rows = self.store.quarantined(realm, limit + 1, after)
        more = len(rows) > limit
        rows = rows[:limit]
        return SourcePage(rows, _created_key(rows[-1]) if more and rows else None)

    def _visible_promotions(self, promos: list[PromotionRow]) -> list[PromotionRow]:
        if not self._enforced:
            return promos
        out: list[PromotionRow] = []
        by_realm: dict[str, list[PromotionRow]] = {}
        for p in promos:
            by_realm.setdefault(p.realm, []).append(p)
        allowed: set[tuple[str, str]] = set()
        for r, group in by_realm.items():
            records = self.store.records_by_ids(r, [p.record_id for p in group if not p.from_proposal])
            scopes = self.store.proposal_scopes(r, [p.record_id for p in group if p.from_proposal])
            for p in group:
                sources: list[tuple[str, str]] | None
                if p.from_proposal:
                    src = scopes.get(p.record_id)
                    sources = [src] if src is not None else None
                else:
                    rec = records.get(p.record_id)
                    if rec is None:
                        sources = None
                    elif not self._record_visible(r, rec):
                        continue
                    else:
                        sources = [(rec.scope_kind, rec.scope_key)]
                if self.vis.promotion(r, p.scope_kind, p.scope_key, sources):
                    allowed.add((r, p.pending_id))
        for p in promos:
            if (p.realm, p.pending_id) in allowed:
                out.append(p)
        return out

    # ------------------------------------------------------------------ dreams

    def dream_access(self, realms: Sequence[str], served: _Served | None = None) -> DreamAccess:
        """Which realms' dream history the caller may see, and ``withheld_by_access``; with ``served``, a realm
        whose facts cannot be read is dropped there (and not judged)."""
        if not self._enforced:
            return DreamAccess(tuple(realms), False)
        guard = served or _Served("", list(realms), [])
        facts = guard.each(
            lambda r: RealmFacts(frozenset(self.store.realm_scopes(r)), bool(self.store.holds_quarantine_evidence(r))),
            realms,
        )
        return self.vis.dream_listing(facts)

    def dreams(self, *, realm: str | None, limit: int) -> dict[str, Any]:
        """``meta/memory/panel/dreams``: ``{runs: [summary], realms, withheld_by_access}`` (newest last op first)."""
        return self._dream_listing(
            realm, limit, "dream_summaries", self.store.dream_summaries, lambda s: (s.last_op_at_ms, s.run_id),
            lambda s: s.to_json()
        )

    def dream_runs(self, *, realm: str | None, limit: int) -> dict[str, Any]:
        """``meta/memory/panel/dream_runs``: ``{runs: [row], realms, withheld_by_access}`` (newest completed first)."""
        return self._dream_listing(
            realm, limit, "dream_runs", self.store.dream_runs, lambda d: (d.completed_at_ms, d.run_id), dream_run_json
        )

    def _dream_listing(
        self,
        realm: str | None,
        limit: int,
        listing: str,
        fetch: Callable[[str, int], Sequence[T]],
        newest: Callable[[T], Any],
        to_json: Callable[[T], dict[str, Any]],
    ) -> dict[str, Any]:
        """``{runs, realms, withheld_by_access}``: up to ``limit`` rows of the visible realms, newest first."""
        served = self._served(realm)
        access = self.dream_access(served.realms, served)
        runs = self._newest(served, listing, fetch, newest, limit, access.realms)
        return {"runs": [to_json(d) for d in runs], "withheld_by_access": access.withheld_by_access,
                **served.answer()}

    # ------------------------------------------------------------------ realm-level reads

    def audit_verdicts(self, *, realm: str | None, limit: int) -> dict[str, Any]:
        """``meta/memory/panel/audit_verdicts``: ``{verdicts, realms}``; a verdict is judged by its record."""
        served = self._served(realm)
        rows = self._newest(served, "audit_verdicts", self.store.audit_verdicts,
                            lambda v: (v.created_at_ms, v.run_id, v.record_id), limit)
        records = self._records_for(rows, lambda v: v.record_id, served)
        kept = limit_then_filter(
            [v for v in rows if v.realm not in served.dropped], limit,
            lambda v: self.vis.audit_verdict(v.realm, _facts(records.get((v.realm, v.record_id)))),
        )
        return {"verdicts": [v.to_json() for v in kept], **served.answer()}

    def injections(self, *, realm: str | None, limit: int) -> dict[str, Any]:
        """``meta/memory/panel/injections``: ``{injections, realms}`` newest first; a row needs both its
        record and its identity to be readable."""
        served = self._served(realm)
        rows = self._newest(served, "injections", self.store.injections, lambda i: (i.at_ms, i.injection_id), limit)
        records = self._records_for(rows, lambda i: i.record_id, served)
        kept = limit_then_filter(
            [i for i in rows if i.realm not in served.dropped],
            limit,
            lambda i: self.vis.injection(i.realm, _facts(records.get((i.realm, i.record_id))), i.identity),
        )
        return {"injections": [{**i.to_json(), "session_key": self.vis.session_key(i.realm, i.identity, i.session_key)}
                               for i in kept], **served.answer()}

    def proposals(self, *, realm: str | None, limit: int) -> dict[str, Any]:
        """``meta/memory/panel/proposals``: ``{proposals, realms}``; metadata and the taint flag, never bodies
        (each row's author and taint flag as the caller may see them: :meth:`Visibility.proposal_json`)."""
        served = self._served(realm)
        rows = self._newest(served, "proposals", self.store.proposals, lambda p: (p.created_at_ms, p.proposal_id),
                            limit)
        kept = limit_then_filter(rows, limit, lambda p: self.vis.proposal(p.realm, p.scope_kind, p.scope_key))
        return {"proposals": [self.vis.proposal_json(p.realm, proposal_json(p)) for p in kept], **served.answer()}

    def harvests(self, *, realm: str | None, limit: int) -> dict[str, Any]:
        """``meta/memory/panel/harvests``: ``{harvests, realms}``; a harvest is judged by its identity."""
        served = self._served(realm)
        rows = self._newest(served, "harvests", self.store.harvests, lambda h: (h.retired_at_ms, h.identity), limit)
        kept = limit_then_filter(rows, limit, lambda h: self.vis.harvest(h.realm, h.identity))
        return {"harvests": [{**h.to_json(), "session_key": self.vis.session_key(h.realm, h.identity, h.session_key)}
                             for h in kept], **served.answer()}

    def overview(self, *, realm: str | None) -> dict[str, Any]:
        """``meta/memory/panel/overview``: ``{scopes, totals, floors, realms}``.

        Each scope row: ``{realm, scope_kind, scope_key, counts{status: n}, trust{tier: n}, records, body_bytes,
        floor_records, floor_bytes, pressure{records, bytes, over_floor},
        quarantined_content_withheld, record_limit}``; ``record_limit`` is the most rows an identity scope
        may hold, every status (``[agent_memory] identity_record_limit``; ``records`` of a reader shown
        quarantined content is the count it bounds), ``null`` for other scopes or a store without it. Figures leave out records holding quarantined
        content unless the caller holds ``memory.quarantine.review`` on the scope (``trust``
        counts the same records as ``counts``, by trust tier); a row
        left with no readable record is omitted. ``pressure`` ratios are the floor
        figures over the store floors.
        """
        served = self._served(realm)
        floors = self.store.floors()
        scopes: list[dict[str, Any]] = []
        totals: dict[str, Any] = {"records": 0, "body_bytes": 0, "counts": {}, "trust": {}}
        for r, rows in served.each(self.store.scope_overview).items():
            for row in rows:
                if not self.vis.overview_row(r, row.scope_kind, row.scope_key):
                    continue
                shown = self._overview_row(r, row, floors.records, floors.bytes)
                if shown is not None:
                    shown["record_limit"] = floors.identity_records if row.scope_kind == "identity" else None
                if shown is None:
                    continue
                scopes.append(shown)
                totals["records"] += shown["records"]
                totals["body_bytes"] += shown["body_bytes"]
                for status, n in shown["counts"].items():
                    totals["counts"][status] = totals["counts"].get(status, 0) + n
                for tier, n in shown["trust"].items():
                    totals["trust"][tier] = totals["trust"].get(tier, 0) + n
        scopes.sort(key=lambda s: (s["realm"], s["scope_kind"], s["scope_key"]))
        return {"scopes": scopes, "totals": totals, "floors": floors.to_json(), **served.answer()}

    def _overview_row(self, realm: str, row: ScopeOverviewRow, floor_records: int, floor_bytes: int) -> dict[str, Any] | None:
        reviewer = self.vis.record(realm, RecordFacts(row.scope_kind, row.scope_key, "quarantined", True))
        counts = dict(row.counts)
        trust = dict(row.trust_counts)
        body_bytes, fr, fb = row.body_bytes, row.floor_records, row.floor_bytes
        if not reviewer:
            for status, n in row.quarantined_counts.items():
                counts[status] = counts.get(status, 0) - n
            counts = {s: n for s, n in counts.items() if n > 0}
            for tier, n in row.quarantined_trust_counts.items():
                trust[tier] = trust.get(tier, 0) - n
            trust = {t: n for t, n in trust.items() if n > 0}
            body_bytes -= row.quarantined_body_bytes
            fr -= row.quarantined_floor_records
            fb -= row.quarantined_floor_bytes
        records = sum(counts.values())
        if records == 0:
            return None
        return {
            "realm": realm,
            "scope_kind": row.scope_kind,
            "scope_key": row.scope_key,
            "counts": counts,
            "trust": trust,
            "records": records,
            "body_bytes": body_bytes,
            "floor_records": fr,
            "floor_bytes": fb,
            "pressure": {
                "records": round(fr / floor_records, 4) if floor_records else 0.0,
                "bytes": round(fb / floor_bytes, 4) if floor_bytes else 0.0,
                "over_floor": fr > floor_records or fb > floor_bytes,
            },
            "quarantined_content_withheld": not reviewer,
        }

    def _records_for(self, rows: Sequence[Any], record_id: Callable[[Any], str],
                     served: _Served) -> dict[tuple[str, str], RecordRow]:
        """Body-free records named by ``rows`` (each has ``realm``), keyed ``(realm, memory_id)``; a realm
        whose records cannot be read is dropped in ``served``."""
        wanted: dict[str, set[str]] = {}
        for row in rows:
            wanted.setdefault(row.realm, set()).add(record_id(row))
        out: dict[tuple[str, str], RecordRow] = {}
        found = served.each(lambda r: self.store.records_by_ids(r, wanted[r]), list(wanted))
        for r, by_id in found.items():
            for mid, rec in by_id.items():
                out[(r, mid)] = rec
        return out


def _pages_quarantine(store: MemoryPanelStore) -> bool:
    """Whether ``store.quarantined`` takes the ``after`` cursor (a third parameter)."""
    try:
        params = inspect.signature(store.quarantined).parameters
    except (TypeError, ValueError):
        return True
    return "after" in params or len(params) >= 3 or any(
        p.kind is inspect.Parameter.VAR_POSITIONAL for p in params.values()
    )


def _filters_quarantine(store: MemoryPanelStore) -> bool:
    """Whether ``store.quarantined`` takes the caller's ``readable`` scopes (a keyword parameter)."""
    try:
        params = inspect.signature(store.quarantined).parameters
    except (TypeError, ValueError):
        return False
    return "readable" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _queue_json(row: RecordRow) -> dict[str, Any]:
    """A quarantine-queue row: the listing JSON plus ``content_hash``, the hash
    ``meta/memory/quarantine/decide`` binds its ``expected_content_hash`` to (``None`` when the store
    did not read it)."""
    return {**row.listing_json(), "content_hash": row.content_hash}


def _created_key(row: RecordRow) -> Cursor:
    """The quarantine queue's listing key: ``(created_at_ms, memory_id)``."""
    return Cursor(row.created_at_ms, row.memory_id)


def _skipped(skipped: list[dict[str, str]]) -> dict[str, Any]:
    """``{"skipped_realms": [...]}`` when a realm was left out, else nothing (the member is optional)."""
    return {"skipped_realms": skipped} if skipped else {}


def _facts(row: RecordRow | None) -> RecordFacts | None:
    return record_facts(row) if row is not None else None

"""Fakes for injection tests: a recording recall provider, ledger and usage sinks."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from meta_memory.clock import ManualClock
from meta_memory.injection import (
    IndexRow,
    InjectableRecord,
    InjectionCoordinator,
    InjectionOptions,
    LedgerRow,
    RecallRequest,
    ScopeRef,
)

NONCE_RE = re.compile(r"\[mem-token: ([0-9a-f]+)\]:")
BLOCK_OPEN = "<meta_memory_observation index="
#: The opening of a build index entry (a quoted observation without a body).
ENTRY_OPEN = "<meta_memory_observation id="
DAY = 86_400_000


def record(n: int, body_bytes: int = 40, **kw: object) -> InjectableRecord:
    """Record ``mem-{n}`` titled ``Record {n}`` with an ASCII body of ``body_bytes`` bytes."""
    body = (f"body {n} " + "x" * body_bytes)[:body_bytes]
    return InjectableRecord(memory_id=f"mem-{n}", title=f"Record {n}", body=body, **kw)  # type: ignore[arg-type]


def nonce_of(text: str) -> str:
    m = NONCE_RE.search(text)
    assert m, "no nonce in block"
    return m.group(1)


@dataclass
class FakeStore:
    """Recall returns ``records`` (first ``max_entries``); sinks collect ledger rows and usage marks."""

    records: list[InjectableRecord] = field(default_factory=list)
    manifests: dict[str, list[IndexRow]] = field(default_factory=dict)
    requests: list[RecallRequest] = field(default_factory=list)
    manifest_requests: list[tuple[ScopeRef, int]] = field(default_factory=list)
    ledger: list[tuple[str, LedgerRow]] = field(default_factory=list)
    usage: list[tuple[str, list[str], str]] = field(default_factory=list)
    sleep_s: float = 0.0
    manifest_sleep_s: float = 0.0
    error: Exception | None = None
    manifest_error: Exception | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def recall(self, request: RecallRequest) -> Sequence[InjectableRecord]:
        with self.lock:
            self.requests.append(request)
        if self.sleep_s:
            time.sleep(self.sleep_s)
        if self.error is not None:
            raise self.error
        return self.records[: request.max_entries]

    def manifest(self, scope: ScopeRef, limit: int) -> Sequence[IndexRow]:
        with self.lock:
            self.manifest_requests.append((scope, limit))
        if self.manifest_sleep_s:
            time.sleep(self.manifest_sleep_s)
        if self.manifest_error is not None:
            raise self.manifest_error
        return self.manifests.get(scope.kind, [])[:limit]

    def log_injections(self, realm: str, rows: Sequence[LedgerRow]) -> None:
        self.ledger.extend((realm, row) for row in rows)

    def mark_usage(self, realm: str, ids: Sequence[str], usage: str) -> None:
        self.usage.append((realm, list(ids), usage))


def coordinator(
    store: FakeStore,
    *,
    clock: ManualClock | None = None,
    manifests: bool = False,
    **options: object,
) -> InjectionCoordinator:
    return InjectionCoordinator(
        InjectionOptions(**options),  # type: ignore[arg-type]
        recall_fn=store.recall,
        manifest_fn=store.manifest if manifests else None,
        log_injections_fn=store.log_injections,
        mark_usage_fn=store.mark_usage,
        terms_fn=lambda text: [w.casefold() for w in text.split() if len(w) >= 3],
        clock=clock or ManualClock(),
    )

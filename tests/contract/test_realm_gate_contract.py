"""The store judges every batch in the realm it is written to (on SQLite and PostgreSQL).

The firewall's gate is the store's default gate; a batch names its realm, and taint and evidence are
read there: a session tainted in realm ``ops`` quarantines an agent's write and a distillate citing it
in ``ops``, and the same writes in the default realm, where that session is clean, land active.
"""

from __future__ import annotations

from collections.abc import Callable

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Author, EvidenceRef, NewMemoryRecord, Provenance, Scope, StatusKind
from meta_memory.agent_memory.store.base import AgentMemoryStore
from meta_memory.clock import ManualClock
from meta_memory.firewall import Firewall
from meta_memory.session_ref import SessionRef

AGENT = "scout:1"


def _record(title: str, author: Author, *evidence: EvidenceRef) -> NewMemoryRecord:
    return NewMemoryRecord(title=title, body=f"{title} body", provenance=Provenance(author, evidence=evidence))


def test_taint_and_evidence_are_judged_in_the_batchs_realm(open_store: Callable[..., AgentMemoryStore],
                                                           clock: ManualClock) -> None:
    firewall = Firewall(None, clock)
    store = open_store(gate=firewall.gate)
    firewall.tool_result(SessionRef("ops", AGENT, "s1"), "web_fetch")
    agent, distiller = Author.agent(AGENT), Author.distiller("run-1")
    for realm, expected in (("ops", StatusKind.QUARANTINED), ("default", StatusKind.ACTIVE)):
        scope = Scope.identity(realm, AGENT)
        written, _ = record_writes.remember_authored(store, realm, scope, _record(f"Agent note in {realm}", agent), agent)
        assert written.status.kind is expected, realm
        cited, _ = record_writes.remember_authored(store, realm, scope, _record(f"Distillate in {realm}", distiller,
                                                                         EvidenceRef("s1")), distiller)
        assert cited.status.kind is expected, realm
        if expected is StatusKind.QUARANTINED:
            assert written.status.detail == "session tainted by web tool 'web_fetch'"
            assert cited.status.detail == "evidence session tainted by web tool 'web_fetch' " \
                "(session-tainted ⇒ range-tainted)"

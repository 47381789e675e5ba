"""Every cap and default that more than one module needs: the one place each number is written.

Sizes are UTF-8 bytes, times milliseconds unless the name says days. Modules import what they
use from here (config decoding, the injection options, the recorder tool, the RPC params, the
stores, the panel); a number only one module uses stays in that module.

Seed: "Agent memory injection" (entries, recall deadline), Console Memory panel (floors);
reference §2A (config clamps), §2B (layout, retention floors), §3B (constants).
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "DAY_MS",
    "DEFAULT_INSTRUCTION_HEADER",
    "DEFAULT_MAX_ENTRIES",
    "MAX_MEMORY_ENTRIES",
    "DEFAULT_RECALL_TIMEOUT_MS",
    "MAX_RECALL_TIMEOUT_MS",
    "MAX_MANIFEST_K",
    "RETENTION_FLOOR_RECORDS",
    "RETENTION_FLOOR_BYTES",
    "DEFAULT_MAX_REALMS",
    "MAX_MAX_REALMS",
    "DEFAULT_MAX_OPEN_REALMS",
    "MAX_MAX_OPEN_REALMS",
    "DEFAULT_RECALL_INDEX_MB",
    "MAX_RECALL_INDEX_MB",
    "MAX_FILE_NAME_BYTES",
    "MAX_PATH_BYTES",
    "MAX_REALM_FILE_STEM_BYTES",
    "MAX_RETENTION_DAYS",
    "MAX_TTL_S",
    "DEFAULT_TOOL_MAX_TTL_S",
    "DEFAULT_EXPIRY_SWEEP_S",
    "MAX_EXPIRY_SWEEP_S",
    "DEFAULT_SESSION_STATE_EXPIRY_DAYS",
    "MAX_SESSION_STATE_EXPIRY_DAYS",
    "DEFAULT_SESSION_STATE_LIMIT",
    "MAX_SESSION_STATE_LIMIT",
    "MAX_SESSION_KEY_BYTES",
    "MAX_DERIVED_SESSIONS",
    "MAX_REASON_BYTES",
    "MAX_BATCH_OPS",
    "MAX_LIST_LIMIT",
    "DEFAULT_MAX_BATCH_MS",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_MAX_BUFFERED_REQUEST_BYTES",
    "TOKENLESS_MAX_REQUEST_BYTES",
    "TOKENLESS_MAX_RESPONSE_BYTES",
    "DEFAULT_MAX_IN_FLIGHT",
    "DEFAULT_MAX_PER_KEY",
    "MAX_OPEN_HARVESTS_PER_IDENTITY",
    "MAX_DECIDED_HARVESTS_PER_IDENTITY",
    "MAX_INJECTIONS_PER_IDENTITY",
    "MAX_DREAM_RUNS_PER_REALM",
]

#: One day in milliseconds.
DAY_MS: Final = 86_400_000

#: The injection header when ``agent_memory.instruction_header`` is absent or blank.
DEFAULT_INSTRUCTION_HEADER: Final = "Agent memory"

#: ``agent_memory.max_entries``: records recalled per injection, and the recorder tool's default
#: ``recall`` size; ``0`` means this default.
DEFAULT_MAX_ENTRIES: Final = 8
#: The largest ``agent_memory.max_entries``, and the most records one recall hands back (tool and RPC).
MAX_MEMORY_ENTRIES: Final = 64

#: ``[gateway] max_batch_ms``: how long one JSON-RPC batch may run before its calls not yet started are
#: answered ``capacity_exceeded`` (an honest batch of a few hundred calls takes well under a second).
DEFAULT_MAX_BATCH_MS: Final = 60_000

#: ``[gateway] max_response_bytes``: the bytes of encoded answers one request (a call, or a whole batch) may
#: produce. Above the largest answer one call can give: a ``meta/agent_memory/list`` page of 500 records
#: whose 64 KiB bodies are all control characters (each escaped to six bytes) encodes to about 197 MB. Also the
#: most bytes of one answer the SDK's HTTP clients read by default (``Meta.connect(..., max_answer_bytes=...)``).
DEFAULT_MAX_RESPONSE_BYTES: Final = 256 * 1024 * 1024
#: ``[gateway] max_buffered_request_bytes``: the request bodies (``POST /rpc``) one gateway holds at once,
#: from the first byte read to the answer, summed over every connection.
DEFAULT_MAX_BUFFERED_REQUEST_BYTES: Final = 64 * 1024 * 1024
#: ``[gateway] max_buffered_response_bytes``: the encoded answers (``POST /rpc``) one gateway holds at once,
#: from the first answer built to the last byte handed to the connection, summed over every connection.
#: Twice ``max_response_bytes``: one caller (who may hold half) still gets one request's answers whole.
DEFAULT_MAX_BUFFERED_RESPONSE_BYTES: Final = 2 * DEFAULT_MAX_RESPONSE_BYTES
#: ``[gateway] max_connections_per_ip``: connections one peer address (an IPv6 /64) may hold open at once.
#: Above the couple of hundred concurrent connections a busy local client (a test run, a worker pool) opens.
DEFAULT_MAX_CONNECTIONS_PER_IP: Final = 512
#: The largest ``[gateway] max_connections`` and ``max_connections_per_ip`` (Linux's default ceiling of
#: open files per process, ``fs.nr_open``).
MAX_CONNECTIONS: Final = 1024 * 1024
#: A caller that sent no token to a gateway that lists ``[access]`` tokens (served under ``anyone`` rules,
#: access control on): the most bytes of its request body, and of the answers its request may produce.
TOKENLESS_MAX_REQUEST_BYTES: Final = 64 * 1024
TOKENLESS_MAX_RESPONSE_BYTES: Final = 1024 * 1024

#: ``agent_memory.recall_timeout_ms``: the recall provider's deadline; ``0`` means this default.
DEFAULT_RECALL_TIMEOUT_MS: Final = 500
MAX_RECALL_TIMEOUT_MS: Final = 30_000

#: The largest ``k`` of a working-set manifest (store and ``meta/agent_memory/manifest``).
MAX_MANIFEST_K: Final = 512

#: Retention floors (reference §2B): a scope above either, counted over non-tombstoned rows, logs a
#: warning and the panel shows it; nothing is refused.
RETENTION_FLOOR_RECORDS: Final = 4000
RETENTION_FLOOR_BYTES: Final = 32 * 1024 * 1024

#: ``agent_memory.max_realms``: most realm databases (a write creating one more is refused).
DEFAULT_MAX_REALMS: Final = 4096
MAX_MAX_REALMS: Final = 1_000_000
#: ``agent_memory.identity_record_limit``: most rows one identity scope holds in the store, whatever their
#: status, the identity's open (pending or held) proposals counted with them (a write or proposal that would
#: pass it is refused; erasing, the tombstone sweep or deciding a proposal frees room).
DEFAULT_IDENTITY_RECORD_LIMIT: Final = 2_000_000
MAX_IDENTITY_RECORD_LIMIT: Final = 1_000_000_000
#: Most pending (not yet decided) exit-interview harvests one identity may have in a realm: a
#: ``meta/session/retire`` past it is refused (``limit``) until a dream decides or an erase removes some.
MAX_OPEN_HARVESTS_PER_IDENTITY: Final = 64
#: Most decided (``harvested``) exit-interview harvests kept per identity in a realm: deciding one more
#: deletes that identity's oldest decided rows in the same transaction. Pending harvests are never pruned,
#: and the identity keeps at least its newest decided row, which is what dream-history visibility reads
#: (the realm's scopes name every identity a harvest row names).
MAX_DECIDED_HARVESTS_PER_IDENTITY: Final = 16
#: Most injection-ledger rows (``injections``) kept per identity in a realm: writing more prunes that
#: identity's oldest rows in the same transaction. The usage counters on the records are not affected.
MAX_INJECTIONS_PER_IDENTITY: Final = 4096
#: Most ``dream_runs`` rows kept per realm: recording a dream's run deletes the realm's oldest runs past it
#: (newest completed first, the order ``meta/memory/panel/dream_runs`` lists them in) in the same transaction.
#: A run's row is written only once the run has completed, so no run in progress is ever pruned. 256 keeps
#: more than the panel lists at once (``DREAMS_MAX_LIMIT``, 100) and the newest runs whose escalations a
#: dream skips (``ESCALATION_MEMORY_RUNS``, 50); at the default cadence (every six hours, a row only when
#: there was work) it is at least two months of history, while a realm dreamed for years keeps a fixed
#: number of rows instead of one more per run. The usage-audit verdicts (``dream_audit_verdicts``) are bounded
#: with them: pruning runs deletes the verdicts of every run not kept (``DreamRuns.prune``).
MAX_DREAM_RUNS_PER_REALM: Final = 256
#: ``agent_memory.max_open_realms``: most realms with open SQLite connections (LRU-closed).
DEFAULT_MAX_OPEN_REALMS: Final = 32
MAX_MAX_OPEN_REALMS: Final = 4096
#: ``agent_memory.recall_index_mb``: memory of the in-process recall index, all realms together (MiB).
DEFAULT_RECALL_INDEX_MB: Final = 256
MAX_RECALL_INDEX_MB: Final = 65536
#: ``agent_memory.sqlite_cache_mb``: SQLite's heap in the process (every connection's page cache), MiB.
DEFAULT_SQLITE_CACHE_MB: Final = 128
MAX_SQLITE_CACHE_MB: Final = 65536
#: ``agent_memory.view_cache_mb``: decoded record views recall keeps, every realm together (MiB).
DEFAULT_VIEW_CACHE_MB: Final = 32
MAX_VIEW_CACHE_MB: Final = 65536
#: ``agent_memory.vector_cache_mb``: hybrid recall's scope matrices and query vectors (MiB).
DEFAULT_VECTOR_CACHE_MB: Final = 256
MAX_VECTOR_CACHE_MB: Final = 65536

#: Longest file name most file systems accept, in bytes (a realm database's encoded name).
MAX_FILE_NAME_BYTES: Final = 255
#: Longest path a system call takes, in bytes (Linux's PATH_MAX, 4096, holds the terminating NUL).
MAX_PATH_BYTES: Final = 4095
#: The realm-name rule (both stores): a realm name encoded as a file-name segment is at most this many bytes,
#: so ``<name>.sqlite3`` and the longest file SQLite keeps beside it, ``<name>.sqlite3-journal``, fit
#: MAX_FILE_NAME_BYTES: 255 - len(".sqlite3") - len("-journal") (``storage/layout.py`` checks the sum).
MAX_REALM_FILE_STEM_BYTES: Final = 239

#: The longest ``agent_memory.erase_tombstoned_after_days`` accepted (100 years).
MAX_RETENTION_DAYS: Final = 36_500

#: Record expiry, in SECONDS: the longest ``ttl_s`` any configuration allows (100 years; also
#: ``agent_memory.max_ttl_s``'s default), and ``agent_memory.tool_max_ttl_s``'s default (30 days: what the
#: model may ask for through the ``memory`` tool).
MAX_TTL_S: Final = 36_500 * 86_400
DEFAULT_TOOL_MAX_TTL_S: Final = 30 * 86_400
#: ``agent_memory.expiry_sweep_s``: seconds between runs of the expiry sweep (default 60, at most a day).
DEFAULT_EXPIRY_SWEEP_S: Final = 60
MAX_EXPIRY_SWEEP_S: Final = 86_400

#: ``agent_memory.session_state_expiry_days``: session state untouched this long is deleted.
DEFAULT_SESSION_STATE_EXPIRY_DAYS: Final = 30
MAX_SESSION_STATE_EXPIRY_DAYS: Final = 3650
#: ``agent_memory.session_state_limit``: most session-state rows (at the cap new sessions are refused).
DEFAULT_SESSION_STATE_LIMIT: Final = 1_000_000
MAX_SESSION_STATE_LIMIT: Final = 100_000_000

#: Longest session key (UTF-8 bytes) a session method or a derived write names.
MAX_SESSION_KEY_BYTES: Final = 512
#: Most sessions one write derived from sessions (``derived_from_sessions``) names.
MAX_DERIVED_SESSIONS: Final = 64

#: Longest free-text reason a caller gives (UTF-8 bytes): a quarantine review's ``rationale``, a
#: retired session's ``cause``, an erase's ``reason``.
MAX_REASON_BYTES: Final = 400

#: Most ops of one staged batch, and so the most records one ``remember_batch`` call (RPC, SDK or
#: store) writes; an import cuts its records into batches of at most this many.
MAX_BATCH_OPS: Final = 1024

#: Most records one ``meta/agent_memory/list`` page holds (its ``limit``); the LangGraph store pages
#: with it.
MAX_LIST_LIMIT: Final = 500

#: Recall provider calls running at once in one runtime (the time box's cap, which the SDK's handles
#: also queue under): beyond it a call waits for a slot.
DEFAULT_MAX_IN_FLIGHT: Final = 16
#: Recall provider calls running at once for one ``(realm, identity)`` (the time box and the SDK's
#: handles alike).
DEFAULT_MAX_PER_KEY: Final = 4

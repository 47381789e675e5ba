// Generated from the gateway's rpc.discover by scripts/wire_types.py: do not edit.
// Regenerate with `python3 sdk/typescript/scripts/wire_types.py` (CI checks it is current).
/* eslint-disable */

export interface AccessEnabled {
  enabled: boolean;
}

export interface AgentMemoryStatus {
  enabled: boolean;
  store?: string | null;
  realm?: string | null;
  realms?: string[] | null;
  taintTracker?: Record<string, unknown> | null;
  contentTrust?: ContentTrustStatus | null;
  injectionSessions?: Record<string, unknown> | null;
  recorderTool?: boolean | null;
  vectorBacklog?: Record<string, unknown> | null;
  telemetry?: Record<string, number> | null;
  memory?: Record<string, unknown> | null;
}

export interface AuditVerdictRow {
  realm: string;
  runId: string;
  recordId: string;
  verdict: string;
  rationale: string | null;
  createdAtMs: number;
}

export interface BackupFile {
  path: string;
  kind: "sqlite" | "ledger" | "key" | "file";
  bytes: number;
}

/**
 * ``meta/storage/backup``: the copy's directory, its consistency point (UTC epoch ms), its files,
 * their total bytes, the stores it does not hold (``"postgres"``: use ``pg_dump``), seconds taken and,
 * when there were some, the working copies of killed backups it removed beside ``dest``.
 */
export interface BackupResult {
  dest: string;
  beganAtMs: number;
  files: BackupFile[];
  bytes: number;
  elsewhere: string[];
  seconds: number;
  removedPartials?: string[] | null;
}

export interface BatchError {
  code: number;
  message: string;
  data?: Record<string, unknown> | null;
}

/**
 * A stored or deduplicated item (``memory_id``, ``created``, and as a single remember answers it
 * ``supersedes`` and ``tags_added`` of a tag merge), or a refused one (``error``).
 */
export interface BatchItem {
  opIndex: number;
  memoryId?: string | null;
  created?: boolean | null;
  supersedes?: string | null;
  tagsAdded?: string[] | null;
  quarantined?: string | null;
  expiresAtMs?: number | null;
  error?: BatchError | null;
}

export interface CanRead {
  canRead: boolean;
}

export interface CapabilitiesResult {
  methods: string[];
  memory: CanRead;
  access: AccessEnabled;
}

export interface ChainRow {
  id: string;
  scope: ScopeRef;
  kind: string;
  title: string;
  description: string;
  tags: string[];
  metadata?: Record<string, unknown>;
  provenance: Record<string, unknown>;
  trust: string;
  status: StatusRef;
  supersedes?: string | null;
  derivedFrom: string[];
  workingSetRank?: number | null;
  rankSetAtMs?: number | null;
  createdAtMs: number;
  updatedAtMs: number;
  tombstonedAtMs?: number | null;
  usage: Record<string, unknown>;
  everQuarantined: boolean;
  expiresAtMs?: number | null;
  bodyBytes: number;
  chainRole: string;
}

export interface CompactedResult {
  identity: string;
  sessionKey: string;
  tainted: boolean;
}

/**
 * How tool results are classified: ``default``, whether the configuration ``names_any_tool``, how
 * many ``default_untrusted_tools`` names taint, the tool names trusted only because no rule names them
 * (``unlisted_trusted_tools``, with counts since start; ``unlisted_trusted_tools_other`` past 256
 * names) and a ``warning`` when no rule names the host's tools.
 */
export interface ContentTrustStatus {
  default: string;
  namesAnyTool: boolean;
  defaultUntrustedTools: number;
  unlistedTrustedTools: UnlistedTool[];
  unlistedTrustedToolsOther: number;
  warning: string | null;
}

/**
 * ``forget`` is present when the decision was about a held forget; ``duplicate_of`` (the id of the
 * active record of the scope that already held the content, also ``successor``) when a release was merged
 * into it instead of writing a second active copy.
 */
export interface DecideResult {
  outcome: "released" | "already_released" | "tombstoned" | "already_tombstoned";
  origin: Receipt;
  successor: Receipt | null;
  supersededPrior?: Receipt | null;
  duplicateOf?: string | null;
  forget?: HeldForget | null;
  decision: Decision;
}

export interface Decision {
  auditToken: string;
  decidedAtMs: number;
  review: Record<string, unknown>;
}

/** ``{text, hits}`` for a ``text`` call, ``{blocks, hits}`` for a ``blocks`` call. */
export interface DefangResult {
  text?: string | null;
  blocks?: unknown[] | null;
  hits: number;
}

/** ``meta/storage/doctor``: ``ok`` false when a finding blocks start-up or is an error. */
export interface DoctorResult {
  stateDir: string | null;
  ok?: boolean;
  slots: Slot[];
  findings: Finding[];
}

export interface DreamResult {
  realm: string;
  runId: string | null;
  status: string;
  reason?: string | null;
  startedAtMs: number;
  completedAtMs: number | null;
  opsCommitted: number;
  detail: Record<string, unknown>;
}

export interface DreamRunRow {
  realm: string;
  runId: string;
  partition: string | null;
  startedAtMs: number;
  completedAtMs: number | null;
  opsCommitted: number;
  detail: unknown;
}

export interface DreamSummaryRow {
  realm: string;
  runId: string;
  firstOpAtMs: number;
  lastOpAtMs: number;
  ops: number;
  opKinds: Record<string, number>;
  quarantinedOps: number;
  memoryIds: string[];
  rationales: string[];
}

/** ``erased_at_ms`` is ``None`` for a dry run (which only counts what would go). */
export interface EraseResult {
  dryRun: boolean;
  erasedAtMs: number | null;
  count: number;
  scopes: string[];
  records: ErasedRecord[];
  proposals: string[];
}

/** ``content_hash`` is ``None`` to a caller who may not read the record's scope (``agent.memory.read``). */
export interface ErasedRecord {
  memoryId: string;
  scope: ScopeRef;
  contentHash: string | null;
  status: string;
}

export interface Event {
  eventId: string;
  identity: string;
  eventType: string;
  timestampMs: number;
  data: Record<string, unknown>;
}

export interface EventsListResult {
  events: Event[];
  lastEventId: string | null;
}

export interface EventsStatus {
  lastEventId: string | null;
}

/**
 * ``meta/storage/export``: the next ``lines`` of the export file (each one JSON object, without its
 * newline); ``done`` once the last line was given.
 */
export interface ExportPageResult {
  exportId: string;
  lines: string[];
  done: boolean;
}

export interface Finding {
  kind: string;
  severity: "blocks_startup" | "warning" | "error";
  paths: string[];
  message: string;
  fix: string;
}

export interface Floors {
  records: number;
  bytes: number;
}

export interface ForgetResult {
  memoryId: string;
  deleted: boolean;
}

/** ``allowed`` false (with ``reason: "conflict_active"``) while a conflict signal is active. */
export interface GatingCheckResult {
  entity: string;
  topic: string;
  store: string | null;
  allowed: boolean;
  reason?: "conflict_active" | null;
  conflict: MemoryConflictSignal | null;
}

export interface GatingDecideResult {
  pendingId: string;
  recordId: string;
  decision: "approve" | "deny";
  status: string;
  changed: boolean;
  promotedId: string | null;
}

export interface HarvestRow {
  realm: string;
  identity: string;
  sessionKey: string | null;
  cause: string;
  retiredAtMs: number;
  status: string;
}

export interface HeldForget {
  forgetId: string;
  memoryId: string;
  scopeKind: string;
  scopeKey: string;
  contentHash: string;
  requestedBy: unknown;
  reason: string | null;
  status: string;
  createdAtMs: number;
}

/**
 * Who wrote a version or a change: ``author`` (operator|application|agent|steward|distiller), the
 * agent's ``identity`` or the steward's / distiller's ``run_id`` (an operator's principal is not shown).
 */
export interface HistoryAuthor {
  author: string;
  identity?: string | null;
  runId?: string | null;
}

/**
 * One audited change of a version: ``change`` (created|import|update|tag_merge|release|promotion|
 * forget|forget_released|tombstone|retier|rank|erase), ``at_ms``, ``by`` (``null`` for an erased version).
 */
export interface HistoryChange {
  change: string;
  atMs: number;
  by: HistoryAuthor | null;
}

/**
 * ``meta/agent_memory/history``: the record's versions, oldest first (``order``), at most 200
 * (``truncated`` when more are linked).
 */
export interface HistoryResult {
  memoryId: string;
  order: "oldest_first";
  versions: HistoryVersion[];
  truncated: boolean;
}

/**
 * One version. ``reason``: the change that wrote it. ``withheld``: ``quarantined`` (quarantined
 * content: ``title``, ``body``, ``tags``, ``metadata`` are ``null``) or ``erased`` (only the id,
 * ``status_before_erase`` and the kinds and times of its changes remain); ``null`` when the content is
 * shown. ``metadata``: the version's JSON object (``{}`` when it had none); ``expires_at_ms``: its expiry
 * (UTC epoch ms, ``null``: never).
 */
export interface HistoryVersion {
  memoryId: string;
  status: "active" | "expired" | "quarantined" | "superseded" | "tombstoned" | "erased";
  statusBeforeErase: string | null;
  supersededBy: string | null;
  supersedes: string | null;
  derivedFrom: string[];
  author: HistoryAuthor | null;
  trust: string | null;
  createdAtMs: number | null;
  updatedAtMs: number | null;
  reason: string;
  withheld: "quarantined" | "erased" | null;
  title: string | null;
  body: string | null;
  tags: string[] | null;
  metadata: Record<string, unknown> | null;
  expiresAtMs: number | null;
  changes: HistoryChange[];
}

export interface InjectResult {
  text: string | null;
  skipReason: string | null;
  includedIds: string[];
  renderedBytes: number;
  surface: "turn" | "build";
}

/**
 * One injection-ledger row. It carries no row number: the ledger's numbering is shared by every
 * identity of a realm (on PostgreSQL by every realm), so two numbers of one reader's rows would count
 * the injections of identities it may not see.
 */
export interface InjectionRow {
  realm: string;
  recordId: string;
  identity: string;
  sessionKey: string | null;
  surface: "build" | "turn";
  atMs: number;
}

export interface LedgerStatus {
  persisted: boolean;
  backend: "local_json" | "in_memory";
  assertions: number;
  maxRetained: number;
  evicted: number;
}

export interface ListResult {
  records: WireRecord[];
  nextCursor: string | null;
}

export interface ManifestResult {
  records: ManifestRow[];
}

export interface ManifestRow {
  id: string;
  kind: string;
  title: string;
  description: string;
  ageDays: number;
  rank: number | null;
}

/**
 * One stored assertion.
 *
 * JSON: ``{"assertion_id": "memory-assert-000001", "entity", "topic", "store",
 * "fact", "metadata": {...} | null, "indexed_at_ms": <UTC epoch ms>}``.
 * ``metadata`` is kept verbatim (treat it as read-only).
 */
export interface MemoryAssertion {
  assertionId: string;
  entity: string;
  topic: string;
  store: string;
  fact: string;
  metadata?: unknown;
  indexedAtMs: number;
}

/**
 * One conflict signal, unique per ``(entity, topic, store)``.
 *
 * JSON: ``{"entity", "topic", "store", "reason": str | null, "updated_at_ms": <UTC epoch ms>}``.
 */
export interface MemoryConflictSignal {
  entity: string;
  topic: string;
  store: string;
  reason?: string | null;
  updatedAtMs: number;
}

/**
 * Result of ``meta/memory/index``.
 *
 * ``entity``/``topic``/``store`` are canonical; ``assertion_id`` is ``null`` when
 * only a conflict was recorded; ``conflict_active`` is true when any conflict
 * signal exists for this entity and topic, in any store.
 */
export interface MemoryIndexResult {
  entity: string;
  topic: string;
  store: string;
  assertionId?: string | null;
  conflictActive?: boolean;
}

/** Result of ``meta/memory/query``: assertions in insertion order, conflicts in key order. */
export interface MemoryQueryResult {
  assertions: MemoryAssertion[];
  conflicts: MemoryConflictSignal[];
}

/**
 * Result of ``meta/memory/resolve``.
 *
 * ``entity``/``topic`` are canonical, ``store`` too (``null``: every store); ``resolved`` holds the
 * conflict signals this call removed, in key order (empty when none was active: nothing changed);
 * ``conflict_active`` is true when a signal still exists for this entity and topic in any store
 * (what ``meta/gating/check`` reads).
 */
export interface MemoryResolveResult {
  entity: string;
  topic: string;
  store?: string | null;
  resolved: MemoryConflictSignal[];
  conflictActive: boolean;
}

/** ``{"store": <name>, "record_count": <assertions + conflict signals in that store>}``. */
export interface MemoryStoreInfo {
  store: string;
  recordCount: number;
}

export interface PanelAuditVerdictsResult {
  verdicts: AuditVerdictRow[];
  realms: string[];
  skippedRealms?: SkippedRealm[] | null;
}

export interface PanelDreamRunsResult {
  runs: DreamRunRow[];
  withheldByAccess: boolean;
  realms: string[];
  skippedRealms?: SkippedRealm[] | null;
}

export interface PanelDreamsResult {
  runs: DreamSummaryRow[];
  withheldByAccess: boolean;
  realms: string[];
  skippedRealms?: SkippedRealm[] | null;
}

export interface PanelHarvestsResult {
  harvests: HarvestRow[];
  realms: string[];
  skippedRealms?: SkippedRealm[] | null;
}

export interface PanelInjectionsResult {
  injections: InjectionRow[];
  realms: string[];
  skippedRealms?: SkippedRealm[] | null;
}

export interface PanelOverviewResult {
  scopes: ScopeOverview[];
  totals: Totals;
  floors: Floors;
  realms: string[];
  skippedRealms?: SkippedRealm[] | null;
}

export interface PanelProposalRow {
  realm: string;
  proposalId: string;
  scopeKind: string;
  scopeKey: string;
  status: string;
  createdAtMs: number;
  author: Record<string, unknown>;
  kind: string | null;
  title: string;
  bodyBytes: number;
  tainted: boolean | null;
}

export interface PanelProposalsResult {
  proposals: PanelProposalRow[];
  realms: string[];
  skippedRealms?: SkippedRealm[] | null;
}

export interface PanelQuarantineResult {
  records: QuarantineRow[];
  nextCursor: string | null;
  pendingPromotions: PromotionRow[];
  pendingForgets: PendingForgetRow[];
  realms: string[];
  skippedRealms?: SkippedRealm[] | null;
}

/**
 * ``pending_forget``: present only when a held forget stands on the record and the caller may
 * review quarantined content of its scope.
 */
export interface PanelRecordResult {
  realm: string;
  record: RecordDetail;
  chain: ChainRow[];
  injections: InjectionRow[];
  pendingForget?: PendingForgetRow | null;
}

/** ``skipped_realms``: present only when a listing of every realm left a realm out. */
export interface PanelRecordsResult {
  records: RecordRow[];
  nextCursor: string | null;
  realms: string[];
  skippedRealms?: SkippedRealm[] | null;
}

export interface PendingForgetRow {
  realm: string;
  forgetId: string;
  memoryId: string;
  scopeKind: string;
  scopeKey: string;
  title: string;
  recordStatus: string;
  contentHash: string;
  requestedBy: unknown;
  reason: string | null;
  createdAtMs: number;
}

export interface Pressure {
  records: number;
  bytes: number;
  overFloor: boolean;
}

export interface PromotionRow {
  realm: string;
  pendingId: string;
  recordId: string;
  scopeKind: string;
  scopeKey: string;
  rationale: string | null;
  status: string;
  createdAtMs: number;
}

/** ``{proposal_id, status}``; an accept also names ``record_id``, ``created``, ``scope_kind``, ``scope_key``. */
export interface ProposalDecideResult {
  proposalId: string;
  status: "accepted" | "held" | "rejected";
  recordId?: string | null;
  created?: boolean | null;
  scopeKind?: string | null;
  scopeKey?: string | null;
}

export interface ProposalListRow {
  realm: string;
  proposalId: string;
  scopeKind: string;
  scopeKey: string;
  kind: string | null;
  title: string;
  author: Record<string, unknown>;
  status: string;
  createdAtMs: number;
  tainted: boolean | null;
}

export interface ProposalsListResult {
  proposals: ProposalListRow[];
}

/**
 * ``{kind, source_id?, session_key?}`` (``ToolProvenance.parse`` holds the rules: ``kind`` one of
 * ``PROVENANCE_KINDS`` in any case, another refused; ``session_key`` only with ``kind: "agent"`` and its
 * ``source_id``).
 */
export interface Provenance {
  /** the tool's owner: one of mcp, agent, builtin, function, memory (any case); another kind is refused, and the refusal taints the session */
  kind: string;
  sourceId?: string | null;
  sessionKey?: string | null;
}

/**
 * A quarantine-queue row: a record row plus the ``content_hash`` that
 * ``meta/memory/quarantine/decide``'s ``expected_content_hash`` binds to (``null`` from an embedder's
 * store that does not read it; ``meta/memory/panel/record`` then gives it).
 */
export interface QuarantineRow {
  id: string;
  scope: ScopeRef;
  kind: string;
  title: string;
  description: string;
  tags: string[];
  metadata?: Record<string, unknown>;
  provenance: Record<string, unknown>;
  trust: string;
  status: StatusRef;
  supersedes?: string | null;
  derivedFrom: string[];
  workingSetRank?: number | null;
  rankSetAtMs?: number | null;
  createdAtMs: number;
  updatedAtMs: number;
  tombstonedAtMs?: number | null;
  usage: Record<string, unknown>;
  everQuarantined: boolean;
  expiresAtMs?: number | null;
  bodyBytes: number;
  contentHash?: string | null;
}

/**
 * ``degraded_reason`` (present only then): why the provider answered with its fallback ranking (hybrid
 * recall: the lexical ranking alone; labels ``model_loading``, ``embedding_timeout``, ``embedder_busy``,
 * ``embedder_failed``, ``vector_search_timeout``, ``budget_spent``; a custom provider's own label).
 */
export interface RecallResult {
  records: WireRecord[];
  skipReason: "no_query_terms" | null;
  degradedReason?: string | null;
}

export interface Receipt {
  memoryId: string;
  scope: ScopeRef;
  kind: string;
  status: StatusRef;
  trust: string;
  everQuarantined: boolean;
  contentHash: string;
  supersedes?: string | null;
  derivedFrom: string[];
  createdAtMs: number;
  updatedAtMs: number;
}

export interface RecordDetail {
  id: string;
  scope: ScopeRef;
  kind: string;
  title: string;
  description: string;
  tags: string[];
  metadata?: Record<string, unknown>;
  provenance: Record<string, unknown>;
  trust: string;
  status: StatusRef;
  supersedes?: string | null;
  derivedFrom: string[];
  workingSetRank?: number | null;
  rankSetAtMs?: number | null;
  createdAtMs: number;
  updatedAtMs: number;
  tombstonedAtMs?: number | null;
  usage: Record<string, unknown>;
  everQuarantined: boolean;
  expiresAtMs?: number | null;
  bodyBytes: number;
  body: string;
  contentHash: string;
}

export interface RecordRow {
  id: string;
  scope: ScopeRef;
  kind: string;
  title: string;
  description: string;
  tags: string[];
  metadata?: Record<string, unknown>;
  provenance: Record<string, unknown>;
  trust: string;
  status: StatusRef;
  supersedes?: string | null;
  derivedFrom: string[];
  workingSetRank?: number | null;
  rankSetAtMs?: number | null;
  createdAtMs: number;
  updatedAtMs: number;
  tombstonedAtMs?: number | null;
  usage: Record<string, unknown>;
  everQuarantined: boolean;
  expiresAtMs?: number | null;
  bodyBytes: number;
}

/**
 * One record of ``meta/agent_memory/remember_batch``: title, body, tags?, ttl_s?, metadata? (shapes only;
 * the content rules, metadata's included, are the store's, applied per item so one bad record refuses only
 * itself).
 */
export interface RememberBatchItem {
  ttlS?: number | null;
  title: string;
  body: string;
  tags?: string[] | null;
  metadata?: Record<string, unknown> | null;
}

export interface RememberBatchResult {
  results: BatchItem[];
  created: number;
  existing: number;
  refused: number;
}

/**
 * ``created`` false: an active record with the same content existed; ``supersedes`` and
 * ``tags_added`` say whether the call's new tags were merged into a new version of it.
 */
export interface RememberResult {
  memoryId: string;
  title: string;
  body: string;
  tags: string[];
  metadata: Record<string, unknown>;
  createdAtMs: number;
  updatedAtMs: number;
  expiresAtMs: number | null;
  created: boolean;
  supersedes: string | null;
  tagsAdded: string[];
  quarantined?: string | null;
}

export interface RetireResult {
  realm: string;
  identity: string;
  sessionKey: string | null;
  cause: string;
  retiredAtMs: number;
  recorded: boolean;
}

export interface ScopeOverview {
  realm: string;
  scopeKind: string;
  scopeKey: string;
  counts: Record<string, number>;
  trust?: Record<string, number> | null;
  records: number;
  bodyBytes: number;
  floorRecords: number;
  floorBytes: number;
  pressure: Pressure;
  quarantinedContentWithheld: boolean;
  recordLimit?: number | null;
}

/** ``{scope: identity|mob|operator|realm, realm, identity? | mob? | operator?}`` (the key named by ``scope``). */
export interface ScopeRef {
  scope: "identity" | "mob" | "operator" | "realm";
  realm: string;
  identity?: string | null;
  mob?: string | null;
  operator?: string | null;
}

export interface SessionResult {
  identity: string;
  sessionKey: string | null;
  tainted: boolean;
  derivedTainted?: boolean;
}

/**
 * A realm a listing of every realm left out because it cannot be read now: ``reason`` is ``corrupt``
 * (damaged or not a database), ``io`` (cannot be opened) or ``invalid_name`` (a name that breaks the
 * realm-name rule, left by an older version); ``message`` says why and what to do.
 */
export interface SkippedRealm {
  realm: string;
  reason: string;
  message: string;
}

export interface Slot {
  slot: string;
  path: string;
  durability: string;
  resolution: string;
  exists: boolean;
}

/** ``{status, by?, reason?}``: ``by`` the successor of a superseded record, ``reason`` a quarantine's. */
export interface StatusRef {
  status: "active" | "quarantined" | "superseded" | "tombstoned";
  by?: string | null;
  reason?: string | null;
}

/** ``meta/status``. ``ledger.evicted`` counts assertions the 4,096 cap dropped since start. */
export interface StatusResult {
  version: string;
  stateDir: string | null;
  ledger: LedgerStatus;
  storage: StorageStatus;
  agentMemory: AgentMemoryStatus;
  events: EventsStatus;
}

export interface StorageStatus {
  slots: Slot[];
}

export interface StoresResult {
  stores: MemoryStoreInfo[];
}

export interface ToolCallResult {
  text: string;
  isError: boolean;
  excludeFromIndexing: true;
}

export interface ToolResultVerdict {
  trusted: boolean;
  source?: string | null;
  sessionTainted: boolean;
}

export interface ToolSchemaResult {
  name: "memory";
  description: string;
  inputSchema: Record<string, unknown>;
  protocol: string;
}

export interface Totals {
  records: number;
  bodyBytes: number;
  counts: Record<string, number>;
  trust?: Record<string, number> | null;
}

export interface UnlistedTool {
  name: string;
  count: number;
}

/**
 * ``supersedes`` is ``None`` when the update changed nothing: ``memory_id`` and ``record`` are then the
 * current version's, and nothing was written.
 */
export interface UpdateResult {
  memoryId: string;
  supersedes: string | null;
  record: WireRecord;
}

export interface WireRecord {
  memoryId: string;
  title: string;
  body: string;
  tags: string[];
  metadata: Record<string, unknown>;
  createdAtMs: number;
  updatedAtMs: number;
  expiresAtMs: number | null;
}

/** `meta/agent_memory/erase` params. */
export interface AgentMemoryEraseParams {
  /** the realm (default: the gateway's [agent_memory] realm) */
  realm?: string;
  /** the identity (no whitespace at either end; rt:<id>:<generation> names <id>) */
  identity: string;
  dryRun?: boolean;
  reason?: string | null;
  memoryId: string;
}

/** `meta/agent_memory/erase_identity` params. */
export interface AgentMemoryEraseIdentityParams {
  /** the realm (default: the gateway's [agent_memory] realm) */
  realm?: string;
  /** the identity (no whitespace at either end; rt:<id>:<generation> names <id>) */
  identity: string;
  dryRun?: boolean;
  reason?: string | null;
}

/** `meta/agent_memory/forget` params. */
export interface AgentMemoryForgetParams {
  /** the realm (default: the gateway's [agent_memory] realm) */
  realm?: string;
  /** the identity (no whitespace at either end; rt:<id>:<generation> names <id>) */
  identity: string;
  memoryId: string;
}

/** `meta/agent_memory/history` params. */
export interface AgentMemoryHistoryParams {
  /** the realm (default: the gateway's [agent_memory] realm) */
  realm?: string;
  /** the identity (no whitespace at either end; rt:<id>:<generation> names <id>) */
  identity: string;
  memoryId: string;
}

/** `meta/agent_memory/list` params. */
export interface AgentMemoryListParams {
  /** the realm (default: the gateway's [agent_memory] realm) */
  realm?: string;
  /** the identity (no whitespace at either end; rt:<id>:<generation> names <id>) */
  identity: string;
  filter?: Record<string, unknown> | null;
  tags?: string[] | null;
  limit?: unknown;
  cursor?: string | null;
}

/** `meta/agent_memory/manifest` params. */
export interface AgentMemoryManifestParams {
  /** the realm (default: the gateway's [agent_memory] realm) */
  realm?: string;
  /** the identity (no whitespace at either end; rt:<id>:<generation> names <id>) */
  identity: string;
  tier?: "working_set" | "full" | null;
  k?: unknown;
}

/** `meta/agent_memory/recall` params. */
export interface AgentMemoryRecallParams {
  /** the realm (default: the gateway's [agent_memory] realm) */
  realm?: string;
  /** the identity (no whitespace at either end; rt:<id>:<generation> names <id>) */
  identity: string;
  filter?: Record<string, unknown> | null;
  selection?: string | null;
  queryText?: string | null;
  queryTerms?: string[] | null;
  maxEntries?: unknown;
}

/** `meta/agent_memory/remember` params. */
export interface AgentMemoryRememberParams {
  derivedFromSessions?: string[] | null;
  ttlS?: number | null;
  /** the realm (default: the gateway's [agent_memory] realm) */
  realm?: string;
  /** the identity (no whitespace at either end; rt:<id>:<generation> names <id>) */
  identity: string;
  title: string;
  body: string;
  tags?: string[] | null;
  metadata?: Record<string, unknown> | null;
}

/** `meta/agent_memory/remember_batch` params. */
export interface AgentMemoryRememberBatchParams {
  derivedFromSessions?: string[] | null;
  /** the realm (default: the gateway's [agent_memory] realm) */
  realm?: string;
  /** the identity (no whitespace at either end; rt:<id>:<generation> names <id>) */
  identity: string;
  records: RememberBatchItem[];
}

/** `meta/agent_memory/tool` params. */
export interface AgentMemoryToolParams {
  /** the realm (default: the gateway's [agent_memory] realm) */
  realm?: string;
  /** the identity (no whitespace at either end; rt:<id>:<generation> names <id>) */
  identity: string;
  sessionKey?: string;
  mob?: string | null;
  arguments: Record<string, unknown>;
}

/** `meta/agent_memory/tool_schema` params. */
export type AgentMemoryToolSchemaParams = Record<string, never>;

/** `meta/agent_memory/update` params. */
export interface AgentMemoryUpdateParams {
  ttlS?: number | null;
  /** the realm (default: the gateway's [agent_memory] realm) */
  realm?: string;
  /** the identity (no whitespace at either end; rt:<id>:<generation> names <id>) */
  identity: string;
  memoryId: string;
  title?: string | null;
  body?: string | null;
  tags?: string[] | null;
  clearExpiry?: boolean;
  metadata?: Record<string, unknown> | null;
}

/** `meta/capabilities` params. */
export type CapabilitiesParams = Record<string, never>;

/** `meta/events/list` params. */
export interface EventsListParams {
  after?: string | number | null;
  limit?: number;
}

/** `meta/gating/check` params. */
export interface GatingCheckParams {
  entity: string;
  topic: string;
  store?: string;
}

/** `meta/gating/decide` params. */
export interface GatingDecideParams {
  /** the realm (default: the gateway's [agent_memory] realm) */
  realm?: string;
  pendingId: string;
  decision: "approve" | "deny";
}

/** `meta/memory/index` params. */
export interface MemoryIndexParams {
  entity: string;
  topic: string;
  store?: string | null;
  fact?: string | null;
  metadata?: Record<string, unknown> | null;
  conflict?: boolean | null;
  conflictReason?: string | null;
}

/** `meta/memory/panel/audit_verdicts` params. */
export interface MemoryPanelAuditVerdictsParams {
  realm?: string | null;
  limit?: number | null;
}

/** `meta/memory/panel/dream_runs` params. */
export interface MemoryPanelDreamRunsParams {
  realm?: string | null;
  limit?: number | null;
}

/** `meta/memory/panel/dreams` params. */
export interface MemoryPanelDreamsParams {
  realm?: string | null;
  limit?: number | null;
}

/** `meta/memory/panel/harvests` params. */
export interface MemoryPanelHarvestsParams {
  realm?: string | null;
  limit?: number | null;
}

/** `meta/memory/panel/injections` params. */
export interface MemoryPanelInjectionsParams {
  realm?: string | null;
  limit?: number | null;
}

/** `meta/memory/panel/overview` params. */
export interface MemoryPanelOverviewParams {
  realm?: string | null;
}

/** `meta/memory/panel/proposals` params. */
export interface MemoryPanelProposalsParams {
  realm?: string | null;
  limit?: number | null;
}

/** `meta/memory/panel/quarantine` params. */
export interface MemoryPanelQuarantineParams {
  realm?: string | null;
  limit?: number | null;
  cursor?: string | null;
}

/** `meta/memory/panel/record` params. */
export interface MemoryPanelRecordParams {
  realm?: string | null;
  memoryId: string;
}

/** `meta/memory/panel/records` params. */
export interface MemoryPanelRecordsParams {
  realm?: string | null;
  limit?: number | null;
  scope?: string | null;
  identity?: string | null;
  scopeKey?: string | null;
  status?: string | null;
  query?: string | null;
  cursor?: string | null;
}

/** `meta/memory/proposals/decide` params. */
export interface MemoryProposalsDecideParams {
  /** at most 400 bytes */
  rationale?: string;
  /** the realm (default: the gateway's [agent_memory] realm) */
  realm?: string;
  proposalId: string;
  action: "accept" | "hold" | "reject";
}

/** `meta/memory/proposals/list` params. */
export interface MemoryProposalsListParams {
  /** the realm (default: the gateway's [agent_memory] realm) */
  realm?: string;
  status?: "pending" | "held" | "accepted" | "rejected";
  limit?: number;
}

/** `meta/memory/quarantine/decide` params. */
export interface MemoryQuarantineDecideParams {
  /** at most 400 bytes */
  rationale?: string;
  /** the realm (default: the gateway's [agent_memory] realm) */
  realm?: string;
  /** the identity whose record is reviewed */
  identity: string;
  memoryId: string;
  verdict: "release" | "tombstone";
  /** the content_hash of the record as reviewed: 64 lowercase hexadecimal characters */
  expectedContentHash: string;
}

/** `meta/memory/query` params. */
export interface MemoryQueryParams {
  entity?: string | null;
  topic?: string | null;
  store?: string | null;
  query?: string | null;
}

/** `meta/memory/resolve` params. */
export interface MemoryResolveParams {
  entity: string;
  topic: string;
  store?: string | null;
}

/** `meta/memory/steward/dream` params. */
export interface MemoryStewardDreamParams {
  /** the realm (default: the gateway's [agent_memory] realm) */
  realm?: string;
}

/** `meta/memory/stores` params. */
export type MemoryStoresParams = Record<string, never>;

/** `meta/session/compacted` params. */
export interface SessionCompactedParams {
  /** the realm (default: the gateway's [agent_memory] realm) */
  realm?: string;
  /** the identity (no whitespace at either end; rt:<id>:<generation> names <id>) */
  identity: string;
  sessionKey: string;
}

/** `meta/session/note` params. */
export interface SessionNoteParams {
  /** the realm (default: the gateway's [agent_memory] realm) */
  realm?: string;
  /** the identity (no whitespace at either end; rt:<id>:<generation> names <id>) */
  identity: string;
  sessionKey: string;
  toolResults?: "reported" | "unreported";
}

/** `meta/session/reset` params. */
export interface SessionResetParams {
  /** the realm (default: the gateway's [agent_memory] realm) */
  realm?: string;
  /** the identity (no whitespace at either end; rt:<id>:<generation> names <id>) */
  identity: string;
  sessionKey?: string;
}

/** `meta/session/retire` params. */
export interface SessionRetireParams {
  /** the realm (default: the gateway's [agent_memory] realm) */
  realm?: string;
  /** the identity (no whitespace at either end; rt:<id>:<generation> names <id>) */
  identity: string;
  sessionKey?: string;
  /** at most 400 bytes */
  cause: string;
}

/** `meta/status` params. */
export type StatusParams = Record<string, never>;

/** `meta/storage/backup` params. */
export interface StorageBackupParams {
  /** path of a new directory inside [gateway] backup_dir: absolute, or relative to backup_dir */
  dest: string;
}

/** `meta/storage/doctor` params. */
export type StorageDoctorParams = Record<string, never>;

/** `meta/storage/export` params. */
export interface StorageExportParams {
  exportId?: string | null;
  realm?: string;
  identity?: string;
  ledger?: boolean | null;
  maxBytes?: number;
}

/** `meta/turn/defang` params. */
export interface TurnDefangParams {
  text?: string | null;
  blocks?: unknown[] | null;
}

/** `meta/turn/inject` params. */
export interface TurnInjectParams {
  /** the realm (default: the gateway's [agent_memory] realm) */
  realm?: string;
  /** the identity (no whitespace at either end; rt:<id>:<generation> names <id>) */
  identity: string;
  sessionKey?: string;
  queryText?: string;
  surface?: "turn" | "build";
  mobs?: string[];
  operator?: string | null;
}

/** `meta/turn/tool_result` params. */
export interface TurnToolResultParams {
  /** the realm (default: the gateway's [agent_memory] realm) */
  realm?: string;
  /** the identity (no whitespace at either end; rt:<id>:<generation> names <id>) */
  identity: string;
  sessionKey: string;
  toolName: string;
  provenance?: Provenance | null;
  isError?: boolean;
  serverTool?: boolean;
}

/** `rpc.discover` params. */
export type RpcDiscoverParams = Record<string, never>;

/** Every wire method: its params and its result. */
export interface WireMethods {
  "meta/agent_memory/erase": { params: AgentMemoryEraseParams; result: EraseResult };
  "meta/agent_memory/erase_identity": { params: AgentMemoryEraseIdentityParams; result: EraseResult };
  "meta/agent_memory/forget": { params: AgentMemoryForgetParams; result: ForgetResult };
  "meta/agent_memory/history": { params: AgentMemoryHistoryParams; result: HistoryResult };
  "meta/agent_memory/list": { params: AgentMemoryListParams; result: ListResult };
  "meta/agent_memory/manifest": { params: AgentMemoryManifestParams; result: ManifestResult };
  "meta/agent_memory/recall": { params: AgentMemoryRecallParams; result: RecallResult };
  "meta/agent_memory/remember": { params: AgentMemoryRememberParams; result: RememberResult };
  "meta/agent_memory/remember_batch": { params: AgentMemoryRememberBatchParams; result: RememberBatchResult };
  "meta/agent_memory/tool": { params: AgentMemoryToolParams; result: ToolCallResult };
  "meta/agent_memory/tool_schema": { params: AgentMemoryToolSchemaParams; result: ToolSchemaResult };
  "meta/agent_memory/update": { params: AgentMemoryUpdateParams; result: UpdateResult };
  "meta/capabilities": { params: CapabilitiesParams; result: CapabilitiesResult };
  "meta/events/list": { params: EventsListParams; result: EventsListResult };
  "meta/gating/check": { params: GatingCheckParams; result: GatingCheckResult };
  "meta/gating/decide": { params: GatingDecideParams; result: GatingDecideResult };
  "meta/memory/index": { params: MemoryIndexParams; result: MemoryIndexResult };
  "meta/memory/panel/audit_verdicts": { params: MemoryPanelAuditVerdictsParams; result: PanelAuditVerdictsResult };
  "meta/memory/panel/dream_runs": { params: MemoryPanelDreamRunsParams; result: PanelDreamRunsResult };
  "meta/memory/panel/dreams": { params: MemoryPanelDreamsParams; result: PanelDreamsResult };
  "meta/memory/panel/harvests": { params: MemoryPanelHarvestsParams; result: PanelHarvestsResult };
  "meta/memory/panel/injections": { params: MemoryPanelInjectionsParams; result: PanelInjectionsResult };
  "meta/memory/panel/overview": { params: MemoryPanelOverviewParams; result: PanelOverviewResult };
  "meta/memory/panel/proposals": { params: MemoryPanelProposalsParams; result: PanelProposalsResult };
  "meta/memory/panel/quarantine": { params: MemoryPanelQuarantineParams; result: PanelQuarantineResult };
  "meta/memory/panel/record": { params: MemoryPanelRecordParams; result: PanelRecordResult };
  "meta/memory/panel/records": { params: MemoryPanelRecordsParams; result: PanelRecordsResult };
  "meta/memory/proposals/decide": { params: MemoryProposalsDecideParams; result: ProposalDecideResult };
  "meta/memory/proposals/list": { params: MemoryProposalsListParams; result: ProposalsListResult };
  "meta/memory/quarantine/decide": { params: MemoryQuarantineDecideParams; result: DecideResult };
  "meta/memory/query": { params: MemoryQueryParams; result: MemoryQueryResult };
  "meta/memory/resolve": { params: MemoryResolveParams; result: MemoryResolveResult };
  "meta/memory/steward/dream": { params: MemoryStewardDreamParams; result: DreamResult };
  "meta/memory/stores": { params: MemoryStoresParams; result: StoresResult };
  "meta/session/compacted": { params: SessionCompactedParams; result: CompactedResult };
  "meta/session/note": { params: SessionNoteParams; result: SessionResult };
  "meta/session/reset": { params: SessionResetParams; result: SessionResult };
  "meta/session/retire": { params: SessionRetireParams; result: RetireResult };
  "meta/status": { params: StatusParams; result: StatusResult };
  "meta/storage/backup": { params: StorageBackupParams; result: BackupResult };
  "meta/storage/doctor": { params: StorageDoctorParams; result: DoctorResult };
  "meta/storage/export": { params: StorageExportParams; result: ExportPageResult };
  "meta/turn/defang": { params: TurnDefangParams; result: DefangResult };
  "meta/turn/inject": { params: TurnInjectParams; result: InjectResult };
  "meta/turn/tool_result": { params: TurnToolResultParams; result: ToolResultVerdict };
  "rpc.discover": { params: RpcDiscoverParams; result: Record<string, unknown> };
}

/** The wire method names, sorted. */
export const WIRE_METHODS = [
  "meta/agent_memory/erase",
  "meta/agent_memory/erase_identity",
  "meta/agent_memory/forget",
  "meta/agent_memory/history",
  "meta/agent_memory/list",
  "meta/agent_memory/manifest",
  "meta/agent_memory/recall",
  "meta/agent_memory/remember",
  "meta/agent_memory/remember_batch",
  "meta/agent_memory/tool",
  "meta/agent_memory/tool_schema",
  "meta/agent_memory/update",
  "meta/capabilities",
  "meta/events/list",
  "meta/gating/check",
  "meta/gating/decide",
  "meta/memory/index",
  "meta/memory/panel/audit_verdicts",
  "meta/memory/panel/dream_runs",
  "meta/memory/panel/dreams",
  "meta/memory/panel/harvests",
  "meta/memory/panel/injections",
  "meta/memory/panel/overview",
  "meta/memory/panel/proposals",
  "meta/memory/panel/quarantine",
  "meta/memory/panel/record",
  "meta/memory/panel/records",
  "meta/memory/proposals/decide",
  "meta/memory/proposals/list",
  "meta/memory/quarantine/decide",
  "meta/memory/query",
  "meta/memory/resolve",
  "meta/memory/steward/dream",
  "meta/memory/stores",
  "meta/session/compacted",
  "meta/session/note",
  "meta/session/reset",
  "meta/session/retire",
  "meta/status",
  "meta/storage/backup",
  "meta/storage/doctor",
  "meta/storage/export",
  "meta/turn/defang",
  "meta/turn/inject",
  "meta/turn/tool_result",
  "rpc.discover",
] as const;

/** A wire method name. */
export type WireMethod = keyof WireMethods;
/** The params of a wire method (camelCase keys). */
export type ParamsOf<M extends WireMethod> = WireMethods[M]["params"];
/** The result of a wire method (camelCase keys). */
export type ResultOf<M extends WireMethod> = WireMethods[M]["result"];

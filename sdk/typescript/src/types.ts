/**
 * Params and results of the gateway's methods, TypeScript side (camelCase).
 *
 * The handle converts keys to the wire's snake_case and back (see `case.ts`);
 * `metadata`, `arguments`, `blocks`, `inputSchema` and `opKinds` are opaque JSON and
 * keep their keys as given. Timestamps are UTC epoch milliseconds. Result
 * interfaces list the members the gateway documents; extra members it adds are
 * kept on the object (index signature) rather than dropped.
 */

/** Any JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Members the gateway may add beyond those typed. */
export interface Open {
  [key: string]: unknown;
}

// ---------------------------------------------------------------- assertion ledger

/** The five ledger stores, in their fixed order. */
export type LedgerStore = "knowledge_graph" | "vector" | "timeline" | "todo" | "top_of_mind";

/** `meta/memory/index` (seed: Indexing). `fact` is required unless `conflict` is true. */
export interface MemoryIndexParams {
  entity: string;
  topic: string;
  /** Default `knowledge_graph`; trimmed and ASCII-lowercased; must be a supported store. */
  store?: string;
  fact?: string;
  /** Opaque JSON object kept on the assertion. */
  metadata?: Record<string, unknown>;
  conflict?: boolean;
  conflictReason?: string;
}

export interface MemoryIndexResult extends Open {
  entity: string;
  topic: string;
  store: string;
  /** `null` for a conflict-only write. */
  assertionId: string | null;
  /** A conflict signal exists for this entity and topic (any store). */
  conflictActive: boolean;
}

/** `meta/memory/query` (seed: Querying): exact filters plus a case-insensitive substring `query`. */
export interface MemoryQueryParams {
  entity?: string;
  topic?: string;
  store?: string;
  query?: string;
}

export interface MemoryAssertion extends Open {
  assertionId: string;
  entity: string;
  topic: string;
  store: string;
  fact: string;
  metadata: Record<string, unknown> | null;
  indexedAtMs: number;
}

export interface MemoryConflictSignal extends Open {
  entity: string;
  topic: string;
  store: string;
  reason: string | null;
  updatedAtMs: number;
}

export interface MemoryQueryResult extends Open {
  assertions: MemoryAssertion[];
  conflicts: MemoryConflictSignal[];
}

export interface MemoryStoreInfo extends Open {
  store: string;
  recordCount: number;
}

// ---------------------------------------------------------------- agent memory

interface IdentityScoped {
  /** The agent identity (trimmed; roster ids `rt:<id>:<n>` name the logical identity `<id>`). */
  identity: string;
  /** Default `"default"`. */
  realm?: string;
}

/** `meta/agent_memory/remember`: title <= 200 bytes, body <= 65,536 bytes, <= 32 tags of <= 64 bytes. */
export interface RememberParams extends IdentityScoped, DerivedFromSessions {
  title: string;
  body: string;
  tags?: string[];
  /**
   * Seconds (an integer, 1..`[agent_memory] max_ttl_s`) until the record expires: from then on it is not
   * recalled, injected, listed or exported as active, and a sweep tombstones it. Over the cap: -32602.
   */
  ttlS?: number;
}

/**
 * A host's own write of content derived from sessions (its LLM's summary, notes): 1..64 session keys of the
 * identity in the call's realm. Kept as provenance; the write lands quarantined (`quarantined` holds the
 * reason) when one of them is tainted or was tainted when a reset closed it. Needs `agent.session.manage` on
 * the identity as well as `agent.memory.write`.
 */
export interface DerivedFromSessions {
  derivedFromSessions?: string[];
}

/** A record as recall and remember return it. */
export interface AgentMemoryRecord extends Open {
  memoryId: string;
  title: string;
  body: string;
  tags: string[];
  createdAtMs: number;
  updatedAtMs: number;
  /** When the record expires (epoch ms, UTC); `null` when it never does. */
  expiresAtMs?: number | null;
}

/** `remember`'s result: the record, and whether it was written (`false`: an exact duplicate was returned). */
export interface RememberResult extends AgentMemoryRecord {
  created?: boolean;
  /** Set when a duplicate remember merged new tags into a new version: the id it replaced. */
  supersedes?: string | null;
  /** The tags such a merge added (empty otherwise). */
  tagsAdded?: string[];
  /** Only with `derivedFromSessions` naming a tainted session: why the record waits in quarantine. */
  quarantined?: string;
}

/**
 * `meta/agent_memory/remember_batch`: 1..1,024 records and at most 4 MiB of title, body and tag text
 * together, all committed in one transaction; each record is what `remember` would write.
 */
export interface RememberBatchParams extends IdentityScoped, DerivedFromSessions {
  records: { title: string; body: string; tags?: string[]; ttlS?: number }[];
}

/**
 * One record's result: `memoryId` and `created` (`false`: an exact duplicate), or the `error` refusing it
 * alone. A duplicate bringing new tags is merged as `remember` merges it: a new version whose
 * `supersedes` names the record it replaced, with the `tagsAdded`.
 */
export interface RememberBatchItem extends Open {
  opIndex: number;
  memoryId?: string;
  created?: boolean;
  supersedes?: string | null;
  tagsAdded?: string[];
  /** As `RememberResult.quarantined`. */
  quarantined?: string;
  /** The record's expiry (epoch ms; `null`: never). */
  expiresAtMs?: number | null;
  error?: { code: number; message: string; data?: Open };
}

/** `remember_batch`'s result: one item per record, in order, and the counts. */
export interface RememberBatchResult extends Open {
  results: RememberBatchItem[];
  created: number;
  existing: number;
  refused: number;
}

/** `meta/agent_memory/recall`: `selection` `contextual` (default) or `always`; `maxEntries` 1..64. */
export interface RecallParams extends IdentityScoped {
  selection?: "contextual" | "always";
  queryText?: string;
  queryTerms?: string[];
  maxEntries?: number;
}

export interface ForgetParams extends IdentityScoped {
  memoryId: string;
}

export interface ForgetResult extends Open {
  memoryId: string;
  deleted: boolean;
}

/**
 * Omitted `title`, `body` or `tags` keep the prior version's value (at least one of them, `ttlS` or
 * `clearExpiry: true` is required). The new version keeps the prior's expiry unless `ttlS` sets a new one
 * (seconds from now) or `clearExpiry: true` removes it; both together are refused. An expired record is
 * not active and cannot be updated.
 */
export interface UpdateParams extends IdentityScoped {
  memoryId: string;
  title?: string;
  body?: string;
  tags?: string[];
  ttlS?: number;
  clearExpiry?: boolean;
}

export interface UpdateResult extends Open {
  /** The new version's id. */
  memoryId: string;
  /** The id it replaced. */
  supersedes: string;
  record?: AgentMemoryRecord;
}

/** `meta/agent_memory/list`: every tag must be held; `limit` 1..500 (default 100). */
export interface ListParams extends IdentityScoped {
  tags?: string[];
  limit?: number;
  cursor?: string;
}

/** `meta/agent_memory/history`: `memoryId` names any version of one of the identity's records. */
export interface HistoryParams extends IdentityScoped {
  memoryId: string;
}

/** Who wrote a version or a change: `author` (operator|application|agent|steward|distiller), the
 * agent's `identity` or the steward's `runId` (an operator's principal is not shown). */
export interface HistoryAuthor extends Open {
  author: string;
  identity?: string;
  runId?: string;
}

/** One change of a version (`atMs` UTC epoch ms; `by` null for an erased version). */
export interface HistoryChange extends Open {
  change:
    | "created" | "import" | "update" | "tag_merge" | "release" | "promotion"
    | "forget" | "forget_released" | "tombstone" | "retier" | "rank" | "erase";
  atMs: number;
  by: HistoryAuthor | null;
}

/** One version of a record. `reason` is the change that wrote it; `withheld` `"quarantined"`
 * (quarantined content) or `"erased"` leaves `title`, `body` and `tags` null. */
export interface RecordVersion extends Open {
  memoryId: string;
  status: "active" | "quarantined" | "superseded" | "tombstoned" | "erased";
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
  changes: HistoryChange[];
}

/** `meta/agent_memory/history`: every version, oldest first (at most 200; `truncated` when more). */
export interface RecordHistory extends Open {
  memoryId: string;
  order: "oldest_first";
  versions: RecordVersion[];
  truncated: boolean;
}

/** `meta/agent_memory/erase_identity`: `dry_run` only counts what would go. */
export interface EraseIdentityParams extends IdentityScoped {
  dry_run?: boolean;
  reason?: string;
}

/** `meta/agent_memory/erase`: a record and its content closure, for good. */
export interface EraseParams extends EraseIdentityParams {
  memory_id: string;
}

/** One page of `meta/agent_memory/list`; `next_cursor` is null at the end. */
export interface AgentMemoryPage extends Open {
  records: AgentMemoryRecord[];
  next_cursor: string | null;
}

/** `meta/agent_memory/manifest`: `tier` `working_set` (default; `k` 1..512) or `full`. */
export interface ManifestParams extends IdentityScoped {
  tier?: "working_set" | "full";
  k?: number;
}

/** Body-free metadata of one active record. */
export interface AgentMemoryRecordMeta extends Open {
  id: string;
  kind: string;
  title: string;
  description: string;
  ageDays: number;
  rank: number | null;
}

// ---------------------------------------------------------------- host surface

export interface SessionNoteParams {
  identity: string;
  sessionKey: string;
  realm?: string;
  /** `"unreported"`: this session's tool results never reach `turnToolResult`; it counts as tainted. */
  toolResults?: "reported" | "unreported";
}

export interface SessionResetParams {
  identity: string;
  sessionKey?: string;
  realm?: string;
}

/** Compaction of one identity's session (the identity is required: session state is per identity). */
export interface SessionCompactedParams {
  identity: string;
  sessionKey: string;
  realm?: string;
}

export interface SessionState extends Open {
  identity?: string;
  sessionKey?: string | null;
  tainted: boolean;
}

/** Where a tool came from (typed MCP provenance uses `sourceId` as the server name). */
export interface ToolProvenance {
  kind: string;
  sourceId?: string;
}

/** `meta/turn/tool_result`: classify a tool result before the model sees it. */
export interface ToolResultParams {
  identity: string;
  sessionKey: string;
  toolName: string;
  provenance?: ToolProvenance;
  isError?: boolean;
  /** A provider-native server-tool block (always untrusted). */
  serverTool?: boolean;
  realm?: string;
}

export interface ToolResultVerdict extends Open {
  trusted: boolean;
  /** Why the content is untrusted (only when untrusted). */
  source?: string;
  sessionTainted: boolean;
}

/** `meta/turn/inject`: the observation block for a turn (`surface: "turn"`) or a build. */
export interface InjectParams {
  identity: string;
  realm?: string;
  sessionKey?: string;
  queryText?: string;
  surface?: "turn" | "build";
  mobs?: string[];
  operator?: string;
}

export interface InjectResult extends Open {
  /** The quoted observation block, or `null` with a `skipReason`. */
  text: string | null;
  skipReason: string | null;
  includedIds: string[];
  renderedBytes: number;
  surface: "turn" | "build";
}

/** `meta/turn/defang`: exactly one of `text` or `blocks`. */
export interface DefangParams {
  text?: string;
  blocks?: unknown[];
}

export interface DefangResult extends Open {
  text?: string;
  blocks?: unknown[];
  hits: number;
}

/**
 * `meta/agent_memory/tool`: one `memory` tool call, an LLM-authored write gated by the firewall.
 * It acts in `realm` (default: the gateway's `[agent_memory] realm`): the gate reads the session's
 * taint there and the write, held forget or proposal lands there. Pass the realm the session was
 * noted and its tool results reported in.
 */
export interface MemoryToolParams {
  identity: string;
  sessionKey?: string;
  realm?: string;
  mob?: string;
  /** The model's tool arguments, verbatim (`{action: "remember", title, body, ...}`). */
  arguments: Record<string, unknown>;
}

/** The tool result to hand back to the model. */
export interface MemoryToolResult extends Open {
  text: string;
  isError: boolean;
  excludeFromIndexing: boolean;
}

/** The `memory` tool definition for a host to offer its model. */
export interface MemoryToolSchema extends Open {
  name: string;
  description: string;
  /** A JSON Schema, verbatim. */
  inputSchema: Record<string, unknown>;
  /** The recorder protocol instructions. */
  protocol?: string;
}

// ---------------------------------------------------------------- system

export interface Capabilities extends Open {
  /** Every method advertised on this gateway, sorted. */
  methods: string[];
  memory: { canRead: boolean };
}

export interface StorageSlot extends Open {
  slot: string;
  path: string;
  durability: string;
  resolution: string;
  exists: boolean;
}

/**
 * `meta/status` `agentMemory.vectorBacklog`: whether hybrid ranking is complete. `pending` counts
 * active records without a vector yet (ranked lexically until it lands), per realm in `realms`.
 * Lexical recall: `provider: "lexical"`, `pending: 0`, `complete: true` and a `reason`.
 * To wait for it, poll `status()` until `complete` is true.
 */
export interface VectorBacklog extends Open {
  provider: "lexical" | "hybrid";
  pending: number;
  realms: { realm: string; pending: number }[];
  complete: boolean;
  model?: string;
  indexing?: boolean;
  embedded?: number;
  lastError?: string | null;
  reason?: string;
}

export interface Status extends Open {
  version: string;
  stateDir: string | null;
  ledger: Open;
  storage: { slots: StorageSlot[] } & Open;
  /** Absent members are open; `vectorBacklog` is there whenever agent memory is enabled. */
  agentMemory?: { enabled: boolean; vectorBacklog?: VectorBacklog } & Open;
}

/** `meta/storage/backup` (grant `operator.backup`): a new directory on the gateway's machine, inside its
 * `[gateway] backup_dir`. */
export interface StorageBackupParams {
  dest: string;
}

export interface StorageBackupResult extends Open {
  dest: string;
  /** The consistency point (UTC epoch ms): every write acknowledged before it is in the copy. */
  began_at_ms: number;
  files: { path: string; kind: "sqlite" | "ledger" | "file"; bytes: number }[];
  bytes: number;
  /** Stores the directory does not hold (`"postgres"`: back them up with pg_dump). */
  elsewhere: string[];
  seconds: number;
}

/** `meta/storage/export` (grant `operator.backup`): start an export (`realm`, `identity`, `ledger`), then
 * fetch its pages by `export_id` alone until `done`. */
export interface StorageExportParams {
  export_id?: string;
  realm?: string;
  identity?: string;
  ledger?: boolean;
  /** 65,536..8,388,608 bytes a page, default 1 MiB. */
  max_bytes?: number;
}

export interface StorageExportPage extends Open {
  export_id: string;
  /** Lines of the export file, each one JSON object, without its newline. */
  lines: string[];
  done: boolean;
}

export interface EventsListParams {
  /** An event id (`console-evt-<n>`) or a sequence number. */
  after?: string | number;
  /** 1..1000, default 100. */
  limit?: number;
}

export interface TimelineEvent extends Open {
  eventId: string;
  identity: string;
  eventType: string;
  timestampMs: number;
  data: Open;
}

export interface EventsListResult extends Open {
  events: TimelineEvent[];
  lastEventId: string | null;
}

// ---------------------------------------------------------------- review

/** `meta/memory/quarantine/decide` (seed: Reviewing quarantined records). */
export interface QuarantineDecideParams {
  identity: string;
  realm?: string;
  memoryId: string;
  verdict: "release" | "tombstone";
  /** The `content_hash` of the record as it was reviewed. */
  expectedContentHash: string;
  /** At most 400 bytes. */
  rationale?: string;
}

/** `meta/gating/decide`: approve or deny a gated promotion. */
export interface GatingDecideParams {
  realm?: string;
  pendingId: string;
  decision: "approve" | "deny";
}

/** `meta/gating/check`: is there an active conflict for this entity/topic? */
export interface GatingCheckParams {
  entity: string;
  topic: string;
  store?: string;
}

export interface RealmParams {
  realm?: string;
}

/** `meta/session/retire`: a session ends (`cause` at most 400 bytes). */
export interface SessionRetireParams {
  identity: string;
  realm?: string;
  sessionKey?: string;
  cause: string;
}

export interface ProposalListParams {
  realm?: string;
  status?: "pending" | "held" | "accepted" | "rejected";
  limit?: number;
}

export interface ProposalDecideParams {
  realm?: string;
  proposalId: string;
  action: "accept" | "hold" | "reject";
  rationale?: string;
}

// ---------------------------------------------------------------- console memory panel

/** Common panel filters; the panel methods accept the subset they document. */
export interface PanelParams {
  realm?: string;
  scope?: "identity" | "mob" | "operator" | "realm";
  identity?: string;
  scopeKey?: string;
  status?: "active" | "quarantined" | "superseded" | "tombstoned";
  /** `records` only: every whitespace-separated word must occur (any case) in the title, description, body or tags. */
  query?: string;
  limit?: number;
  /** `<updated_at_ms>:<memory_id>` from a previous page's `nextCursor`. */
  cursor?: string;
  [key: string]: unknown;
}

export interface PanelRecordParams {
  memoryId: string;
  realm?: string;
}

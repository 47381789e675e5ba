/**
 * Params and results of the gateway's methods, TypeScript side (camelCase).
 *
 * Every shape here is the generated wire type (`wire.ts`, built from the gateway's `rpc.discover`,
 * whose result models the gateway holds every answer to): these are the SDK's names for them, never a
 * second copy. A result is opened (`& Open`): members a newer gateway adds are kept on the object rather
 * than dropped. A params type narrows, by name, the few members the wire document types only loosely
 * (`Narrow`), e.g. `selection` to its two values.
 *
 * The handle converts keys to the wire's snake_case and back (see `case.ts`);
 * `metadata`, `arguments`, `blocks`, `inputSchema` and `opKinds` are opaque JSON and
 * keep their keys as given. Timestamps are UTC epoch milliseconds.
 */

import type * as W from "./wire.js";

/** Any JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Members the gateway may add beyond those typed. */
export interface Open {
  [key: string]: unknown;
}

/** `T` with the members named in `N` retyped as `N` gives them (a narrowing of a loosely typed member). */
export type Narrow<T, N> = Omit<T, keyof N> & N;

/** A JSON object, passed to and from the wire untouched (keys are never re-cased). */
export type JsonObject = { [key: string]: unknown };

/**
 * A filter over records' `metadata` (docs/rpc.md "Metadata filters"): `{key: value}` equality, dotted or
 * nested keys, `$eq $ne $gt $gte $lt $lte $in $nin $not` per key, `$and $or $not` over filters. A missing key
 * reads as null; numbers compare as numbers, strings as strings, never across types.
 */
export type MetadataFilter = JsonObject;

// ---------------------------------------------------------------- assertion ledger

/** The five ledger stores, in their fixed order. */
export type LedgerStore = "knowledge_graph" | "vector" | "timeline" | "todo" | "top_of_mind";

/** `meta/memory/index` (seed: Indexing). `fact` is required unless `conflict` is true; `store` defaults to
 * `knowledge_graph` (trimmed and ASCII-lowercased; must be a supported store). */
export type MemoryIndexParams = W.MemoryIndexParams;
export type MemoryIndexResult = W.MemoryIndexResult & Open;
/** `meta/memory/resolve` (seed: Conflict detection): removes the conflict signal of `entity`/`topic` in `store`
 * (absent: in every store), so `gatingCheck` allows again; `resolved` lists the signals removed. */
export type MemoryResolveParams = W.MemoryResolveParams;
export type MemoryResolveResult = W.MemoryResolveResult & Open;
/** `meta/memory/query` (seed: Querying): exact filters plus a case-insensitive substring `query`. */
export type MemoryQueryParams = W.MemoryQueryParams;
export type MemoryAssertion = W.MemoryAssertion & Open;
export type MemoryConflictSignal = W.MemoryConflictSignal & Open;
export type MemoryQueryResult = W.MemoryQueryResult & Open;
export type MemoryStoreInfo = W.MemoryStoreInfo & Open;

// ---------------------------------------------------------------- agent memory

/**
 * A host's own write of content derived from sessions (its LLM's summary, notes): 1..64 session keys of the
 * identity in the call's realm. Kept as provenance; the write lands quarantined (`quarantined` holds the
 * reason) when one of them is tainted or was tainted when a reset closed it, or when another identity's
 * session of one of those keys is tainted and counts as it does for the `memory` tool's writes
 * (`[agent_memory] shared_key_taint`). Needs `agent.session.manage` on the identity as well as
 * `agent.memory.write`.
 */
export type DerivedFromSessions = Pick<W.AgentMemoryRememberParams, "derivedFromSessions">;

/**
 * `meta/agent_memory/remember`: title <= 200 bytes, body <= 65,536 bytes, <= 32 tags of <= 64 bytes; `ttlS`
 * seconds (1..`[agent_memory] max_ttl_s`) until the record expires; `metadata` a JSON object stored and
 * returned with the record (<= 8 KiB as JSON, 5 levels, 128 keys), not part of the content.
 */
export type RememberParams = W.AgentMemoryRememberParams;
/** A record as recall and remember return it (`metadata` `{}` when none; `expiresAtMs` `null`: never). */
export type AgentMemoryRecord = W.WireRecord & Open;
/** `remember`'s result: the record, and whether it was written (`false`: an exact duplicate was returned),
 * the merge a duplicate's new tags made (`supersedes`, `tagsAdded`) and `quarantined`. */
export type RememberResult = W.RememberResult & Open;
/**
 * `meta/agent_memory/remember_batch`: 1..1,024 records and at most 4 MiB of title, body and tag text
 * together, all committed in one transaction; each record is what `remember` would write.
 */
export type RememberBatchParams = W.AgentMemoryRememberBatchParams;
/** One record's result: `memoryId` and `created`, or the `error` refusing it alone. */
export type RememberBatchItem = W.BatchItem & Open;
/** `remember_batch`'s result: one item per record, in order, and the counts. */
export type RememberBatchResult = W.RememberBatchResult & Open;
/** `meta/agent_memory/recall`: `selection` `contextual` (default) or `always`; `maxEntries` 1..64; `filter`:
 * only records whose metadata passes it. */
export type RecallParams = Narrow<W.AgentMemoryRecallParams, { selection?: "contextual" | "always"; maxEntries?: number }>;
export type RecallResult = W.RecallResult & Open;
export type ForgetParams = W.AgentMemoryForgetParams;
export type ForgetResult = W.ForgetResult & Open;
/**
 * Omitted `title`, `body`, `tags` or `metadata` keep the prior version's value (at least one of them, `ttlS`
 * or `clearExpiry: true` is required); a `metadata` object replaces the prior's whole (`{}` clears it).
 */
export type UpdateParams = W.AgentMemoryUpdateParams;
/**
 * `memoryId` the new version's id, `supersedes` the id it replaced, `record` the new version. An update that
 * changes nothing writes nothing: `memoryId` and `record` are then the current version's, `supersedes` null.
 */
export type UpdateResult = W.UpdateResult & Open;
/** `meta/agent_memory/list`: every tag must be held; `limit` 1..500 (default 100). */
export type ListParams = Narrow<W.AgentMemoryListParams, { limit?: number }>;
/** One page of `meta/agent_memory/list`; `nextCursor` is null at the end. */
export type AgentMemoryPage = W.ListResult & Open;
/** `meta/agent_memory/history`: `memoryId` names any version of one of the identity's records. */
export type HistoryParams = W.AgentMemoryHistoryParams;
export type HistoryAuthor = W.HistoryAuthor & Open;
export type HistoryChange = W.HistoryChange & Open;
export type RecordVersion = W.HistoryVersion & Open;
/** `meta/agent_memory/history`: every version, oldest first (at most 200; `truncated` when more). */
export type RecordHistory = W.HistoryResult & Open;
/** `meta/agent_memory/erase_identity`: `dryRun` only counts what would go. */
export type EraseIdentityParams = W.AgentMemoryEraseIdentityParams;
/** `meta/agent_memory/erase`: a record and its content closure, for good. */
export type EraseParams = W.AgentMemoryEraseParams;
export type EraseResult = W.EraseResult & Open;
/** `meta/agent_memory/manifest`: `tier` `working_set` (default; `k` 1..512) or `full`. */
export type ManifestParams = Narrow<W.AgentMemoryManifestParams, { k?: number }>;
/** Body-free metadata of one active record. */
export type AgentMemoryRecordMeta = W.ManifestRow & Open;

// ---------------------------------------------------------------- host surface

/** `toolResults: "unreported"`: this session's tool results never reach `turnToolResult`; it counts as tainted. */
export type SessionNoteParams = W.SessionNoteParams;
export type SessionResetParams = W.SessionResetParams;
/** Compaction of one identity's session (the identity is required: session state is per identity). */
export type SessionCompactedParams = W.SessionCompactedParams;
export type SessionState = W.SessionResult & Open;
export type SessionCompactedResult = W.CompactedResult & Open;
/** Where a tool came from (typed MCP provenance uses `sourceId` as the server name). */
export type ToolProvenance = W.Provenance;
/** `meta/turn/tool_result`: classify a tool result before the model sees it (`serverTool`: a
 * provider-native server-tool block, always untrusted). */
export type ToolResultParams = W.TurnToolResultParams;
/** `source`: why the content is untrusted (only when untrusted). */
export type ToolResultVerdict = W.ToolResultVerdict & Open;
/** `meta/turn/inject`: the observation block for a turn (`surface: "turn"`) or a build. */
export type InjectParams = W.TurnInjectParams;
/** `text`: the quoted observation block, or `null` with a `skipReason`. */
export type InjectResult = W.InjectResult & Open;
/** `meta/turn/defang`: exactly one of `text` or `blocks`. */
export type DefangParams = W.TurnDefangParams;
export type DefangResult = W.DefangResult & Open;
/**
 * `meta/agent_memory/tool`: one `memory` tool call, an LLM-authored write gated by the firewall.
 * It acts in `realm` (default: the gateway's `[agent_memory] realm`): the gate reads the session's
 * taint there and the write, held forget or proposal lands there. `arguments`: the model's tool
 * arguments, verbatim (`{action: "remember", title, body, ...}`).
 */
export type MemoryToolParams = W.AgentMemoryToolParams;
/** The tool result to hand back to the model. */
export type MemoryToolResult = W.ToolCallResult & Open;
/** The `memory` tool definition for a host to offer its model (`inputSchema` a JSON Schema, verbatim). */
export type MemoryToolSchema = W.ToolSchemaResult & Open;

// ---------------------------------------------------------------- system

/** `methods`: every method advertised on this gateway, sorted. */
export type Capabilities = W.CapabilitiesResult & Open;
export type StorageSlot = W.Slot & Open;
export type DoctorResult = W.DoctorResult & Open;

/**
 * `meta/status` `agentMemory.vectorBacklog` (an open object on the wire): whether hybrid ranking is
 * complete. `pending` counts active records without a vector yet (ranked lexically until it lands), per
 * realm in `realms`. Lexical recall: `provider: "lexical"`, `pending: 0`, `complete: true` and a `reason`.
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

/** `meta/status`; `agentMemory.vectorBacklog` is there whenever agent memory is enabled. */
export type Status = Narrow<W.StatusResult, {
  agentMemory: Narrow<W.AgentMemoryStatus, { vectorBacklog?: VectorBacklog | null }> & Open;
}> & Open;

/** `meta/storage/backup` (grant `operator.backup`): a new directory on the gateway's machine, inside its
 * `[gateway] backup_dir` (`dest` absolute, or relative to `backup_dir`). */
export type StorageBackupParams = W.StorageBackupParams;
/** `beganAtMs`: the consistency point (every write acknowledged before it is in the copy); `elsewhere`:
 * stores the directory does not hold (`"postgres"`: back them up with pg_dump). */
export type StorageBackupResult = W.BackupResult & Open;
/** `meta/storage/export` (grant `operator.backup`): start an export (`realm`, `identity`, `ledger`), then
 * fetch its pages by `exportId` alone until `done` (`maxBytes` 65,536..8,388,608, default 1 MiB). */
export type StorageExportParams = W.StorageExportParams;
/** `lines`: lines of the export file, each one JSON object, without its newline. */
export type StorageExportPage = W.ExportPageResult & Open;
/** `after`: an event id this caller was shown (`console-evt-<n>`; `evt-<16 hex>` to a caller who sees only some identities' events, who cannot page by number) or a sequence number; `limit` 1..1000, default 100. */
export type EventsListParams = W.EventsListParams;
export type TimelineEvent = W.Event & Open;
export type EventsListResult = W.EventsListResult & Open;

// ---------------------------------------------------------------- review

/** `meta/memory/quarantine/decide` (seed: Reviewing quarantined records). */
export type QuarantineDecideParams = W.MemoryQuarantineDecideParams;
export type QuarantineDecideResult = W.DecideResult & Open;
/** `meta/gating/decide`: approve or deny a gated promotion. */
export type GatingDecideParams = W.GatingDecideParams;
export type GatingDecideResult = W.GatingDecideResult & Open;
/** `meta/gating/check`: is there an active conflict for this entity/topic? */
export type GatingCheckParams = W.GatingCheckParams;
export type GatingCheckResult = W.GatingCheckResult & Open;
/** `meta/memory/steward/dream`. */
export type RealmParams = W.MemoryStewardDreamParams;
export type DreamResult = W.DreamResult & Open;
/** `meta/session/retire`: a session ends (`cause` at most 400 bytes). */
export type SessionRetireParams = W.SessionRetireParams;
export type RetireResult = W.RetireResult & Open;
export type ProposalListParams = W.MemoryProposalsListParams;
export type ProposalsListResult = W.ProposalsListResult & Open;
export type ProposalDecideParams = W.MemoryProposalsDecideParams;
export type ProposalDecideResult = W.ProposalDecideResult & Open;

// ---------------------------------------------------------------- console memory panel

/** Common panel filters; the panel methods accept the subset they document. `query` (`records` only):
 * every whitespace-separated word must occur (any case) in the title, description, body or tags;
 * `cursor`: `<updated_at_ms>:<memory_id>` from a previous page's `nextCursor`. */
export type PanelParams = Narrow<W.MemoryPanelRecordsParams, {
  scope?: "identity" | "mob" | "operator" | "realm";
  status?: "active" | "quarantined" | "superseded" | "tombstoned";
}> & Open;
export type PanelRecordParams = W.MemoryPanelRecordParams;
export type PanelRecordsResult = W.PanelRecordsResult & Open;
export type PanelRecordResult = W.PanelRecordResult & Open;
export type PanelQuarantineResult = W.PanelQuarantineResult & Open;
export type PanelDreamsResult = W.PanelDreamsResult & Open;
export type PanelDreamRunsResult = W.PanelDreamRunsResult & Open;
export type PanelAuditVerdictsResult = W.PanelAuditVerdictsResult & Open;
export type PanelOverviewResult = W.PanelOverviewResult & Open;
export type PanelProposalsResult = W.PanelProposalsResult & Open;
export type PanelInjectionsResult = W.PanelInjectionsResult & Open;
export type PanelHarvestsResult = W.PanelHarvestsResult & Open;

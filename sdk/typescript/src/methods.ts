/**
 * The client's method table: one line per gateway method.
 *
 * Each entry names the TypeScript method, the wire method, the params and result
 * types, and (optionally) how to shape the result. {@link MetaHandle} gets one
 * method per entry; adding a gateway method to the client is one line here.
 *
 * Naming rule: the wire path after `meta/`, camelCased (`meta/turn/tool_result` ->
 * `turnToolResult`, `meta/memory/panel/dream_runs` -> `memoryPanelDreamRuns`), except the
 * agent-memory record methods, which keep the seed's names (`rememberAgentMemory`,
 * `recallAgentMemory`, `forgetAgentMemory`, `updateAgentMemory`, `manifestAgentMemory`).
 */

import { InvalidParams } from "./errors.js";
import type * as T from "./types.js";
import type { WireMethod } from "./wire.js";

/** A method of the table. `P` and `R` are phantom: they type the generated handle method. */
export interface MethodSpec<P, R> {
  /** The wire method name, e.g. `meta/memory/index`: one the gateway's `rpc.discover` lists (`wire.ts`). */
  readonly wire: WireMethod;
  /** Turns the TypeScript argument into params (default: the argument object itself). */
  readonly prepare?: (arg: P) => Record<string, unknown> | undefined;
  /** Shapes the camelCased result (default: returned as is). */
  readonly shape?: (result: any) => R;
  /** @internal phantom types */
  readonly _types?: (p: P) => R;
}

/** No params. */
export type NoParams = Record<string, never>;

function m<P = NoParams, R = T.Open>(
  wire: WireMethod,
  shape?: (result: any) => R,
  prepare?: (arg: P) => Record<string, unknown> | undefined,
): MethodSpec<P, R> {
  return { wire, ...(shape ? { shape } : {}), ...(prepare ? { prepare } : {}) };
}

const records = <R>(r: { records: R[] }): R[] => r.records;

/** The most records one `remember_batch` takes (the gateway's cap; the batch commits in one transaction). */
export const MAX_BATCH_RECORDS = 1024;

/**
 * `rememberAgentMemoryBatch`'s params, refused before sending when they hold more than
 * {@link MAX_BATCH_RECORDS} records (`InvalidParams`, field `records`): the batch commits in one
 * transaction, so the client never splits it.
 */
function batchParams(arg: T.RememberBatchParams): Record<string, unknown> {
  const count = arg && Array.isArray(arg.records) ? arg.records.length : 0;
  if (count > MAX_BATCH_RECORDS) {
    throw new InvalidParams(
      `Invalid params: records must contain at most ${MAX_BATCH_RECORDS} records (got ${count}); the batch commits ` +
        "in one transaction, so it is not split: send several calls if the records need not commit together",
      -32602,
      { kind: "invalid_params", field: "records" },
    );
  }
  return arg as unknown as Record<string, unknown>;
}

function queryParams(arg: string | T.MemoryQueryParams | undefined): Record<string, unknown> | undefined {
  if (arg === undefined || arg === null) return undefined;
  if (typeof arg === "string") return { query: arg };
  if (typeof arg === "object" && !Array.isArray(arg)) return arg as Record<string, unknown>;
  throw new TypeError("memoryQuery query must be a string, an object, or undefined");
}

export const METHODS = {
  // system
  status: m<NoParams, T.Status>("meta/status"),
  storageDoctor: m<NoParams, T.DoctorResult>("meta/storage/doctor"),
  storageBackup: m<T.StorageBackupParams, T.StorageBackupResult>("meta/storage/backup"),
  storageExport: m<T.StorageExportParams, T.StorageExportPage>("meta/storage/export"),
  capabilities: m<NoParams, T.Capabilities>("meta/capabilities"),
  discover: m<NoParams, T.Open>("rpc.discover"),
  eventsList: m<T.EventsListParams, T.EventsListResult>("meta/events/list"),

  // assertion ledger (seed: Indexing, Conflict detection, Querying)
  memoryIndex: m<T.MemoryIndexParams, T.MemoryIndexResult>("meta/memory/index"),
  memoryResolve: m<T.MemoryResolveParams, T.MemoryResolveResult>("meta/memory/resolve"),
  memoryQuery: m<string | T.MemoryQueryParams | undefined, T.MemoryQueryResult>("meta/memory/query", undefined, queryParams),
  memoryStores: m<NoParams, T.MemoryStoreInfo[]>("meta/memory/stores", (r) => r.stores),

  // agent memory (seed: Agent memory injection)
  rememberAgentMemory: m<T.RememberParams, T.RememberResult>("meta/agent_memory/remember"),
  rememberAgentMemoryBatch: m<T.RememberBatchParams, T.RememberBatchResult>(
    "meta/agent_memory/remember_batch",
    undefined,
    batchParams,
  ),
  recallAgentMemory: m<T.RecallParams, T.AgentMemoryRecord[]>("meta/agent_memory/recall", records),
  forgetAgentMemory: m<T.ForgetParams, T.ForgetResult>("meta/agent_memory/forget"),
  updateAgentMemory: m<T.UpdateParams, T.UpdateResult>("meta/agent_memory/update"),
  manifestAgentMemory: m<T.ManifestParams, T.AgentMemoryRecordMeta[]>("meta/agent_memory/manifest", records),
  listAgentMemory: m<T.ListParams, T.AgentMemoryPage>("meta/agent_memory/list"),
  historyAgentMemory: m<T.HistoryParams, T.RecordHistory>("meta/agent_memory/history"),
  eraseAgentMemory: m<T.EraseParams, T.EraseResult>("meta/agent_memory/erase"),
  eraseIdentityAgentMemory: m<T.EraseIdentityParams, T.EraseResult>("meta/agent_memory/erase_identity"),

  // host surface: sessions, turns, the memory tool
  sessionNote: m<T.SessionNoteParams, T.SessionState>("meta/session/note"),
  sessionReset: m<T.SessionResetParams, T.SessionState>("meta/session/reset"),
  sessionCompacted: m<T.SessionCompactedParams, T.SessionCompactedResult>("meta/session/compacted"),
  sessionRetire: m<T.SessionRetireParams, T.RetireResult>("meta/session/retire"),
  turnToolResult: m<T.ToolResultParams, T.ToolResultVerdict>("meta/turn/tool_result"),
  turnInject: m<T.InjectParams, T.InjectResult>("meta/turn/inject"),
  turnDefang: m<T.DefangParams, T.DefangResult>("meta/turn/defang"),
  agentMemoryTool: m<T.MemoryToolParams, T.MemoryToolResult>("meta/agent_memory/tool"),
  agentMemoryToolSchema: m<NoParams, T.MemoryToolSchema>("meta/agent_memory/tool_schema"),

  // review: quarantine, gating, steward, proposals
  memoryQuarantineDecide: m<T.QuarantineDecideParams, T.QuarantineDecideResult>("meta/memory/quarantine/decide"),
  gatingDecide: m<T.GatingDecideParams, T.GatingDecideResult>("meta/gating/decide"),
  gatingCheck: m<T.GatingCheckParams, T.GatingCheckResult>("meta/gating/check"),
  memoryStewardDream: m<T.RealmParams, T.DreamResult>("meta/memory/steward/dream"),
  memoryProposalsList: m<T.ProposalListParams, T.ProposalsListResult>("meta/memory/proposals/list"),
  memoryProposalsDecide: m<T.ProposalDecideParams, T.ProposalDecideResult>("meta/memory/proposals/decide"),

  // console memory panel
  memoryPanelRecords: m<T.PanelParams, T.PanelRecordsResult>("meta/memory/panel/records"),
  memoryPanelRecord: m<T.PanelRecordParams, T.PanelRecordResult>("meta/memory/panel/record"),
  memoryPanelQuarantine: m<T.PanelParams, T.PanelQuarantineResult>("meta/memory/panel/quarantine"),
  memoryPanelDreams: m<T.PanelParams, T.PanelDreamsResult>("meta/memory/panel/dreams"),
  memoryPanelOverview: m<T.PanelParams, T.PanelOverviewResult>("meta/memory/panel/overview"),
  memoryPanelProposals: m<T.PanelParams, T.PanelProposalsResult>("meta/memory/panel/proposals"),
  memoryPanelInjections: m<T.PanelParams, T.PanelInjectionsResult>("meta/memory/panel/injections"),
  memoryPanelHarvests: m<T.PanelParams, T.PanelHarvestsResult>("meta/memory/panel/harvests"),
  memoryPanelDreamRuns: m<T.PanelParams, T.PanelDreamRunsResult>("meta/memory/panel/dream_runs"),
  memoryPanelAuditVerdicts: m<T.PanelParams, T.PanelAuditVerdictsResult>("meta/memory/panel/audit_verdicts"),
} as const;

export type MethodName = keyof typeof METHODS;

/** The handle method generated for a table entry (params optional when every field is). */
export type MethodFn<S> = S extends MethodSpec<infer P, infer R>
  ? {} extends P
    ? (params?: P) => Promise<R>
    : (params: P) => Promise<R>
  : never;

/** Every generated handle method, typed. */
export type Methods = { [K in MethodName]: MethodFn<(typeof METHODS)[K]> };

/** Every wire method name the client speaks. */
export function wireMethods(): string[] {
  return Object.values(METHODS).map((s) => s.wire);
}

/**
 * meta-memory for Node.js hosts: a typed client of the meta-memory gateway
 * (assertion ledger, identity-first agent memory, the host surface for sessions,
 * turns and the `memory` tool, review and the console panel) over HTTP JSON-RPC
 * or a spawned stdio gateway.
 */

export { Meta, MetaBuilder, memory, LocalJsonMemoryConfig, AGENT_MEMORY_KEYS, agentMemoryToWire, rosterToWire } from "./builder.js";
export type {
  AgentMemoryOptions,
  ContentTrustOptions,
  StewardOptions,
  LocalJsonOptions,
  BuilderSpawnOptions,
  RosterEntry,
  RosterProvider,
} from "./builder.js";
export { MetaHandle } from "./handle.js";
export { RecallSlots, RECALLS_PER_IDENTITY, RECALLS_IN_ALL } from "./slots.js";
export { MAX_BATCH_RECORDS, METHODS, wireMethods } from "./methods.js";
export type { MethodName, MethodSpec, Methods, NoParams } from "./methods.js";
export { WIRE_METHODS } from "./wire.js";
export type { WireMethod, WireMethods, ParamsOf, ResultOf } from "./wire.js";
export {
  HttpTransport,
  StdioTransport,
  SpawnedHttpTransport,
  spawnHttpGateway,
  DEFAULT_GATEWAY_COMMAND,
  DEFAULT_MAX_ANSWER_BYTES,
  checkGatewayUrl,
  checkMaxAnswerBytes,
} from "./transport.js";
export type { Transport, HttpOptions, SpawnOptions, GatewayCommand } from "./transport.js";
export * from "./errors.js";
export { paramsToWire, resultFromWire, toCamel, toSnake } from "./case.js";
export type * from "./types.js";

/**
 * `Meta.builder()`: configure and spawn a gateway, or connect to a running one
 * (seed: "Agent memory injection" TypeScript snippet; "The runtime owns the assertion ledger").
 *
 * ```ts
 * const handle = await Meta.builder()
 *   .persistentState(".meta/state")
 *   .memory(memory.localJson({ healthCheckEndpoint: "http://localhost:3000" }))
 *   .rosterProvider(appRosterProvider)
 *   .agentMemory({ realm: "default", selection: "contextual", maxEntries: 8 })
 *   .spawn();
 * ```
 *
 * `rosterProvider(...)` supplies the host's roster (`[[access.roster]]`: the roles and labels of
 * identities per realm, which access rules scoped by a target's `role` or `label` match): the
 * entries, or a function returning them (awaited once, by `spawn()`).
 *
 * Option names are checked as the Python SDK checks them: `agentMemory` takes the
 * `[agent_memory]` keys in snake_case or camelCase, and an unknown one is refused
 * with `ConfigError("agent_memory: unsupported key 'x' (allowed: ...)")`; `memory()`
 * takes only `memory.localJson(...)`. Values are then decoded by the gateway itself
 * at spawn, and a refusal rejects `spawn()` with a `StartupError` carrying its message.
 */

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { paramsToWire, toSnake } from "./case.js";
import { ConfigError, StartupError } from "./errors.js";
import { MetaHandle } from "./handle.js";
import { toToml } from "./toml.js";
import {
  DEFAULT_GATEWAY_COMMAND,
  HttpTransport,
  StdioTransport,
  spawnHttpGateway,
  type GatewayCommand,
  type HttpOptions,
  type SpawnOptions,
  type Transport,
} from "./transport.js";

// ---------------------------------------------------------------- memory.localJson()

/** The `local_json` ledger backend; the gateway keeps it at `<persistentState>/memory-ledger-state.json`. */
export class LocalJsonMemoryConfig {
  readonly kind = "local_json" as const;
  /** Optional `http(s)://host[:port]` base URL; `GET <it>/v1/health` must answer 2xx at startup and before every persist. */
  readonly healthCheckEndpoint: string | undefined;

  constructor(healthCheckEndpoint?: string) {
    this.healthCheckEndpoint = healthCheckEndpoint;
  }

  /** The `[memory]` table: `{kind: "local_json", health_check_endpoint?}`. */
  toWire(): Record<string, unknown> {
    const out: Record<string, unknown> = { kind: "local_json" };
    if (this.healthCheckEndpoint !== undefined) out.health_check_endpoint = this.healthCheckEndpoint;
    return out;
  }
}

export interface LocalJsonOptions {
  healthCheckEndpoint?: string;
}

function unsupported(where: string, names: string[]): ConfigError {
  return new ConfigError(`${where} got unsupported option(s): ${[...names].sort().join(", ")}`);
}

function checkEndpoint(raw: unknown): string {
  const key = "memory.health_check_endpoint";
  if (typeof raw !== "string") throw new ConfigError(`${key} must be a string (got ${raw === null ? "null" : typeof raw})`);
  const endpoint = raw.trim();
  if (!endpoint) throw new ConfigError("memory backend health_check_endpoint must not be empty when provided");
  if (!endpoint.startsWith("http://") && !endpoint.startsWith("https://")) {
    throw new ConfigError(`${key} must start with http:// or https:// (got '${endpoint}')`);
  }
  return endpoint;
}

/**
 * `memory.localJson({healthCheckEndpoint?})`: the only ledger backend.
 * `memory.elephant(...)` always throws, pointing to `localJson`.
 */
export const memory = {
  localJson(options: LocalJsonOptions = {}): LocalJsonMemoryConfig {
    if (typeof options !== "object" || options === null) throw new ConfigError("localJson() takes an options object");
    const known = new Set(["healthCheckEndpoint", "health_check_endpoint"]);
    const extra = Object.keys(options).filter((k) => !known.has(k));
    if (extra.length) throw unsupported("localJson()", extra);
    const raw = (options as Record<string, unknown>).healthCheckEndpoint ?? (options as Record<string, unknown>).health_check_endpoint;
    return new LocalJsonMemoryConfig(raw === undefined ? undefined : checkEndpoint(raw));
  },

  elephant(..._args: unknown[]): never {
    throw new ConfigError(
      "memory.elephant() was removed: the only ledger backend is local_json. " +
        "Use memory.localJson({ healthCheckEndpoint }) and pass the old endpoint as healthCheckEndpoint",
    );
  },
};

// ---------------------------------------------------------------- agentMemory({...})

/** The `[agent_memory]` keys, in the gateway's order (mirrors `AgentMemoryConfig`). */
export const AGENT_MEMORY_KEYS: readonly string[] = [
  "enabled",
  "realm",
  "selection",
  "max_entries",
  "recall_timeout_ms",
  "recall_failure_policy",
  "instruction_header",
  "per_turn_injection",
  "defang_inbound",
  "llm_writes",
  "shared_key_taint",
  "recorder_tool",
  "operator_scope",
  "content_trust",
  "store",
  "dsn",
  "recall_provider",
  "embedder",
  "erase_tombstoned_after_days",
  "session_state_expiry_days",
  "session_state_limit",
  "session_state_identity_limit",
  "max_realms",
  "identity_record_limit",
  "max_open_realms",
  "recall_index_mb",
  "sqlite_cache_mb",
  "view_cache_mb",
  "vector_cache_mb",
  "max_ttl_s",
  "tool_max_ttl_s",
  "expiry_sweep_s",
  "realms",
  "steward",
];

const CONTENT_TRUST_LISTS: readonly string[] = ["trusted_mcp_servers", "untrusted_tools", "trusted_tools"];
const CONTENT_TRUST_KEYS: readonly string[] = [...CONTENT_TRUST_LISTS, "default"];

/** Content-trust overrides (`agent_memory.content_trust`). */
export interface ContentTrustOptions {
  trustedMcpServers?: string[];
  untrustedTools?: string[];
  trustedTools?: string[];
  /** `"untrusted"`: only listed tools and servers are trusted (opt-in; default `"trusted"`). */
  default?: "trusted" | "untrusted";
}

/** The memory steward (`agent_memory.steward`); keys camelCase or snake_case, decoded by the gateway. */
export interface StewardOptions {
  enabled?: boolean;
  /** An interval such as `"6h"`, `"30m"` or `"1d"` (cron-like step prefix accepted), or seconds. */
  cadence?: string | number;
  kind?: "policy" | "llm";
  baseUrl?: string;
  model?: string;
  apiKeyEnv?: string;
  timeoutS?: number;
  openLoopAgeDays?: number;
  caps?: { proposals?: number; quarantine?: number; harvests?: number };
  [key: string]: unknown;
}

/** `agentMemory({...})` options (camelCase; snake_case is accepted too). Defaults are the gateway's. */
export interface AgentMemoryOptions {
  enabled?: boolean;
  realm?: string;
  selection?: "contextual" | "always";
  maxEntries?: number;
  recallTimeoutMs?: number;
  recallFailurePolicy?: "skip" | "fail";
  instructionHeader?: string;
  perTurnInjection?: "off" | "budgeted";
  defangInbound?: boolean;
  llmWrites?: "observed" | "quarantined";
  /** Whose taint of a session key quarantines another identity's writes from it: `"any"` (default) or `"managed"` (under access control, identities the caller manages). */
  sharedKeyTaint?: "any" | "managed";
  recorderTool?: boolean;
  operatorScope?: "off" | "provisional";
  contentTrust?: ContentTrustOptions;
  store?: "sqlite" | "postgres";
  dsn?: string;
  /** Hybrid recall's query embedder, `"package.module:Class"` (default: the bundled MiniLM). */
  embedder?: string;
  /** Erase tombstoned content older than this many days (1..36500); absent keeps tombstones. */
  eraseTombstonedAfterDays?: number;
  /** Days after which untouched session state (taint, reset marks, budgets, nonces) expires (default 30). */
  sessionStateExpiryDays?: number;
  /** Cap on session-state rows; at it new sessions are refused and LLM writes quarantine (default 1,000,000). */
  sessionStateLimit?: number;
  /** Cap on one identity's session-state rows (its quota); at it that identity alone fails closed (default: a twentieth of `sessionStateLimit`). */
  sessionStateIdentityLimit?: number;
  /** Most realms; a write creating one more is refused (`limit`). Default 4096. */
  maxRealms?: number;
  /** SQLite: most realms with open connections at once (LRU-closed). Default 32. */
  maxOpenRealms?: number;
  /** SQLite: memory budget (MiB) of the in-process recall index, all realms together (LRU-evicted). Default 256. */
  recallIndexMb?: number;
  /** SQLite: the process-wide soft heap limit (MiB) of SQLite's page caches; a realm writer's cache is at most half of it. Default 128. */
  sqliteCacheMb?: number;
  /** Memory (MiB) of the decoded-record view cache, counted in bytes. Default 32. */
  viewCacheMb?: number;
  /** Hybrid recall: memory (MiB) of its scope matrices and query vectors. Default 256. */
  vectorCacheMb?: number;
  /** The longest `ttlS` a caller may give a record (seconds; default 100 years). */
  maxTtlS?: number;
  /** The longest `ttl_s` the model may set through the `memory` tool (seconds; default 30 days, at most `maxTtlS`). */
  toolMaxTtlS?: number;
  /** How often the expiry sweep tombstones expired records (seconds; default 60). */
  expirySweepS?: number;
  /** The realms the gateway serves (it must list `realm`); a call naming another is refused. Absent: any realm. */
  realms?: string[];
  steward?: boolean | StewardOptions;
  [key: string]: unknown;
}

function snakeKey(name: string, allowed: readonly string[]): string | null {
  if (allowed.includes(name)) return name;
  const snake = toSnake(name);
  return allowed.includes(snake) ? snake : null;
}

function contentTrustToWire(raw: unknown): Record<string, unknown> {
  const fail = (rule: string) => new ConfigError(`agent_memory.${rule}`);
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw fail("content_trust must be an object");
  const out: Record<string, unknown> = {};
  const unknown: string[] = [];
  for (const [name, value] of Object.entries(raw)) {
    const key = snakeKey(name, CONTENT_TRUST_KEYS);
    if (key === null) unknown.push(name);
    else out[key] = value;
  }
  if (unknown.length) throw fail(`unsupported content_trust fields: ${unknown.sort().join(", ")}`);
  for (const [key, value] of Object.entries(out)) {
    if (key === "default") {
      if (value !== "trusted" && value !== "untrusted") {
        throw fail("content_trust.default must be 'trusted' or 'untrusted'");
      }
      continue;
    }
    if (!Array.isArray(value)) throw fail(`content_trust.${key} must be an array`);
    if (!value.every((e) => typeof e === "string" && e.trim() !== "")) {
      throw fail(`content_trust.${key} entries must be non-empty strings`);
    }
  }
  return out;
}

/**
 * Validate `agentMemory` option names and return the `[agent_memory]` table (snake_case).
 * `true`/`undefined` -> `{}` (all defaults); `false` -> `{enabled: false}`.
 * Throws {@link ConfigError} naming unknown keys, with the allowed list, as the Python SDK does.
 */
export function agentMemoryToWire(options: boolean | AgentMemoryOptions | undefined): Record<string, unknown> {
  if (options === undefined || options === true) return {};
  if (options === false) return { enabled: false };
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new ConfigError("agent_memory must be a table (or a boolean)");
  }
  const out: Record<string, unknown> = {};
  const unknown: string[] = [];
  for (const [name, value] of Object.entries(options)) {
    if (value === undefined) continue;
    const key = snakeKey(name, AGENT_MEMORY_KEYS);
    if (key === null) unknown.push(name);
    else out[key] = value;
  }
  if (unknown.length) {
    unknown.sort();
    const names = unknown.map((k) => `'${k}'`).join(", ");
    throw new ConfigError(
      `agent_memory: unsupported key${unknown.length > 1 ? "s" : ""} ${names} (allowed: ${AGENT_MEMORY_KEYS.join(", ")})`,
    );
  }
  if ("content_trust" in out && out.content_trust !== null) out.content_trust = contentTrustToWire(out.content_trust);
  if (typeof out.steward === "object" && out.steward !== null) out.steward = paramsToWire(out.steward);
  return out;
}

// ---------------------------------------------------------------- rosterProvider(...)

/** One roster entry (`[[access.roster]]`): an identity's roles and labels in a realm (default `"default"`). */
export interface RosterEntry {
  identity: string;
  realm?: string;
  roles?: string[];
  labels?: string[];
}

/** The roster, or a function returning it (called once, when `spawn()` starts the gateway). */
export type RosterProvider = readonly RosterEntry[] | (() => readonly RosterEntry[] | Promise<readonly RosterEntry[]>);

/**
 * The `[[access.roster]]` tables of a provider's entries. Each entry must be an object; its members are
 * decoded by the gateway (an unknown key or a bad identity is refused at spawn, naming
 * `access.roster[i].<key>`; an identity listed twice in a realm is refused).
 */
export function rosterToWire(entries: unknown): Record<string, unknown>[] {
  if (!Array.isArray(entries)) {
    throw new ConfigError(`rosterProvider: takes an array of roster entries (or a function returning one), got ${typeof entries}`);
  }
  return entries.map((entry, i) => {
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
      throw new ConfigError(`access.roster[${i}]: an entry is an object of identity, realm, roles and labels`);
    }
    return Object.fromEntries(Object.entries(entry).map(([k, v]) => [toSnake(k), v]));
  });
}

// ---------------------------------------------------------------- the builder

/** How `spawn()` talks to the gateway it starts. */
export interface BuilderSpawnOptions extends HttpOptions {
  /** `"stdio"` (default): `gateway --stdio` over pipes; `"http"`: `serve --port 0` on 127.0.0.1. */
  transport?: "stdio" | "http";
  /** Extra environment for the gateway process. */
  env?: Record<string, string>;
  /** `"capture"` (default) or `"inherit"` the gateway's stderr. */
  stderr?: "capture" | "inherit";
  /** Start-up timeout in milliseconds (default 30,000). */
  startTimeoutMs?: number;
}

/** Removes the generated configuration directory when the transport closes. */
class OwnedConfigTransport implements Transport {
  constructor(
    private readonly inner: Transport,
    private readonly configDir: string,
  ) {}

  call(method: string, params?: Record<string, unknown>): Promise<unknown> {
    return this.inner.call(method, params);
  }

  async close(): Promise<void> {
    try {
      await this.inner.close();
    } finally {
      rmSync(this.configDir, { recursive: true, force: true });
    }
  }
}

/** Fluent builder; see the module documentation. */
export class MetaBuilder {
  private stateDir: string | undefined;
  private ledger: LocalJsonMemoryConfig | undefined;
  private agentMemoryTable: Record<string, unknown> | undefined;
  private accessTable: Record<string, unknown> | undefined;
  private roster: RosterProvider | undefined;
  private command: GatewayCommand = DEFAULT_GATEWAY_COMMAND;

  /** The state directory: ledger file, agent-memory databases, events. Required by `spawn()`. */
  persistentState(path: string): this {
    if (typeof path !== "string" || !path.trim()) throw new ConfigError("persistentState() takes a non-empty path");
    this.stateDir = path;
    return this;
  }

  /**
   * The ledger backend: `memory.localJson(...)` (the only one). Anything else, e.g.
   * `{ stores: [...] }`, is refused: unsupported configuration is never a silent no-op.
   */
  memory(config?: LocalJsonMemoryConfig): this {
    if (config === undefined) {
      this.ledger = new LocalJsonMemoryConfig();
      return this;
    }
    if (config instanceof LocalJsonMemoryConfig) {
      this.ledger = config;
      return this;
    }
    if (typeof config === "object" && config !== null && Object.keys(config).length > 0) {
      throw unsupported("memory()", Object.keys(config));
    }
    throw new ConfigError("memory() takes memory.localJson(...): local_json is the only ledger backend");
  }

  /** Agent-memory options: the `[agent_memory]` keys, camelCase or snake_case; `false` disables it. */
  agentMemory(options?: boolean | AgentMemoryOptions): this {
    this.agentMemoryTable = agentMemoryToWire(options);
    return this;
  }

  /** Access-control options: the `[access]` keys (camelCase converted), decoded by the gateway. */
  access(options: Record<string, unknown>): this {
    if (typeof options !== "object" || options === null) throw new ConfigError("access() takes an options object");
    this.accessTable = Object.fromEntries(Object.entries(options).map(([k, v]) => [toSnake(k), v]));
    return this;
  }

  /**
   * The host's roster (the spec's `rosterProvider`): identities' roles and labels per realm, written to
   * the gateway's `[[access.roster]]` after any `access({ roster })` entries. `provider` is an array of
   * {@link RosterEntry} or a function returning one (sync or async), called once by `spawn()`. The
   * roster matters once `access({ enabled: true })` has rules scoped by a target's `role` or `label`.
   */
  rosterProvider(provider: RosterProvider): this {
    if (!Array.isArray(provider) && typeof provider !== "function") {
      throw new ConfigError("rosterProvider() takes an array of roster entries or a function returning one");
    }
    this.roster = provider;
    return this;
  }

  /** The command that starts the gateway (default `["meta-memory"]`, e.g. `["python3", "-m", "meta_memory.cli"]`). */
  gatewayCommand(command: readonly string[]): this {
    if (!Array.isArray(command) || command.length === 0 || !command.every((c) => typeof c === "string" && c)) {
      throw new ConfigError("gatewayCommand() takes a non-empty array of strings");
    }
    this.command = [...command];
    return this;
  }

  /**
   * The TOML document the spawned gateway is given (empty when nothing was configured). `roster`: the
   * roster provider's entries; needed (and given by `spawn()`) when the provider is a function.
   */
  configToml(roster?: readonly RosterEntry[]): string {
    const tables: Record<string, Record<string, unknown>> = {};
    if (this.ledger) tables.memory = this.ledger.toWire();
    if (this.agentMemoryTable) tables.agent_memory = this.agentMemoryTable;
    if (this.accessTable) tables.access = { ...this.accessTable };
    if (this.roster !== undefined) {
      if (roster === undefined && typeof this.roster === "function") {
        throw new ConfigError("rosterProvider() was given a function: spawn() calls it; pass its entries to configToml(entries)");
      }
      const entries = rosterToWire(roster ?? this.roster);
      const access = tables.access ?? {};
      const before = access.roster ?? [];
      if (!Array.isArray(before)) throw new ConfigError("access.roster: must be an array");
      tables.access = { ...access, roster: [...before, ...entries] };
    }
    return Object.keys(tables).length ? toToml(tables) : "";
  }

  private async resolvedRoster(): Promise<readonly RosterEntry[] | undefined> {
    if (typeof this.roster !== "function") return this.roster;
    try {
      return await this.roster();
    } catch (err) {
      throw new ConfigError(`rosterProvider: the provider failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /**
   * Start a gateway on `persistentState` with this configuration and return a handle on it.
   * `handle.close()` stops the process. Rejects with {@link ConfigError} when `persistentState`
   * is missing, or {@link StartupError} carrying the gateway's refusal.
   */
  async spawn(options: BuilderSpawnOptions = {}): Promise<MetaHandle> {
    if (this.stateDir === undefined) {
      throw new ConfigError("spawn() needs persistentState(dir): the gateway keeps its ledger and agent memory there");
    }
    const text = this.configToml(await this.resolvedRoster());
    const configDir = mkdtempSync(join(tmpdir(), "meta-memory-config-"));
    const configPath = join(configDir, "meta-memory.toml");
    writeFileSync(configPath, text);
    const spawnOptions: SpawnOptions = {
      stateDir: this.stateDir,
      configPath,
      command: this.command,
      ...(options.env ? { env: options.env } : {}),
      ...(options.stderr ? { stderr: options.stderr } : {}),
      ...(options.startTimeoutMs ? { startTimeoutMs: options.startTimeoutMs } : {}),
    };
    let inner: Transport;
    try {
      inner =
        options.transport === "http"
          ? await spawnHttpGateway({ ...spawnOptions, ...httpOptions(options) })
          : await startStdio(spawnOptions);
    } catch (err) {
      rmSync(configDir, { recursive: true, force: true });
      throw err;
    }
    return new MetaHandle(new OwnedConfigTransport(inner, configDir));
  }

  /**
   * A handle on a running gateway at `url` (`http://host:port`). That gateway keeps its own
   * configuration, so gateway options set on this builder are refused rather than ignored.
   */
  connect(url: string, options: HttpOptions = {}): MetaHandle {
    const set = [
      this.stateDir !== undefined && "persistentState()",
      this.ledger !== undefined && "memory()",
      this.agentMemoryTable !== undefined && "agentMemory()",
      this.accessTable !== undefined && "access()",
      this.roster !== undefined && "rosterProvider()",
    ].filter(Boolean);
    if (set.length) {
      throw new ConfigError(
        `connect() reaches a running gateway that keeps its own configuration; ${set.join(", ")} apply to spawn() only`,
      );
    }
    return Meta.connect(url, options);
  }
}

function httpOptions(options: HttpOptions): HttpOptions {
  return {
    ...(options.token !== undefined ? { token: options.token } : {}),
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
  };
}

async function startStdio(options: SpawnOptions): Promise<StdioTransport> {
  const transport = new StdioTransport(options);
  try {
    await transport.call("meta/capabilities");
  } catch (err) {
    const refusal = await transport.startupFailure();
    await transport.close();
    if (refusal !== null) throw new StartupError(refusal);
    throw err;
  }
  return transport;
}

/** Entry points. */
export const Meta = {
  /** A builder for a spawned gateway (or a connection). */
  builder(): MetaBuilder {
    return new MetaBuilder();
  },

  /** A handle on a running gateway over HTTP (`http://host:port` or its `/rpc` URL). */
  connect(url: string, options: HttpOptions = {}): MetaHandle {
    return new MetaHandle(new HttpTransport(url, options));
  },

  /** Spawn `gateway --stdio` on `stateDir` with its default configuration (or `configPath`). */
  async spawn(
    stateDir: string,
    options: { configPath?: string; command?: readonly string[]; env?: Record<string, string>; stderr?: "capture" | "inherit" } = {},
  ): Promise<MetaHandle> {
    return new MetaHandle(await startStdio({ stateDir, ...options }));
  },
};

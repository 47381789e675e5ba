/**
 * JSON-RPC 2.0 transports to a meta-memory gateway.
 *
 * - {@link HttpTransport}: `POST <url>/rpc` with the global `fetch` (Node >= 20).
 * - {@link StdioTransport}: spawns `meta-memory gateway --stdio` and speaks
 *   newline-delimited JSON-RPC over its pipes; responses are matched by id.
 * - {@link spawnHttpGateway}: spawns `meta-memory serve --port 0` and returns an
 *   {@link HttpTransport} on the port it printed, stopping the process on close.
 *
 * Every transport resolves with the raw wire `result` (snake_case) and rejects
 * with the typed error of `errors.ts` for a JSON-RPC error, or
 * {@link TransportError} when the gateway cannot be reached ({@link NotAGateway}
 * when something else answers over HTTP).
 */

import { spawn, type ChildProcess } from "node:child_process";

import {
  ConfigError,
  NotAGateway,
  StartupError,
  TransportError,
  UnreadableAnswer,
  fromJsonRpcError,
} from "./errors.js";
import { duplicateKey, showKey, type DuplicateKey } from "./strict-json.js";

/** One connection to a gateway. `params` and the result are wire (snake_case) JSON. */
export interface Transport {
  call(method: string, params?: Record<string, unknown>): Promise<unknown>;
  close(): Promise<void>;
}

/** The gateway command: the executable and its leading arguments. Default `["meta-memory"]`. */
export type GatewayCommand = readonly string[];

export const DEFAULT_GATEWAY_COMMAND: GatewayCommand = ["meta-memory"];

/** The refusal of an answer whose JSON names a key twice in one object (`src/strict-json.ts`). */
function twiceNamed(from: string, dup: DuplicateKey): UnreadableAnswer {
  return new UnreadableAnswer(from, "duplicate_key", `its JSON names the key ${showKey(dup.key)} twice in one object`);
}

function unwrap(body: unknown): unknown {
  if (typeof body !== "object" || body === null || (body as { jsonrpc?: unknown }).jsonrpc !== "2.0") {
    throw new TransportError("malformed JSON-RPC response from the gateway");
  }
  const response = body as { result?: unknown; error?: unknown };
  if ("error" in response && response.error !== undefined) throw fromJsonRpcError(response.error);
  return response.result ?? null;
}

/** Options of {@link HttpTransport}. */
export interface HttpOptions {
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  /**
   * The whole call's time budget in milliseconds (default 30,000): from sending to the answer's last
   * byte, its headers and body however slowly they arrive.
   */
  timeoutMs?: number;
  /**
   * The most bytes of one answer's body read (default 256 MiB, the gateway's default
   * `[gateway] max_response_bytes`), counted as it arrives (after any compression is undone).
   */
  maxAnswerBytes?: number;
}

/** The default of {@link HttpOptions.maxAnswerBytes}: the gateway's default response cap. */
export const DEFAULT_MAX_ANSWER_BYTES = 256 * 1024 * 1024;

/**
 * The most bytes of one answer a client reads: a positive whole number. Throws {@link ConfigError}
 * otherwise, before anything is sent (the Python SDK's rule and message).
 */
export function checkMaxAnswerBytes(value: unknown): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
    throw new ConfigError(`max_answer_bytes must be a positive whole number of bytes, not ${String(value)}`);
  }
  return value;
}

/**
 * `url` (trimmed) when it can name a gateway: an `http://` or `https://` URL with a host, a valid port
 * if any, and nothing but a path after it. Throws {@link ConfigError} otherwise (`localhost:8765` is
 * the usual slip), before anything is sent; the rules and messages are the Python SDK's: a user name
 * or password in the URL (never repeated), a query or fragment (`/rpc` would be appended to it),
 * spaces and control characters, and a port outside 1..65535 are refused too.
 */
export function checkGatewayUrl(url: string): string {
  const text = typeof url === "string" ? url.trim() : "";
  const authority = /^https?:\/\/([^/?#]*)/i.exec(text)?.[1] ?? "";
  const hostPort = authority.slice(authority.lastIndexOf("@") + 1);
  const bracketed = hostPort.startsWith("[");
  const close = hostPort.indexOf("]");
  const host = bracketed ? (close > 0 ? hostPort.slice(1, close) : "") : hostPort.split(":")[0];
  const portText = bracketed
    ? hostPort.slice(close + 1).replace(/^:/, "")
    : hostPort.split(":").slice(1).join(":");
  const badPort = portText !== "" && (!/^[0-9]+$/.test(portText) || Number(portText) > 65535);
  if (!host || badPort) {
    const shown = authority.includes("@") ? "(a URL with a user name or password)" : String(url);
    throw new ConfigError(
      "the gateway URL must start with http:// or https:// and name a host " +
        `(e.g. http://127.0.0.1:8765), not '${shown}'`,
    );
  }
  if (authority.includes("@")) {
    throw new ConfigError(
      "the gateway URL must not carry a user name or password (the gateway authenticates " +
        "by bearer token: pass token=... or --token)",
    );
  }
  if ((portText !== "" && Number(portText) === 0) || /[\s\p{C}]/u.test(text)) {
    throw new ConfigError(
      "the gateway URL must name a port in 1..65535 and hold no spaces or control " +
        `characters, not '${String(url)}'`,
    );
  }
  if (text.includes("?") || text.includes("#")) {
    throw new ConfigError(
      "the gateway URL must not carry a query or fragment (/rpc is appended to its path), " +
        `not '${String(url)}'`,
    );
  }
  return text;
}

/**
 * A call's time budget in milliseconds: a positive, finite number. Throws {@link ConfigError}
 * otherwise, before anything is sent (a zero or negative budget would fail every call as an
 * unreachable gateway).
 */
export function checkTimeoutMs(timeoutMs: unknown): number {
  if (typeof timeoutMs !== "number" || !Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new ConfigError(`timeoutMs must be a positive number of milliseconds (e.g. 30000), not ${String(timeoutMs)}`);
  }
  return Math.ceil(timeoutMs);
}

/** JSON-RPC over HTTP. `url` is the gateway base (`http://host:port`) or its `/rpc` endpoint. */
export class HttpTransport implements Transport {
  readonly url: string;
  private readonly headers: Record<string, string>;
  private readonly timeoutMs: number;
  private readonly maxAnswerBytes: number;
  private nextId = 1;

  constructor(url: string, options: HttpOptions = {}) {
    const base = checkGatewayUrl(url).replace(/\/+$/, "");
    this.url = base.endsWith("/rpc") ? base : `${base}/rpc`;
    this.headers = { "content-type": "application/json" };
    if (options.token) this.headers.authorization = `Bearer ${options.token}`;
    this.timeoutMs = checkTimeoutMs(options.timeoutMs ?? 30_000);
    this.maxAnswerBytes = checkMaxAnswerBytes(options.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES);
  }

  private late(): TransportError {
    return new TransportError(
      `the meta-memory gateway at ${this.url} was sent the call but did not answer within ` +
        `${this.timeoutMs / 1000} s: the call may or may not have been applied; check before repeating a write`,
    );
  }

  private oversized(): UnreadableAnswer {
    return new UnreadableAnswer(
      this.url,
      "max_answer_bytes",
      `it is over max_answer_bytes (${this.maxAnswerBytes} bytes)`,
      this.maxAnswerBytes,
    );
  }

  /**
   * The answer's body as text, within bounds: at most `maxAnswerBytes` (a declared `Content-Length`
   * above it is refused unread; the rest is counted as it streams in and the stream cancelled once past
   * it), and by `signal`'s deadline, which covers the whole call.
   */
  private async readBody(response: Response, signal: AbortSignal): Promise<string> {
    const declared = response.headers.get("content-length");
    if (declared !== null && /^[0-9]+$/.test(declared) && Number(declared) > this.maxAnswerBytes) {
      await response.body?.cancel().catch(() => undefined);
      throw this.oversized();
    }
    if (response.body === null) return "";
    const reader = response.body.getReader();
    const chunks: Uint8Array[] = [];
    let total = 0;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        total += value.byteLength;
        if (total > this.maxAnswerBytes) {
          await reader.cancel().catch(() => undefined);
          throw this.oversized();
        }
        chunks.push(value);
      }
    } catch (err) {
      if (err instanceof UnreadableAnswer) throw err;
      if (signal.aborted) throw this.late();
      throw new TransportError(
        `the answer of ${this.url} was cut short (${failure(err)}): the call may or may not have been applied; ` +
          "check before repeating a write",
      );
    }
    return new TextDecoder("utf-8", { fatal: false }).decode(Buffer.concat(chunks));
  }

  async call(method: string, params?: Record<string, unknown>): Promise<unknown> {
    const payload = { jsonrpc: "2.0", method, params: params ?? {}, id: this.nextId++ };
    const signal = AbortSignal.timeout(this.timeoutMs);
    let response: Response;
    try {
      response = await fetch(this.url, {
        method: "POST",
        headers: this.headers,
        body: JSON.stringify(payload),
        signal,
        redirect: "manual",
      });
    } catch (err) {
      if (signal.aborted) throw this.late();
      if (droppedMidCall(err)) {
        throw new TransportError(
          `the meta-memory gateway at ${this.url} was sent the call but closed the connection without answering ` +
            `(${failure(err)}; it may have stopped or restarted): the call may or may not have been applied; ` +
            "check before repeating a write",
        );
      }
      throw new TransportError(`cannot reach the gateway at ${this.url}: ${failure(err)}`);
    }
    const text = await this.readBody(response, signal);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const dup = body === undefined ? undefined : duplicateKey(text);
    if (dup !== undefined) throw twiceNamed(this.url, dup);
    if (typeof body !== "object" || body === null || Array.isArray(body) || (body as { jsonrpc?: unknown }).jsonrpc !== "2.0") {
      const contentType = (response.headers.get("content-type") ?? "").split(";")[0]!.trim();
      throw new NotAGateway(this.url, response.status, contentType);
    }
    return unwrap(body);
  }

  async close(): Promise<void> {
    /* fetch keeps no connection state that needs closing */
  }
}

/** What failed, for a message: `fetch`'s own error with its cause (`fetch failed (connect ECONNREFUSED ...)`). */
function failure(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : "";
  return cause && cause !== message ? `${message} (${cause})` : message;
}

/**
 * Whether `fetch` failed after the connection was made and the call sent: the other side closed or reset
 * it without an answer (undici's `UND_ERR_SOCKET`, `ECONNRESET`, `EPIPE`), so the call may have been
 * applied; a connect failure (`ECONNREFUSED`, an unknown host) is not.
 */
function droppedMidCall(err: unknown): boolean {
  const cause = err instanceof Error ? (err.cause as { code?: unknown } | undefined) : undefined;
  return typeof cause?.code === "string" && ["UND_ERR_SOCKET", "ECONNRESET", "EPIPE"].includes(cause.code);
}

/** Options for spawning a gateway process. */
export interface SpawnOptions {
  /** The state directory (`--state-dir`). */
  stateDir: string;
  /** A TOML configuration file (`--config`). */
  configPath?: string;
  /** The gateway command (default `["meta-memory"]`; e.g. `["python3", "-m", "meta_memory.cli"]`). */
  command?: GatewayCommand;
  /** Extra environment for the child (merged over `process.env`). */
  env?: Record<string, string>;
  /** `"capture"` (default) keeps the child's stderr for error messages; `"inherit"` shows it. */
  stderr?: "capture" | "inherit";
  /** How long to wait for the gateway to come up, in milliseconds (default 30,000). */
  startTimeoutMs?: number;
}

const STDERR_KEEP = 16_384;

/** @internal A spawned gateway process with its captured stderr. */
export class ChildGateway {
  readonly child: ChildProcess;
  private stderrTail = "";
  readonly exited: Promise<number | null>;

  constructor(args: string[], options: SpawnOptions) {
    const command = options.command ?? DEFAULT_GATEWAY_COMMAND;
    if (command.length === 0) throw new StartupError("the gateway command must not be empty");
    const full = [...command.slice(1), ...args, "--state-dir", options.stateDir];
    if (options.configPath !== undefined) full.push("--config", options.configPath);
    const inherit = options.stderr === "inherit";
    this.child = spawn(command[0]!, full, {
      stdio: ["pipe", "pipe", inherit ? "inherit" : "pipe"],
      env: { ...process.env, ...(options.env ?? {}) },
    });
    this.child.stderr?.setEncoding("utf8");
    this.child.stderr?.on("data", (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-STDERR_KEEP);
    });
    this.exited = new Promise((resolve) => {
      this.child.once("exit", (code) => resolve(code));
      this.child.once("error", (err) => {
        this.stderrTail += `\n${err.message}`;
        resolve(null);
      });
    });
  }

  /** The gateway's own refusal line(s), e.g. `meta-memory: agent_memory: unsupported key 'x' ...`. */
  stderr(): string {
    return this.stderrTail.trim();
  }

  refusal(): string {
    const lines = this.stderr().split("\n").filter((l) => l.startsWith("meta-memory: "));
    const last = lines.at(-1);
    return last !== undefined ? last.slice("meta-memory: ".length) : this.stderr() || "no output";
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  async stop(signal: NodeJS.Signals | "stdin"): Promise<void> {
    if (!this.running) return;
    if (signal === "stdin") this.child.stdin?.end();
    else this.child.kill(signal);
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
    try {
      await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}

interface Pending {
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
}

/**
 * Spawns `<command> gateway --stdio --state-dir DIR [--config FILE]` and talks
 * newline-delimited JSON-RPC over its stdin/stdout. Several calls may be in
 * flight; each answer is matched to its call by id. The child exits when the
 * transport is closed (stdin is closed; killed after 10 s if it lingers).
 */
export class StdioTransport implements Transport {
  private readonly proc: ChildGateway;
  private readonly pending = new Map<number, Pending>();
  private buffer = "";
  private nextId = 1;
  private gone: Error | null = null;

  constructor(options: SpawnOptions) {
    this.proc = new ChildGateway(["gateway", "--stdio"], options);
    const stdout = this.proc.child.stdout!;
    stdout.setEncoding("utf8");
    stdout.on("data", (chunk: string) => this.onData(chunk));
    void this.proc.exited.then((code) => {
      this.gone = new TransportError(`stdio gateway exited (code ${code}): ${this.proc.refusal()}`);
      for (const p of this.pending.values()) p.reject(this.gone);
      this.pending.clear();
    });
    this.proc.child.stdin!.on("error", () => {
      /* reported through the exit handler */
    });
  }

  /** The child's captured stderr (diagnostics). */
  stderr(): string {
    return this.proc.stderr();
  }

  /** The gateway's refusal when it exited at start-up (`StartupError` text). */
  async startupFailure(): Promise<string | null> {
    if (this.proc.running) return null;
    await this.proc.exited;
    return this.proc.refusal();
  }

  private onData(chunk: string): void {
    this.buffer += chunk;
    let nl: number;
    while ((nl = this.buffer.indexOf("\n")) >= 0) {
      const line = this.buffer.slice(0, nl).trim();
      this.buffer = this.buffer.slice(nl + 1);
      if (line) this.onLine(line);
    }
  }

  private onLine(line: string): void {
    let body: unknown;
    try {
      body = JSON.parse(line);
    } catch {
      return; // not a response line
    }
    const dup = duplicateKey(line);
    if (dup !== undefined && dup.depth === 1 && dup.key === "id") {
      // which call it answers cannot be told: none of the calls waiting is answered
      const refusal = twiceNamed("the stdio gateway", dup);
      for (const p of this.pending.values()) p.reject(refusal);
      this.pending.clear();
      return;
    }
    const id = (body as { id?: unknown } | null)?.id;
    const waiter = typeof id === "number" ? this.pending.get(id) : undefined;
    if (waiter === undefined) return;
    this.pending.delete(id as number);
    if (dup !== undefined) {
      waiter.reject(twiceNamed("the stdio gateway", dup));
      return;
    }
    try {
      waiter.resolve(unwrap(body));
    } catch (err) {
      waiter.reject(err as Error);
    }
  }

  call(method: string, params?: Record<string, unknown>): Promise<unknown> {
    if (this.gone) return Promise.reject(this.gone);
    const id = this.nextId++;
    const line = JSON.stringify({ jsonrpc: "2.0", method, params: params ?? {}, id }) + "\n";
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.proc.child.stdin!.write(line, (err) => {
        if (err && this.pending.delete(id)) reject(new TransportError(`stdio gateway is gone: ${err.message}`));
      });
    });
  }

  async close(): Promise<void> {
    await this.proc.stop("stdin");
  }
}

/** An {@link HttpTransport} that owns the `serve` process it talks to. */
export class SpawnedHttpTransport extends HttpTransport {
  private readonly proc: ChildGateway;

  /** @internal use {@link spawnHttpGateway}. */
  constructor(url: string, proc: ChildGateway, options: HttpOptions) {
    super(url, options);
    this.proc = proc;
  }

  /** The gateway's process id. */
  get pid(): number | undefined {
    return this.proc.child.pid;
  }

  override async close(): Promise<void> {
    await this.proc.stop("SIGTERM");
  }
}

/**
 * Spawn `<command> serve --port 0 --state-dir DIR [--config FILE]`, wait for its
 * first stdout line (`meta-memory gateway listening on http://127.0.0.1:<port> ...`)
 * and return a transport on that URL. Rejects with {@link StartupError} carrying the
 * gateway's refusal when it exits first, or after `startTimeoutMs`.
 */
export async function spawnHttpGateway(options: SpawnOptions & HttpOptions): Promise<SpawnedHttpTransport> {
  const proc = new ChildGateway(["serve", "--host", "127.0.0.1", "--port", "0"], options);
  const stdout = proc.child.stdout!;
  stdout.setEncoding("utf8");
  const url = await new Promise<string>((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => {
      void proc.stop("SIGKILL");
      reject(new StartupError(`gateway did not start within ${options.startTimeoutMs ?? 30_000} ms: ${proc.stderr()}`));
    }, options.startTimeoutMs ?? 30_000);
    const onData = (chunk: string): void => {
      seen += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(seen);
      if (match) {
        clearTimeout(timer);
        stdout.off("data", onData);
        stdout.resume();
        resolve(match[1]!);
      }
    };
    stdout.on("data", onData);
    void proc.exited.then(() => {
      clearTimeout(timer);
      reject(new StartupError(proc.refusal()));
    });
  });
  return new SpawnedHttpTransport(url, proc, options);
}

/**
 * Typed errors: every JSON-RPC error the gateway answers becomes one class per
 * `data.kind` (the table "JSON-RPC errors" of the specification, mirrored from
 * the Python `meta_memory.errors` classes).
 *
 * | code   | class                         | `data.kind`                          |
 * | ------ | ----------------------------- | ------------------------------------ |
 * | -32700 | ParseError                    | `parse_error`                        |
 * | -32600 | InvalidRequest                | `invalid_request`                    |
 * | -32601 | MethodNotFound                | `method_not_found`                   |
 * | -32602 | InvalidParams                 | `invalid_params` (+ `field`)         |
 * | -32603 | InternalError                 | `internal`                           |
 * | -32001 | RecordNotFound                | `not_found` (+ `memory_id`)          |
 * | -32004 | AccessControlNotConfigured    | `access_control_not_configured`      |
 * | -32005 | CapacityExceeded              | `capacity_exceeded` (+ `resource`, `limit`) |
 * | -32010 | MemoryBackendUnavailable      | `memory_backend`                     |
 * | -32030 | AccessDenied                  | `access_denied` (+ `action`, `resource`) |
 * | -32040 | AgentMemoryError              | `agent_memory` (+ `reason`, `op_index?`, `secret_class?`, `field?`) |
 * | -32043 | QuarantineReviewRefused       | `memory_quarantine_review_refused` (+ `reason`, `field`) |
 *
 * Client-side failures are {@link TransportError} (the gateway could not be
 * reached or went away; {@link NotAGateway} when something else answers at the URL). Builder refusals are {@link ConfigError}; a gateway that
 * refuses to start is {@link StartupError}. Neither is a JSON-RPC error.
 */

/** The JSON-RPC `error` object as the gateway sends it. */
export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: Record<string, unknown>;
}

/**
 * Base of every error a gateway call can raise.
 *
 * - `code`: the JSON-RPC error code (e.g. -32602).
 * - `kind`: `data.kind` (e.g. `"invalid_params"`).
 * - `reason`: `data.reason` when the gateway gives one (agent-memory and review refusals);
 *   for `memory_backend` the text after `Memory backend unavailable: `.
 * - `data`: the wire `error.data` object, verbatim (snake_case keys).
 */
export class MetaMemoryError extends Error {
  readonly code: number;
  readonly kind: string;
  readonly reason: string | undefined;
  readonly data: Record<string, unknown>;

  constructor(message: string, code: number, data: Record<string, unknown> = {}) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    this.data = data;
    this.kind = typeof data.kind === "string" ? data.kind : "internal";
    this.reason = typeof data.reason === "string" ? data.reason : undefined;
  }
}

/** -32700: the request was not valid JSON. */
export class ParseError extends MetaMemoryError {}

/** -32600: not a JSON-RPC 2.0 request object; `field` names the member. */
export class InvalidRequest extends MetaMemoryError {
  get field(): string | undefined {
    return typeof this.data.field === "string" ? this.data.field : undefined;
  }
}

/** -32601: no such method on this gateway (or it is not advertised there). */
export class MethodNotFound extends MetaMemoryError {
  get method(): string | undefined {
    return typeof this.data.method === "string" ? this.data.method : undefined;
  }
}

/** -32602: params broke a rule. `message` is `Invalid params: <rule>`; `field` names the field. */
export class InvalidParams extends MetaMemoryError {
  get field(): string | undefined {
    return typeof this.data.field === "string" ? this.data.field : undefined;
  }

  /** The rule text without the `Invalid params: ` prefix. */
  get rule(): string {
    return this.message.replace(/^Invalid params: /, "");
  }
}

/** -32603: an unexpected failure inside the gateway (no traceback is ever sent). */
export class InternalError extends MetaMemoryError {}

/** -32001: unknown memory record; `memoryId` names it. */
export class RecordNotFound extends MetaMemoryError {
  get memoryId(): string | undefined {
    return typeof this.data.memory_id === "string" ? this.data.memory_id : undefined;
  }
}

/** -32004: the method needs access control and the gateway has none configured. */
export class AccessControlNotConfigured extends MetaMemoryError {}

/**
 * -32005: a capacity is full; retry later. `resource` names it (`recall_slots_per_identity`, `recall_slots`,
 * `event_subscribers`), `limit` is the cap, `retryAfterMs` (when the gateway can tell) when to retry.
 */
export class CapacityExceeded extends MetaMemoryError {
  get resource(): string | undefined {
    return typeof this.data.resource === "string" ? this.data.resource : undefined;
  }

  get limit(): number | undefined {
    return typeof this.data.limit === "number" ? this.data.limit : undefined;
  }

  get retryAfterMs(): number | undefined {
    return typeof this.data.retry_after_ms === "number" ? this.data.retry_after_ms : undefined;
  }
}

/** -32010: the ledger backend failed its health check or its persist; the write was rolled back. */
export class MemoryBackendUnavailable extends MetaMemoryError {
  override readonly reason: string | undefined;

  constructor(message: string, code: number, data: Record<string, unknown> = {}) {
    super(message, code, data);
    const prefix = "Memory backend unavailable: ";
    this.reason =
      typeof data.reason === "string" ? data.reason : message.startsWith(prefix) ? message.slice(prefix.length) : undefined;
  }
}

/** -32030: `access denied: <action>`; `action` and `resource` name what was refused. */
export class AccessDenied extends MetaMemoryError {
  get action(): string | undefined {
    return typeof this.data.action === "string" ? this.data.action : undefined;
  }

  get resource(): string | undefined {
    return typeof this.data.resource === "string" ? this.data.resource : undefined;
  }
}

/**
 * -32040: the agent-memory store refused. `reason` is one of `invalid_record`,
 * `secret_detected`, `scope_not_writable`, `timeout`, `unsupported`, `invalid_config`, `io`, `limit`,
 * `disk_full` (no space left on the disk the message names; reads keep working), `corrupt` (the realm's
 * database is damaged; the message names the file).
 */
export class AgentMemoryError extends MetaMemoryError {
  /** The op of a staged batch at fault, when one is. */
  get opIndex(): number | undefined {
    return typeof this.data.op_index === "number" ? this.data.op_index : undefined;
  }

  /** The secret pattern class, for `reason === "secret_detected"`. */
  get secretClass(): string | undefined {
    return typeof this.data.secret_class === "string" ? this.data.secret_class : undefined;
  }

  /**
   * The part of the record that held the secret, for `reason === "secret_detected"` (`title`, `body`,
   * `tags.1`, `metadata.deep.k`; `records.<i>.<path>` in a bulk write); never the secret itself.
   */
  get field(): string | undefined {
    return typeof this.data.field === "string" ? this.data.field : undefined;
  }
}

/**
 * -32043: a quarantine decision was refused. `reason`: `not_found`, `content_mismatch`,
 * `not_quarantined`, `gate_pending` (+ `expires_at_ms`), `successor_conflict`,
 * `secret_detected`, `stale_update`. `field` names the param at fault when one is
 * (`expected_content_hash` for `content_mismatch`).
 */
export class QuarantineReviewRefused extends MetaMemoryError {
  get field(): string | undefined {
    return typeof this.data.field === "string" ? this.data.field : undefined;
  }
}

/** The gateway could not be reached, answered without JSON-RPC, or exited. `kind` is `"transport"`. */
export class TransportError extends MetaMemoryError {
  constructor(message: string) {
    super(message, -32603, { kind: "transport" });
  }
}

/**
 * Something answers at the URL, but not a meta-memory gateway: its reply to `POST /rpc` is not a
 * JSON-RPC 2.0 response (an HTML error page, another service's JSON). A {@link TransportError}, so a
 * client treats it as "no gateway there", never as a gateway's refusal. `url` names the endpoint,
 * `status` the HTTP status it answered; the message is the Python SDK's `NotAGateway` text.
 */
export class NotAGateway extends TransportError {
  readonly url: string;
  readonly status: number;

  constructor(url: string, status: number, contentType: string) {
    super(
      `${url} is not a meta-memory gateway: it answered HTTP ${status} ` +
        `(${contentType || "no content type"}) instead of a JSON-RPC response; check the URL and port`,
    );
    this.url = url;
    this.status = status;
  }
}

/**
 * The gateway's answer was not read: its body passed `maxAnswerBytes` (`limit`; a declared
 * `Content-Length` above it is refused before any byte is read), or its JSON names a key twice in one
 * object, at any depth (read two ways: `JSON.parse` keeps the last, a proxy or a log may have read the
 * first; the message names the key). Nothing of it reaches the caller. A {@link TransportError}, so a
 * client treats it as no answer (a call that may or may not have been applied), never as a gateway's
 * refusal. `rule` names which: `"max_answer_bytes"` or `"duplicate_key"`, as the Python SDK's
 * `UnreadableAnswer` names its rules. Over stdio (`url` "the stdio gateway"), a line whose top-level `id`
 * is named twice fails every call then waiting, since which one it answers cannot be told.
 */
export class UnreadableAnswer extends TransportError {
  readonly url: string;
  readonly rule: string;
  readonly limit: number | undefined;

  constructor(url: string, rule: string, detail: string, limit?: number) {
    super(
      `the answer of ${url} was not read: ${detail}; the call may or may not have been applied ` +
        "(check before repeating a write)",
    );
    this.url = url;
    this.rule = rule;
    this.limit = limit;
  }
}

/** A gateway refused to start (bad configuration, a predecessor ledger, file-name twins...). */
export class StartupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** A builder option was refused before anything started; the message names the option and the rule. */
export class ConfigError extends StartupError {}

/** A catalogued error class. */
export type ErrorClass = new (message: string, code: number, data?: Record<string, unknown>) => MetaMemoryError;

/**
 * The catalogue, one row per code: `[code, data.kind, class]`, in the order of the table above (the
 * Python `meta_memory.errors.CATALOGUE`). Both look-ups below are derived from it.
 */
export const ERROR_CATALOGUE: ReadonlyArray<readonly [code: number, kind: string, cls: ErrorClass]> = [
  [-32700, "parse_error", ParseError],
  [-32600, "invalid_request", InvalidRequest],
  [-32601, "method_not_found", MethodNotFound],
  [-32602, "invalid_params", InvalidParams],
  [-32603, "internal", InternalError],
  [-32001, "not_found", RecordNotFound],
  [-32004, "access_control_not_configured", AccessControlNotConfigured],
  [-32005, "capacity_exceeded", CapacityExceeded],
  [-32010, "memory_backend", MemoryBackendUnavailable],
  [-32030, "access_denied", AccessDenied],
  [-32040, "agent_memory", AgentMemoryError],
  [-32043, "memory_quarantine_review_refused", QuarantineReviewRefused],
];

/** `data.kind` -> class. */
export const ERROR_CLASSES: Readonly<Record<string, ErrorClass>> = Object.fromEntries(
  ERROR_CATALOGUE.map(([, kind, cls]) => [kind, cls]),
);

const KIND_BY_CODE: ReadonlyMap<number, string> = new Map(ERROR_CATALOGUE.map(([code, kind]) => [code, kind]));

/**
 * Rebuild the typed error for a JSON-RPC `error` object. The class is chosen by
 * `data.kind`, or by `code` when `data.kind` is absent; anything unknown is a
 * plain {@link MetaMemoryError} carrying the code.
 */
export function fromJsonRpcError(error: unknown): MetaMemoryError {
  const obj = (typeof error === "object" && error !== null ? error : {}) as Partial<JsonRpcErrorObject>;
  const code = typeof obj.code === "number" ? obj.code : -32603;
  const message = typeof obj.message === "string" ? obj.message : "JSON-RPC error";
  const rawData = typeof obj.data === "object" && obj.data !== null && !Array.isArray(obj.data) ? obj.data : {};
  const data: Record<string, unknown> = { ...rawData };
  const kindOfCode = KIND_BY_CODE.get(code);
  if (typeof data.kind !== "string" && kindOfCode !== undefined) data.kind = kindOfCode;
  const cls = typeof data.kind === "string" ? ERROR_CLASSES[data.kind] : undefined;
  return cls ? new cls(message, code, data) : new MetaMemoryError(message, code, data);
}

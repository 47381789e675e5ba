/**
 * The handle: one typed method per gateway method (see `methods.ts`), over any
 * transport (HTTP, spawned stdio, spawned HTTP).
 *
 * Each method takes one camelCase params object, sends snake_case params, and
 * resolves with the camelCased result (opaque members such as `metadata` kept as
 * they are). Every method rejects with the typed error the gateway gave
 * (`InvalidParams` -32602, `MemoryBackendUnavailable` -32010, `AgentMemoryError`
 * -32040, ...; see `errors.ts`).
 */

import { paramsToWire, resultFromWire } from "./case.js";
import { METHODS, type MethodName, type Methods, type MethodSpec } from "./methods.js";
import { InvalidParams, TransportError } from "./errors.js";
import { RecallSlots } from "./slots.js";
import type { Transport } from "./transport.js";

/** A connection to a gateway; every method of {@link METHODS} is available on it. */
export interface MetaHandle extends Methods {}

export class MetaHandle {
  readonly transport: Transport;
  /** This handle's queue for recalls, within the gateway's caps (see `slots.ts`). */
  readonly recallSlots = new RecallSlots();
  private closed = false;

  constructor(transport: Transport) {
    this.transport = transport;
  }

  /**
   * Call any gateway method by its wire name with wire (snake_case) params; resolves with the
   * raw wire result. Use it for a method this client version does not know yet.
   */
  call(method: string, params?: Record<string, unknown>): Promise<unknown> {
    if (this.closed) return Promise.reject(closedError());
    const nonFinite = nonFiniteMember(params);
    if (nonFinite !== undefined) return Promise.reject(nonFiniteError(nonFinite));
    // a recall queued behind the caps may start after close(): it is refused then too
    return this.recallSlots.run(method, params, () =>
      this.closed ? Promise.reject(closedError()) : this.transport.call(method, params),
    );
  }

  /** Whether {@link close} was called; every call on a closed handle rejects with a `TransportError`. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** Close the connection (and stop the gateway process when this handle spawned it). Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.transport.close();
  }
}

/**
 * The top-level member of `params` holding a number JSON cannot carry (NaN, Infinity, -Infinity), at any
 * depth, or `undefined`. `JSON.stringify` would send such a number as `null`, silently changing the call.
 */
export function nonFiniteMember(params: Record<string, unknown> | undefined): string | undefined {
  if (params === undefined || params === null) return undefined;
  const seen = new Set<object>();
  const holds = (value: unknown): boolean => {
    if (typeof value === "number") return !Number.isFinite(value);
    if (typeof value !== "object" || value === null || seen.has(value)) return false;
    seen.add(value);
    const inner = Array.isArray(value) ? value : Object.values(value as Record<string, unknown>);
    return inner.some(holds);
  };
  return Object.keys(params).find((key) => holds(params[key]));
}

/** The refusal of a call whose params hold NaN or an infinity (as the Python SDK's, before sending). */
function nonFiniteError(field: string): InvalidParams {
  return new InvalidParams(`Invalid params: ${field} numbers must be finite (no NaN or Infinity)`, -32602, {
    kind: "invalid_params",
    field,
  });
}

function closedError(): TransportError {
  return new TransportError("this handle is closed; open a new one with Meta.connect() or Meta.spawn()");
}

async function invoke(handle: MetaHandle, spec: MethodSpec<unknown, unknown>, arg: unknown): Promise<unknown> {
  const prepared = spec.prepare ? spec.prepare(arg) : (arg as Record<string, unknown> | undefined);
  const params = prepared === undefined ? undefined : (paramsToWire(prepared) as Record<string, unknown>);
  const raw = await handle.call(spec.wire, params);
  const result = resultFromWire(raw);
  return spec.shape ? spec.shape(result) : result;
}

for (const [name, spec] of Object.entries(METHODS) as [MethodName, MethodSpec<unknown, unknown>][]) {
  Object.defineProperty(MetaHandle.prototype, name, {
    value: function (this: MetaHandle, arg?: unknown) {
      return invoke(this, spec, arg);
    },
    writable: true,
    configurable: true,
  });
}

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
import { TransportError } from "./errors.js";
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

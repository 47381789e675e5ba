/**
 * A handle's queue for recalls. The gateway runs at most {@link RECALLS_PER_IDENTITY} recalls
 * (`meta/agent_memory/recall`, `meta/turn/inject`, the `memory` tool) of one `(realm, identity)` at
 * once and {@link RECALLS_IN_ALL} in all; a call beyond either waits for a slot within its own time budget,
 * then is refused (`CapacityExceeded`, -32005, `retryAfterMs`). A handle keeps its own calls within those caps,
 * so `Promise.all` of many recalls is answered instead of refused; other clients' calls still count.
 */

/** Recalls of one `(realm, identity)` the gateway runs at once. */
export const RECALLS_PER_IDENTITY = 4;
/** Recalls the gateway runs at once, over every identity. */
export const RECALLS_IN_ALL = 16;

const CAPPED = new Set(["meta/agent_memory/recall", "meta/turn/inject", "meta/agent_memory/tool"]);

class Semaphore {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(size: number) {
    this.free = size;
  }

  async acquire(): Promise<void> {
    if (this.free > 0) {
      this.free -= 1;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free += 1;
  }
}

/** The `(realm, identity)` key of a capped call, or `undefined` (not capped, or params the gateway refuses). */
function capKey(method: string, params: Record<string, unknown> | undefined): string | undefined {
  if (!CAPPED.has(method) || params === undefined) return undefined;
  const { identity, realm } = params;
  if (typeof identity !== "string") return undefined;
  if (realm !== undefined && realm !== null && typeof realm !== "string") return undefined;
  return JSON.stringify([realm ?? null, identity]);
}

/** Per-`(realm, identity)` and total slots for one handle's capped calls; idle keys are dropped. */
export class RecallSlots {
  private readonly keys = new Map<string, { slots: Semaphore; users: number }>();
  private readonly all: Semaphore;

  constructor(
    private readonly perIdentity = RECALLS_PER_IDENTITY,
    total = RECALLS_IN_ALL,
  ) {
    this.all = new Semaphore(total);
  }

  /** Run `send` for a call of `method` with wire `params`, in a free slot when the call is capped. */
  async run<T>(method: string, params: Record<string, unknown> | undefined, send: () => Promise<T>): Promise<T> {
    const key = capKey(method, params);
    if (key === undefined) return send();
    let entry = this.keys.get(key);
    if (entry === undefined) {
      entry = { slots: new Semaphore(this.perIdentity), users: 0 };
      this.keys.set(key, entry);
    }
    entry.users += 1;
    try {
      await entry.slots.acquire(); // the identity's slot first, then one of all: no deadlock
      try {
        await this.all.acquire();
        try {
          return await send();
        } finally {
          this.all.release();
        }
      } finally {
        entry.slots.release();
      }
    } finally {
      entry.users -= 1;
      if (entry.users === 0) this.keys.delete(key);
    }
  }

  /** Identities with a call in flight or waiting. */
  get identities(): number {
    return this.keys.size;
  }
}

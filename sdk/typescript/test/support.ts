/**
 * Test support: real gateways started from the Python package, on free ports, in
 * temporary state directories, stopped after the tests.
 *
 * The gateway command is `$META_MEMORY_PYTHON -m meta_memory.cli` (default `python3`).
 */

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before } from "node:test";

import { MetaHandle, spawnHttpGateway, type SpawnedHttpTransport } from "../src/index.js";

export const PYTHON = process.env.META_MEMORY_PYTHON ?? "python3";
export const GATEWAY_COMMAND: readonly string[] = [PYTHON, "-m", "meta_memory.cli"];

const created: string[] = [];
process.on("exit", () => {
  for (const dir of created) rmSync(dir, { recursive: true, force: true });
});

/** A fresh temporary directory, removed when the test process exits. */
export function tempDir(prefix = "meta-memory-ts-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  created.push(dir);
  return dir;
}

export interface RunningGateway {
  handle: MetaHandle;
  transport: SpawnedHttpTransport;
  stateDir: string;
  url: string;
  stop(): Promise<void>;
}

/** Start `serve --port 0` on a new state directory and return a handle on it. */
export async function startHttpGateway(options: { configPath?: string } = {}): Promise<RunningGateway> {
  const stateDir = join(tempDir(), "state");
  const transport = await spawnHttpGateway({
    stateDir,
    command: GATEWAY_COMMAND,
    ...(options.configPath ? { configPath: options.configPath } : {}),
  });
  const handle = new MetaHandle(transport);
  return {
    handle,
    transport,
    stateDir,
    url: transport.url.replace(/\/rpc$/, ""),
    async stop() {
      await handle.close();
      rmSync(join(stateDir, ".."), { recursive: true, force: true });
    },
  };
}

/**
 * One gateway for a whole test file: started before its first test, stopped after its last.
 * Read `gw` and `handle` inside tests and hooks (they throw before the gateway has started).
 */
export function sharedHttpGateway(options: { configPath?: string } = {}): {
  readonly gw: RunningGateway;
  readonly handle: MetaHandle;
} {
  let running: RunningGateway | undefined;
  before(async () => {
    running = await startHttpGateway(options);
  });
  after(async () => {
    await running?.stop();
  });
  const started = (): RunningGateway => {
    if (!running) throw new Error("the shared gateway has not started yet");
    return running;
  };
  return {
    get gw() {
      return started();
    },
    get handle() {
      return started().handle;
    },
  };
}

/** Assert that `promise` rejects and return the error, for detailed checks. */
export async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error("expected the call to be refused, but it succeeded");
}

/** A small deterministic PRNG (mulberry32) for generated cases. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

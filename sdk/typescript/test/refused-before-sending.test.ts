/**
 * Calls the client refuses before anything is sent, with the shapes the Python client and the gateway
 * use (`InvalidParams`, -32602, `data.field`): a `remember_batch` of more than 1,024 records, and NaN or
 * an infinity anywhere in the params (JSON has no such number; `JSON.stringify` would send `null`).
 */

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { InvalidParams, MAX_BATCH_RECORDS, MetaHandle, type Transport } from "../src/index.js";
import { rejection, sharedHttpGateway } from "./support.js";

/** A transport that records what would have been sent. */
class Recording implements Transport {
  readonly sent: [string, unknown][] = [];
  async call(method: string, params?: Record<string, unknown>): Promise<unknown> {
    this.sent.push([method, params]);
    return { results: [], created: 0, existing: 0, refused: 0, records: [] };
  }
  async close(): Promise<void> {}
}

const shared = sharedHttpGateway();

function item(i: number): { title: string; body: string } {
  return { title: `Note ${i}`, body: `Body number ${i}.` };
}

describe("remember_batch over 1,024 records", () => {
  it("is refused before sending, naming records and the count", async () => {
    const transport = new Recording();
    const handle = new MetaHandle(transport);
    const records = Array.from({ length: MAX_BATCH_RECORDS + 1 }, (_, i) => item(i));
    const err = await rejection(handle.rememberAgentMemoryBatch({ identity: "lead:main", records }));
    assert.ok(err instanceof InvalidParams, String(err));
    assert.equal(err.code, -32602);
    assert.equal(err.kind, "invalid_params");
    assert.equal(err.field, "records");
    assert.match(err.message, /^Invalid params: records must contain at most 1024 records \(got 1025\); /);
    assert.match(err.rule, /not split: send several calls/);
    assert.deepEqual(transport.sent, []);
    // exactly 1,024 goes out
    await handle.rememberAgentMemoryBatch({ identity: "lead:main", records: records.slice(0, MAX_BATCH_RECORDS) });
    assert.equal(transport.sent.length, 1);
  });

  it("writes nothing on a real gateway, and 1,024 records land in one call", async () => {
    const records = Array.from({ length: 1025 }, (_, i) => item(i));
    const err = await rejection(shared.handle.rememberAgentMemoryBatch({ identity: "batcher", records }));
    assert.ok(err instanceof InvalidParams && err.field === "records", String(err));
    const page = await shared.handle.listAgentMemory({ identity: "batcher" });
    assert.deepEqual(page.records, []);
    const done = await shared.handle.rememberAgentMemoryBatch({ identity: "batcher", records: records.slice(0, 1024) });
    assert.equal(done.created, 1024);
  });
});

describe("NaN and Infinity in params", () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ["metadata value", { identity: "lead:main", title: "t", body: "b", metadata: { score: Number.NaN } }, "metadata"],
    ["nested metadata", { identity: "lead:main", title: "t", body: "b", metadata: { a: [{ b: Infinity }] } }, "metadata"],
    ["ttl", { identity: "lead:main", title: "t", body: "b", ttlS: -Infinity }, "ttl_s"],
  ];
  for (const [what, params, field] of cases) {
    it(`refuses ${what} before sending, naming ${field}`, async () => {
      const transport = new Recording();
      const handle = new MetaHandle(transport);
      const err = await rejection(handle.rememberAgentMemory(params as never));
      assert.ok(err instanceof InvalidParams, String(err));
      assert.equal(err.code, -32602);
      assert.equal(err.field, field);
      assert.equal(err.message, `Invalid params: ${field} numbers must be finite (no NaN or Infinity)`);
      assert.deepEqual(transport.sent, []);
    });
  }

  it("refuses them in a batch item and on the raw call too", async () => {
    const transport = new Recording();
    const handle = new MetaHandle(transport);
    const batch = await rejection(handle.rememberAgentMemoryBatch({
      identity: "lead:main", records: [{ title: "t", body: "b", metadata: { x: Number.NaN } }],
    }));
    assert.ok(batch instanceof InvalidParams && batch.field === "records", String(batch));
    const raw = await rejection(handle.call("meta/memory/index", { entity: "e", topic: "t", fact: "f", metadata: { n: Infinity } }));
    assert.ok(raw instanceof InvalidParams && raw.field === "metadata", String(raw));
    assert.deepEqual(transport.sent, []);
    // finite numbers, null and self-referencing shapes the walk meets twice are not refused by it
    const shape: Record<string, unknown> = { n: 1.5, z: null };
    await handle.rememberAgentMemory({ identity: "lead:main", title: "t", body: "b", metadata: { a: shape, b: shape } });
    assert.equal(transport.sent.length, 1);
  });

  it("nothing lands on a real gateway", async () => {
    const err = await rejection(shared.handle.rememberAgentMemory({
      identity: "nan-writer", title: "Score", body: "the score", metadata: { score: Number.NaN },
    }));
    assert.ok(err instanceof InvalidParams && err.field === "metadata", String(err));
    assert.deepEqual((await shared.handle.listAgentMemory({ identity: "nan-writer" })).records, []);
  });
});

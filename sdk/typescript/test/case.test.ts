/** Key casing: camelCase on the TypeScript side, snake_case on the wire, opaque JSON untouched. */

import assert from "node:assert/strict";
import { it } from "node:test";

import { CapacityExceeded, fromJsonRpcError, InvalidParams, MetaMemoryError, paramsToWire, QuarantineReviewRefused, resultFromWire, toCamel, toSnake } from "../src/index.js";
import { prng } from "./support.js";

it("converts keys both ways and round-trips generated snake_case names", () => {
  assert.equal(toSnake("conflictReason"), "conflict_reason");
  assert.equal(toSnake("max_entries"), "max_entries");
  assert.equal(toCamel("recall_timeout_ms"), "recallTimeoutMs");
  assert.equal(toCamel("_system"), "_system");
  const rand = prng(7);
  for (let i = 0; i < 200; i++) {
    const words = Array.from({ length: 1 + Math.floor(rand() * 4) }, () =>
      Array.from({ length: 1 + Math.floor(rand() * 6) }, () => "abcdefghijklmnopqrstuvwxyz"[Math.floor(rand() * 26)]).join(""),
    );
    const snake = words.join("_");
    assert.equal(toSnake(toCamel(snake)), snake);
  }
});

it("leaves opaque members alone and drops undefined params", () => {
  const wire = paramsToWire({
    identity: "a",
    sessionKey: "s",
    queryText: undefined,
    provenance: { kind: "mcp", sourceId: "docs" },
    metadata: { keepMe: { innerKey: 1 } },
    arguments: { action: "recall", query_text: "x", maxEntries: 2 },
  });
  assert.deepEqual(wire, {
    identity: "a",
    session_key: "s",
    provenance: { kind: "mcp", source_id: "docs" },
    metadata: { keepMe: { innerKey: 1 } },
    arguments: { action: "recall", query_text: "x", maxEntries: 2 },
  });
  const result = resultFromWire({ records: [{ memory_id: "m", created_at_ms: 1 }], input_schema: { properties: { memory_id: {} } }, metadata: { a_b: 1 } });
  assert.deepEqual(result, { records: [{ memoryId: "m", createdAtMs: 1 }], inputSchema: { properties: { memory_id: {} } }, metadata: { a_b: 1 } });
});

it("maps JSON-RPC errors to classes by data.kind, then by code", () => {
  const byKind = fromJsonRpcError({ code: -32043, message: "quarantine review refused: x", data: { kind: "memory_quarantine_review_refused", reason: "gate_pending", expires_at_ms: 5 } });
  assert.ok(byKind instanceof QuarantineReviewRefused);
  assert.equal(byKind.reason, "gate_pending");
  assert.equal(byKind.data.expires_at_ms, 5);
  const byCode = fromJsonRpcError({ code: -32602, message: "Invalid params: x" });
  assert.ok(byCode instanceof InvalidParams);
  assert.equal(byCode.kind, "invalid_params");
  assert.equal((byCode as InvalidParams).rule, "x");
  const busy = fromJsonRpcError({ code: -32005, message: "recall refused: 4 recalls of this identity were still running",
    data: { kind: "capacity_exceeded", resource: "recall_slots_per_identity", limit: 4, retry_after_ms: 500 } });
  assert.ok(busy instanceof CapacityExceeded);
  assert.equal(busy.retryAfterMs, 500);
  assert.equal(busy.resource, "recall_slots_per_identity");
  assert.equal(busy.limit, 4);
  assert.ok(fromJsonRpcError({ code: -32005, message: "full" }) instanceof CapacityExceeded);
  const unknown = fromJsonRpcError({ code: -32099, message: "new", data: { kind: "brand_new" } });
  assert.equal(unknown.constructor, MetaMemoryError);
  assert.equal(unknown.code, -32099);
  assert.equal(unknown.kind, "brand_new");
});

it("an unreachable gateway is a TransportError", async () => {
  const { Meta, TransportError } = await import("../src/index.js");
  const h = Meta.connect("http://127.0.0.1:1", { timeoutMs: 2000 });
  await assert.rejects(h.status(), (err: unknown) => err instanceof TransportError && (err as InstanceType<typeof TransportError>).kind === "transport");
});

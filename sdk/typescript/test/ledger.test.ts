/** The assertion ledger from TypeScript, against a real gateway (seed: Indexing, Querying). */

import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";

import { InvalidParams, MetaMemoryError } from "../src/index.js";
import { prng, rejection, sharedHttpGateway } from "./support.js";

const shared = sharedHttpGateway();

describe("meta/memory/index", () => {
  it("stores a canonical assertion and persists the ledger file", async () => {
    const r = await shared.handle.memoryIndex({
      entity: "  Identity:OPS ",
      topic: "Deployment",
      store: " Knowledge_Graph ",
      fact: "  Production deploys require approval. ",
      metadata: { source: "runbook" },
    });
    assert.equal(r.entity, "identity:ops");
    assert.equal(r.topic, "deployment");
    assert.equal(r.store, "knowledge_graph");
    assert.match(r.assertionId ?? "", /^memory-assert-\d{6,}$/);
    assert.equal(r.conflictActive, false);

    const file = join(shared.gw.stateDir, "memory-ledger-state.json");
    assert.ok(existsSync(file), "the ledger is persisted under the state dir");
    const saved = JSON.parse(readFileSync(file, "utf8"));
    const row = saved.assertions.find((a: { assertion_id: string }) => a.assertion_id === r.assertionId);
    assert.equal(row.fact, "Production deploys require approval.", "the fact is trimmed, case kept");
  });

  it("defaults the store to knowledge_graph", async () => {
    const r = await shared.handle.memoryIndex({ entity: "svc:default-store", topic: "t", fact: "f" });
    assert.equal(r.store, "knowledge_graph");
  });

  it("keeps metadata verbatim: its keys are never camelCased", async () => {
    const metadata = { source_url: "https://example.test/a", nested_obj: { inner_key: [1, "two"] } };
    const r = await shared.handle.memoryIndex({ entity: "svc:meta", topic: "opaque", store: "todo", fact: "kept", metadata });
    const q = await shared.handle.memoryQuery({ entity: "svc:meta" });
    assert.equal(q.assertions.length, 1);
    assert.equal(q.assertions[0]!.assertionId, r.assertionId);
    assert.deepEqual(q.assertions[0]!.metadata, metadata);
    assert.equal(typeof q.assertions[0]!.indexedAtMs, "number");
  });

  it("a conflict-only write has no assertion and marks the entity/topic in conflict, in any store", async () => {
    const c = await shared.handle.memoryIndex({ entity: "svc:pay", topic: "limits", conflict: true, conflictReason: " two runbooks disagree " });
    assert.equal(c.assertionId, null);
    assert.equal(c.conflictActive, true);

    const other = await shared.handle.memoryIndex({ entity: "SVC:PAY", topic: "LIMITS", store: "timeline", fact: "limit is 5" });
    assert.notEqual(other.assertionId, null);
    assert.equal(other.conflictActive, true, "conflict_active ignores the store");

    const unrelated = await shared.handle.memoryIndex({ entity: "svc:pay", topic: "fees", fact: "fees are flat" });
    assert.equal(unrelated.conflictActive, false);

    const q = await shared.handle.memoryQuery({ entity: "svc:pay", topic: "limits" });
    assert.equal(q.conflicts.length, 1);
    assert.equal(q.conflicts[0]!.reason, "two runbooks disagree");
    assert.equal(q.conflicts[0]!.store, "knowledge_graph");
  });

  it("a fact with conflict=true records both an assertion and a conflict signal", async () => {
    const r = await shared.handle.memoryIndex({ entity: "svc:both", topic: "x", fact: "both", conflict: true });
    assert.notEqual(r.assertionId, null);
    assert.equal(r.conflictActive, true);
    const q = await shared.handle.memoryQuery({ entity: "svc:both" });
    assert.equal(q.assertions.length, 1);
    assert.equal(q.conflicts.length, 1);
  });
});

describe("meta/memory/query", () => {
  it("filters exactly on normalised tokens and by a case-insensitive substring", async () => {
    await shared.handle.memoryIndex({ entity: "team:alpha", topic: "oncall", store: "vector", fact: "Pager rotates on MONDAY" });
    await shared.handle.memoryIndex({ entity: "team:beta", topic: "oncall", store: "vector", fact: "Pager rotates weekly" });

    const exact = await shared.handle.memoryQuery({ entity: "  TEAM:ALPHA ", topic: "OnCall", store: "VECTOR" });
    assert.deepEqual(exact.assertions.map((a) => a.entity), ["team:alpha"]);

    const sub = await shared.handle.memoryQuery("monday");
    assert.deepEqual(sub.assertions.map((a) => a.fact), ["Pager rotates on MONDAY"]);

    const both = await shared.handle.memoryQuery({ topic: "oncall", query: "PAGER" });
    assert.deepEqual(both.assertions.map((a) => a.entity), ["team:alpha", "team:beta"], "insertion order");

    const prefix = await shared.handle.memoryQuery({ query: "team:" , store: "vector"});
    assert.equal(prefix.assertions.length, 2, "the substring also matches the entity");
  });

  it("treats empty filters as absent", async () => {
    const all = await shared.handle.memoryQuery();
    const blank = await shared.handle.memoryQuery({ entity: "   ", topic: "" });
    assert.equal(blank.assertions.length, all.assertions.length);
    assert.ok(all.assertions.length > 0);
  });

  it("matches the reason of a conflict signal", async () => {
    await shared.handle.memoryIndex({ entity: "svc:q", topic: "r", conflict: true, conflictReason: "Stale Certificate" });
    const q = await shared.handle.memoryQuery("stale certificate");
    assert.deepEqual(q.conflicts.map((c) => c.entity), ["svc:q"]);
    assert.equal(q.assertions.length, 0);
  });

  it("normalises generated entity spellings to one canonical token", async () => {
    const rand = prng(11);
    const letters = "abcdefghijklmnopqrstuvwxyz:-_0123456789";
    const spaces = [" ", "\t", "  ", "\n"];
    for (let i = 0; i < 12; i++) {
      let canonical = "";
      const len = 3 + Math.floor(rand() * 10);
      for (let j = 0; j < len; j++) canonical += letters[Math.floor(rand() * letters.length)];
      canonical = `gen${i}:${canonical}`;
      const spelled = [...canonical].map((c) => (rand() < 0.5 ? c.toUpperCase() : c)).join("");
      const padded = spaces[Math.floor(rand() * spaces.length)] + spelled + spaces[Math.floor(rand() * spaces.length)];
      const r = await shared.handle.memoryIndex({ entity: padded, topic: " T ", fact: `fact ${i}` });
      assert.equal(r.entity, canonical, `${JSON.stringify(padded)} -> ${canonical}`);
      assert.equal(r.topic, "t");
      const q = await shared.handle.memoryQuery({ entity: canonical.toUpperCase() });
      assert.deepEqual(q.assertions.map((a) => a.fact), [`fact ${i}`]);
    }
  });
});

describe("meta/memory/stores", () => {
  it("lists the five stores in the fixed order with their counts", async () => {
    const before = await shared.handle.memoryStores();
    assert.deepEqual(before.map((s) => s.store), ["knowledge_graph", "vector", "timeline", "todo", "top_of_mind"]);
    const topBefore = before.find((s) => s.store === "top_of_mind")!.recordCount;
    await shared.handle.memoryIndex({ entity: "svc:s", topic: "a", store: "top_of_mind", fact: "one" });
    await shared.handle.memoryIndex({ entity: "svc:s", topic: "b", store: "top_of_mind", conflict: true });
    const afterStores = await shared.handle.memoryStores();
    assert.equal(afterStores.find((s) => s.store === "top_of_mind")!.recordCount, topBefore + 2);
  });
});

describe("ledger refusals are InvalidParams (-32602) naming the field", () => {
  const cases: [string, Record<string, unknown>, string, RegExp][] = [
    ["no fact and no conflict", { entity: "e", topic: "t" }, "fact", /^Invalid params: fact is required unless conflict=true$/],
    ["unsupported store", { entity: "e", topic: "t", store: "Graph", fact: "f" }, "store", /store 'graph' is unsupported \(allowed: knowledge_graph, vector, timeline, todo, top_of_mind\)/],
    ["blank entity", { entity: "   ", topic: "t", fact: "f" }, "entity", /entity must be a non-empty string/],
    ["missing topic", { entity: "e", fact: "f" }, "topic", /topic must be a non-empty string/],
    ["blank fact", { entity: "e", topic: "t", fact: "  " }, "fact", /fact must be a non-empty string when provided/],
    ["metadata not an object", { entity: "e", topic: "t", fact: "f", metadata: [1] }, "metadata", /metadata must be a JSON object when provided/],
    ["conflict not a boolean", { entity: "e", topic: "t", conflict: "yes" }, "conflict", /conflict must be a boolean when provided/],
  ];
  for (const [label, params, field, message] of cases) {
    it(label, async () => {
      const err = await rejection(shared.handle.memoryIndex(params as never));
      assert.ok(err instanceof InvalidParams, `${err}`);
      assert.ok(err instanceof MetaMemoryError);
      assert.equal(err.code, -32602);
      assert.equal(err.kind, "invalid_params");
      assert.equal(err.field, field);
      assert.equal(err.data.field, field);
      assert.match(err.message, message);
    });
  }

  it("a refused index writes nothing", async () => {
    const before = await shared.handle.memoryQuery({ entity: "svc:refused" });
    await rejection(shared.handle.memoryIndex({ entity: "svc:refused", topic: "t", store: "nope", fact: "f" }));
    const after = await shared.handle.memoryQuery({ entity: "svc:refused" });
    assert.deepEqual(after, before);
  });

  it("memoryQuery refuses a query of another type before sending", async () => {
    await assert.rejects(shared.handle.memoryQuery(42 as never), /memoryQuery query must be a string, an object, or undefined/);
  });
});

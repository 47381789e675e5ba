/** Agent memory from TypeScript against a real gateway (seed: Agent memory injection). */

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { AgentMemoryError, InvalidParams, MetaMemoryError, RecallSlots, RecordNotFound } from "../src/index.js";
import { rejection, sharedHttpGateway } from "./support.js";

const shared = sharedHttpGateway();

describe("many recalls at once", () => {
  it("answers every one of 64 concurrent recalls of one identity (the handle queues within the gateway's cap)", async () => {
    await shared.handle.rememberAgentMemory({ identity: "crowd", title: "Elm", body: "The elm shades the porch." });
    const answers = await Promise.all(
      Array.from({ length: 64 }, () => shared.handle.recallAgentMemory({ identity: "crowd", queryText: "elm porch" })),
    );
    assert.equal(answers.length, 64);
    for (const a of answers) assert.deepEqual(a.map((r) => r.title), ["Elm"]);
    assert.equal(shared.handle.recallSlots.identities, 0, "no slot is kept once every call ended");
  });

  it("keeps at most the per-identity and the total number of calls in flight", async () => {
    const slots = new RecallSlots(2, 5);
    const inside = new Map<string, number>();
    let inAll = 0;
    let mostAll = 0;
    let mostOne = 0;
    const call = (identity: string) =>
      slots.run("meta/agent_memory/recall", { identity }, async () => {
        inside.set(identity, (inside.get(identity) ?? 0) + 1);
        inAll += 1;
        mostOne = Math.max(mostOne, inside.get(identity) ?? 0);
        mostAll = Math.max(mostAll, inAll);
        await new Promise((resolve) => setTimeout(resolve, 5));
        inside.set(identity, (inside.get(identity) ?? 1) - 1);
        inAll -= 1;
      });
    await Promise.all(Array.from({ length: 60 }, (_, i) => call(`member:${i % 3}`)));
    assert.equal(mostOne, 2);
    assert.equal(mostAll, 5);
    assert.equal(slots.identities, 0);
  });
});

describe("remember / recall / forget / update / manifest", () => {
  it("remembers a record and recalls it for the same identity only", async () => {
    const rec = await shared.handle.rememberAgentMemory({
      identity: "alice",
      title: "  Coffee   order ",
      body: " Alice takes a double espresso, no sugar. ",
      tags: ["Prefs", "drinks"],
    });
    assert.match(rec.memoryId, /\S/);
    assert.equal(rec.title, "Coffee order", "title whitespace is compacted");
    assert.equal(rec.body, "Alice takes a double espresso, no sugar.");
    assert.deepEqual([...rec.tags].sort(), ["drinks", "prefs"]);
    assert.equal(typeof rec.createdAtMs, "number");
    assert.equal(rec.createdAtMs, rec.updatedAtMs);
    assert.equal(rec.created, true);

    const recalled = await shared.handle.recallAgentMemory({ identity: "alice", queryText: "what espresso does alice drink?" });
    assert.deepEqual(recalled.map((r) => r.memoryId), [rec.memoryId]);

    const other = await shared.handle.recallAgentMemory({ identity: "bob", selection: "always" });
    assert.equal(other.length, 0, "memory is identity-scoped");

    const roster = await shared.handle.recallAgentMemory({ identity: "rt:alice:3", selection: "always" });
    assert.deepEqual(roster.map((r) => r.memoryId), [rec.memoryId], "a roster id names the logical identity");
  });

  it("writes many records in one call with a result per record", async () => {
    const out = await shared.handle.rememberAgentMemoryBatch({
      identity: "importer",
      records: [
        { title: "Trip", body: "Flight to Lisbon, seat 12A" },
        { title: "Trip", body: "Flight to Lisbon, seat 12A", tags: ["travel"] },
        { title: "", body: "untitled" },
      ],
    });
    assert.deepEqual([out.created, out.existing, out.refused], [1, 1, 1]);
    assert.deepEqual(out.results.map((r) => r.opIndex), [0, 1, 2]);
    // the duplicate brings a new tag: merged as a single remember would, into a new version
    assert.equal(out.results[1].created, false);
    assert.notEqual(out.results[1].memoryId, out.results[0].memoryId);
    assert.equal(out.results[1].supersedes, out.results[0].memoryId);
    assert.deepEqual(out.results[1].tagsAdded, ["travel"]);
    // the item gets the error a single remember of it would: invalid params naming its field
    assert.equal(out.results[2].error?.code, -32602);
    const hit = await shared.handle.recallAgentMemory({ identity: "importer", queryText: "Lisbon" });
    assert.deepEqual(hit.map((r) => r.memoryId), [out.results[1].memoryId]);
    assert.deepEqual(hit[0].tags, ["travel"]);
  });

  it("returns the existing record for an exact duplicate", async () => {
    const first = await shared.handle.rememberAgentMemory({ identity: "dup", title: "Same", body: "Same body" });
    const again = await shared.handle.rememberAgentMemory({ identity: "dup", title: "Same", body: "Same body" });
    assert.equal(again.memoryId, first.memoryId);
    assert.equal(again.created, false);
  });

  it("contextual recall ignores stopword-only queries; always lists records", async () => {
    await shared.handle.rememberAgentMemory({ identity: "carol", title: "Passport", body: "Carol's passport expires in March 2031" });
    const none = await shared.handle.recallAgentMemory({ identity: "carol", queryText: "the and of is" });
    assert.equal(none.length, 0);
    const hit = await shared.handle.recallAgentMemory({ identity: "carol", queryText: "when does the passport expire" });
    assert.equal(hit.length, 1);
    const all = await shared.handle.recallAgentMemory({ identity: "carol", selection: "always", maxEntries: 1 });
    assert.equal(all.length, 1);
  });

  it("forget removes a record from recall and manifest", async () => {
    const keep = await shared.handle.rememberAgentMemory({ identity: "dave", title: "Keep", body: "Dave's keeper note" });
    const drop = await shared.handle.rememberAgentMemory({ identity: "dave", title: "Drop", body: "Dave's throwaway note" });
    const forgotten = await shared.handle.forgetAgentMemory({ identity: "dave", memoryId: drop.memoryId });
    assert.deepEqual({ memoryId: forgotten.memoryId, deleted: forgotten.deleted }, { memoryId: drop.memoryId, deleted: true });

    const recalled = await shared.handle.recallAgentMemory({ identity: "dave", selection: "always" });
    assert.deepEqual(recalled.map((r) => r.memoryId), [keep.memoryId]);
    const manifest = await shared.handle.manifestAgentMemory({ identity: "dave", tier: "full" });
    assert.deepEqual(manifest.map((m) => m.id), [keep.memoryId]);

    const twice = await shared.handle.forgetAgentMemory({ identity: "dave", memoryId: drop.memoryId });
    assert.equal(twice.deleted, false);
  });

  it("history lists a record's versions oldest first, with the reason each changed", async () => {
    const v1 = await shared.handle.rememberAgentMemory({ identity: "hana", title: "Desk", body: "Hana sits on floor 3", tags: ["office"] });
    const v2 = await shared.handle.updateAgentMemory({ identity: "hana", memoryId: v1.memoryId, body: "Hana sits on floor 5" });
    const merged = await shared.handle.rememberAgentMemory({ identity: "hana", title: "Desk", body: "Hana sits on floor 5", tags: ["desk"] });
    assert.equal(merged.supersedes, v2.memoryId);
    await shared.handle.forgetAgentMemory({ identity: "hana", memoryId: merged.memoryId });

    const history = await shared.handle.historyAgentMemory({ identity: "hana", memoryId: v2.memoryId });
    assert.equal(history.order, "oldest_first");
    assert.equal(history.truncated, false);
    assert.deepEqual(history.versions.map((v) => v.memoryId), [v1.memoryId, v2.memoryId, merged.memoryId]);
    assert.deepEqual(history.versions.map((v) => v.reason), ["created", "update", "tag_merge"]);
    assert.deepEqual(history.versions.map((v) => v.status), ["superseded", "superseded", "tombstoned"]);
    assert.deepEqual(history.versions[2]!.changes.map((c) => c.change), ["tag_merge", "forget"]);
    assert.equal(history.versions[0]!.supersededBy, v2.memoryId);
    assert.equal(history.versions[0]!.body, "Hana sits on floor 3");
    assert.deepEqual(history.versions[0]!.author, { author: "application" });
    assert.equal(typeof history.versions[1]!.changes[0]!.atMs, "number");

    for (const [identity, memoryId] of [["ivan", v1.memoryId], ["hana", "mem-unknown"]] as const) {
      const err = await rejection(shared.handle.historyAgentMemory({ identity, memoryId }));
      assert.ok(err instanceof RecordNotFound, `${identity} ${memoryId}: ${err}`);
    }
    const bad = await rejection(shared.handle.historyAgentMemory({ identity: "hana", memoryId: " " }));
    assert.ok(bad instanceof InvalidParams);
  });

  it("update supersedes a record with a new version", async () => {
    const v1 = await shared.handle.rememberAgentMemory({ identity: "erin", title: "Desk", body: "Erin sits on floor 3" });
    const up = await shared.handle.updateAgentMemory({ identity: "erin", memoryId: v1.memoryId, title: "Desk", body: "Erin sits on floor 5", tags: ["office"] });
    assert.equal(up.supersedes, v1.memoryId);
    assert.notEqual(up.memoryId, v1.memoryId);

    const recalled = await shared.handle.recallAgentMemory({ identity: "erin", selection: "always" });
    assert.deepEqual(recalled.map((r) => r.body), ["Erin sits on floor 5"]);
    assert.deepEqual(recalled[0]!.tags, ["office"]);
  });

  it("stores metadata as given and filters recall and list by it (keys never re-cased)", async () => {
    const who = "fatima";
    await shared.handle.rememberAgentMemory({ identity: who, title: "Espresso", body: "Fatima drinks coffee black",
      metadata: { topicName: "coffee", rating: 9, place: { cityName: "Lisbon" } } });
    await shared.handle.rememberAgentMemory({ identity: who, title: "Latte", body: "Fatima drinks coffee with milk",
      metadata: { topicName: "coffee", rating: 4 } });
    const high = await shared.handle.recallAgentMemory({ identity: who, queryText: "coffee",
      filter: { rating: { $gte: 8 } } });
    assert.deepEqual(high.map((r) => r.title), ["Espresso"]);
    assert.deepEqual(high[0]!.metadata, { place: { cityName: "Lisbon" }, rating: 9, topicName: "coffee" });
    const page = await shared.handle.listAgentMemory({ identity: who, filter: { "place.cityName": "Lisbon" } });
    assert.deepEqual(page.records.map((r) => r.title), ["Espresso"]);
    const err = await rejection(shared.handle.listAgentMemory({ identity: who, filter: { rating: { $regex: "9" } } }));
    assert.ok(err instanceof InvalidParams && /\$regex/.test(err.message), String(err));
  });

  it("manifest returns body-free metadata", async () => {
    const rec = await shared.handle.rememberAgentMemory({ identity: "frank", title: "Editor", body: "Frank uses vim" });
    const rows = await shared.handle.manifestAgentMemory({ identity: "frank" });
    assert.equal(rows.length, 1);
    const row = rows[0]!;
    assert.equal(row.id, rec.memoryId);
    assert.equal(row.title, "Editor");
    assert.equal(row.kind, "fact");
    assert.equal(row.ageDays, 0);
    assert.ok(!("body" in row));
  });

  it("realms are separate", async () => {
    await shared.handle.rememberAgentMemory({ identity: "gina", realm: "family", title: "Birthday", body: "Gina's birthday is 4 May" });
    assert.equal((await shared.handle.recallAgentMemory({ identity: "gina", selection: "always" })).length, 0);
    assert.equal((await shared.handle.recallAgentMemory({ identity: "gina", realm: "family", selection: "always" })).length, 1);
  });
});

describe("agent-memory refusals", () => {
  it("a secret is refused with AgentMemoryError (-32040, reason secret_detected)", async () => {
    const err = await rejection(
      shared.handle.rememberAgentMemory({ identity: "alice", title: "AWS", body: "the key is AKIAIOSFODNN7EXAMPLE" }),
    );
    assert.ok(err instanceof AgentMemoryError, `${err}`);
    assert.ok(err instanceof MetaMemoryError);
    assert.equal(err.code, -32040);
    assert.equal(err.kind, "agent_memory");
    assert.equal(err.reason, "secret_detected");
    assert.equal(err.opIndex, 0);
    assert.equal(err.secretClass, "aws-access-key-id");
    assert.equal(err.data.reason, "secret_detected");
    assert.match(err.message, /^invalid agent memory record: /);
    assert.ok(!err.message.includes("AKIAIOSFODNN7EXAMPLE"), "the secret is not echoed");
  });

  const invalid: [string, () => Promise<unknown>, string, RegExp][] = [
    ["blank identity", () => shared.handle.rememberAgentMemory({ identity: "  ", title: "t", body: "b" }), "identity", /identity must be a valid non-empty string/],
    ["title over 200 bytes", () => shared.handle.rememberAgentMemory({ identity: "a", title: "é".repeat(101), body: "b" }), "title", /title must be at most 200 bytes/],
    ["max_entries over 64", () => shared.handle.recallAgentMemory({ identity: "a", maxEntries: 65 }), "max_entries", /max_entries must be between 1 and 64/],
    ["max_entries zero", () => shared.handle.recallAgentMemory({ identity: "a", maxEntries: 0 }), "max_entries", /max_entries must be a positive integer when provided/],
    ["k with tier full", () => shared.handle.manifestAgentMemory({ identity: "a", tier: "full", k: 3 }), "", /k is only valid with tier 'working_set'/],
    ["update without memory_id", () => shared.handle.updateAgentMemory({ identity: "a", memoryId: " ", title: "t", body: "b" }), "memory_id", /memory_id must not be empty/],
  ];
  it("a whitespace-only query_text returns no records and says why", async () => {
    const out = await shared.handle.call("meta/agent_memory/recall", { identity: "a", query_text: "   " });
    assert.deepEqual(out, { records: [], skip_reason: "no_query_terms" });
  });
  for (const [label, call, field, message] of invalid) {
    it(`${label} is InvalidParams`, async () => {
      const err = await rejection(call());
      assert.ok(err instanceof InvalidParams, `${err}`);
      assert.equal(err.code, -32602);
      if (field) assert.equal(err.field, field);
      assert.match(err.message, message);
    });
  }
});

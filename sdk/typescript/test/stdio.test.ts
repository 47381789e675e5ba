/** The stdio transport: a spawned `gateway --stdio`, calls matched by id, typed errors, clean exit. */

import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";

import { InvalidParams, Meta, MethodNotFound, StartupError, StdioTransport, TransportError } from "../src/index.js";
import { GATEWAY_COMMAND, rejection, tempDir } from "./support.js";

describe("stdio gateway", () => {
  it("serves the ledger and agent memory; concurrent calls are matched to their answers", async () => {
    const h = await Meta.spawn(join(tempDir(), "state"), { command: GATEWAY_COMMAND });
    try {
      const caps = await h.capabilities();
      assert.ok(caps.methods.includes("meta/memory/index"));
      assert.equal(typeof caps.memory.canRead, "boolean");

      const results = await Promise.all(
        Array.from({ length: 25 }, (_, i) => h.memoryIndex({ entity: `svc:${i}`, topic: "load", fact: `fact ${i}` })),
      );
      results.forEach((r, i) => assert.equal(r.entity, `svc:${i}`));
      assert.equal(new Set(results.map((r) => r.assertionId)).size, 25);

      const rec = await h.rememberAgentMemory({ identity: "stdio-bot", title: "Pipe", body: "Answers travel over stdout" });
      const recalled = await h.recallAgentMemory({ identity: "stdio-bot", selection: "always" });
      assert.deepEqual(recalled.map((r) => r.memoryId), [rec.memoryId]);

      const err = await rejection(h.memoryIndex({ entity: "e", topic: "t" }));
      assert.ok(err instanceof InvalidParams);
      assert.equal(err.field, "fact");

      const missing = await rejection(h.call("meta/no_such_method"));
      assert.ok(missing instanceof MethodNotFound, `${missing}`);
      assert.equal(missing.code, -32601);
      assert.equal(missing.kind, "method_not_found");

      const raw = (await h.call("meta/memory/stores")) as { stores: { record_count: number }[] };
      assert.equal(typeof raw.stores[0]!.record_count, "number", "call() returns the raw wire result");
    } finally {
      await h.close();
    }
  });

  it("closing stops the process; later calls fail with TransportError", async () => {
    const transport = new StdioTransport({ stateDir: join(tempDir(), "state"), command: GATEWAY_COMMAND });
    await transport.call("meta/status");
    await transport.close();
    const err = await rejection(transport.call("meta/status"));
    assert.ok(err instanceof TransportError, `${err}`);
    assert.equal(err.kind, "transport");
  });

  it("a configuration the gateway refuses is a StartupError with its message", async () => {
    const dir = tempDir();
    const config = join(dir, "bad.toml");
    writeFileSync(config, '[memory]\nkind = "elephant"\nendpoint = "http://localhost:3000"\n');
    const err = await rejection(Meta.spawn(join(dir, "state"), { command: GATEWAY_COMMAND, configPath: config }));
    assert.ok(err instanceof StartupError, `${err}`);
    assert.match(err.message, /local_json/);
  });
});

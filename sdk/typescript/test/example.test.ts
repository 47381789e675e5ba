/** examples/host.ts runs end to end: the poisoned write is quarantined, the clean one injected. */

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { it } from "node:test";
import { promisify } from "node:util";

import { GATEWAY_COMMAND, tempDir } from "./support.js";

const HOST = fileURLToPath(new URL("../examples/host.js", import.meta.url));

it("the example host loop quarantines the injected write and injects the clean one", async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [HOST], {
    env: { ...process.env, META_MEMORY_GATEWAY: GATEWAY_COMMAND.join(" "), META_MEMORY_STATE_DIR: join(tempDir(), "state") },
    timeout: 60_000,
  });
  assert.match(stdout, /\[tool web_fetch\] trusted=false session_tainted=true/);
  assert.match(stdout, /\[memory\] Stored memory \S+ — stored but QUARANTINED/);
  assert.match(stdout, /\[host\] reset concierge-1: tainted=false/);
  const line = stdout.split("\n").find((l) => l.startsWith("RESULT "));
  assert.ok(line, stdout);
  assert.deepEqual(JSON.parse(line.slice("RESULT ".length)), { quarantined: true, injectedPreference: true, injectedPoison: false });
});

const AI_SDK = fileURLToPath(new URL("../examples/ai_sdk_memory.js", import.meta.url));

it("the AI SDK example quarantines the write after the hostile page and injects the clean one", async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [AI_SDK], {
    env: { ...process.env, META_MEMORY_GATEWAY: GATEWAY_COMMAND.join(" "), META_MEMORY_STATE_DIR: join(tempDir(), "state") },
    timeout: 60_000,
  });
  const line = stdout.split("\n").find((l) => l.startsWith("RESULT "));
  assert.ok(line, stdout);
  assert.deepEqual(JSON.parse(line.slice("RESULT ".length)), {
    statuses: { "Refund account": "quarantined", Diet: "active" },
    injectedDiet: true,
    injectedClaim: false,
  });
});

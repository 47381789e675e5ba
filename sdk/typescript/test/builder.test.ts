/**
 * The builder: option names checked as the Python SDK checks them (compared with the Python
 * SDK's own messages), `memory.localJson()` / `memory.elephant()`, and spawned gateways that
 * really run with the options given (health check, llm_writes, recorder_tool, bad values).
 */

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import {
  AGENT_MEMORY_KEYS,
  AccessDenied,
  AgentMemoryError,
  ConfigError,
  MemoryBackendUnavailable,
  Meta,
  MethodNotFound,
  MetaMemoryError,
  StartupError,
  agentMemoryToWire,
  memory,
} from "../src/index.js";
import { GATEWAY_COMMAND, PYTHON, rejection, tempDir } from "./support.js";

/** The Python SDK's refusal for the same agent_memory options (or "ok"). */
function pythonRefusal(options: unknown): string {
  const script = [
    "import json, sys",
    "from meta_memory.sdk import Meta",
    "try:",
    "    Meta.builder().agent_memory(json.loads(sys.argv[1]))._config()",
    "    print('ok')",
    "except Exception as exc:",
    "    print(exc)",
  ].join("\n");
  return execFileSync(PYTHON, ["-c", script, JSON.stringify(options)], { encoding: "utf8" }).trim();
}

function tsRefusal(options: Record<string, unknown>): string {
  try {
    agentMemoryToWire(options);
    return "ok";
  } catch (err) {
    assert.ok(err instanceof ConfigError, `${err}`);
    return (err as Error).message;
  }
}

describe("agentMemory options", () => {
  it("camelCase options go on the wire as exactly the snake_case keys given", () => {
    const wire = agentMemoryToWire({
      realm: "family",
      selection: "contextual",
      maxEntries: 3,
      recallTimeoutMs: 1200,
      recallFailurePolicy: "fail",
      instructionHeader: "Remember",
    });
    assert.deepEqual(wire, {
      realm: "family",
      selection: "contextual",
      max_entries: 3,
      recall_timeout_ms: 1200,
      recall_failure_policy: "fail",
      instruction_header: "Remember",
    });
    assert.deepEqual(agentMemoryToWire({ max_entries: 2, contentTrust: { trustedMcpServers: ["docs"] } }), {
      max_entries: 2,
      content_trust: { trusted_mcp_servers: ["docs"] },
    });
    assert.deepEqual(agentMemoryToWire({ contentTrust: { default: "untrusted", trustedTools: ["calc"] } }), {
      content_trust: { default: "untrusted", trusted_tools: ["calc"] },
    });
    assert.deepEqual(agentMemoryToWire(false), { enabled: false });
    assert.deepEqual(agentMemoryToWire(true), {});
  });

  it("knows the same keys as the Python configuration", () => {
    const keys = execFileSync(
      PYTHON,
      ["-c", "from meta_memory.agent_memory.config import AgentMemoryConfig; print(' '.join(AgentMemoryConfig.model_fields))"],
      { encoding: "utf8" },
    ).trim();
    assert.deepEqual([...AGENT_MEMORY_KEYS], keys.split(" "));
  });

  const refused: Record<string, unknown>[] = [
    { maxEntriez: 3 },
    { bogus: 1, other: 2, realm: "r" },
    { contentTrust: { trustedTool: ["x"] } },
    { content_trust: { trustedTools: "x" } },
    { contentTrust: { untrustedTools: ["ok", " "] } },
    { contentTrust: ["x"] },
    { contentTrust: { default: "paranoid" } },
  ];
  for (const options of refused) {
    it(`refuses ${JSON.stringify(options)} with the Python SDK's message`, () => {
      const ours = tsRefusal(options);
      assert.notEqual(ours, "ok");
      assert.equal(ours, pythonRefusal(options));
    });
  }

  it("the builder method refuses unknown options at once", () => {
    assert.throws(() => Meta.builder().agentMemory({ maxEntriez: 3 }), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.match((err as Error).message, /^agent_memory: unsupported key 'maxEntriez' \(allowed: enabled, realm, /);
      return true;
    });
  });
});

describe("memory backends", () => {
  it("localJson takes only healthCheckEndpoint", () => {
    assert.deepEqual(memory.localJson().toWire(), { kind: "local_json" });
    assert.deepEqual(memory.localJson({ healthCheckEndpoint: " http://127.0.0.1:9/ " }).toWire(), {
      kind: "local_json",
      health_check_endpoint: "http://127.0.0.1:9/",
    });
    assert.throws(() => memory.localJson({ endpoint: "http://x" } as never), /^ConfigError: localJson\(\) got unsupported option\(s\): endpoint$/);
    assert.throws(() => memory.localJson({ healthCheckEndpoint: "  " }), /health_check_endpoint must not be empty when provided/);
    assert.throws(() => memory.localJson({ healthCheckEndpoint: "ftp://x" }), /must start with http:\/\/ or https:\/\//);
  });

  it("elephant() is refused with a pointer to localJson", () => {
    assert.throws(() => memory.elephant("http://localhost:3000"), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.match((err as Error).message, /local_json/);
      assert.match((err as Error).message, /memory\.localJson\(\{ healthCheckEndpoint \}\)/);
      return true;
    });
  });

  it("memory() refuses anything but localJson, naming unsupported options", () => {
    assert.throws(() => Meta.builder().memory({ stores: ["x"], collection: "c" } as never), /^ConfigError: memory\(\) got unsupported option\(s\): collection, stores$/);
    assert.throws(() => Meta.builder().memory("elephant" as never), /local_json is the only ledger backend/);
  });
});

describe("spawn and connect", () => {
  it("spawn() needs persistentState", async () => {
    await assert.rejects(Meta.builder().spawn(), (err: unknown) => err instanceof ConfigError && /persistentState/.test((err as Error).message));
  });

  it("connect() refuses gateway options instead of ignoring them", () => {
    assert.throws(() => Meta.builder().persistentState("/tmp/x").agentMemory({ maxEntries: 2 }).connect("http://127.0.0.1:1"), /persistentState\(\), agentMemory\(\) apply to spawn\(\) only/);
  });

  it("a value the gateway refuses rejects spawn() with its message", async () => {
    const err = await rejection(
      Meta.builder().persistentState(join(tempDir(), "s")).agentMemory({ selection: "sometimes" as never }).gatewayCommand(GATEWAY_COMMAND).spawn(),
    );
    assert.ok(err instanceof StartupError, `${err}`);
    assert.match(err.message, /agent_memory\.selection: must be one of 'always', 'contextual' \(got 'sometimes'\)/);
  });

  it("spawned with llmWrites 'quarantined', every memory-tool write is quarantined", async () => {
    const h = await Meta.builder()
      .persistentState(join(tempDir(), "s"))
      .agentMemory({ llmWrites: "quarantined", maxEntries: 4 })
      .gatewayCommand(GATEWAY_COMMAND)
      .spawn();
    try {
      await h.sessionNote({ identity: "a", sessionKey: "k" });
      const out = await h.agentMemoryTool({ identity: "a", sessionKey: "k", arguments: { action: "remember", title: "t", body: "clean session write" } });
      assert.match(out.text, /QUARANTINED/);
    } finally {
      await h.close();
    }
  });

  it("spawned with recorderTool false, the memory tool methods are not advertised", async () => {
    const h = await Meta.builder()
      .persistentState(join(tempDir(), "s"))
      .agentMemory({ recorderTool: false })
      .gatewayCommand(GATEWAY_COMMAND)
      .spawn({ transport: "http" });
    try {
      const err = await rejection(h.agentMemoryToolSchema());
      assert.ok(err instanceof MethodNotFound, `${err}`);
      assert.equal(err.code, -32601);
      assert.match(err.message, /recorder_tool = false/);
      const caps = await h.capabilities();
      assert.ok(!caps.methods.includes("meta/agent_memory/tool"));
    } finally {
      await h.close();
    }
  });
});

describe("health-checked ledger (memory.localJson({ healthCheckEndpoint }))", () => {
  let healthy = true;
  let server: Server;
  let endpoint: string;

  before(async () => {
    server = createServer((req, res) => {
      res.statusCode = req.url === "/v1/health" && healthy ? 200 : 503;
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it("a failed health check is MemoryBackendUnavailable (-32010) and the write is rolled back", async () => {
    healthy = true;
    const h = await Meta.builder()
      .persistentState(join(tempDir(), "s"))
      .memory(memory.localJson({ healthCheckEndpoint: endpoint }))
      .gatewayCommand(GATEWAY_COMMAND)
      .spawn({ transport: "http" });
    try {
      await h.memoryIndex({ entity: "svc:a", topic: "t", fact: "kept" });
      healthy = false;
      const err = await rejection(h.memoryIndex({ entity: "svc:a", topic: "t", fact: "rolled back" }));
      assert.ok(err instanceof MemoryBackendUnavailable, `${err}`);
      assert.ok(err instanceof MetaMemoryError);
      assert.equal(err.code, -32010);
      assert.equal(err.kind, "memory_backend");
      assert.match(err.message, /^Memory backend unavailable: /);
      assert.match(err.reason ?? "", /503/);
      const q = await h.memoryQuery({ entity: "svc:a" });
      assert.deepEqual(q.assertions.map((a) => a.fact), ["kept"]);
      healthy = true;
      await h.memoryIndex({ entity: "svc:a", topic: "t", fact: "back" });
      assert.equal((await h.memoryQuery({ entity: "svc:a" })).assertions.length, 2);
    } finally {
      healthy = true;
      await h.close();
    }
  });

  it("an unhealthy endpoint at start-up refuses the gateway", async () => {
    healthy = false;
    try {
      const err = await rejection(
        Meta.builder().persistentState(join(tempDir(), "s")).memory(memory.localJson({ healthCheckEndpoint: endpoint })).gatewayCommand(GATEWAY_COMMAND).spawn(),
      );
      assert.ok(err instanceof StartupError, `${err}`);
      assert.match(err.message, /503/);
    } finally {
      healthy = true;
    }
  });
});

describe("rosterProvider (the spec's injection example)", () => {
  const supportReads = {
    enabled: true,
    grants: ["agent.memory.read", "agent.view", "agent.memory.write"].map((action) => ({
      action,
      who: { anyone: true },
      on: { role: "support" },
    })),
  };

  it("writes the entries after access({ roster }) as [[access.roster]] tables", () => {
    const toml = Meta.builder()
      .access({ enabled: true, roster: [{ identity: "support:desk", roles: ["support"] }] })
      .rosterProvider([{ identity: "support:night", roles: ["support"], labels: ["night"] }])
      .configToml();
    assert.match(
      toml,
      /roster = \[\{ identity = "support:desk", roles = \["support"\] \}, \{ identity = "support:night", roles = \["support"\], labels = \["night"\] \}\]/,
    );
  });

  it("refuses what is not a roster, and a function is called by spawn() only", async () => {
    assert.throws(() => Meta.builder().rosterProvider("support:desk" as never), ConfigError);
    assert.throws(() => Meta.builder().rosterProvider({ identity: "x" } as never), ConfigError);
    assert.throws(() => Meta.builder().rosterProvider(() => []).configToml(), /spawn\(\) calls it/);
    assert.throws(() => Meta.builder().rosterProvider([42 as never]).configToml(), /access\.roster\[0\]/);
    assert.throws(() => Meta.builder().rosterProvider([]).connect("http://127.0.0.1:1"), /rosterProvider\(\) apply to spawn\(\) only/);
    const failing = Meta.builder()
      .persistentState(join(tempDir(), "state"))
      .gatewayCommand(GATEWAY_COMMAND)
      .rosterProvider(async () => {
        throw new Error("directory service down");
      });
    await assert.rejects(failing.spawn(), /rosterProvider: the provider failed: directory service down/);
  });

  it("gives a spawned gateway the roles its access rules match", async () => {
    const handle = await Meta.builder()
      .persistentState(join(tempDir(), "state"))
      .gatewayCommand(GATEWAY_COMMAND)
      .access(supportReads)
      .rosterProvider(async () => [{ identity: "support:desk", roles: ["support"] }])
      .spawn();
    try {
      await handle.rememberAgentMemory({ identity: "support:desk", title: "Escalation", body: "Page the lead after 10 minutes." });
      const got = await handle.recallAgentMemory({ identity: "support:desk", queryText: "escalation" });
      assert.deepEqual(got.map((r) => r.title), ["Escalation"]);
      await assert.rejects(handle.recallAgentMemory({ identity: "intern:x", queryText: "escalation" }), AccessDenied);
    } finally {
      await handle.close();
    }
  });

  it("a bad entry is refused by the gateway naming the key", async () => {
    const spawning = Meta.builder()
      .persistentState(join(tempDir(), "state"))
      .gatewayCommand(GATEWAY_COMMAND)
      .rosterProvider([{ identity: "a:b", role: ["x"] } as never])
      .spawn();
    await assert.rejects(spawning, (err: unknown) => err instanceof StartupError && /access\.roster\[0\]\.role: unknown key/.test(err.message));
  });
});

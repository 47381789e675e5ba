/**
 * `Meta.connect()` and a handle's lifetime: a URL that cannot name a gateway is refused before
 * anything is sent, with the Python SDK's own message, and a closed handle refuses every call
 * whatever its transport; a URL where something else answers is a `NotAGateway` with the Python SDK's
 * message.
 */

import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { promisify } from "node:util";
import { describe, it } from "node:test";

import { ConfigError, Meta, NotAGateway, TransportError } from "../src/index.js";
import { GATEWAY_COMMAND, PYTHON, rejection, sharedHttpGateway, tempDir } from "./support.js";

const shared = sharedHttpGateway();

/** The Python SDK's refusal of `Meta.connect(url)` (or "ok"). */
function pythonRefusal(url: string): string {
  const script = [
    "import sys",
    "from meta_memory.sdk import Meta",
    "try:",
    "    Meta.connect(sys.argv[1]).close()",
    "    print('ok')",
    "except Exception as exc:",
    "    print(exc)",
  ].join("\n");
  return execFileSync(PYTHON, ["-c", script, url], { encoding: "utf8" }).trim();
}

function tsRefusal(url: string): string {
  try {
    Meta.connect(url);
    return "ok";
  } catch (err) {
    assert.ok(err instanceof ConfigError, `${err}`);
    return (err as Error).message;
  }
}

describe("Meta.connect(url)", () => {
  for (const url of ["localhost:8765", "ftp://127.0.0.1:8765", "not a url", "", "http://", "http:///rpc",
    "http://bob:hunter2pw@127.0.0.1:8765", "http://bob@127.0.0.1:8765", "http://bob:hunter2pw@:1",
    "http://127.0.0.1:8765?x=1", "http://127.0.0.1:8765/#f", "http://127.0.0.1:notaport",
    "http://127.0.0.1:99999", "http://127.0.0.1:0", "http://[::1", "http://127.0.0.1:1/r pc"]) {
    it(`refuses ${JSON.stringify(url)} as the Python SDK does`, () => {
      const ts = tsRefusal(url);
      assert.notEqual(ts, "ok");
      assert.equal(ts, pythonRefusal(url));
    });
  }

  for (const url of ["http://127.0.0.1:8765", " https://gw.example:443/ ", "http://127.0.0.1:8765/rpc"]) {
    it(`accepts ${JSON.stringify(url)}`, () => {
      assert.equal(tsRefusal(url), "ok");
      assert.equal(pythonRefusal(url), "ok");
    });
  }

  it("the builder's connect() checks the URL too", () => {
    assert.throws(() => Meta.builder().connect("localhost:8765"), ConfigError);
  });
});

describe("Meta.connect(url, { timeoutMs })", () => {
  for (const timeoutMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, "30000"]) {
    it(`refuses timeoutMs ${String(timeoutMs)} at once instead of failing every call as unreachable`, () => {
      assert.throws(
        () => Meta.connect("http://127.0.0.1:8765", { timeoutMs: timeoutMs as number }),
        (err: unknown) => err instanceof ConfigError && /timeoutMs must be a positive number of milliseconds/.test(`${err}`),
      );
    });
  }

  it("a short positive budget still reaches the gateway", async () => {
    const handle = Meta.connect(shared.gw.url, { timeoutMs: 5_000 });
    assert.ok(Array.isArray(await handle.recallAgentMemory({ identity: "timer", selection: "always" })));
  });
});

describe("a closed handle", () => {
  it("over HTTP refuses every call, typed and raw, instead of still sending it", async () => {
    const handle = Meta.connect(shared.gw.url);
    await handle.rememberAgentMemory({ identity: "closer", title: "Before", body: "Written before close." });
    await handle.close();
    await handle.close(); // idempotent
    const typed = await rejection(handle.rememberAgentMemory({ identity: "closer", title: "After", body: "Must not land." }));
    assert.ok(typed instanceof TransportError, `${typed}`);
    assert.match(typed.message, /handle is closed/);
    const raw = await rejection(handle.call("meta/capabilities"));
    assert.ok(raw instanceof TransportError, `${raw}`);
    const titles = (await shared.handle.recallAgentMemory({ identity: "closer", selection: "always" })).map((r) => r.title);
    assert.deepEqual(titles, ["Before"]);
  });

  it("refuses the recalls still queued behind the gateway's caps when it is closed", async () => {
    const handle = Meta.connect(shared.gw.url);
    const calls = Array.from({ length: 8 }, () => handle.recallAgentMemory({ identity: "queued", selection: "always" }));
    await handle.close();
    const settled = await Promise.allSettled(calls);
    const refused = settled.filter((s) => s.status === "rejected").map((s) => (s as PromiseRejectedResult).reason);
    assert.ok(refused.length >= 1, "the queued recalls are refused");
    for (const err of refused) {
      assert.ok(err instanceof TransportError && /handle is closed/.test(err.message), `${err}`);
    }
  });

  it("over stdio says the handle is closed, not that the gateway exited", async () => {
    const handle = await Meta.spawn(tempDir(), { command: GATEWAY_COMMAND });
    await handle.close();
    const err = await rejection(handle.recallAgentMemory({ identity: "closer", selection: "always" }));
    assert.ok(err instanceof TransportError, `${err}`);
    assert.match(err.message, /handle is closed/);
  });
});

/** A local HTTP server that is not a gateway: it answers every request with `status`, `contentType`, `body`. */
async function otherService(status: number, contentType: string | null, body: string): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((_req, res) => {
    res.writeHead(status, contentType === null ? {} : { "content-type": contentType });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The Python SDK's message for a call on `Meta.connect(url)` (the server keeps answering meanwhile). */
async function pythonCallError(url: string): Promise<string> {
  const script = [
    "import sys",
    "from meta_memory.sdk import Meta, NotAGateway",
    "h = Meta.connect(sys.argv[1])",
    "try:",
    "    h.call('meta/capabilities', {})",
    "    print('ok')",
    "except NotAGateway as exc:",
    "    print(exc)",
    "finally:",
    "    h.close()",
  ].join("\n");
  const { stdout } = await promisify(execFile)(PYTHON, ["-c", script, url], { encoding: "utf8" });
  return stdout.trim();
}

describe("a URL where something else answers", () => {
  const services: Array<[string, number, string | null, string]> = [
    ["an HTML error page", 404, "text/html; charset=utf-8", "<html><body>Not Found</body></html>"],
    ["another service's JSON", 200, "application/json", '{"status": "ok"}'],
    ["an empty reply without a content type", 502, null, ""],
  ];
  for (const [what, status, contentType, body] of services) {
    it(`${what} is a NotAGateway naming the URL and the HTTP status, as in the Python SDK`, async () => {
      const service = await otherService(status, contentType, body);
      try {
        const handle = Meta.connect(service.url);
        const err = await rejection(handle.recallAgentMemory({ identity: "lost", selection: "always" }));
        assert.ok(err instanceof NotAGateway, `${err}`);
        assert.ok(err instanceof TransportError);
        assert.equal(err.kind, "transport");
        assert.equal(err.url, `${service.url}/rpc`);
        assert.equal(err.status, status);
        assert.match(err.message, new RegExp(`^${service.url}/rpc is not a meta-memory gateway: it answered HTTP ${status} `));
        assert.equal(err.message, await pythonCallError(service.url));
      } finally {
        await service.close();
      }
    });
  }
});

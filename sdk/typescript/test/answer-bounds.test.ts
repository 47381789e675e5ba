/**
 * A handle reads a gateway's answer within bounds, whatever answers at the URL (the Python SDK's rules):
 * the whole call, headers and body however slowly they trickle, within `timeoutMs`; at most
 * `maxAnswerBytes` of body, refused unread when its `Content-Length` declares more, and counted as it
 * streams in otherwise; and never a redirect followed. Against a local server that misbehaves.
 */

import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";

import { ConfigError, Meta, NotAGateway, TransportError, UnreadableAnswer } from "../src/index.js";
import { rejection } from "./support.js";

const HEAD = '{"jsonrpc": "2.0", "id": 1, "result": ';
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function misbehave(req: IncomingMessage, res: ServerResponse): Promise<void> {
  for await (const _ of req) {
    /* drain the request */
  }
  const path = req.url ?? "";
  try {
    if (path.startsWith("/slowheaders")) {
      const socket = res.socket!;
      socket.write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Slow: ");
      for (let i = 0; i < 300 && !socket.destroyed; i++) {
        socket.write("a");
        await sleep(100);
      }
      socket.destroy();
    } else if (path.startsWith("/trickle")) {
      res.writeHead(200, { "content-type": "application/json" });
      res.write(HEAD + '"');
      for (let i = 0; i < 300 && !res.destroyed; i++) {
        res.write("a");
        await sleep(100);
      }
      res.end('"}');
    } else if (path.startsWith("/declared")) {
      res.writeHead(200, { "content-type": "application/json", "content-length": String(2 ** 40) });
      res.write(HEAD + '"a"}');
      await sleep(3000); // claims a terabyte, sends a few bytes, and holds the connection
      res.socket?.destroy();
    } else if (path.startsWith("/flood")) {
      res.writeHead(200, { "content-type": "application/json" });
      res.write(HEAD + '"');
      const chunk = "a".repeat(65536);
      for (let i = 0; i < 64 && !res.destroyed; i++) res.write(chunk);
      res.end('"}');
    } else if (path.startsWith("/dropped")) {
      res.socket?.destroy(); // read the call, then closed without an answer (a gateway stopped mid-call)
    } else if (path.startsWith("/cutshort")) {
      res.writeHead(200, { "content-type": "application/json", "content-length": "1000" });
      res.write(HEAD + '"a');
      await sleep(50);
      res.socket?.destroy(); // the answer began, then the gateway stopped
    } else if (path.startsWith("/redirect")) {
      res.writeHead(307, { location: "/elsewhere/rpc", "content-length": "0" });
      res.end();
    } else if (path.startsWith("/elsewhere")) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(HEAD + '{"redirected": true}}');
    } else {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(HEAD + '{"fine": true}}');
    }
  } catch {
    /* the client went away */
  }
}

describe("answer bounds", () => {
  const server = createServer((req, res) => void misbehave(req, res));
  let base = "";
  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  for (const [path, part] of [["/slowheaders", "headers"], ["/trickle", "body"]] as const) {
    it(`gives up an answer whose ${part} trickle, after timeoutMs, as a call unanswered`, async () => {
      const started = Date.now();
      const meta = Meta.connect(base + path, { timeoutMs: 1500 });
      const err = await rejection(meta.call("meta/status"));
      assert.ok(err instanceof TransportError, String(err));
      assert.match(err.message, /did not answer within 1\.5 s/);
      assert.ok(Date.now() - started < 4000, `took ${Date.now() - started} ms`);
    });
  }

  it("says a call sent and then dropped unanswered may or may not have been applied", async () => {
    for (const path of ["/dropped", "/cutshort"]) {
      const err = await rejection(Meta.connect(base + path).call("meta/agent_memory/remember"));
      assert.ok(err instanceof TransportError, String(err));
      assert.match(err.message, /may or may not have been applied; check before repeating a write/, path);
      assert.doesNotMatch(err.message, /cannot reach/, path);
    }
  });

  it("names why a gateway cannot be reached, and does not say the call may have been applied", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const err = await rejection(Meta.connect(`http://127.0.0.1:${port}`).call("meta/status"));
    assert.ok(err instanceof TransportError, String(err));
    assert.match(err.message, /cannot reach the gateway at .*ECONNREFUSED/);
    assert.doesNotMatch(err.message, /may or may not/);
  });

  it("refuses unread an answer declaring more than maxAnswerBytes", async () => {
    const err = await rejection(Meta.connect(base + "/declared").call("meta/status"));
    assert.ok(err instanceof UnreadableAnswer, String(err));
    assert.equal(err.rule, "max_answer_bytes");
  });

  it("refuses an answer streaming past maxAnswerBytes", async () => {
    const meta = Meta.connect(base + "/flood", { maxAnswerBytes: 1024 * 1024 });
    const err = await rejection(meta.call("meta/status"));
    assert.ok(err instanceof UnreadableAnswer, String(err));
    assert.match(err.message, /over max_answer_bytes \(1048576 bytes\)/);
    assert.equal(err.limit, 1024 * 1024);
  });

  it("follows no redirect", async () => {
    const err = await rejection(Meta.connect(base + "/redirect").call("meta/status"));
    assert.ok(err instanceof NotAGateway, String(err));
    assert.equal(err.status, 307);
  });

  it("refuses a maxAnswerBytes that is not a positive whole number before sending", () => {
    for (const value of [0, -1, 1.5, Number.NaN]) {
      assert.throws(() => Meta.connect(base, { maxAnswerBytes: value }), ConfigError);
    }
  });

  it("still reads an ordinary answer", async () => {
    assert.deepEqual(await Meta.connect(base + "/fine").call("meta/status"), { fine: true });
  });
});

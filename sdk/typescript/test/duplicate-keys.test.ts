/**
 * An answer whose JSON names a key twice in one object, at any depth, is refused unread, as the Python
 * SDK refuses it: `JSON.parse` would keep the last of the two, while a proxy or a log in front of the
 * client may have read the first. Over HTTP (a local server answering such JSON) and over stdio (a
 * stand-in gateway process writing such lines); keys compared as decoded, so `"a"` and `"\u0061"` are one.
 */

import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import { Meta, StdioTransport, TransportError, UnreadableAnswer } from "../src/index.js";
import { rejection, tempDir } from "./support.js";

const HEAD = '{"jsonrpc": "2.0", "id": 1, "result": ';
const ANSWERS: Record<string, string> = {
  "/top": '{"jsonrpc": "2.0", "id": 1, "result": {"ok": true}, "result": {"ok": false}}',
  "/deep": HEAD + '{"a": [1, {"b": [[{"identity": "a", "note": "x\\"y", "identity": "b"}]]}]}}',
  "/escaped": HEAD + '{"records": [{"ab": 1, "\\u0061\\u0062": 2}]}}',
  "/long": HEAD + `{"${"k".repeat(100)}": 1, "${"k".repeat(100)}": 2}}`,
  "/hidden": HEAD + '{"x\\u202ey": 1, "x\u202ey": 2}}',
  // a variation selector, a Hangul filler and the braille blank: invisible, though not format characters
  "/ignorable": HEAD + '{"a\\ufe0fb\\u3164c\\u2800d": 1, "a\\ufe0fb\\u3164c\\u2800d": 2}}',
  // equal keys in different objects, and keys with escaped quotes and backslashes, are one key each
  "/fine": HEAD + '{"k\\"": {"k\\"": 1, "k\\\\": [{"k\\\\": "\\"k\\""}]}, "k\\\\": {"k\\"": {}}}}',
};

describe("an answer naming a key twice", () => {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(ANSWERS[req.url?.replace(/\/rpc$/, "") ?? ""] ?? HEAD + "null}");
    });
  });
  let base = "";
  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  for (const [path, key] of [["/top", '"result"'], ["/deep", '"identity"'], ["/escaped", '"ab"']] as const) {
    it(`is refused over HTTP as an UnreadableAnswer naming the key (${path})`, async () => {
      const err = await rejection(Meta.connect(base + path).call("meta/status"));
      assert.ok(err instanceof UnreadableAnswer, String(err));
      assert.ok(err instanceof TransportError);
      assert.equal(err.rule, "duplicate_key");
      assert.equal(err.url, `${base}${path}/rpc`);
      assert.ok(err.message.includes(`names the key ${key} twice in one object`), err.message);
      assert.match(err.message, /may or may not have been applied/);
    });
  }

  it("shows at most 64 characters of a long key", async () => {
    const err = await rejection(Meta.connect(base + "/long").call("meta/status"));
    assert.ok(err instanceof UnreadableAnswer, String(err));
    assert.ok(err.message.includes(`the key "${"k".repeat(64)}..." twice`), err.message);
  });

  it("shows an invisible character of the key as its escape", async () => {
    const err = await rejection(Meta.connect(base + "/hidden").call("meta/status"));
    assert.ok(err instanceof UnreadableAnswer, String(err));
    assert.ok(err.message.includes('the key "x\\\\u202ey" twice') && !err.message.includes("\u202e"), err.message);
  });

  it("shows a default-ignorable character or a blank filler of the key as its escape", async () => {
    const err = await rejection(Meta.connect(base + "/ignorable").call("meta/status"));
    assert.ok(err instanceof UnreadableAnswer, String(err));
    assert.ok(err.message.includes('the key "a\\\\ufe0fb\\\\u3164c\\\\u2800d" twice'), err.message);
    assert.ok(!/[\ufe0f\u3164\u2800]/u.test(err.message), err.message);
  });

  it("reads equal keys of different objects, and keys with escapes, as they are", async () => {
    assert.deepEqual(await Meta.connect(base + "/fine").call("meta/status"), {
      'k"': { 'k"': 1, "k\\": [{ "k\\": '"k"' }] },
      "k\\": { 'k"': {} },
    });
  });

  it("is refused over stdio; a line whose id is named twice fails every waiting call", async () => {
    // a stand-in gateway: answers call 1 with a key named twice deep in its result, call 2 well, and call 3
    // with its id named twice (which call it answers cannot be told)
    const script = `
      const rl = require("node:readline").createInterface({ input: process.stdin });
      rl.on("line", (line) => {
        const { id } = JSON.parse(line);
        if (id === 1) process.stdout.write('{"jsonrpc":"2.0","id":1,"result":{"a":{"b":1,"b":2}}}\\n');
        if (id === 2) process.stdout.write('{"jsonrpc":"2.0","id":2,"result":{"a":{"b":1}}}\\n');
        if (id === 4) process.stdout.write('{"jsonrpc":"2.0","id":3,"id":4,"result":null}\\n');
      });`;
    const transport = new StdioTransport({ stateDir: join(tempDir(), "state"), command: [process.execPath, "-e", script] });
    try {
      const first = await rejection(transport.call("meta/status"));
      assert.ok(first instanceof UnreadableAnswer, String(first));
      assert.equal(first.rule, "duplicate_key");
      assert.match(first.message, /^the answer of the stdio gateway was not read: its JSON names the key "b" twice/);
      assert.deepEqual(await transport.call("meta/status"), { a: { b: 1 } });
      const [third, fourth] = await Promise.allSettled([transport.call("meta/status"), transport.call("meta/status")]);
      for (const settled of [third, fourth]) {
        assert.equal(settled.status, "rejected");
        const err = (settled as PromiseRejectedResult).reason as unknown;
        assert.ok(err instanceof UnreadableAnswer && err.rule === "duplicate_key", String(err));
        assert.match(err.message, /names the key "id" twice/);
      }
    } finally {
      await transport.close();
    }
  });
});

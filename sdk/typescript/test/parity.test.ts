/**
 * Parity: every method the live gateway advertises in `meta/capabilities` has a typed
 * method on the TypeScript handle. A method added to the gateway later fails this test
 * until the client's method table (src/methods.ts) gains its one line.
 */

import assert from "node:assert/strict";
import { it } from "node:test";

import { METHODS, MetaHandle, WIRE_METHODS, wireMethods } from "../src/index.js";
import { sharedHttpGateway } from "./support.js";

const shared = sharedHttpGateway();

it("the client has a method for every method the gateway advertises", async (t) => {
  const caps = await shared.handle.capabilities();
  assert.ok(caps.methods.length >= 20, `capabilities lists ${caps.methods.length} methods`);
  const known = new Set(wireMethods());
  const missing = caps.methods.filter((m) => !known.has(m));
  assert.deepEqual(missing, [], `methods the TypeScript client lacks: ${missing.join(", ")}`);

  const advertised = new Set(caps.methods);
  const notServed = wireMethods().filter((m) => !advertised.has(m));
  if (notServed.length) t.diagnostic(`client methods this gateway does not advertise: ${notServed.join(", ")}`);
});

it("every table entry is a callable handle method with a unique wire name", () => {
  const wires = wireMethods();
  assert.equal(new Set(wires).size, wires.length);
  for (const name of Object.keys(METHODS)) {
    assert.equal(typeof (MetaHandle.prototype as unknown as Record<string, unknown>)[name], "function", name);
  }
  for (const wire of wires) assert.match(wire, /^(meta\/[a-z_]+(\/[a-z_]+)*|rpc\.discover)$/);
});

it("the client has a method for every method of the generated wire list (src/wire.ts, from rpc.discover)", () => {
  const known = new Set(wireMethods());
  const missing = WIRE_METHODS.filter((m) => !known.has(m));
  assert.deepEqual(missing, [], `wire methods the TypeScript client lacks: ${missing.join(", ")}`);
  assert.deepEqual([...wireMethods()].sort(), [...WIRE_METHODS], "client methods that the wire list does not name");
});

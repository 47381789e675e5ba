/**
 * Every catalogued error rebuilds as its class with its members. The rows (`error-catalogue.json`) are
 * the Python catalogue's, one sample refusal per class; a Python test checks the file is the catalogue.
 */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { it } from "node:test";

import * as sdk from "../src/index.js";
import { ERROR_CATALOGUE, fromJsonRpcError, MetaMemoryError } from "../src/index.js";

interface Row {
  code: number;
  kind: string;
  class: string;
  error: { code: number; message: string; data: Record<string, unknown> };
  members: Record<string, unknown>;
}

const ROWS: Row[] = JSON.parse(readFileSync(new URL("../../test/error-catalogue.json", import.meta.url), "utf8"));

it("the catalogue has one row per catalogued code", () => {
  assert.deepEqual(
    ERROR_CATALOGUE.map(([code, kind, cls]) => [code, kind, cls.name]),
    ROWS.map((row) => [row.code, row.kind, row.class]),
  );
});

for (const row of ROWS) {
  it(`${row.code} ${row.kind} rebuilds as ${row.class} with its members, by kind and by code alone`, () => {
    const cls = (sdk as unknown as Record<string, unknown>)[row.class];
    assert.equal(typeof cls, "function", `${row.class} is exported`);
    for (const error of [row.error, { code: row.code, message: row.error.message }]) {
      const rebuilt = fromJsonRpcError(error);
      assert.equal(rebuilt.constructor, cls);
      assert.ok(rebuilt instanceof MetaMemoryError);
      assert.equal(rebuilt.code, row.code);
      assert.equal(rebuilt.kind, row.kind);
      assert.equal(rebuilt.message, row.error.message);
    }
    const rebuilt = fromJsonRpcError(row.error) as unknown as Record<string, unknown>;
    for (const [name, value] of Object.entries(row.members)) assert.equal(rebuilt[name], value ?? undefined, name);
  });
}

/**
 * Key casing between the TypeScript side (camelCase) and the wire (snake_case).
 *
 * Only object keys are converted, never values. Members that carry caller-owned
 * JSON (a record's or the ledger's `metadata`, a metadata `filter`, the `memory` tool's `arguments`, defang
 * `blocks`, a tool's `input_schema`, a dream's `op_kinds` map) are passed through untouched
 * in both directions, so a host's own data is never renamed.
 */

/** Members whose values are opaque JSON, named on the wire (snake_case). */
export const OPAQUE_WIRE_KEYS: ReadonlySet<string> = new Set([
  "metadata",
  "filter",
  "arguments",
  "blocks",
  "input_schema",
  "op_kinds",
]);

/** `maxEntries` -> `max_entries`; a key that is already snake_case is unchanged. */
export function toSnake(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** `max_entries` -> `maxEntries`; a leading underscore is kept (`_system` stays `_system`). */
export function toCamel(key: string): string {
  return key.replace(/(?<=[A-Za-z0-9])_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function convert(value: unknown, rename: (k: string) => string): unknown {
  if (Array.isArray(value)) return value.map((v) => convert(v, rename));
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    if (inner === undefined) continue;
    const wireKey = rename === toSnake ? toSnake(key) : key;
    const outKey = rename(key);
    out[outKey] = OPAQUE_WIRE_KEYS.has(wireKey) ? inner : convert(inner, rename);
  }
  return out;
}

/**
 * TypeScript params to wire params: keys camelCase -> snake_case, recursively,
 * `undefined` members dropped, opaque members (see {@link OPAQUE_WIRE_KEYS}) untouched.
 */
export function paramsToWire(params: unknown): unknown {
  return convert(params, toSnake);
}

/** Wire results to TypeScript: keys snake_case -> camelCase, recursively, opaque members untouched. */
export function resultFromWire(result: unknown): unknown {
  return convert(result, toCamel);
}

/**
 * A minimal TOML writer for the gateway configuration the builder generates.
 *
 * Input: `{table: {key: value}}` where values are strings, finite numbers,
 * booleans, arrays of those, or nested objects (written as inline tables).
 * `undefined` and `null` members are left out (TOML has no null).
 */

const BARE_KEY = /^[A-Za-z0-9_-]+$/;

function key(name: string): string {
  return BARE_KEY.test(name) ? name : JSON.stringify(name);
}

function value(v: unknown, path: string): string {
  if (typeof v === "string") return JSON.stringify(v);
  if (typeof v === "boolean") return v ? "true" : "false";
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw new TypeError(`${path} must be a finite number`);
    return String(v);
  }
  if (Array.isArray(v)) return `[${v.map((item, i) => value(item, `${path}[${i}]`)).join(", ")}]`;
  if (typeof v === "object" && v !== null) {
    const parts = Object.entries(v)
      .filter(([, inner]) => inner !== undefined && inner !== null)
      .map(([k, inner]) => `${key(k)} = ${value(inner, `${path}.${k}`)}`);
    return `{ ${parts.join(", ")} }`;
  }
  throw new TypeError(`${path} cannot be written to TOML (${typeof v})`);
}

/** Serialise `{table: {key: value}}` as TOML text, one `[table]` per entry. */
export function toToml(tables: Record<string, Record<string, unknown>>): string {
  const out: string[] = [];
  for (const [table, members] of Object.entries(tables)) {
    out.push(`[${key(table)}]`);
    for (const [k, v] of Object.entries(members)) {
      if (v === undefined || v === null) continue;
      out.push(`${key(k)} = ${value(v, `${table}.${k}`)}`);
    }
    out.push("");
  }
  return out.join("\n");
}

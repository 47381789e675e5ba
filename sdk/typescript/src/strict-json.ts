/**
 * An answer read strictly: JSON whose object names a key twice is refused, as the Python SDK refuses
 * it (`meta_memory.strict_json`). `JSON.parse` keeps the last of two equal keys, so
 * `{"identity": "a", "identity": "b"}` reads as `b` here while a proxy or a log reader in front of
 * the client may have read `a`: the same bytes meaning two things to two readers.
 */

const QUOTE = 0x22; // "
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b; // {
const CLOSE_OBJECT = 0x7d; // }
const OPEN_ARRAY = 0x5b; // [
const CLOSE_ARRAY = 0x5d; // ]
const COMMA = 0x2c;

/** Where an object of a JSON text names a key twice: the key (decoded) and its object's depth (1 for the top level). */
export interface DuplicateKey {
  key: string;
  depth: number;
}

/**
 * The first key some object of `text` names twice, at any depth, or `undefined` when none does. Keys
 * are compared as decoded (`"a"` and `"\u0061"` are one key). `text` must be JSON `JSON.parse` accepted:
 * this only follows its structure. One pass, no recursion (any depth of nesting), one set of keys per
 * open object.
 */
export function duplicateKey(text: string): DuplicateKey | undefined {
  const open: (Set<string> | null)[] = []; // each open container: an object's keys so far, or null for an array
  let expectKey = false; // the next string is a key of the innermost object
  let at = 0;
  while (at < text.length) {
    const ch = text.charCodeAt(at);
    if (ch === QUOTE) {
      let end = at + 1;
      for (;;) {
        end = text.indexOf('"', end);
        let slashes = 0;
        while (text.charCodeAt(end - 1 - slashes) === BACKSLASH) slashes++;
        if (slashes % 2 === 0) break; // an escaped quote has an odd run of backslashes before it
        end++;
      }
      if (expectKey) {
        const raw = text.slice(at + 1, end);
        const key = raw.includes("\\") ? (JSON.parse(text.slice(at, end + 1)) as string) : raw;
        const keys = open[open.length - 1]!;
        if (keys.has(key)) return { key, depth: open.length };
        keys.add(key);
        expectKey = false;
      }
      at = end + 1;
      continue;
    }
    if (ch === OPEN_OBJECT) {
      open.push(new Set());
      expectKey = true;
    } else if (ch === OPEN_ARRAY) {
      open.push(null);
    } else if (ch === CLOSE_OBJECT || ch === CLOSE_ARRAY) {
      open.pop();
      expectKey = false;
    } else if (ch === COMMA) {
      expectKey = open[open.length - 1] != null;
    }
    at++;
  }
  return undefined;
}

/**
 * A key as a refusal shows it (the Python SDK's `echo`): its first 64 characters, `...` after them when it
 * is longer, JSON-quoted, with every invisible or controlling character written as its escape, so a refusal
 * carries no hidden text or terminal control into a log or a terminal.
 */
export function showKey(key: string): string {
  const head = [...key];
  const shown = JSON.stringify(head.slice(0, 64).join("")).replace(
    /[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Zl}\p{Zp}]/gu,
    (ch) => `\\u{${ch.codePointAt(0)!.toString(16)}}`,
  );
  return head.length > 64 ? shown + "..." : shown;
}

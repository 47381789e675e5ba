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
 * A character a refusal writes as its escape, the set the Python SDK's `echo` escapes: controls, surrogates,
 * line and paragraph separators, private-use, unassigned, format characters, default-ignorable code points
 * (variation selectors, the combining grapheme joiner, Hangul fillers) and the blanks that render as space
 * (the braille blank, the Khitan filler).
 */
const UNSHOWN = /^[\p{Cc}\p{Cs}\p{Zl}\p{Zp}\p{Co}\p{Cn}\p{Cf}\p{Default_Ignorable_Code_Point}\u2800\u{16FE4}]$/u;

function escapeChar(ch: string): string {
  const code = ch.codePointAt(0)!;
  const hex = (width: number): string => code.toString(16).padStart(width, "0");
  return code < 0x100 ? `\\x${hex(2)}` : code < 0x10000 ? `\\u${hex(4)}` : `\\U${hex(8)}`;
}

/**
 * A key as a refusal shows it, as the Python SDK does (`json.dumps(echo(key))`): its first 64 characters,
 * `...` after them when it is longer, every invisible or controlling character written as its escape
 * (`\u202e`, `\x1b`), JSON-quoted, so a refusal carries no hidden text or terminal control into a log.
 */
export function showKey(key: string): string {
  const chars = [...key];
  const head = chars.slice(0, 64).map((ch) => (UNSHOWN.test(ch) ? escapeChar(ch) : ch)).join("");
  return JSON.stringify(chars.length > 64 ? head + "..." : head);
}

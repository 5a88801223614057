// Example contract: a key-value store of UTF-8 strings, the twin of the Rust kv
// (contracts/examples/kv): the same functions, arguments, results, errors and state.
//
// Values are stored as the raw UTF-8 bytes of the value (not JSON), so other contracts and
// tools read them as plain text. Text stays UTF-8 bytes throughout (`Utf8`): a call never
// converts to AssemblyScript's UTF-16 strings.
//
// | function | arguments | returns |
// |---|---|---|
// | `put` | `key`, `value` | `null` |
// | `get` | `key` | the value, or `null` if absent |
// | `update` | `key`, `value` | the previous value, or `null` (a read-modify-write: the read conflicts with a concurrent update) |
// | `delete` | `key` | `null` |
// | `range` | `start`, `end` (`""`: no upper bound) | `[{"key": ..., "value": ...}]` for `start <= key < end` |

import { Context, Utf8, fail, quoted, utf8Error } from "@runnel/contract";

/** One entry returned by `range`. */
@json
class Pair {
  key: Utf8;
  value: Utf8;

  constructor(key: Utf8, value: Utf8) {
    this.key = key;
    this.value = value;
  }
}

/** Stores `value` under `key`. */
export function put(ctx: Context, key: Utf8, value: Utf8): void {
  ctx.putBytes(key, value.bytes);
}

/** The value under `key`, if any. */
export function get(ctx: Context, key: Utf8): Utf8 | null {
  const bytes = ctx.getBytes(key);
  if (bytes == null) return null;
  return text(key, bytes);
}

/**
 * Reads `key`, then stores `value` under it, and returns what was there: a
 * read-modify-write, so two concurrent updates of one key cannot both commit (the second is
 * an MVCC read conflict).
 */
export function update(ctx: Context, key: Utf8, value: Utf8): Utf8 | null {
  const previous = get(ctx, key);
  ctx.putBytes(key, value.bytes);
  return previous;
}

/** Deletes `key` (deleting an absent key is not an error). */
@rename("delete")
export function delete_(ctx: Context, key: Utf8): void {
  ctx.delete(key);
}

/** The entries with `start <= key < end`, in key order; `end == ""` means no upper bound. */
export function range(ctx: Context, start: Utf8, end: Utf8): Pair[] {
  const pairs = new Array<Pair>();
  const entries = ctx.range(start, end);
  while (entries.next()) {
    const keyError = utf8Error(entries.key);
    if (keyError != null) fail("a stored key is not UTF-8: " + keyError.toString());
    const key = new Utf8(entries.key);
    pairs.push(new Pair(key, text(key, entries.value)));
  }
  return pairs;
}

function text(key: Utf8, bytes: Uint8Array): Utf8 {
  const value = Utf8.from(bytes);
  if (value == null) fail("the value of " + quoted(key) + " is not UTF-8");
  return value!;
}

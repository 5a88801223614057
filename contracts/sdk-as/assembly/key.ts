// Composite keys, encoded as Hyperledger Fabric and the Rust SDK encode them:
// `\0objectType\0attr1\0attr2\0`. The leading `\0` keeps them apart from plain keys, and
// because each part ends in `\0`, the keys of one type (or of one type and leading
// attributes) form a contiguous range.

import { fail } from "./error";
import { JsonWriter } from "./json";
import { Utf8, isMaxChar, isValidUtf8 } from "./utf8";
import { __mFail, __mStart, lit, utf8ToString } from "./text";
import { newBytes, view } from "./bytes";

/** Appends `part` (a string or Utf8) and its closing `\0` to `w`. */
// @ts-ignore: decorator
@inline
function appendPart<P>(w: JsonWriter, part: P): void {
  const start = w.len;
  if (isString<P>()) {
    w.utf16(changetype<string>(part), false);
  } else if (isReference<P>() && idof<P>() == idof<Utf8>()) {
    const bytes = changetype<Utf8>(part).bytes;
    w.copy(bytes.dataStart, bytes.length);
  } else {
    ERROR("runnel: a composite key part is a string or Utf8");
  }
  checkPart(w, start);
}

/** Refuses U+0000 and U+10FFFF in the part from `start` to the end of `w`, then ends it with `\0`. */
function checkPart(w: JsonWriter, start: i32): void {
  const first = w.ptr + <usize>start;
  const end = w.ptr + <usize>w.len;
  for (let p = first; p < end; p++) {
    const max = isMaxChar(p, end);
    if (load<u8>(p) == 0 || max) {
      const m = __mStart();
      m.text(lit("composite key: "));
      m.debugUtf8(first, <i32>(end - first));
      m.text(max ? lit(" contains U+10FFFF, which is not allowed in a key part") : lit(" contains U+0000, which is not allowed in a key part"));
      __mFail();
    }
  }
  w.byte(0);
}

/** Appends `attributes`: one string or Utf8, or an array of them. */
// @ts-ignore: decorator
@inline
function appendAttributes<A>(w: JsonWriter, attributes: A): void {
  if (isArray<A>()) {
    // @ts-ignore: A is an array here
    for (let i = 0; i < attributes.length; i++) appendPart<valueof<A>>(w, unchecked(attributes[i]));
  } else {
    appendPart<A>(w, attributes);
  }
}

/** How many attributes `attributes` (one, or an array) holds. */
// @ts-ignore: decorator
@inline
function attributeCount<A>(attributes: A): i32 {
  // @ts-ignore: A is an array here
  if (isArray<A>()) return attributes.length;
  return 1;
}

/** A key made of an object type and attributes. No part may contain U+0000 or U+10FFFF. */
export class CompositeKey {
  private constructor(
    /** The encoded key. */
    public readonly bytes: Uint8Array,
  ) {}

  /**
   * The key of `objectType` (non-empty) with `attributes`: a string or Utf8, or an array of
   * them (`CompositeKey.of("balance", account)`, `CompositeKey.of("owned", [owner, id])`).
   */
  static of<T, A>(objectType: T, attributes: A): CompositeKey {
    return CompositeKey.build<T, A>(objectType, attributes, true);
  }

  /**
   * The prefix shared by every key of `objectType` whose attributes start with
   * `attributes`. An empty `objectType` (with no attributes) gives the prefix of every
   * composite key.
   */
  static partial<T, A>(objectType: T, attributes: A): CompositeKey {
    return CompositeKey.build<T, A>(objectType, attributes, false);
  }

  private static build<T, A>(objectType: T, attributes: A, full: bool): CompositeKey {
    const w = new JsonWriter(32);
    w.byte(0);
    appendPart<T>(w, objectType);
    if (w.len == 2) {
      if (full) fail("composite key: the object type must not be empty");
      if (attributeCount<A>(attributes) > 0) fail("composite key: attributes given without an object type");
      w.len = 1;
    }
    appendAttributes<A>(w, attributes);
    return new CompositeKey(w.toBytes());
  }

  /** Splits a stored composite key into its object type and attributes. */
  static split(key: Uint8Array): CompositeKeyParts {
    const p = key.dataStart;
    const n = key.length;
    if (!isValidUtf8(p, <usize>n)) fail("composite key: not UTF-8");
    if (n < 2 || load<u8>(p) != 0 || load<u8>(p + <usize>n - 1) != 0) {
      fail("composite key: must start and end with U+0000");
    }
    const parts = new Array<Utf8>();
    let start = 1;
    for (let i = 1; i < n; i++) {
      if (load<u8>(p + <usize>i) == 0) {
        parts.push(new Utf8(view(key.buffer, p + <usize>start, i - start)));
        start = i + 1;
      }
    }
    const objectType = parts.shift();
    if (objectType.isEmpty) fail("composite key: empty object type");
    return new CompositeKeyParts(objectType, parts);
  }

  /** The encoded key as text. */
  toString(): string {
    return utf8ToString(this.bytes.dataStart, this.bytes.length);
  }
}

/** A composite key taken apart. */
export class CompositeKeyParts {
  constructor(
    public readonly objectType: Utf8,
    public readonly attributes: Utf8[],
  ) {}
}

/**
 * The smallest key greater than every key that starts with the `n` bytes at `p`, or no
 * bytes if there is none (an empty prefix, or one of only 0xFF bytes).
 */
export function prefixEnd(p: usize, n: i32): Uint8Array {
  while (n > 0) {
    const last = load<u8>(p + <usize>n - 1);
    if (last < 0xff) {
      const end = newBytes(n);
      memory.copy(end.dataStart, p, <usize>n);
      store<u8>(end.dataStart + <usize>n - 1, last + 1);
      return end;
    }
    n--;
  }
  return newBytes(0);
}

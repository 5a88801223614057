// Composite keys, encoded as Hyperledger Fabric and the Rust SDK encode them:
// `\0objectType\0attr1\0attr2\0`. The leading `\0` keeps them apart from plain keys, and
// because each part ends in `\0`, the keys of one type (or of one type and leading
// attributes) form a contiguous range.

import { fail } from "./error";
import { decodeUtf8, encodeUtf8, quoted } from "./utf8";

/** A key made of an object type and attributes. No part may contain U+0000 or U+10FFFF. */
export class CompositeKey {
  private constructor(
    /** The encoded key. */
    public readonly bytes: Uint8Array,
  ) {}

  /** The key of `objectType` (non-empty) with `attributes`. */
  static of(objectType: string, attributes: string[]): CompositeKey {
    if (objectType.length == 0) fail("composite key: the object type must not be empty");
    return CompositeKey.partial(objectType, attributes);
  }

  /**
   * The prefix shared by every key of `objectType` whose attributes start with
   * `attributes`. An empty `objectType` (with no attributes) gives the prefix of every
   * composite key.
   */
  static partial(objectType: string, attributes: string[]): CompositeKey {
    if (objectType.length == 0 && attributes.length > 0) {
      fail("composite key: attributes given without an object type");
    }
    let key = "\0";
    if (objectType.length > 0) key += checkedPart(objectType) + "\0";
    for (let i = 0; i < attributes.length; i++) key += checkedPart(attributes[i]) + "\0";
    return new CompositeKey(encodeUtf8(key));
  }

  /** Splits a stored composite key into its object type and attributes. */
  static split(key: Uint8Array): CompositeKeyParts {
    const text = decodeUtf8(key);
    if (text == null) {
      fail("composite key: not UTF-8");
      unreachable();
    }
    const s = changetype<string>(text);
    if (s.length < 2 || s.charCodeAt(0) != 0 || s.charCodeAt(s.length - 1) != 0) {
      fail("composite key: must start and end with U+0000");
    }
    const parts = s.substring(1, s.length - 1).split("\0");
    const objectType = parts[0];
    if (objectType.length == 0) fail("composite key: empty object type");
    return new CompositeKeyParts(objectType, parts.slice(1));
  }

  /** The encoded key as text. */
  toString(): string {
    return String.UTF8.decodeUnsafe(this.bytes.dataStart, <usize>this.bytes.length);
  }
}

/** A composite key taken apart. */
export class CompositeKeyParts {
  constructor(
    public readonly objectType: string,
    public readonly attributes: string[],
  ) {}
}

function checkedPart(part: string): string {
  for (let i = 0; i < part.length; i++) {
    const c = part.charCodeAt(i);
    if (c == 0) {
      fail("composite key: " + quoted(part) + " contains U+0000, which is not allowed in a key part");
    }
    if (c == 0xdbff && i + 1 < part.length && part.charCodeAt(i + 1) == 0xdfff) {
      fail("composite key: " + quoted(part) + " contains U+10FFFF, which is not allowed in a key part");
    }
  }
  return part;
}

/**
 * The smallest key greater than every key that starts with `prefix`, or an empty array if
 * there is none (an empty prefix, or one of only 0xFF bytes).
 */
export function prefixEnd(prefix: Uint8Array): Uint8Array {
  let n = prefix.length;
  while (n > 0) {
    const last = unchecked(prefix[n - 1]);
    if (last < 0xff) {
      const end = new Uint8Array(n);
      memory.copy(end.dataStart, prefix.dataStart, <usize>n);
      unchecked(end[n - 1] = last + 1);
      return end;
    }
    n--;
  }
  return new Uint8Array(0);
}

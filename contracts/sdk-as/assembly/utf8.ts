// UTF-8 as the ledger stores it: validation that rejects what Rust's `String::from_utf8`
// rejects (overlong forms, surrogates, code points above U+10FFFF, truncated sequences), and
// `Utf8`, text kept as its UTF-8 bytes so that it never pays for a round trip through
// AssemblyScript's UTF-16 strings.

/** Whether the `len` bytes at `ptr` are valid UTF-8. */
export function isValidUtf8(ptr: usize, len: usize): bool {
  const end = ptr + len;
  let p = ptr;
  while (p < end) {
    // Eight ASCII bytes at a time: text is mostly ASCII.
    if (p + 8 <= end && (load<u64>(p) & 0x8080808080808080) == 0) {
      p += 8;
      continue;
    }
    const b0 = <u32>load<u8>(p);
    if (b0 < 0x80) {
      p += 1;
      continue;
    }
    if (b0 < 0xc2) return false;
    if (b0 < 0xe0) {
      if (p + 2 > end) return false;
      if ((<u32>load<u8>(p, 1) & 0xc0) != 0x80) return false;
      p += 2;
      continue;
    }
    if (b0 < 0xf0) {
      if (p + 3 > end) return false;
      const b1 = <u32>load<u8>(p, 1);
      if ((b1 & 0xc0) != 0x80 || (<u32>load<u8>(p, 2) & 0xc0) != 0x80) return false;
      if (b0 == 0xe0 && b1 < 0xa0) return false; // overlong
      if (b0 == 0xed && b1 >= 0xa0) return false; // surrogate
      p += 3;
      continue;
    }
    if (b0 < 0xf5) {
      if (p + 4 > end) return false;
      const b1 = <u32>load<u8>(p, 1);
      if ((b1 & 0xc0) != 0x80 || (<u32>load<u8>(p, 2) & 0xc0) != 0x80 || (<u32>load<u8>(p, 3) & 0xc0) != 0x80) return false;
      if (b0 == 0xf0 && b1 < 0x90) return false; // overlong
      if (b0 == 0xf4 && b1 >= 0x90) return false; // above U+10FFFF
      p += 4;
      continue;
    }
    return false;
  }
  return true;
}

/**
 * Why `bytes` are not UTF-8, worded as Rust's `Utf8Error` (`invalid utf-8 sequence of 1
 * bytes from index 0`), or `null` if they are valid.
 */
export function utf8Error(bytes: Uint8Array): string | null {
  const n = bytes.length;
  let i = 0;
  while (i < n) {
    const b0 = <u32>unchecked(bytes[i]);
    if (b0 < 0x80) {
      i++;
      continue;
    }
    let width = 0;
    if (b0 >= 0xc2 && b0 < 0xe0) width = 2;
    else if (b0 >= 0xe0 && b0 < 0xf0) width = 3;
    else if (b0 >= 0xf0 && b0 < 0xf5) width = 4;
    if (width == 0) return invalidAt(1, i);
    if (i + 1 >= n) return incompleteAt(i);
    const b1 = <u32>unchecked(bytes[i + 1]);
    let ok1 = (b1 & 0xc0) == 0x80;
    if (width == 3) ok1 = ok1 && !(b0 == 0xe0 && b1 < 0xa0) && !(b0 == 0xed && b1 >= 0xa0);
    if (width == 4) ok1 = ok1 && !(b0 == 0xf0 && b1 < 0x90) && !(b0 == 0xf4 && b1 >= 0x90);
    if (!ok1) return invalidAt(1, i);
    for (let k = 2; k < width; k++) {
      if (i + k >= n) return incompleteAt(i);
      if ((<u32>unchecked(bytes[i + k]) & 0xc0) != 0x80) return invalidAt(k, i);
    }
    i += width;
  }
  return null;
}

function invalidAt(len: i32, index: i32): string {
  return "invalid utf-8 sequence of " + len.toString() + " bytes from index " + index.toString();
}

function incompleteAt(index: i32): string {
  return "incomplete utf-8 byte sequence from index " + index.toString();
}

/**
 * The first address in [p, end) holding a byte a JSON string cannot carry as it is (a
 * control character, `"` or `\\`), or `end`. Eight bytes at a time.
 */
export function plainRunEnd(p: usize, end: usize): usize {
  while (p + 8 <= end) {
    const x = load<u64>(p);
    const quote = x ^ 0x2222222222222222;
    const backslash = x ^ 0x5c5c5c5c5c5c5c5c;
    const special =
      ((x - 0x2020202020202020) & ~x) |
      ((quote - 0x0101010101010101) & ~quote) |
      ((backslash - 0x0101010101010101) & ~backslash);
    if ((special & 0x8080808080808080) != 0) break;
    p += 8;
  }
  while (p < end) {
    const c = <u32>load<u8>(p);
    if (c < 0x20 || c == 0x22 || c == 0x5c) return p;
    p++;
  }
  return end;
}

/** `bytes` as a string if they are valid UTF-8, else `null`. */
export function decodeUtf8(bytes: Uint8Array): string | null {
  if (!isValidUtf8(bytes.dataStart, <usize>bytes.length)) return null;
  return String.UTF8.decodeUnsafe(bytes.dataStart, <usize>bytes.length);
}

/** The UTF-8 bytes of `text`. */
export function encodeUtf8(text: string): Uint8Array {
  return Uint8Array.wrap(String.UTF8.encode(text));
}

/**
 * Text kept as valid UTF-8 bytes. A contract function parameter of type `Utf8` is decoded
 * like a `string` (JSON string or raw text, invalid UTF-8 refused) but never converted to
 * UTF-16, which makes it the cheap choice for text that is only stored, compared or
 * returned. Returned from a function, it is sent as a JSON string, like a `string`.
 */
export class Utf8 {
  /** Wraps `bytes`, which the caller guarantees are valid UTF-8. */
  constructor(public readonly bytes: Uint8Array) {}

  /** `bytes` as `Utf8`, or `null` if they are not valid UTF-8. */
  static from(bytes: Uint8Array): Utf8 | null {
    if (!isValidUtf8(bytes.dataStart, <usize>bytes.length)) return null;
    return new Utf8(bytes);
  }

  /** The UTF-8 bytes of `text`. */
  static of(text: string): Utf8 {
    return new Utf8(encodeUtf8(text));
  }

  /** Length in bytes. */
  get length(): i32 {
    return this.bytes.length;
  }

  /** Whether the text is empty. */
  get isEmpty(): bool {
    return this.bytes.length == 0;
  }

  /** Byte-wise equality. */
  equals(other: Utf8): bool {
    return bytesEqual(this.bytes, other.bytes);
  }

  /** The text as an AssemblyScript string (costs a UTF-8 to UTF-16 conversion). */
  toString(): string {
    return String.UTF8.decodeUnsafe(this.bytes.dataStart, <usize>this.bytes.length);
  }
}

/** Byte-wise equality of two byte arrays. */
export function bytesEqual(a: Uint8Array, b: Uint8Array): bool {
  const n = a.length;
  if (n != b.length) return false;
  return memory.compare(a.dataStart, b.dataStart, <usize>n) == 0;
}

/** Concatenates byte arrays. */
export function concatBytes(parts: Uint8Array[]): Uint8Array {
  let total = 0;
  for (let i = 0; i < parts.length; i++) total += parts[i].length;
  const out = new Uint8Array(total);
  let at = 0;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i];
    memory.copy(out.dataStart + <usize>at, part.dataStart, <usize>part.length);
    at += part.length;
  }
  return out;
}

function hex(n: u32): string {
  let out = "";
  do {
    out = String.fromCharCode(<i32>(n & 0xf) + ((n & 0xf) < 10 ? 0x30 : 0x57)) + out;
    n >>= 4;
  } while (n != 0);
  return out;
}

/**
 * `text` quoted and escaped as Rust's `{:?}` shows a string (`"a\0b"`), so that error
 * messages read the same whichever SDK built the contract. Control characters are escaped;
 * other characters are shown as they are.
 */
export function quoted(text: string): string {
  let out = "\"";
  for (let i = 0; i < text.length; i++) {
    const c = <u32>text.charCodeAt(i);
    if (c == 0x22) out += "\\\"";
    else if (c == 0x5c) out += "\\\\";
    else if (c == 0x0a) out += "\\n";
    else if (c == 0x0d) out += "\\r";
    else if (c == 0x09) out += "\\t";
    else if (c == 0) out += "\\0";
    else if (c < 0x20 || (c >= 0x7f && c < 0xa0)) out += "\\u{" + hex(c) + "}";
    else if (c == 0xdbff && i + 1 < text.length && <u32>text.charCodeAt(i + 1) == 0xdfff) {
      out += "\\u{10ffff}";
      i++;
    } else out += String.fromCharCode(c);
  }
  return out + "\"";
}

/** A key for an error message, as the Rust SDK shows one: quoted text if UTF-8, else its bytes. */
export function showKey(key: Uint8Array): string {
  const text = decodeUtf8(key);
  if (text != null) return quoted(text);
  let out = "[";
  for (let i = 0; i < key.length; i++) {
    if (i > 0) out += ", ";
    out += unchecked(key[i]).toString();
  }
  return out + "]";
}

// UTF-8 as the ledger stores it: validation that rejects what Rust's `String::from_utf8`
// rejects (overlong forms, surrogates, code points above U+10FFFF, truncated sequences), and
// `Utf8`, text kept as its UTF-8 bytes so that it never pays for a round trip through
// AssemblyScript's UTF-16 strings.

import { JsonWriter } from "./json";
import { lit, utf8ToString } from "./text";
import { newBytes } from "./bytes";

/** Whether the `len` bytes at `ptr` are valid UTF-8. */
export function isValidUtf8(ptr: usize, len: usize): bool {
  return utf8ErrorAt(ptr, len) < 0;
}

let errorWidth: i32 = 0;

/**
 * The index of the first invalid sequence in the `len` bytes at `ptr`, or -1 if they are
 * valid UTF-8; `errorWidth` is then the length of the invalid sequence, 0 if it is cut short
 * by the end.
 */
function utf8ErrorAt(ptr: usize, len: usize): i32 {
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
      p++;
      continue;
    }
    const width: usize = b0 - 0xc2 < 0x1e ? 2 : b0 - 0xe0 < 0x10 ? 3 : b0 - 0xf0 < 5 ? 4 : 0;
    errorWidth = 1;
    if (width == 0) return <i32>(p - ptr);
    // The second byte's range depends on the first (no overlong forms, surrogates or
    // code points above U+10FFFF); the others are 0x80..0xbf.
    let lo: u32 = 0x80;
    let hi: u32 = 0xbf;
    if (b0 == 0xe0) lo = 0xa0;
    else if (b0 == 0xed) hi = 0x9f;
    else if (b0 == 0xf0) lo = 0x90;
    else if (b0 == 0xf4) hi = 0x8f;
    for (let k: usize = 1; k < width; k++) {
      if (p + k >= end) {
        errorWidth = 0;
        return <i32>(p - ptr);
      }
      const b = <u32>load<u8>(p + k);
      if (b < lo || b > hi) {
        errorWidth = <i32>k;
        return <i32>(p - ptr);
      }
      lo = 0x80;
      hi = 0xbf;
    }
    p += width;
  }
  return -1;
}

/** Whether the UTF-8 at `p` (before `end`) starts with U+10FFFF (F4 8F BF BF). */
export function isMaxChar(p: usize, end: usize): bool {
  return p + 4 <= end && load<u32>(p) == 0xbfbf8ff4;
}

/** Why bytes are not UTF-8, as Rust's `Utf8Error` says it. */
export class Utf8Error {
  constructor(
    /** Where the invalid sequence starts. */
    public readonly index: i32,
    /** Its length, or 0 if the bytes end in the middle of a sequence. */
    public readonly width: i32,
  ) {}

  /** Writes the description into a message. */
  __display(w: JsonWriter): void {
    if (this.width == 0) {
      w.text(lit("incomplete utf-8 byte sequence from index "));
    } else {
      w.text(lit("invalid utf-8 sequence of "));
      w.dec(this.width);
      w.text(lit(" bytes from index "));
    }
    w.dec(this.index);
  }

  /** `invalid utf-8 sequence of 1 bytes from index 0` or `incomplete utf-8 byte sequence from index 3`. */
  toString(): string {
    const w = new JsonWriter();
    this.__display(w);
    return utf8ToString(w.ptr, w.len);
  }
}

/** Why `bytes` are not UTF-8 (worded as Rust's `Utf8Error`), or `null` if they are valid. */
export function utf8Error(bytes: Uint8Array): Utf8Error | null {
  const at = utf8ErrorAt(bytes.dataStart, <usize>bytes.length);
  return at < 0 ? null : new Utf8Error(at, errorWidth);
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
  return utf8ToString(bytes.dataStart, bytes.length);
}

/** The UTF-8 of `text` in a writer. */
export function utf8Of(text: string): JsonWriter {
  const w = new JsonWriter(text.length + 8);
  w.utf16(text, false);
  return w;
}

/** The UTF-8 bytes of `text`. */
export function encodeUtf8(text: string): Uint8Array {
  return utf8Of(text).toBytes();
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

  /** Whether `other` (a `Utf8`, `string` or `Uint8Array`) is the same text, byte for byte. */
  equals<T>(other: T): bool {
    const a = this.bytes;
    if (isString<T>()) {
      const w = utf8Of(changetype<string>(other));
      return w.len == a.length && memory.compare(a.dataStart, w.ptr, <usize>w.len) == 0;
    } else if (isReference<T>() && idof<T>() == idof<Utf8>()) {
      return bytesEqual(a, changetype<Utf8>(other).bytes);
    } else if (isReference<T>() && idof<T>() == idof<Uint8Array>()) {
      return bytesEqual(a, changetype<Uint8Array>(other));
    } else {
      ERROR("runnel: Utf8.equals takes a Utf8, string or Uint8Array");
      return false;
    }
  }

  /** The text as an AssemblyScript string (costs a UTF-8 to UTF-16 conversion). */
  toString(): string {
    return utf8ToString(this.bytes.dataStart, this.bytes.length);
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
  const w = new JsonWriter();
  for (let i = 0; i < parts.length; i++) {
    const part = unchecked(parts[i]);
    w.copy(part.dataStart, part.length);
  }
  return w.toBytes();
}

/**
 * `text` (a string or Utf8) quoted and escaped as Rust's `{:?}` shows a string (`"a\0b"`),
 * so that error messages read the same whichever SDK built the contract. Control characters
 * are escaped; other characters are shown as they are. In a message given to `fail`, the
 * transform writes it straight into the message instead.
 */
export function quoted<T>(text: T): string {
  const w = new JsonWriter();
  w.debug<T>(text);
  return utf8ToString(w.ptr, w.len);
}

/** Writes a key as the Rust SDK shows one in a message: quoted text if UTF-8, else its bytes. */
export function appendKey(w: JsonWriter, p: usize, n: i32): void {
  if (isValidUtf8(p, <usize>n)) {
    w.debugUtf8(p, n);
    return;
  }
  w.byte(0x5b);
  for (let i = 0; i < n; i++) {
    if (i > 0) w.text(lit(", "));
    w.dec(load<u8>(p + <usize>i));
  }
  w.byte(0x5d);
}

/** A key as the Rust SDK shows one in a message: quoted text if UTF-8, else its bytes. */
export function showKey(key: Uint8Array): string {
  const w = new JsonWriter();
  appendKey(w, key.dataStart, key.length);
  return utf8ToString(w.ptr, w.len);
}

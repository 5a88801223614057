// The argument convention of Runnel contract functions, the same as the Rust SDK's
// (contracts/sdk/src/args.rs): an argument is decoded as JSON into the parameter's type; if
// that fails and the bytes are UTF-8, the raw text is used as if it were a JSON string, with
// numbers and booleans parsed from it. So `hello` and `"hello"` both give the string hello,
// and `100` gives the integer 100. Error reasons are serde's and Rust's own wording.
//



import { JsonKind, JsonScalar, position, scanJson, syntaxMessage, trailing, unexpected } from "./json";
import { isValidUtf8 } from "./utf8";

// Why the last decode failed, kept in pieces: the message is assembled only if it is
// reported (`decodeError()`), because a failed JSON attempt is the normal path for raw text.
const NONE = 0;
const SYNTAX = 1;
const INVALID_TYPE = 2;
const INVALID_VALUE = 3;
const TRAILING = 4;
const TEXT = 5;
let failure: i32 = NONE;
let failScalar: JsonScalar | null = null;
let failBytes: Uint8Array | null = null;
let failAt: i32 = 0;
let failText: string = "";

/** Whether the last decode failed. */
export function decodeFailed(): bool {
  return failure != NONE;
}

/** Why the last decode failed, in serde's and Rust's words. */
export function decodeError(): string {
  const bytes = changetype<Uint8Array>(failBytes);
  const s = changetype<JsonScalar>(failScalar);
  switch (failure) {
    case SYNTAX:
      return syntaxMessage(s, bytes);
    case INVALID_TYPE:
      return "invalid type: " + unexpected(s) + ", expected " + failText + " at " + position(bytes, s.end);
    case INVALID_VALUE:
      return "invalid value: " + unexpected(s) + ", expected " + failText + " at " + position(bytes, s.end);
    case TRAILING:
      return "trailing characters at " + position(bytes, failAt);
    case TEXT:
      return failText;
    default:
      return "";
  }
}

function ok(): void {
  failure = NONE;
}

function fail(kind: i32, s: JsonScalar | null, bytes: Uint8Array, text: string): void {
  failure = kind;
  failScalar = s;
  failBytes = bytes;
  failText = text;
}

function isAsciiWs(c: u32): bool {
  return c == 0x20 || (c >= 0x09 && c <= 0x0d);
}

function meantAsJson(bytes: Uint8Array): bool {
  if (failure == INVALID_TYPE || failure == INVALID_VALUE) return true;
  let i = 0;
  while (i < bytes.length && isAsciiWs(unchecked(bytes[i]))) i++;
  if (i >= bytes.length) return false;
  const c = unchecked(bytes[i]);
  return c == 0x7b || c == 0x5b || c == 0x22;
}

function checkTrailing(bytes: Uint8Array, s: JsonScalar): bool {
  const at = trailing(bytes, s.end);
  if (at >= 0) {
    fail(TRAILING, s, bytes, "");
    failAt = at;
    return false;
  }
  return true;
}

function utf8(bytes: Uint8Array): bool {
  return isValidUtf8(bytes.dataStart, <usize>bytes.length);
}

// ---- Text ------------------------------------------------------------------------------

/** JSON only: a JSON string's UTF-8 bytes. */
export function jsonText(bytes: Uint8Array): Uint8Array {
  ok();
  const s = scanJson(bytes);
  if (s.kind == JsonKind.Syntax) {
    fail(SYNTAX, s, bytes, "");
    return bytes;
  }
  if (s.kind != JsonKind.Str) {
    fail(INVALID_TYPE, s, bytes, "a string");
    return bytes;
  }
  if (!checkTrailing(bytes, s)) return bytes;
  return changetype<Uint8Array>(s.str);
}

/** A `String` argument (as UTF-8 bytes): a JSON string, else the raw text if it is UTF-8. */
export function argText(bytes: Uint8Array): Uint8Array {
  const value = jsonText(bytes);
  if (failure == NONE) return value;
  if (utf8(bytes)) ok();
  return bytes;
}

/** An `Option<String>` argument: JSON `null` is none (`isNull` set), else as `argText`. */
export let isNull: bool = false;
export function argTextOrNull(bytes: Uint8Array): Uint8Array {
  isNull = false;
  const s = scanJson(bytes);
  if (s.kind == JsonKind.Null && trailing(bytes, s.end) < 0) {
    ok();
    isNull = true;
    return bytes;
  }
  return argText(bytes);
}

// ---- Integers --------------------------------------------------------------------------

/** JSON only: an unsigned integer at most `max`, serde's `typeName` (`u64`). */
export function jsonUint(bytes: Uint8Array, max: u64, typeName: string): u64 {
  ok();
  const s = scanJson(bytes);
  if (s.kind == JsonKind.Syntax) {
    fail(SYNTAX, s, bytes, "");
    return 0;
  }
  if (s.kind == JsonKind.UInt) {
    if (s.magnitude > max) {
      fail(INVALID_VALUE, s, bytes, typeName);
      return 0;
    }
    if (!checkTrailing(bytes, s)) return 0;
    return s.magnitude;
  }
  if (s.kind == JsonKind.NegInt) {
    fail(INVALID_VALUE, s, bytes, typeName);
    return 0;
  }
  fail(INVALID_TYPE, s, bytes, typeName);
  return 0;
}

/** JSON only: a signed integer in `[min, max]`. */
export function jsonInt(bytes: Uint8Array, min: i64, max: i64, typeName: string): i64 {
  ok();
  const s = scanJson(bytes);
  if (s.kind == JsonKind.Syntax) {
    fail(SYNTAX, s, bytes, "");
    return 0;
  }
  if (s.kind == JsonKind.UInt || s.kind == JsonKind.NegInt) {
    let ok = true;
    let value: i64 = 0;
    if (s.kind == JsonKind.UInt) {
      ok = s.magnitude <= <u64>max;
      value = <i64>s.magnitude;
    } else {
      // magnitude <= 2^63 here; -(2^63) wraps to i64.MIN_VALUE, as intended.
      value = -(<i64>s.magnitude);
      ok = value >= min;
    }
    if (!ok) {
      fail(INVALID_VALUE, s, bytes, typeName);
      return 0;
    }
    if (!checkTrailing(bytes, s)) return 0;
    return value;
  }
  fail(INVALID_TYPE, s, bytes, typeName);
  return 0;
}

/** Rust's `str::trim` for ASCII whitespace: [start, end). */
function trimmed(bytes: Uint8Array): Uint8Array {
  let a = 0;
  let b = bytes.length;
  while (a < b && isAsciiWs(unchecked(bytes[a]))) a++;
  while (b > a && isAsciiWs(unchecked(bytes[b - 1]))) b--;
  return bytes.subarray(a, b);
}

/** Rust's `u64::from_str` family on raw text. */
function rawUint(text: Uint8Array, max: u64): u64 {
  ok();
  if (text.length == 0) {
    fail(TEXT, null, text, "cannot parse integer from empty string");
    return 0;
  }
  let i = 0;
  if (unchecked(text[0]) == 0x2b) {
    if (text.length == 1) {
      fail(TEXT, null, text, "invalid digit found in string");
      return 0;
    }
    i = 1;
  }
  let value: u64 = 0;
  let overflow = false;
  for (; i < text.length; i++) {
    const c = <u32>unchecked(text[i]);
    if (c < 0x30 || c > 0x39) {
      fail(TEXT, null, text, "invalid digit found in string");
      return 0;
    }
    const d = <u64>(c - 0x30);
    if (!overflow && (value > (max - d) / 10)) overflow = true;
    if (!overflow) value = value * 10 + d;
  }
  if (overflow) {
    fail(TEXT, null, text, "number too large to fit in target type");
    return 0;
  }
  return value;
}

function rawInt(text: Uint8Array, min: i64, max: i64): i64 {
  ok();
  if (text.length == 0) {
    fail(TEXT, null, text, "cannot parse integer from empty string");
    return 0;
  }
  let i = 0;
  let negative = false;
  const c0 = unchecked(text[0]);
  if (c0 == 0x2b || c0 == 0x2d) {
    if (text.length == 1) {
      fail(TEXT, null, text, "invalid digit found in string");
      return 0;
    }
    negative = c0 == 0x2d;
    i = 1;
  }
  const limit: u64 = negative ? <u64>(-(min + 1)) + 1 : <u64>max;
  let value: u64 = 0;
  let overflow = false;
  for (; i < text.length; i++) {
    const c = <u32>unchecked(text[i]);
    if (c < 0x30 || c > 0x39) {
      fail(TEXT, null, text, "invalid digit found in string");
      return 0;
    }
    const d = <u64>(c - 0x30);
    if (!overflow && (value > (limit - d) / 10)) overflow = true;
    if (!overflow) value = value * 10 + d;
  }
  if (overflow) {
    fail(TEXT, null, text, negative ? "number too small to fit in target type" : "number too large to fit in target type");
    return 0;
  }
  return negative ? -(<i64>value) : <i64>value;
}

/** An unsigned integer argument (JSON number, else raw text). */
export function argUint(bytes: Uint8Array, max: u64, typeName: string): u64 {
  const value = jsonUint(bytes, max, typeName);
  if (failure == NONE) return value;
  if (!utf8(bytes) || meantAsJson(bytes)) return 0;
  return rawUint(trimmed(bytes), max);
}

/** A signed integer argument (JSON number, else raw text). */
export function argInt(bytes: Uint8Array, min: i64, max: i64, typeName: string): i64 {
  const value = jsonInt(bytes, min, max, typeName);
  if (failure == NONE) return value;
  if (!utf8(bytes) || meantAsJson(bytes)) return 0;
  return rawInt(trimmed(bytes), min, max);
}

// ---- Booleans --------------------------------------------------------------------------

/** JSON only: `true` or `false`. */
export function jsonBool(bytes: Uint8Array): bool {
  ok();
  const s = scanJson(bytes);
  if (s.kind == JsonKind.Syntax) {
    fail(SYNTAX, s, bytes, "");
    return false;
  }
  if (s.kind != JsonKind.True && s.kind != JsonKind.False) {
    fail(INVALID_TYPE, s, bytes, "a boolean");
    return false;
  }
  if (!checkTrailing(bytes, s)) return false;
  return s.kind == JsonKind.True;
}

/** A boolean argument (JSON, else raw `true`/`false`). */
export function argBool(bytes: Uint8Array): bool {
  const value = jsonBool(bytes);
  if (failure == NONE) return value;
  if (!utf8(bytes) || meantAsJson(bytes)) return false;
  const t = trimmed(bytes);
  ok();
  if (t.length == 4 && unchecked(t[0]) == 0x74 && unchecked(t[1]) == 0x72 && unchecked(t[2]) == 0x75 && unchecked(t[3]) == 0x65) return true;
  if (t.length == 5 && unchecked(t[0]) == 0x66 && unchecked(t[1]) == 0x61 && unchecked(t[2]) == 0x6c && unchecked(t[3]) == 0x73 && unchecked(t[4]) == 0x65) return false;
  fail(TEXT, null, t, "provided string was not `true` or `false`");
  return false;
}

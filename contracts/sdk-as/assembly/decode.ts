// The argument convention of Runnel contract functions, the same as the Rust SDK's
// (contracts/sdk/src/args.rs): an argument is decoded as JSON into the parameter's type; if
// that fails and the bytes are UTF-8, the raw text is used as if it were a JSON string, with
// numbers and booleans parsed from it. So `hello` and `"hello"` both give the string hello,
// and `100` gives the integer 100. Error reasons are serde's and Rust's own wording.

import {
  FALSE,
  JsonWriter,
  NEGINT,
  NULL,
  STR,
  SYNTAX,
  TRUE,
  UINT,
  appendScanError,
  appendTrailing,
  appendUnexpected,
  inputAt,
  inputIsUtf8,
  looksLikeJson,
  sMagnitude,
  scanJson,
  trailing,
  trimEnd,
  trimInput,
  trimStart,
} from "./json";
import { lit, textLen, textStart } from "./text";

// Why the last decode failed, kept in pieces: the message is assembled only if it is
// reported (`appendDecodeError`), because a failed JSON attempt is the normal path for raw text.
const NONE = 0;
const SCAN = 1;
const INVALID_TYPE = 2;
const INVALID_VALUE = 3;
const TRAILING = 4;
const TEXT = 5;
let failure: i32 = NONE;
/** INVALID_TYPE, INVALID_VALUE: what was expected; TEXT: the message (static text). */
let failText: usize = 0;
let failAt: i32 = 0;

/** Whether the last decode failed. */
export function decodeFailed(): bool {
  return failure != NONE;
}

/** Writes why the last decode failed, in serde's and Rust's words. */
export function appendDecodeError(w: JsonWriter): void {
  if (failure == SCAN) appendScanError(w);
  else if (failure == INVALID_TYPE) appendUnexpected(w, lit("invalid type: "), failText);
  else if (failure == INVALID_VALUE) appendUnexpected(w, lit("invalid value: "), failText);
  else if (failure == TRAILING) appendTrailing(w, failAt);
  else if (failure == TEXT) w.text(failText);
}

function failWith(kind: i32, text: usize): void {
  failure = kind;
  failText = text;
}

/** Scans the input as JSON: its kind, with `failure` set for a syntax error. */
function scan(ptr: usize, len: i32, buffer: ArrayBuffer | null): i32 {
  const kind = scanJson(ptr, len, buffer);
  failure = kind == SYNTAX ? SCAN : NONE;
  return kind;
}

/** Checks only whitespace follows the scanned value. */
function checkTrailing(): bool {
  const at = trailing();
  if (at < 0) return true;
  failure = TRAILING;
  failAt = at;
  return false;
}

/** Whether the raw text was meant as JSON (so its JSON error stands). */
function meantAsJson(): bool {
  return failure == INVALID_TYPE || failure == INVALID_VALUE || looksLikeJson();
}

// ---- Text ------------------------------------------------------------------------------

/** JSON only: whether the input is a JSON string (then in `sStr`, `sStrLen`). */
export function jsonText(ptr: usize, len: i32, buffer: ArrayBuffer | null): bool {
  const kind = scan(ptr, len, buffer);
  if (kind == SYNTAX) return false;
  if (kind != STR) {
    failWith(INVALID_TYPE, lit("a string"));
    return false;
  }
  return checkTrailing();
}

/**
 * A `String` argument: a JSON string (true; it is in `sStr`), else the raw text if it is
 * UTF-8 (false, no failure), else a failure.
 */
export function argText(ptr: usize, len: i32, buffer: ArrayBuffer | null): bool {
  if (jsonText(ptr, len, buffer)) return true;
  if (inputIsUtf8()) failure = NONE;
  return false;
}

/** Whether the input is JSON `null` (an `Option<String>` argument that is none). */
export function isJsonNull(ptr: usize, len: i32, buffer: ArrayBuffer | null): bool {
  return scanJson(ptr, len, buffer) == NULL && trailing() < 0;
}

// ---- Integers --------------------------------------------------------------------------

/** JSON only: an integer in [-minMagnitude, max] (as two's complement if negative); `typeName` is serde's (`u64`). */
export function jsonInteger(ptr: usize, len: i32, buffer: ArrayBuffer | null, minMagnitude: u64, max: u64, typeName: usize): u64 {
  const kind = scan(ptr, len, buffer);
  if (kind == SYNTAX) return 0;
  if (kind != UINT && kind != NEGINT) {
    failWith(INVALID_TYPE, typeName);
    return 0;
  }
  if (sMagnitude > (kind == UINT ? max : minMagnitude)) {
    failWith(INVALID_VALUE, typeName);
    return 0;
  }
  if (!checkTrailing()) return 0;
  // magnitude <= 2^63 when negative; -(2^63) wraps to i64.MIN_VALUE, as intended.
  return kind == UINT ? sMagnitude : -sMagnitude;
}

/** Rust's `from_str` for integers on the trimmed raw text of the last scan. */
function rawInteger(minMagnitude: u64, max: u64): u64 {
  failure = NONE;
  trimInput();
  let i = trimStart;
  const end = trimEnd;
  if (i == end) {
    failWith(TEXT, lit("cannot parse integer from empty string"));
    return 0;
  }
  const c0 = inputAt(i);
  let negative = false;
  if (c0 == 0x2b || (c0 == 0x2d && minMagnitude != 0)) {
    if (end - i == 1) {
      failWith(TEXT, lit("invalid digit found in string"));
      return 0;
    }
    negative = c0 == 0x2d;
    i++;
  }
  const limit = negative ? minMagnitude : max;
  let value: u64 = 0;
  let overflow = false;
  for (; i < end; i++) {
    const d = <u64>(inputAt(i) - 0x30);
    if (d >= 10) {
      failWith(TEXT, lit("invalid digit found in string"));
      return 0;
    }
    if (overflow || value > (limit - d) / 10) overflow = true;
    else value = value * 10 + d;
  }
  if (overflow) {
    failWith(TEXT, negative ? lit("number too small to fit in target type") : lit("number too large to fit in target type"));
    return 0;
  }
  return negative ? -value : value;
}

/** An integer argument (JSON number, else raw text) in [-minMagnitude, max]. */
export function argInteger(ptr: usize, len: i32, buffer: ArrayBuffer | null, minMagnitude: u64, max: u64, typeName: usize): u64 {
  const value = jsonInteger(ptr, len, buffer, minMagnitude, max, typeName);
  if (failure == NONE) return value;
  if (!inputIsUtf8() || meantAsJson()) return 0;
  return rawInteger(minMagnitude, max);
}

// ---- Booleans --------------------------------------------------------------------------

/** JSON only: `true` or `false`. */
export function jsonBool(ptr: usize, len: i32, buffer: ArrayBuffer | null): bool {
  const kind = scan(ptr, len, buffer);
  if (kind == SYNTAX) return false;
  if (kind != TRUE && kind != FALSE) {
    failWith(INVALID_TYPE, lit("a boolean"));
    return false;
  }
  checkTrailing();
  return kind == TRUE;
}

function rawIs(word: usize): bool {
  const n = textLen(word);
  const p = textStart(word);
  if (trimEnd - trimStart != n) return false;
  for (let k = 0; k < n; k++) {
    if (inputAt(trimStart + k) != <u32>load<u8>(p + <usize>k)) return false;
  }
  return true;
}

/** A boolean argument (JSON, else raw `true`/`false`). */
export function argBool(ptr: usize, len: i32, buffer: ArrayBuffer | null): bool {
  const value = jsonBool(ptr, len, buffer);
  if (failure == NONE) return value;
  if (!inputIsUtf8() || meantAsJson()) return false;
  failure = NONE;
  trimInput();
  if (rawIs(lit("true"))) return true;
  if (!rawIs(lit("false"))) failWith(TEXT, lit("provided string was not `true` or `false`"));
  return false;
}

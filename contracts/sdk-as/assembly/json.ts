// JSON as the Rust SDK writes and reads it (serde_json): the writer behind results, events,
// typed state and error messages, and the reader of scalar values. Encodings are
// byte-for-byte those of serde_json (`{"from":null,"to":"a","amount":30}`, no spaces, the same
// string escapes), so a client cannot tell which SDK built a contract. Everything works on
// UTF-8 bytes in linear memory; a `string` is converted only where one is given.

import { Utf8, isMaxChar, isValidUtf8, plainRunEnd } from "./utf8";
import { lit, textLen, textStart } from "./text";
import { newBytes, view } from "./bytes";

/**
 * Builds UTF-8 text (JSON, keys, messages) into a growing byte buffer: `len` bytes at `ptr`.
 */
export class JsonWriter {
  /** Where the bytes are (they move as the buffer grows). */
  ptr: usize;
  /** How many bytes are written. */
  len: i32 = 0;
  private cap: i32;
  private needComma: bool = false;

  constructor(capacity: i32 = 64) {
    this.cap = capacity;
    this.ptr = heap.alloc(<usize>capacity);
  }

  /** A copy of the bytes written so far. */
  toBytes(): Uint8Array {
    const out = newBytes(this.len);
    memory.copy(out.dataStart, this.ptr, <usize>this.len);
    return out;
  }

  /** Makes room for `n` more bytes, counts them as written and returns where they go. */
  grow(n: i32): usize {
    const len = this.len;
    const need = len + n;
    if (need > this.cap) {
      let cap = this.cap << 1;
      if (cap < need) cap = need;
      const p = heap.alloc(<usize>cap);
      memory.copy(p, this.ptr, <usize>len);
      this.ptr = p;
      this.cap = cap;
    }
    this.len = need;
    return this.ptr + <usize>len;
  }

  /** One byte. */
  byte(b: u32): void {
    store<u8>(this.grow(1), <u8>b);
  }

  /** `n` bytes from `p`. */
  copy(p: usize, n: i32): void {
    memory.copy(this.grow(n), p, <usize>n);
  }

  /** Static text `t` (see `lit`). */
  text(t: usize): void {
    this.copy(textStart(t), textLen(t));
  }

  /** An unsigned integer in decimal. */
  dec(value: u64): void {
    let digits = 1;
    for (let v = value; v >= 10; v /= 10) digits++;
    let p = this.grow(digits) + <usize>digits;
    do {
      store<u8>(--p, <u8>(0x30 + value % 10));
      value /= 10;
    } while (value != 0);
  }

  /** A signed integer in decimal. */
  idec(value: i64): void {
    if (value < 0) this.byte(0x2d);
    this.dec(value < 0 ? <u64>-value : <u64>value);
  }

  /** `text` as UTF-8, escaped for a JSON string if `escape`. A lone surrogate becomes U+FFFD. */
  utf16(text: string, escape: bool): void {
    const p = changetype<usize>(text);
    const n = <usize>text.length << 1;
    for (let i: usize = 0; i < n; i += 2) {
      let c = <u32>load<u16>(p + i);
      if (c < 0x80) {
        if (escape) this.escaped(c);
        else this.byte(c);
        continue;
      }
      if (c < 0x800) {
        const o = this.grow(2);
        store<u8>(o, 0xc0 | (c >> 6));
        store<u8>(o, 0x80 | (c & 0x3f), 1);
        continue;
      }
      if (c - 0xd800 < 0x800) {
        const next = i + 2 < n ? <u32>load<u16>(p + i + 2) : 0;
        if (c < 0xdc00 && next - 0xdc00 < 0x400) {
          const cp = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
          const o = this.grow(4);
          store<u8>(o, 0xf0 | (cp >> 18));
          store<u8>(o, 0x80 | ((cp >> 12) & 0x3f), 1);
          store<u8>(o, 0x80 | ((cp >> 6) & 0x3f), 2);
          store<u8>(o, 0x80 | (cp & 0x3f), 3);
          i += 2;
          continue;
        }
        c = 0xfffd;
      }
      const o = this.grow(3);
      store<u8>(o, 0xe0 | (c >> 12));
      store<u8>(o, 0x80 | ((c >> 6) & 0x3f), 1);
      store<u8>(o, 0x80 | (c & 0x3f), 2);
    }
  }

  /** The valid UTF-8 at `p` as the inside of a JSON string, escaped as serde_json escapes it. */
  escapedUtf8(p: usize, n: i32): void {
    const end = p + <usize>n;
    let run = p;
    while (run < end) {
      const q = plainRunEnd(run, end);
      this.copy(run, <i32>(q - run));
      if (q == end) break;
      this.escaped(<u32>load<u8>(q));
      run = q + 1;
    }
  }

  /** An ASCII character inside a JSON string. */
  private escaped(c: u32): void {
    if (c >= 0x20 && c != 0x22 && c != 0x5c) {
      this.byte(c);
      return;
    }
    let e: u32 = c;
    if (c == 0x08) e = 0x62;
    else if (c == 0x0c) e = 0x66;
    else if (c == 0x0a) e = 0x6e;
    else if (c == 0x0d) e = 0x72;
    else if (c == 0x09) e = 0x74;
    else if (c < 0x20) e = 0;
    this.byte(0x5c);
    if (e != 0) {
      this.byte(e);
    } else {
      this.text(lit("u00"));
      this.hexDigit(c >> 4);
      this.hexDigit(c & 0xf);
    }
  }

  private hexDigit(d: u32): void {
    this.byte(d + (d < 10 ? 0x30 : 0x57));
  }

  /**
   * The valid UTF-8 at `p` quoted as Rust's `{:?}` shows a string (`"a\0b"`): control
   * characters and U+10FFFF escaped, everything else as it is.
   */
  debugUtf8(p: usize, n: i32): void {
    const end = p + <usize>n;
    this.byte(0x22);
    while (p < end) {
      const b0 = <u32>load<u8>(p);
      const width: usize = b0 < 0x80 ? 1 : b0 < 0xe0 ? 2 : b0 < 0xf0 ? 3 : 4;
      // C1 controls are C2 80..C2 9F; their code point is the second byte.
      let cp = b0 == 0xc2 ? <u32>load<u8>(p, 1) : b0;
      let e: u32 = 0;
      if (cp == 0x22 || cp == 0x5c) e = cp;
      else if (cp == 0x0a) e = 0x6e;
      else if (cp == 0x0d) e = 0x72;
      else if (cp == 0x09) e = 0x74;
      else if (cp == 0) e = 0x30;
      if (e != 0) {
        this.byte(0x5c);
        this.byte(e);
      } else if (cp < 0x20 || cp - 0x7f < 0x21 || isMaxChar(p, end)) {
        if (width == 4) cp = 0x10ffff;
        this.text(lit("\\u{"));
        let shift = 20;
        while (shift > 0 && (cp >> shift) == 0) shift -= 4;
        for (; shift >= 0; shift -= 4) this.hexDigit((cp >> shift) & 0xf);
        this.byte(0x7d);
      } else {
        this.copy(p, <i32>width);
      }
      p += width;
    }
    this.byte(0x22);
  }

  /** `value` as Rust's `{}` shows it: the text of messages. */
  display<T>(value: T): void {
    if (isBoolean<T>()) {
      this.text(value ? lit("true") : lit("false"));
    } else if (isInteger<T>()) {
      if (isSigned<T>()) this.idec(<i64>value);
      else this.dec(<u64>value);
    } else if (isString<T>()) {
      if (isNullable<T>() && changetype<usize>(value) == 0) this.text(lit("null"));
      else this.utf16(changetype<string>(value), false);
    } else if (isReference<T>()) {
      if (isNullable<T>() && changetype<usize>(value) == 0) {
        this.text(lit("null"));
      } else if (idof<T>() == idof<Utf8>()) {
        const bytes = changetype<Utf8>(value).bytes;
        this.copy(bytes.dataStart, bytes.length);
      } else {
        // @ts-ignore: a class with its own way to write itself (Utf8Error)
        if (isDefined(value.__display)) value.__display(this);
        // @ts-ignore: anything else shows as its toString()
        else this.utf16(value.toString(), false);
      }
    } else {
      // @ts-ignore: floats
      this.utf16(value.toString(), false);
    }
  }

  /** `value` (a string or Utf8) quoted as Rust's `{:?}` shows text. */
  debug<T>(value: T): void {
    if (isString<T>()) {
      const w = new JsonWriter();
      w.utf16(changetype<string>(value), false);
      this.debugUtf8(w.ptr, w.len);
    } else if (isReference<T>() && idof<T>() == idof<Utf8>()) {
      const bytes = changetype<Utf8>(value).bytes;
      this.debugUtf8(bytes.dataStart, bytes.length);
    } else {
      ERROR("runnel: quoted() takes a string or Utf8");
    }
  }

  // ---- JSON ----------------------------------------------------------------------------

  private comma(): void {
    if (this.needComma) this.byte(0x2c);
    this.needComma = true;
  }

  /** `null`. */
  null(): void {
    this.comma();
    this.text(lit("null"));
  }

  /** `true` or `false`. */
  bool(value: bool): void {
    this.comma();
    this.text(value ? lit("true") : lit("false"));
  }

  /** An unsigned integer. */
  u64(value: u64): void {
    this.comma();
    this.dec(value);
  }

  /** A signed integer. */
  i64(value: i64): void {
    this.comma();
    this.idec(value);
  }

  /** A string, escaped as serde_json escapes it. A lone UTF-16 surrogate becomes U+FFFD. */
  string(value: string): void {
    this.comma();
    this.byte(0x22);
    this.utf16(value, true);
    this.byte(0x22);
  }

  /** A string given as valid UTF-8 (no UTF-16 round trip). */
  utf8(value: Utf8): void {
    this.utf8Bytes(value.bytes.dataStart, value.bytes.length);
  }

  /** A string given as the valid UTF-8 bytes at `ptr`. */
  utf8Bytes(ptr: usize, n: i32): void {
    this.comma();
    this.byte(0x22);
    this.escapedUtf8(ptr, n);
    this.byte(0x22);
  }

  /** JSON text written as given (the caller guarantees it is one valid JSON value). */
  raw(json: Uint8Array): void {
    this.comma();
    this.copy(json.dataStart, json.length);
  }

  /** `[`; follow with values and `endArray`. */
  beginArray(): void {
    this.comma();
    this.byte(0x5b);
    this.needComma = false;
  }

  /** `]`. */
  endArray(): void {
    this.byte(0x5d);
    this.needComma = true;
  }

  /** `{`; follow with `key`/value pairs and `endObject`. */
  beginObject(): void {
    this.comma();
    this.byte(0x7b);
    this.needComma = false;
  }

  /** A member name (ASCII without characters that need escaping, as struct fields are). */
  key(name: string): void {
    this.comma();
    this.byte(0x22);
    this.utf16(name, false);
    this.text(lit("\":"));
    this.needComma = false;
  }

  /** A member given as static text `"name":` (what the transform generates for `@json` fields). */
  field(t: usize): void {
    this.comma();
    this.text(t);
    this.needComma = false;
  }

  /** `}`. */
  endObject(): void {
    this.byte(0x7d);
    this.needComma = true;
  }
}

/**
 * Writes `value` as JSON: integers, `bool`, `string`, `Utf8`, `Uint8Array` (as an array of
 * numbers, as serde encodes `Vec<u8>`), arrays of these, `null` for a null reference, and
 * classes marked `@json` (the transform gives them their encoder).
 */
export function writeJson<T>(w: JsonWriter, value: T): void {
  if (isBoolean<T>()) {
    w.bool(<bool>value);
  } else if (isInteger<T>()) {
    if (isSigned<T>()) w.i64(<i64>value);
    else w.u64(<u64>value);
  } else if (isFloat<T>()) {
    ERROR("runnel: floats are not encoded as JSON by @runnel/contract; use an integer (e.g. a fixed-point amount)");
  } else if (isString<T>()) {
    if (isNullable<T>() && changetype<usize>(value) == 0) w.null();
    else w.string(changetype<string>(value));
  } else if (isReference<T>()) {
    if (isNullable<T>() && changetype<usize>(value) == 0) {
      w.null();
    } else if (idof<T>() == idof<Utf8>()) {
      w.utf8(changetype<Utf8>(value));
    } else if (idof<T>() == idof<Uint8Array>()) {
      const bytes = changetype<Uint8Array>(value);
      w.beginArray();
      for (let i = 0; i < bytes.length; i++) w.u64(load<u8>(bytes.dataStart + <usize>i));
      w.endArray();
    } else if (isArray<T>()) {
      // @ts-ignore: T is an array here
      const n = value.length;
      w.beginArray();
      // @ts-ignore: T is an array here
      for (let i = 0; i < n; i++) writeJson<valueof<T>>(w, unchecked(value[i]));
      w.endArray();
    } else {
      // @ts-ignore: a class marked @json has this method (added by the transform)
      if (!isDefined(value.__runnel_json)) {
        ERROR("runnel: this class cannot be encoded as JSON; mark it @json (and build with the @runnel/contract transform)");
      }
      // @ts-ignore
      value.__runnel_json(w);
    }
  } else {
    ERROR("runnel: this type cannot be encoded as JSON");
  }
}

/** `value` as JSON, in a writer (`ptr`, `len`). */
export function jsonOf<T>(value: T): JsonWriter {
  const w = new JsonWriter(32);
  writeJson<T>(w, value);
  return w;
}

/** `value` as JSON bytes. */
export function toJson<T>(value: T): Uint8Array {
  return jsonOf<T>(value).toBytes();
}

// ---- Reading ---------------------------------------------------------------------------
// One JSON value scanned the way serde_json does, kept in module state: what it is, where it
// starts and ends and, for a syntax error, serde_json's message and position. Messages are
// only assembled when one is reported (`appendScanError`), because a failed JSON attempt is
// the normal path for raw-text arguments.

export const SYNTAX = 0;
export const STR = 1;
export const TRUE = 2;
export const FALSE = 3;
export const NULL = 4;
export const UINT = 5;
export const NEGINT = 6;
export const FLOAT = 7;
export const SEQ = 8;
export const MAP = 9;

/** What the last scan found (one of the kinds above). */
export let sKind: i32 = SYNTAX;
/** UINT: the value; NEGINT: its magnitude. */
export let sMagnitude: u64 = 0;
/** STR: the decoded UTF-8 (a view of the input when it had no escapes). */
export let sStr: usize = 0;
export let sStrLen: i32 = 0;
/** STR: the buffer `sStr` is in. */
export let sStrBuffer: ArrayBuffer | null = null;
/** Index where the value starts and just after it. */
export let sStart: i32 = 0;
export let sEnd: i32 = 0;
/** SYNTAX: serde_json's message (static text) and the byte index it reports. */
let sError: usize = 0;
let sErrorAt: i32 = 0;
/** The input: `inLen` bytes at `inPtr`, in `inBuffer`. */
let inPtr: usize = 0;
let inLen: i32 = 0;
let inBuffer: ArrayBuffer | null = null;

// @ts-ignore: decorator
@inline
function at(i: i32): u32 {
  return <u32>load<u8>(inPtr + <usize>i);
}

function isDigit(c: u32): bool {
  return c - 0x30 < 10;
}

function syntax(message: usize, i: i32): void {
  sKind = SYNTAX;
  sError = message;
  sErrorAt = i;
}

function skipWs(i: i32): i32 {
  while (i < inLen) {
    const c = at(i);
    if (c != 0x20 && c != 0x09 && c != 0x0a && c != 0x0d) break;
    i++;
  }
  return i;
}

/** serde_json's position of byte index `i`: `line L column C`. */
function appendPosition(w: JsonWriter, i: i32): void {
  let line: u32 = 1;
  let lineStart = 0;
  const n = i < inLen ? i : inLen;
  for (let k = 0; k < n; k++) {
    if (at(k) == 0x0a) {
      line++;
      lineStart = k + 1;
    }
  }
  w.text(lit(" at line "));
  w.dec(line);
  w.text(lit(" column "));
  w.dec(<u64>(i - lineStart));
}

/** The last scan's syntax error, as serde_json words it: `expected value at line 1 column 1`. */
export function appendScanError(w: JsonWriter): void {
  w.text(sError);
  appendPosition(w, sErrorAt);
}

/** `invalid type: <what was found>, expected <expected> at line L column C`. */
export function appendUnexpected(w: JsonWriter, prefix: usize, expected: usize): void {
  w.text(prefix);
  switch (sKind) {
    case STR: {
      w.text(lit("string "));
      w.debugUtf8(sStr, sStrLen);
      break;
    }
    case TRUE:
      w.text(lit("boolean `true`"));
      break;
    case FALSE:
      w.text(lit("boolean `false`"));
      break;
    case NULL:
      w.text(lit("null"));
      break;
    case UINT:
    case NEGINT: {
      w.text(lit("integer `"));
      if (sKind == NEGINT) w.byte(0x2d);
      w.dec(sMagnitude);
      w.byte(0x60);
      break;
    }
    case FLOAT: {
      // serde shows the parsed f64 (Rust's `{}`, `.0` added to whole numbers); the number's
      // own text is exact for plain decimals and keeps float formatting out of every module.
      w.text(lit("floating point `"));
      let plain = true;
      for (let i = sStart; i < sEnd; i++) {
        const c = at(i) | 0x20;
        if (c == 0x2e || c == 0x65) plain = false;
      }
      w.copy(inPtr + <usize>sStart, sEnd - sStart);
      if (plain) w.text(lit(".0"));
      w.byte(0x60);
      break;
    }
    case SEQ:
      w.text(lit("sequence"));
      break;
    case MAP:
      w.text(lit("map"));
      break;
    default:
      w.text(lit("value"));
  }
  w.text(lit(", expected "));
  w.text(expected);
  appendPosition(w, sEnd);
}

/** `trailing characters at line L column C` for a value followed by more than whitespace at `i`. */
export function appendTrailing(w: JsonWriter, i: i32): void {
  w.text(lit("trailing characters"));
  appendPosition(w, i);
}

function hexValue(c: u32): i32 {
  if (isDigit(c)) return <i32>(c - 0x30);
  c |= 0x20;
  if (c - 0x61 < 6) return <i32>(c - 0x57);
  return -1;
}

/** Four hex digits at `i`: their value, -1 if one is not a hex digit, -2 if the input ends. */
function read4(i: i32): i32 {
  if (i + 4 > inLen) return -2;
  let v = 0;
  for (let k = 0; k < 4; k++) {
    const h = hexValue(at(i + k));
    if (h < 0) return -1;
    v = (v << 4) | h;
  }
  return v;
}

/** The JSON string whose opening quote is at `open`. */
function scanString(open: i32): void {
  const n = inLen;
  const base = inPtr;
  // Fast path: no escapes; the result is a view of the input.
  let i = <i32>(plainRunEnd(base + <usize>(open + 1), base + <usize>n) - base);
  if (i < n && at(i) == 0x22) {
    sStr = base + <usize>(open + 1);
    sStrLen = i - open - 1;
    sStrBuffer = inBuffer;
    if (!isValidUtf8(sStr, <usize>sStrLen)) return syntax(lit("invalid unicode code point"), i + 1);
    sKind = STR;
    sEnd = i + 1;
    return;
  }
  // Slow path: decode escapes into a new buffer (never longer than the input).
  const buffer = changetype<ArrayBuffer>(__new(<usize>n, idof<ArrayBuffer>()));
  const out = changetype<usize>(buffer);
  let o = out;
  i = open + 1;
  while (true) {
    if (i >= n) return syntax(lit("EOF while parsing a string"), n);
    const c = at(i);
    if (c == 0x22) {
      i++;
      break;
    }
    if (c < 0x20) return syntax(lit("control character (\\u0000-\\u001F) found while parsing a string"), i + 1);
    i++;
    if (c != 0x5c) {
      store<u8>(o++, <u8>c);
      continue;
    }
    if (i >= n) return syntax(lit("EOF while parsing a string"), n);
    const e = at(i++);
    let b: u32 = 0;
    if (e == 0x22 || e == 0x5c || e == 0x2f) b = e;
    else if (e == 0x62) b = 0x08;
    else if (e == 0x66) b = 0x0c;
    else if (e == 0x6e) b = 0x0a;
    else if (e == 0x72) b = 0x0d;
    else if (e == 0x74) b = 0x09;
    else if (e != 0x75) return syntax(lit("invalid escape"), i);
    if (b != 0) {
      store<u8>(o++, <u8>b);
      continue;
    }
    const u = read4(i);
    if (u == -2) return syntax(lit("EOF while parsing a string"), n);
    if (u < 0) return syntax(lit("invalid escape"), i + 1);
    i += 4;
    let cp = <u32>u;
    if (cp - 0xdc00 < 0x400) return syntax(lit("lone leading surrogate in hex escape"), i);
    if (cp - 0xd800 < 0x400) {
      if (i + 2 > n || at(i) != 0x5c || at(i + 1) != 0x75) return syntax(lit("unexpected end of hex escape"), i + 1);
      const low = read4(i + 2);
      if (<u32>low - 0xdc00 >= 0x400) return syntax(lit("lone leading surrogate in hex escape"), i + 6);
      i += 6;
      cp = 0x10000 + ((cp - 0xd800) << 10) + (<u32>low - 0xdc00);
    }
    // UTF-8 of cp.
    if (cp < 0x80) {
      store<u8>(o++, <u8>cp);
    } else {
      let count = cp < 0x800 ? 1 : cp < 0x10000 ? 2 : 3;
      store<u8>(o++, <u8>((0xf0_e0_c0 >> ((count - 1) << 3)) | (cp >> (6 * count))));
      while (count > 0) {
        count--;
        store<u8>(o++, <u8>(0x80 | ((cp >> (6 * count)) & 0x3f)));
      }
    }
  }
  sStr = out;
  sStrLen = <i32>(o - out);
  sStrBuffer = buffer;
  if (!isValidUtf8(sStr, <usize>sStrLen)) return syntax(lit("invalid unicode code point"), i);
  sKind = STR;
  sEnd = i;
}

function scanIdent(start: i32, word: usize, kind: i32): void {
  const p = textStart(word);
  const len = textLen(word);
  for (let k = 1; k < len; k++) {
    const i = start + k;
    if (i >= inLen) return syntax(lit("EOF while parsing a value"), inLen);
    if (at(i) != <u32>load<u8>(p + <usize>k)) return syntax(lit("expected ident"), i + 1);
  }
  sKind = kind;
  sEnd = start + len;
}

/** Digits from `i`: the index after them (the caller checked there is one). */
function digitsEnd(i: i32): i32 {
  while (i < inLen && isDigit(at(i))) i++;
  return i;
}

/** After `.` or an exponent sign at `i`: the index after its digits, or -1 (syntax error set). */
function fraction(i: i32): i32 {
  if (i >= inLen) {
    syntax(lit("EOF while parsing a value"), i + 1);
    return -1;
  }
  if (!isDigit(at(i))) {
    syntax(lit("invalid number"), i + 1);
    return -1;
  }
  return digitsEnd(i);
}

function scanNumber(start: i32): void {
  const n = inLen;
  let i = start;
  const negative = at(i) == 0x2d;
  if (negative) i++;
  if (i >= n) return syntax(lit("EOF while parsing a value"), n);
  let c = at(i);
  if (!isDigit(c)) return syntax(lit("invalid number"), i + 1);
  let value: u64 = 0;
  let isFloat = false;
  if (c == 0x30) {
    i++;
    if (i < n && isDigit(at(i))) return syntax(lit("invalid number"), i + 1);
  } else {
    while (i < n) {
      c = at(i);
      if (!isDigit(c)) break;
      const d = <u64>(c - 0x30);
      if (value > (u64.MAX_VALUE - d) / 10) isFloat = true;
      else value = value * 10 + d;
      i++;
    }
  }
  if (i < n && at(i) == 0x2e) {
    isFloat = true;
    i = fraction(i + 1);
    if (i < 0) return;
  }
  if (i < n && (at(i) | 0x20) == 0x65) {
    isFloat = true;
    i++;
    if (i < n && (at(i) == 0x2b || at(i) == 0x2d)) i++;
    i = fraction(i);
    if (i < 0) return;
  }
  sEnd = i;
  // serde_json reads `-0` as -0.0, and a negative number below i64::MIN as a float.
  if (negative && (value == 0 || value > <u64>i64.MAX_VALUE + 1)) isFloat = true;
  sKind = isFloat ? FLOAT : negative ? NEGINT : UINT;
  sMagnitude = value;
}

/** Scans one JSON value at the start of the `len` bytes at `ptr` (in `buffer`), scalars in full. */
export function scanJson(ptr: usize, len: i32, buffer: ArrayBuffer | null): i32 {
  inPtr = ptr;
  inLen = len;
  inBuffer = buffer;
  const i = skipWs(0);
  sStart = i;
  if (i >= len) {
    syntax(lit("EOF while parsing a value"), len);
  } else {
    const c = at(i);
    sEnd = i;
    if (c == 0x22) scanString(i);
    else if (c == 0x2d || isDigit(c)) scanNumber(i);
    else if (c == 0x74) scanIdent(i, lit("true"), TRUE);
    else if (c == 0x66) scanIdent(i, lit("false"), FALSE);
    else if (c == 0x6e) scanIdent(i, lit("null"), NULL);
    else if (c == 0x5b) sKind = SEQ;
    else if (c == 0x7b) sKind = MAP;
    else syntax(lit("expected value"), i + 1);
  }
  return sKind;
}

/** After the last scan's value: -1 if only whitespace follows, else where serde_json reports trailing characters. */
export function trailing(): i32 {
  const i = skipWs(sEnd);
  return i < inLen ? i + 1 : -1;
}

/** The last scan's string as a view. */
export function scannedStr(): Uint8Array {
  return view(changetype<ArrayBuffer>(sStrBuffer), sStr, sStrLen);
}

/** Whether the input of the last scan is valid UTF-8. */
export function inputIsUtf8(): bool {
  return isValidUtf8(inPtr, <usize>inLen);
}

/** The input of the last scan trimmed of ASCII whitespace (Rust's `str::trim`): [start, end). */
export let trimStart: i32 = 0;
export let trimEnd: i32 = 0;
export function trimInput(): void {
  let a = 0;
  let b = inLen;
  while (a < b && isAsciiWs(at(a))) a++;
  while (b > a && isAsciiWs(at(b - 1))) b--;
  trimStart = a;
  trimEnd = b;
}

/** Byte `i` of the last scan's input. */
export function inputAt(i: i32): u32 {
  return at(i);
}

function isAsciiWs(c: u32): bool {
  return c == 0x20 || c - 0x09 < 5;
}

/** Whether the input, after whitespace, starts like a JSON string, array or object. */
export function looksLikeJson(): bool {
  let i = 0;
  while (i < inLen && isAsciiWs(at(i))) i++;
  if (i >= inLen) return false;
  const c = at(i);
  return c == 0x7b || c == 0x5b || c == 0x22;
}

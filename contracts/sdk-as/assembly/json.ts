// JSON as the Rust SDK writes and reads it (serde_json): the writer behind results, events
// and typed state, and the reader of scalar values. Encodings are byte-for-byte those of
// serde_json (`{"from":null,"to":"a","amount":30}`, no spaces, the same string escapes), so a
// client cannot tell which SDK built a contract.

import { Utf8, plainRunEnd } from "./utf8";

const HEX: string = "0123456789abcdef";

/** Builds JSON text into a growing byte buffer. */
export class JsonWriter {
  private buf: Uint8Array;
  private len: i32 = 0;
  private needComma: bool = false;

  constructor(capacity: i32 = 64) {
    this.buf = new Uint8Array(capacity);
  }

  /** The bytes written so far. */
  toBytes(): Uint8Array {
    return this.buf.subarray(0, this.len);
  }

  private reserve(n: i32): void {
    const need = this.len + n;
    if (need <= this.buf.length) return;
    let cap = this.buf.length << 1;
    if (cap < need) cap = need;
    const grown = new Uint8Array(cap);
    memory.copy(grown.dataStart, this.buf.dataStart, <usize>this.len);
    this.buf = grown;
  }

  private byte(b: u32): void {
    this.reserve(1);
    store<u8>(this.buf.dataStart + <usize>this.len, <u8>b);
    this.len++;
  }

  private ascii(text: string): void {
    const n = text.length;
    this.reserve(n);
    const at = this.buf.dataStart + <usize>this.len;
    for (let i = 0; i < n; i++) store<u8>(at + <usize>i, <u8>text.charCodeAt(i));
    this.len += n;
  }

  private copy(ptr: usize, n: i32): void {
    this.reserve(n);
    memory.copy(this.buf.dataStart + <usize>this.len, ptr, <usize>n);
    this.len += n;
  }

  private comma(): void {
    if (this.needComma) this.byte(0x2c);
    this.needComma = true;
  }

  /** `null`. */
  null(): void {
    this.comma();
    this.ascii("null");
  }

  /** `true` or `false`. */
  bool(value: bool): void {
    this.comma();
    this.ascii(value ? "true" : "false");
  }

  /** An unsigned integer. */
  u64(value: u64): void {
    this.comma();
    this.ascii(value.toString());
  }

  /** A signed integer. */
  i64(value: i64): void {
    this.comma();
    this.ascii(value.toString());
  }

  /** A string, escaped as serde_json escapes it. A lone UTF-16 surrogate becomes U+FFFD. */
  string(value: string): void {
    this.comma();
    this.byte(0x22);
    const n = value.length;
    for (let i = 0; i < n; i++) {
      let c = <u32>value.charCodeAt(i);
      if (c < 0x80) {
        this.escapedAscii(c);
        continue;
      }
      if (c < 0x800) {
        this.byte(0xc0 | (c >> 6));
        this.byte(0x80 | (c & 0x3f));
        continue;
      }
      if (c >= 0xd800 && c < 0xe000) {
        const next = i + 1 < n ? <u32>value.charCodeAt(i + 1) : 0;
        if (c < 0xdc00 && next >= 0xdc00 && next < 0xe000) {
          const cp = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
          this.byte(0xf0 | (cp >> 18));
          this.byte(0x80 | ((cp >> 12) & 0x3f));
          this.byte(0x80 | ((cp >> 6) & 0x3f));
          this.byte(0x80 | (cp & 0x3f));
          i++;
          continue;
        }
        c = 0xfffd;
      }
      this.byte(0xe0 | (c >> 12));
      this.byte(0x80 | ((c >> 6) & 0x3f));
      this.byte(0x80 | (c & 0x3f));
    }
    this.byte(0x22);
  }

  /** A string given as valid UTF-8 bytes (no UTF-16 round trip). */
  utf8(value: Utf8): void {
    this.utf8Bytes(value.bytes.dataStart, value.bytes.length);
  }

  /** A string given as the valid UTF-8 bytes at `ptr`. */
  utf8Bytes(ptr: usize, n: i32): void {
    this.comma();
    this.byte(0x22);
    const end = ptr + <usize>n;
    let run = ptr;
    while (run < end) {
      const p = plainRunEnd(run, end);
      if (p > run) this.copy(run, <i32>(p - run));
      if (p == end) break;
      this.escapedAscii(<u32>load<u8>(p));
      run = p + 1;
    }
    this.byte(0x22);
  }

  private escapedAscii(c: u32): void {
    if (c >= 0x20 && c != 0x22 && c != 0x5c) {
      this.byte(c);
      return;
    }
    this.byte(0x5c);
    if (c == 0x22 || c == 0x5c) this.byte(c);
    else if (c == 0x08) this.byte(0x62);
    else if (c == 0x0c) this.byte(0x66);
    else if (c == 0x0a) this.byte(0x6e);
    else if (c == 0x0d) this.byte(0x72);
    else if (c == 0x09) this.byte(0x74);
    else {
      this.ascii("u00");
      this.byte(<u32>HEX.charCodeAt(<i32>(c >> 4)));
      this.byte(<u32>HEX.charCodeAt(<i32>(c & 0xf)));
    }
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
    if (this.needComma) this.byte(0x2c);
    this.byte(0x22);
    this.ascii(name);
    this.byte(0x22);
    this.byte(0x3a);
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
    } else if (value instanceof Utf8) {
      w.utf8(changetype<Utf8>(value));
    } else if (value instanceof Uint8Array) {
      const bytes = changetype<Uint8Array>(value);
      w.beginArray();
      for (let i = 0; i < bytes.length; i++) w.u64(unchecked(bytes[i]));
      w.endArray();
    } else if (isArray<T>()) {
      // @ts-ignore: T is an array here
      const n = value.length;
      w.beginArray();
      // @ts-ignore: T is an array here
      for (let i = 0; i < n; i++) writeJson<valueof<T>>(w, value[i]);
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

/** `value` as JSON bytes. */
export function toJson<T>(value: T): Uint8Array {
  const w = new JsonWriter();
  writeJson<T>(w, value);
  return w.toBytes();
}

// ---- Reading ---------------------------------------------------------------------------

/** What a JSON scalar scan found. */
export const enum JsonKind {
  Eof,
  Str,
  True,
  False,
  Null,
  UInt,
  NegInt,
  Float,
  Seq,
  Map,
  /** Not JSON; `error` says why. */
  Syntax,
}

/** One JSON value scanned the way serde_json does, with its position for messages. */
export class JsonScalar {
  kind: JsonKind = JsonKind.Syntax;
  /** UInt: the value; NegInt: its magnitude. */
  magnitude: u64 = 0;
  /** Float: the number as serde shows it in a message. */
  floatText: string = "";
  /** Str: the decoded UTF-8. */
  str: Uint8Array | null = null;
  /** Syntax: serde_json's message (without its position, see `errorAt`). */
  error: string = "";
  /** Syntax: the byte index serde_json reports the error at. */
  errorAt: i32 = 0;
  /** Index just after the value. */
  end: i32 = 0;
  /** Index where the value starts. */
  start: i32 = 0;
}

function isWs(c: u32): bool {
  return c == 0x20 || c == 0x09 || c == 0x0a || c == 0x0d;
}

/** serde_json's position of byte index `i`: `line L column C`. */
export function position(bytes: Uint8Array, i: i32): string {
  let line = 1;
  let lineStart = 0;
  const n = i < bytes.length ? i : bytes.length;
  for (let k = 0; k < n; k++) {
    if (unchecked(bytes[k]) == 0x0a) {
      line++;
      lineStart = k + 1;
    }
  }
  return "line " + line.toString() + " column " + (i - lineStart).toString();
}

// Messages are assembled only when one is reported: a failed JSON attempt is the normal
// path for raw-text arguments and must cost next to nothing.
function syntax(s: JsonScalar, bytes: Uint8Array, message: string, at: i32): JsonScalar {
  s.kind = JsonKind.Syntax;
  s.error = message;
  s.errorAt = at;
  return s;
}

/** A syntax error's full message, as serde_json words it. */
export function syntaxMessage(s: JsonScalar, bytes: Uint8Array): string {
  return s.error + " at " + position(bytes, s.errorAt);
}

function hexValue(c: u32): i32 {
  if (c >= 0x30 && c <= 0x39) return <i32>(c - 0x30);
  if (c >= 0x61 && c <= 0x66) return <i32>(c - 0x57);
  if (c >= 0x41 && c <= 0x46) return <i32>(c - 0x37);
  return -1;
}

function read4(bytes: Uint8Array, i: i32): i32 {
  if (i + 4 > bytes.length) return -2;
  let v = 0;
  for (let k = 0; k < 4; k++) {
    const h = hexValue(unchecked(bytes[i + k]));
    if (h < 0) return -1;
    v = (v << 4) | h;
  }
  return v;
}

function putCodePoint(out: Uint8Array, at: i32, cp: u32): i32 {
  if (cp < 0x80) {
    unchecked(out[at] = <u8>cp);
    return at + 1;
  }
  if (cp < 0x800) {
    unchecked(out[at] = <u8>(0xc0 | (cp >> 6)));
    unchecked(out[at + 1] = <u8>(0x80 | (cp & 0x3f)));
    return at + 2;
  }
  if (cp < 0x10000) {
    unchecked(out[at] = <u8>(0xe0 | (cp >> 12)));
    unchecked(out[at + 1] = <u8>(0x80 | ((cp >> 6) & 0x3f)));
    unchecked(out[at + 2] = <u8>(0x80 | (cp & 0x3f)));
    return at + 3;
  }
  unchecked(out[at] = <u8>(0xf0 | (cp >> 18)));
  unchecked(out[at + 1] = <u8>(0x80 | ((cp >> 12) & 0x3f)));
  unchecked(out[at + 2] = <u8>(0x80 | ((cp >> 6) & 0x3f)));
  unchecked(out[at + 3] = <u8>(0x80 | (cp & 0x3f)));
  return at + 4;
}

/** Parses the JSON string whose opening quote is at `unchecked(bytes[open])`. */
function scanString(s: JsonScalar, bytes: Uint8Array, open: i32): JsonScalar {
  const n = bytes.length;
  const base = bytes.dataStart;
  // Fast path: no escapes; the result is a view of the input.
  let i = <i32>(plainRunEnd(base + <usize>(open + 1), base + <usize>n) - base);
  if (i < n && unchecked(bytes[i]) == 0x22) {
    const view = bytes.subarray(open + 1, i);
    if (!isValidUtf8Slice(view)) return syntax(s, bytes, "invalid unicode code point", i + 1);
    s.kind = JsonKind.Str;
    s.str = view;
    s.end = i + 1;
    return s;
  }
  // Slow path: decode escapes into a new buffer (never longer than the input).
  const out = new Uint8Array(n);
  let at = 0;
  i = open + 1;
  while (true) {
    if (i >= n) return syntax(s, bytes, "EOF while parsing a string", n);
    const c = <u32>unchecked(bytes[i]);
    if (c == 0x22) {
      i++;
      break;
    }
    if (c < 0x20) return syntax(s, bytes, "control character (\\u0000-\\u001F) found while parsing a string", i + 1);
    if (c != 0x5c) {
      unchecked(out[at++] = <u8>c);
      i++;
      continue;
    }
    i++;
    if (i >= n) return syntax(s, bytes, "EOF while parsing a string", n);
    const e = <u32>unchecked(bytes[i]);
    i++;
    if (e == 0x22 || e == 0x5c || e == 0x2f) unchecked(out[at++] = <u8>e);
    else if (e == 0x62) unchecked(out[at++] = 0x08);
    else if (e == 0x66) unchecked(out[at++] = 0x0c);
    else if (e == 0x6e) unchecked(out[at++] = 0x0a);
    else if (e == 0x72) unchecked(out[at++] = 0x0d);
    else if (e == 0x74) unchecked(out[at++] = 0x09);
    else if (e == 0x75) {
      let u = read4(bytes, i);
      if (u == -2) return syntax(s, bytes, "EOF while parsing a string", n);
      if (u < 0) return syntax(s, bytes, "invalid escape", i + 1);
      i += 4;
      let cp = <u32>u;
      if (cp >= 0xdc00 && cp < 0xe000) return syntax(s, bytes, "lone leading surrogate in hex escape", i);
      if (cp >= 0xd800 && cp < 0xdc00) {
        if (i + 2 > n || unchecked(bytes[i]) != 0x5c || unchecked(bytes[i + 1]) != 0x75) {
          return syntax(s, bytes, "unexpected end of hex escape", i + 1);
        }
        const low = read4(bytes, i + 2);
        if (low < 0 || low < 0xdc00 || low >= 0xe000) return syntax(s, bytes, "lone leading surrogate in hex escape", i + 6);
        i += 6;
        cp = 0x10000 + ((cp - 0xd800) << 10) + (<u32>low - 0xdc00);
      }
      at = putCodePoint(out, at, cp);
    } else return syntax(s, bytes, "invalid escape", i);
  }
  const decoded = out.subarray(0, at);
  if (!isValidUtf8Slice(decoded)) return syntax(s, bytes, "invalid unicode code point", i);
  s.kind = JsonKind.Str;
  s.str = decoded;
  s.end = i;
  return s;
}

import { isValidUtf8 } from "./utf8";

function isValidUtf8Slice(bytes: Uint8Array): bool {
  return isValidUtf8(bytes.dataStart, <usize>bytes.length);
}

function scanIdent(s: JsonScalar, bytes: Uint8Array, at: i32, word: string, kind: JsonKind): JsonScalar {
  for (let k = 1; k < word.length; k++) {
    const i = at + k;
    if (i >= bytes.length) return syntax(s, bytes, "EOF while parsing a value", bytes.length);
    if (<u32>unchecked(bytes[i]) != <u32>word.charCodeAt(k)) return syntax(s, bytes, "expected ident", i + 1);
  }
  s.kind = kind;
  s.end = at + word.length;
  return s;
}

/**
 * How serde shows a float in a message (Rust's `{}` with `.0` added to whole numbers), from
 * the number's text: exact for plain decimals, an approximation for exponents, which keeps
 * float formatting (several KB of code) out of every module.
 */
function floatText(text: string): string {
  if (text.includes(".") || text.includes("e") || text.includes("E")) return text;
  return text + ".0";
}

function scanNumber(s: JsonScalar, bytes: Uint8Array, at: i32): JsonScalar {
  const n = bytes.length;
  let i = at;
  const negative = unchecked(bytes[i]) == 0x2d;
  if (negative) i++;
  if (i >= n) return syntax(s, bytes, "EOF while parsing a value", n);
  let c = <u32>unchecked(bytes[i]);
  if (c < 0x30 || c > 0x39) return syntax(s, bytes, "invalid number", i + 1);
  let value: u64 = 0;
  let overflow = false;
  if (c == 0x30) {
    i++;
    if (i < n && unchecked(bytes[i]) >= 0x30 && unchecked(bytes[i]) <= 0x39) return syntax(s, bytes, "invalid number", i + 1);
  } else {
    while (i < n) {
      c = <u32>unchecked(bytes[i]);
      if (c < 0x30 || c > 0x39) break;
      const d = <u64>(c - 0x30);
      if (value > (u64.MAX_VALUE - d) / 10) overflow = true;
      else value = value * 10 + d;
      i++;
    }
  }
  let isFloat = overflow;
  if (i < n && unchecked(bytes[i]) == 0x2e) {
    isFloat = true;
    i++;
    if (i >= n || unchecked(bytes[i]) < 0x30 || unchecked(bytes[i]) > 0x39) return syntax(s, bytes, i >= n ? "EOF while parsing a value" : "invalid number", i + 1);
    while (i < n && unchecked(bytes[i]) >= 0x30 && unchecked(bytes[i]) <= 0x39) i++;
  }
  if (i < n && (unchecked(bytes[i]) == 0x65 || unchecked(bytes[i]) == 0x45)) {
    isFloat = true;
    i++;
    if (i < n && (unchecked(bytes[i]) == 0x2b || unchecked(bytes[i]) == 0x2d)) i++;
    if (i >= n || unchecked(bytes[i]) < 0x30 || unchecked(bytes[i]) > 0x39) return syntax(s, bytes, i >= n ? "EOF while parsing a value" : "invalid number", i + 1);
    while (i < n && unchecked(bytes[i]) >= 0x30 && unchecked(bytes[i]) <= 0x39) i++;
  }
  s.end = i;
  if (!isFloat && negative && value == 0) isFloat = true; // serde_json reads `-0` as -0.0
  if (!isFloat && negative && value > <u64>i64.MAX_VALUE + 1) isFloat = true;
  if (isFloat) {
    s.kind = JsonKind.Float;
    s.floatText = floatText(String.UTF8.decodeUnsafe(bytes.dataStart + <usize>at, <usize>(i - at)));
    return s;
  }
  s.kind = negative ? JsonKind.NegInt : JsonKind.UInt;
  s.magnitude = value;
  return s;
}

/** Scans one JSON value at the start of `bytes` (after whitespace), scalars in full. */
export function scanJson(bytes: Uint8Array): JsonScalar {
  const s = new JsonScalar();
  let i = 0;
  const n = bytes.length;
  while (i < n && isWs(unchecked(bytes[i]))) i++;
  s.start = i;
  if (i >= n) return syntax(s, bytes, "EOF while parsing a value", n);
  const c = <u32>unchecked(bytes[i]);
  if (c == 0x22) return scanString(s, bytes, i);
  if (c == 0x2d || (c >= 0x30 && c <= 0x39)) return scanNumber(s, bytes, i);
  if (c == 0x74) return scanIdent(s, bytes, i, "true", JsonKind.True);
  if (c == 0x66) return scanIdent(s, bytes, i, "false", JsonKind.False);
  if (c == 0x6e) return scanIdent(s, bytes, i, "null", JsonKind.Null);
  if (c == 0x5b) {
    s.kind = JsonKind.Seq;
    s.end = i;
    return s;
  }
  if (c == 0x7b) {
    s.kind = JsonKind.Map;
    s.end = i;
    return s;
  }
  return syntax(s, bytes, "expected value", i + 1);
}

/** After a value ending at `end`: -1 if only whitespace follows, else where serde_json reports trailing characters. */
export function trailing(bytes: Uint8Array, end: i32): i32 {
  let i = end;
  while (i < bytes.length && isWs(unchecked(bytes[i]))) i++;
  return i < bytes.length ? i + 1 : -1;
}

/** serde's description of what a scan found, for "invalid type: ..." messages. */
export function unexpected(s: JsonScalar): string {
  switch (s.kind) {
    case JsonKind.Str: {
      const str = changetype<Uint8Array>(s.str);
      return "string " + debugUtf8(str);
    }
    case JsonKind.True:
      return "boolean `true`";
    case JsonKind.False:
      return "boolean `false`";
    case JsonKind.Null:
      return "null";
    case JsonKind.UInt:
      return "integer `" + s.magnitude.toString() + "`";
    case JsonKind.NegInt:
      return "integer `-" + s.magnitude.toString() + "`";
    case JsonKind.Float:
      return "floating point `" + s.floatText + "`";
    case JsonKind.Seq:
      return "sequence";
    case JsonKind.Map:
      return "map";
    default:
      return "value";
  }
}

import { quoted } from "./utf8";

function debugUtf8(bytes: Uint8Array): string {
  return quoted(String.UTF8.decodeUnsafe(bytes.dataStart, <usize>bytes.length));
}

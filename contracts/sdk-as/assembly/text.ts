// Static text and contract error messages, kept as UTF-8.
//
// AssemblyScript stores each string literal as UTF-16 with an object header; a contract's
// error messages would take twice their length and more. Instead, the transform turns the
// literals of messages (`fail("...")`, `ensure(c, "...")`, the `+` chains and template
// literals given to them) and of `lit("...")` into static UTF-8 text: each distinct text a
// function `__T<n>` added to this file, returning the address of the text's length (one
// byte below 128, else two, low seven bits first) followed by its bytes. Only the functions
// a contract calls are compiled, and each call is inlined to a constant. Messages are
// written as UTF-8 straight into a buffer and handed to `abort`; no AssemblyScript string
// is made on the way.
//
// Without the transform everything here still works, at run time and at UTF-16's size.

import * as host from "./host";
import { JsonWriter } from "./json";

/** The static text `text`: a constant with the transform, built at run time without it. */
export function lit(text: string): usize {
  const w = new JsonWriter(text.length * 3 + 2);
  w.len = 2;
  w.utf16(text, false);
  const n = w.len - 2;
  store<u8>(w.ptr, (n & 0x7f) | 0x80);
  store<u8>(w.ptr, n >> 7, 1);
  return w.ptr;
}

/** The length in bytes of static text `t`. */
// @ts-ignore: decorator
@inline
export function textLen(t: usize): i32 {
  const b = <i32>load<u8>(t);
  return b < 0x80 ? b : (b & 0x7f) | (<i32>load<u8>(t, 1) << 7);
}

/** Where the bytes of static text `t` start. */
// @ts-ignore: decorator
@inline
export function textStart(t: usize): usize {
  return t + (load<u8>(t) < 0x80 ? 1 : 2);
}

/** The static text `t` as a string (for a message built without the transform). */
export function txt(t: usize): string {
  return utf8ToString(textStart(t), textLen(t));
}

// ---- Messages --------------------------------------------------------------------------
// What the transform makes of `fail("a " + x + " b")`:
// `(__mStart(), __mText(a), __mValue(x), __mText(b), __mFail())`.

let msg: JsonWriter | null = null;

/** The message being written. */
export function message(): JsonWriter {
  return changetype<JsonWriter>(msg);
}

/** Starts a message. */
export function __mStart(): JsonWriter {
  const w = new JsonWriter(128);
  msg = w;
  return w;
}

/** Appends static text `t`. */
export function __mText(t: usize): void {
  message().text(t);
}

/** Appends `value` as Rust's `{}` shows it (integers, bool, string, Utf8, anything with `toString`). */
export function __mValue<T>(value: T): void {
  message().display<T>(value);
}

/** Appends `value` quoted as Rust's `{:?}` shows text (`quoted(x)` in a message). */
export function __mQuoted<T>(value: T): void {
  message().debug<T>(value);
}

/** Ends the call with the message as its contract error. Never returns. */
export function __mFail(): void {
  const w = message();
  host.abort(w.ptr, <usize>w.len);
  unreachable();
}

// ---- UTF-8 to UTF-16 -------------------------------------------------------------------

/** The `n` bytes of valid UTF-8 at `p` as a string. */
export function utf8ToString(p: usize, n: i32): string {
  const end = p + <usize>n;
  // One UTF-16 unit per lead byte, two for a four-byte sequence.
  let units: usize = 0;
  for (let q = p; q < end; q++) {
    const b = <u32>load<u8>(q);
    units += <usize>((b & 0xc0) != 0x80) + <usize>(b >= 0xf0);
  }
  const out = __new(units << 1, idof<string>());
  let o = out;
  let q = p;
  while (q < end) {
    let c = <u32>load<u8>(q++);
    if (c >= 0x80) {
      const b1 = <u32>load<u8>(q++) & 0x3f;
      if (c < 0xe0) {
        c = ((c & 0x1f) << 6) | b1;
      } else {
        const b2 = <u32>load<u8>(q++) & 0x3f;
        if (c < 0xf0) {
          c = ((c & 0x0f) << 12) | (b1 << 6) | b2;
        } else {
          c = (((c & 0x07) << 18) | (b1 << 12) | (b2 << 6) | (<u32>load<u8>(q++) & 0x3f)) - 0x10000;
          store<u16>(o, 0xd800 | (c >> 10));
          o += 2;
          c = 0xdc00 | (c & 0x3ff);
        }
      }
    }
    store<u16>(o, c);
    o += 2;
  }
  return changetype<string>(out);
}

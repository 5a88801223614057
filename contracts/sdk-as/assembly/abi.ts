// The guest side of ABI v1 (docs/abi.md): the module's fixed exports, the argument list,
// and ending a call with `return_value`. The code the transform generates for each contract
// function (`runnel_fn_<name>`) calls into this file; contract authors never need to.

import * as host from "./host";
import { fail } from "./error";
import { Utf8 } from "./utf8";
import { jsonOf, scannedStr } from "./json";
import { __mFail, __mStart, __mText, lit, textStart, txt, utf8ToString } from "./text";
import { appendDecodeError, argBool, argInteger, argText, decodeFailed, isJsonNull } from "./decode";
import { Context } from "./context";
import { newBuffer, view } from "./bytes";

/** Marks the module as speaking ABI version 1. Never called. */
export function runnel_abi_v1(): void {}

/**
 * Returns `len` writable bytes for the host to put call arguments in. The module is
 * instantiated for each call and never frees, so this is a bump of the heap.
 */
export function runnel_alloc(len: i32): usize {
  if (len < 0) fail("runnel_alloc: negative length");
  // An ArrayBuffer, so that arguments can be viewed as Uint8Arrays without a copy.
  return changetype<usize>(newBuffer(len));
}

/** The items of the last byte list decoded: per item its address and length (u32 each). */
let listItems: usize = 0;

/** Item `i` of the last byte list: its address. */
export function itemPtr(i: i32): usize {
  return <usize>load<u32>(listItems + (<usize>i << 3));
}

/** Item `i` of the last byte list: its length. */
export function itemLen(i: i32): i32 {
  return load<i32>(listItems + (<usize>i << 3), 4);
}

/**
 * Decodes the byte list (`u32 count`, then `u32 len, len bytes` per item, little-endian) in
 * the `n` bytes at `p` and returns its item count (items: `itemPtr`, `itemLen`). A list
 * truncated, overlong or followed by bytes ends the call with an error after `prefix`.
 */
export function decodeByteList(p: usize, n: i32, prefix: usize): i32 {
  if (n < 4) fail(txt(prefix) + "byte list: truncated length");
  const count = load<u32>(p);
  let at = 4;
  // Each item needs at least its 4-byte length: bounds the allocation by the input.
  if (<u64>count > <u64>((n - at) / 4)) {
    fail(txt(prefix) + "byte list: " + count.toString() + " items announced, but only " + (n - at).toString() + " bytes follow");
  }
  const items = heap.alloc(<usize>count << 3);
  for (let i: u32 = 0; i < count; i++) {
    if (n - at < 4) fail(txt(prefix) + "byte list: truncated length");
    const len = load<u32>(p + <usize>at);
    at += 4;
    if (<u64>len > <u64>(n - at)) {
      fail(txt(prefix) + "byte list: item " + i.toString() + " is " + len.toString() + " bytes, but only " + (n - at).toString() + " bytes follow");
    }
    store<u32>(items + (<usize>i << 3), <u32>(p + <usize>at));
    store<u32>(items + (<usize>i << 3), len, 4);
    at += <i32>len;
  }
  if (at != n) fail(txt(prefix) + "byte list: " + (n - at).toString() + " bytes after the last item");
  listItems = items;
  return <i32>count;
}

// ---- Arguments (for the code the transform generates) ---------------------------------

let argBuffer: ArrayBuffer | null = null;
let args: usize = 0;

// Messages name the function (`fn`, static text) and say the rest after it (`what`, static
// text such as `": argument 2 (amount): "`), so that functions share the text they can.

/**
 * Decodes the argument list the host wrote at `ptr` (from `runnel_alloc`) for function
 * `fn` and checks it has `expected` items, as the Rust macro's generated code does;
 * `countMessage` is `": expected <n> arguments, got "`.
 */
export function __args(ptr: usize, len: i32, expected: i32, fn: usize, countMessage: usize): void {
  if (len < 0) fail("ABI: negative argument list length");
  argBuffer = changetype<ArrayBuffer>(ptr);
  const count = decodeByteList(ptr, len, lit("ABI: malformed argument list: "));
  args = listItems;
  if (count != expected) fail(txt(fn) + txt(countMessage) + count.toString());
}

function argPtr(i: i32): usize {
  return <usize>load<u32>(args + (<usize>i << 3));
}

function argLen(i: i32): i32 {
  return load<i32>(args + (<usize>i << 3), 4);
}

function buffer(): ArrayBuffer {
  return changetype<ArrayBuffer>(argBuffer);
}

/** Ends the call if the last decode failed: `<fn><what>` (`"put: argument 2 (value): "`), then why. */
function check(fn: usize, what: usize): void {
  if (decodeFailed()) {
    const w = __mStart();
    __mText(fn);
    __mText(what);
    appendDecodeError(w);
    __mFail();
  }
}

/** Argument `i` as given (no decoding). */
export function __argBytes(i: i32): Uint8Array {
  return view(buffer(), argPtr(i), argLen(i));
}

/** A text argument as UTF-8 bytes (a view of the arguments if it had no escapes). */
function textArg(i: i32, fn: usize, what: usize): Uint8Array {
  const json = argText(argPtr(i), argLen(i), buffer());
  check(fn, what);
  return json ? scannedStr() : __argBytes(i);
}

/** A text argument, kept as UTF-8. */
export function __argUtf8(i: i32, fn: usize, what: usize): Utf8 {
  return new Utf8(textArg(i, fn, what));
}

/** A text argument that may be JSON `null`. */
export function __argUtf8OrNull(i: i32, fn: usize, what: usize): Utf8 | null {
  if (isJsonNull(argPtr(i), argLen(i), buffer())) return null;
  return __argUtf8(i, fn, what);
}

/** A text argument as a string. */
export function __argString(i: i32, fn: usize, what: usize): string {
  const bytes = textArg(i, fn, what);
  return utf8ToString(bytes.dataStart, bytes.length);
}

/** A text argument that may be JSON `null`, as a string. */
export function __argStringOrNull(i: i32, fn: usize, what: usize): string | null {
  if (isJsonNull(argPtr(i), argLen(i), buffer())) return null;
  return __argString(i, fn, what);
}

/** An integer argument in [-minMagnitude, max] (serde's type name `typeName`), as two's complement. */
export function __argInteger(i: i32, fn: usize, what: usize, minMagnitude: u64, max: u64, typeName: usize): u64 {
  const value = argInteger(argPtr(i), argLen(i), buffer(), minMagnitude, max, typeName);
  check(fn, what);
  return value;
}

/** A boolean argument. */
export function __argBool(i: i32, fn: usize, what: usize): bool {
  const value = argBool(argPtr(i), argLen(i), buffer());
  check(fn, what);
  return value;
}

/** A fresh context for a call. */
export function newContext(): Context {
  return new Context();
}

/** Ends the call successfully with `result` as its result bytes. */
export function returnBytes(result: Uint8Array): void {
  host.return_value(result.dataStart, <usize>result.length);
}

/** Ends the call with the result `null` (a function returning `void`). */
export function returnNull(): void {
  host.return_value(textStart(lit("null")), 4);
}

/** Ends the call with `value` as its JSON result. */
export function returnJson<T>(value: T): void {
  const w = jsonOf<T>(value);
  host.return_value(w.ptr, <usize>w.len);
}

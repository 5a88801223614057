// The guest side of ABI v1 (docs/abi.md): the module's fixed exports, the argument list,
// and ending a call with `return_value` or `abort`. The code the transform generates for
// each contract function (`runnel_fn_<name>`) calls into this file; contract authors never
// need to.

import * as host from "./host";
import { fail } from "./error";
import { Utf8 } from "./utf8";
import { JsonWriter, writeJson } from "./json";
import { argBool, argInt, argText, argTextOrNull, argUint, decodeError, decodeFailed, isNull } from "./decode";
import { Context } from "./context";

/** Marks the module as speaking ABI version 1. Never called. */
export function runnel_abi_v1(): void {}

/**
 * Returns `len` writable bytes for the host to put call arguments in. The module is
 * instantiated for each call and never frees, so this is a bump of the heap.
 */
export function runnel_alloc(len: i32): usize {
  if (len < 0) fail("runnel_alloc: negative length");
  // An ArrayBuffer, so that arguments can be viewed as Uint8Arrays without a copy.
  return changetype<usize>(new ArrayBuffer(len));
}

/** Why the last `decodeByteList` failed. */
export let byteListError: string = "";

/**
 * Decodes a byte list (`u32 count`, then `u32 len, len bytes` per item, little-endian) into
 * views of `bytes`; null (with `byteListError`) if truncated, overlong or followed by bytes.
 */
export function decodeByteList(bytes: Uint8Array): Uint8Array[] | null {
  const n = bytes.length;
  if (n < 4) {
    byteListError = "byte list: truncated length";
    return null;
  }
  const count = load<u32>(bytes.dataStart);
  let at = 4;
  // Each item needs at least its 4-byte length: bounds the allocation by the input.
  if (<u64>count > <u64>((n - at) / 4)) {
    byteListError = "byte list: " + count.toString() + " items announced, but only " + (n - at).toString() + " bytes follow";
    return null;
  }
  const items = new Array<Uint8Array>(0);
  for (let i = 0; i < <i32>count; i++) {
    if (n - at < 4) {
      byteListError = "byte list: truncated length";
      return null;
    }
    const len = load<u32>(bytes.dataStart + <usize>at);
    at += 4;
    if (<u64>len > <u64>(n - at)) {
      byteListError = "byte list: item " + i.toString() + " is " + len.toString() + " bytes, but only " + (n - at).toString() + " bytes follow";
      return null;
    }
    items.push(bytes.subarray(at, at + <i32>len));
    at += <i32>len;
  }
  if (at != n) {
    byteListError = "byte list: " + (n - at).toString() + " bytes after the last item";
    return null;
  }
  return items;
}

/** The decoded arguments of one call to contract function `fn`. */
export class Args {
  constructor(
    private readonly fn: string,
    private readonly items: Uint8Array[],
  ) {}

  /**
   * Decodes the argument list the host wrote at `ptr` (from `runnel_alloc`) and checks it
   * has `expected` items, as the Rust macro's generated code does.
   */
  static decode(ptr: usize, len: i32, fn: string, expected: i32): Args {
    if (len < 0) fail("ABI: negative argument list length");
    const bytes = len == 0 ? new Uint8Array(0) : Uint8Array.wrap(changetype<ArrayBuffer>(ptr), 0, len);
    const items = decodeByteList(bytes);
    if (items == null) {
      fail("ABI: malformed argument list: " + byteListError);
      unreachable();
    }
    const list = changetype<Uint8Array[]>(items);
    if (list.length != expected) {
      const noun = expected == 1 ? "argument" : "arguments";
      fail(fn + ": expected " + expected.toString() + " " + noun + ", got " + list.length.toString());
    }
    return new Args(fn, list);
  }

  private check(index: i32, name: string): void {
    if (decodeFailed()) {
      fail(this.fn + ": argument " + (index + 1).toString() + " (" + name + "): " + decodeError());
    }
  }

  /** Argument `index` as given (no decoding). */
  bytes(index: i32): Uint8Array {
    return this.items[index];
  }

  /** A text argument, kept as UTF-8. */
  utf8(index: i32, name: string): Utf8 {
    const bytes = argText(this.items[index]);
    this.check(index, name);
    return new Utf8(bytes);
  }

  /** A text argument that may be JSON `null`. */
  utf8OrNull(index: i32, name: string): Utf8 | null {
    const bytes = argTextOrNull(this.items[index]);
    this.check(index, name);
    return isNull ? null : new Utf8(bytes);
  }

  /** A text argument as a string. */
  string(index: i32, name: string): string {
    const bytes = argText(this.items[index]);
    this.check(index, name);
    return String.UTF8.decodeUnsafe(bytes.dataStart, <usize>bytes.length);
  }

  /** A text argument that may be JSON `null`, as a string. */
  stringOrNull(index: i32, name: string): string | null {
    const bytes = argTextOrNull(this.items[index]);
    this.check(index, name);
    return isNull ? null : String.UTF8.decodeUnsafe(bytes.dataStart, <usize>bytes.length);
  }

  /** An unsigned integer argument of at most `max` (serde's type name `typeName`). */
  uint(index: i32, name: string, max: u64, typeName: string): u64 {
    const value = argUint(this.items[index], max, typeName);
    this.check(index, name);
    return value;
  }

  /** A signed integer argument in `[min, max]`. */
  int(index: i32, name: string, min: i64, max: i64, typeName: string): i64 {
    const value = argInt(this.items[index], min, max, typeName);
    this.check(index, name);
    return value;
  }

  /** A boolean argument. */
  bool(index: i32, name: string): bool {
    const value = argBool(this.items[index]);
    this.check(index, name);
    return value;
  }
}

/** A fresh context for a call. */
export function newContext(): Context {
  return new Context();
}

/** Ends the call successfully with `result` as its result bytes. */
export function returnBytes(result: Uint8Array): void {
  host.return_value(result.dataStart, <usize>result.length);
}

const NULL_JSON: StaticArray<u8> = [0x6e, 0x75, 0x6c, 0x6c];

/** Ends the call with the result `null` (a function returning `void`). */
export function returnNull(): void {
  host.return_value(changetype<usize>(NULL_JSON), 4);
}

/** Ends the call with `value` as its JSON result. */
export function returnJson<T>(value: T): void {
  const w = new JsonWriter(16);
  writeJson<T>(w, value);
  returnBytes(w.toBytes());
}

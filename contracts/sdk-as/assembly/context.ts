// `Context`: what a contract function sees of the ledger for one call (state, events, the
// transaction's id, submitter and timestamp), and `Creator`, who called. Everything goes
// through the `runnel` host functions of docs/abi.md, with keys and values as bytes.

import * as host from "./host";
import { fail } from "./error";
import { CompositeKey, prefixEnd } from "./key";
import { Utf8, appendKey, isValidUtf8, utf8Of } from "./utf8";
import { JsonWriter, jsonOf, sStr, sStrLen, scannedStr } from "./json";
import { appendDecodeError, decodeFailed, jsonBool, jsonInteger, jsonText } from "./decode";
import { decodeByteList, itemLen, itemPtr } from "./abi";
import { __mFail, __mStart, lit, txt, utf8ToString } from "./text";
import { newBuffer, newBytes, view } from "./bytes";

/** The severity of a log line. */
export enum LogLevel {
  Error = 0,
  Warn = 1,
  Info = 2,
  Debug = 3,
}

/** The submitter of the transaction, as the node authenticated it. */
export class Creator {
  private cachedId: Utf8 | null = null;

  constructor(
    /** The organisation (membership service provider) that issued the identity. */
    public readonly org: Utf8,
    /** The role within the organisation (`admin`, `client`, `peer`, ...). */
    public readonly role: Utf8,
    /** The identity's name. */
    public readonly name: Utf8,
    /** The X.509 certificate, DER (empty when the node runs without certificates). */
    public readonly cert: Uint8Array,
  ) {}

  /** The account id of this identity: `"{org}/{name}"`. */
  id(): Utf8 {
    let id = this.cachedId;
    if (id == null) {
      const org = this.org.bytes;
      const name = this.name.bytes;
      const bytes = newBytes(org.length + 1 + name.length);
      const p = bytes.dataStart;
      memory.copy(p, org.dataStart, <usize>org.length);
      store<u8>(p + <usize>org.length, 0x2f);
      memory.copy(p + <usize>org.length + 1, name.dataStart, <usize>name.length);
      id = new Utf8(bytes);
      this.cachedId = id;
    }
    return id;
  }

  /** Decodes the byte list `[org, role, name, certificate DER]` of docs/abi.md. */
  static decode(bytes: Uint8Array): Creator {
    const count = decodeByteList(bytes.dataStart, bytes.length, lit("creator identity: "));
    if (count != 4) fail("creator identity: expected 4 items, got " + count.toString());
    const buffer = bytes.buffer;
    return new Creator(
      creatorText(buffer, 0, lit("org")),
      creatorText(buffer, 1, lit("role")),
      creatorText(buffer, 2, lit("name")),
      view(buffer, itemPtr(3), itemLen(3)),
    );
  }
}

function creatorText(buffer: ArrayBuffer, i: i32, what: usize): Utf8 {
  const p = itemPtr(i);
  const n = itemLen(i);
  if (!isValidUtf8(p, <usize>n)) fail("creator identity: " + txt(what) + " is not UTF-8");
  return new Utf8(view(buffer, p, n));
}

/** Copies the host's result buffer (of `len` bytes) out. */
function takeResult(len: i64): Uint8Array {
  if (len < 0) fail("ABI: negative result length");
  const out = newBytes(<i32>len);
  host.result_read(out.dataStart);
  return out;
}

// The bytes of the last key or text given (`bytesOf`).
let bPtr: usize = 0;
let bLen: i32 = 0;

/** Points `bPtr`/`bLen` at the bytes of `value`: a `string` (as UTF-8), `Uint8Array`, `Utf8` or `CompositeKey`. */
// @ts-ignore: decorator
@inline
function bytesOf<K>(value: K): void {
  if (isString<K>()) {
    const w = utf8Of(changetype<string>(value));
    bPtr = w.ptr;
    bLen = w.len;
  } else {
    let bytes: Uint8Array;
    if (isReference<K>() && idof<K>() == idof<Uint8Array>()) {
      bytes = changetype<Uint8Array>(value);
    } else if (isReference<K>() && idof<K>() == idof<Utf8>()) {
      bytes = changetype<Utf8>(value).bytes;
    } else if (isReference<K>() && idof<K>() == idof<CompositeKey>()) {
      bytes = changetype<CompositeKey>(value).bytes;
    } else {
      ERROR("runnel: a key is a string, Uint8Array, Utf8 or CompositeKey");
      return;
    }
    bPtr = bytes.dataStart;
    bLen = bytes.length;
  }
}

/** `bytesOf` for a state key, which must not be empty. */
// @ts-ignore: decorator
@inline
function setKey<K>(key: K): void {
  bytesOf<K>(key);
  if (bLen == 0) fail("state keys must not be empty");
}

/** The value of the key `setKey` set, or null: `state_get` and `result_read`. */
function getKeyed(): ArrayBuffer | null {
  const n = host.state_get(bPtr, <usize>bLen);
  if (n < 0) return null;
  const buffer = newBuffer(<i32>n);
  host.result_read(changetype<usize>(buffer));
  return buffer;
}

/** Ends the call: the value of the current key is not what was expected. */
function notExpected(what: usize, json: bool): void {
  const w = __mStart();
  w.text(lit("the value of key "));
  appendKey(w, bPtr, bLen);
  w.text(what);
  if (json) appendDecodeError(w);
  __mFail();
}

/** serde's name of integer type T. */
// @ts-ignore: decorator
@inline
function typeName<T>(): usize {
  const size = sizeof<T>();
  if (isSigned<T>()) return size == 1 ? lit("i8") : size == 2 ? lit("i16") : size == 4 ? lit("i32") : lit("i64");
  return size == 1 ? lit("u8") : size == 2 ? lit("u16") : size == 4 ? lit("u32") : lit("u64");
}

/**
 * The first parameter of every contract function: state, events and the transaction's
 * context, for the duration of one call.
 *
 * Keys are byte strings (`string`, `Uint8Array`, `Utf8` and `CompositeKey` all work) and
 * must not be empty. `*Bytes` methods store bytes as given; `*Json` methods store JSON, as
 * the Rust SDK's `get`/`put` do. Within a call, reads see the call's own earlier writes.
 */
export class Context {
  private cachedCreator: Creator | null = null;

  // ---- State: bytes ------------------------------------------------------------------

  /** The bytes stored under `key`, or `null` if the key is absent. */
  getBytes<K>(key: K): Uint8Array | null {
    setKey<K>(key);
    const buffer = getKeyed();
    if (buffer == null) return null;
    return view(buffer, changetype<usize>(buffer), buffer.byteLength);
  }

  /** Stores `value` under `key` as given. */
  putBytes<K>(key: K, value: Uint8Array): void {
    setKey<K>(key);
    host.state_put(bPtr, <usize>bLen, value.dataStart, <usize>value.length);
  }

  /** Whether `key` holds a value. */
  exists<K>(key: K): bool {
    setKey<K>(key);
    return host.state_get(bPtr, <usize>bLen) >= 0;
  }

  /** Deletes `key` (deleting an absent key is not an error). */
  delete<K>(key: K): void {
    setKey<K>(key);
    host.state_delete(bPtr, <usize>bLen);
  }

  // ---- State: text -------------------------------------------------------------------

  /** The value under `key` as UTF-8 text, or `null` if absent. A value that is not UTF-8 ends the call with an error. */
  getUtf8<K>(key: K): Utf8 | null {
    const bytes = this.getBytes<K>(key);
    if (bytes == null) return null;
    if (!isValidUtf8(bytes.dataStart, <usize>bytes.length)) notExpected(lit(" is not UTF-8"), false);
    return new Utf8(bytes);
  }

  /** Stores the UTF-8 `value` under `key` (the raw bytes, not JSON). */
  putUtf8<K>(key: K, value: Utf8): void {
    this.putBytes<K>(key, value.bytes);
  }

  /** The value under `key` as a string, or `null` if absent. A value that is not UTF-8 ends the call with an error. */
  getString<K>(key: K): string | null {
    const text = this.getUtf8<K>(key);
    if (text == null) return null;
    return text.toString();
  }

  /** Stores `value` under `key` as its UTF-8 bytes (not JSON). */
  putString<K>(key: K, value: string): void {
    const w = utf8Of(value);
    setKey<K>(key);
    host.state_put(bPtr, <usize>bLen, w.ptr, <usize>w.len);
  }

  // ---- State: JSON -------------------------------------------------------------------

  /**
   * The value under `key` decoded from JSON into the type of `absent` (an integer, `bool`,
   * `string` or `Utf8`), or `absent` if the key is absent. A value that is not that JSON
   * ends the call with an error naming the key, as the Rust SDK's `get::<T>` does.
   */
  getJson<K, T>(key: K, absent: T): T {
    setKey<K>(key);
    const found = getKeyed();
    if (found == null) return absent;
    const buffer = changetype<ArrayBuffer>(found);
    const p = changetype<usize>(buffer);
    const n = buffer.byteLength;
    let value: T;
    if (isBoolean<T>()) {
      // @ts-ignore: T is bool
      value = jsonBool(p, n, buffer);
    } else if (isInteger<T>()) {
      const max: u64 = isSigned<T>() ? <u64>((<u64>1 << (<u64>sizeof<T>() * 8 - 1)) - 1) : sizeof<T>() == 8 ? u64.MAX_VALUE : (<u64>1 << (<u64>sizeof<T>() * 8)) - 1;
      const minMagnitude: u64 = isSigned<T>() ? max + 1 : 0;
      // @ts-ignore: T is an integer
      value = <T>jsonInteger(p, n, buffer, minMagnitude, max, typeName<T>());
    } else if (isString<T>()) {
      // @ts-ignore: T is string
      value = jsonText(p, n, buffer) ? utf8ToString(sStr, sStrLen) : "";
    } else if (isReference<T>() && idof<T>() == idof<Utf8>()) {
      // @ts-ignore: T is Utf8
      value = jsonText(p, n, buffer) ? new Utf8(scannedStr()) : changetype<T>(0);
    } else {
      ERROR("runnel: getJson reads integers, bool, string and Utf8; read other values with getBytes");
      return absent;
    }
    if (decodeFailed()) notExpected(lit(" is not the expected JSON: "), true);
    return value;
  }

  /** Stores `value` as JSON under `key` (integers, bool, string, Utf8, arrays, `@json` classes). */
  putJson<K, T>(key: K, value: T): void {
    const w = jsonOf<T>(value);
    setKey<K>(key);
    host.state_put(bPtr, <usize>bLen, w.ptr, <usize>w.len);
  }

  // ---- Ranges ------------------------------------------------------------------------

  /**
   * The entries with `start <= key < end`, in key order; an empty `end` means no upper
   * bound. Entries are fetched from the node one at a time as the range advances, include
   * this call's own earlier writes, and are recorded as a range read.
   */
  range<S, E>(start: S, end: E): Range {
    bytesOf<S>(start);
    const p = bPtr;
    const n = bLen;
    bytesOf<E>(end);
    return new Range(host.range_open(p, <usize>n, bPtr, <usize>bLen));
  }

  /** The entries whose key starts with `prefix`, in key order (every entry if `prefix` is empty). */
  prefix<P>(prefix: P): Range {
    bytesOf<P>(prefix);
    const end = prefixEnd(bPtr, bLen);
    return new Range(host.range_open(bPtr, <usize>bLen, end.dataStart, <usize>end.length));
  }

  /**
   * The entries under composite keys of `objectType` whose attributes start with
   * `attributes` (one string or Utf8, or an array of them), in key order (Fabric's
   * GetStateByPartialCompositeKey). Split a key with `CompositeKey.split`.
   */
  byPartialCompositeKey<T, A>(objectType: T, attributes: A): Range {
    return this.prefix<CompositeKey>(CompositeKey.partial<T, A>(objectType, attributes));
  }

  // ---- Events ------------------------------------------------------------------------

  /** Emits event `name` (a string or Utf8) with `payload` as JSON. Events reach subscribers only if the transaction commits. */
  emit<N, T>(name: N, payload: T): void {
    const w = jsonOf<T>(payload);
    bytesOf<N>(name);
    emitRaw(w.ptr, w.len);
  }

  /** Emits event `name` with `payload` as given. */
  emitBytes<N>(name: N, payload: Uint8Array): void {
    bytesOf<N>(name);
    emitRaw(payload.dataStart, payload.length);
  }

  // ---- The transaction ---------------------------------------------------------------

  /** The transaction's id (lowercase hex). */
  txId(): string {
    const bytes = takeResult(host.ctx_tx_id());
    return utf8ToString(bytes.dataStart, bytes.length);
  }

  /** Who submitted the transaction. */
  creator(): Creator {
    let creator = this.cachedCreator;
    if (creator == null) {
      creator = Creator.decode(takeResult(host.ctx_creator()));
      this.cachedCreator = creator;
    }
    return creator;
  }

  /** The proposal's timestamp in Unix milliseconds: the only clock a contract has, the same on every endorser. */
  timestampMs(): u64 {
    return <u64>host.ctx_timestamp_ms();
  }

  /** Writes a log line (a string or Utf8) for the node operator (not part of the result, not on the ledger). */
  log<M>(level: LogLevel, message: M): void {
    bytesOf<M>(message);
    host.log(<i32>level, bPtr, <usize>bLen);
  }
}

/** `event_emit` with the name in `bPtr`/`bLen`. */
function emitRaw(payload: usize, len: i32): void {
  if (bLen == 0) fail("event names must not be empty");
  host.event_emit(bPtr, <usize>bLen, payload, <usize>len);
}

/**
 * A range of state entries, fetched from the node as it advances:
 *
 *     const entries = ctx.prefix("asset/");
 *     while (entries.next()) { entries.key; entries.value; }
 */
export class Range {
  /** The current entry's key (after `next()` returned true). */
  key: Uint8Array = newBytes(0);
  /** The current entry's value. */
  value: Uint8Array = newBytes(0);
  private done: bool = false;

  constructor(private readonly handle: i32) {}

  /** Advances to the next entry; false when there is none. */
  next(): bool {
    if (this.done) return false;
    const n = host.range_next(this.handle);
    if (n < 0) {
      this.done = true;
      return false;
    }
    const entry = takeResult(n);
    const buffer = entry.buffer;
    const p = entry.dataStart;
    const len = entry.length;
    // `u32 key_len, key, value`.
    if (len < 4) fail("ABI: range entry shorter than its key length");
    const keyLen = load<u32>(p);
    if (<u64>keyLen > <u64>(len - 4)) fail("ABI: range entry key runs past the entry");
    this.key = view(buffer, p + 4, <i32>keyLen);
    this.value = view(buffer, p + 4 + <usize>keyLen, len - 4 - <i32>keyLen);
    return true;
  }

  /** The current key as text (a key that is not UTF-8 ends the call with an error). */
  keyUtf8(): Utf8 {
    if (!isValidUtf8(this.key.dataStart, <usize>this.key.length)) fail("a stored key is not UTF-8");
    return new Utf8(this.key);
  }
}

// `Context`: what a contract function sees of the ledger for one call (state, events, the
// transaction's id, submitter and timestamp), and `Creator`, who called. Everything goes
// through the `runnel` host functions of docs/abi.md.

import * as host from "./host";
import { fail } from "./error";
import { CompositeKey, prefixEnd } from "./key";
import { Utf8, decodeUtf8, encodeUtf8, isValidUtf8, showKey } from "./utf8";
import { toJson } from "./json";
import { decodeError, decodeFailed, jsonBool, jsonInt, jsonText, jsonUint } from "./decode";
import { decodeByteList } from "./abi";

/** The severity of a log line. */
export enum LogLevel {
  Error = 0,
  Warn = 1,
  Info = 2,
  Debug = 3,
}

/** The submitter of the transaction, as the node authenticated it. */
export class Creator {
  constructor(
    /** The organisation (membership service provider) that issued the identity. */
    public readonly org: string,
    /** The role within the organisation (`admin`, `client`, `peer`, ...). */
    public readonly role: string,
    /** The identity's name. */
    public readonly name: string,
    /** The X.509 certificate, DER (empty when the node runs without certificates). */
    public readonly cert: Uint8Array,
  ) {}

  /** The account id of this identity: `"{org}/{name}"`. */
  id(): string {
    return this.org + "/" + this.name;
  }

  /** Decodes the byte list `[org, role, name, certificate DER]` of docs/abi.md. */
  static decode(bytes: Uint8Array): Creator {
    const items = decodeByteList(bytes);
    if (items == null) {
      fail("creator identity: " + byteListError);
      unreachable();
    }
    const list = changetype<Uint8Array[]>(items);
    if (list.length != 4) fail("creator identity: expected 4 items, got " + list.length.toString());
    return new Creator(creatorText(list[0], "org"), creatorText(list[1], "role"), creatorText(list[2], "name"), list[3]);
  }
}

import { byteListError } from "./abi";

function creatorText(bytes: Uint8Array, what: string): string {
  const text = decodeUtf8(bytes);
  if (text == null) fail("creator identity: " + what + " is not UTF-8");
  return changetype<string>(text);
}

/** Copies the host's result buffer (of `len` bytes) out. */
export function takeResult(len: i64): Uint8Array {
  if (len < 0) fail("ABI: negative result length");
  const out = new Uint8Array(<i32>len);
  host.result_read(out.dataStart);
  return out;
}

/** A key's bytes: keys are `string`, `Uint8Array`, `Utf8` or `CompositeKey`. */
// @ts-ignore: decorator
@inline
export function keyBytes<K>(key: K): Uint8Array {
  if (isString<K>()) {
    return encodeUtf8(changetype<string>(key));
  } else if (isReference<K>() && idof<K>() == idof<Uint8Array>()) {
    return changetype<Uint8Array>(key);
  } else if (isReference<K>() && idof<K>() == idof<Utf8>()) {
    return changetype<Utf8>(key).bytes;
  } else if (isReference<K>() && idof<K>() == idof<CompositeKey>()) {
    return changetype<CompositeKey>(key).bytes;
  } else {
    ERROR("runnel: a key is a string, Uint8Array, Utf8 or CompositeKey");
    return unreachable();
  }
}

function unsignedMax(size: usize): u64 {
  return size >= 8 ? u64.MAX_VALUE : (<u64>1 << (<u64>size * 8)) - 1;
}

function signedMax(size: usize): i64 {
  return <i64>((<u64>1 << (<u64>size * 8 - 1)) - 1);
}

function checkedKey(key: Uint8Array): Uint8Array {
  if (key.length == 0) fail("state keys must not be empty");
  return key;
}

function notJson(key: Uint8Array): void {
  fail("the value of key " + showKey(key) + " is not the expected JSON: " + decodeError());
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
    const k = checkedKey(keyBytes<K>(key));
    const n = host.state_get(k.dataStart, <usize>k.length);
    if (n < 0) return null;
    return takeResult(n);
  }

  /** Stores `value` under `key` as given. */
  putBytes<K>(key: K, value: Uint8Array): void {
    const k = checkedKey(keyBytes<K>(key));
    host.state_put(k.dataStart, <usize>k.length, value.dataStart, <usize>value.length);
  }

  /** Whether `key` holds a value. */
  exists<K>(key: K): bool {
    return this.getBytes<K>(key) != null;
  }

  /** Deletes `key` (deleting an absent key is not an error). */
  delete<K>(key: K): void {
    const k = checkedKey(keyBytes<K>(key));
    host.state_delete(k.dataStart, <usize>k.length);
  }

  // ---- State: text -------------------------------------------------------------------

  /** The value under `key` as UTF-8 text, or `null` if absent. A value that is not UTF-8 ends the call with an error. */
  getUtf8<K>(key: K): Utf8 | null {
    const k = keyBytes<K>(key);
    const bytes = this.getBytes<Uint8Array>(k);
    if (bytes == null) return null;
    if (!isValidUtf8(bytes.dataStart, <usize>bytes.length)) fail("the value of key " + showKey(k) + " is not UTF-8");
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
    this.putBytes<K>(key, encodeUtf8(value));
  }

  // ---- State: JSON -------------------------------------------------------------------

  /**
   * The value under `key` decoded from JSON into the type of `absent` (an integer, `bool`,
   * `string` or `Utf8`), or `absent` if the key is absent. A value that is not that JSON
   * ends the call with an error naming the key, as the Rust SDK's `get::<T>` does.
   */
  getJson<K, T>(key: K, absent: T): T {
    const k = keyBytes<K>(key);
    const bytes = this.getBytes<Uint8Array>(k);
    if (bytes == null) return absent;
    let value: T;
    if (isBoolean<T>()) {
      // @ts-ignore: T is bool
      value = jsonBool(bytes);
    } else if (isInteger<T>()) {
      if (isSigned<T>()) {
        // @ts-ignore: T is a signed integer
        value = <T>jsonInt(bytes, -signedMax(sizeof<T>()) - 1, signedMax(sizeof<T>()), nameof<T>());
      } else {
        // @ts-ignore: T is an unsigned integer
        value = <T>jsonUint(bytes, unsignedMax(sizeof<T>()), nameof<T>());
      }
    } else if (isString<T>()) {
      const text = jsonText(bytes);
      // @ts-ignore: T is string
      value = !decodeFailed() ? String.UTF8.decodeUnsafe(text.dataStart, <usize>text.length) : "";
    } else if (isReference<T>() && idof<T>() == idof<Utf8>()) {
      // @ts-ignore: T is Utf8
      value = new Utf8(jsonText(bytes));
    } else {
      ERROR("runnel: getJson reads integers, bool, string and Utf8; read other values with getBytes");
      return absent;
    }
    if (decodeFailed()) notJson(k);
    return value;
  }

  /** Stores `value` as JSON under `key` (integers, bool, string, Utf8, arrays, `@json` classes). */
  putJson<K, T>(key: K, value: T): void {
    this.putBytes<K>(key, toJson<T>(value));
  }

  // ---- Ranges ------------------------------------------------------------------------

  /**
   * The entries with `start <= key < end`, in key order; an empty `end` means no upper
   * bound. Entries are fetched from the node one at a time as the range advances, include
   * this call's own earlier writes, and are recorded as a range read.
   */
  range<S, E>(start: S, end: E): Range {
    return this.open(keyBytes<S>(start), keyBytes<E>(end));
  }

  /** The entries whose key starts with `prefix`, in key order (every entry if `prefix` is empty). */
  prefix<P>(prefix: P): Range {
    const p = keyBytes<P>(prefix);
    return this.open(p, prefixEnd(p));
  }

  /**
   * The entries under composite keys of `objectType` whose attributes start with
   * `attributes`, in key order (Fabric's GetStateByPartialCompositeKey). Split a key with
   * `CompositeKey.split`.
   */
  byPartialCompositeKey(objectType: string, attributes: string[]): Range {
    return this.prefix<Uint8Array>(CompositeKey.partial(objectType, attributes).bytes);
  }

  private open(start: Uint8Array, end: Uint8Array): Range {
    const handle = host.range_open(start.dataStart, <usize>start.length, end.dataStart, <usize>end.length);
    return new Range(handle);
  }

  // ---- Events ------------------------------------------------------------------------

  /** Emits event `name` with `payload` as JSON. Events reach subscribers only if the transaction commits. */
  emit<T>(name: string, payload: T): void {
    this.emitBytes(name, toJson<T>(payload));
  }

  /** Emits event `name` with `payload` as given. */
  emitBytes(name: string, payload: Uint8Array): void {
    if (name.length == 0) fail("event names must not be empty");
    const n = encodeUtf8(name);
    host.event_emit(n.dataStart, <usize>n.length, payload.dataStart, <usize>payload.length);
  }

  // ---- The transaction ---------------------------------------------------------------

  /** The transaction's id (lowercase hex). */
  txId(): string {
    const bytes = takeResult(host.ctx_tx_id());
    return String.UTF8.decodeUnsafe(bytes.dataStart, <usize>bytes.length);
  }

  /** Who submitted the transaction. */
  creator(): Creator {
    let creator = this.cachedCreator;
    if (creator == null) {
      creator = Creator.decode(takeResult(host.ctx_creator()));
      this.cachedCreator = creator;
    }
    return changetype<Creator>(creator);
  }

  /** The proposal's timestamp in Unix milliseconds: the only clock a contract has, the same on every endorser. */
  timestampMs(): u64 {
    return <u64>host.ctx_timestamp_ms();
  }

  /** Writes a log line for the node operator (not part of the result, not on the ledger). */
  log(level: LogLevel, message: string): void {
    const bytes = encodeUtf8(message);
    host.log(<i32>level, bytes.dataStart, <usize>bytes.length);
  }
}

/**
 * A range of state entries, fetched from the node as it advances:
 *
 *     const entries = ctx.prefix("asset/");
 *     while (entries.next()) { entries.key; entries.value; }
 */
export class Range {
  /** The current entry's key (after `next()` returned true). */
  key: Uint8Array = new Uint8Array(0);
  /** The current entry's value. */
  value: Uint8Array = new Uint8Array(0);
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
    // `u32 key_len, key, value`.
    if (entry.length < 4) fail("ABI: range entry shorter than its key length");
    const keyLen = load<u32>(entry.dataStart);
    if (<u64>keyLen > <u64>(entry.length - 4)) fail("ABI: range entry key runs past the entry");
    this.key = entry.subarray(4, 4 + <i32>keyLen);
    this.value = entry.subarray(4 + <i32>keyLen);
    return true;
  }

  /** The current key as text (a key that is not UTF-8 ends the call with an error). */
  keyUtf8(): Utf8 {
    if (!isValidUtf8(this.key.dataStart, <usize>this.key.length)) fail("a stored key is not UTF-8");
    return new Utf8(this.key);
  }
}

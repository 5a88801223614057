/**
 * A test harness for Runnel contracts built with @runnel/contract: it loads the compiled
 * module in Node's WebAssembly with an in-memory host that implements ABI v1
 * (docs/abi.md), the way the Rust SDK's `runnel_contract::testing` runs a Rust contract
 * natively, like Fabric's mock stub or CosmWasm's multi-test.
 *
 * `TestLedger` holds state (each key with the sequence number of the invoke that wrote it)
 * and the events of committed invokes. `invoke` runs one function as one transaction: its
 * writes and events are applied together if it succeeds, and discarded if it fails (the
 * error is thrown as an `InvokeError` with the code a client would get). `evaluate` runs a
 * function and keeps nothing, like a query. Each call gets a fresh instance, as on a node.
 *
 * Inside a call, state behaves as on the node: reads see the call's own earlier writes, a
 * range sees committed entries merged with the call's writes made before it was opened, and
 * every response carries the read/write set the node would record (reads with versions,
 * range reads, writes). Fuel and the size limits are the runtime's and are not applied.
 */

import { readFileSync } from "node:fs";
import { checkModule } from "@runnel/contract/build";

/** The timestamp calls see until `setTimestampMs` changes it (2023-11-14T22:13:20Z). */
export const DEFAULT_TIMESTAMP_MS = 1_700_000_000_000;
/** Longest contract error message kept, as the runtime keeps (bytes). */
export const ABORT_MESSAGE_BYTES_MAX = 16 * 1024;

/** A call argument or key: text (encoded as UTF-8) or bytes. */
export type Bytes = string | Uint8Array;

const encoder = new TextEncoder();
const lossy = new TextDecoder("utf-8", { fatal: false });
const strict = new TextDecoder("utf-8", { fatal: true });

function bytesOf(value: Bytes): Uint8Array {
  return typeof value === "string" ? encoder.encode(value) : value;
}

/** Bytes as a map key that sorts in byte order (one UTF-16 unit per byte). */
function mapKey(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i]);
  return s;
}

function keyBytes(key: string): Uint8Array {
  const out = new Uint8Array(key.length);
  for (let i = 0; i < key.length; i++) out[i] = key.charCodeAt(i);
  return out;
}

/** Encodes a byte list (`u32 count`, then `u32 len, bytes` per item, little-endian). */
export function encodeByteList(items: Bytes[]): Uint8Array {
  const parts = items.map(bytesOf);
  const out = new Uint8Array(4 + parts.reduce((n, p) => n + 4 + p.length, 0));
  const view = new DataView(out.buffer);
  view.setUint32(0, parts.length, true);
  let at = 4;
  for (const part of parts) {
    view.setUint32(at, part.length, true);
    out.set(part, at + 4);
    at += 4 + part.length;
  }
  return out;
}

/** An identity to call contracts as. */
export class Identity {
  constructor(
    readonly org: string,
    readonly role: string,
    readonly name: string,
    readonly cert: Uint8Array = new Uint8Array(0),
  ) {}

  /** The same identity with certificate `cert` (DER). */
  withCert(cert: Uint8Array): Identity {
    return new Identity(this.org, this.role, this.name, cert);
  }

  /** The account id a contract sees: `"{org}/{name}"`. */
  id(): string {
    return `${this.org}/${this.name}`;
  }

  /** The byte list `[org, role, name, certificate DER]` a contract reads. */
  encode(): Uint8Array {
    return encodeByteList([this.org, this.role, this.name, this.cert]);
  }
}

/** What went wrong in a call, with the code a client receives (`InvokeError::code()`). */
export type InvokeErrorCode = "CONTRACT_ERROR" | "FUNCTION_NOT_FOUND" | "CONTRACT_TRAP" | "ABI_VIOLATION";

/** A failed call. `message` is what a client sees (for a contract error, the contract's own message). */
export class InvokeError extends Error {
  constructor(
    readonly code: InvokeErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "InvokeError";
  }
}

/** An event a call emitted. */
export class Event {
  constructor(
    readonly name: string,
    readonly payload: Uint8Array,
  ) {}

  /** The payload as text. */
  text(): string {
    return strict.decode(this.payload);
  }

  /** The payload decoded from JSON. */
  json<T = unknown>(): T {
    return JSON.parse(this.text()) as T;
  }
}

/** A log line a call wrote. */
export interface LogLine {
  /** 0 error, 1 warn, 2 info, 3 debug. */
  level: number;
  message: string;
}

/** A key read, with the version it had (`null`: absent). */
export interface KvRead {
  key: Uint8Array;
  version: number | null;
}

/** A range a call iterated, as the validator re-checks it. */
export interface RangeRead {
  start: Uint8Array;
  /** `null`: no upper bound. */
  end: Uint8Array | null;
  /** The committed keys seen, with their versions. */
  reads: KvRead[];
  /** The last key the call saw (own writes included). */
  last: Uint8Array | null;
  /** Whether the call iterated to the end. */
  exhausted: boolean;
}

/** A key written or deleted. */
export interface KvWrite {
  key: Uint8Array;
  value: Uint8Array;
  isDelete: boolean;
}

/** The read/write set of a call, keys in byte order, as the node records it. */
export interface RwSet {
  reads: KvRead[];
  rangeReads: RangeRead[];
  writes: KvWrite[];
}

/** What a successful call returned. */
export class Response {
  constructor(
    /** The result bytes, as a client receives them (JSON of the return value). */
    readonly result: Uint8Array,
    /** The events the call emitted, in order. */
    readonly events: Event[],
    /** The log lines the call wrote. */
    readonly logs: LogLine[],
    /** The transaction id the call saw. */
    readonly txId: string,
    /** The read/write set. */
    readonly rwset: RwSet,
    /** For an invoke, the sequence number it committed at; `null` for an evaluate. */
    public seq: number | null,
  ) {}

  /** The result as text. */
  text(): string {
    return strict.decode(this.result);
  }

  /** The result decoded from JSON (integers above 2^53 lose precision: compare `text()` then). */
  json<T = unknown>(): T {
    return JSON.parse(this.text()) as T;
  }
}

interface Entry {
  value: Uint8Array;
  version: number;
}

/** Ends a call from inside a host function: the contract's abort, or a broken ABI rule. */
class CallEnded extends Error {
  constructor(readonly error: InvokeError) {
    super(error.message);
  }
}

function abi(message: string): CallEnded {
  return new CallEnded(new InvokeError("ABI_VIOLATION", message));
}

interface RangeIter {
  committed: [string, Entry][];
  own: [string, Uint8Array | null][];
  record: RangeRead;
  done: boolean;
}

/** One call's host: committed state plus the call's own writes. */
class CallHost {
  memory: WebAssembly.Memory | null = null;
  buffer: Uint8Array = new Uint8Array(0);
  reads = new Map<string, number | null>();
  writes = new Map<string, Uint8Array | null>();
  rangeReads: RangeRead[] = [];
  iters: RangeIter[] = [];
  events: Event[] = [];
  logs: LogLine[] = [];
  result: Uint8Array | null = null;

  constructor(
    private readonly state: Map<string, Entry>,
    private readonly txId: string,
    private readonly creator: Uint8Array,
    private readonly timestampMs: number,
  ) {}

  private bytes(ptr: number, len: number): Uint8Array {
    if (ptr < 0) throw abi(`negative pointer ${ptr}`);
    if (len < 0) throw abi(`negative length ${len}`);
    const mem = new Uint8Array(this.memory!.buffer);
    if (ptr + len > mem.length) throw abi(`buffer ${ptr}+${len} is outside linear memory`);
    return mem.slice(ptr, ptr + len);
  }

  private key(ptr: number, len: number): Uint8Array {
    const key = this.bytes(ptr, len);
    if (key.length === 0) throw abi("state keys must not be empty");
    return key;
  }

  private stage(bytes: Uint8Array): bigint {
    this.buffer = bytes;
    return BigInt(bytes.length);
  }

  imports(): WebAssembly.Imports {
    return {
      runnel: {
        state_get: (kp: number, kl: number): bigint => {
          const key = mapKey(this.key(kp, kl));
          if (this.writes.has(key)) {
            const own = this.writes.get(key)!;
            return own === null ? -1n : this.stage(own);
          }
          const found = this.state.get(key);
          if (!this.reads.has(key)) this.reads.set(key, found ? found.version : null);
          return found ? this.stage(found.value) : -1n;
        },
        state_put: (kp: number, kl: number, vp: number, vl: number): void => {
          const key = mapKey(this.key(kp, kl));
          this.writes.set(key, this.bytes(vp, vl));
        },
        state_delete: (kp: number, kl: number): void => {
          this.writes.set(mapKey(this.key(kp, kl)), null);
        },
        range_open: (sp: number, sl: number, ep: number, el: number): number => {
          const start = mapKey(this.bytes(sp, sl));
          const end = el === 0 ? null : mapKey(this.key(ep, el));
          const inRange = (k: string) => k >= start && (end === null || k < end);
          const empty = end !== null && end <= start;
          const committed = empty ? [] : [...this.state.entries()].filter(([k]) => inRange(k)).sort(byKey);
          const own = empty ? [] : [...this.writes.entries()].filter(([k]) => inRange(k)).sort(byKey);
          const record: RangeRead = {
            start: keyBytes(start),
            end: end === null ? null : keyBytes(end),
            reads: [],
            last: null,
            exhausted: false,
          };
          this.rangeReads.push(record);
          this.iters.push({ committed, own, record, done: false });
          return this.iters.length - 1;
        },
        range_next: (handle: number): bigint => {
          const iter = this.iters[handle];
          if (!iter) throw abi(`range_next on unknown iterator handle ${handle}`);
          for (;;) {
            if (iter.done) return -1n;
            const c = iter.committed[0]?.[0];
            const o = iter.own[0]?.[0];
            if (c === undefined && o === undefined) {
              iter.done = true;
              iter.record.exhausted = true;
              return -1n;
            }
            const takeCommitted = c !== undefined && (o === undefined || c <= o);
            const takeOwn = o !== undefined && (c === undefined || o <= c);
            let entry: [string, Uint8Array] | null = null;
            if (takeCommitted) {
              const [key, value] = iter.committed.shift()!;
              iter.record.reads.push({ key: keyBytes(key), version: value.version });
              entry = [key, value.value];
            }
            if (takeOwn) {
              const [key, value] = iter.own.shift()!;
              entry = value === null ? null : [key, value];
            }
            if (entry) {
              const key = keyBytes(entry[0]);
              iter.record.last = key;
              const out = new Uint8Array(4 + key.length + entry[1].length);
              new DataView(out.buffer).setUint32(0, key.length, true);
              out.set(key, 4);
              out.set(entry[1], 4 + key.length);
              return this.stage(out);
            }
          }
        },
        event_emit: (np: number, nl: number, pp: number, pl: number): void => {
          let name: string;
          try {
            name = strict.decode(this.bytes(np, nl));
          } catch {
            throw abi("event name is not UTF-8");
          }
          this.events.push(new Event(name, this.bytes(pp, pl)));
        },
        ctx_tx_id: (): bigint => this.stage(encoder.encode(this.txId)),
        ctx_creator: (): bigint => this.stage(this.creator),
        ctx_timestamp_ms: (): bigint => BigInt(this.timestampMs),
        log: (level: number, p: number, l: number): void => {
          this.logs.push({ level: Math.min(Math.max(level, 0), 3), message: lossy.decode(this.bytes(p, l)) });
        },
        result_read: (dst: number): void => {
          const mem = new Uint8Array(this.memory!.buffer);
          if (dst < 0 || dst + this.buffer.length > mem.length) {
            throw abi(`result_read target ${dst}+${this.buffer.length} is outside linear memory`);
          }
          mem.set(this.buffer, dst);
        },
        return_value: (p: number, l: number): void => {
          if (this.result !== null) throw abi("return_value called twice");
          this.result = this.bytes(p, l);
        },
        abort: (p: number, l: number): void => {
          const bytes = this.bytes(p, Math.min(Math.max(l, 0), ABORT_MESSAGE_BYTES_MAX));
          throw new CallEnded(new InvokeError("CONTRACT_ERROR", lossy.decode(bytes)));
        },
      },
    };
  }

  rwset(): RwSet {
    const reads = [...this.reads.entries()].sort(byKey).map(([k, version]) => ({ key: keyBytes(k), version }));
    const writes = [...this.writes.entries()].sort(byKey).map(([k, value]) => ({
      key: keyBytes(k),
      value: value ?? new Uint8Array(0),
      isDelete: value === null,
    }));
    return { reads, rangeReads: this.rangeReads, writes };
  }
}

function byKey<T>(a: [string, T], b: [string, T]): number {
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0;
}

/** An in-memory ledger for one contract module's state (see the module docs). */
export class TestLedger {
  private readonly state = new Map<string, Entry>();
  private committedEvents: Event[] = [];
  private sequence = 0;
  private fixedTxId: string | null = null;
  private clockMs = DEFAULT_TIMESTAMP_MS;
  /** The module's contract functions, sorted (as the runtime lists them). */
  readonly functions: string[];

  /** A ledger running `module` (checked as the runtime checks it at deploy). */
  constructor(private readonly module: WebAssembly.Module, wasm?: Uint8Array) {
    this.functions = wasm
      ? checkModule(wasm).sort()
      : WebAssembly.Module.exports(module)
          .map((e) => e.name)
          .filter((n) => n.startsWith("runnel_fn_"))
          .map((n) => n.slice("runnel_fn_".length))
          .sort();
  }

  /** A ledger for the module in `wasm` (bytes or a file path). */
  static load(wasm: Uint8Array | string): TestLedger {
    const bytes = typeof wasm === "string" ? new Uint8Array(readFileSync(wasm)) : wasm;
    return new TestLedger(new WebAssembly.Module(bytes as Uint8Array<ArrayBuffer>), bytes);
  }

  /** A ledger with the same module and an empty state. */
  fresh(): TestLedger {
    return new TestLedger(this.module);
  }

  /**
   * Runs `fn` as `identity` with `args` as one transaction. On success its writes and
   * events are committed at the next sequence number, which becomes the version of every
   * key written; on failure nothing is kept and an `InvokeError` is thrown.
   */
  invoke(identity: Identity, fn: string, args: Bytes[] = []): Response {
    const { response, writes } = this.run(identity, fn, args);
    this.sequence += 1;
    for (const [key, value] of writes) {
      if (value === null) this.state.delete(key);
      else this.state.set(key, { value, version: this.sequence });
    }
    this.committedEvents.push(...response.events);
    response.seq = this.sequence;
    return response;
  }

  /** Runs `fn` like `invoke`, but keeps none of its writes or events (a query). */
  evaluate(identity: Identity, fn: string, args: Bytes[] = []): Response {
    return this.run(identity, fn, args).response;
  }

  /** Runs `fn` expecting it to fail, and returns the error (fails the test otherwise). */
  invokeError(identity: Identity, fn: string, args: Bytes[] = []): InvokeError {
    try {
      this.invoke(identity, fn, args);
    } catch (e) {
      if (e instanceof InvokeError) return e;
      throw e;
    }
    throw new Error(`expected ${fn} to fail, but it succeeded`);
  }

  private run(identity: Identity, fn: string, args: Bytes[]): { response: Response; writes: Map<string, Uint8Array | null> } {
    if (!this.functions.includes(fn)) {
      throw new InvokeError("FUNCTION_NOT_FOUND", `contract has no function \`${fn}\` (it has: ${this.functions.join(", ")})`);
    }
    const txId = this.fixedTxId ?? (this.sequence + 1).toString(16).padStart(64, "0");
    const host = new CallHost(this.state, txId, identity.encode(), this.clockMs);
    const encoded = encodeByteList(args);
    try {
      const instance = new WebAssembly.Instance(this.module, host.imports());
      const exports = instance.exports as Record<string, unknown>;
      host.memory = exports.memory as WebAssembly.Memory;
      const alloc = exports.runnel_alloc as (len: number) => number;
      const call = exports[`runnel_fn_${fn}`] as (ptr: number, len: number) => void;
      const ptr = alloc(encoded.length);
      const mem = new Uint8Array(host.memory.buffer);
      if (ptr < 0 || ptr + encoded.length > mem.length) {
        throw abi(`runnel_alloc returned ${ptr}, but ${ptr}+${encoded.length} is outside linear memory`);
      }
      mem.set(encoded, ptr);
      call(ptr, encoded.length);
    } catch (e) {
      if (e instanceof CallEnded) throw e.error;
      if (e instanceof WebAssembly.RuntimeError) throw new InvokeError("CONTRACT_TRAP", e.message);
      throw e;
    }
    const response = new Response(host.result ?? new Uint8Array(0), host.events, host.logs, txId, host.rwset(), null);
    return { response, writes: host.writes };
  }

  /** Sets the transaction id every later call sees (by default the next sequence number as 64 hex digits). */
  setTxId(txId: string): this {
    this.fixedTxId = txId;
    return this;
  }

  /** Sets the timestamp later calls see, Unix milliseconds. */
  setTimestampMs(ms: number): this {
    this.clockMs = ms;
    return this;
  }

  /** Moves the clock calls see forward by `ms`. */
  advanceTimeMs(ms: number): this {
    this.clockMs += ms;
    return this;
  }

  /** The timestamp calls see, Unix milliseconds. */
  timestampMs(): number {
    return this.clockMs;
  }

  /** The sequence number of the last commit (0 for a new ledger). */
  seq(): number {
    return this.sequence;
  }

  /** The bytes stored under `key`. */
  getBytes(key: Bytes): Uint8Array | undefined {
    return this.state.get(mapKey(bytesOf(key)))?.value;
  }

  /** The value under `key` as UTF-8 text. */
  getText(key: Bytes): string | undefined {
    const bytes = this.getBytes(key);
    return bytes === undefined ? undefined : strict.decode(bytes);
  }

  /** The value under `key` decoded from JSON. */
  getJson<T = unknown>(key: Bytes): T | undefined {
    const text = this.getText(key);
    return text === undefined ? undefined : (JSON.parse(text) as T);
  }

  /** The version of `key`: the sequence number of the commit that last wrote it. */
  version(key: Bytes): number | undefined {
    return this.state.get(mapKey(bytesOf(key)))?.version;
  }

  /** Every entry, in key order. */
  entries(): [Uint8Array, Uint8Array][] {
    return [...this.state.entries()].sort(byKey).map(([k, e]) => [keyBytes(k), e.value]);
  }

  /** How many keys hold a value. */
  get size(): number {
    return this.state.size;
  }

  /** Whether the state is empty. */
  isEmpty(): boolean {
    return this.state.size === 0;
  }

  /** Writes `key` directly, as a commit of its own (to set up a test). */
  putBytes(key: Bytes, value: Bytes): this {
    this.sequence += 1;
    this.state.set(mapKey(bytesOf(key)), { value: bytesOf(value), version: this.sequence });
    return this;
  }

  /** Writes `value` as JSON under `key`, as a commit of its own. */
  putJson(key: Bytes, value: unknown): this {
    return this.putBytes(key, JSON.stringify(value));
  }

  /** The events of every committed invoke, in commit order. */
  events(): Event[] {
    return this.committedEvents;
  }
}

/** Fabric's composite key `\0type\0attr1\0...\0`, as the contract SDKs build it (for assertions). */
export function compositeKey(objectType: string, attributes: string[]): string {
  return `\0${objectType}\0${attributes.map((a) => `${a}\0`).join("")}`;
}

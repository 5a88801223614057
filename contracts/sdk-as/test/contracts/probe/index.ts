// A contract that exercises the SDK (the twin of the probe in the Rust SDK's testing.rs).

import { CompositeKey, Context, LogLevel, Utf8, bytesEqual, ensure, fail, quoted, utf8Error } from "@runnel/contract";
// The SDK's own byte-list decoder, for the golden vectors (node/api/vectors/byte_list.json).
import { decodeByteList, itemLen, itemPtr } from "../../../assembly/abi";
import { view } from "../../../assembly/bytes";
import { lit } from "../../../assembly/text";

/** Writes `key`, then fails if `failing` is set: nothing may survive. */
export function write(ctx: Context, key: string, failing: bool): void {
  ctx.putString(key, "v");
  ctx.emit("Wrote", key);
  if (failing) fail("failing after writing " + key);
}

/** A bug in the contract: an index out of range. */
export function explode(ctx: Context): void {
  ctx.putString("exploded", "v");
  const empty = new Array<i32>(0);
  ctx.putJson("never", empty[1]);
}

/** An error thrown as an exception. */
export function throws(ctx: Context): void {
  throw new Error("thrown on purpose");
}

/** Writes inside and outside the prefix, deletes one key, then lists the prefix. */
export function scan(ctx: Context, prefix: string): string[][] {
  ctx.putString(prefix + "new", "own");
  ctx.putString(prefix + "b", "shadowed");
  ctx.delete(prefix + "c");
  const out = new Array<string[]>();
  const entries = ctx.prefix(prefix);
  while (entries.next()) out.push([entries.keyUtf8().toString(), new Utf8(entries.value).toString()]);
  return out;
}

/** Reads a key after writing it in the same call. */
export function read_own(ctx: Context): u32 {
  ctx.putJson("mine", <u32>7);
  return ctx.getJson("mine", <u32>0);
}

export function seed(ctx: Context): void {
  const owners = ["ann", "ann", "annie", "bob"];
  const ids = ["1", "2", "3", "4"];
  for (let i = 0; i < owners.length; i++) ctx.putJson(CompositeKey.of("owned", [owners[i], ids[i]]), <u8>1);
}

export function by_owner(ctx: Context, owner: string): string[] {
  const ids = new Array<string>();
  const entries = ctx.byPartialCompositeKey("owned", [owner]);
  while (entries.next()) {
    const attributes = CompositeKey.split(entries.key).attributes;
    ids.push(attributes[0].toString() + "/" + attributes[1].toString());
  }
  return ids;
}

/** Splits `key` (raw bytes) as a composite key. */
export function split(ctx: Context, key: Uint8Array): string[] {
  const parts = CompositeKey.split(key);
  const out = [parts.objectType.toString()];
  for (let i = 0; i < parts.attributes.length; i++) out.push(parts.attributes[i].toString());
  return out;
}

@json
class Info {
  txId: string;
  id: Utf8;
  role: Utf8;
  timestamp: u64;
  cert: Uint8Array;

  constructor(txId: string, id: Utf8, role: Utf8, timestamp: u64, cert: Uint8Array) {
    this.txId = txId;
    this.id = id;
    this.role = role;
    this.timestamp = timestamp;
    this.cert = cert;
  }
}

export function context(ctx: Context): Info {
  ctx.log(LogLevel.Debug, "looking");
  const creator = ctx.creator();
  return new Info(ctx.txId(), creator.id(), creator.role, ctx.timestampMs(), creator.cert);
}

@json
class Scalars {
  a: u8;
  b: i32;
  c: i64;
  d: bool;
  e: string | null;
  f: Utf8 | null;

  constructor(a: u8, b: i32, c: i64, d: bool, e: string | null, f: Utf8 | null) {
    this.a = a;
    this.b = b;
    this.c = c;
    this.d = d;
    this.e = e;
    this.f = f;
  }
}

/** Every parameter type a contract function may take. */
export function scalars(ctx: Context, a: u8, b: i32, c: i64, d: bool, e: string | null, f: Utf8 | null): Scalars {
  return new Scalars(a, b, c, d, e, f);
}

/** Decodes `list` as a byte list, as the SDK decodes arguments and identities, and returns its items. */
export function byte_list(ctx: Context, list: Uint8Array): Uint8Array[] {
  const count = decodeByteList(list.dataStart, list.length, lit(""));
  const items = new Array<Uint8Array>(0);
  for (let i = 0; i < count; i++) items.push(view(list.buffer, itemPtr(i), itemLen(i)));
  return items;
}

/** Returns its argument's raw bytes as JSON numbers (serde's Vec<u8>). */
export function raw(ctx: Context, bytes: Uint8Array): Uint8Array {
  return bytes;
}

@rename("Renamed")
export function renamed(ctx: Context): string {
  return "renamed";
}

export function random(ctx: Context): u64 {
  return <u64>(Math.random() * 100);
}

export function unnamed_event(ctx: Context): void {
  ctx.emitBytes("", new Uint8Array(0));
}

/** Grows memory past the initial 2 MiB. */
export function big(ctx: Context, mib: u32): u32 {
  const bytes = new Uint8Array(<i32>mib << 20);
  return bytes.length;
}

/** Loops forever (the runtime stops it with FUEL_EXHAUSTED; the harness has no fuel). */
export function spin(ctx: Context, n: u64): u64 {
  let i: u64 = 0;
  while (i < n) i++;
  return i;
}

/** Messages the transform writes as UTF-8: template literals, `+` chains, `ensure`, ready strings. */
export function message(ctx: Context, kind: u8, text: Utf8, n: i64): void {
  const s = text.toString();
  if (kind == 0) fail(`template ${n} ${quoted(text)} ${quoted(s)} ${n < 0} ${text} ${<u8>n}`);
  if (kind == 1) ensure(n > 0, "ensure " + n.toString() + " " + s + " " + quoted(text));
  if (kind == 2) fail(s);
  if (kind == 3) {
    const bad = new Uint8Array(2);
    bad[0] = 0x61;
    bad[1] = 0xff;
    fail("invalid: " + utf8Error(bad)!.toString() + "|" + quoted(s));
  }
}

/** Utf8.equals against each kind of text, and a composite key of one attribute or an array of it. */
export function compare(ctx: Context, a: Utf8, b: string): bool[] {
  const one = CompositeKey.of("t", a);
  const many = CompositeKey.of("t", [a, a]);
  return [a.equals(b), a.equals(Utf8.of(b)), a.equals(Utf8.of(b).bytes), bytesEqual(one.bytes, CompositeKey.of("t", [a]).bytes), many.bytes.length == 2 * one.bytes.length - 3];
}

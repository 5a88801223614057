// The SDK itself, through a probe contract (test/contracts/probe), and the build's checks.

import path from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_TIMESTAMP_MS, Identity, TestLedger, compositeKey, encodeByteList } from "@runnel/contract/testing";
import { buildContract, checkModule } from "@runnel/contract/build";
import { BUILD_DIR, CONTRACTS, PROBE } from "./paths";

const alice = new Identity("Org1", "client", "alice");
const probe = () => TestLedger.load(PROBE);

describe("calls", () => {
  it("failed invokes keep nothing", () => {
    const ledger = probe();
    const error = ledger.invokeError(alice, "write", ["k", "true"]);
    expect(error.code).toBe("CONTRACT_ERROR");
    expect(error.message).toBe("failing after writing k");
    expect(ledger.isEmpty()).toBe(true);
    expect(ledger.events()).toEqual([]);
    expect(ledger.seq()).toBe(0);

    const response = ledger.invoke(alice, "write", ["k", "false"]);
    expect(response.seq).toBe(1);
    expect(ledger.getText("k")).toBe("v");
    expect(ledger.events().map((e) => [e.name, e.text()])).toEqual([["Wrote", '"k"']]);
  });

  it("a bug in the contract is reported like a Rust panic", () => {
    const ledger = probe();
    const error = ledger.invokeError(alice, "explode");
    expect(error.code).toBe("CONTRACT_ERROR");
    expect(error.message).toMatch(/^panicked at ~lib\/array\.ts:\d+:\d+: Index out of range$/);
    expect(ledger.isEmpty()).toBe(true);
  });

  it("a thrown Error is a contract error with its message", () => {
    expect(probe().invokeError(alice, "throws").message).toBe("thrown on purpose");
  });

  it("evaluate keeps nothing", () => {
    const ledger = probe();
    const response = ledger.evaluate(alice, "write", ["k", "false"]);
    expect(response.seq).toBeNull();
    expect(response.events.length).toBe(1);
    expect(ledger.isEmpty()).toBe(true);
  });

  it("ranges merge the call's own writes and deletes", () => {
    const ledger = probe();
    ledger.putBytes("p/a", "1").putBytes("p/b", "2").putBytes("p/c", "3");
    ledger.putBytes("q", "outside").putBytes("p", "prefix itself");
    const response = ledger.evaluate(alice, "scan", ["p/"]);
    expect(response.json()).toEqual([
      ["p/a", "1"],
      ["p/b", "shadowed"],
      ["p/new", "own"],
    ]);
    const read = response.rwset.rangeReads[0];
    const dec = new TextDecoder();
    expect(dec.decode(read.start)).toBe("p/");
    expect(dec.decode(read.end!)).toBe("p0");
    // The committed keys seen, including the deleted p/c; the last key seen was the own write.
    expect(read.reads.map((r) => [dec.decode(r.key), r.version])).toEqual([
      ["p/a", 1],
      ["p/b", 2],
      ["p/c", 3],
    ]);
    expect(dec.decode(read.last!)).toBe("p/new");
    expect(read.exhausted).toBe(true);
  });

  it("reads see the call's own writes and record no read", () => {
    const response = probe().invoke(alice, "read_own");
    expect(response.text()).toBe("7");
    expect(response.rwset.reads).toEqual([]);
  });

  it("partial composite keys select whole attributes", () => {
    const ledger = probe();
    ledger.invoke(alice, "seed");
    expect(ledger.getText(compositeKey("owned", ["ann", "1"]))).toBe("1");
    const ids = (owner: string) => ledger.evaluate(alice, "by_owner", [owner]).json();
    expect(ids("ann")).toEqual(["ann/1", "ann/2"]);
    expect(ids("bob")).toEqual(["bob/4"]);
    expect(ids("carol")).toEqual([]);
  });

  it("composite keys split as the Rust SDK splits them", () => {
    const ledger = probe();
    expect(ledger.evaluate(alice, "split", [compositeKey("asset", ["a1", "", "ü"])]).json()).toEqual(["asset", "a1", "", "ü"]);
    for (const bad of ["asset", "\0asset", "\0\0"]) {
      expect(ledger.invokeError(alice, "split", [bad]).message, JSON.stringify(bad)).toMatch(/^composite key: /);
    }
    expect(ledger.invokeError(alice, "split", [new Uint8Array([0, 0xff, 0])]).message).toBe("composite key: not UTF-8");
  });

  it("reports the transaction's identity, id and time", () => {
    const ledger = probe();
    const bob = new Identity("Org2", "admin", "bob").withCert(new Uint8Array([0x30, 0x82]));
    const response = ledger.evaluate(bob, "context");
    expect(response.json()).toEqual({
      txId: "1".padStart(64, "0"),
      id: "Org2/bob",
      role: "admin",
      timestamp: DEFAULT_TIMESTAMP_MS,
      cert: [0x30, 0x82],
    });
    expect(response.logs).toEqual([{ level: 3, message: "looking" }]);
    ledger.setTxId("abc123").setTimestampMs(5).advanceTimeMs(10);
    const info = ledger.invoke(bob, "context").json<{ txId: string; timestamp: number }>();
    expect([info.txId, info.timestamp]).toEqual(["abc123", 15]);
  });

  it("decodes every parameter type by the Rust SDK's convention", () => {
    const ledger = probe();
    const call = (...args: string[]) => ledger.evaluate(alice, "scalars", args).text();
    expect(call("255", "-7", "-9223372036854775808", "true", "null", "x")).toBe(
      '{"a":255,"b":-7,"c":-9223372036854775808,"d":true,"e":null,"f":"x"}',
    );
    expect(call("0", " 1 ", "9223372036854775807", "false", "text", '"q"')).toBe(
      '{"a":0,"b":1,"c":9223372036854775807,"d":false,"e":"text","f":"q"}',
    );
    const error = (index: number, value: string | Uint8Array) => {
      const args: (string | Uint8Array)[] = ["1", "1", "1", "true", "e", "f"];
      args[index] = value;
      return ledger.invokeError(alice, "scalars", args).message;
    };
    expect(error(0, "256")).toBe("scalars: argument 1 (a): invalid value: integer `256`, expected u8 at line 1 column 3");
    expect(error(0, "x256")).toBe("scalars: argument 1 (a): invalid digit found in string");
    expect(error(1, "2147483648")).toBe("scalars: argument 2 (b): invalid value: integer `2147483648`, expected i32 at line 1 column 10");
    expect(error(1, "-2147483649")).toBe("scalars: argument 2 (b): invalid value: integer `-2147483649`, expected i32 at line 1 column 11");
    expect(error(1, "+-1")).toBe("scalars: argument 2 (b): invalid digit found in string");
    expect(error(2, "9223372036854775808")).toBe(
      "scalars: argument 3 (c): invalid value: integer `9223372036854775808`, expected i64 at line 1 column 19",
    );
    expect(error(2, "1e3")).toBe("scalars: argument 3 (c): invalid type: floating point `1e3`, expected i64 at line 1 column 3");
    expect(error(3, "yes")).toBe("scalars: argument 4 (d): provided string was not `true` or `false`");
    expect(error(3, "1")).toBe("scalars: argument 4 (d): invalid type: integer `1`, expected a boolean at line 1 column 1");
    expect(error(4, new Uint8Array([0xff]))).toBe("scalars: argument 5 (e): expected value at line 1 column 1");
    expect(error(5, new Uint8Array([0x20, 0xff]))).toBe("scalars: argument 6 (f): expected value at line 1 column 2");
  });

  it("writes messages given as literals, templates and + chains as UTF-8, piece by piece", () => {
    const ledger = probe();
    const message = (kind: number, text: string, n: number) =>
      ledger.invokeError(alice, "message", [String(kind), text, String(n)]).message;
    expect(message(0, 'a"b', -3)).toBe('template -3 "a\\"b" "a\\"b" true a"b 253');
    expect(message(0, "é\u0001\u0085\u{10FFFF}😀", 7)).toBe(
      'template 7 "é\\u{1}\\u{85}\\u{10ffff}😀" "é\\u{1}\\u{85}\\u{10ffff}😀" false é\u0001\u0085\u{10FFFF}😀 7',
    );
    expect(message(1, "x\ty", 0)).toBe('ensure 0 x\ty "x\\ty"');
    expect(ledger.invoke(alice, "message", ["1", "x", "5"]).text()).toBe("null");
    expect(message(2, "a ready string, ü", 0)).toBe("a ready string, ü");
    expect(message(3, "q", 0)).toBe('invalid: invalid utf-8 sequence of 1 bytes from index 1|"q"');
  });

  it("compares Utf8 with each kind of text; one attribute is a composite key like an array of one", () => {
    const ledger = probe();
    expect(ledger.evaluate(alice, "compare", ["Org1/ü", "Org1/ü"]).json()).toEqual([true, true, true, true, true]);
    expect(ledger.evaluate(alice, "compare", ["Org1/ü", "Org1/u"]).json()).toEqual([false, false, false, true, true]);
  });

  it("returns raw byte arguments as JSON arrays (serde's Vec<u8>)", () => {
    expect(probe().evaluate(alice, "raw", [new Uint8Array([0, 255, 7])]).text()).toBe("[0,255,7]");
  });

  it("a renamed function is called by its new name", () => {
    const ledger = probe();
    expect(ledger.functions).toContain("Renamed");
    expect(ledger.evaluate(alice, "Renamed").json()).toBe("renamed");
  });

  it("refuses what would make endorsers disagree or break the ABI", () => {
    const ledger = probe();
    expect(ledger.invokeError(alice, "random").message).toBe(
      "Math.random is not available in a contract: every endorser must compute the same result",
    );
    expect(ledger.invokeError(alice, "unnamed_event").message).toBe("event names must not be empty");
  });

  it("grows memory past its initial 2 MiB when asked", () => {
    expect(probe().evaluate(alice, "big", ["3"]).text()).toBe(String(3 << 20));
  });
});

describe("build", () => {
  const build = (name: string, config?: string) =>
    buildContract({
      entry: path.join(CONTRACTS, "bad", `${name}.ts`),
      outFile: path.join(BUILD_DIR, `${name}.wasm`),
      config: config ?? path.join(CONTRACTS, "probe", "asconfig.json"),
    });

  it("leaves no start function, no foreign import and 2 MiB of memory", async () => {
    const { readFileSync } = await import("node:fs");
    const wasm = new Uint8Array(readFileSync(PROBE));
    expect(checkModule(wasm).sort()).toContain("write");
    const module = new WebAssembly.Module(wasm);
    expect(WebAssembly.Module.imports(module).every((i) => i.module === "runnel")).toBe(true);
    const exports = WebAssembly.Module.exports(module).map((e) => e.name);
    expect(exports).toContain("runnel_abi_v1");
    expect(exports).toContain("runnel_alloc");
    expect(exports.filter((e) => !e.startsWith("runnel_") && e !== "memory")).toEqual([]);
  });

  it("refuses top-level code that calls the host", async () => {
    await expect(build("host-at-top-level")).rejects.toThrow(/top-level code was not evaluated at build time/);
  });

  it("refuses a clock", async () => {
    await expect(build("clock")).rejects.toThrow(/imports env\.Date\.now: contracts have no clock: use ctx\.timestampMs\(\)/);
  });

  it("refuses exported helpers and unsupported parameter types", async () => {
    const error = await build("helper").catch((e: Error) => e);
    expect(String(error)).toMatch(/the first parameter of contract function helper must be `ctx: Context`/);
    expect(String(error)).toMatch(/parameter x of contract function ratio has type f64/);
  });

  it("says so when the transform was forgotten", async () => {
    await expect(build("clock", path.join(CONTRACTS, "bad", "no-transform.json"))).rejects.toThrow(
      /no ABI version marker \(export runnel_abi_v1\): was it built with the @runnel\/contract transform\?/,
    );
  });
});

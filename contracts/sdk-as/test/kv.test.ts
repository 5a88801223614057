// The AssemblyScript kv (contracts/examples-as/kv) through the harness: the same calls and
// the same result bytes as the Rust kv's unit tests (contracts/examples/kv/src/lib.rs).

import { describe, expect, it } from "vitest";
import { Identity, TestLedger } from "@runnel/contract/testing";
import { example } from "./paths";

const alice = new Identity("Org1", "client", "alice");
const text = (bytes: Uint8Array | undefined) => (bytes === undefined ? undefined : new TextDecoder().decode(bytes));
const kv = () => TestLedger.load(example("kv"));

describe("kv", () => {
  it("exports the Rust kv's functions", () => {
    expect(kv().functions).toEqual(["delete", "get", "put", "range", "update"]);
  });

  it("put stores raw UTF-8 and get returns it", () => {
    const ledger = kv();
    const put = ledger.invoke(alice, "put", ["greeting", "hello, runnel"]);
    expect(put.text()).toBe("null");
    expect(ledger.getText("greeting")).toBe("hello, runnel");
    expect(ledger.version("greeting")).toBe(1);
    expect(put.rwset.reads).toEqual([]);
    expect(put.rwset.writes.map((w) => [text(w.key), text(w.value), w.isDelete])).toEqual([
      ["greeting", "hello, runnel", false],
    ]);

    const get = ledger.evaluate(alice, "get", ["greeting"]);
    expect(get.text()).toBe('"hello, runnel"');
    expect(get.json<string>()).toBe("hello, runnel");
    expect(get.rwset.reads.map((r) => [text(r.key), r.version])).toEqual([["greeting", 1]]);
    expect(get.seq).toBeNull();
  });

  it("takes quoted arguments as JSON strings and other JSON as its text", () => {
    const ledger = kv();
    ledger.invoke(alice, "put", ['"k"', '"v"']);
    expect(ledger.getText("k")).toBe("v");
    ledger.invoke(alice, "put", ["n", "[1, 2]"]);
    expect(ledger.getText("n")).toBe("[1, 2]");
    ledger.invoke(alice, "put", ["esc", '"a\\"b\\u00e9\\n\\ud83d\\ude00"']);
    expect(ledger.getText("esc")).toBe('a"bé\n😀');
    expect(ledger.evaluate(alice, "get", ["esc"]).text()).toBe('"a\\"bé\\n😀"');
    ledger.invoke(alice, "put", ["ctl", "a\u0001\u007f\tb"]);
    expect(ledger.evaluate(alice, "get", ["ctl"]).text()).toBe('"a\\u0001\u007f\\tb"');
    // Text that starts like JSON but is not is taken as it is.
    ledger.invoke(alice, "put", ["half", '"open']);
    expect(ledger.getText("half")).toBe('"open');
  });

  it("get of a missing key is null and records the absence", () => {
    const get = kv().evaluate(alice, "get", ["nope"]);
    expect(get.text()).toBe("null");
    expect(get.rwset.reads).toEqual([{ key: new TextEncoder().encode("nope"), version: null }]);
  });

  it("put overwrites and bumps the version", () => {
    const ledger = kv();
    ledger.invoke(alice, "put", ["k", "1"]);
    ledger.invoke(alice, "put", ["other", "x"]);
    ledger.invoke(alice, "put", ["k", "2"]);
    expect(ledger.getText("k")).toBe("2");
    expect(ledger.version("k")).toBe(3);
    expect(ledger.version("other")).toBe(2);
  });

  it("update returns the previous value and stores the new one", () => {
    const ledger = kv();
    expect(ledger.invoke(alice, "update", ["k", "1"]).text()).toBe("null");
    const second = ledger.invoke(alice, "update", ["k", "2"]);
    expect(second.text()).toBe('"1"');
    expect(ledger.getText("k")).toBe("2");
    expect(second.rwset.reads.map((r) => [text(r.key), r.version])).toEqual([["k", 1]]);
    expect(second.rwset.writes.map((w) => text(w.value))).toEqual(["2"]);
  });

  it("delete removes and tolerates missing keys", () => {
    const ledger = kv();
    ledger.invoke(alice, "put", ["k", "v"]);
    const del = ledger.invoke(alice, "delete", ["k"]);
    expect(del.rwset.writes).toEqual([{ key: new TextEncoder().encode("k"), value: new Uint8Array(0), isDelete: true }]);
    expect(ledger.getBytes("k")).toBeUndefined();
    ledger.invoke(alice, "delete", ["k"]);
    expect(ledger.isEmpty()).toBe(true);
  });

  it("range is half-open, ordered, and records a range read", () => {
    const ledger = kv();
    for (const [k, v] of [["b", "2"], ["a", "1"], ["d", "4"], ["c", "3"]]) ledger.invoke(alice, "put", [k, v]);
    const range = (start: string, end: string) => ledger.evaluate(alice, "range", [start, end]);
    expect(range("b", "d").text()).toBe('[{"key":"b","value":"2"},{"key":"c","value":"3"}]');
    expect(range("", "").json()).toEqual([
      { key: "a", value: "1" },
      { key: "b", value: "2" },
      { key: "c", value: "3" },
      { key: "d", value: "4" },
    ]);
    expect(range("c", "").json()).toEqual([
      { key: "c", value: "3" },
      { key: "d", value: "4" },
    ]);
    expect(range("d", "b").text()).toBe("[]");
    expect(range("x", "").text()).toBe("[]");

    const sim = range("b", "d");
    const read = sim.rwset.rangeReads[0];
    expect([text(read.start), text(read.end ?? undefined)]).toEqual(["b", "d"]);
    expect(text(read.last ?? undefined)).toBe("c");
    expect(read.reads.map((r) => [text(r.key), r.version])).toEqual([
      ["b", 1],
      ["c", 4],
    ]);
    expect(read.exhausted).toBe(true);
    expect(range("", "").rwset.rangeReads[0].end).toBeNull();
  });

  it("wrong argument counts are errors", () => {
    const ledger = kv();
    for (const [fn, args, message] of [
      ["put", ["k"], "put: expected 2 arguments, got 1"],
      ["get", [], "get: expected 1 argument, got 0"],
      ["delete", ["a", "b"], "delete: expected 1 argument, got 2"],
    ] as const) {
      const error = ledger.invokeError(alice, fn, [...args]);
      expect(error.code).toBe("CONTRACT_ERROR");
      expect(error.message).toBe(message);
    }
    expect(ledger.isEmpty()).toBe(true);
  });

  it("bad arguments are errors", () => {
    const ledger = kv();
    const error = ledger.invokeError(alice, "put", ["k", new Uint8Array([0xff, 0xfe])]);
    expect(error.message).toBe("put: argument 2 (value): expected value at line 1 column 1");
    expect(ledger.invokeError(alice, "put", ["", "v"]).message).toBe("state keys must not be empty");
    expect(ledger.invokeError(alice, "get", [""]).message).toBe("state keys must not be empty");
    expect(ledger.invokeError(alice, "put", [new Uint8Array([0x22, 0xc3, 0x28, 0x22]), "v"]).message).toBe(
      "put: argument 1 (key): invalid unicode code point at line 1 column 4",
    );
    expect(ledger.isEmpty()).toBe(true);
  });

  it("reports values and keys that are not UTF-8 instead of mangling them", () => {
    const ledger = kv();
    ledger.putBytes("bin", new Uint8Array([0xff]));
    expect(ledger.invokeError(alice, "get", ["bin"]).message).toBe('the value of "bin" is not UTF-8');
    expect(ledger.invokeError(alice, "range", ["", ""]).message).toBe('the value of "bin" is not UTF-8');
    const other = kv();
    other.putBytes(new Uint8Array([0x61, 0xe2, 0x82]), "v");
    expect(other.invokeError(alice, "range", ["", ""]).message).toBe(
      "a stored key is not UTF-8: incomplete utf-8 byte sequence from index 1",
    );
  });

  it("unknown functions are refused as the runtime refuses them", () => {
    const error = kv().invokeError(alice, "Put", []);
    expect(error.code).toBe("FUNCTION_NOT_FOUND");
    expect(error.message).toBe("contract has no function `Put` (it has: delete, get, put, range, update)");
  });

  it("a range sees the call's own writes only when made before it was opened", () => {
    const ledger = kv();
    ledger.invoke(alice, "put", ["a", "1"]);
    // update writes after its read; a later range in another call sees the committed value.
    ledger.invoke(alice, "update", ["a", "2"]);
    expect(ledger.evaluate(alice, "range", ["", ""]).text()).toBe('[{"key":"a","value":"2"}]');
  });
});

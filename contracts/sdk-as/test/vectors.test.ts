// The golden vectors of node/api/vectors/ (written by runnel-api's tests/it/vectors.rs):
// the byte list as the test harness encodes it and as a contract decodes it, and the
// error names the harness gives a failed call.

import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { Identity, TestLedger, encodeByteList, type InvokeErrorCode } from "@runnel/contract/testing";
import { PROBE } from "./paths";

const here = path.dirname(fileURLToPath(import.meta.url));
const VECTORS = path.resolve(here, "..", "..", "..", "node", "api", "vectors");

function load<T>(name: string): T {
  return JSON.parse(readFileSync(path.join(VECTORS, name), "utf8")) as T;
}

const bytes = (hex: string): Uint8Array => new Uint8Array(Buffer.from(hex, "hex"));
const hex = (data: Uint8Array): string => Buffer.from(data).toString("hex");

interface ByteLists {
  lists: { name: string; items: string[]; encoded: string }[];
  malformed: { name: string; encoded: string; error: string }[];
}

interface Codes {
  error_names: string[];
}

const byteLists = load<ByteLists>("byte_list.json");
const alice = new Identity("Org1", "client", "alice");

describe("byte lists (node/api/vectors/byte_list.json)", () => {
  it.each(byteLists.lists.map((v) => [v.name, v] as const))("the harness encodes %s as the runtime does", (_, v) => {
    expect(hex(encodeByteList(v.items.map(bytes)))).toBe(v.encoded);
  });

  it.each(byteLists.lists.map((v) => [v.name, v] as const))("a contract decodes %s to its items", (_, v) => {
    const items = TestLedger.load(PROBE).evaluate(alice, "byte_list", [bytes(v.encoded)]).json<number[][]>();
    expect(items.map((item) => hex(new Uint8Array(item)))).toEqual(v.items);
  });

  it.each(byteLists.malformed.map((v) => [v.name, v] as const))("a contract refuses %s as the runtime does", (_, v) => {
    const error = TestLedger.load(PROBE).invokeError(alice, "byte_list", [bytes(v.encoded)]);
    expect(error.code).toBe("CONTRACT_ERROR");
    expect(error.message).toBe(v.error);
  });
});

describe("error names (node/api/vectors/codes.json)", () => {
  it("every code the harness gives a failed call is a name the node uses", () => {
    // Every member of InvokeErrorCode: `satisfies` makes the type checker name one missing.
    const harness = {
      CONTRACT_ERROR: true,
      FUNCTION_NOT_FOUND: true,
      CONTRACT_TRAP: true,
      ABI_VIOLATION: true,
    } satisfies Record<InvokeErrorCode, true>;
    const names = load<Codes>("codes.json").error_names;
    for (const code of Object.keys(harness)) expect(names).toContain(code);
  });
});

// The AssemblyScript token (contracts/examples-as/token) through the harness: the same
// calls, results, events, errors and state layout as the Rust token's unit tests
// (contracts/examples/token/src/lib.rs).

import { describe, expect, it } from "vitest";
import { Identity, TestLedger, compositeKey } from "@runnel/contract/testing";
import { example } from "./paths";

const admin = new Identity("Org1", "admin", "minter");
const alice = new Identity("Org1", "client", "alice");
const bob = new Identity("Org2", "client", "bob");
const U64_MAX = "18446744073709551615";

const token = () => TestLedger.load(example("token"));
const balance = (ledger: TestLedger, account: string) => ledger.evaluate(alice, "balance", [account]).text();
const supply = (ledger: TestLedger) => ledger.evaluate(alice, "total_supply").text();

/** A ledger where alice holds 100. */
function funded(): TestLedger {
  const ledger = token();
  ledger.invoke(admin, "mint", ["Org1/alice", "100"]);
  return ledger;
}

describe("token", () => {
  it("exports the Rust token's functions", () => {
    expect(token().functions).toEqual(["balance", "mint", "total_supply", "transfer", "whoami"]);
  });

  it("admin mints into an account under a composite key", () => {
    const ledger = funded();
    expect(balance(ledger, "Org1/alice")).toBe("100");
    expect(supply(ledger)).toBe("100");
    expect(ledger.getText(compositeKey("balance", ["Org1/alice"]))).toBe("100");
    expect(ledger.getText("total_supply")).toBe("100");
    expect(ledger.events()[0].name).toBe("Transfer");
    expect(ledger.events()[0].text()).toBe('{"from":null,"to":"Org1/alice","amount":100}');
  });

  it("records the reads and writes of a mint", () => {
    const mint = token().invoke(admin, "mint", ["Org1/alice", "100"]);
    const dec = new TextDecoder();
    expect(mint.rwset.reads.map((r) => [dec.decode(r.key), r.version])).toEqual([
      ["\0balance\0Org1/alice\0", null],
      ["total_supply", null],
    ]);
    expect(mint.rwset.writes.map((w) => [dec.decode(w.key), dec.decode(w.value)])).toEqual([
      ["\0balance\0Org1/alice\0", "100"],
      ["total_supply", "100"],
    ]);
  });

  it("only admins mint", () => {
    const ledger = token();
    const error = ledger.invokeError(alice, "mint", ["Org1/alice", "100"]);
    expect(error.code).toBe("CONTRACT_ERROR");
    expect(error.message).toBe('mint: only role "admin" may mint; Org1/alice has role "client"');
    expect(ledger.isEmpty()).toBe(true);
    expect(ledger.events()).toEqual([]);
  });

  it("transfer moves tokens from the caller", () => {
    const ledger = funded();
    const response = ledger.invoke(alice, "transfer", ["Org2/bob", "30"]);
    expect(response.text()).toBe("null");
    expect(balance(ledger, "Org1/alice")).toBe("70");
    expect(balance(ledger, "Org2/bob")).toBe("30");
    expect(supply(ledger)).toBe("100");
    expect(response.events[0].text()).toBe('{"from":"Org1/alice","to":"Org2/bob","amount":30}');
    expect(ledger.events().length).toBe(2);
    expect(ledger.version(compositeKey("balance", ["Org2/bob"]))).toBe(2);
  });

  it("a transfer of the whole balance leaves zero", () => {
    const ledger = funded();
    ledger.invoke(alice, "transfer", ["Org2/bob", "100"]);
    expect(balance(ledger, "Org1/alice")).toBe("0");
    ledger.invoke(bob, "transfer", ["Org1/alice", "100"]);
    expect(balance(ledger, "Org2/bob")).toBe("0");
    expect(balance(ledger, "Org1/alice")).toBe("100");
  });

  it("a transfer to oneself keeps the balance and reads it once", () => {
    const ledger = funded();
    const response = ledger.invoke(alice, "transfer", ["Org1/alice", "40"]);
    expect(balance(ledger, "Org1/alice")).toBe("100");
    expect(supply(ledger)).toBe("100");
    expect(response.rwset.reads.length).toBe(1);
    expect(response.rwset.writes.length).toBe(1);
  });

  it("insufficient balances are refused", () => {
    const ledger = funded();
    expect(ledger.invokeError(alice, "transfer", ["Org2/bob", "101"]).message).toBe(
      "insufficient balance: have 100, need 101",
    );
    expect(ledger.invokeError(bob, "transfer", ["Org1/alice", "1"]).message).toBe(
      "insufficient balance: have 0, need 1",
    );
    expect(balance(ledger, "Org1/alice")).toBe("100");
    expect(balance(ledger, "Org2/bob")).toBe("0");
    expect(ledger.events().length).toBe(1);
  });

  it("zero amounts are refused", () => {
    const ledger = funded();
    expect(ledger.invokeError(alice, "transfer", ["Org2/bob", "0"]).message).toBe(
      "transfer: amount must be greater than 0",
    );
    expect(ledger.invokeError(admin, "mint", ["Org2/bob", "0"]).message).toBe("mint: amount must be greater than 0");
  });

  it("overflow is refused", () => {
    const ledger = token();
    ledger.invoke(admin, "mint", ["Org1/alice", U64_MAX]);
    expect(ledger.invokeError(admin, "mint", ["Org2/bob", "1"]).message).toBe("mint: the total supply would overflow");
    expect(balance(ledger, "Org2/bob")).toBe("0");
    expect(supply(ledger)).toBe(U64_MAX);
  });

  it("bad arguments are refused with the Rust SDK's messages", () => {
    const ledger = funded();
    const cases: [Identity, string, string[], string][] = [
      [alice, "transfer", ["Org2/bob", "ten"], "transfer: argument 2 (amount): invalid digit found in string"],
      [alice, "transfer", ["Org2/bob", "-5"], "transfer: argument 2 (amount): invalid value: integer `-5`, expected u64 at line 1 column 2"],
      [alice, "transfer", ["Org2/bob", '"100"'], 'transfer: argument 2 (amount): invalid type: string "100", expected u64 at line 1 column 5'],
      [alice, "transfer", ["Org2/bob", ""], "transfer: argument 2 (amount): cannot parse integer from empty string"],
      [alice, "transfer", ["Org2/bob", "1.5"], "transfer: argument 2 (amount): invalid type: floating point `1.5`, expected u64 at line 1 column 3"],
      [alice, "transfer", ["Org2/bob", "true"], "transfer: argument 2 (amount): invalid type: boolean `true`, expected u64 at line 1 column 4"],
      [alice, "transfer", ["Org2/bob", "18446744073709551616"], "transfer: argument 2 (amount): invalid type: floating point `18446744073709551616.0`, expected u64 at line 1 column 20"],
      [alice, "transfer", ["Org2/bob"], "transfer: expected 2 arguments, got 1"],
      [alice, "transfer", ["", "5"], "the account must not be empty"],
      [alice, "balance", [], "balance: expected 1 argument, got 0"],
    ];
    for (const [who, fn, args, message] of cases) {
      expect(ledger.invokeError(who, fn, args).message, args.join(" ")).toBe(message);
    }
    const error = ledger.invokeError(admin, "mint", ["a\u0000b", "5"]);
    expect(error.message).toBe('composite key: "a\\0b" contains U+0000, which is not allowed in a key part');
    expect(balance(ledger, "Org1/alice")).toBe("100");
  });

  it("takes JSON and raw text alike", () => {
    const ledger = token();
    ledger.invoke(admin, "mint", ['"Org1/alice"', " 7 "]);
    ledger.invoke(admin, "mint", ["Org1/alice", "+3"]);
    ledger.invoke(admin, "mint", ["Org1/alice", "007"]);
    expect(balance(ledger, "Org1/alice")).toBe("17");
  });

  it("whoami is org/name", () => {
    expect(token().evaluate(bob, "whoami").json()).toBe("Org2/bob");
  });

  it("unknown accounts have nothing", () => {
    const ledger = token();
    expect(balance(ledger, "Org9/nobody")).toBe("0");
    expect(supply(ledger)).toBe("0");
  });

  it("a balance that is not the expected JSON is reported with its key", () => {
    const ledger = token();
    ledger.putBytes(compositeKey("balance", ["Org1/alice"]), "lots");
    expect(ledger.invokeError(alice, "balance", ["Org1/alice"]).message).toBe(
      'the value of key "\\0balance\\0Org1/alice\\0" is not the expected JSON: expected value at line 1 column 1',
    );
  });
});

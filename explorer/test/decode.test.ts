import { create, toBinary } from "@bufbuild/protobuf";
import { txProto } from "@runnel/sdk";
import { describe, expect, test } from "vitest";
import { decodeProposal, UNDECODABLE } from "../src/model/decode";
import { bytesPreview } from "../src/model/format";

const utf8 = (text: string) => new TextEncoder().encode(text);

function signedTransaction(contract: string, fn: string, args: Uint8Array[]): Uint8Array {
  const proposal = toBinary(txProto.ProposalSchema, create(txProto.ProposalSchema, { channel: "main", contract, function: fn, args }));
  const transaction = toBinary(txProto.TransactionSchema, create(txProto.TransactionSchema, { proposal: { proposal } }));
  return toBinary(txProto.SignedTransactionSchema, create(txProto.SignedTransactionSchema, { transaction }));
}

describe("decodeProposal", () => {
  test("a transaction's contract, function and arguments, text or hex", () => {
    const bytes = signedTransaction("kv", "put", [utf8("greeting"), new Uint8Array([0, 1, 2])]);
    expect(decodeProposal(bytes)).toEqual({ contract: "kv", fn: "put", args: ["greeting", "0x000102"] });
  });

  test("a deploy shows the contract's name, version and module size, not the module", () => {
    const request = toBinary(txProto.DeployRequestSchema, create(txProto.DeployRequestSchema, { name: "kv", version: "1.2.0", code: new Uint8Array(93_095) }));
    expect(decodeProposal(signedTransaction("_lifecycle", "deploy", [request]))).toEqual({
      contract: "_lifecycle",
      fn: "deploy",
      args: ["kv", "1.2.0", "93,095 bytes of Wasm"],
    });
  });

  test("bytes that are not a transaction decode to the placeholder", () => {
    expect(decodeProposal(new Uint8Array([0xff, 0xff, 0xff]))).toBe(UNDECODABLE);
  });

  test("a long argument is cut, with its size", () => {
    expect(bytesPreview(utf8("x".repeat(500)), 10)).toBe("xxxxx… (500 bytes)");
  });
});

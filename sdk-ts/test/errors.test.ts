/** Failures, each as the typed error a Fabric developer expects, against a real node. */

import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { describe, expect, inject, test } from "vitest";
import {
  Code,
  CommitError,
  CommitStatusError,
  connect,
  EndorseError,
  EvaluateError,
  loadNetworkIdentity,
  newNodeCryptoSigner,
  SubmitError,
  txProto,
  type Protocol,
} from "../src/index.js";
import { freePort, RUNNEL_CONTRACTS } from "./node.js";
import { CHANNEL, gatewayAs, uniqueKey } from "./helpers.js";

describe("a contract's own error", () => {
  test("is an EndorseError carrying the contract's message", async () => {
    using gateway = await gatewayAs();
    const token = gateway.getNetwork(CHANNEL).getContract("token");
    const error = await token.submitTransaction("transfer", "Org1/nobody", "5").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EndorseError);
    const endorse = error as EndorseError;
    expect(endorse.errorName).toBe("CONTRACT_ERROR");
    expect(endorse.grpcCode).toBe(Code.FailedPrecondition);
    expect(endorse.nodeMessage).toContain("insufficient balance: have 0, need 5");
    expect(endorse.message).toContain("insufficient balance");
    expect(endorse.transactionId).toMatch(/^[0-9a-f]{64}$/);
    expect(endorse.unreachable).toBe(false);
  });

  test("an evaluation's is an EvaluateError; a missing function or contract is named", async () => {
    using gateway = await gatewayAs();
    const network = gateway.getNetwork(CHANNEL);
    await expect(network.getContract("kv").evaluateTransaction("get")).rejects.toSatisfy(
      (e) => e instanceof EvaluateError && e.nodeMessage.includes("get: expected 1 argument, got 0"),
    );
    await expect(network.getContract("kv").evaluateTransaction("nope")).rejects.toMatchObject({
      errorName: "FUNCTION_NOT_FOUND",
      grpcCode: Code.NotFound,
    });
    await expect(network.getContract("missing").submitTransaction("f")).rejects.toSatisfy(
      (e) => e instanceof EndorseError && e.errorName === "CONTRACT_NOT_FOUND" && e.validationCode === "CONTRACT_NOT_FOUND",
    );
  });
});

describe("MVCC", () => {
  test("two transfers endorsed on the same balance: the second is CommitError MVCC_READ_CONFLICT", async () => {
    using admin = await gatewayAs("admin");
    using client = await gatewayAs("client");
    const me = JSON.parse(new TextDecoder().decode(
      await client.getNetwork(CHANNEL).getContract("token").evaluateTransaction("whoami"),
    )) as string;
    await admin.getNetwork(CHANNEL).getContract("token").submitTransaction("mint", me, "100");
    const token = client.getNetwork(CHANNEL).getContract("token");
    // Both read the same version of the balance before either commits.
    const first = await (await token.newProposal("transfer", { arguments: ["Org1/alice", "1"] })).endorse();
    const second = await (await token.newProposal("transfer", { arguments: ["Org1/bob", "1"] })).endorse();
    const firstStatus = await (await first.submit()).getStatus();
    expect(firstStatus.codeName).toBe("VALID");
    const secondStatus = await (await second.submit()).getStatus();
    expect(secondStatus.successful).toBe(false);
    expect(secondStatus.codeName).toBe("MVCC_READ_CONFLICT");

    // And through submit, which throws: endorse two concurrently on the same state.
    const results = await Promise.allSettled([
      token.submitTransaction("transfer", "Org1/carol", "1"),
      token.submitTransaction("transfer", "Org1/dave", "1"),
      token.submitTransaction("transfer", "Org1/erin", "1"),
    ]);
    const failures = results.filter((r) => r.status === "rejected").map((r) => (r as PromiseRejectedResult).reason);
    expect(results.some((r) => r.status === "fulfilled")).toBe(true);
    for (const failure of failures) {
      expect(failure).toBeInstanceOf(CommitError);
      expect((failure as CommitError).code).toBe("MVCC_READ_CONFLICT");
      expect((failure as CommitError).transactionId).toMatch(/^[0-9a-f]{64}$/);
    }
  });
});

describe("endorsement policy", () => {
  test("a policy no set of this network's peers satisfies: EndorseError ENDORSEMENT_POLICY_FAILURE", async () => {
    using admin = await gatewayAs("admin");
    const name = `kv_two_${Math.random().toString(36).slice(2, 8)}`;
    const code = new Uint8Array(await readFile(join(RUNNEL_CONTRACTS, "kv.wasm")));
    const deployed = await admin.deployContract(CHANNEL, { name, code, policy: "AND('Org1.peer', 'Org1.peer')" });
    expect(deployed.definition.name).toBe(name);
    expect(deployed.status.successful).toBe(true);
    using client = await gatewayAs();
    const error = await client.getNetwork(CHANNEL).getContract(name).submitTransaction("put", "k", "v").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EndorseError);
    expect((error as EndorseError).errorName).toBe("ENDORSEMENT_POLICY_FAILURE");
    expect((error as EndorseError).validationCode).toBe("ENDORSEMENT_POLICY_FAILURE");
  });

  test("a transaction stripped of its endorsements is refused before it is ordered: SubmitError NOT_ENDORSED", async () => {
    const dir = inject("runnelDir");
    const { identity, signer } = await loadNetworkIdentity(dir, "Org1", "client");
    using gateway = connect({ url: inject("runnelUrl"), identity });
    const kv = gateway.getNetwork(CHANNEL).getContract("kv");
    const unsigned = await kv.newProposal("put", { arguments: [uniqueKey("stripped"), "v"] });
    const endorsed = await (await gateway.newSignedProposal(unsigned.getBytes(), await signer(unsigned.getDigest()))).endorse();
    const decoded = fromBinary(txProto.TransactionSchema, endorsed.getBytes());
    const stripped = toBinary(txProto.TransactionSchema, create(txProto.TransactionSchema, { ...decoded, endorsements: [] }));
    const unsignedTx = await gateway.newTransaction(stripped);
    const transaction = await gateway.newSignedTransaction(stripped, await signer(unsignedTx.getDigest()));
    // Nothing vouches for it: the peer refuses it before it queues, and nothing is stored
    // (one ordered anyway is ENDORSEMENT_POLICY_FAILURE on every peer: the Rust tests).
    const error = await transaction.submit().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SubmitError);
    expect((error as SubmitError).errorName).toBe("NOT_ENDORSED");
    expect((error as SubmitError).transactionId).toBe(transaction.getTransactionId());
  });
});

describe("refused requests", () => {
  test("a signature by another key: EndorseError BAD_CREATOR_SIGNATURE", async () => {
    const dir = inject("runnelDir");
    const { identity } = await loadNetworkIdentity(dir, "Org1", "client");
    const { signer: peerSigner } = await loadNetworkIdentity(dir, "Org1", "peer");
    using gateway = connect({ url: inject("runnelUrl"), identity, signer: peerSigner });
    const error = await gateway.getNetwork(CHANNEL).getContract("kv").submitTransaction("put", "k", "v").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EndorseError);
    expect((error as EndorseError).grpcCode).toBe(Code.Unauthenticated);
    expect((error as EndorseError).validationCode).toBe("BAD_CREATOR_SIGNATURE");
  });

  test("a replayed transaction: SubmitError DUPLICATE_TXID", async () => {
    using gateway = await gatewayAs();
    const kv = gateway.getNetwork(CHANNEL).getContract("kv");
    const transaction = await (await kv.newProposal("put", { arguments: [uniqueKey("replay"), "v"] })).endorse();
    await (await transaction.submit()).getStatus();
    const error = await transaction.submit().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SubmitError);
    expect((error as SubmitError).validationCode).toBe("DUPLICATE_TXID");
    expect((error as SubmitError).transactionId).toBe(transaction.getTransactionId());
  });

  test("the node's signer from node:crypto signs what the node accepts", async () => {
    const dir = inject("runnelDir");
    const { identity } = await loadNetworkIdentity(dir, "Org1", "client");
    const key = await readFile(join(dir, "identities", "Org1", "client.key"), "utf8");
    using gateway = connect({ url: inject("runnelUrl"), identity, signer: newNodeCryptoSigner(key) });
    const kv = gateway.getNetwork(CHANNEL).getContract("kv");
    await expect(kv.submitTransaction("put", uniqueKey("nodecrypto"), "v")).resolves.toBeInstanceOf(Uint8Array);
  });
});

describe("malformed and oversized input", () => {
  test("bytes that are not a proposal or transaction are refused before any call", async () => {
    using gateway = await gatewayAs();
    const garbage = new Uint8Array([0xff, 0xff, 0xff, 0xff]);
    await expect(gateway.newProposal(garbage)).rejects.toThrow(/not an encoded Proposal/);
    await expect(gateway.newSignedTransaction(garbage, new Uint8Array(64))).rejects.toThrow(/not an encoded Transaction/);
  });

  test("a URL that is not http(s) is refused at connect", async () => {
    const { identity } = await loadNetworkIdentity(inject("runnelDir"), "Org1", "client");
    expect(() => connect({ url: "127.0.0.1:7051", identity })).toThrow(/http:\/\/ or https:\/\//);
  });

  test("arguments over the node's limit: EndorseError ARGS_TOO_LARGE; nothing is ordered", async () => {
    using gateway = await gatewayAs();
    const kv = gateway.getNetwork(CHANNEL).getContract("kv");
    const key = uniqueKey("oversized");
    const error = await kv.submitTransaction("put", key, "x".repeat(3 * 1024 * 1024)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EndorseError);
    expect((error as EndorseError).errorName).toBe("ARGS_TOO_LARGE");
    expect((error as EndorseError).grpcCode).toBe(Code.InvalidArgument);
    expect((await gateway.getQuery().getKey("kv", key)).found).toBe(false);
  });

  test("a malformed transaction id: CommitStatusError BAD_TX_ID", async () => {
    using gateway = await gatewayAs();
    await expect(gateway.newCommit("not hex").getStatus()).rejects.toMatchObject({
      name: "CommitStatusError",
      errorName: "BAD_TX_ID",
      grpcCode: Code.InvalidArgument,
    });
  });
});

describe("deadlines and cancellation", () => {
  test.each<[Protocol, boolean]>([
    ["grpc", true],
    ["grpc", false],
    ["grpc-web", false],
  ])("a status wait past its deadline is a CommitStatusError DEADLINE_EXCEEDED (%s, direct unary: %s)", async (protocol, directUnary) => {
    using gateway = await gatewayAs("client", { protocol, directUnary });
    const never = gateway.newCommit("ab".repeat(32));
    const error = await never.getStatus({ timeoutMs: 300 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CommitStatusError);
    expect((error as CommitStatusError).grpcCode).toBe(Code.DeadlineExceeded);
    expect((error as CommitStatusError).unreachable).toBe(false);
    expect((error as CommitStatusError).transactionId).toBe("ab".repeat(32));
  });

  test.each<Protocol>(["grpc", "grpc-web"])("an aborted signal cancels a waiting call (%s)", async (protocol) => {
    using gateway = await gatewayAs("client", { protocol });
    const abort = new AbortController();
    const waiting = gateway.newCommit("cd".repeat(32)).getStatus({ signal: abort.signal });
    setTimeout(() => abort.abort(), 100);
    await expect(waiting).rejects.toMatchObject({ grpcCode: Code.Canceled });
  });
});

describe("node down", () => {
  test.each(["grpc", "grpc-web"] as const)("over %s: an error that names the URL", async (protocol) => {
    const dir = inject("runnelDir");
    const { identity, signer } = await loadNetworkIdentity(dir, "Org1", "client");
    const url = `http://127.0.0.1:${await freePort()}`;
    using gateway = connect({ url, identity, signer, protocol });
    const contract = gateway.getNetwork(CHANNEL).getContract("kv");
    const error = await contract.submitTransaction("put", "k", "v").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EndorseError);
    const endorse = error as EndorseError;
    expect(endorse.unreachable).toBe(true);
    expect(endorse.grpcCode).toBe(Code.Unavailable);
    expect(endorse.message).toContain(`cannot reach the node at ${url}`);
    expect(endorse.url).toBe(url);
    await expect(contract.evaluateTransaction("get", "k")).rejects.toThrow(`cannot reach the node at ${url}`);
    await expect(gateway.getQuery().getNetworkInfo()).rejects.toThrow(`cannot reach the node at ${url}`);
  });
});

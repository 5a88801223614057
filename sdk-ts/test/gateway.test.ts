/** Happy paths of the gateway API, over both transports, against a real node. */

import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { inject } from "vitest";
import { fromBinary } from "@bufbuild/protobuf";
import {
  connect,
  loadNetworkCas,
  loadNetworkIdentity,
  NO_TRUSTED_CA,
  SubmitError,
  toHex,
  verifyInclusionProof,
  verifySeal,
  type Gateway,
  type Protocol,
} from "../src/index.js";
import * as blockProto from "../src/gen/runnel/v1/block_pb.js";
import { CHANNEL, gatewayAs, json, uniqueKey } from "./helpers.js";
import { initNetwork, networkCaPem } from "./node.js";

describe.each<[string, { protocol: Protocol; directUnary?: boolean }]>([
  ["gRPC, direct unary calls (default)", { protocol: "grpc" }],
  ["gRPC, connect-node unary calls", { protocol: "grpc", directUnary: false }],
  ["gRPC-web through connect-node", { protocol: "grpc-web" }],
])("over %s", (_, options) => {
  let gateway: Gateway;
  beforeAll(async () => {
    gateway = await gatewayAs("client", options);
  });
  afterAll(() => gateway.close());

  test("submitTransaction writes and evaluateTransaction reads it back", async () => {
    const kv = gateway.getNetwork(CHANNEL).getContract("kv");
    const key = uniqueKey("greeting");
    expect(json(await kv.submitTransaction("put", key, "hello, runnel"))).toBeNull();
    expect(json(await kv.evaluateTransaction("get", key))).toBe("hello, runnel");
  });

  test("submit with commitWait validated returns once validated; the write is visible", async () => {
    const kv = gateway.getNetwork(CHANNEL).getContract("kv");
    const key = uniqueKey("validated");
    await kv.submit("put", { arguments: [key, "v"], commitWait: "validated" });
    expect(json(await kv.evaluate("get", { arguments: [key] }))).toBe("v");
  });

  test("submitAsync returns the result and id at once; getStatus waits for durable", async () => {
    const token = gateway.getNetwork(CHANNEL).getContract("token");
    const submitted = await token.submitAsync("whoami");
    expect(json(submitted.getResult())).toBe("Org1/client.Org1");
    const status = await submitted.getStatus();
    expect(status.transactionId).toBe(submitted.getTransactionId());
    expect(status.successful).toBe(true);
    expect(status.codeName).toBe("VALID");
    expect(status.phase).toBe("durable");
    expect(status.seq).toBeGreaterThan(0n);
    const validated = await submitted.getStatus({ wait: "validated" });
    expect(validated.seq).toBe(status.seq);
  });

  test("newProposal -> endorse -> submit -> getStatus, with one transaction id throughout", async () => {
    const kv = gateway.getNetwork(CHANNEL).getContract("kv");
    const key = uniqueKey("steps");
    const proposal = await kv.newProposal("put", { arguments: [key, "1"] });
    const id = proposal.getTransactionId();
    // Evaluating a proposal runs it without ordering it.
    expect(json(await proposal.evaluate())).toBeNull();
    expect(json(await kv.evaluateTransaction("get", key))).toBeNull();
    expect(id).toMatch(/^[0-9a-f]{64}$/);
    const transaction = await proposal.endorse();
    expect(transaction.getTransactionId()).toBe(id);
    const commit = await transaction.submit();
    expect(commit.getTransactionId()).toBe(id);
    const status = await commit.getStatus();
    expect(status).toMatchObject({ transactionId: id, codeName: "VALID", successful: true });
    // Another client can ask for the same status by id.
    expect((await gateway.newCommit(id).getStatus()).seq).toBe(status.seq);
    expect(json(await kv.evaluateTransaction("get", key))).toBe("1");
    const network = gateway.getNetwork(CHANNEL);
    expect(network.getName()).toBe(CHANNEL);
    expect(network.getGateway()).toBe(gateway);
    expect(kv.getContractName()).toBe("kv");
    expect(gateway.getIdentity().org).toBe("Org1");
    expect(gateway.getUrl()).toBe(inject("runnelUrl"));
  });

  test("submitAndWait submits and answers with the status in one call", async () => {
    const kv = gateway.getNetwork(CHANNEL).getContract("kv");
    const key = uniqueKey("one-call");
    const transaction = await (await kv.newProposal("put", { arguments: [key, "1"] })).endorse();
    const status = await transaction.submitAndWait();
    expect(status).toMatchObject({ transactionId: transaction.getTransactionId(), codeName: "VALID", phase: "durable" });
    expect(json(await kv.evaluateTransaction("get", key))).toBe("1");
    // The same bytes again: refused as a duplicate, a SubmitError naming the transaction.
    const again = await transaction.submitAndWait({ wait: "validated" }).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(SubmitError);
    expect((again as SubmitError).transactionId).toBe(transaction.getTransactionId());
  });

  test("many concurrent submits on one gateway all commit, each with its own result", async () => {
    const kv = gateway.getNetwork(CHANNEL).getContract("kv");
    const keys = Array.from({ length: 40 }, (_, i) => uniqueKey(`concurrent-${i}`));
    await Promise.all(keys.map((key) => kv.submitTransaction("put", key, key)));
    const values = await Promise.all(keys.map(async (key) => json(await kv.evaluateTransaction("get", key))));
    expect(values).toEqual(keys);
  });

  test("trace(txId) has every stage in flow order", async () => {
    const kv = gateway.getNetwork(CHANNEL).getContract("kv");
    const submitted = await kv.submitAsync("put", { arguments: [uniqueKey("trace"), "x"] });
    await submitted.getStatus();
    // The node completes a trace just after it answers the status (NOTIFIED is the last
    // stage): read until it is complete.
    let trace = await gateway.trace(submitted.getTransactionId());
    for (let i = 0; i < 50 && trace.stages.at(-1)?.stage !== "NOTIFIED"; i++) {
      await new Promise((done) => setTimeout(done, 20));
      trace = await gateway.trace(submitted.getTransactionId());
    }
    expect(trace.transactionId).toBe(submitted.getTransactionId());
    const stages = trace.stages.map((s) => s.stage);
    expect(stages).toEqual(
      expect.arrayContaining(["ENDORSE_START", "ENDORSE_END", "ORDERED", "VALIDATED", "COMMITTED"]),
    );
    const times = trace.stages.map((s) => s.atUs);
    expect([...times].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))).toEqual(times);
  });
});

describe("offline signing", () => {
  test("a gateway without a signer: sign the digests elsewhere and the node accepts them", async () => {
    const dir = inject("runnelDir");
    const { identity, signer } = await loadNetworkIdentity(dir, "Org1", "client");
    using gateway = connect({ url: inject("runnelUrl"), identity });
    const kv = gateway.getNetwork(CHANNEL).getContract("kv");
    const key = uniqueKey("offline");
    const unsigned = await kv.newProposal("put", { arguments: [key, "signed offline"] });
    await expect(unsigned.endorse()).rejects.toThrow(/no signer/);

    // The bytes alone carry the proposal, e.g. to a signing service and back.
    const carried = await gateway.newProposal(unsigned.getBytes());
    expect(carried.getTransactionId()).toBe(unsigned.getTransactionId());
    expect(carried.getDigest()).toEqual(unsigned.getDigest());
    const proposal = await gateway.newSignedProposal(carried.getBytes(), await signer(carried.getDigest()));
    expect(proposal.getTransactionId()).toBe(unsigned.getTransactionId());
    const endorsed = await proposal.endorse();
    const transaction = await gateway.newSignedTransaction(endorsed.getBytes(), await signer(endorsed.getDigest()));
    expect(transaction.getTransactionId()).toBe(unsigned.getTransactionId());
    const status = await (await transaction.submit()).getStatus();
    expect(status.successful).toBe(true);

    const reader = await gatewayAs();
    expect(json(await reader.getNetwork(CHANNEL).getContract("kv").evaluateTransaction("get", key))).toBe(
      "signed offline",
    );
    reader.close();
  });
});

describe("queries", () => {
  test("key, key history, transaction, block, contracts, network info, state hash", async () => {
    using gateway = await gatewayAs();
    const kv = gateway.getNetwork(CHANNEL).getContract("kv");
    const query = gateway.getQuery();
    const key = uniqueKey("history");
    const first = await kv.submitAsync("put", { arguments: [key, "one"] });
    const firstStatus = await first.getStatus();
    const second = await kv.submitAsync("put", { arguments: [key, "two"] });
    const secondStatus = await second.getStatus();

    const value = await query.getKey("kv", key);
    expect(value.found).toBe(true);
    expect(new TextDecoder().decode(value.value)).toBe("two");
    expect(value.version).toBe(secondStatus.seq);
    expect((await query.getKey("kv", uniqueKey("absent"))).found).toBe(false);

    const history = await query.getKeyHistory("kv", key);
    expect(history.map((h) => h.transactionId)).toEqual([second.getTransactionId(), first.getTransactionId()]);
    expect(history.map((h) => new TextDecoder().decode(h.value))).toEqual(["two", "one"]);
    const older = await query.getKeyHistory("kv", key, { beforeSeq: secondStatus.seq });
    expect(older.map((h) => h.seq)).toEqual([firstStatus.seq]);

    const detail = await query.getTransaction(first.getTransactionId());
    expect(detail.codeName).toBe("VALID");
    expect(detail.seq).toBe(firstStatus.seq);
    expect(detail.proposal?.contract).toBe("kv");
    expect(detail.proposal?.function).toBe("put");
    expect(detail.creator?.role).toBe("client");

    const contracts = await query.listContracts();
    expect(contracts.map((c) => c.name)).toEqual(expect.arrayContaining(["basic", "kv", "token"]));
    expect(contracts.find((c) => c.name === "kv")?.codeHash).toMatch(/^[0-9a-f]{64}$/);

    const info = await query.getNetworkInfo();
    expect(info.channel).toBe(CHANNEL);
    expect(info.orgs).toEqual(["Org1"]);
    expect(info.committedHeight).toBeGreaterThanOrEqual(secondStatus.seq);

    const hash = await query.getStateHash();
    expect(hash.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(hash.keys).toBeGreaterThan(0n);

    // Blocks seal behind the stream: wait for the one holding our transaction.
    const blocks = await gateway.getNetwork(CHANNEL).getBlockEvents({ startBlock: 1n, withTransactions: true });
    let holding;
    for await (const block of blocks) {
      if (block.lastSeq >= firstStatus.seq) {
        holding = block;
        break;
      }
    }
    expect(holding).toBeDefined();
    const fetched = await query.getBlock(holding!.number);
    expect(fetched.hash).toBe(holding!.hash);
    expect(fetched.transactions.some((t) => t.transactionId === first.getTransactionId())).toBe(true);
    await expect(query.getBlock(1_000_000_000n)).rejects.toMatchObject({ errorName: "BLOCK_NOT_FOUND" });

    // Checked against the network's CAs, read from the node's own directory (not from it).
    const trustedCas = await loadNetworkCas(inject("runnelDir"));
    const sealCheck = await verifySeal(fetched, { trustedCas });
    expect(sealCheck).toMatchObject({ valid: true, ordererOrg: "Org1" });
    expect(toHex(sealCheck.orderer)).toBe(toHex(fromBinary(blockProto.SignedSealSchema, fetched.signedSeal).signatures[0]!.orderer));
    expect(await verifySeal(fetched, { trustedCas: [networkCaPem(inject("runnelDir"))] })).toMatchObject({ valid: true });
    const proof = await query.getInclusionProof(first.getTransactionId());
    expect(proof.seq).toBe(firstStatus.seq);
    expect(proof.block.hash).toBe(holding!.hash);
    const check = await verifyInclusionProof(proof, first.getTransactionId(), { trustedCas });
    expect(check).toMatchObject({ valid: true, computedRoot: holding!.txRoot, transactionId: first.getTransactionId() });
    const forged = proof.transaction.slice();
    forged[forged.length - 1]! ^= 1;
    expect(await verifyInclusionProof({ ...proof, transaction: forged }, first.getTransactionId(), { trustedCas })).toMatchObject({ valid: false });
    const otherSeq = proof.seq === proof.block.firstSeq ? proof.block.lastSeq : proof.block.firstSeq;
    if (otherSeq !== proof.seq) {
      expect(await verifyInclusionProof({ ...proof, seq: otherSeq }, first.getTransactionId(), { trustedCas })).toMatchObject({ valid: false });
    }
    // A genuine proof, but of another transaction than the one asked about.
    expect(await verifyInclusionProof(proof, second.getTransactionId(), { trustedCas })).toMatchObject({
      valid: false,
      reason: `the proof is for transaction ${first.getTransactionId()}, not ${second.getTransactionId()}`,
    });
    // Another network's CAs (the same names, keys of their own), or none: never valid.
    const otherNetwork = [networkCaPem(initNetwork(["Org1"]))];
    expect(await verifySeal(fetched, { trustedCas: otherNetwork })).toMatchObject({
      valid: false,
      reason: "the seal's certificate: it is not signed by the trusted CA O=Org1, CN=ca.Org1",
    });
    expect(await verifyInclusionProof(proof, first.getTransactionId(), { trustedCas: otherNetwork })).toMatchObject({ valid: false });
    expect(await verifySeal(fetched, { trustedCas: [] })).toMatchObject({ valid: false, reason: NO_TRUSTED_CA });
    const tamperedSeal = { ...proof.block, signedSeal: proof.block.signedSeal.slice() };
    tamperedSeal.signedSeal[tamperedSeal.signedSeal.length - 1]! ^= 1;
    expect(await verifySeal(tamperedSeal, { trustedCas })).toMatchObject({
      valid: false,
      reason: "the orderer's signature over the seal does not verify",
    });
    await expect(query.getInclusionProof("ab".repeat(32))).rejects.toMatchObject({ errorName: "TX_NOT_SEALED" });
  });

  test("an inclusion proof carries the orderer's timestamp, which the seal covers: altered, it fails", async () => {
    using gateway = await gatewayAs();
    const query = gateway.getQuery();
    const { blockHeight } = await query.getNetworkInfo();
    const submitted = await gateway.getNetwork(CHANNEL).getContract("kv").submitAsync("put", { arguments: [uniqueKey("sealed-time"), "t"] });
    const status = await submitted.getStatus();
    // Blocks seal behind the stream: wait for the one holding it.
    const blocks = await gateway.getNetwork(CHANNEL).getBlockEvents({ startBlock: blockHeight + 1n });
    for await (const block of blocks) {
      if (block.lastSeq >= status.seq) break;
    }
    const id = submitted.getTransactionId();
    const proof = await query.getInclusionProof(id);
    expect(proof.timestampMs).toBe(status.timestampMs);
    const trustedCas = await loadNetworkCas(inject("runnelDir"));
    expect(await verifyInclusionProof(proof, id, { trustedCas })).toMatchObject({ valid: true });
    for (const timestampMs of [proof.timestampMs + 1n, proof.timestampMs - 1n, proof.timestampMs + 86_400_000n, 0n]) {
      expect(await verifyInclusionProof({ ...proof, timestampMs }, id, { trustedCas })).toMatchObject({
        valid: false,
        reason: "the path does not lead to the seal's Merkle root",
      });
    }
  });

  test("block events are consecutive and chained by hash", async () => {
    using gateway = await gatewayAs();
    const kv = gateway.getNetwork(CHANNEL).getContract("kv");
    for (let i = 0; i < 3; i++) await kv.submitTransaction("put", uniqueKey("block"), "x");
    const blocks = await gateway.getNetwork(CHANNEL).getBlockEvents({ startBlock: 1n });
    const seen = [];
    for await (const block of blocks) {
      seen.push(block);
      if (seen.length === 3) break;
    }
    expect(seen.map((b) => b.number)).toEqual([1n, 2n, 3n]);
    expect(seen[1]!.previousHash).toBe(seen[0]!.hash);
    expect(seen[2]!.previousHash).toBe(seen[1]!.hash);
    expect(seen[1]!.firstSeq).toBe(seen[0]!.lastSeq + 1n);
  });

  test("the live trace stream carries the traces of new transactions", async () => {
    using gateway = await gatewayAs();
    const stream = gateway.traceStream();
    const kv = gateway.getNetwork(CHANNEL).getContract("kv");
    // The stream is live only: submit until our transaction's trace shows up.
    const ids = new Set<string>();
    let done = false;
    const submitting = (async () => {
      for (let i = 0; i < 50 && !done; i++) {
        const submitted = await kv.submitAsync("put", { arguments: [uniqueKey("live"), "x"] });
        ids.add(submitted.getTransactionId());
        await submitted.getStatus();
      }
    })();
    let found;
    for await (const trace of stream) {
      if (ids.has(trace.transactionId)) {
        found = trace;
        break;
      }
    }
    done = true;
    await submitting;
    expect(found?.stages.at(-1)?.stage).toBe("NOTIFIED");
  });
});

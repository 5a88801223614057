/**
 * The client signs only the transaction it asked for. A node that answers an endorsement
 * with another transaction (another function or arguments, someone else's proposal,
 * another signature, another id, a payload endorsed for another proposal) gets a
 * `TransactionMismatchError`, and nothing is signed or submitted: first against a fake
 * node in process (each kind of tampering), then against a real node whose answers an
 * interceptor alters on the way back.
 */

import { createHash, generateKeyPairSync } from "node:crypto";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { createRouterTransport, type Interceptor } from "@connectrpc/connect";
import { describe, expect, inject, test } from "vitest";
import {
  connect,
  connectWithTransport,
  loadNetworkIdentity,
  newNodeCryptoSigner,
  proto,
  TransactionMismatchError,
  txProto,
  type Gateway,
  type Signer,
} from "../src/index.js";
import { TRANSACTION_DOMAIN, transactionId } from "../src/tx.js";
import { CHANNEL, uniqueKey } from "./helpers.js";

const sha256 = (data: Uint8Array) => new Uint8Array(createHash("sha256").update(data).digest());

/** A signer that records what it signed. */
function recordingSigner(): { signer: Signer; signed: Uint8Array[] } {
  const key = generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  const inner = newNodeCryptoSigner(key);
  const signed: Uint8Array[] = [];
  return {
    signed,
    signer: async (message) => {
      signed.push(message);
      return inner(message);
    },
  };
}

/** Whether `messages` hold a transaction signature (as opposed to a proposal's). */
function signedATransaction(messages: Uint8Array[]): boolean {
  const domain = Buffer.from(TRANSACTION_DOMAIN);
  return messages.some((message) => Buffer.from(message.subarray(0, domain.length)).equals(domain));
}

/** The pieces of an endorsed transaction, to tamper with. */
interface Endorsed {
  signedProposal: { proposal: Uint8Array; signature: Uint8Array };
  payload: { proposalHash: Uint8Array; result: Uint8Array };
  txId: string;
  result: Uint8Array;
}

/** What a fake node answers an endorsement with: `tamper` of an honest answer. */
type Tamper = (honest: Endorsed) => Endorsed | Promise<Endorsed> | { raw: Uint8Array; txId: string };

function encodeTransaction(endorsed: Endorsed): Uint8Array {
  const payload = toBinary(txProto.ResponsePayloadSchema, create(txProto.ResponsePayloadSchema, endorsed.payload));
  return toBinary(
    txProto.TransactionSchema,
    create(txProto.TransactionSchema, { proposal: endorsed.signedProposal, payload, endorsements: [] }),
  );
}

/** An honest endorsement of `signedProposal`: what a node would return. */
async function honest(signedProposal: { proposal: Uint8Array; signature: Uint8Array }): Promise<Endorsed> {
  const proposal = fromBinary(txProto.ProposalSchema, signedProposal.proposal);
  const result = new TextEncoder().encode('"ok"');
  return {
    signedProposal: { proposal: signedProposal.proposal, signature: signedProposal.signature },
    payload: { proposalHash: sha256(signedProposal.proposal), result },
    txId: await transactionId(proposal.nonce, proposal.creator),
    result,
  };
}

/** A gateway to a fake node in process whose endorsements `tamper` alters; counts submissions. */
function fakeNode(tamper: Tamper) {
  const calls = { submit: 0 };
  const { signer, signed } = recordingSigner();
  const answer = async (signedProposal: { proposal: Uint8Array; signature: Uint8Array } | undefined) => {
    if (signedProposal === undefined) throw new Error("no proposal");
    const tampered = await tamper(await honest(signedProposal));
    if ("raw" in tampered) return { txId: tampered.txId, transaction: tampered.raw, result: new Uint8Array() };
    return { txId: tampered.txId, transaction: encodeTransaction(tampered), result: tampered.result };
  };
  const transport = createRouterTransport(({ service }) => {
    service(proto.Gateway, {
      endorse: async (request) => answer(request.proposal),
      submit: () => {
        calls.submit += 1;
        return { txId: "", seq: 1n };
      },
    });
    service(proto.Admin, {
      deployContract: async (request) => answer(request.proposal),
    });
  });
  const identity = { org: "Org1", credentials: new TextEncoder().encode("client certificate") };
  const gateway = connectWithTransport({ url: "http://fake.test", transport, identity, signer });
  return { gateway, calls, signed, identity };
}

/** Another proposal, as the fake node would make it: `edit` applied to the one sent, re-encoded. */
function otherProposal(sent: Uint8Array, edit: (proposal: txProto.Proposal) => void): Uint8Array {
  const proposal = fromBinary(txProto.ProposalSchema, sent);
  edit(proposal);
  return toBinary(txProto.ProposalSchema, proposal);
}

/** `endorsed` with `proposal` embedded instead, consistently: its hash in the payload and its id. */
async function embedding(endorsed: Endorsed, proposal: Uint8Array, signature = endorsed.signedProposal.signature): Promise<Endorsed> {
  const decoded = fromBinary(txProto.ProposalSchema, proposal);
  return {
    ...endorsed,
    signedProposal: { proposal, signature },
    payload: { ...endorsed.payload, proposalHash: sha256(proposal) },
    txId: await transactionId(decoded.nonce, decoded.creator),
  };
}

const TAMPERINGS: [string, Tamper, RegExp][] = [
  [
    "another function, under the same id",
    (e) => embedding(e, otherProposal(e.signedProposal.proposal, (p) => (p.function = "delete"))),
    /embeds another proposal than the one sent/,
  ],
  [
    "other arguments",
    (e) => embedding(e, otherProposal(e.signedProposal.proposal, (p) => (p.args = [new TextEncoder().encode("mallory")]))),
    /embeds another proposal than the one sent/,
  ],
  [
    "someone else's proposal, with its own signature and id",
    (e) =>
      embedding(
        e,
        otherProposal(e.signedProposal.proposal, (p) => {
          p.creator = new TextEncoder().encode("someone else");
          p.nonce = new Uint8Array(24).fill(9);
        }),
        new Uint8Array(64).fill(7),
      ),
    /embeds another proposal than the one sent/,
  ],
  [
    "another signature of the same proposal",
    (e) => ({ ...e, signedProposal: { ...e.signedProposal, signature: new Uint8Array(64).fill(1) } }),
    /another signature of the proposal/,
  ],
  ["another transaction id", (e) => ({ ...e, txId: "ab".repeat(32) }), /answered with transaction id "abab/],
  [
    "a payload endorsed for another proposal",
    (e) => ({ ...e, payload: { ...e.payload, proposalHash: sha256(new TextEncoder().encode("another proposal")) } }),
    /payload was endorsed for another proposal/,
  ],
  ["another result than the payload's", (e) => ({ ...e, result: new TextEncoder().encode('"rich"') }), /result .* is not the endorsed payload's/],
  ["bytes that are no transaction", (e) => ({ raw: new Uint8Array([0xff, 0xff, 0xff]), txId: e.txId }), /not an encoded Transaction/],
  ["a transaction without its proposal", (e) => ({ raw: new Uint8Array(), txId: e.txId }), /it has no proposal/],
];

describe("a tampered endorsement is refused before signing (a fake node)", () => {
  test("an honest endorsement is signed and submitted", async () => {
    const { gateway, calls, signed } = fakeNode((e) => e);
    const submitted = await gateway.getNetwork(CHANNEL).getContract("kv").submitAsync("put", { arguments: ["k", "v"] });
    expect(new TextDecoder().decode(submitted.getResult())).toBe('"ok"');
    expect(calls.submit).toBe(1);
    expect(signedATransaction(signed)).toBe(true);
  });

  test.each(TAMPERINGS)("%s: TransactionMismatchError, nothing signed or submitted", async (_, tamper, reason) => {
    const { gateway, calls, signed } = fakeNode(tamper);
    const proposal = await gateway.getNetwork(CHANNEL).getContract("kv").newProposal("put", { arguments: ["k", "v"] });
    const error = await proposal.endorse().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransactionMismatchError);
    const mismatch = error as TransactionMismatchError;
    expect(mismatch).toMatchObject({
      code: "TRANSACTION_MISMATCH",
      step: "endorse",
      url: "http://fake.test",
      transactionId: proposal.getTransactionId(),
    });
    expect(mismatch.reason).toMatch(reason);
    expect(mismatch.message).toContain(`endorse of transaction ${proposal.getTransactionId()}: refused to sign`);
    expect(signedATransaction(signed)).toBe(false);
    // The one-call paths fail the same way.
    await expect(gateway.getNetwork(CHANNEL).getContract("kv").submitTransaction("put", "k", "v")).rejects.toBeInstanceOf(
      TransactionMismatchError,
    );
    expect(calls.submit).toBe(0);
    expect(signedATransaction(signed)).toBe(false);
  });

  test("a deploy answered with another transaction is refused too", async () => {
    const { gateway, calls, signed } = fakeNode((e) =>
      embedding(e, otherProposal(e.signedProposal.proposal, (p) => (p.function = "upgrade"))),
    );
    const error = await gateway.deployContract(CHANNEL, { name: "kv", code: new Uint8Array([0, 97, 115, 109]) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransactionMismatchError);
    expect((error as TransactionMismatchError).step).toBe("deploy");
    expect(calls.submit).toBe(0);
    expect(signedATransaction(signed)).toBe(false);
  });
});

describe("offline signing checks the transaction before it hands out a digest", () => {
  /** A gateway without a signer, as in offline signing, and an honest transaction for one of its proposals. */
  async function offline() {
    const { gateway, identity } = fakeNode((e) => e);
    const unsigned = await gateway.getNetwork(CHANNEL).getContract("kv").newProposal("put", { arguments: ["k", "v"] });
    const signature = new Uint8Array(64).fill(3);
    const proposal = await gateway.newSignedProposal(unsigned.getBytes(), signature);
    const endorsed = await honest({ proposal: unsigned.getBytes(), signature });
    return { gateway, identity, proposal, endorsed };
  }

  test("an honest transaction gives its digest, with or without the proposal to compare", async () => {
    const { gateway, proposal, endorsed } = await offline();
    const bytes = encodeTransaction(endorsed);
    const transaction = await gateway.newTransaction(bytes, { proposal });
    expect(transaction.getTransactionId()).toBe(proposal.getTransactionId());
    expect(transaction.getDigest().length).toBeGreaterThan(32);
    expect((await gateway.newSignedTransaction(bytes, new Uint8Array(64))).getTransactionId()).toBe(proposal.getTransactionId());
  });

  test("another proposal than the one given, a payload for another proposal, or another creator is refused", async () => {
    const { gateway, proposal, endorsed } = await offline();
    const other = await embedding(endorsed, otherProposal(endorsed.signedProposal.proposal, (p) => (p.function = "delete")));
    // Consistent in itself and of this gateway's identity: only the proposal given tells it apart.
    await expect(gateway.newTransaction(encodeTransaction(other))).resolves.toBeDefined();
    const refused = await gateway.newTransaction(encodeTransaction(other), { proposal }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(TransactionMismatchError);
    expect(refused).toMatchObject({ step: "transaction", url: "", transactionId: proposal.getTransactionId() });
    const resigned = { ...endorsed, signedProposal: { ...endorsed.signedProposal, signature: new Uint8Array(64).fill(4) } };
    await expect(gateway.newSignedTransaction(encodeTransaction(resigned), new Uint8Array(64), { proposal })).rejects.toThrow(
      /another signature of the proposal/,
    );
    const badPayload = { ...endorsed, payload: { ...endorsed.payload, proposalHash: new Uint8Array(32) } };
    await expect(gateway.newTransaction(encodeTransaction(badPayload))).rejects.toThrow(/payload was endorsed for another proposal/);
    await expect(gateway.newSignedTransaction(encodeTransaction(badPayload), new Uint8Array(64))).rejects.toBeInstanceOf(
      TransactionMismatchError,
    );
    const someoneElses = await embedding(
      endorsed,
      otherProposal(endorsed.signedProposal.proposal, (p) => (p.creator = new TextEncoder().encode("someone else"))),
    );
    await expect(gateway.newTransaction(encodeTransaction(someoneElses))).rejects.toThrow(/creator is not this gateway's identity/);
  });
});

describe("against a real node whose Endorse answers are altered on the way back", () => {
  /** An interceptor that, while `replace` is set, rewrites Endorse answers with it; counts Submit calls. */
  function altering() {
    const state: {
      replace: ((answer: proto.EndorseResponse) => proto.EndorseResponse) | undefined;
      submits: number;
    } = { replace: undefined, submits: 0 };
    const interceptor: Interceptor = (next) => async (request) => {
      if (request.method.name === "Submit") state.submits += 1;
      const response = await next(request);
      if (request.method.name !== "Endorse" || response.stream || state.replace === undefined) return response;
      return { ...response, message: state.replace(response.message as proto.EndorseResponse) };
    };
    return { state, interceptor };
  }

  async function gateway(interceptor: Interceptor): Promise<Gateway> {
    const { identity, signer } = await loadNetworkIdentity(inject("runnelDir"), "Org1", "client");
    return connect({ url: inject("runnelUrl"), identity, signer, interceptors: [interceptor] });
  }

  async function notFound(client: Gateway, id: string): Promise<void> {
    await expect(client.getQuery().getTransaction(id)).rejects.toMatchObject({ errorName: "TX_NOT_FOUND" });
  }

  test("an earlier endorsed proposal handed back for a new one: refused, and neither is ordered", async () => {
    const { state, interceptor } = altering();
    using client = await gateway(interceptor);
    const kv = client.getNetwork(CHANNEL).getContract("kv");
    // A transaction the client had endorsed and then dropped: the node keeps it...
    const evilKey = uniqueKey("dropped");
    const dropped = await (await kv.newProposal("put", { arguments: [evilKey, "taken"] })).endorse();
    // ...and answers the next endorsement with it, hoping for a signature.
    state.replace = (answer) => ({ ...answer, txId: dropped.getTransactionId(), transaction: dropped.getBytes() });
    const key = uniqueKey("asked");
    const error = await kv.submitTransaction("put", key, "asked for").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransactionMismatchError);
    const mismatch = error as TransactionMismatchError;
    expect(mismatch.code).toBe("TRANSACTION_MISMATCH");
    expect(mismatch.url).toBe(inject("runnelUrl"));
    expect(mismatch.reason).toBe("it embeds another proposal than the one sent");
    expect(mismatch.transactionId).not.toBe(dropped.getTransactionId());
    expect(state.submits).toBe(0);
    state.replace = undefined;
    await notFound(client, mismatch.transactionId);
    await notFound(client, dropped.getTransactionId());
    expect((await client.getQuery().getKey("kv", evilKey)).found).toBe(false);
    expect((await client.getQuery().getKey("kv", key)).found).toBe(false);
  });

  test("the node's own transaction with its payload's proposal hash altered: refused, nothing ordered", async () => {
    const { state, interceptor } = altering();
    using client = await gateway(interceptor);
    state.replace = (answer) => {
      const transaction = fromBinary(txProto.TransactionSchema, answer.transaction);
      const payload = fromBinary(txProto.ResponsePayloadSchema, transaction.payload);
      payload.proposalHash = new Uint8Array(32);
      transaction.payload = toBinary(txProto.ResponsePayloadSchema, payload);
      return { ...answer, transaction: toBinary(txProto.TransactionSchema, transaction) };
    };
    const proposal = await client.getNetwork(CHANNEL).getContract("kv").newProposal("put", { arguments: [uniqueKey("hash"), "v"] });
    await expect(proposal.endorse()).rejects.toThrow(/payload was endorsed for another proposal/);
    expect(state.submits).toBe(0);
    await notFound(client, proposal.getTransactionId());
  });
});

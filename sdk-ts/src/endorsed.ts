/**
 * The check a client makes before it signs an endorsed transaction. A node answers
 * `Endorse` (and `DeployContract`, `UpgradeContract`) with the encoded `Transaction` the
 * client is to sign; the client's signature is what makes it valid, so a broken or hostile
 * node could get a client to sign something else: another function or arguments, a
 * proposal the client only evaluated, or someone else's proposal. The SDK signs only a
 * transaction that embeds byte for byte the `SignedProposal` it sent, under that
 * proposal's id, with a payload endorsed for that proposal (`proposal_hash`, see
 * node/proto/runnel/v1/transaction.proto). It never checks the endorsements themselves:
 * the validator does, and a transaction without enough of them is recorded as invalid.
 */

import { fromBinary } from "@bufbuild/protobuf";
import { toHex } from "./bytes.js";
import { sha256 } from "./crypto.js";
import { ProposalSchema, ResponsePayloadSchema, TransactionSchema } from "./gen/runnel/v1/transaction_pb.js";
import { transactionId } from "./tx.js";

/** An encoded `Transaction`, decoded as far as the check needs. */
export interface EndorsedTransaction {
  /** The id of the proposal it embeds: `sha256(nonce ‖ creator)`, lowercase hex. */
  readonly transactionId: string;
  /** The embedded `SignedProposal.proposal`: an encoded `Proposal`. */
  readonly proposal: Uint8Array;
  /** The embedded `SignedProposal.signature`. */
  readonly signature: Uint8Array;
  /** The embedded proposal's creator (X.509, DER). */
  readonly creator: Uint8Array;
  /** The payload's `proposal_hash`. */
  readonly proposalHash: Uint8Array;
  /** The payload's result: the function's return value, as endorsed. */
  readonly result: Uint8Array;
}

/** What the client expects the transaction to be: what it sent, and what the node said. */
export interface Expected {
  /** The encoded `Proposal` the client sent. */
  readonly proposal?: Uint8Array;
  /** The signature it sent with it. */
  readonly signature?: Uint8Array;
  /** The proposal's id, as the client computed it. */
  readonly transactionId?: string;
  /** The creator the proposal must have: the gateway's identity. */
  readonly creator?: Uint8Array;
  /** The id the node answered with. */
  readonly answeredId?: string;
  /** The result the node answered with, beside the transaction. */
  readonly answeredResult?: Uint8Array;
}

/**
 * Decodes an encoded `Transaction` down to its proposal and payload.
 *
 * @throws TypeError if the bytes, its proposal or its payload do not decode, or it has no proposal.
 */
export async function readTransaction(bytes: Uint8Array): Promise<EndorsedTransaction> {
  const transaction = decode("Transaction", () => fromBinary(TransactionSchema, bytes));
  const signed = transaction.proposal;
  if (signed === undefined) throw new TypeError("not an encoded Transaction: it has no proposal");
  const proposal = decode("Transaction's proposal", () => fromBinary(ProposalSchema, signed.proposal));
  const payload = decode("Transaction's payload", () => fromBinary(ResponsePayloadSchema, transaction.payload));
  return {
    transactionId: await transactionId(proposal.nonce, proposal.creator),
    proposal: signed.proposal,
    signature: signed.signature,
    creator: proposal.creator,
    proposalHash: payload.proposalHash,
    result: payload.result,
  };
}

/**
 * Why `transaction` is not what the client expects, or undefined when it is. Checked
 * always: the payload's `proposal_hash` is sha256 of the embedded proposal. Checked for
 * each expectation given: the embedded proposal's bytes, signature, id and creator, the
 * id and the result the node answered with.
 */
export async function mismatch(transaction: EndorsedTransaction, expected: Expected): Promise<string | undefined> {
  if (expected.proposal !== undefined && !equal(transaction.proposal, expected.proposal)) {
    return "it embeds another proposal than the one sent";
  }
  if (expected.signature !== undefined && !equal(transaction.signature, expected.signature)) {
    return "it embeds another signature of the proposal than the one sent";
  }
  if (expected.transactionId !== undefined && transaction.transactionId !== expected.transactionId) {
    return `it embeds the proposal of transaction ${transaction.transactionId}`;
  }
  if (expected.answeredId !== undefined && expected.answeredId !== transaction.transactionId) {
    return `the node answered with transaction id ${JSON.stringify(expected.answeredId)}, not the proposal's ${transaction.transactionId}`;
  }
  if (expected.creator !== undefined && !equal(transaction.creator, expected.creator)) {
    return "its proposal's creator is not this gateway's identity";
  }
  const hash = await sha256(transaction.proposal);
  if (!equal(transaction.proposalHash, hash)) {
    return `its payload was endorsed for another proposal (proposal_hash ${toHex(transaction.proposalHash)}, not sha256 of its proposal, ${toHex(hash)})`;
  }
  if (expected.answeredResult !== undefined && !equal(transaction.result, expected.answeredResult)) {
    return "the result the node answered with is not the endorsed payload's";
  }
  return undefined;
}

/** `read()`, or a TypeError saying that the bytes are not an encoded `what`. */
function decode<T>(what: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    throw new TypeError(`not an encoded ${what}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function equal(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

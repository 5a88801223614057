/**
 * Transaction formats, byte for byte as the node checks them (node/api/src/tx.rs): the
 * transaction id and the exact messages a creator signs. Every signature covers a domain
 * tag and a SHA-256 hash, never bare message bytes:
 *
 * | signs | message |
 * |---|---|
 * | proposal | `"runnel.proposal.v1" ‖ sha256(Proposal bytes)` |
 * | transaction | `"runnel.transaction.v1" ‖ sha256(Transaction bytes)` |
 */

import { create, toBinary } from "@bufbuild/protobuf";
import { concat, toHex, utf8Bytes } from "./bytes.js";
import { randomBytes, sha256 } from "./crypto.js";
import { ProposalSchema, type Proposal } from "./gen/runnel/v1/transaction_pb.js";

/** Domain tag of a creator's signature over a proposal. */
export const PROPOSAL_DOMAIN = utf8Bytes("runnel.proposal.v1");
/** Domain tag of a creator's signature over a transaction. */
export const TRANSACTION_DOMAIN = utf8Bytes("runnel.transaction.v1");
/** Domain tag of an endorser's signature over a response: what an admin signs for a `_config` update. */
export const ENDORSEMENT_DOMAIN = utf8Bytes("runnel.endorsement.v1");
/** Bytes of nonce a new proposal draws (the node accepts 16 to 64). */
export const NONCE_BYTES = 24;

/** What a proposal is made of, before it is encoded. */
export interface ProposalFields {
  channel: string;
  contract: string;
  function: string;
  args: Uint8Array[];
  /** The creator's X.509 certificate, DER. */
  creator: Uint8Array;
  /** Defaults to {@link NONCE_BYTES} random bytes. */
  nonce?: Uint8Array;
  /** Unix milliseconds; defaults to now. */
  timestampMs?: bigint;
}

/** A new proposal message with a fresh nonce and the current time unless given. */
export function newProposalMessage(fields: ProposalFields): Proposal {
  return create(ProposalSchema, {
    channel: fields.channel,
    contract: fields.contract,
    function: fields.function,
    args: fields.args,
    creator: fields.creator,
    nonce: fields.nonce ?? randomBytes(NONCE_BYTES),
    timestampMs: fields.timestampMs ?? BigInt(Date.now()),
  });
}

/** The encoding of a proposal: the bytes its creator signs (through their hash). */
export function encodeProposal(proposal: Proposal): Uint8Array {
  return toBinary(ProposalSchema, proposal);
}

/** The transaction id of a proposal: `sha256(nonce ‖ creator)`, lowercase hex. */
export async function transactionId(nonce: Uint8Array, creator: Uint8Array): Promise<string> {
  return toHex(await sha256(concat(nonce, creator)));
}

/** What a creator signs for a proposal encoded as `proposalBytes`. */
export async function proposalMessage(proposalBytes: Uint8Array): Promise<Uint8Array> {
  return concat(PROPOSAL_DOMAIN, await sha256(proposalBytes));
}

/** What a creator signs for a transaction encoded as `transactionBytes`. */
export async function transactionMessage(transactionBytes: Uint8Array): Promise<Uint8Array> {
  return concat(TRANSACTION_DOMAIN, await sha256(transactionBytes));
}

/**
 * What an endorser signs for a response payload: the domain, sha256 of the proposal's
 * bytes and sha256 of the payload's bytes (node/api/src/tx.rs `endorsement_message`).
 */
export async function endorsementMessage(proposalBytes: Uint8Array, payloadBytes: Uint8Array): Promise<Uint8Array> {
  return concat(ENDORSEMENT_DOMAIN, await sha256(proposalBytes), await sha256(payloadBytes));
}

/**
 * Checks of what the orderer signed, made by the client without trusting the node: a
 * block's seal signature, and a transaction's inclusion proof (RFC 6962 audit path from
 * the transaction's hash to the seal's Merkle root). The same rules as the node's
 * node/ledger/src/block.rs. The orderer's certificate is read with @peculiar/x509 (x509.ts);
 * SHA-256 comes from the platform, and the Ed25519 signature is checked with WebCrypto
 * in Node.js and browsers alike. A browser whose WebCrypto lacks Ed25519 gets
 * `valid: false` with that reason, never an exception.
 */

import { fromBinary } from "@bufbuild/protobuf";
import { concat, toHex, utf8Bytes } from "./bytes.js";
import { sha256 } from "./crypto.js";
import type { Block } from "./events.js";
import { BlockSealSchema, SignedSealSchema } from "./gen/runnel/v1/block_pb.js";
import { ED25519, parseCertificate } from "./x509.js";

/** What the orderer signs for a seal: this domain, then sha256 of the `BlockSeal` bytes. */
export const SEAL_DOMAIN = "runnel.seal.v1";

/** A transaction's proof of inclusion, as `Query.getInclusionProof` returns it. */
export interface InclusionProof {
  /** The block holding it: its seal, as the orderer signed it (no transaction list). */
  readonly block: Block;
  /** The encoded `SignedTransaction`, exactly as ordered: sha256 of it is the leaf. */
  readonly transaction: Uint8Array;
  /** The transaction's seq. */
  readonly seq: bigint;
  /** Sibling hashes, leaf to root. */
  readonly path: readonly Uint8Array[];
}

/** The outcome of {@link verifySeal}. */
export interface SealCheck {
  /** The seal decodes, its hash is the block's, and the orderer's signature verifies. */
  readonly valid: boolean;
  /** Why not, when not valid. */
  readonly reason?: string;
  /** The orderer's X.509 certificate (DER) the seal carries. */
  readonly orderer: Uint8Array;
}

/** The outcome of {@link verifyInclusionProof}. */
export interface InclusionCheck extends SealCheck {
  /** Hex sha256 of the transaction: the Merkle leaf. */
  readonly leaf: string;
  /** Hex root the path leads to from the leaf; equal to the seal's `txRoot` when included. */
  readonly computedRoot: string;
}

/**
 * Checks a block's signed seal: it decodes, hashes to the block's `hash`, agrees with the
 * block's fields, and carries a valid Ed25519 signature of the certificate in it. Whether
 * that certificate is the network's orderer is for the caller to judge (`orderer`).
 */
export async function verifySeal(block: Block): Promise<SealCheck> {
  let signed;
  let seal;
  try {
    signed = fromBinary(SignedSealSchema, block.signedSeal);
    seal = fromBinary(BlockSealSchema, signed.seal);
  } catch (error) {
    return { valid: false, reason: `the signed seal does not decode: ${String(error)}`, orderer: new Uint8Array() };
  }
  const orderer = signed.orderer;
  const fail = (reason: string): SealCheck => ({ valid: false, reason, orderer });
  const hash = await sha256(signed.seal);
  if (toHex(hash) !== block.hash) return fail("the seal does not hash to the block's hash");
  if (
    seal.number !== block.number ||
    seal.firstSeq !== block.firstSeq ||
    seal.lastSeq !== block.lastSeq ||
    toHex(seal.txRoot) !== block.txRoot ||
    toHex(seal.previousHash) !== block.previousHash
  ) {
    return fail("the block's fields differ from its signed seal");
  }
  let key: CryptoKey;
  try {
    key = await (await parseCertificate(orderer)).ed25519Key();
  } catch (error) {
    return fail(`the seal's certificate: ${error instanceof Error ? error.message : String(error)}`);
  }
  const message = concat(utf8Bytes(SEAL_DOMAIN), hash);
  let verified: boolean;
  try {
    verified = await globalThis.crypto.subtle.verify(
      { name: ED25519 },
      key,
      signed.signature as Uint8Array<ArrayBuffer>,
      message as Uint8Array<ArrayBuffer>,
    );
  } catch (error) {
    return fail(`the orderer's signature cannot be checked: ${String(error)}`);
  }
  if (!verified) return fail("the orderer's signature over the seal does not verify");
  return { valid: true, orderer };
}

/**
 * Checks that `proof.transaction` is the transaction at `proof.seq` in `proof.block`: the
 * seal verifies ({@link verifySeal}) and the audit path leads from the transaction's hash
 * to the seal's Merkle root (RFC 9162 section 2.1.3.2).
 */
export async function verifyInclusionProof(proof: InclusionProof): Promise<InclusionCheck> {
  const sealCheck = await verifySeal(proof.block);
  const leafBytes = await sha256(proof.transaction);
  const leaf = toHex(leafBytes);
  const { firstSeq, lastSeq } = proof.block;
  if (proof.seq < firstSeq || proof.seq > lastSeq) {
    return { ...sealCheck, valid: false, reason: `seq ${proof.seq} is outside the block`, leaf, computedRoot: "" };
  }
  const root = await auditRoot(leafBytes, proof.seq - firstSeq, lastSeq - firstSeq + 1n, proof.path);
  const computedRoot = root === undefined ? "" : toHex(root);
  if (!sealCheck.valid) return { ...sealCheck, leaf, computedRoot };
  if (computedRoot !== proof.block.txRoot) {
    return { ...sealCheck, valid: false, reason: "the path does not lead to the seal's Merkle root", leaf, computedRoot };
  }
  return { ...sealCheck, leaf, computedRoot };
}

/** The root an audit path leads to from `leaf` at `index` of `count` leaves; undefined if malformed. */
async function auditRoot(
  leaf: Uint8Array,
  index: bigint,
  count: bigint,
  path: readonly Uint8Array[],
): Promise<Uint8Array | undefined> {
  if (index >= count) return undefined;
  let node = index;
  let last = count - 1n;
  let hash = await sha256(concat(new Uint8Array([0]), leaf));
  for (const sibling of path) {
    if (last === 0n || sibling.length !== 32) return undefined;
    if ((node & 1n) === 1n || node === last) {
      hash = await sha256(concat(new Uint8Array([1]), sibling, hash));
      while ((node & 1n) === 0n && node !== 0n) {
        node >>= 1n;
        last >>= 1n;
      }
    } else {
      hash = await sha256(concat(new Uint8Array([1]), hash, sibling));
    }
    node >>= 1n;
    last >>= 1n;
  }
  return last === 0n ? hash : undefined;
}

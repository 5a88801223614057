/**
 * Checks of what the orderer signed, made by the client without trusting the node: a
 * block's seal, and a transaction's inclusion proof (RFC 6962 audit path from the
 * transaction's leaf, its bytes with the orderer's timestamp, to the seal's Merkle root).
 * The same rules as the node's node/ledger/src/block.rs: the orderer's certificate must
 * chain to one of the network's organisation CAs, which the caller gives (msp.ts), never to
 * one the answer carries, with the role orderer, valid at the seal's own time. SHA-256
 * comes from the platform, and the Ed25519 signature is checked with WebCrypto in Node.js
 * and browsers alike. A check answers with a value, `valid` and the reason when not; it
 * never throws on bad input, and without trusted CAs it is never valid.
 */

import { fromBinary } from "@bufbuild/protobuf";
import { concat, toHex, utf8Bytes } from "./bytes.js";
import { sha256 } from "./crypto.js";
import type { Block } from "./events.js";
import { BlockSealSchema, SignedSealSchema } from "./gen/runnel/v1/block_pb.js";
import { ProposalSchema, SignedTransactionSchema, TransactionSchema } from "./gen/runnel/v1/transaction_pb.js";
import { parseTrustedCas, verifyIdentity, type CaCertificates, type TrustedCa } from "./msp.js";
import type { TrustedMembership } from "./membership.js";
import { transactionId as idOf } from "./tx.js";
import { ED25519 } from "./x509.js";

/** What the orderer signs for a seal: this domain, then sha256 of the `BlockSeal` bytes. */
export const SEAL_DOMAIN = "runnel.seal.v1";

/**
 * What a block's Merkle leaf hashes first: a transaction's leaf is sha256 of this domain,
 * the orderer's timestamp for it (Unix milliseconds, u64 big-endian) and its
 * `SignedTransaction` bytes, so the orderer's seal covers the time the transaction was
 * validated at as well as its bytes.
 */
export const LEAF_DOMAIN = "runnel.leaf.v1";

/** The largest u64: a leaf's timestamp is eight bytes. */
const U64_MAX = 0xffff_ffff_ffff_ffffn;

/** The reason of a check made without trusted CAs. */
export const NO_TRUSTED_CA = "no trusted orderer CA given";
/**
 * Distinct orderers whose signatures a seal needs: one for Runnel's crash-fault-tolerant
 * ordering (solo or a Raft cluster), as the node checks (`SEAL_SIGNERS_REQUIRED`).
 */
export const SEAL_SIGNERS_REQUIRED = 1;
/** Signatures a seal may carry at most, as the node checks (`SEAL_SIGNATURES_MAX`). */
export const SEAL_SIGNATURES_MAX = 32;

/** The fewest orderers of a Byzantine-fault-tolerant cluster (`3f + 1` for `f = 1`). */
export const BFT_ORDERERS_MIN = 4;

/**
 * Distinct orderers whose signatures a seal of `definition`'s network needs, as the node
 * counts them (`NetworkDefinition::seal_quorum`): `n - f` of the `n` orderers of a
 * Byzantine-fault-tolerant cluster (`"ordering": "bft"`; `f = (n - 1) / 3`, so 3 of 4,
 * 5 of 7), else {@link SEAL_SIGNERS_REQUIRED}. Pass it as {@link VerifyOptions.quorum},
 * the definition taken from the network's configuration, never from the node checked;
 * or give a `TrustedMembership` as {@link VerifyOptions.membership}, which counts it for
 * each seal.
 */
export function sealQuorum(definition: { readonly ordering?: string; readonly orderers?: readonly unknown[] }): number {
  if (definition.ordering !== "bft") return SEAL_SIGNERS_REQUIRED;
  const n = definition.orderers?.length ?? 0;
  return Math.max(SEAL_SIGNERS_REQUIRED, n - Math.floor(Math.max(n - 1, 0) / 3));
}

/** A transaction's proof of inclusion, as `Query.getInclusionProof` returns it. */
export interface InclusionProof {
  /** The block holding it: its seal, as the orderer signed it (no transaction list). */
  readonly block: Block;
  /** The encoded `SignedTransaction`, exactly as ordered: hashed into the leaf. */
  readonly transaction: Uint8Array;
  /** The transaction's seq. */
  readonly seq: bigint;
  /** The orderer's clock when it ordered the transaction, Unix milliseconds: hashed into the leaf. */
  readonly timestampMs: bigint;
  /** Sibling hashes, leaf to root. */
  readonly path: readonly Uint8Array[];
}

/**
 * What a check trusts: a {@link TrustedMembership} followed from a pinned genesis hash
 * (`{ membership }`), which gives every other option for the seal's seq; or the CAs, and
 * optionally the orderers, revocations and quorum, from the caller. Not both.
 */
export interface VerifyOptions {
  /**
   * The network's organisation CA certificates (`identities/<org>/ca.pem`, which `runnel
   * init` and `runnel dev` write): PEM text, DER, or as `parseTrustedCas` read them. Taken
   * from the network's configuration, never from the node being checked. Neither these
   * nor a membership: the check is not valid.
   */
  readonly trustedCas?: CaCertificates;
  /**
   * The network's membership, checked from a pinned genesis hash
   * (`TrustedMembership.fetch`): the seal must carry the signatures of
   * `sealQuorum` distinct orderers that the definition in force at its last seq names,
   * each certified by that definition's CAs and not revoked by it. A seal past what the
   * membership covers is not valid (`MEMBERSHIP_STALE`): fetch it again.
   */
  readonly membership?: TrustedMembership;
  /**
   * The orderers that may sign: those the network definition in force at the block's last
   * seq names (`orderers` in `network.json` or `runnel config show`: each `org` and
   * `name`, its certificate's CN), as a peer checks it. Given, a seal signed by any other
   * orderer is not valid, even one whose certificate a trusted CA issued (an orderer since
   * removed from the network). Not given: any orderer of a trusted CA.
   */
  readonly orderers?: readonly SealSigner[];
  /**
   * The identities the network revoked: the `revoked` entries of every organisation of the
   * network definition in force at the block's last seq (`ed25519:` and a public key in
   * hex, as `network.json` and `runnel config show` list them). Given, a seal signed by a
   * revoked key is not valid, whatever its certificate's bytes.
   */
  readonly revoked?: readonly string[];
  /**
   * Distinct orderers whose signatures the seal needs: {@link sealQuorum} of the network
   * definition in force (3 of a BFT cluster's 4). Not given:
   * {@link SEAL_SIGNERS_REQUIRED}, as solo and Raft ordering need; for a BFT network one
   * orderer's signature is then taken for the cluster's, which it is not.
   */
  readonly quorum?: number;
}

/** Which rule a seal or proof check failed. */
export type SealCheckCode =
  /** The signed seal does not decode. */
  | "SEAL_MALFORMED"
  /** The seal does not hash to the block's hash, or the block's fields differ from it. */
  | "SEAL_MISMATCH"
  /** Fewer than one or more than {@link SEAL_SIGNATURES_MAX} signatures. */
  | "SIGNATURE_COUNT"
  /** Neither trusted CAs nor a membership, or CAs that do not parse. */
  | "NO_TRUST"
  /** Both a membership and caller-supplied CAs, orderers, revocations or quorum. */
  | "CONFLICTING_OPTIONS"
  /** The membership does not reach the seal's last seq: fetch it again. */
  | "MEMBERSHIP_STALE"
  /** A signer's certificate is not an orderer's of a trusted CA, valid at the seal's time. */
  | "ORDERER_CERTIFICATE"
  /** A signature does not verify. */
  | "BAD_SIGNATURE"
  /** A signer is not an orderer the definition in force names (removed, or never one). */
  | "ORDERER_NOT_MEMBER"
  /** A signer's key is revoked. */
  | "ORDERER_REVOKED"
  /** One orderer signs twice. */
  | "DUPLICATE_SIGNER"
  /** Fewer distinct orderers than the quorum. */
  | "QUORUM_NOT_MET"
  /** The proof is for another transaction, or its transaction does not decode. */
  | "PROOF_TRANSACTION"
  /** The proof's seq is outside the block, its timestamp not a u64, or its path leads elsewhere. */
  | "PROOF_PATH";

/** The outcome of {@link verifySeal}. */
export interface SealCheck {
  /**
   * The seal decodes, hashes to the block's hash and agrees with its fields; it carries
   * {@link SEAL_SIGNERS_REQUIRED} to {@link SEAL_SIGNATURES_MAX} signatures, each by a
   * distinct orderer whose certificate chains to a trusted CA with the role orderer, valid
   * at the seal's time; and every one of those signatures over the seal verifies.
   */
  readonly valid: boolean;
  /** Why not, when not valid. */
  readonly reason?: string;
  /** Which rule failed, when not valid. */
  readonly code?: SealCheckCode;
  /** Distinct orderers the seal needed (the definition's quorum when checked by a membership). */
  readonly quorum?: number;
  /** With a membership: how many orderers the definition in force names (0: any orderer of its CAs). */
  readonly ordererCount?: number;
  /** With a membership: the sequence of the definition in force at the seal's last seq. */
  readonly definitionSequence?: bigint;
  /**
   * The X.509 certificate (DER) of the seal's first signer, the orderer that cut the
   * block; empty if the seal does not decode or carries no signature.
   */
  readonly orderer: Uint8Array;
  /** The organisation whose trusted CA issued the first signer's certificate, when valid. */
  readonly ordererOrg?: string;
  /** The first signer's common name, when valid. */
  readonly ordererName?: string;
  /** Every orderer that signed the seal, in the seal's order, when valid. */
  readonly signers?: readonly SealSigner[];
}

/** An orderer whose signature over a seal verified. */
export interface SealSigner {
  /** The organisation whose trusted CA issued its certificate. */
  readonly org: string;
  /** Its common name. */
  readonly name: string;
  /**
   * In {@link VerifyOptions.orderers}: the Ed25519 key (hex) the network definition names
   * for it (`key`, a BFT cluster's); given, it signs with that key alone.
   */
  readonly key?: string;
}

/** The outcome of {@link verifyInclusionProof}. */
export interface InclusionCheck extends SealCheck {
  /**
   * Hex Merkle leaf: sha256 of {@link LEAF_DOMAIN}, the proof's timestamp and the
   * transaction; empty when the timestamp is not a u64.
   */
  readonly leaf: string;
  /** Hex root the path leads to from the leaf; equal to the seal's `txRoot` when included. */
  readonly computedRoot: string;
  /** The id of the transaction the proof carries; empty when its bytes do not decode. */
  readonly transactionId: string;
}

/**
 * Checks a block's signed seal: it decodes, hashes to the block's `hash` and agrees with
 * the block's fields; each orderer's certificate in it chains to one of the trusted CAs
 * with the role orderer and is valid at the seal's timestamp, and is one of the orderers
 * that may sign; each Ed25519 signature over the seal verifies; and the distinct signers
 * reach the quorum. With `options.membership`, the CAs, orderers, revocations and quorum
 * are those of the definition in force at the seal's last seq; else the caller's. Without
 * either it is not valid. A failure says which rule (`code`) and why (`reason`).
 */
export async function verifySeal(block: Block, options: VerifyOptions): Promise<SealCheck> {
  let signed;
  let seal;
  try {
    signed = fromBinary(SignedSealSchema, block.signedSeal);
    seal = fromBinary(BlockSealSchema, signed.seal);
  } catch (error) {
    return {
      valid: false,
      code: "SEAL_MALFORMED",
      reason: `the signed seal does not decode: ${String(error)}`,
      orderer: new Uint8Array(),
    };
  }
  const orderer = signed.signatures[0]?.orderer ?? new Uint8Array();
  let trust: Trust | undefined;
  const fail = (code: SealCheckCode, reason: string): SealCheck => ({
    valid: false,
    code,
    reason,
    orderer,
    ...trust?.shown,
  });
  const hash = await sha256(signed.seal);
  if (toHex(hash) !== block.hash) return fail("SEAL_MISMATCH", "the seal does not hash to the block's hash");
  if (
    seal.number !== block.number ||
    seal.firstSeq !== block.firstSeq ||
    seal.lastSeq !== block.lastSeq ||
    seal.timestampMs !== block.timestampMs ||
    toHex(seal.txRoot) !== block.txRoot ||
    toHex(seal.previousHash) !== block.previousHash
  ) {
    return fail("SEAL_MISMATCH", "the block's fields differ from its signed seal");
  }
  const trusted = await trustFor(seal.lastSeq, options);
  if ("code" in trusted) return fail(trusted.code, trusted.reason);
  trust = trusted;
  const { cas } = trust;
  const count = signed.signatures.length;
  if (count < SEAL_SIGNERS_REQUIRED || count > SEAL_SIGNATURES_MAX) {
    return fail(
      "SIGNATURE_COUNT",
      `the seal carries ${count} signatures; a seal carries ${SEAL_SIGNERS_REQUIRED} to ${SEAL_SIGNATURES_MAX}`,
    );
  }
  // As a peer accepts a seal (SealChain::accept): every signature must hold, each from a
  // distinct orderer whose certificate is valid at the seal's own time.
  const message = concat(utf8Bytes(SEAL_DOMAIN), hash);
  const signers: SealSigner[] = [];
  const keys: string[] = [];
  for (const signature of signed.signatures) {
    const identity = await verifyIdentity(signature.orderer, cas, seal.timestampMs, "orderer");
    if (!identity.valid) return fail("ORDERER_CERTIFICATE", `the seal's certificate: ${identity.reason}`);
    let verified: boolean;
    try {
      verified = await globalThis.crypto.subtle.verify(
        { name: ED25519 },
        await identity.identity.certificate.ed25519Key(),
        signature.signature as Uint8Array<ArrayBuffer>,
        message as Uint8Array<ArrayBuffer>,
      );
    } catch (error) {
      return fail(
        "BAD_SIGNATURE",
        `the orderer's signature cannot be checked: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    if (!verified) return fail("BAD_SIGNATURE", "the orderer's signature over the seal does not verify");
    const { org, name } = identity.identity;
    const publicKey = toHex(identity.identity.certificate.ed25519PublicKey ?? new Uint8Array());
    if (
      trust.orderers &&
      !trust.orderers.some((named) => named.org === org && named.name === name && (!named.key || named.key === publicKey))
    ) {
      const which = trust.shown === undefined ? "" : ` ${trust.shown.definitionSequence}, at seq ${seal.lastSeq},`;
      return fail(
        "ORDERER_NOT_MEMBER",
        `orderer ${org}/${name} is not one of the orderers that may sign (the network definition${which} in force names others)`,
      );
    }
    // One orderer is one name and one key, as a peer counts them.
    const key = `ed25519:${publicKey}`;
    if (trust.revoked?.includes(key)) return fail("ORDERER_REVOKED", `orderer ${org}/${name} is revoked (${key})`);
    if (signers.some((signer) => signer.org === org && signer.name === name) || keys.includes(key)) {
      return fail("DUPLICATE_SIGNER", `orderer ${org}/${name} signs the seal twice`);
    }
    signers.push({ org, name });
    keys.push(key);
  }
  const quorum = trust.quorum;
  if (signers.length < quorum) {
    const of = trust.shown?.ordererCount ? ` of the ${trust.shown.ordererCount}` : "";
    return fail(
      "QUORUM_NOT_MET",
      `the seal carries the signatures of ${signers.length}${of} orderers; this ordering service needs ${quorum}`,
    );
  }
  const first = signers[0]!;
  return { valid: true, orderer, ordererOrg: first.org, ordererName: first.name, signers, ...trust.shown };
}

/** What a seal is checked against, from the caller's options or the membership. */
interface Trust {
  readonly cas: readonly TrustedCa[];
  readonly orderers: readonly SealSigner[] | undefined;
  readonly revoked: readonly string[] | undefined;
  readonly quorum: number;
  /** With a membership: what the check reports of the definition in force. */
  readonly shown?: { readonly quorum: number; readonly ordererCount: number; readonly definitionSequence: bigint };
}

async function trustFor(
  lastSeq: bigint,
  options: VerifyOptions,
): Promise<Trust | { readonly code: SealCheckCode; readonly reason: string }> {
  const membership = options?.membership;
  if (membership !== undefined) {
    const mixed = [options.trustedCas, options.orderers, options.revoked, options.quorum].some((o) => o !== undefined);
    if (mixed) {
      return {
        code: "CONFLICTING_OPTIONS",
        reason: "give a membership or the CAs (with orderers, revocations and quorum), not both",
      };
    }
    if (!membership.covers(lastSeq)) {
      return {
        code: "MEMBERSHIP_STALE",
        reason: `the membership covers seqs up to ${membership.coveredThrough}; the seal reaches ${lastSeq} (fetch the membership again)`,
      };
    }
    const inForce = membership.at(lastSeq);
    const named = inForce.definition.orderers.length;
    return {
      cas: inForce.cas,
      // A definition naming no orderer lets any orderer of its CAs sign, as on a peer.
      orderers: named === 0 ? undefined : inForce.orderers,
      revoked: inForce.revoked,
      quorum: Math.max(inForce.quorum, SEAL_SIGNERS_REQUIRED),
      shown: { quorum: inForce.quorum, ordererCount: named, definitionSequence: inForce.definition.sequence },
    };
  }
  let cas: TrustedCa[];
  try {
    cas = await parseTrustedCas(options?.trustedCas ?? []);
  } catch (error) {
    return { code: "NO_TRUST", reason: `the trusted CAs: ${error instanceof Error ? error.message : String(error)}` };
  }
  if (cas.length === 0) return { code: "NO_TRUST", reason: NO_TRUSTED_CA };
  return {
    cas,
    orderers: options?.orderers,
    revoked: options?.revoked,
    quorum: options?.quorum ?? SEAL_SIGNERS_REQUIRED,
  };
}

/**
 * Checks that `proof` proves transaction `transactionId`, ordered at `proof.timestampMs`,
 * is at `proof.seq` in `proof.block`: the proof's transaction is that one (the id of the
 * proposal it embeds), the audit path leads from its leaf (its bytes with that timestamp)
 * to the seal's Merkle root (RFC 9162 section 2.1.3.2), and the seal verifies
 * ({@link verifySeal}) against `options.trustedCas`. A proof whose timestamp or
 * transaction was changed leads to another root.
 */
export async function verifyInclusionProof(
  proof: InclusionProof,
  transactionId: string,
  options: VerifyOptions,
): Promise<InclusionCheck> {
  const leafBytes = await transactionLeaf(proof.timestampMs, proof.transaction);
  const leaf = leafBytes === undefined ? "" : toHex(leafBytes);
  const carried = await carriedTransactionId(proof.transaction);
  const { firstSeq, lastSeq } = proof.block;
  const root =
    leafBytes === undefined || proof.seq < firstSeq || proof.seq > lastSeq
      ? undefined
      : await auditRoot(leafBytes, proof.seq - firstSeq, lastSeq - firstSeq + 1n, proof.path);
  const computedRoot = root === undefined ? "" : toHex(root);
  const sealCheck = await verifySeal(proof.block, options);
  const result = { ...sealCheck, leaf, computedRoot, transactionId: carried ?? "" };
  const fail = (code: SealCheckCode, reason: string): InclusionCheck => ({ ...result, valid: false, code, reason });
  if (carried === undefined) return fail("PROOF_TRANSACTION", "the proof's transaction does not decode");
  if (carried !== transactionId.toLowerCase()) {
    return fail("PROOF_TRANSACTION", `the proof is for transaction ${carried}, not ${transactionId}`);
  }
  if (leafBytes === undefined) return fail("PROOF_PATH", `timestamp ${proof.timestampMs} is not a u64`);
  if (proof.seq < firstSeq || proof.seq > lastSeq) return fail("PROOF_PATH", `seq ${proof.seq} is outside the block`);
  if (!sealCheck.valid) return result;
  if (computedRoot !== proof.block.txRoot) return fail("PROOF_PATH", "the path does not lead to the seal's Merkle root");
  return result;
}

/**
 * The id of the proposal an encoded `SignedTransaction` embeds; undefined if it does not
 * decode that far. Its payload is not read: a transaction ordered with a payload that
 * does not decode (`BAD_PAYLOAD`) still has its place and its id.
 */
async function carriedTransactionId(signedTransaction: Uint8Array): Promise<string | undefined> {
  let proposal;
  try {
    const signed = fromBinary(SignedTransactionSchema, signedTransaction);
    const transaction = fromBinary(TransactionSchema, signed.transaction);
    if (transaction.proposal === undefined) return undefined;
    proposal = fromBinary(ProposalSchema, transaction.proposal.proposal);
  } catch {
    return undefined;
  }
  return idOf(proposal.nonce, proposal.creator);
}

/**
 * The Merkle leaf of `transaction` ordered at `timestampMs`: sha256 of {@link LEAF_DOMAIN},
 * the timestamp as u64 big-endian and the bytes (node/ledger/src/block.rs `leaf`);
 * undefined if the timestamp is not a u64.
 */
async function transactionLeaf(timestampMs: bigint, transaction: Uint8Array): Promise<Uint8Array | undefined> {
  if (typeof timestampMs !== "bigint" || timestampMs < 0n || timestampMs > U64_MAX) return undefined;
  const timestamp = new Uint8Array(8);
  new DataView(timestamp.buffer).setBigUint64(0, timestampMs, false);
  return sha256(concat(utf8Bytes(LEAF_DOMAIN), timestamp, transaction));
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

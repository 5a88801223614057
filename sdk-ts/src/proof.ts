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
 * the definition taken from the network's configuration, never from the node checked.
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

/** What a check trusts. */
export interface VerifyOptions {
  /**
   * The network's organisation CA certificates (`identities/<org>/ca.pem`, which `runnel
   * init` and `runnel dev` write): PEM text, DER, or as `parseTrustedCas` read them. Taken
   * from the network's configuration, never from the node being checked. None: the check
   * is not valid.
   */
  readonly trustedCas: CaCertificates;
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
 * the block's fields; the orderer's certificate in it chains to one of
 * `options.trustedCas` with the role orderer and is valid at the seal's timestamp, and is
 * one of `options.orderers` when given; and its Ed25519 signature over the seal verifies.
 * Without trusted CAs it is not valid.
 */
export async function verifySeal(block: Block, options: VerifyOptions): Promise<SealCheck> {
  let signed;
  let seal;
  try {
    signed = fromBinary(SignedSealSchema, block.signedSeal);
    seal = fromBinary(BlockSealSchema, signed.seal);
  } catch (error) {
    return { valid: false, reason: `the signed seal does not decode: ${String(error)}`, orderer: new Uint8Array() };
  }
  const orderer = signed.signatures[0]?.orderer ?? new Uint8Array();
  const fail = (reason: string): SealCheck => ({ valid: false, reason, orderer });
  const hash = await sha256(signed.seal);
  if (toHex(hash) !== block.hash) return fail("the seal does not hash to the block's hash");
  if (
    seal.number !== block.number ||
    seal.firstSeq !== block.firstSeq ||
    seal.lastSeq !== block.lastSeq ||
    seal.timestampMs !== block.timestampMs ||
    toHex(seal.txRoot) !== block.txRoot ||
    toHex(seal.previousHash) !== block.previousHash
  ) {
    return fail("the block's fields differ from its signed seal");
  }
  const count = signed.signatures.length;
  if (count < SEAL_SIGNERS_REQUIRED || count > SEAL_SIGNATURES_MAX) {
    return fail(`the seal carries ${count} signatures; a seal carries ${SEAL_SIGNERS_REQUIRED} to ${SEAL_SIGNATURES_MAX}`);
  }
  let cas: TrustedCa[];
  try {
    cas = await parseTrustedCas(options?.trustedCas ?? []);
  } catch (error) {
    return fail(`the trusted CAs: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (cas.length === 0) return fail(NO_TRUSTED_CA);
  // As a peer accepts a seal (SealChain::accept): every signature must hold, each from a
  // distinct orderer whose certificate is valid at the seal's own time.
  const message = concat(utf8Bytes(SEAL_DOMAIN), hash);
  const signers: SealSigner[] = [];
  const keys: string[] = [];
  for (const signature of signed.signatures) {
    const identity = await verifyIdentity(signature.orderer, cas, seal.timestampMs, "orderer");
    if (!identity.valid) return fail(`the seal's certificate: ${identity.reason}`);
    let verified: boolean;
    try {
      verified = await globalThis.crypto.subtle.verify(
        { name: ED25519 },
        await identity.identity.certificate.ed25519Key(),
        signature.signature as Uint8Array<ArrayBuffer>,
        message as Uint8Array<ArrayBuffer>,
      );
    } catch (error) {
      return fail(`the orderer's signature cannot be checked: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (!verified) return fail("the orderer's signature over the seal does not verify");
    const { org, name } = identity.identity;
    const publicKey = toHex(identity.identity.certificate.ed25519PublicKey ?? new Uint8Array());
    if (
      options.orderers &&
      !options.orderers.some((named) => named.org === org && named.name === name && (!named.key || named.key === publicKey))
    ) {
      return fail(`orderer ${org}/${name} is not one of the orderers that may sign (the network definition in force names others)`);
    }
    // One orderer is one name and one key, as a peer counts them.
    const key = `ed25519:${publicKey}`;
    if (options.revoked?.includes(key)) return fail(`orderer ${org}/${name} is revoked (${key})`);
    if (signers.some((signer) => signer.org === org && signer.name === name) || keys.includes(key)) {
      return fail(`orderer ${org}/${name} signs the seal twice`);
    }
    signers.push({ org, name });
    keys.push(key);
  }
  const quorum = options.quorum ?? SEAL_SIGNERS_REQUIRED;
  if (signers.length < quorum) {
    return fail(`the seal carries the signatures of ${signers.length} orderers; this ordering service needs ${quorum}`);
  }
  const first = signers[0]!;
  return { valid: true, orderer, ordererOrg: first.org, ordererName: first.name, signers };
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
  const fail = (reason: string): InclusionCheck => ({ ...result, valid: false, reason });
  if (carried === undefined) return fail("the proof's transaction does not decode");
  if (carried !== transactionId.toLowerCase()) {
    return fail(`the proof is for transaction ${carried}, not ${transactionId}`);
  }
  if (leafBytes === undefined) return fail(`timestamp ${proof.timestampMs} is not a u64`);
  if (proof.seq < firstSeq || proof.seq > lastSeq) return fail(`seq ${proof.seq} is outside the block`);
  if (!sealCheck.valid) return result;
  if (computedRoot !== proof.block.txRoot) return fail("the path does not lead to the seal's Merkle root");
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

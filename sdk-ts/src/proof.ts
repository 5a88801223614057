/**
 * Checks of what the orderer signed, made by the client without trusting the node: a
 * block's seal signature, and a transaction's inclusion proof (RFC 6962 audit path from
 * the transaction's hash to the seal's Merkle root). The same rules as the node's
 * node/src/block.rs; SHA-256 and Ed25519 come from the platform (WebCrypto in browsers).
 */

import { fromBinary } from "@bufbuild/protobuf";
import { concat, toHex, utf8Bytes } from "./bytes.js";
import { sha256 } from "./crypto.js";
import type { Block } from "./events.js";
import { BlockSealSchema, SignedSealSchema } from "./gen/runnel/v1/block_pb.js";

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
  let key;
  try {
    key = ed25519PublicKey(orderer);
  } catch (error) {
    return fail(`the seal's certificate: ${error instanceof Error ? error.message : String(error)}`);
  }
  const message = concat(utf8Bytes(SEAL_DOMAIN), hash);
  if (!(await ed25519Verify(key, signed.signature, message))) {
    return fail("the orderer's signature over the seal does not verify");
  }
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

async function ed25519Verify(publicKey: Uint8Array, signature: Uint8Array, message: Uint8Array): Promise<boolean> {
  const subtle = globalThis.crypto.subtle;
  const key = await subtle.importKey("raw", publicKey as Uint8Array<ArrayBuffer>, { name: "Ed25519" }, false, [
    "verify",
  ]);
  return subtle.verify({ name: "Ed25519" }, key, signature as Uint8Array<ArrayBuffer>, message as Uint8Array<ArrayBuffer>);
}

/** The algorithm identifier of Ed25519 keys (RFC 8410): OID 1.3.101.112. */
const ED25519_ALGORITHM = Uint8Array.of(0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70);

/**
 * The raw Ed25519 public key of an X.509 certificate (DER): walks Certificate →
 * tbsCertificate → subjectPublicKeyInfo (RFC 5280 section 4.1).
 */
export function ed25519PublicKey(certificate: Uint8Array): Uint8Array {
  const cert = derChildren(derElement(certificate, 0, 0x30).content);
  const tbs = cert[0];
  if (tbs === undefined || tbs.tag !== 0x30) throw new TypeError("not an X.509 certificate");
  const fields = derChildren(tbs.content);
  // [0] version (optional), serial, signature, issuer, validity, subject, subjectPublicKeyInfo.
  const spkiAt = fields[0]?.tag === 0xa0 ? 6 : 5;
  const spki = fields[spkiAt];
  if (spki === undefined || spki.tag !== 0x30) throw new TypeError("the certificate has no public key");
  const [algorithm, key] = derChildren(spki.content);
  if (algorithm === undefined || key === undefined || key.tag !== 0x03) {
    throw new TypeError("malformed subjectPublicKeyInfo");
  }
  if (toHex(algorithm.whole) !== toHex(ED25519_ALGORITHM)) throw new TypeError("the key is not Ed25519");
  if (key.content.length !== 33 || key.content[0] !== 0) throw new TypeError("an Ed25519 key is 32 bytes");
  return key.content.subarray(1);
}

interface DerElement {
  readonly tag: number;
  readonly content: Uint8Array;
  readonly whole: Uint8Array;
}

/** The DER element at `offset` of `bytes`; `tag`, when not 0, is the tag it must have. */
function derElement(bytes: Uint8Array, offset: number, tag: number): DerElement {
  const at = (i: number): number => {
    const byte = bytes[i];
    if (byte === undefined) throw new TypeError("truncated DER");
    return byte;
  };
  const found = at(offset);
  if (tag !== 0 && found !== tag) throw new TypeError(`DER tag 0x${found.toString(16)} where 0x${tag.toString(16)} belongs`);
  let length = at(offset + 1);
  let start = offset + 2;
  if (length & 0x80) {
    const octets = length & 0x7f;
    if (octets === 0 || octets > 4) throw new TypeError("unsupported DER length");
    length = 0;
    for (let i = 0; i < octets; i++) length = length * 256 + at(start + i);
    start += octets;
  }
  const end = start + length;
  if (end > bytes.length) throw new TypeError("truncated DER");
  return { tag: found, content: bytes.subarray(start, end), whole: bytes.subarray(offset, end) };
}

function derChildren(content: Uint8Array): DerElement[] {
  const children: DerElement[] = [];
  for (let offset = 0; offset < content.length; ) {
    const child = derElement(content, offset, 0);
    children.push(child);
    offset += child.whole.length;
  }
  return children;
}

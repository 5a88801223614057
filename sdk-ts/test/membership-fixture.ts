/**
 * A network made in memory, for the membership's hostile cases: organisations with their
 * CAs, admins and orderers (Ed25519 keys and certificates as `runnel init` issues them),
 * definitions as the node writes them, `_config` updates signed by whichever admins a
 * test picks, and single-transaction blocks sealed by whichever orderers it picks. What a
 * lying node could answer, built byte by byte.
 */

import { createHash } from "node:crypto";
import { create, toBinary } from "@bufbuild/protobuf";
import { BlockSealSchema, SignedSealSchema } from "../src/gen/runnel/v1/block_pb.js";
import { ValidationCode } from "../src/gen/runnel/v1/api_pb.js";
import {
  ProposalSchema,
  ResponsePayloadSchema,
  SignedTransactionSchema,
  TransactionSchema,
} from "../src/gen/runnel/v1/transaction_pb.js";
import type { Block } from "../src/events.js";
import type { ConfigHistory, ConfigUpdateEvidence } from "../src/membership.js";
import { LEAF_DOMAIN, SEAL_DOMAIN, type InclusionProof } from "../src/proof.js";
import { endorsementMessage, transactionId, transactionMessage } from "../src/tx.js";

const x509 = await import("../src/x509-library.js").then(() => import("@peculiar/x509"));

const DAY_MS = 86_400_000;
const sha256 = (data: Uint8Array) => new Uint8Array(createHash("sha256").update(data).digest());
const hex = (data: Uint8Array) => Buffer.from(data).toString("hex");
const utf8 = (text: string) => new TextEncoder().encode(text);

/** A key pair and the certificate its organisation's CA issued for it. */
export interface Member {
  readonly org: string;
  readonly name: string;
  readonly keys: CryptoKeyPair;
  readonly der: Uint8Array;
  /** Its public key, hex. */
  readonly key: string;
}

/** An organisation: its CA, an admin and an orderer. */
export interface Org {
  readonly name: string;
  readonly caPem: string;
  readonly admin: Member;
  readonly orderer: Member;
}

const newKeys = async () => (await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"])) as CryptoKeyPair;

async function issue(subject: string, keys: CryptoKeyPair, issuer: { subject: string; keys: CryptoKeyPair }): Promise<Uint8Array> {
  const now = Date.now();
  const made = await x509.X509CertificateGenerator.create({
    serialNumber: "01",
    subject,
    issuer: issuer.subject,
    notBefore: new Date(now - DAY_MS),
    notAfter: new Date(now + 365 * DAY_MS),
    publicKey: keys.publicKey,
    signingKey: issuer.keys.privateKey,
    signingAlgorithm: { name: "Ed25519" },
  });
  return new Uint8Array(made.rawData);
}

const pem = (der: Uint8Array) => `-----BEGIN CERTIFICATE-----\n${Buffer.from(der).toString("base64")}\n-----END CERTIFICATE-----\n`;

async function member(org: string, role: string, name: string, ca: { subject: string; keys: CryptoKeyPair }): Promise<Member> {
  const keys = await newKeys();
  const der = await issue(`O=${org}, OU=${role}, CN=${name}`, keys, ca);
  const key = hex(new Uint8Array(await crypto.subtle.exportKey("raw", keys.publicKey)));
  return { org, name, keys, der, key };
}

/** An organisation named `name`, with a CA of its own. */
export async function newOrg(name: string): Promise<Org> {
  const ca = { subject: `O=${name}, CN=ca.${name}`, keys: await newKeys() };
  const caDer = await issue(ca.subject, ca.keys, ca);
  return {
    name,
    caPem: pem(caDer),
    admin: await member(name, "admin", `Admin@${name}`, ca),
    orderer: await member(name, "orderer", `orderer0.${name}`, ca),
  };
}

/** What a definition holds, the way a test writes it. */
export interface DefinitionSpec {
  readonly sequence: number;
  readonly orgs: readonly Org[];
  /** Its orderers (each org's `orderer0`), numbered from 1 in a cluster. */
  readonly orderers: readonly Org[];
  readonly ordering?: "raft" | "bft";
  readonly configPolicy?: string;
  /** Revoked keys, by org name. */
  readonly revoked?: Readonly<Record<string, readonly string[]>>;
}

/** The definition's canonical bytes, as `NetworkDefinition::to_bytes` writes them (fields in order). */
export function definitionBytes(spec: DefinitionSpec): Uint8Array {
  const clustered = spec.orderers.length > 1 || spec.ordering === "bft";
  const definition = {
    channel: "main",
    sequence: spec.sequence,
    orgs: spec.orgs.map((org) => ({
      name: org.name,
      ca: org.caPem,
      tls_ca: org.caPem,
      peers: [],
      ...(spec.revoked?.[org.name]?.length ? { revoked: spec.revoked[org.name] } : {}),
    })),
    orderers: spec.orderers.map((org, i) => ({
      name: org.orderer.name,
      org: org.name,
      endpoint: `https://127.0.0.1:${7050 + i}`,
      ...(clustered ? { raft_id: i + 1 } : {}),
      ...(spec.ordering === "bft" ? { key: org.orderer.key } : {}),
    })),
    ...(spec.ordering === "bft" ? { ordering: "bft" } : {}),
    lifecycle_policy: "MAJORITY admin",
    config_policy: spec.configPolicy ?? "MAJORITY admin",
  };
  return utf8(JSON.stringify(definition));
}

async function sign(keys: CryptoKeyPair, message: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, keys.privateKey, message as Uint8Array<ArrayBuffer>));
}

/** How an update transaction is made; every field can be made wrong on purpose. */
export interface UpdateSpec {
  /** The definition written. */
  readonly next: Uint8Array;
  /** The version read: the seq of the update in force, undefined at genesis. */
  readonly readVersion: bigint | undefined;
  readonly proposer: Member;
  /** The admins whose endorsements it carries. */
  readonly signers: readonly Member[];
  /** The orderer's timestamp. */
  readonly timestampMs: bigint;
  /** Replaces each endorsement's signature. */
  readonly forge?: (signature: Uint8Array) => Uint8Array;
  /** Another proposal argument than `next`. */
  readonly argument?: Uint8Array;
  readonly contract?: string;
}

/** An update's encoded `SignedTransaction` and its id. */
export async function updateTransaction(spec: UpdateSpec): Promise<{ bytes: Uint8Array; id: string }> {
  const nonce = crypto.getRandomValues(new Uint8Array(24));
  const proposal = toBinary(
    ProposalSchema,
    create(ProposalSchema, {
      channel: "main",
      contract: spec.contract ?? "_config",
      function: "update",
      args: [spec.argument ?? spec.next],
      creator: spec.proposer.der,
      nonce,
      timestampMs: spec.timestampMs,
    }),
  );
  const payload = toBinary(
    ResponsePayloadSchema,
    create(ResponsePayloadSchema, {
      proposalHash: sha256(proposal),
      rwsets: [
        {
          namespace: "_config",
          reads: [{ key: utf8("network"), version: spec.readVersion === undefined ? undefined : { seq: spec.readVersion } }],
          writes: [{ key: utf8("network"), value: spec.next }],
        },
      ],
    }),
  );
  const message = await endorsementMessage(proposal, payload);
  const endorsements = await Promise.all(
    spec.signers.map(async (signer) => {
      const signature = await sign(signer.keys, message);
      return { endorser: signer.der, signature: spec.forge?.(signature) ?? signature };
    }),
  );
  const transaction = toBinary(
    TransactionSchema,
    create(TransactionSchema, { proposal: { proposal, signature: new Uint8Array(64) }, payload, endorsements }),
  );
  const signature = await sign(spec.proposer.keys, await transactionMessage(transaction));
  const bytes = toBinary(SignedTransactionSchema, create(SignedTransactionSchema, { transaction, signature }));
  return { bytes, id: await transactionId(nonce, spec.proposer.der) };
}

/** sha256 of a leaf and of the one-leaf tree over it (RFC 6962). */
function leafOf(timestampMs: bigint, transaction: Uint8Array): Uint8Array {
  const timestamp = new Uint8Array(8);
  new DataView(timestamp.buffer).setBigUint64(0, timestampMs, false);
  return sha256(new Uint8Array([...utf8(LEAF_DOMAIN), ...timestamp, ...transaction]));
}

/**
 * A block over seqs `firstSeq..=lastSeq`, whose leaf at `seq` is `transaction` (the others
 * filler), sealed by each of `sealers` (the same member twice if given twice); and the
 * inclusion proof of the transaction.
 */
export async function sealedBlock(options: {
  readonly seq: bigint;
  readonly transaction?: Uint8Array;
  readonly timestampMs: bigint;
  readonly sealers: readonly Member[];
  readonly lastSeq?: bigint;
}): Promise<{ block: Block; proof: InclusionProof }> {
  const transaction = options.transaction ?? utf8(`filler ${options.seq}`);
  const lastSeq = options.lastSeq ?? options.seq;
  // Two leaves when the block reaches past the seq: the transaction's, then a filler's.
  const leaves = [leafOf(options.timestampMs, transaction)];
  if (lastSeq > options.seq) leaves.push(leafOf(options.timestampMs, utf8("filler")));
  if (lastSeq > options.seq + 1n) throw new Error("the fixture makes blocks of one or two transactions");
  const leafHash = (leaf: Uint8Array) => sha256(new Uint8Array([0, ...leaf]));
  const txRoot =
    leaves.length === 1
      ? leafHash(leaves[0]!)
      : sha256(new Uint8Array([1, ...leafHash(leaves[0]!), ...leafHash(leaves[1]!)]));
  const number = options.seq;
  const seal = toBinary(
    BlockSealSchema,
    create(BlockSealSchema, {
      number,
      firstSeq: options.seq,
      lastSeq,
      previousHash: new Uint8Array(32),
      txRoot,
      timestampMs: options.timestampMs,
    }),
  );
  const hash = sha256(seal);
  const message = new Uint8Array([...utf8(SEAL_DOMAIN), ...hash]);
  const signatures = await Promise.all(
    options.sealers.map(async (sealer) => ({ orderer: sealer.der, signature: await sign(sealer.keys, message) })),
  );
  const block: Block = {
    number,
    firstSeq: options.seq,
    lastSeq,
    previousHash: "00".repeat(32),
    hash: hex(hash),
    txRoot: hex(txRoot),
    timestampMs: options.timestampMs,
    signedSeal: toBinary(SignedSealSchema, create(SignedSealSchema, { seal, signatures })),
    transactions: [],
  };
  const path = leaves.length === 2 ? [leafHash(leaves[1]!)] : [];
  return { block, proof: { block, transaction, seq: options.seq, timestampMs: options.timestampMs, path } };
}

/** An update, ordered at `seq` and sealed by `sealers`: what the node answers about it. */
export async function orderedUpdate(
  spec: UpdateSpec & { readonly seq: bigint; readonly sealers: readonly Member[]; readonly lastSeq?: bigint },
): Promise<ConfigUpdateEvidence> {
  const { bytes, id } = await updateTransaction(spec);
  const { proof } = await sealedBlock({
    seq: spec.seq,
    transaction: bytes,
    timestampMs: spec.timestampMs,
    sealers: spec.sealers,
    ...(spec.lastSeq === undefined ? {} : { lastSeq: spec.lastSeq }),
  });
  return { seq: spec.seq, transactionId: id, value: spec.next, code: ValidationCode.VALID, proof };
}

/** The genesis hash of `genesis`, hex. */
export const genesisHash = (genesis: Uint8Array) => hex(sha256(genesis));

/** A history as a node would answer it. */
export function history(genesis: Uint8Array, updates: ConfigUpdateEvidence[], validatedHeight = 100n): ConfigHistory {
  return { genesis, updates, validatedHeight };
}

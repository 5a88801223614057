/**
 * The golden vectors of node/api/vectors/ (written by runnel-api's tests/it/vectors.rs):
 * the SDK's own code must make the same bytes as the node's. The file needs no node (the
 * suite's global setup starts one for the others). The SDK makes no endorsement (endorsers
 * are nodes; it checks admins' endorsements of `_config` updates, against the endorsement
 * vectors) and no byte list (contracts' argument encoding); its policy port is checked
 * against the node's policy tests' cases in policy.test.ts.
 */

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { describe, expect, test } from "vitest";
import { concat } from "../src/bytes.js";
import { sha256 } from "../src/crypto.js";
import { ERROR_CODE_HEADER, ERROR_ORG_HEADER, TransactionMismatchError, VALIDATION_CODE_HEADER, validationCodeName } from "../src/errors.js";
import { SignedReadGrantSchema, ValidationCode } from "../src/gen/runnel/v1/api_pb.js";
import { SignedProposalSchema, SignedTransactionSchema, TransactionSchema } from "../src/gen/runnel/v1/transaction_pb.js";
import { LEAF_DOMAIN, verifyInclusionProof, type InclusionProof } from "../src/proof.js";
import { READ_GRANT_DOMAIN, READ_GRANT_HEADER, newReadGrant } from "../src/readers.js";
import { newPrivateKeySigner } from "../src/signing.js";
import {
  ENDORSEMENT_DOMAIN,
  endorsementMessage,
  PROPOSAL_DOMAIN,
  TRANSACTION_DOMAIN,
  encodeProposal,
  newProposalMessage,
  proposalMessage,
  transactionId,
  transactionMessage,
} from "../src/tx.js";

const VECTORS = fileURLToPath(new URL("../../node/api/vectors/", import.meta.url));

function load<T>(name: string): T {
  return JSON.parse(readFileSync(join(VECTORS, name), "utf8")) as T;
}

const bytes = (hex: string): Uint8Array => new Uint8Array(Buffer.from(hex, "hex"));
const hex = (data: Uint8Array | string): string => Buffer.from(data).toString("hex");
/** `[name, vector]` rows for `test.each`, so that a failure names its vector. */
const rows = <T extends { name: string }>(vectors: T[]): [string, T][] => vectors.map((v) => [v.name, v]);

interface TxVectors {
  domains: { name: string; text: string; hex: string }[];
  keys: { name: string; seed: string; public_key: string; certificate: string }[];
  proposals: {
    name: string;
    signer: string;
    channel: string;
    contract: string;
    function: string;
    args: string[];
    creator: string;
    nonce: string;
    timestamp_ms: string;
    encoded: string;
    hash: string;
    message: string;
    signature: string;
    signed: string;
    tx_id: string;
  }[];
  endorsements: {
    name: string;
    signer: string;
    proposal: string;
    proposal_hash: string;
    payload: string;
    payload_hash: string;
    message: string;
    signature: string;
  }[];
  transactions: {
    name: string;
    signer: string;
    proposal: string;
    payload: string;
    endorsements: { endorser: string; signature: string }[];
    encoded: string;
    hash: string;
    message: string;
    signature: string;
    signed: string;
  }[];
}

interface GrantVectors {
  grants: {
    name: string;
    signer: string;
    creator: string;
    channel: string;
    not_before_ms: string;
    lifetime_ms: string;
    grant: string;
    hash: string;
    message: string;
    signature: string;
    signed: string;
  }[];
}

interface MerkleVectors {
  leaves: { name: string; timestamp_ms: string; transaction: string; leaf: string }[];
  roots: { name: string; leaves: number; root: string }[];
  proofs: {
    name: string;
    timestamp_ms: string;
    transaction: string;
    leaf: string;
    index: number;
    count: number;
    path: string[];
    root: string;
    valid: boolean;
  }[];
}

interface CodeVectors {
  headers: { name: string; header: string }[];
  error_names: string[];
  validation_codes: { name: string; stored: number; proto: number }[];
}

const txs = load<TxVectors>("tx.json");
const grants = load<GrantVectors>("grant.json");
const merkle = load<MerkleVectors>("merkle.json");
const codes = load<CodeVectors>("codes.json");

function signerOf(name: string) {
  const key = txs.keys.find((k) => k.name === name);
  if (key === undefined) throw new Error(`tx.json has no key ${name}`);
  return newPrivateKeySigner(bytes(key.seed));
}

describe("transactions (node/api/vectors/tx.json)", () => {
  test("the SDK's domain tags are the node's", () => {
    const tag = (name: string) => txs.domains.find((d) => d.name === name)?.hex;
    expect(hex(PROPOSAL_DOMAIN)).toBe(tag("proposal"));
    expect(hex(TRANSACTION_DOMAIN)).toBe(tag("transaction"));
    expect(hex(READ_GRANT_DOMAIN)).toBe(tag("read_grant"));
    expect(hex(LEAF_DOMAIN)).toBe(tag("leaf"));
    expect(hex(ENDORSEMENT_DOMAIN)).toBe(tag("endorsement"));
  });

  // What an admin signs for a `_config` update, which TrustedMembership checks.
  test.each(rows(txs.endorsements))("endorsement %s: the message an endorser signs", async (_, v) => {
    const proposal = txs.proposals.find((p) => p.name === v.proposal)!;
    expect(hex(await sha256(bytes(proposal.encoded)))).toBe(v.proposal_hash);
    expect(hex(await endorsementMessage(bytes(proposal.encoded), bytes(v.payload)))).toBe(v.message);
    expect(hex(await signerOf(v.signer)(bytes(v.message)))).toBe(v.signature);
  });

  test.each(rows(txs.proposals))("proposal %s: encoding, id, message and signature", async (_, v) => {
    const proposal = newProposalMessage({
      channel: v.channel,
      contract: v.contract,
      function: v.function,
      args: v.args.map(bytes),
      creator: bytes(v.creator),
      nonce: bytes(v.nonce),
      timestampMs: BigInt(v.timestamp_ms),
    });
    const encoded = encodeProposal(proposal);
    expect(hex(encoded)).toBe(v.encoded);
    expect(hex(await sha256(encoded))).toBe(v.hash);
    expect(await transactionId(bytes(v.nonce), bytes(v.creator))).toBe(v.tx_id);
    const message = await proposalMessage(encoded);
    expect(hex(message)).toBe(v.message);
    const signature = await signerOf(v.signer)(message);
    expect(hex(signature)).toBe(v.signature);
    expect(hex(toBinary(SignedProposalSchema, create(SignedProposalSchema, { proposal: encoded, signature })))).toBe(
      v.signed,
    );
  });

  test.each(rows(txs.transactions))("transaction %s: encoding, message and signature", async (_, v) => {
    const proposal = txs.proposals.find((p) => p.name === v.proposal)!;
    const transaction = create(TransactionSchema, {
      proposal: fromBinary(SignedProposalSchema, bytes(proposal.signed)),
      payload: bytes(v.payload),
      endorsements: v.endorsements.map((e) => ({ endorser: bytes(e.endorser), signature: bytes(e.signature) })),
    });
    const encoded = toBinary(TransactionSchema, transaction);
    expect(hex(encoded)).toBe(v.encoded);
    expect(hex(await sha256(encoded))).toBe(v.hash);
    const message = await transactionMessage(encoded);
    expect(hex(message)).toBe(v.message);
    const signature = await signerOf(v.signer)(message);
    expect(hex(signature)).toBe(v.signature);
    const signed = create(SignedTransactionSchema, { transaction: encoded, signature });
    expect(hex(toBinary(SignedTransactionSchema, signed))).toBe(v.signed);
  });
});

describe("read grants (node/api/vectors/grant.json)", () => {
  test.each(rows(grants.grants))("grant %s: the signed grant, byte for byte", async (_, v) => {
    const signed = await newReadGrant({
      identity: { credentials: bytes(v.creator) },
      signer: signerOf(v.signer),
      channel: v.channel,
      notBeforeMs: Number(v.not_before_ms),
      lifetimeMs: Number(v.lifetime_ms),
    });
    const parts = fromBinary(SignedReadGrantSchema, signed);
    expect(hex(parts.grant)).toBe(v.grant);
    const hash = await sha256(parts.grant);
    expect(hex(hash)).toBe(v.hash);
    expect(hex(concat(READ_GRANT_DOMAIN, hash))).toBe(v.message);
    expect(hex(parts.signature)).toBe(v.signature);
    expect(hex(signed)).toBe(v.signed);
  });
});

describe("a block's Merkle tree (node/api/vectors/merkle.json)", () => {
  /** What the SDK makes of a proof: the leaf, the root its path leads to, the transaction's id. */
  async function check(v: MerkleVectors["proofs"][number]) {
    const count = BigInt(v.count);
    const proof: InclusionProof = {
      // Only the seq range and the root matter to the path; with no trusted CA the seal
      // is not checked, and the check says what it computed.
      block: {
        number: 1n,
        firstSeq: 1n,
        lastSeq: count,
        previousHash: "",
        hash: "",
        txRoot: v.root,
        timestampMs: 0n,
        signedSeal: new Uint8Array(),
        transactions: [],
      },
      transaction: bytes(v.transaction),
      seq: 1n + BigInt(v.index),
      timestampMs: BigInt(v.timestamp_ms),
      path: v.path.map(bytes),
    };
    return verifyInclusionProof(proof, "", { trustedCas: [] });
  }

  test.each(rows(merkle.proofs))("proof %s", async (_, v) => {
    const result = await check(v);
    expect(result.leaf).toBe(v.leaf);
    expect(result.computedRoot === v.root).toBe(v.valid);
  });

  test.each(rows(merkle.leaves))("leaf %s", async (_, v) => {
    const { leaf } = await check({ ...v, index: 0, count: 1, path: [], root: "", valid: false });
    expect(leaf).toBe(v.leaf);
  });

  test("a tree of one leaf has the root the node computes", async () => {
    const [first] = merkle.leaves;
    const { root } = merkle.roots.find((r) => r.leaves === 1)!;
    const result = await check({ ...first!, index: 0, count: 1, path: [], root, valid: true });
    expect(result.computedRoot).toBe(root);
  });

  test("the first leaf's transaction carries the id of tx.json's proposal", async () => {
    const [first] = merkle.leaves;
    const result = await check({ ...first!, index: 0, count: 1, path: [], root: "", valid: false });
    expect(result.transactionId).toBe(txs.proposals.find((p) => p.name === "invoke")?.tx_id);
  });
});

describe("names (node/api/vectors/codes.json)", () => {
  test("the SDK reads the headers the node writes", () => {
    const header = (name: string) => codes.headers.find((h) => h.name === name)?.header;
    expect(ERROR_CODE_HEADER).toBe(header("error code"));
    expect(VALIDATION_CODE_HEADER).toBe(header("validation code"));
    expect(ERROR_ORG_HEADER).toBe(header("error org"));
    expect(READ_GRANT_HEADER).toBe(header("read grant"));
  });

  test("the SDK's validation codes are the node's, name for number", () => {
    for (const code of codes.validation_codes) {
      expect(validationCodeName(code.proto)).toBe(code.name);
      expect(ValidationCode[code.name as keyof typeof ValidationCode]).toBe(code.proto);
    }
    const known = Object.values(ValidationCode).filter((v): v is number => typeof v === "number");
    expect(known.filter((n) => n !== ValidationCode.UNSPECIFIED).sort((a, b) => a - b)).toEqual(
      codes.validation_codes.map((c) => c.proto).sort((a, b) => a - b),
    );
  });

  test("the name of an error the SDK makes itself is none of the node's", () => {
    const error = new TransactionMismatchError({ step: "endorse", url: "", transactionId: "", reason: "" });
    expect(codes.error_names).not.toContain(error.code);
  });
});

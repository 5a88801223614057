/** The byte formats and parsers, checked without a node against node:crypto. */

import { createHash, createPublicKey, generateKeyPairSync, verify } from "node:crypto";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import {
  CERTIFICATE_BYTES_MAX,
  ed25519Pkcs8,
  identityCertificate,
  identityFromDer,
  identityFromPem,
  identities,
  loadNetworkIdentity,
  newPrivateKeySigner,
  NO_TRUSTED_CA,
  parseCertificate,
  parseTrustedCas,
  SEAL_DOMAIN,
  txProto,
  verifyInclusionProof,
  verifySeal,
  sealQuorum,
  SEAL_SIGNERS_REQUIRED,
  parseCheckpoint,
  serializeCheckpoint,
} from "../src/index.js";
import { proposalMessage, transactionId, transactionMessage } from "../src/tx.js";
import { Code, ConnectError } from "@connectrpc/connect";
import { CommitStatusError } from "../src/errors.js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { BlockSealSchema, SignedSealSchema } from "../src/gen/runnel/v1/block_pb.js";
// The SDK loads @peculiar/x509 with the Reflect metadata it needs; the tests make certificates with it.
const x509 = await import("../src/x509-library.js").then(() => import("@peculiar/x509"));

const sha256 = (data: Uint8Array | string) => createHash("sha256").update(data).digest();

/** A block's Merkle leaf as node/ledger/src/block.rs makes it: sha256("runnel.leaf.v1" || timestamp u64be || bytes). */
function orderedLeaf(timestampMs: bigint, transaction: Uint8Array): Buffer {
  const timestamp = Buffer.alloc(8);
  timestamp.writeBigUInt64BE(timestampMs);
  return sha256(Buffer.concat([Buffer.from("runnel.leaf.v1"), timestamp, transaction]));
}

describe("transaction formats (node/api/src/tx.rs)", () => {
  test("tx id is sha256(nonce || creator) in lowercase hex", async () => {
    const nonce = new Uint8Array(24).fill(7);
    const creator = new TextEncoder().encode("certificate");
    expect(await transactionId(nonce, creator)).toBe(sha256(Buffer.concat([nonce, creator])).toString("hex"));
  });

  test("signed messages are the domain tag followed by the sha256 of the bytes", async () => {
    const bytes = new TextEncoder().encode("encoded message");
    expect(Buffer.from(await proposalMessage(bytes))).toEqual(
      Buffer.concat([Buffer.from("runnel.proposal.v1"), sha256(bytes)]),
    );
    expect(Buffer.from(await transactionMessage(bytes))).toEqual(
      Buffer.concat([Buffer.from("runnel.transaction.v1"), sha256(bytes)]),
    );
  });
});

describe("keys and signatures", () => {
  test("a WebCrypto signature verifies with node:crypto, from PEM, DER and seed alike", async () => {
    const { privateKey, publicKey } = generateKeyPairSync("ed25519");
    const pem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    const der = new Uint8Array(privateKey.export({ type: "pkcs8", format: "der" }));
    const seed = der.subarray(der.length - 32);
    const message = new TextEncoder().encode("runnel.proposal.v1 and a hash");
    for (const key of [pem, der, seed]) {
      const signature = await newPrivateKeySigner(key)(message);
      expect(signature).toHaveLength(64);
      expect(verify(null, message, publicKey, signature)).toBe(true);
    }
  });

  test("a PKCS#8 v2 key (with its public key, as runnel init writes) reads as its seed", () => {
    const { privateKey } = generateKeyPairSync("ed25519");
    const v1 = new Uint8Array(privateKey.export({ type: "pkcs8", format: "der" }));
    const seed = v1.subarray(v1.length - 32);
    const publicRaw = createPublicKey(privateKey).export({ type: "spki", format: "der" }).subarray(12);
    // OneAsymmetricKey v2: version 1, [1] publicKey.
    const v2 = Buffer.concat([
      Buffer.from([0x30, 0x51, 0x02, 0x01, 0x01, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20]),
      seed,
      Buffer.from([0x81, 0x21, 0x00]),
      publicRaw,
    ]);
    expect(Buffer.from(ed25519Pkcs8(new Uint8Array(v2)))).toEqual(Buffer.from(v1));
  });

  test("malformed keys and certificates are refused with a clear error", async () => {
    expect(() => ed25519Pkcs8("not a pem")).toThrow(/no -----BEGIN PRIVATE KEY-----/);
    expect(() => ed25519Pkcs8(new Uint8Array([0x30, 0x03, 0x02, 0x01, 0x00]))).toThrow(/not an Ed25519 private key/);
    const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    expect(() => ed25519Pkcs8(new Uint8Array(privateKey.export({ type: "pkcs8", format: "der" })))).toThrow(
      /not an Ed25519 private key/,
    );
    expect(() => identityFromPem("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----")).toThrow(
      /CERTIFICATE/,
    );
  });
});

/** A certificate signed by `issuer` (self-signed without one), as `runnel init` issues them. */
async function certificate(
  subject: string,
  keys: CryptoKeyPair,
  issuer?: { subject: string; keys: CryptoKeyPair },
): Promise<Uint8Array> {
  const signingAlgorithm = keys.privateKey.algorithm.name === "Ed25519" ? { name: "Ed25519" } : { name: "ECDSA", hash: "SHA-256" };
  const made = await x509.X509CertificateGenerator.create({
    serialNumber: "0a1b",
    subject,
    issuer: issuer?.subject ?? subject,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 86_400_000),
    publicKey: keys.publicKey,
    signingKey: (issuer?.keys ?? keys).privateKey,
    signingAlgorithm: issuer === undefined ? signingAlgorithm : { name: "Ed25519" },
  });
  return new Uint8Array(made.rawData);
}

const ed25519Keys = async () =>
  (await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"])) as CryptoKeyPair;

describe("certificates (X.509)", () => {
  test("parse: names, serial, validity, the Ed25519 key that verifies the subject's signatures", async () => {
    const keys = await ed25519Keys();
    const ca = { subject: "CN=ca.org1, O=Org1", keys: await ed25519Keys() };
    const parsed = await parseCertificate(await certificate("CN=client, O=Org1", keys, ca));
    expect(parsed.subject).toBe("CN=client, O=Org1");
    expect(parsed.issuer).toBe("CN=ca.org1, O=Org1");
    expect(parsed.serialNumber).toBe("0a1b");
    expect(parsed.keyAlgorithm).toBe("Ed25519");
    expect(parsed.notBefore.getTime()).toBeLessThan(Date.now());
    expect(parsed.notAfter.getTime()).toBeGreaterThan(Date.now());
    const message = new TextEncoder().encode("runnel.seal.v1 and a hash");
    const signature = await crypto.subtle.sign({ name: "Ed25519" }, keys.privateKey, message);
    expect(await crypto.subtle.verify({ name: "Ed25519" }, await parsed.ed25519Key(), signature, message)).toBe(true);
  });

  test("isIssuedBy: the issuer's name and signature, and nothing else", async () => {
    const ca = { subject: "CN=ca.org1, O=Org1", keys: await ed25519Keys() };
    const other = { subject: "CN=ca.org1, O=Org1", keys: await ed25519Keys() };
    const caCertificate = await parseCertificate(await certificate(ca.subject, ca.keys));
    const otherCertificate = await parseCertificate(await certificate(other.subject, other.keys));
    const leafDer = await certificate("CN=orderer, O=Org1", await ed25519Keys(), ca);
    const leaf = await parseCertificate(leafDer);
    expect(await leaf.isIssuedBy(caCertificate)).toBe(true);
    expect(await caCertificate.isIssuedBy(caCertificate)).toBe(true);
    // The same name with another key, the wrong way round, a forged signature.
    expect(await leaf.isIssuedBy(otherCertificate)).toBe(false);
    expect(await caCertificate.isIssuedBy(leaf)).toBe(false);
    const forged = leafDer.slice();
    forged[forged.length - 1]! ^= 1;
    expect(await (await parseCertificate(forged)).isIssuedBy(caCertificate)).toBe(false);
  });

  test("malformed, oversized and non-Ed25519 certificates are refused with a clear error", async () => {
    for (const bad of [new Uint8Array(0), new Uint8Array([1, 2, 3]), new Uint8Array([0x30, 0x03, 0x02, 0x01, 0x00])]) {
      await expect(parseCertificate(bad)).rejects.toThrow(TypeError);
      await expect(parseCertificate(bad)).rejects.toThrow(/not an X.509 certificate/);
    }
    const good = await certificate("CN=client, O=Org1", await ed25519Keys());
    await expect(parseCertificate(good.subarray(0, good.length - 10))).rejects.toThrow(/not an X.509 certificate/);
    const oversized = new Uint8Array(CERTIFICATE_BYTES_MAX + 1);
    oversized.set(good);
    await expect(parseCertificate(oversized)).rejects.toThrow(/more than/);
    const ecKeys = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
      "sign",
      "verify",
    ])) as CryptoKeyPair;
    const ec = await certificate("CN=ec, O=Org1", ecKeys);
    await expect(identityCertificate(identityFromDer(ec))).rejects.toThrow(/must be Ed25519, not ECDSA/);
    await expect((await parseCertificate(ec)).ed25519Key()).rejects.toThrow(/not Ed25519/);
    await expect(identityCertificate(identityFromDer(new Uint8Array([0x30, 0x00])))).rejects.toThrow(
      /not an X.509 certificate/,
    );
    const identity = identityFromDer(good, "Org1");
    expect(identity).toEqual({ org: "Org1", credentials: good });
    expect((await identityCertificate(identity)).subject).toBe("CN=client, O=Org1");
  });

  test("the file helpers check the certificate: a wrong file is a TypeError naming it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "runnel-identity-"));
    mkdirSync(join(dir, "identities", "Org1"), { recursive: true });
    const pem = (der: Uint8Array) =>
      `-----BEGIN CERTIFICATE-----\n${Buffer.from(der).toString("base64")}\n-----END CERTIFICATE-----\n`;
    const key = generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    const good = await certificate("CN=client, O=Org1", await ed25519Keys());
    const ecKeys = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
      "sign",
      "verify",
    ])) as CryptoKeyPair;
    for (const [role, der] of [
      ["client", good],
      ["ec", await certificate("CN=ec, O=Org1", ecKeys)],
      ["garbage", new Uint8Array([0x30, 0x03, 0x02, 0x01, 0x00])],
    ] as const) {
      writeFileSync(join(dir, "identities", "Org1", `${role}.pem`), pem(der));
      writeFileSync(join(dir, "identities", "Org1", `${role}.key`), key);
    }
    const loaded = await loadNetworkIdentity(dir, "Org1", "client");
    expect(Buffer.from(loaded.identity.credentials)).toEqual(Buffer.from(good));
    const ecPath = join(dir, "identities", "Org1", "ec.pem");
    await expect(loadNetworkIdentity(dir, "Org1", "ec")).rejects.toThrow(TypeError);
    await expect(loadNetworkIdentity(dir, "Org1", "ec")).rejects.toThrow(`${ecPath}: an identity's key must be Ed25519`);
    await expect(identities.fromPemFile(join(dir, "identities", "Org1", "garbage.pem"))).rejects.toThrow(
      /garbage\.pem: not an X\.509 certificate/,
    );
  });
});

describe("seals and inclusion proofs, against the network's CAs", () => {
  const DAY_MS = 86_400_000;

  /** A certificate as `runnel init` issues them: Ed25519, `issuer` signing (self-signed without one). */
  async function issue(options: {
    subject: string;
    keys: CryptoKeyPair;
    issuer?: { subject: string; keys: CryptoKeyPair };
    notBefore?: number;
    notAfter?: number;
  }): Promise<Uint8Array> {
    const now = Date.now();
    const made = await x509.X509CertificateGenerator.create({
      serialNumber: "01",
      subject: options.subject,
      issuer: options.issuer?.subject ?? options.subject,
      notBefore: new Date(options.notBefore ?? now - DAY_MS),
      notAfter: new Date(options.notAfter ?? now + 365 * DAY_MS),
      publicKey: options.keys.publicKey,
      signingKey: (options.issuer?.keys ?? options.keys).privateKey,
      signingAlgorithm: { name: "Ed25519" },
    });
    return new Uint8Array(made.rawData);
  }

  const pem = (der: Uint8Array) =>
    `-----BEGIN CERTIFICATE-----\n${Buffer.from(der).toString("base64")}\n-----END CERTIFICATE-----\n`;

  /** A network: Org1's CA and an orderer it issued. */
  async function network(org = "Org1") {
    const ca = { subject: `O=${org}, CN=ca.${org}`, keys: await ed25519Keys() };
    const caDer = await issue(ca);
    const ordererKeys = await ed25519Keys();
    const orderer = await issue({ subject: `O=${org}, OU=orderer, CN=orderer0.${org}`, keys: ordererKeys, issuer: ca });
    return { ca, caDer, caPem: pem(caDer), ordererKeys, orderer };
  }

  /** sha256 of a leaf and of an inner node (RFC 6962). */
  const leafHash = (leaf: Uint8Array) => sha256(Buffer.concat([Buffer.from([0]), leaf]));
  const nodeHash = (left: Uint8Array, right: Uint8Array) => sha256(Buffer.concat([Buffer.from([1]), left, right]));

  /** A `SignedTransaction` whose proposal has `nonce`, with its id. */
  async function signedTransaction(nonce: number) {
    const creator = new TextEncoder().encode("creator certificate");
    const proposal = toBinary(
      txProto.ProposalSchema,
      create(txProto.ProposalSchema, { channel: "main", contract: "kv", function: "put", creator, nonce: new Uint8Array(24).fill(nonce) }),
    );
    const transaction = toBinary(
      txProto.TransactionSchema,
      create(txProto.TransactionSchema, { proposal: { proposal, signature: new Uint8Array(64) }, payload: new Uint8Array() }),
    );
    const bytes = toBinary(txProto.SignedTransactionSchema, create(txProto.SignedTransactionSchema, { transaction, signature: new Uint8Array(64) }));
    return { bytes, id: await transactionId(new Uint8Array(24).fill(nonce), creator) };
  }

  /**
   * Block 7 over `leaves` (seqs 40, 41, ...), sealed at `timestampMs` by `keys`, carrying
   * `orderer`, then signed by each of `more` as well.
   */
  async function sealedBlock(
    keys: CryptoKeyPair,
    orderer: Uint8Array,
    options: { timestampMs?: bigint; leaves?: Uint8Array[]; more?: { keys: CryptoKeyPair; orderer: Uint8Array }[] } = {},
  ) {
    const leaves = options.leaves ?? [new Uint8Array(32).fill(1), new Uint8Array(32).fill(2)];
    const txRoot = leaves.length === 2 ? nodeHash(leafHash(leaves[0]!), leafHash(leaves[1]!)) : leafHash(leaves[0]!);
    const timestampMs = options.timestampMs ?? BigInt(Date.now());
    const lastSeq = 40n + BigInt(leaves.length) - 1n;
    const seal = toBinary(
      BlockSealSchema,
      create(BlockSealSchema, { number: 7n, firstSeq: 40n, lastSeq, previousHash: new Uint8Array(32), txRoot, timestampMs }),
    );
    const hash = sha256(seal);
    const message = Buffer.concat([Buffer.from(SEAL_DOMAIN), hash]);
    const signers = [{ keys, orderer }, ...(options.more ?? [])];
    const signatures = await Promise.all(
      signers.map(async (signer) => ({
        orderer: signer.orderer,
        signature: new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, signer.keys.privateKey, message)),
      })),
    );
    return {
      number: 7n,
      firstSeq: 40n,
      lastSeq,
      previousHash: "00".repeat(32),
      hash: hash.toString("hex"),
      txRoot: txRoot.toString("hex"),
      timestampMs,
      signedSeal: toBinary(SignedSealSchema, create(SignedSealSchema, { seal, signatures })),
      transactions: [],
    };
  }

  test("a seal by an orderer of a trusted CA is valid, the CA given as PEM, DER, a bundle or parsed", async () => {
    const net = await network();
    const block = await sealedBlock(net.ordererKeys, net.orderer);
    const valid = {
      valid: true,
      orderer: net.orderer,
      ordererOrg: "Org1",
      ordererName: "orderer0.Org1",
      signers: [{ org: "Org1", name: "orderer0.Org1" }],
    };
    expect(await verifySeal(block, { trustedCas: [net.caPem] })).toEqual(valid);
    expect(await verifySeal(block, { trustedCas: [net.caDer] })).toEqual(valid);
    const other = await network("Org2");
    expect(await verifySeal(block, { trustedCas: [other.caPem + net.caPem] })).toEqual(valid);
    expect(await verifySeal(block, { trustedCas: await parseTrustedCas([net.caPem]) })).toEqual(valid);
  });

  test("every signature a seal carries must hold, each by a distinct orderer", async () => {
    const net = await network();
    const other = await network("Org2");
    const trustedCas = [net.caPem, other.caPem];
    // Two orderers vouching for one seal, as a BFT ordering service would have them.
    const two = await sealedBlock(net.ordererKeys, net.orderer, { more: [{ keys: other.ordererKeys, orderer: other.orderer }] });
    expect(await verifySeal(two, { trustedCas })).toMatchObject({
      valid: true,
      signers: [
        { org: "Org1", name: "orderer0.Org1" },
        { org: "Org2", name: "orderer0.Org2" },
      ],
    });
    const twice = await sealedBlock(net.ordererKeys, net.orderer, { more: [{ keys: net.ordererKeys, orderer: net.orderer }] });
    expect(await verifySeal(twice, { trustedCas })).toMatchObject({ valid: false, reason: "orderer Org1/orderer0.Org1 signs the seal twice" });
    // The second signer's certificate with a key that is not its own: its signature fails.
    const forged = await sealedBlock(net.ordererKeys, net.orderer, { more: [{ keys: net.ordererKeys, orderer: other.orderer }] });
    expect(await verifySeal(forged, { trustedCas })).toMatchObject({ valid: false, reason: "the orderer's signature over the seal does not verify" });
    const none = await sealedBlock(net.ordererKeys, net.orderer);
    const signed = fromBinary(SignedSealSchema, none.signedSeal);
    signed.signatures = [];
    expect(await verifySeal({ ...none, signedSeal: toBinary(SignedSealSchema, signed) }, { trustedCas })).toMatchObject({
      valid: false,
      reason: "the seal carries 0 signatures; a seal carries 1 to 32",
    });
  });

  test("given the orderers the network names, a seal by any other orderer is not valid", async () => {
    const net = await network();
    const other = await network("Org2");
    const trustedCas = [net.caPem, other.caPem];
    const block = await sealedBlock(net.ordererKeys, net.orderer);
    const named = (org: string) => [{ org, name: `orderer0.${org}` }];
    expect(await verifySeal(block, { trustedCas, orderers: named("Org1") })).toMatchObject({ valid: true });
    // Org1's orderer, removed from the network in favour of Org2's: its certificate is
    // still issued by a trusted CA, but it may no longer sign.
    expect(await verifySeal(block, { trustedCas, orderers: named("Org2") })).toMatchObject({
      valid: false,
      reason: "orderer Org1/orderer0.Org1 is not one of the orderers that may sign (the network definition in force names others)",
    });
    // The same name in another organisation is another orderer.
    expect(await verifySeal(block, { trustedCas, orderers: [{ org: "Org2", name: "orderer0.Org1" }] })).toMatchObject({ valid: false });
    const two = await sealedBlock(net.ordererKeys, net.orderer, { more: [{ keys: other.ordererKeys, orderer: other.orderer }] });
    expect(await verifySeal(two, { trustedCas, orderers: named("Org1") })).toMatchObject({ valid: false });
    expect(await verifySeal(two, { trustedCas, orderers: [...named("Org1"), ...named("Org2")] })).toMatchObject({ valid: true });
  });

  test("a BFT network's seal needs n - f distinct members, each with the key the definition names", async () => {
    const nets = await Promise.all(["Org1", "Org2", "Org3", "Org4"].map((org) => network(org)));
    const trustedCas = nets.map((net) => net.caPem);
    const signedBy = (count: number) =>
      sealedBlock(nets[0]!.ordererKeys, nets[0]!.orderer, {
        more: nets.slice(1, count).map((net) => ({ keys: net.ordererKeys, orderer: net.orderer })),
      });
    const members = nets.map((_, i) => ({ org: `Org${i + 1}`, name: `orderer0.Org${i + 1}` }));
    const definition = { ordering: "bft", orderers: members };
    expect(sealQuorum(definition)).toBe(3);
    expect(sealQuorum({ ordering: "bft", orderers: new Array(7).fill(members[0]) })).toBe(5);
    expect(sealQuorum({ orderers: members })).toBe(SEAL_SIGNERS_REQUIRED);
    const quorum = sealQuorum(definition);
    // One orderer's signature, even the one that cut the block, and two are not enough.
    for (const count of [1, 2]) {
      expect(await verifySeal(await signedBy(count), { trustedCas, orderers: members, quorum })).toMatchObject({
        valid: false,
        reason: `the seal carries the signatures of ${count} orderers; this ordering service needs 3`,
      });
    }
    expect(await verifySeal(await signedBy(3), { trustedCas, orderers: members, quorum })).toMatchObject({ valid: true });
    expect(await verifySeal(await signedBy(4), { trustedCas, orderers: members, quorum })).toMatchObject({ valid: true });
    // A member named with another key than its certificate's may not sign.
    const rekeyed = members.map((member, i) => (i === 1 ? { ...member, key: "00".repeat(32) } : member));
    expect(await verifySeal(await signedBy(3), { trustedCas, orderers: rekeyed, quorum })).toMatchObject({ valid: false });
  });

  test("given the keys the network revoked, a seal signed by one of them is not valid", async () => {
    const net = await network();
    const block = await sealedBlock(net.ordererKeys, net.orderer);
    const raw = new Uint8Array(await crypto.subtle.exportKey("raw", net.ordererKeys.publicKey));
    const revoked = `ed25519:${Buffer.from(raw).toString("hex")}`;
    expect(await verifySeal(block, { trustedCas: [net.caPem], revoked: [] })).toMatchObject({ valid: true });
    expect(await verifySeal(block, { trustedCas: [net.caPem], revoked: [revoked] })).toMatchObject({
      valid: false,
      reason: `orderer Org1/orderer0.Org1 is revoked (${revoked})`,
    });
  });

  test("without trusted CAs a seal is never valid", async () => {
    const net = await network();
    const block = await sealedBlock(net.ordererKeys, net.orderer);
    expect(await verifySeal(block, { trustedCas: [] })).toEqual({
      valid: false,
      code: "NO_TRUST",
      reason: NO_TRUSTED_CA,
      orderer: net.orderer,
    });
    // From JavaScript, without the options at all: the same answer, not an exception.
    const untyped = verifySeal as (block: unknown) => ReturnType<typeof verifySeal>;
    expect(await untyped(block)).toMatchObject({ valid: false, reason: NO_TRUSTED_CA });
  });

  test("an orderer certificate from another CA is invalid: same name with another key, or another name", async () => {
    const net = await network();
    const block = await sealedBlock(net.ordererKeys, net.orderer);
    const impostor = await network();
    expect(await verifySeal(block, { trustedCas: [impostor.caPem] })).toMatchObject({
      valid: false,
      reason: "the seal's certificate: it is not signed by the trusted CA O=Org1, CN=ca.Org1",
    });
    expect(await verifySeal(block, { trustedCas: [(await network("Org2")).caPem] })).toMatchObject({
      valid: false,
      reason: "the seal's certificate: its issuer, O=Org1, CN=ca.Org1, is none of the trusted CAs",
    });
    // A self-made orderer certificate, signing its own seal: the CA check refuses it.
    const selfMade = await issue({ subject: "O=Org1, OU=orderer, CN=orderer0.Org1", keys: net.ordererKeys });
    expect(await verifySeal(await sealedBlock(net.ordererKeys, selfMade), { trustedCas: [net.caPem] })).toMatchObject({
      valid: false,
      reason: expect.stringMatching(/none of the trusted CAs/),
    });
  });

  test("a certificate of the right CA with another role, no role, or another organisation is invalid", async () => {
    const net = await network();
    const trustedCas = [net.caPem];
    const keys = await ed25519Keys();
    const client = await issue({ subject: "O=Org1, OU=client, CN=client.Org1", keys, issuer: net.ca });
    expect(await verifySeal(await sealedBlock(keys, client), { trustedCas })).toMatchObject({
      valid: false,
      reason: "the seal's certificate: its role is client, not orderer",
    });
    const noRole = await issue({ subject: "O=Org1, CN=orderer0.Org1", keys, issuer: net.ca });
    expect(await verifySeal(await sealedBlock(keys, noRole), { trustedCas })).toMatchObject({
      reason: "the seal's certificate: it has no role (no OU in its subject)",
    });
    const odd = await issue({ subject: "O=Org1, OU=janitor, CN=orderer0.Org1", keys, issuer: net.ca });
    expect(await verifySeal(await sealedBlock(keys, odd), { trustedCas })).toMatchObject({
      reason: expect.stringMatching(/role "janitor" is none of/),
    });
    const liar = await issue({ subject: "O=Org2, OU=orderer, CN=orderer0.Org2", keys, issuer: net.ca });
    expect(await verifySeal(await sealedBlock(keys, liar), { trustedCas })).toMatchObject({
      reason: `the seal's certificate: it claims organisation "Org2", but its CA is Org1's`,
    });
    // The role is read as the node reads it, whatever its case.
    const shouting = await issue({ subject: "O=Org1, OU=ORDERER, CN=orderer0.Org1", keys, issuer: net.ca });
    expect(await verifySeal(await sealedBlock(keys, shouting), { trustedCas })).toMatchObject({ valid: true });
  });

  test("validity is judged at the seal's time: expired or not yet valid then is invalid, expired since is valid", async () => {
    const net = await network();
    const trustedCas = [net.caPem];
    const keys = await ed25519Keys();
    const now = Date.now();
    const lapsed = await issue({
      subject: "O=Org1, OU=orderer, CN=orderer0.Org1",
      keys,
      issuer: net.ca,
      notBefore: now - 10 * DAY_MS,
      notAfter: now - DAY_MS,
    });
    expect(await verifySeal(await sealedBlock(keys, lapsed), { trustedCas })).toMatchObject({
      valid: false,
      reason: expect.stringMatching(/^the seal's certificate: it was expired at .* \(valid from .* to .*\)$/),
    });
    const sealedThen = await sealedBlock(keys, lapsed, { timestampMs: BigInt(now - 5 * DAY_MS) });
    expect(await verifySeal(sealedThen, { trustedCas })).toMatchObject({ valid: true });
    const early = await sealedBlock(net.ordererKeys, net.orderer, { timestampMs: BigInt(now - 2 * DAY_MS) });
    expect(await verifySeal(early, { trustedCas })).toMatchObject({
      valid: false,
      reason: expect.stringMatching(/it was not yet valid at/),
    });
  });

  test("a seal signed by another key, or with fields that differ, is invalid, never thrown", async () => {
    const net = await network();
    const trustedCas = [net.caPem];
    expect(await verifySeal(await sealedBlock(await ed25519Keys(), net.orderer), { trustedCas })).toMatchObject({
      valid: false,
      reason: "the orderer's signature over the seal does not verify",
    });
    const block = await sealedBlock(net.ordererKeys, net.orderer);
    expect(await verifySeal({ ...block, timestampMs: block.timestampMs + 1n }, { trustedCas })).toMatchObject({
      reason: "the block's fields differ from its signed seal",
    });
    expect(await verifySeal({ ...block, hash: "00".repeat(32) }, { trustedCas })).toMatchObject({
      reason: "the seal does not hash to the block's hash",
    });
    expect(await verifySeal({ ...block, signedSeal: new Uint8Array([0xff, 0xff]) }, { trustedCas })).toMatchObject({
      valid: false,
      reason: expect.stringMatching(/^the signed seal does not decode/),
    });
    const garbage = new Uint8Array([0x30, 0x03, 0x02, 0x01, 0x00]);
    expect(await verifySeal(await sealedBlock(net.ordererKeys, garbage), { trustedCas })).toMatchObject({
      valid: false,
      reason: expect.stringMatching(/^the seal's certificate: not an X.509 certificate/),
    });
    const ecKeys = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
      "sign",
      "verify",
    ])) as CryptoKeyPair;
    expect(await verifySeal(await sealedBlock(net.ordererKeys, await certificate("CN=ec", ecKeys)), { trustedCas })).toMatchObject({
      valid: false,
      reason: expect.stringMatching(/not Ed25519/),
    });
  });

  test("trusted CAs must be self-signed Ed25519 certificates naming their organisation; bad ones are refused", async () => {
    const net = await network();
    const block = await sealedBlock(net.ordererKeys, net.orderer);
    await expect(parseTrustedCas(["not a certificate"])).rejects.toThrow(/trusted CA 1: not PEM/);
    await expect(parseTrustedCas([pem(net.orderer)])).rejects.toThrow(/not a self-signed Ed25519 certificate/);
    const noOrg = await issue({ subject: "CN=ca", keys: await ed25519Keys() });
    await expect(parseTrustedCas([noOrg])).rejects.toThrow(/no organisation \(O\)/);
    await expect(parseTrustedCas([new Uint8Array([1, 2, 3])])).rejects.toThrow(/CA certificate 1: not an X.509 certificate/);
    expect(await verifySeal(block, { trustedCas: [pem(net.orderer)] })).toMatchObject({
      valid: false,
      reason: expect.stringMatching(/^the trusted CAs: .*not a self-signed/),
    });
    expect((await parseTrustedCas([net.caPem])).map((ca) => ca.org)).toEqual(["Org1"]);
  });

  test("an inclusion proof is valid for the transaction asked about only", async () => {
    const net = await network();
    const trustedCas = [net.caPem];
    const [first, second] = [await signedTransaction(1), await signedTransaction(2)];
    const [firstAt, secondAt] = [1_700_000_000_001n, 1_700_000_000_002n];
    const block = await sealedBlock(net.ordererKeys, net.orderer, {
      leaves: [orderedLeaf(firstAt, first.bytes), orderedLeaf(secondAt, second.bytes)],
    });
    const proof = { block, transaction: first.bytes, seq: 40n, timestampMs: firstAt, path: [leafHash(orderedLeaf(secondAt, second.bytes))] };
    expect(await verifyInclusionProof(proof, first.id, { trustedCas })).toMatchObject({
      valid: true,
      transactionId: first.id,
      leaf: orderedLeaf(firstAt, first.bytes).toString("hex"),
      computedRoot: block.txRoot,
    });
    // The same bytes at another time are another leaf: a changed timestamp leads elsewhere.
    for (const timestampMs of [firstAt + 1n, firstAt - 1n, secondAt, 0n, 2n ** 64n - 1n]) {
      expect(await verifyInclusionProof({ ...proof, timestampMs }, first.id, { trustedCas })).toMatchObject({
        valid: false,
        leaf: orderedLeaf(timestampMs, first.bytes).toString("hex"),
        reason: "the path does not lead to the seal's Merkle root",
      });
    }
    for (const timestampMs of [-1n, 2n ** 64n]) {
      expect(await verifyInclusionProof({ ...proof, timestampMs }, first.id, { trustedCas })).toMatchObject({
        valid: false,
        leaf: "",
        reason: `timestamp ${timestampMs} is not a u64`,
      });
    }
    expect(await verifyInclusionProof(proof, first.id.toUpperCase(), { trustedCas })).toMatchObject({ valid: true });
    // A valid proof of another transaction, answered for the one asked about.
    expect(await verifyInclusionProof(proof, second.id, { trustedCas })).toMatchObject({
      valid: false,
      reason: `the proof is for transaction ${first.id}, not ${second.id}`,
    });
    const secondProof = { block, transaction: second.bytes, seq: 41n, timestampMs: secondAt, path: [leafHash(orderedLeaf(firstAt, first.bytes))] };
    expect(await verifyInclusionProof(secondProof, second.id, { trustedCas })).toMatchObject({ valid: true });
    expect(await verifyInclusionProof({ ...secondProof, seq: 40n }, second.id, { trustedCas })).toMatchObject({
      valid: false,
      reason: "the path does not lead to the seal's Merkle root",
    });
    expect(await verifyInclusionProof({ ...proof, seq: 42n }, first.id, { trustedCas })).toMatchObject({
      reason: "seq 42 is outside the block",
    });
    expect(await verifyInclusionProof({ ...proof, transaction: new Uint8Array([0xff]) }, first.id, { trustedCas })).toMatchObject({
      valid: false,
      reason: "the proof's transaction does not decode",
    });
    expect(await verifyInclusionProof(proof, first.id, { trustedCas: [] })).toMatchObject({ valid: false, reason: NO_TRUSTED_CA });
    expect(await verifyInclusionProof(proof, first.id, { trustedCas: [(await network()).caPem] })).toMatchObject({
      valid: false,
      reason: expect.stringMatching(/not signed by the trusted CA/),
    });
  });
});

describe("checkpoints", () => {
  test("round-trip through JSON; garbage is refused", () => {
    const state = { event: { seq: 12345678901234567890n, index: 2 }, block: 9n };
    expect(parseCheckpoint(serializeCheckpoint(state))).toEqual(state);
    expect(parseCheckpoint(serializeCheckpoint({}))).toEqual({});
    for (const bad of ["null", "[]", '{"event":{"seq":1,"index":0}}', '{"event":{"seq":"1","index":-1}}', '{"block":"x"}']) {
      expect(() => parseCheckpoint(bad)).toThrow(/not a checkpoint/);
    }
    expect(() => parseCheckpoint("{")).toThrow();
  });
});

describe("call codes", () => {
  test("a deadline the node ran out first is DEADLINE_EXCEEDED, as the client's own; a cancelled call stays CANCELLED", () => {
    const url = "http://127.0.0.1:1";
    const of = (cause: ConnectError) => new CommitStatusError("status", { cause, url }).grpcCode;
    expect(of(new ConnectError("Timeout expired", Code.Canceled))).toBe(Code.DeadlineExceeded);
    expect(of(new ConnectError("the call timed out after 300 ms", Code.DeadlineExceeded))).toBe(Code.DeadlineExceeded);
    expect(of(new ConnectError("the call was canceled", Code.Canceled))).toBe(Code.Canceled);
  });
});

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
  parseCertificate,
  SEAL_DOMAIN,
  verifySeal,
  parseCheckpoint,
  serializeCheckpoint,
} from "../src/index.js";
import { proposalMessage, transactionId, transactionMessage } from "../src/tx.js";
import { create, toBinary } from "@bufbuild/protobuf";
import { BlockSealSchema, SignedSealSchema } from "../src/gen/runnel/v1/block_pb.js";
// The SDK loads @peculiar/x509 with the Reflect metadata it needs; the tests make certificates with it.
const x509 = await import("../src/x509-library.js").then(() => import("@peculiar/x509"));

const sha256 = (data: Uint8Array | string) => createHash("sha256").update(data).digest();

describe("transaction formats (node/ledger/src/tx.rs)", () => {
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

describe("seals", () => {
  /** A block sealed by `keys`, carrying `orderer` as the orderer's certificate. */
  async function sealedBlock(keys: CryptoKeyPair, orderer: Uint8Array) {
    const seal = toBinary(
      BlockSealSchema,
      create(BlockSealSchema, {
        number: 7n,
        firstSeq: 40n,
        lastSeq: 41n,
        previousHash: new Uint8Array(32),
        txRoot: new Uint8Array(32).fill(1),
        timestampMs: 1n,
      }),
    );
    const hash = sha256(seal);
    const message = Buffer.concat([Buffer.from(SEAL_DOMAIN), hash]);
    const signature = new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, keys.privateKey, message));
    return {
      number: 7n,
      firstSeq: 40n,
      lastSeq: 41n,
      previousHash: "00".repeat(32),
      hash: hash.toString("hex"),
      txRoot: "01".repeat(32),
      timestampMs: 1n,
      signedSeal: toBinary(SignedSealSchema, create(SignedSealSchema, { seal, orderer, signature })),
      transactions: [],
    };
  }

  test("verifySeal reads the orderer's key from its certificate; a wrong one is invalid, never thrown", async () => {
    const keys = await ed25519Keys();
    const orderer = await certificate("CN=orderer, O=OrdererOrg", keys);
    expect(await verifySeal(await sealedBlock(keys, orderer))).toEqual({ valid: true, orderer });
    const someoneElse = await certificate("CN=orderer, O=OrdererOrg", await ed25519Keys());
    expect(await verifySeal(await sealedBlock(keys, someoneElse))).toMatchObject({
      valid: false,
      reason: "the orderer's signature over the seal does not verify",
    });
    expect(await verifySeal(await sealedBlock(keys, new Uint8Array([0x30, 0x03, 0x02, 0x01, 0x00])))).toMatchObject({
      valid: false,
      reason: expect.stringMatching(/^the seal's certificate: not an X.509 certificate/),
    });
    const ecKeys = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
      "sign",
      "verify",
    ])) as CryptoKeyPair;
    expect(await verifySeal(await sealedBlock(keys, await certificate("CN=ec", ecKeys)))).toMatchObject({
      valid: false,
      reason: expect.stringMatching(/not Ed25519/),
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

/** The byte formats and parsers, checked without a node against node:crypto. */

import { createHash, createPublicKey, generateKeyPairSync, verify } from "node:crypto";
import { describe, expect, test } from "vitest";
import { ed25519Pkcs8, identityFromPem, newPrivateKeySigner, parseCheckpoint, serializeCheckpoint } from "../src/index.js";
import { proposalMessage, transactionId, transactionMessage } from "../src/tx.js";

const sha256 = (data: Uint8Array | string) => createHash("sha256").update(data).digest();

describe("transaction formats (node/src/tx.rs)", () => {
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

/**
 * The identity the explorer reads as keeps no signing key: the key signs read grants
 * only, and a stored entry holding a key (an older explorer's) is removed unread. The
 * real node and browser are covered by e2e/read-access.spec.ts.
 */

import { READ_GRANT_DOMAIN } from "@runnel/sdk";
import { afterEach, describe, expect, test } from "vitest";
import { grantEnded, grantOnlySigner, savedReader } from "../src/live/reader";

const STORAGE_KEY = "runnel-explorer-reader";

afterEach(() => sessionStorage.clear());

describe("the reader", () => {
  test("its key signs a read grant's digest and nothing else", async () => {
    const signed: Uint8Array[] = [];
    const signer = grantOnlySigner(async (message) => {
      signed.push(message);
      return new Uint8Array(64);
    });
    const digest = new Uint8Array([...READ_GRANT_DOMAIN, ...new Uint8Array(32).fill(7)]);
    await expect(signer(digest)).resolves.toHaveLength(64);
    // A transaction's or a proposal's digest, a grant's domain with another length.
    for (const message of [new Uint8Array(32).fill(1), new Uint8Array([...READ_GRANT_DOMAIN, 1, 2, 3]), new Uint8Array(0)]) {
      await expect(signer(message)).rejects.toThrow("read grants only");
    }
    expect(signed).toEqual([digest]);
  });

  test("a stored private key is removed, never read", () => {
    sessionStorage.setItem(STORAGE_KEY, JSON.stringify({ certificatePem: "-----BEGIN CERTIFICATE-----", keyPem: "-----BEGIN PRIVATE KEY-----" }));
    expect(savedReader()).toBeUndefined();
    expect(sessionStorage.getItem(STORAGE_KEY)).toBeNull();
  });

  test("a certificate and a grant are read back, and the grant ends when it says", () => {
    const kept = { certificatePem: "-----BEGIN CERTIFICATE-----", grant: "CgQ", notAfterMs: 1_000_000 };
    sessionStorage.setItem(STORAGE_KEY, JSON.stringify(kept));
    const reader = savedReader();
    expect(reader).toEqual(kept);
    expect(grantEnded(kept, 900_000)).toBe(false);
    expect(grantEnded(kept, 1_000_000)).toBe(true);
    for (const damaged of ["{", JSON.stringify({ ...kept, notAfterMs: "soon" }), JSON.stringify({ ...kept, grant: "x".repeat(9000) })]) {
      sessionStorage.setItem(STORAGE_KEY, damaged);
      expect(savedReader()).toBeUndefined();
    }
  });
});

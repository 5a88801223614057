import { NO_TRUSTED_CA, type Block, type InclusionCheck, type SealCheck } from "@runnel/sdk";
import { act } from "preact/test-utils";
import { beforeEach, describe, expect, test } from "vitest";
import { ProofResult } from "../src/components/InclusionProofCheck";
import { SealCheckResult } from "../src/components/SealCheck";
import { saveGenesisHash, savedGenesisHash } from "../src/live/genesis-pin";
import { NETWORK_CA_CHARS_MAX, saveNetworkCa, savedNetworkCa, trustedCas, useNetworkCa } from "../src/live/network-ca";
import { verdict } from "../src/model/verdict";
import { match, paths } from "../src/router";
import { mount } from "./mount";

beforeEach(() => localStorage.clear());

const CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----";
const orderer = new Uint8Array([0x30, 0x82]);

describe("verdict", () => {
  test("✓ only when valid; no network CA is neither a pass nor a failure", () => {
    expect(verdict({ valid: true })).toBe("verified");
    expect(verdict({ valid: false, reason: NO_TRUSTED_CA })).toBe("unverified");
    expect(verdict({ valid: false, reason: "the orderer's signature over the seal does not verify" })).toBe("failed");
    expect(verdict({ valid: false })).toBe("failed");
  });
});

describe("the network CA store", () => {
  test("kept in localStorage, trimmed; empty forgets it; nothing given trusts nothing", () => {
    expect(savedNetworkCa()).toBe("");
    expect(trustedCas(savedNetworkCa())).toEqual([]);
    saveNetworkCa(`\n${CA}\n\n`);
    expect(savedNetworkCa()).toBe(`${CA}\n`);
    expect(trustedCas(savedNetworkCa())).toEqual([`${CA}\n`]);
    saveNetworkCa("   ");
    expect(savedNetworkCa()).toBe("");
    expect(() => saveNetworkCa("x".repeat(NETWORK_CA_CHARS_MAX + 1))).toThrow(RangeError);
  });

  test("views re-render when it changes", () => {
    function Shown() {
      return <span>{useNetworkCa() === "" ? "none" : "given"}</span>;
    }
    const el = mount(<Shown />);
    expect(el.textContent).toBe("none");
    act(() => saveNetworkCa(CA));
    expect(el.textContent).toBe("given");
    act(() => saveNetworkCa(""));
    expect(el.textContent).toBe("none");
  });

  test("the settings page has its URL", () => {
    expect(match(paths.settings()).page).toBe("settings");
  });
});

describe("SealCheckResult", () => {
  test("valid: ✓ naming the orderer and its CA", () => {
    const result: SealCheck = { valid: true, orderer, ordererOrg: "Org1", ordererName: "orderer0.Org1" };
    const el = mount(<SealCheckResult result={result} fingerprint={"ab".repeat(32)} />);
    const check = el.querySelector<HTMLElement>("[data-testid=seal-check]");
    expect(check?.dataset.state).toBe("verified");
    expect(check?.textContent).toContain("✓ Seal verified");
    expect(check?.textContent).toContain("orderer0.Org1");
    expect(check?.textContent).toContain("Org1's CA");
  });

  test("no network CA: not verified, no ✓, a link to the setting", () => {
    const el = mount(<SealCheckResult result={{ valid: false, reason: NO_TRUSTED_CA, orderer }} fingerprint={"ab".repeat(32)} />);
    const check = el.querySelector<HTMLElement>("[data-testid=seal-check]");
    expect(check?.dataset.state).toBe("unverified");
    expect(check?.textContent).toContain("Not verified: no network CA given.");
    expect(check?.textContent).not.toContain("✓");
    expect(check?.querySelector("a")?.getAttribute("href")).toBe("/settings");
  });

  test("invalid: ✕ with the reason", () => {
    const reason = "the seal's certificate: it is not signed by the trusted CA O=Org1, CN=ca.Org1";
    const el = mount(<SealCheckResult result={{ valid: false, reason, orderer }} fingerprint={"ab".repeat(32)} />);
    const check = el.querySelector<HTMLElement>("[data-testid=seal-check]");
    expect(check?.dataset.state).toBe("failed");
    expect(check?.textContent).toContain("✕ Seal check failed");
    expect(check?.querySelector("[data-testid=check-reason]")?.textContent).toBe(reason);
    expect(check?.textContent).not.toContain("✓");
  });
});

describe("ProofResult", () => {
  const block: Block = {
    number: 3n,
    firstSeq: 10n,
    lastSeq: 11n,
    previousHash: "00".repeat(32),
    hash: "11".repeat(32),
    txRoot: "22".repeat(32),
    timestampMs: 1n,
    signedSeal: new Uint8Array(),
    transactions: [],
  };
  const proof = { block, transaction: new Uint8Array([1]), seq: 11n, timestampMs: 1_700_000_000_123n, path: [new Uint8Array(32)] };
  const base = { orderer, leaf: "33".repeat(32), computedRoot: "22".repeat(32), transactionId: "44".repeat(32) };

  test.each<[InclusionCheck, string, string]>([
    [{ ...base, valid: true, ordererOrg: "Org1", ordererName: "orderer0.Org1" }, "verified", "✓ Inclusion verified"],
    [{ ...base, valid: false, reason: NO_TRUSTED_CA }, "unverified", "Not verified: no network CA given."],
    [{ ...base, valid: false, reason: `the proof is for transaction ${"44".repeat(32)}, not ${"55".repeat(32)}` }, "failed", "✕ Inclusion check failed"],
  ])("%#: the state and its words, with the leaf, path and roots", (result, state, words) => {
    const el = mount(<ProofResult proof={proof} result={result} />);
    const check = el.querySelector<HTMLElement>("[data-testid=inclusion-check]");
    expect(check?.dataset.state).toBe(state);
    expect(check?.textContent).toContain(words);
    if (state !== "verified") expect(check?.textContent).not.toContain("✓");
    expect(check?.textContent).toContain("33".repeat(32));
    // The orderer's time the leaf holds, as a date and as the exact milliseconds.
    expect(check?.querySelector("[data-testid=proof-time]")?.textContent).toBe("2023-11-14 22:13:20.123 UTC (1700000000123 ms)");
  });

  test("a timestamp beyond the range of dates is shown as such, exactly, without breaking the page", () => {
    const result: InclusionCheck = { ...base, leaf: "", valid: false, reason: "the path does not lead to the seal's Merkle root" };
    const el = mount(<ProofResult proof={{ ...proof, timestampMs: 2n ** 64n - 1n }} result={result} />);
    const check = el.querySelector<HTMLElement>("[data-testid=inclusion-check]");
    expect(check?.dataset.state).toBe("failed");
    expect(check?.querySelector("[data-testid=proof-time]")?.textContent).toBe("not a date (18446744073709551615 ms)");
  });
});

describe("checks by a pinned membership", () => {
  const signers = ["Org1", "Org2", "Org3"].map((org) => ({ org, name: `orderer0.${org}` }));

  test("a BFT seal's ✓ says how many of the quorum signed, of which definition", () => {
    const result: SealCheck = { valid: true, orderer, signers, quorum: 3, ordererCount: 4, definitionSequence: 0n };
    const el = mount(<SealCheckResult result={result} fingerprint={"ab".repeat(32)} pinned />);
    const check = el.querySelector<HTMLElement>("[data-testid=seal-check]");
    expect(check?.dataset.state).toBe("verified");
    expect(check?.dataset.trust).toBe("pinned");
    expect(check?.textContent).toContain("signed by 3 of 4 orderers, quorum 3");
    expect(check?.textContent).toContain("network definition #0");
    expect(check?.textContent).not.toContain("Membership not checked");
  });

  test("a ✓ made against the CAs alone says the membership was not checked", () => {
    const result: SealCheck = { valid: true, orderer, ordererOrg: "Org1", ordererName: "orderer0.Org1" };
    const el = mount(<SealCheckResult result={result} fingerprint={"ab".repeat(32)} />);
    expect(el.querySelector<HTMLElement>("[data-testid=seal-check]")?.dataset.trust).toBe("cas");
    expect(el.querySelector("[data-testid=unpinned]")?.textContent).toContain("Membership not checked");
  });

  test("a failure names its rule", () => {
    const reason = "the seal carries the signatures of 2 of the 4 orderers; this ordering service needs 3";
    const result: SealCheck = { valid: false, code: "QUORUM_NOT_MET", reason, orderer, quorum: 3, ordererCount: 4 };
    const el = mount(<SealCheckResult result={result} fingerprint={"ab".repeat(32)} pinned />);
    const check = el.querySelector<HTMLElement>("[data-testid=seal-check]");
    expect(check?.dataset.state).toBe("failed");
    expect(check?.dataset.rule).toBe("QUORUM_NOT_MET");
    expect(el.querySelector("[data-testid=check-rule]")?.textContent).toBe("QUORUM_NOT_MET");
    expect(el.querySelector("[data-testid=check-reason]")?.textContent).toBe(reason);
    expect(check?.textContent).not.toContain("✓");
  });

  test("the pin is 64 hex digits, kept lowercase; empty unpins", () => {
    expect(savedGenesisHash()).toBe("");
    saveGenesisHash(` ${"AB".repeat(32)} `);
    expect(savedGenesisHash()).toBe("ab".repeat(32));
    for (const bad of ["ab", "zz".repeat(32), "ab".repeat(33)]) expect(() => saveGenesisHash(bad)).toThrow(TypeError);
    expect(savedGenesisHash()).toBe("ab".repeat(32));
    saveGenesisHash("");
    expect(savedGenesisHash()).toBe("");
  });
});

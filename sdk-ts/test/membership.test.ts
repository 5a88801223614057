/**
 * A membership followed from a pinned genesis hash, against what a lying node could
 * answer (test/membership-fixture.ts builds it byte by byte): a genesis other than the
 * pinned one, `_config` updates unsigned, under-signed, forged, self-vouching or out of
 * turn, an update sealed by an orderer it does not trust; and seals checked by the
 * membership: by an orderer an update removed, short of a BFT cluster's quorum. Needs no
 * node; the same checks against a real node are in network.test.ts.
 */

import { beforeAll, describe, expect, test } from "vitest";
import { ValidationCode } from "../src/gen/runnel/v1/api_pb.js";
import { MembershipError, verifyConfigHistory, type TrustedMembership } from "../src/membership.js";
import { verifyInclusionProof, verifySeal } from "../src/proof.js";
import {
  definitionBytes,
  genesisHash,
  history,
  newOrg,
  orderedUpdate,
  sealedBlock,
  type Org,
} from "./membership-fixture.js";

const NOW = BigInt(Date.now());

/** The membership error `promise` rejects with, as `[code, seq]`. */
async function refusal(promise: Promise<unknown>): Promise<[string, bigint | undefined]> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof MembershipError) return [error.code, error.seq];
    throw error;
  }
  throw new Error("the history was accepted");
}

describe("a Raft network of two organisations whose update removes Org2's orderer", () => {
  let org1: Org;
  let org2: Org;
  let genesis: Uint8Array;
  let next: Uint8Array;
  const UPDATE_SEQ = 10n;

  beforeAll(async () => {
    [org1, org2] = [await newOrg("Org1"), await newOrg("Org2")];
    genesis = definitionBytes({ sequence: 0, orgs: [org1, org2], orderers: [org1, org2] });
    next = definitionBytes({ sequence: 1, orgs: [org1, org2], orderers: [org1] });
  });

  /** The removal at seq 10, made as `change` says (honestly by default). */
  const removal = (change: Partial<Parameters<typeof orderedUpdate>[0]> = {}) =>
    orderedUpdate({
      next,
      readVersion: undefined,
      proposer: org1.admin,
      signers: [org1.admin, org2.admin],
      timestampMs: NOW,
      seq: UPDATE_SEQ,
      sealers: [org1.orderer],
      ...change,
    });

  test("an honest history gives each seq its definition; seals by the removed orderer fail from the update on", async () => {
    const membership = await verifyConfigHistory(history(genesis, [await removal()]), genesisHash(genesis));
    expect(membership.definitions.map((d) => [d.definition.sequence, d.fromSeq])).toEqual([
      [0n, 0n],
      [1n, UPDATE_SEQ],
    ]);
    expect(membership.at(9n).definition.orderers.map((o) => o.name)).toEqual(["orderer0.Org1", "orderer0.Org2"]);
    expect(membership.at(UPDATE_SEQ).definition.orderers.map((o) => o.name)).toEqual(["orderer0.Org1"]);
    expect(membership.current.quorum).toBe(1);
    const sealedBy = async (orderer: Org, seq: bigint, lastSeq = seq) =>
      (await sealedBlock({ seq, lastSeq, timestampMs: NOW, sealers: [orderer.orderer] })).block;
    // Before the update Org2's orderer was a member: its seals then stand.
    expect(await verifySeal(await sealedBy(org2, 5n), { membership })).toMatchObject({
      valid: true,
      ordererName: "orderer0.Org2",
      quorum: 1,
      ordererCount: 2,
      definitionSequence: 0n,
    });
    // A block holding the update, or after it, is judged by the definition it put in force.
    for (const [seq, lastSeq] of [[9n, 10n], [11n, 11n], [50n, 50n]] as const) {
      expect(await verifySeal(await sealedBy(org2, seq, lastSeq), { membership })).toMatchObject({
        valid: false,
        code: "ORDERER_NOT_MEMBER",
        definitionSequence: 1n,
      });
      expect(await verifySeal(await sealedBy(org1, seq, lastSeq), { membership })).toMatchObject({ valid: true });
    }
    // Past what the node had validated when asked, the membership does not know.
    expect(await verifySeal(await sealedBy(org1, 101n), { membership })).toMatchObject({ valid: false, code: "MEMBERSHIP_STALE" });
    // With CAs alone (no orderer list), the removed orderer's seal passes: why pinning matters.
    expect(await verifySeal(await sealedBy(org2, 50n), { trustedCas: [org1.caPem, org2.caPem] })).toMatchObject({ valid: true });
    // A membership and caller-supplied trust together are refused, not merged.
    expect(await verifySeal(await sealedBy(org1, 50n), { membership, trustedCas: [org1.caPem] })).toMatchObject({
      valid: false,
      code: "CONFLICTING_OPTIONS",
    });
  });

  test("inclusion proofs are checked through the membership too", async () => {
    const membership = await verifyConfigHistory(history(genesis, [await removal()]), genesisHash(genesis));
    const update = await removal();
    expect(await verifyInclusionProof(update.proof, update.transactionId, { membership })).toMatchObject({ valid: true });
    const { proof } = await sealedBlock({ seq: 60n, transaction: update.proof.transaction, timestampMs: NOW, sealers: [org2.orderer] });
    expect(await verifyInclusionProof(proof, update.transactionId, { membership })).toMatchObject({
      valid: false,
      code: "ORDERER_NOT_MEMBER",
    });
  });

  test("a genesis other than the pinned one, or a pin that is not a hash, is refused", async () => {
    const other = definitionBytes({ sequence: 0, orgs: [org1, org2], orderers: [org1, org2], configPolicy: "ANY admin" });
    expect(await refusal(verifyConfigHistory(history(other, []), genesisHash(genesis)))).toEqual(["GENESIS_HASH_MISMATCH", undefined]);
    expect(await refusal(verifyConfigHistory(history(genesis, []), "00".repeat(32)))).toEqual(["GENESIS_HASH_MISMATCH", undefined]);
    expect(await refusal(verifyConfigHistory(history(genesis, []), "not a hash"))).toEqual(["BAD_PINNED_HASH", undefined]);
    // Upper-case hex pins the same genesis.
    await expect(verifyConfigHistory(history(genesis, []), genesisHash(genesis).toUpperCase())).resolves.toBeDefined();
  });

  test("an update unsigned, under-signed, or signed by a CA it adds itself does not meet MAJORITY admin", async () => {
    const pin = genesisHash(genesis);
    for (const signers of [[], [org1.admin], [org1.admin, org1.admin], [org2.admin]]) {
      expect(await refusal(verifyConfigHistory(history(genesis, [await removal({ signers })]), pin))).toEqual([
        "CONFIG_POLICY_NOT_MET",
        UPDATE_SEQ,
      ]);
    }
    // A rogue organisation whose CA the update itself adds signs as a second org's admin.
    const rogue = await newOrg("Org3");
    const adding = definitionBytes({ sequence: 1, orgs: [org1, org2, rogue], orderers: [org1] });
    const selfVouching = await removal({ next: adding, signers: [org1.admin, rogue.admin] });
    expect(await refusal(verifyConfigHistory(history(genesis, [selfVouching]), pin))).toEqual(["CONFIG_POLICY_NOT_MET", UPDATE_SEQ]);
    // An admin of another network's CA with Org2's name counts for nothing either.
    const impostor = await newOrg("Org2");
    expect(await refusal(verifyConfigHistory(history(genesis, [await removal({ signers: [org1.admin, impostor.admin] })]), pin))).toEqual([
      "CONFIG_POLICY_NOT_MET",
      UPDATE_SEQ,
    ]);
    // Under "ANY admin", one admin's signature is enough.
    const anyGenesis = definitionBytes({ sequence: 0, orgs: [org1, org2], orderers: [org1, org2], configPolicy: "ANY admin" });
    const anyNext = definitionBytes({ sequence: 1, orgs: [org1, org2], orderers: [org1], configPolicy: "ANY admin" });
    await expect(
      verifyConfigHistory(history(anyGenesis, [await removal({ next: anyNext, signers: [org2.admin] })]), genesisHash(anyGenesis)),
    ).resolves.toBeDefined();
  });

  test("a forged signature, a proposer who is no admin, or a revoked admin is refused", async () => {
    const pin = genesisHash(genesis);
    const forged = await removal({ forge: (signature) => signature.map((b, i) => (i === 0 ? b ^ 1 : b)) });
    expect(await refusal(verifyConfigHistory(history(genesis, [forged]), pin))).toEqual(["BAD_CONFIG_SIGNATURE", UPDATE_SEQ]);
    const byOrderer = await removal({ proposer: org1.orderer });
    expect(await refusal(verifyConfigHistory(history(genesis, [byOrderer]), pin))).toEqual(["BAD_CONFIG_SIGNATURE", UPDATE_SEQ]);
    // Org2 revoked its admin's key at genesis: that admin's signature does not count.
    const revoking = definitionBytes({
      sequence: 0,
      orgs: [org1, org2],
      orderers: [org1, org2],
      revoked: { Org2: [`ed25519:${org2.admin.key}`] },
    });
    expect(await refusal(verifyConfigHistory(history(revoking, [await removal()]), genesisHash(revoking)))).toEqual([
      "CONFIG_POLICY_NOT_MET",
      UPDATE_SEQ,
    ]);
  });

  test("an update out of turn, of another shape, or at odds with the node's other answers is refused", async () => {
    const pin = genesisHash(genesis);
    const cases: [Promise<Awaited<ReturnType<typeof removal>>>, string][] = [
      [removal({ readVersion: 3n }), "BAD_CONFIG_UPDATE"],
      [removal({ next: definitionBytes({ sequence: 2, orgs: [org1, org2], orderers: [org1] }) }), "BAD_CONFIG_UPDATE"],
      [removal({ argument: genesis }), "BAD_CONFIG_UPDATE"],
      [removal({ contract: "kv" }), "BAD_CONFIG_UPDATE"],
      [removal({ next: new TextEncoder().encode("{}") }), "BAD_DEFINITION"],
    ];
    for (const [update, code] of cases) {
      expect(await refusal(verifyConfigHistory(history(genesis, [await update]), pin))).toEqual([code, UPDATE_SEQ]);
    }
    const honest = await removal();
    const lies = [
      { ...honest, value: genesis },
      { ...honest, seq: 11n },
      { ...honest, transactionId: "ab".repeat(32) },
    ];
    for (const lie of lies) {
      expect((await refusal(verifyConfigHistory(history(genesis, [lie]), pin)))[0]).toBe("INCONSISTENT_ANSWERS");
    }
    // The node calls it invalid, or shows it under a seal the definition does not trust.
    expect(await refusal(verifyConfigHistory(history(genesis, [{ ...honest, code: ValidationCode.MVCC_READ_CONFLICT }]), pin))).toEqual([
      "CONFIG_UPDATE_NOT_SEALED",
      UPDATE_SEQ,
    ]);
    const sealedByRemoved = await removal({ sealers: [org2.orderer] });
    expect(await refusal(verifyConfigHistory(history(genesis, [sealedByRemoved]), pin))).toEqual(["CONFIG_UPDATE_NOT_SEALED", UPDATE_SEQ]);
    const outsider = await newOrg("Org1");
    expect(await refusal(verifyConfigHistory(history(genesis, [await removal({ sealers: [outsider.orderer] })]), pin))).toEqual([
      "CONFIG_UPDATE_NOT_SEALED",
      UPDATE_SEQ,
    ]);
    // A second update must read the version the first wrote.
    const second = definitionBytes({ sequence: 2, orgs: [org1, org2], orderers: [org1], configPolicy: "ANY admin" });
    const chained = (readVersion: bigint | undefined) =>
      orderedUpdate({
        next: second,
        readVersion,
        proposer: org2.admin,
        signers: [org1.admin, org2.admin],
        timestampMs: NOW,
        seq: 20n,
        sealers: [org1.orderer],
      });
    const two = await verifyConfigHistory(history(genesis, [honest, await chained(UPDATE_SEQ)]), pin);
    expect(two.current.definition.configPolicy).toBe("ANY admin");
    expect(await refusal(verifyConfigHistory(history(genesis, [honest, await chained(undefined)]), pin))).toEqual([
      "BAD_CONFIG_UPDATE",
      20n,
    ]);
    // Listed out of order, the later update reads a version the genesis never had.
    expect(await refusal(verifyConfigHistory(history(genesis, [await chained(UPDATE_SEQ), honest]), pin))).toEqual([
      "BAD_CONFIG_UPDATE",
      20n,
    ]);
  });
});

describe("a Byzantine-fault-tolerant network of four orderers", () => {
  let orgs: Org[];
  let genesis: Uint8Array;
  let membership: TrustedMembership;

  beforeAll(async () => {
    orgs = await Promise.all(["Org1", "Org2", "Org3", "Org4"].map(newOrg));
    genesis = definitionBytes({ sequence: 0, orgs, orderers: orgs, ordering: "bft" });
    membership = await verifyConfigHistory(history(genesis, []), genesisHash(genesis));
  });

  const signedBy = async (...signers: number[]) =>
    (await sealedBlock({ seq: 30n, timestampMs: NOW, sealers: signers.map((i) => orgs[i]!.orderer) })).block;

  test("a seal needs 3 of the 4 members, each once, each with its own key", async () => {
    expect(membership.current.quorum).toBe(3);
    for (const short of [[0], [0, 1], [2, 3]]) {
      expect(await verifySeal(await signedBy(...short), { membership })).toMatchObject({
        valid: false,
        code: "QUORUM_NOT_MET",
        reason: `the seal carries the signatures of ${short.length} of the 4 orderers; this ordering service needs 3`,
      });
    }
    expect(await verifySeal(await signedBy(0, 1, 1), { membership })).toMatchObject({ valid: false, code: "DUPLICATE_SIGNER" });
    expect(await verifySeal(await signedBy(0, 1, 2), { membership })).toMatchObject({
      valid: true,
      quorum: 3,
      ordererCount: 4,
      signers: [
        { org: "Org1", name: "orderer0.Org1" },
        { org: "Org2", name: "orderer0.Org2" },
        { org: "Org3", name: "orderer0.Org3" },
      ],
    });
    expect(await verifySeal(await signedBy(3, 2, 1, 0), { membership })).toMatchObject({ valid: true, quorum: 3 });
    // A certificate of a member's CA and name, with a key other than the one the definition names.
    const twin = await newOrg("Org4");
    const block = (await sealedBlock({ seq: 30n, timestampMs: NOW, sealers: [orgs[0]!.orderer, orgs[1]!.orderer, twin.orderer] }))
      .block;
    expect(await verifySeal(block, { membership })).toMatchObject({ valid: false });
  });

  test("an update may not change the cluster's members", async () => {
    const shrunk = definitionBytes({ sequence: 1, orgs, orderers: orgs.slice(0, 3), ordering: "bft" });
    const update = await orderedUpdate({
      next: shrunk,
      readVersion: undefined,
      proposer: orgs[0]!.admin,
      signers: orgs.map((org) => org.admin),
      timestampMs: NOW,
      seq: 12n,
      sealers: orgs.slice(0, 3).map((org) => org.orderer),
    });
    expect(await refusal(verifyConfigHistory(history(genesis, [update]), genesisHash(genesis)))).toEqual(["BAD_CONFIG_UPDATE", 12n]);
  });
});

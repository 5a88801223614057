/**
 * A membership followed from a pinned genesis hash, against a real two-organisation
 * network (`runnel init`, TLS, reads for members, `runnel start`): the hash `runnel config
 * genesis-hash` prints pins the node's genesis; a configuration update made with `runnel
 * config propose`, `sign` and `submit` is followed, and every seal verifies against the
 * definition in force at its seq. Then the node's own answers, altered as a lying node
 * would send them (the update unsigned, under-signed, forged, left out), are refused with
 * the rule they break. The in-memory hostile cases are in membership.test.ts.
 */

import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  connect,
  loadNetworkIdentity,
  MembershipError,
  readConfigHistory,
  TrustedMembership,
  txProto,
  verifyConfigHistory,
  verifyInclusionProof,
  verifySeal,
  type ConfigHistory,
  type Gateway,
  type Query,
} from "../src/index.js";
import { transactionMessage } from "../src/tx.js";
import { initNetwork, RunnelNode, RUNNEL_BIN } from "./node.js";

/** Runs `runnel` with `args`; its standard output, or throws with its error output. */
function runnel(args: string[]): string {
  const result = spawnSync(RUNNEL_BIN, args, { encoding: "utf8", env: { ...process.env, RUNNEL_LOG: "warn" } });
  if (result.status !== 0) throw new Error(`runnel ${args.join(" ")} failed (${result.status}): ${result.stderr}${result.stdout}`);
  return result.stdout;
}

/** The code of the MembershipError `promise` rejects with. */
async function refusal(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof MembershipError)) throw new Error(`expected a MembershipError, got ${String(error)}`);
  return error.code;
}

describe("a membership followed from the pinned genesis of a real network", () => {
  let node: RunnelNode;
  let gateway: Gateway;
  let query: Query;
  let pinned: string;

  /** `runnel config <command>` as `org`'s admin, against the node. */
  const config = (org: string, ...args: string[]) =>
    runnel([
      "config",
      ...args,
      "--url",
      node.url,
      "--dir",
      node.networkDir,
      "--org",
      org,
    ]);

  beforeAll(async () => {
    node = await RunnelNode.startNetwork(["Org1", "Org2"]);
    const { identity, signer } = await loadNetworkIdentity(node.networkDir, "Org1", "client");
    gateway = connect({ url: node.url, identity, signer, tls: { ca: node.tlsCa } });
    query = gateway.getQuery();
    pinned = runnel(["config", "genesis-hash", node.networkDir]).trim();
  });

  afterAll(async () => {
    gateway?.close();
    await node?.stop();
  });

  test("the hash the CLI prints pins the node's genesis; any other hash is refused", async () => {
    expect(pinned).toMatch(/^[0-9a-f]{64}$/);
    // The same hash from the file as from its directory.
    expect(runnel(["config", "genesis-hash", join(node.networkDir, "network.json")]).trim()).toBe(pinned);
    const membership = await TrustedMembership.fetch(query, pinned);
    expect(membership.definitions).toHaveLength(1);
    expect(membership.current.definition.orgs.map((org) => org.name)).toEqual(["Org1", "Org2"]);
    // Another network with the same organisations' names: its own CAs, its own hash.
    const other = runnel(["config", "genesis-hash", initNetwork(["Org1", "Org2"])]).trim();
    expect(other).not.toBe(pinned);
    expect(await refusal(TrustedMembership.fetch(query, other))).toBe("GENESIS_HASH_MISMATCH");
    expect(await refusal(TrustedMembership.fetch(query, "0".repeat(64)))).toBe("GENESIS_HASH_MISMATCH");
    expect(await refusal(TrustedMembership.fetch(query, "not a hash"))).toBe("BAD_PINNED_HASH");
  });

  test("an update both admins signed is followed, and every seal verifies against the definition in force", async () => {
    // Org2 revokes a key (a made-up one: nothing else changes), signed by both admins
    // as MAJORITY admin of two organisations needs.
    const current = JSON.parse(config("Org1", "show")) as Record<string, unknown> & { orgs: { revoked?: string[] }[] };
    delete current.written_at_seq;
    current.orgs[1]!.revoked = [`ed25519:${"ab".repeat(32)}`];
    const next = join(node.dir, "next.json");
    const update = join(node.dir, "revoke.update");
    writeFileSync(next, JSON.stringify(current));
    config("Org1", "propose", "--definition", next, "--out", update);
    config("Org2", "sign", "--yes", update);
    config("Org1", "submit", update);

    // Until the update's block is sealed, its inclusion proof is not there yet (TX_NOT_SEALED).
    let membership: TrustedMembership | undefined;
    await expect
      .poll(async () => {
        // A fetch that throws is tried again; its last error is what a timeout reports.
        membership = await TrustedMembership.fetch(query, pinned);
        return membership.definitions.length;
      })
      .toBe(2);
    if (membership === undefined) throw new Error("no membership");
    expect(membership.definitions.map((d) => d.definition.sequence)).toEqual([0n, 1n]);
    const updateSeq = membership.current.fromSeq;
    expect(membership.current.revoked).toEqual([`ed25519:${"ab".repeat(32)}`]);
    expect(membership.at(updateSeq - 1n).definition.sequence).toBe(0n);
    const info = await query.getNetworkInfo();
    let checked = 0;
    for (let number = 1n; number <= info.blockHeight; number += 1n) {
      const block = await query.getBlock(number);
      if (!membership.covers(block.lastSeq)) continue;
      const check = await verifySeal(block, { membership });
      expect(check, `block ${number}`).toMatchObject({ valid: true, quorum: 1 });
      expect(check.definitionSequence).toBe(block.lastSeq >= updateSeq ? 1n : 0n);
      checked += 1;
    }
    expect(checked).toBeGreaterThan(0);
    const proof = await query.getInclusionProof(membership.current.transactionId);
    expect(await verifyInclusionProof(proof, membership.current.transactionId, { membership })).toMatchObject({ valid: true });
  });

  test("the node's answers, altered as a lying node would send them, are refused with the rule they break", async () => {
    const history = await readConfigHistory(query);
    expect(history.updates).toHaveLength(1);
    await expect(verifyConfigHistory(history, pinned)).resolves.toBeDefined();
    const honest = history.updates[0]!;

    /** `history` with the update's transaction re-encoded after `change`. */
    const altered = (change: (transaction: txProto.Transaction) => void): ConfigHistory => {
      const signed = fromBinary(txProto.SignedTransactionSchema, honest.proof.transaction);
      const transaction = fromBinary(txProto.TransactionSchema, signed.transaction);
      change(transaction);
      signed.transaction = toBinary(txProto.TransactionSchema, transaction);
      const bytes = toBinary(txProto.SignedTransactionSchema, signed);
      return { ...history, updates: [{ ...honest, proof: { ...honest.proof, transaction: bytes } }] };
    };
    // The proposer's own signature covers the transaction, endorsements and all: the
    // node cannot strip or swap them without breaking it, nor keep it valid otherwise.
    expect(await refusal(verifyConfigHistory(altered((tx) => (tx.endorsements = [])), pinned))).toBe("BAD_CONFIG_SIGNATURE");

    /** The same, re-signed by Org1's admin as proposer: what an admin who alone wants a change could make. */
    const { signer } = await loadNetworkIdentity(node.networkDir, "Org1", "admin");
    const resigned = async (change: (transaction: txProto.Transaction) => void): Promise<ConfigHistory> => {
      const signed = fromBinary(txProto.SignedTransactionSchema, honest.proof.transaction);
      const transaction = fromBinary(txProto.TransactionSchema, signed.transaction);
      change(transaction);
      const bytes = toBinary(txProto.TransactionSchema, transaction);
      const signature = await signer(await transactionMessage(bytes));
      const encoded = toBinary(txProto.SignedTransactionSchema, create(txProto.SignedTransactionSchema, { transaction: bytes, signature }));
      return { ...history, updates: [{ ...honest, proof: { ...honest.proof, transaction: encoded } }] };
    };
    const org1Only = (tx: txProto.Transaction) => {
      tx.endorsements = tx.endorsements.filter((_, i) => i === 0);
    };
    expect(await refusal(verifyConfigHistory(await resigned((tx) => (tx.endorsements = [])), pinned))).toBe("CONFIG_POLICY_NOT_MET");
    expect(await refusal(verifyConfigHistory(await resigned(org1Only), pinned))).toBe("CONFIG_POLICY_NOT_MET");
    const forged = (tx: txProto.Transaction) => {
      for (const e of tx.endorsements) e.signature = e.signature.map((b, i) => (i === 5 ? b ^ 0x40 : b));
    };
    expect(await refusal(verifyConfigHistory(await resigned(forged), pinned))).toBe("BAD_CONFIG_SIGNATURE");
    // Signed by the same admins, in another order: not the bytes the block sealed.
    const signedAgain = await resigned((tx) => tx.endorsements.reverse());
    expect(await refusal(verifyConfigHistory(signedAgain, pinned))).toBe("CONFIG_UPDATE_NOT_SEALED");
    // The update left out, while the definition in force says it was written.
    expect(await refusal(verifyConfigHistory({ ...history, updates: [] }, pinned))).toBe("INCONSISTENT_ANSWERS");
    // Another genesis than the one pinned.
    const genesis = JSON.parse(new TextDecoder().decode(history.genesis)) as { config_policy: string };
    genesis.config_policy = "ANY admin";
    const rewritten = { ...history, genesis: new TextEncoder().encode(JSON.stringify(genesis)) };
    expect(await refusal(verifyConfigHistory(rewritten, pinned))).toBe("GENESIS_HASH_MISMATCH");
  });
});

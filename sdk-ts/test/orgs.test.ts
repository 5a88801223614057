/**
 * The SDK against a network of organisations apart, started by `runnel up` (an orderer
 * and one peer per organisation, each a process holding only its organisation's keys):
 * a client connects to a peer of its own organisation, whose gateway gathers the other
 * organisations' endorsements; contract definitions are approved organisation by
 * organisation; failures name the organisation.
 */

import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  CommitError,
  connect,
  EndorseError,
  loadNetworkFile,
  loadNetworkIdentity,
  type Gateway,
} from "../src/index.js";
// @ts-expect-error: a plain .mjs example without type declarations
import { main } from "../examples/two-orgs.mjs";
import { RunnelUp, RUNNEL_CONTRACTS, uniqueKey } from "./node.js";

/** What examples/two-orgs.mjs returns. */
interface TwoOrgsOutcome {
  read: string;
  endorsedBy: string[];
  refused: string | undefined;
  approvals: string[];
}

describe("a network of two organisations started by runnel up", () => {
  let network: RunnelUp;
  const opened: Gateway[] = [];

  /** A gateway to `org`'s peer as its identity `role`. */
  async function gateway(org: string, role = "client"): Promise<Gateway> {
    const dir = network.orgDir(org);
    const { identity, signer } = await loadNetworkIdentity(dir, org, role);
    const { tlsCas } = await loadNetworkFile(dir);
    const gateway = connect({ url: network.peerUrl(org), identity, signer, tls: { ca: tlsCas } });
    opened.push(gateway);
    return gateway;
  }

  beforeAll(async () => {
    network = await RunnelUp.start(2, 1);
  });
  afterAll(() => {
    for (const gateway of opened) gateway.close();
    network?.down();
  });

  test("an Org1 client through Org1's peer commits with one endorsement from each organisation", async () => {
    const org1 = await gateway("Org1");
    const key = uniqueKey("both");
    await org1.getNetwork("main").getContract("kv").submitTransaction("put", key, "from Org1");
    const org2 = await gateway("Org2");
    const read = await org2.getNetwork("main").getContract("kv").evaluateTransaction("get", key);
    expect(new TextDecoder().decode(read)).toBe('"from Org1"');
    const proposal = await org1.getNetwork("main").getContract("kv").newProposal("put", { arguments: [key, "again"] });
    const transaction = await proposal.endorse();
    const status = await (await transaction.submit()).getStatus();
    expect(status.successful).toBe(true);
    const detail = await org1.getQuery().getTransaction(transaction.getTransactionId());
    expect(detail.endorsements.map((e) => e.endorser?.org).sort()).toEqual(["Org1", "Org2"]);
  });

  test("endorsingOrganizations picks the organisations: Org1 alone does not meet AND(Org1, Org2)", async () => {
    const kv = (await gateway("Org1")).getNetwork("main").getContract("kv");
    const error = await kv
      .submit("put", { arguments: [uniqueKey("alone"), "v"], endorsingOrganizations: ["Org1"] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CommitError);
    expect((error as CommitError).status.codeName).toBe("ENDORSEMENT_POLICY_FAILURE");
  });

  test("the network definition, each peer's health, and kv's approvals by both organisations", async () => {
    const query = (await gateway("Org1")).getQuery();
    const definition = await query.getNetworkDefinition();
    expect(definition.orgs.map((org) => org.name)).toEqual(["Org1", "Org2"]);
    expect(definition.orgs[1]?.peers[0]?.name).toBe("peer0.Org2");
    expect(definition.lifecyclePolicy).toBe("MAJORITY admin");
    const approvals = await query.getContractApprovals("kv");
    expect(approvals.definition?.policy.replace(/\s/g, "")).toBe("AND('Org1.peer','Org2.peer')");
    expect(approvals.approvals.map((a) => [a.sequence, a.org, a.definitionHash === approvals.definitionHash])).toEqual([
      [1n, "Org1", true],
      [1n, "Org2", true],
    ]);
    // Org1's peer asks Org2's for its heights every two seconds.
    let info = await query.getNetworkInfo();
    for (let i = 0; i < 50 && !(info.peers[0]?.alive ?? false); i += 1) {
      await new Promise((done) => setTimeout(done, 100));
      info = await query.getNetworkInfo();
    }
    expect(info.ownOrgs).toEqual(["Org1"]);
    expect(info.peers.map((p) => [p.org, p.name, p.alive])).toEqual([["Org2", "peer0.Org2", true]]);
  });

  test("a definition commits once Org2 approved it: Org1's admin alone is refused, naming Org2", async () => {
    const name = `kv_${Math.random().toString(36).slice(2, 8)}`;
    const code = new Uint8Array(await readFile(join(RUNNEL_CONTRACTS, "kv.wasm")));
    const org1 = await gateway("Org1", "admin");
    const alone = await org1.deployContract("main", { name, code }).catch((e: unknown) => e);
    expect(alone).toBeInstanceOf(EndorseError);
    expect((alone as EndorseError).errorName).toBe("NOT_APPROVED");
    expect((alone as EndorseError).message).toMatch(/not by \[Org2\]/);
    const approved = await (await gateway("Org2", "admin")).approveContract("main", { name, code });
    expect(approved.status.successful).toBe(true);
    // The approval committed on Org2's peer; the commit reads it on Org1's.
    const query = org1.getQuery();
    while ((await query.getNetworkInfo()).validatedHeight < approved.status.seq) {
      await new Promise((done) => setTimeout(done, 20));
    }
    const deployed = await org1.deployContract("main", { name, code });
    expect(deployed.definition.sequence).toBe(1n);
  });

  test("examples/two-orgs.mjs runs against it", async () => {
    const lines: string[] = [];
    const seen = (await main({
      network: network.dir,
      contracts: RUNNEL_CONTRACTS,
      log: (line: string) => lines.push(line),
    })) as TwoOrgsOutcome;
    expect(seen.read).toBe('"hello from Org1"');
    expect(seen.endorsedBy).toEqual(["Org1.peer (peer0.Org1)", "Org2.peer (peer0.Org2)"]);
    expect(seen.refused).toBe("NOT_APPROVED");
    expect(seen.approvals).toEqual(["Org1", "Org2"]);
    expect(lines.length).toBeGreaterThan(4);
  });

  test("with Org2's only peer down, a transaction needing Org2 fails at once with ENDORSER_UNAVAILABLE naming Org2", async () => {
    const kv = (await gateway("Org1")).getNetwork("main").getContract("kv");
    await network.stopNode("Org2/peer0");
    const error = await kv.submitTransaction("put", uniqueKey("down"), "v").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EndorseError);
    expect((error as EndorseError).errorName).toBe("ENDORSER_UNAVAILABLE");
    expect((error as EndorseError).organization).toBe("Org2");
    // At once: the connection was refused, the gateway did not wait out a timeout.
    expect((error as EndorseError).message).toMatch(/peer0\.Org2.*[Cc]onnection refused/);
  });
});

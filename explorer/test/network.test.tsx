/**
 * The network page's rows, endorsements by organisation and lifecycle approvals by
 * sequence: the model functions, and the components that show them.
 */

import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { proto, type ContractApprovals, type NetworkDefinition, type NetworkInfo, type TransactionDetail } from "@runnel/sdk";
import { describe, expect, test } from "vitest";
import { Endorsements } from "../src/components/Endorsements";
import { LifecycleApprovals } from "../src/components/LifecycleApprovals";
import { OrgNodes } from "../src/components/OrgNodes";
import { approvalsBySequence } from "../src/model/approvals";
import { endorsementsByOrg } from "../src/model/endorsements";
import { networkOrgs, servingHealth, type ServingNode } from "../src/model/network";
import { mount } from "./mount";

const ALIVE_HERE: ServingNode = { url: "https://127.0.0.1:7051", health: { state: "alive", checkedMsAgo: undefined } };

function org(name: string, peers: [string, string][], revoked: string[] = []): NetworkDefinition["orgs"][number] {
  return { name, ca: "", tlsCa: "", peers: peers.map(([peer, endpoint]) => ({ name: peer, endpoint })), revoked };
}

/** Two organisations, a peer each, Org1's orderer: what `runnel up` makes. */
const TWO_ORGS: NetworkDefinition = {
  channel: "main",
  sequence: 0n,
  writtenAtSeq: 0n,
  orgs: [org("Org1", [["peer0.Org1", "https://127.0.0.1:7051"]]), org("Org2", [["peer0.Org2", "https://127.0.0.1:7052"]], ["ab".repeat(32)])],
  orderers: [{ name: "orderer0.Org1", org: "Org1", endpoint: "https://127.0.0.1:7050" }],
  lifecyclePolicy: "MAJORITY admin",
  configPolicy: "MAJORITY admin",
};

/** The serving node's info: Org1's, at heights 10 committed, 11 validated, 12 ordered. */
function info(fields: MessageInitShape<typeof proto.GetNetworkInfoResponseSchema> = {}): NetworkInfo {
  return create(proto.GetNetworkInfoResponseSchema, {
    channel: "main",
    orgs: ["Org1", "Org2"],
    ownOrgs: ["Org1"],
    orderedHeight: 12n,
    validatedHeight: 11n,
    committedHeight: 10n,
    ...fields,
  });
}

const peer0Org2 = { org: "Org2", name: "peer0.Org2", endpoint: "https://127.0.0.1:7052" };

describe("networkOrgs", () => {
  test("every organisation with its peers and orderers; the serving node with all its heights, the others as it checked them", () => {
    const orgs = networkOrgs(TWO_ORGS, info({ peers: [{ ...peer0Org2, alive: true, committedHeight: 9n, checkedMsAgo: 1_500n }] }), ALIVE_HERE);
    expect(orgs.map((o) => [o.name, o.serving, o.revoked])).toEqual([
      ["Org1", true, 0],
      ["Org2", false, 1],
    ]);
    const [org1, org2] = orgs;
    expect(org1?.nodes.map((n) => [n.name, n.role, n.serving])).toEqual([
      ["peer0.Org1", "peer", true],
      ["orderer0.Org1", "orderer", false],
    ]);
    expect(org1?.nodes[0]).toMatchObject({ health: { state: "alive" }, committedHeight: 10n, validatedHeight: 11n, orderedHeight: 12n });
    expect(org1?.nodes[1]).toMatchObject({ endpoint: "https://127.0.0.1:7050", health: { state: "unchecked" }, committedHeight: undefined });
    expect(org2?.nodes).toEqual([
      expect.objectContaining({
        name: "peer0.Org2",
        serving: false,
        health: { state: "alive", checkedMsAgo: 1_500 },
        committedHeight: 9n,
        validatedHeight: undefined,
        orderedHeight: undefined,
      }),
    ]);
  });

  test("an unreachable peer says why, with the height it last answered; one not checked yet has none", () => {
    const down = networkOrgs(
      TWO_ORGS,
      info({ peers: [{ ...peer0Org2, alive: false, committedHeight: 7n, error: "connection refused", checkedMsAgo: 300n }] }),
      ALIVE_HERE,
    );
    expect(down[1]?.nodes[0]).toMatchObject({ health: { state: "unreachable", error: "connection refused", checkedMsAgo: 300 }, committedHeight: 7n });
    const fresh = networkOrgs(TWO_ORGS, info({ peers: [{ ...peer0Org2, alive: false, checkedMsAgo: 0n }] }), ALIVE_HERE);
    expect(fresh[1]?.nodes[0]).toMatchObject({ health: { state: "unchecked", reason: "not checked yet" }, committedHeight: undefined });
  });

  test("a one-organisation dev node, which the definition does not name, gets a row of its own", () => {
    const dev: NetworkDefinition = { ...TWO_ORGS, orgs: [org("Org1", [])], orderers: [] };
    const orgs = networkOrgs(dev, info({ orgs: ["Org1"] }), { url: "http://127.0.0.1:7051", health: ALIVE_HERE.health });
    expect(orgs).toHaveLength(1);
    expect(orgs[0]?.nodes).toEqual([
      expect.objectContaining({ name: "this node", role: "peer", endpoint: "http://127.0.0.1:7051", serving: true, inDefinition: false, committedHeight: 10n }),
    ]);
  });

  test("of two unchecked peers of its own organisation, the serving node is the one at the explorer's address", () => {
    const twoPeers: NetworkDefinition = {
      ...TWO_ORGS,
      orgs: [org("Org1", [["peer0.Org1", "https://127.0.0.1:7051"], ["peer1.Org1", "https://127.0.0.1:7053"]]), ...TWO_ORGS.orgs.slice(1)],
    };
    const orgs = networkOrgs(twoPeers, info(), { ...ALIVE_HERE, url: "https://127.0.0.1:7053" });
    expect(orgs[0]?.nodes.filter((n) => n.role === "peer").map((n) => [n.name, n.serving, n.health.state])).toEqual([
      ["peer0.Org1", false, "unchecked"],
      ["peer1.Org1", true, "alive"],
    ]);
    expect(orgs[1]?.nodes[0]?.health).toEqual({ state: "unchecked", reason: "not checked by this node" });
  });

  test("a peer the node still checks that the definition no longer names shows, marked", () => {
    const orgs = networkOrgs(TWO_ORGS, info({ peers: [{ org: "Org3", name: "peer0.Org3", endpoint: "https://127.0.0.1:7060", alive: true, committedHeight: 3n, checkedMsAgo: 10n }] }), ALIVE_HERE);
    expect(orgs.map((o) => [o.name, o.inDefinition])).toEqual([
      ["Org1", true],
      ["Org2", true],
      ["Org3", false],
    ]);
    expect(orgs[2]?.nodes[0]).toMatchObject({ name: "peer0.Org3", inDefinition: false, committedHeight: 3n });
  });
});

describe("servingHealth", () => {
  test("alive when the feed is live and /healthz answers ok; else unreachable with why", () => {
    expect(servingHealth({ live: true, healthy: true, detail: "ok", lastError: undefined }).state).toBe("alive");
    expect(servingHealth({ live: true, healthy: false, detail: "unavailable: stopped", lastError: undefined })).toEqual({ state: "unreachable", error: "unavailable: stopped", checkedMsAgo: undefined });
    expect(servingHealth({ live: false, healthy: true, detail: "ok", lastError: "fetch failed" })).toEqual({ state: "unreachable", error: "fetch failed", checkedMsAgo: undefined });
    expect(servingHealth({ live: true, healthy: undefined, detail: undefined, lastError: undefined }).state).toBe("unchecked");
  });
});

describe("OrgNodes", () => {
  test("a dev node's own row says the definition does not name it", () => {
    const dev: NetworkDefinition = { ...TWO_ORGS, orgs: [org("Org1", [])], orderers: [] };
    const el = mount(<OrgNodes org={networkOrgs(dev, info({ orgs: ["Org1"] }), ALIVE_HERE)[0]!} />);
    expect(el.querySelector('tbody th[scope="row"]')?.textContent).toBe("this node (not in the network definition)");
  });

  test("an organisation's heading, revoked count, and a row per node with role, endpoint, health and heights", () => {
    const orgs = networkOrgs(
      TWO_ORGS,
      info({ peers: [{ ...peer0Org2, alive: false, committedHeight: 0n, error: "deadline exceeded", checkedMsAgo: 2_000n }] }),
      ALIVE_HERE,
    );
    const org1 = mount(<OrgNodes org={orgs[0]!} />);
    expect(org1.querySelector("h3")?.textContent).toBe("Org1 · this node's organisation");
    expect(org1.textContent).toContain("0 revoked certificates");
    const rows = [...org1.querySelectorAll("tbody tr")].map((row) => [...row.querySelectorAll("th, td")].map((cell) => cell.textContent));
    expect(rows).toEqual([
      ["peer0.Org1 (this node)", "peer", "https://127.0.0.1:7051", "● alive", "10", "11", "12"],
      ["orderer0.Org1", "orderer", "https://127.0.0.1:7050", "not checked by this node", "—", "—", "—"],
    ]);
    const org2 = mount(<OrgNodes org={orgs[1]!} />);
    expect(org2.textContent).toContain("1 revoked certificate");
    expect(org2.querySelector("tbody tr td:nth-of-type(3)")?.textContent).toBe("● unreachable deadline exceeded checked 2.0 s ago");
  });
});

type Endorsement = TransactionDetail["endorsements"][number];

function endorsement(org: string, name: string, signature: number): Endorsement {
  return create(proto.EndorsementDetailSchema, {
    endorser: create(proto.IdentitySchema, { org, role: "peer", name }),
    signature: new Uint8Array([signature]),
  });
}

describe("endorsements by organisation", () => {
  const endorsements = [endorsement("Org1", "peer0.Org1", 1), endorsement("Org2", "peer0.Org2", 2), endorsement("Org1", "peer1.Org1", 3)];

  test("grouped by the endorser's organisation, in the order they first endorse", () => {
    expect(endorsementsByOrg(endorsements).map((group) => [group.org, group.endorsements.map((e) => e.endorser?.name)])).toEqual([
      ["Org1", ["peer0.Org1", "peer1.Org1"]],
      ["Org2", ["peer0.Org2"]],
    ]);
    expect(endorsementsByOrg([create(proto.EndorsementDetailSchema, { signature: new Uint8Array([9]) })])[0]?.org).toBe("?");
  });

  test("the table has a row group per organisation, headed by its name, with its endorsers under it", () => {
    const el = mount(<Endorsements endorsements={endorsements} />);
    const groups = [...el.querySelectorAll("tbody")].map((body) => ({
      heading: body.querySelector('th[scope="rowgroup"]')?.textContent,
      endorsers: [...body.querySelectorAll("tr:not(:first-child)")].map((row) => [...row.querySelectorAll("td")].slice(0, 3).map((cell) => cell.textContent)),
    }));
    expect(groups).toEqual([
      {
        heading: "Org1 2 endorsements",
        endorsers: [
          ["Org1", "peer", "peer0.Org1"],
          ["Org1", "peer", "peer1.Org1"],
        ],
      },
      { heading: "Org2 1 endorsement", endorsers: [["Org2", "peer", "peer0.Org2"]] },
    ]);
    expect(el.querySelector('tbody td code.hash')?.textContent).toBe("01");
  });
});

describe("lifecycle approvals", () => {
  const inForce = "11".repeat(32);
  const contract: ContractApprovals = {
    definition: { name: "kv", version: "2", sequence: 2n, codeHash: "cc".repeat(32), policy: "AND('Org1.peer','Org2.peer')" },
    definitionHash: inForce,
    approvals: [
      { sequence: 1n, org: "Org1", definitionHash: "00".repeat(32) },
      { sequence: 2n, org: "Org1", definitionHash: inForce },
      { sequence: 2n, org: "Org2", definitionHash: inForce },
      { sequence: 2n, org: "Org3", definitionHash: "22".repeat(32) },
      { sequence: 3n, org: "Org2", definitionHash: "33".repeat(32) },
    ],
  };

  test("by sequence, newest first; at the committed sequence each matches the definition in force or not", () => {
    expect(approvalsBySequence(contract).map((group) => [group.sequence, group.inForce, group.approvals.map((a) => `${a.org} ${a.standing}`)])).toEqual([
      [3n, false, ["Org2 pending"]],
      [2n, true, ["Org1 matches", "Org2 matches", "Org3 differs"]],
      [1n, false, ["Org1 earlier"]],
    ]);
  });

  test("before any commit, every approval awaits one", () => {
    const approvals = approvalsBySequence({ definition: undefined, definitionHash: "", approvals: [{ sequence: 1n, org: "Org1", definitionHash: inForce }] });
    expect(approvals).toEqual([{ sequence: 1n, inForce: false, approvals: [expect.objectContaining({ org: "Org1", standing: "pending" })] }]);
  });

  test("the table shows each sequence with its organisations and their standing", () => {
    const el = mount(<LifecycleApprovals contract={contract} />);
    expect(el.querySelector('[data-testid="definition-in-force"]')?.textContent).toContain("In force: sequence 2, version 2");
    const inForceGroup = [...el.querySelectorAll("tbody")].find((body) => body.querySelector("th")?.textContent?.startsWith("Sequence 2"));
    expect(inForceGroup?.querySelector("th")?.textContent).toBe("Sequence 2 in force");
    expect([...(inForceGroup?.querySelectorAll("tr[data-standing]") ?? [])].map((row) => [row.querySelector("td")?.textContent, row.querySelector("td:last-child")?.textContent])).toEqual([
      ["Org1", "✓ matches the definition in force"],
      ["Org2", "✓ matches the definition in force"],
      ["Org3", "✕ differs from the definition in force"],
    ]);
  });

  test("a contract no organisation approved says so", () => {
    const el = mount(<LifecycleApprovals contract={{ definition: undefined, definitionHash: "", approvals: [] }} />);
    expect(el.textContent).toContain("No definition of this contract is in force.");
    expect(el.textContent).toContain("No organisation has approved a definition of this contract.");
  });
});

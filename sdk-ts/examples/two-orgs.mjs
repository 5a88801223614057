// Two organisations with @runnel/sdk: each connects to a peer of its own, with only its
// own identity. An Org1 client writes through Org1's peer to kv, whose policy needs both
// organisations' peers: Org1's gateway asks Org2's peer for its endorsement. An Org2
// client reads it back through Org2's peer. Each organisation's admin approves a new
// contract definition before it can be committed, and a failure names the organisation.
//
// Start a network (`runnel up`, which makes .runnel/up the first time), build the SDK
// (npm run -w sdk-ts build), then from the repository root:
//
//   node sdk-ts/examples/two-orgs.mjs
//
// RUNNEL_NETWORK (default .runnel/up) is the network's directory; each organisation's
// people's identities are in its <org>/ directory, the peers' endpoints in network.json.

import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { connect, EndorseError, loadNetworkFile, loadNetworkIdentity } from "@runnel/sdk";

/**
 * Runs the example; returns what it saw, for the SDK's tests.
 * @param {{ network: string, contracts: string, log?: (line: string) => void }} options
 */
export async function main({ network, contracts, log = console.log }) {
  const gateways = [];
  /** A gateway to `org`'s first peer as `role`, from the org's own directory only. */
  const gateway = async (org, role = "client") => {
    const dir = join(network, org);
    const { tlsCas, orgs } = await loadNetworkFile(dir);
    const url = orgs.find((o) => o.name === org).peers[0].endpoint;
    const opened = connect({ url, ...(await loadNetworkIdentity(dir, org, role)), tls: { ca: tlsCas } });
    gateways.push(opened);
    return opened;
  };
  try {
    const org1 = await gateway("Org1");
    const org2 = await gateway("Org2");
    const channel = (await org1.getQuery().getNetworkInfo()).channel;

    // kv's policy is AND('Org1.peer', 'Org2.peer'): one endorsement of each.
    const key = `greeting-${Date.now().toString(36)}`;
    const proposal = await org1.getNetwork(channel).getContract("kv").newProposal("put", { arguments: [key, "hello from Org1"] });
    const transaction = await proposal.endorse();
    const status = await (await transaction.submit()).getStatus();
    const detail = await org1.getQuery().getTransaction(transaction.getTransactionId());
    const endorsedBy = detail.endorsements.map((e) => `${e.endorser?.org}.${e.endorser?.role} (${e.endorser?.name})`);
    log(`put ${key}: ${status.codeName} at seq ${status.seq}, endorsed by ${endorsedBy.join(" and ")}`);

    // Org2 reads it back through its own peer.
    const read = new TextDecoder().decode(await org2.getNetwork(channel).getContract("kv").evaluateTransaction("get", key));
    log(`Org2 reads ${key}: ${read}`);

    // A new contract definition: Org1's admin alone cannot commit it...
    const name = `kv-${Date.now().toString(36)}`;
    const code = new Uint8Array(await readFile(join(contracts, "kv.wasm")));
    const admin1 = await gateway("Org1", "admin");
    let refused;
    try {
      await admin1.deployContract(channel, { name, code });
    } catch (error) {
      if (!(error instanceof EndorseError)) throw error;
      refused = error.errorName;
      log(`Org1 alone: ${error.errorName}: ${error.nodeMessage}`);
    }
    // ... Org2's admin approves it, then Org1's commit (its own approval) makes a majority.
    const approved = await (await gateway("Org2", "admin")).approveContract(channel, { name, code });
    log(`Org2 approved ${name} sequence ${approved.definition.sequence}`);
    while ((await admin1.getQuery().getNetworkInfo()).validatedHeight < approved.status.seq) {
      await new Promise((done) => setTimeout(done, 20));
    }
    const deployed = await admin1.deployContract(channel, { name, code });
    log(`committed ${name}: ${deployed.status.codeName}`);
    const approvals = await org1.getQuery().getContractApprovals(name);
    log(`approvals of ${name}: ${approvals.approvals.map((a) => `${a.org} (sequence ${a.sequence})`).join(", ")}`);
    return { key, read, endorsedBy, refused, deployed: name, approvals: approvals.approvals.map((a) => a.org) };
  } finally {
    for (const opened of gateways) opened.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  await main({
    network: process.env.RUNNEL_NETWORK ?? ".runnel/up",
    contracts: process.env.RUNNEL_CONTRACTS ?? "target/wasm32-unknown-unknown/contract",
  });
}

/**
 * A two-organisation network from `runnel init` (TLS on) served by `runnel start`: the
 * SDK connects over TLS, deploys a contract whose policy needs both organisations, and
 * a transaction missing one organisation's endorsement is invalid.
 */

import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { connect, EndorseError, loadNetworkIdentity, txProto, type Gateway, type Protocol } from "../src/index.js";
import { RunnelNode, RUNNEL_CONTRACTS } from "./node.js";

describe("a two-organisation network over TLS", () => {
  let node: RunnelNode;
  const gateways: Gateway[] = [];
  const policy = "AND('Org1.peer', 'Org2.peer')";

  async function gateway(org: string, role: string, protocol: Protocol = "grpc"): Promise<Gateway> {
    const { identity, signer } = await loadNetworkIdentity(node.networkDir, org, role);
    const opened = connect({ url: node.url, identity, signer, protocol, tls: { ca: node.tlsCa } });
    gateways.push(opened);
    return opened;
  }

  beforeAll(async () => {
    node = await RunnelNode.startNetwork(["Org1", "Org2"]);
    const admin = await gateway("Org1", "admin");
    const code = new Uint8Array(await readFile(join(RUNNEL_CONTRACTS, "kv.wasm")));
    const deployed = await admin.deployContract("main", { name: "kv", code, policy });
    expect(deployed.definition.policy.replace(/\s/g, "")).toBe(policy.replace(/\s/g, ""));
  });
  afterAll(async () => {
    for (const opened of gateways) opened.close();
    await node?.stop();
  });

  test.each<Protocol>(["grpc", "grpc-web"])("both organisations endorse; clients of either submit and read (%s over TLS)", async (protocol) => {
    const org1 = (await gateway("Org1", "client", protocol)).getNetwork("main").getContract("kv");
    const org2 = (await gateway("Org2", "client", protocol)).getNetwork("main").getContract("kv");
    await org1.submitTransaction("put", `tls-${protocol}`, "from Org1");
    expect(new TextDecoder().decode(await org2.evaluateTransaction("get", `tls-${protocol}`))).toBe('"from Org1"');
    const info = await gateways.at(-1)!.getQuery().getNetworkInfo();
    expect(info.orgs).toEqual(["Org1", "Org2"]);
  });

  test("a transaction without Org2's endorsement is ordered but invalid: ENDORSEMENT_POLICY_FAILURE", async () => {
    const client = await gateway("Org1", "client");
    const kv = client.getNetwork("main").getContract("kv");
    const transaction = await (await kv.newProposal("put", { arguments: ["k", "v"] })).endorse();
    const decoded = fromBinary(txProto.TransactionSchema, transaction.getBytes());
    expect(decoded.endorsements).toHaveLength(2);
    const onlyOrg1 = toBinary(
      txProto.TransactionSchema,
      create(txProto.TransactionSchema, { ...decoded, endorsements: decoded.endorsements.slice(0, 1) }),
    );
    const { signer } = await loadNetworkIdentity(node.networkDir, "Org1", "client");
    const digest = (await client.newTransaction(onlyOrg1)).getDigest();
    const tampered = await client.newSignedTransaction(onlyOrg1, await signer(digest));
    const status = await (await tampered.submit()).getStatus();
    expect(status.successful).toBe(false);
    expect(status.codeName).toBe("ENDORSEMENT_POLICY_FAILURE");
  });

  test("a client may not deploy: the node refuses its lifecycle proposal", async () => {
    const client = await gateway("Org2", "client");
    const code = new Uint8Array(await readFile(join(RUNNEL_CONTRACTS, "kv.wasm")));
    const error = await client.deployContract("main", { name: "kv_client", code }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EndorseError);
    expect((error as EndorseError).errorName).toBe("ACCESS_DENIED");
  });

  test("without the network's TLS CA the connection fails and names the URL", async () => {
    const { identity, signer } = await loadNetworkIdentity(node.networkDir, "Org1", "client");
    const untrusting = connect({ url: node.url, identity, signer });
    gateways.push(untrusting);
    const error = await untrusting.getQuery().getNetworkInfo().catch((e: unknown) => e);
    expect(String(error)).toContain(`cannot reach the node at ${node.url}`);
    expect(String(error)).toMatch(/certificate/);
  });
});

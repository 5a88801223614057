/**
 * A two-organisation network from `runnel init` (TLS on, reads for members, client
 * certificates asked for) served by `runnel start`: the SDK connects over TLS, deploys a
 * contract whose policy needs both organisations, and a transaction missing one
 * organisation's endorsement is invalid; reads need a read grant or a member's own
 * certificate over mutual TLS.
 */

import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  Code,
  connect,
  EndorseError,
  loadNetworkIdentity,
  QueryError,
  txProto,
  type Gateway,
  type Protocol,
} from "../src/index.js";
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
    node = await RunnelNode.startNetwork(["Org1", "Org2"], (toml) =>
      toml.replace('client_auth = "none"', 'client_auth = "optional"'),
    );
    const admin = await gateway("Org1", "admin");
    const code = new Uint8Array(await readFile(join(RUNNEL_CONTRACTS, "kv.wasm")));
    // A majority of two organisations is both: Org1's admin alone cannot commit it.
    const alone = await admin.deployContract("main", { name: "kv", code, policy }).catch((e: unknown) => e);
    expect(alone).toBeInstanceOf(EndorseError);
    expect((alone as EndorseError).errorName).toBe("NOT_APPROVED");
    expect((alone as EndorseError).message).toMatch(/not by \[Org2\]/);
    const approved = await (await gateway("Org2", "admin")).approveContract("main", { name: "kv", code, policy });
    expect(approved.definition.sequence).toBe(1n);
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

  test.each<Protocol>(["grpc", "grpc-web"])("reads need an identity of the network: a read grant or the member's certificate (%s)", async (protocol) => {
    const { identity, signer } = await loadNetworkIdentity(node.networkDir, "Org2", "client");
    const tls = { ca: node.tlsCa };
    const reads = async (gateway: Gateway) => {
      gateways.push(gateway);
      // The stream waits for block 1 to be sealed; then it can be read by number.
      const stream = await gateway.getNetwork("main").getBlockEvents({ startBlock: 1n });
      let first;
      try {
        for await (const block of stream) {
          first = block;
          break;
        }
      } finally {
        stream.close();
      }
      if (first === undefined) throw new Error("the block stream ended");
      const contracts = await gateway.getQuery().listContracts();
      const block = await gateway.getQuery().getBlock(1n);
      return { contracts, block, first };
    };

    // The gateway signs a read grant and sends it with every read.
    const granted = await reads(connect({ url: node.url, identity, signer, protocol, tls }));
    expect(granted.contracts.map((c) => c.name)).toContain("kv");
    expect(granted.first.number).toBe(1n);
    expect(granted.block.number).toBe(1n);

    // Without a grant or a certificate the node serves no read, but the network's name.
    const bare = connect({ url: node.url, identity, signer, protocol, tls, readGrants: false });
    gateways.push(bare);
    expect((await bare.getQuery().getNetworkInfo()).channel).toBe("main");
    const refused = await bare.getQuery().listContracts().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(QueryError);
    expect((refused as QueryError).grpcCode, String(refused)).toBe(Code.Unauthenticated);
    expect((refused as QueryError).errorName).toBe("IDENTITY_REQUIRED");

    // The member's own certificate over mutual TLS is enough (gRPC over HTTP/2 and
    // gRPC-web over HTTP/1.1 alike).
    const dir = join(node.networkDir, "identities", "Org2");
    const [cert, key] = await Promise.all([readFile(join(dir, "client.pem")), readFile(join(dir, "client.key"))]);
    const mutual = await reads(
      connect({ url: node.url, identity, signer, protocol, readGrants: false, tls: { ...tls, cert, key } }),
    );
    expect(mutual.contracts).toEqual(granted.contracts);
  });
});

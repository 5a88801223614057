/**
 * A contract written in TypeScript (AssemblyScript, @runnel/contract) deployed on a real
 * node through the SDK and used as its Rust twin is: the same calls, results, events and
 * errors.
 */

import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { EndorseError } from "../src/index.js";
import { RUNNEL_CONTRACTS } from "./node.js";
import { CHANNEL, gatewayAs } from "./helpers.js";

const decoded = (bytes: Uint8Array): unknown => JSON.parse(new TextDecoder().decode(bytes));

describe("the TypeScript token", () => {
  test("deploys through the SDK, mints, transfers and refuses as the Rust token does", async () => {
    using admin = await gatewayAs("admin");
    const name = `token_ts_${Math.random().toString(36).slice(2, 8)}`;
    const code = new Uint8Array(await readFile(join(RUNNEL_CONTRACTS, "token_ts.wasm")));
    const deployed = await admin.deployContract(CHANNEL, { name, code });
    expect(deployed.status.successful).toBe(true);

    using client = await gatewayAs("client");
    const mine = client.getNetwork(CHANNEL).getContract(name);
    const me = decoded(await mine.evaluateTransaction("whoami")) as string;
    expect(me).toMatch(/^Org1\//);
    await admin.getNetwork(CHANNEL).getContract(name).submitTransaction("mint", me, "100");

    const transfer = await mine.submitAsync("transfer", { arguments: ["Org1/bob", "30"] });
    const status = await transfer.getStatus();
    expect(status.codeName).toBe("VALID");
    expect(decoded(await mine.evaluateTransaction("balance", me))).toBe(70);
    expect(decoded(await mine.evaluateTransaction("balance", "Org1/bob"))).toBe(30);
    expect(decoded(await mine.evaluateTransaction("total_supply"))).toBe(100);

    // Its event, as the Rust token emits it.
    const events = await client.getNetwork(CHANNEL).getContractEvents(name, { startSeq: status.seq });
    try {
      for await (const event of events) {
        expect(event.transactionId).toBe(transfer.getTransactionId());
        expect(event).toMatchObject({ contractName: name, eventName: "Transfer" });
        expect(JSON.parse(event.payloadText)).toEqual({ from: me, to: "Org1/bob", amount: 30 });
        break;
      }
    } finally {
      events.close();
    }

    // A contract error reaches the client as CONTRACT_ERROR with the contract's message.
    const error = await mine.submitTransaction("transfer", "Org1/bob", "500").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EndorseError);
    expect((error as EndorseError).errorName).toBe("CONTRACT_ERROR");
    expect((error as EndorseError).nodeMessage).toContain("insufficient balance: have 70, need 500");
    const minting = await mine.submitTransaction("mint", me, "1").catch((e: unknown) => e);
    expect((minting as EndorseError).errorName).toBe("CONTRACT_ERROR");
  });
});

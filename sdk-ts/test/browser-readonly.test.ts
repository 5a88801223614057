/**
 * connectReadOnly: the browser entry's gateway without an identity, as the explorer uses
 * it. Reads and streams work over gRPC-web; anything that must be signed is refused
 * before a call.
 */

import { describe, expect, inject, test } from "vitest";
import { connectReadOnly } from "../src/browser.js";
import { CHANNEL, gatewayAs, uniqueKey } from "./helpers.js";

describe("connectReadOnly", () => {
  test("queries, streams transactions and reads traces without an identity", async () => {
    const reader = connectReadOnly({ url: inject("runnelUrl") });
    using writer = await gatewayAs("client");
    try {
      const info = await reader.getQuery().getNetworkInfo();
      expect(info.channel).toBe(CHANNEL);
      const stream = await reader.getNetwork(CHANNEL).getTransactionEvents({ startSeq: info.committedHeight + 1n });
      const key = uniqueKey("readonly");
      const submitted = await writer.getNetwork(CHANNEL).getContract("kv").submitAsync("put", { arguments: [key, "v"] });
      await submitted.getStatus();
      const iterator = stream[Symbol.asyncIterator]();
      let seen = false;
      while (!seen) {
        const next = await iterator.next();
        seen = next.value?.transactionId === submitted.getTransactionId();
      }
      stream.close();
      const value = await reader.getQuery().getKey("kv", key);
      expect(new TextDecoder().decode(value.value)).toBe("v");
      const trace = await reader.trace(submitted.getTransactionId());
      expect(trace.stages.map((stamp) => stamp.stage)).toContain("COMMITTED");
    } finally {
      reader.close();
    }
  });

  test("refuses to sign: an evaluation or a submission is a TypeError", async () => {
    const reader = connectReadOnly({ url: inject("runnelUrl") });
    const kv = reader.getNetwork(CHANNEL).getContract("kv");
    await expect(kv.evaluateTransaction("get", "anything")).rejects.toThrow(TypeError);
    await expect(kv.submitTransaction("put", "k", "v")).rejects.toThrow(TypeError);
    reader.close();
  });
});

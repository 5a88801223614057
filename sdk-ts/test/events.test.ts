/**
 * Contract events: from a point, with checkpointers, and across a node restart, with no
 * gap and no duplicate.
 */

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  checkpointers,
  connect,
  loadNetworkIdentity,
  QueryError,
  type CloseableAsyncIterable,
  type ContractEvent,
  type Gateway,
} from "../src/index.js";
import { CHANNEL, gatewayAs } from "./helpers.js";
import { RunnelNode } from "./node.js";

/** Mints `count` tokens one at a time (each emits one Transfer event); returns their tx ids. */
async function mint(admin: Gateway, to: string, count: number): Promise<string[]> {
  const token = admin.getNetwork(CHANNEL).getContract("token");
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const submitted = await token.submitAsync("mint", { arguments: [to, "1"] });
    const status = await submitted.getStatus();
    expect(status.successful).toBe(true);
    ids.push(submitted.getTransactionId());
  }
  return ids;
}

/** The next `count` events of `events`. */
async function take(events: CloseableAsyncIterable<ContractEvent>, count: number): Promise<ContractEvent[]> {
  // next() rather than `for await ... break`, which would close the stream.
  const iterator = events[Symbol.asyncIterator]();
  const out: ContractEvent[] = [];
  while (out.length < count) {
    const next = await iterator.next();
    if (next.done === true) break;
    out.push(next.value);
  }
  return out;
}

function account(): string {
  return `Org1/events-${Math.random().toString(36).slice(2, 10)}`;
}

describe("contract events on the shared node", () => {
  test("from a seq: stored then live, in order, with their payloads", async () => {
    using admin = await gatewayAs("admin");
    const to = account();
    const before = await mint(admin, to, 2);
    const from = (await admin.newCommit(before[0]!).getStatus()).seq;
    const events = await admin.getNetwork(CHANNEL).getContractEvents("token", { startSeq: from });
    const after = mint(admin, to, 2);
    const mine: ContractEvent[] = [];
    for await (const event of events) {
      if (JSON.parse(event.payloadText).to === to) mine.push(event);
      if (mine.length === 4) break;
    }
    expect(mine.map((e) => e.transactionId)).toEqual([...before, ...(await after)]);
    expect(mine[0]).toMatchObject({ contractName: "token", eventName: "Transfer" });
    expect(JSON.parse(mine[0]!.payloadText)).toEqual({ from: null, to, amount: 1 });
    const seqs = mine.map((e) => e.checkpoint.seq);
    expect([...seqs].sort((a, b) => (a < b ? -1 : 1))).toEqual(seqs);
  });

  test("from a block or after an event: the same stream from that point", async () => {
    using admin = await gatewayAs("admin");
    const to = account();
    const ids = await mint(admin, to, 3);
    const network = admin.getNetwork(CHANNEL);
    const mine = async (options: Parameters<typeof network.getContractEvents>[1], count: number) => {
      const events = await network.getContractEvents("token", options);
      const out: ContractEvent[] = [];
      const iterator = events[Symbol.asyncIterator]();
      while (out.length < count) {
        const next = await iterator.next();
        if (next.done === true) break;
        if (JSON.parse(next.value.payloadText).to === to) out.push(next.value);
      }
      events.close();
      return out;
    };
    const all = await mine({ startBlock: 1n }, 3);
    expect(all.map((e) => e.transactionId)).toEqual(ids);
    const rest = await mine({ after: all[0]!.checkpoint }, 2);
    expect(rest.map((e) => e.transactionId)).toEqual(ids.slice(1));
  });

  test("with no start: only events committed after the call", async () => {
    using admin = await gatewayAs("admin");
    await mint(admin, account(), 1);
    const events = await admin.getNetwork(CHANNEL).getContractEvents("token");
    const ids = mint(admin, account(), 1);
    const [first] = await take(events, 1);
    expect(first?.transactionId).toBe((await ids)[0]);
  });

  test("a checkpointer resumes a new stream right after the last event processed", async () => {
    using admin = await gatewayAs("admin");
    const to = account();
    const ids = await mint(admin, to, 5);
    const start = (await admin.newCommit(ids[0]!).getStatus()).seq;
    const network = admin.getNetwork(CHANNEL);
    for (const checkpointer of [
      checkpointers.inMemory(),
      await checkpointers.file(join(mkdtempSync(join(tmpdir(), "runnel-cp-")), "checkpoint.json")),
    ]) {
      const seen: string[] = [];
      // Three readers in turn, each processing two events and checkpointing them.
      for (let reader = 0; reader < 3 && seen.length < 5; reader++) {
        const events = await network.getContractEvents("token", { checkpoint: checkpointer, startSeq: start });
        let processed = 0;
        for await (const event of events) {
          if (JSON.parse(event.payloadText).to === to) seen.push(event.transactionId);
          await checkpointer.checkpointEvent(event);
          if (++processed === 2 || seen.length === 5) break;
        }
      }
      expect(seen).toEqual(ids);
    }
  });

  test("the transaction stream carries every committed transaction, invalid ones with their code", async () => {
    using client = await gatewayAs();
    const network = client.getNetwork(CHANNEL);
    const stream = await network.getTransactionEvents();
    const kv = network.getContract("kv");
    const valid = await kv.submitAsync("put", { arguments: [account(), "v"] });
    await valid.getStatus();
    const iterator = stream[Symbol.asyncIterator]();
    const first = (await iterator.next()).value;
    expect(first).toMatchObject({ transactionId: valid.getTransactionId(), code: "VALID" });
    expect(first?.bytes.length).toBeGreaterThan(0);
    const again = await network.getTransactionEvents({ startSeq: first!.seq });
    expect((await again[Symbol.asyncIterator]().next()).value?.seq).toBe(first!.seq);
    again.close();
    stream.close();
  });

  test("a file checkpointer's state survives reopening the file", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "runnel-cp-")), "checkpoint.json");
    const first = await checkpointers.file(path);
    expect(first.getCheckpoint()).toBeUndefined();
    await first.checkpoint({ seq: 42n, index: 3 });
    await first.checkpointBlock(7n);
    const second = await checkpointers.file(path);
    expect(second.getCheckpoint()).toEqual({ seq: 42n, index: 3 });
    expect(second.getBlockNumber()).toBe(7n);
  });
});

describe("across a node restart", () => {
  let node: RunnelNode;
  beforeAll(async () => {
    node = await RunnelNode.start();
  });
  afterAll(async () => {
    await node?.stop();
  });

  test("an open event stream resumes with no gap and no duplicate; a checkpoint resumes after it too", async () => {
    const { identity, signer } = await loadNetworkIdentity(node.networkDir, "Org1", "admin");
    using admin = connect({ url: node.url, identity, signer });
    using reader = connect({ url: node.url, identity, signer });
    const to = account();
    const checkpointer = checkpointers.inMemory();
    const events = await reader
      .getNetwork(CHANNEL)
      .getContractEvents("token", { checkpoint: checkpointer, startSeq: 1n, reconnectDelayMs: 100 });
    const seen: ContractEvent[] = [];
    const expected = await mint(admin, to, 3);
    for (const event of await take(events, 3)) {
      seen.push(event);
      await checkpointer.checkpointEvent(event);
    }

    await node.restart();
    expected.push(...(await mint(admin, to, 3)));
    for (const event of await take(events, 3)) {
      seen.push(event);
      await checkpointer.checkpointEvent(event);
    }
    expect(seen.map((e) => e.transactionId)).toEqual(expected);

    // A new stream from the checkpoint (as after an application restart) starts after the last one.
    events.close();
    const resumed = await reader.getNetwork(CHANNEL).getContractEvents("token", { checkpoint: checkpointer });
    expected.push(...(await mint(admin, to, 1)));
    const [next] = await take(resumed, 1);
    expect(next?.transactionId).toBe(expected.at(-1));
    resumed.close();
  });

  test("a stream whose node stays down gives up after reconnectTimeoutMs with an error naming the URL", async () => {
    const { identity, signer } = await loadNetworkIdentity(node.networkDir, "Org1", "admin");
    using reader = connect({ url: node.url, identity, signer });
    const events = await reader
      .getNetwork(CHANNEL)
      .getContractEvents("token", { startSeq: 1n, reconnectTimeoutMs: 1_000, reconnectDelayMs: 100 });
    const iterator = events[Symbol.asyncIterator]();
    expect((await iterator.next()).done).toBe(false);
    await node.stop();
    const error = await (async () => {
      for (;;) await iterator.next();
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QueryError);
    expect((error as QueryError).message).toContain(node.url);
  });
});

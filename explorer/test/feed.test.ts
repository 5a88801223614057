/**
 * The live feed against a fake node: batching, bounded buffers, and the reconnect cycle
 * (streams fail → "reconnecting" → the node answers → "live", resuming at the next seq).
 * The real node and browser are covered by the end-to-end tests.
 */

import type { Block, CloseableAsyncIterable, CommittedTransaction, Gateway, NetworkInfo, Trace } from "@runnel/sdk";
import { describe, expect, test, vi } from "vitest";
import { LiveFeed, type FeedSnapshot } from "../src/live/feed";

/** A stream the test feeds by hand; `fail` ends it with an error, as a dropped connection does. */
class FakeStream<T> implements CloseableAsyncIterable<T> {
  readonly #queue: T[] = [];
  #wake: (() => void) | undefined;
  #error: Error | undefined;
  #closed = false;

  push(item: T): void {
    this.#queue.push(item);
    this.#wake?.();
  }

  fail(error: Error): void {
    this.#error = error;
    this.#wake?.();
  }

  close(): void {
    this.#closed = true;
    this.#wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for (;;) {
      const item = this.#queue.shift();
      if (item !== undefined) {
        yield item;
        continue;
      }
      if (this.#error !== undefined) throw this.#error;
      if (this.#closed) return;
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }
}

class FakeNode {
  up = true;
  committed = 10n;
  readonly txStreams: { startSeq: bigint | undefined; stream: FakeStream<CommittedTransaction> }[] = [];
  readonly blockStreams: FakeStream<Block>[] = [];
  readonly traceStreams: FakeStream<Trace>[] = [];
  readonly traceRequests: string[] = [];

  info(): NetworkInfo {
    return { channel: "main", committedHeight: this.committed, blockHeight: 2n, orgs: ["Org1"] } as NetworkInfo;
  }

  gateway(): Gateway {
    const unreachable = () => new Error("cannot reach the node");
    const fake = {
      getUrl: () => "http://node.test",
      getQuery: () => ({
        getNetworkInfo: async () => {
          if (!this.up) throw unreachable();
          return this.info();
        },
      }),
      getNetwork: () => ({
        getTransactionEvents: async (options: { startSeq?: bigint }) => {
          if (!this.up) throw unreachable();
          const stream = new FakeStream<CommittedTransaction>();
          this.txStreams.push({ startSeq: options.startSeq, stream });
          return stream;
        },
        getBlockEvents: async () => {
          if (!this.up) throw unreachable();
          const stream = new FakeStream<Block>();
          this.blockStreams.push(stream);
          return stream;
        },
      }),
      trace: async (id: string) => {
        this.traceRequests.push(id);
        return { transactionId: id, stages: id.startsWith("00") ? [] : [{ stage: "ORDERED", atUs: 1n }] };
      },
      traceStream: () => {
        const stream = new FakeStream<Trace>();
        this.traceStreams.push(stream);
        return stream;
      },
    };
    return fake as unknown as Gateway;
  }

  /** The node goes away: every open stream fails. */
  kill(): void {
    this.up = false;
    const error = new Error("connection reset");
    this.txStreams.at(-1)?.stream.fail(error);
    this.blockStreams.at(-1)?.fail(error);
    this.traceStreams.at(-1)?.fail(error);
  }
}

function committed(seq: bigint, code = "VALID"): CommittedTransaction {
  return { seq, transactionId: seq.toString(16).padStart(64, "0"), code, timestampMs: 1n, bytes: new Uint8Array() };
}

function newFeed(node: FakeNode, options: { transactionCapacity?: number } = {}) {
  const frames: (() => void)[] = [];
  const feed = new LiveFeed(node.gateway(), {
    ...options,
    backlogTransactions: 5,
    retryBaseMs: 5,
    retryMaxMs: 20,
    pollMs: 60_000,
    flushIntervalMs: 0,
    schedule: (flush) => frames.push(flush),
    fetch: async () => new Response("ok"),
  });
  const snapshots: FeedSnapshot[] = [];
  feed.subscribe((snapshot) => snapshots.push(snapshot));
  /** Runs the pending animation frame, as the browser would before its next paint. */
  const frame = () => frames.splice(0).forEach((flush) => flush());
  return { feed, snapshots, frame };
}

describe("LiveFeed", () => {
  test("starts with the backlog, applies items once per frame, newest first", async () => {
    const node = new FakeNode();
    const { feed, snapshots, frame } = newFeed(node);
    feed.start();
    await vi.waitFor(() => expect(node.txStreams).toHaveLength(1));
    expect(node.txStreams[0]?.startSeq).toBe(6n); // the last 5 committed
    for (let seq = 6n; seq <= 10n; seq += 1n) node.txStreams[0]?.stream.push(committed(seq, seq === 8n ? "MVCC_READ_CONFLICT" : "VALID"));
    await vi.waitFor(() => {
      frame();
      expect(feed.getSnapshot().transactions).toHaveLength(5);
    });
    const snapshot = feed.getSnapshot();
    expect(snapshot.connection).toBe("live");
    expect(snapshot.transactions.map((tx) => tx.seq)).toEqual([10n, 9n, 8n, 7n, 6n]);
    expect(snapshot.codeCounts.get("MVCC_READ_CONFLICT")).toBe(1);
    expect(snapshots.length).toBeLessThanOrEqual(4);
    feed.close();
  });

  test("a transaction delivered again (a stream reopened too early) is kept once", async () => {
    const node = new FakeNode();
    const { feed, frame } = newFeed(node);
    feed.start();
    await vi.waitFor(() => expect(node.txStreams).toHaveLength(1));
    for (const seq of [6n, 7n, 7n, 6n, 8n]) node.txStreams[0]?.stream.push(committed(seq));
    await vi.waitFor(() => {
      frame();
      expect(feed.getSnapshot().transactions[0]?.seq).toBe(8n);
    });
    expect(feed.getSnapshot().transactions.map((tx) => tx.seq)).toEqual([8n, 7n, 6n]);
    feed.close();
  });

  test("keeps at most its capacity of transactions", async () => {
    const node = new FakeNode();
    const { feed, frame } = newFeed(node, { transactionCapacity: 3 });
    feed.start();
    await vi.waitFor(() => expect(node.txStreams).toHaveLength(1));
    for (let seq = 6n; seq <= 15n; seq += 1n) node.txStreams[0]?.stream.push(committed(seq));
    await vi.waitFor(() => {
      frame();
      expect(feed.getSnapshot().transactions[0]?.seq).toBe(15n);
    });
    expect(feed.getSnapshot().transactions.map((tx) => tx.seq)).toEqual([15n, 14n, 13n]);
    feed.close();
  });

  test("a lost connection shows as reconnecting, then resumes after the last seq seen", async () => {
    const node = new FakeNode();
    const { feed, frame } = newFeed(node);
    feed.start();
    await vi.waitFor(() => expect(node.txStreams).toHaveLength(1));
    node.txStreams[0]?.stream.push(committed(6n));
    node.txStreams[0]?.stream.push(committed(7n));
    await vi.waitFor(() => {
      frame();
      expect(feed.getSnapshot().transactions).toHaveLength(2);
    });

    node.kill();
    await vi.waitFor(() => {
      frame();
      expect(feed.getSnapshot().connection).toBe("reconnecting");
    });
    expect(feed.getSnapshot().lastError).toBeTruthy();

    node.up = true;
    await vi.waitFor(() => {
      frame();
      expect(feed.getSnapshot().connection).toBe("live");
    });
    await vi.waitFor(() => expect(node.txStreams).toHaveLength(2));
    expect(node.txStreams[1]?.startSeq).toBe(8n);
    expect(feed.getSnapshot().reconnects).toBe(1);
    feed.close();
  });

  test("a trace the stream did not bring is asked for once; one the node lacks is remembered as missing", async () => {
    const node = new FakeNode();
    const { feed } = newFeed(node);
    feed.start();
    await vi.waitFor(() => expect(node.txStreams).toHaveLength(1));
    const kept = "ab".repeat(32);
    const gone = "00".repeat(32);
    feed.wantTrace(kept);
    feed.wantTrace(kept);
    feed.wantTrace(gone);
    await vi.waitFor(() => expect(feed.traceOf(kept)).toBeDefined());
    await vi.waitFor(() => expect(feed.traceMissing(gone)).toBe(true));
    feed.wantTrace(kept);
    feed.wantTrace(gone);
    expect(node.traceRequests).toEqual([kept, gone]);
    feed.close();
  });

  test("a trace arriving is handed to whoever waits for it", async () => {
    const node = new FakeNode();
    const { feed } = newFeed(node);
    feed.start();
    await vi.waitFor(() => expect(node.traceStreams).toHaveLength(1));
    const id = "ab".repeat(32);
    const seen = new Promise<Trace>((resolve) => feed.onTrace(id, resolve));
    node.traceStreams[0]?.push({ transactionId: id, stages: [{ stage: "ORDERED", atUs: 5n }] });
    expect((await seen).transactionId).toBe(id);
    expect(feed.traceOf(id)?.stages).toHaveLength(1);
    feed.close();
  });
});

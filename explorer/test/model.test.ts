import type { Trace } from "@runnel/sdk";
import { describe, expect, test } from "vitest";
import { Ring } from "../src/live/ring";
import { backoff } from "../src/live/feed";
import { bytesText, codeLabel, duration, shortHex } from "../src/model/format";
import { lookups } from "../src/model/search";
import { stepDurations, totalUs, waterfall } from "../src/model/stages";
import { parseMetrics } from "../src/model/metrics";
import { percentile, Series } from "../src/model/stats";
import { match, paths } from "../src/router";

const T0 = 1_760_000_000_000_000n;

function trace(offsets: Partial<Record<string, number>>): Trace {
  return {
    transactionId: "ab".repeat(32),
    stages: Object.entries(offsets).map(([stage, us]) => ({ stage: stage as Trace["stages"][number]["stage"], atUs: T0 + BigInt(us ?? 0) })),
  };
}

describe("stages", () => {
  const full = trace({ ENDORSE_START: 0, ENDORSE_END: 400, RECEIVED: 520, ORDERED: 530, DELIVERED: 560, VERIFIED: 640, VALIDATED: 700, COMMITTED: 1_900, NOTIFIED: 1_950 });

  test("a full trace gives every step its start and duration, in flow order", () => {
    expect(waterfall(full)).toEqual([
      expect.objectContaining({ step: "endorse", startUs: 0, durationUs: 400 }),
      expect.objectContaining({ step: "order", startUs: 520, durationUs: 10 }),
      expect.objectContaining({ step: "validate", startUs: 530, durationUs: 170 }),
      expect.objectContaining({ step: "commit", startUs: 700, durationUs: 1_200 }),
      expect.objectContaining({ step: "notify", startUs: 1_900, durationUs: 50 }),
    ]);
    expect(totalUs(full)).toBe(1_950);
  });

  test("a partial trace (no endorsement seen here) has only the steps it can bound", () => {
    const partial = trace({ RECEIVED: 0, ORDERED: 5, VALIDATED: 80 });
    expect(waterfall(partial).map((span) => span.step)).toEqual(["order", "validate"]);
    expect(stepDurations(partial)).toEqual({ order: 5, validate: 75 });
  });

  test("an empty trace has no spans and no total", () => {
    expect(waterfall(trace({}))).toEqual([]);
    expect(totalUs(trace({}))).toBe(0);
  });
});

describe("stats", () => {
  test("percentiles by nearest rank", () => {
    const values = Array.from({ length: 100 }, (_, i) => 100 - i);
    expect(percentile(values, 0.5)).toBe(50);
    expect(percentile(values, 0.99)).toBe(99);
    expect(percentile([7], 0.99)).toBe(7);
    expect(percentile([], 0.5)).toBeNaN();
  });

  test("a series keeps its last N points", () => {
    const series = new Series(2, 3);
    for (let s = 1; s <= 5; s += 1) series.push(s, [s * 10, s * 100]);
    expect(series.data()).toEqual([
      [3, 4, 5],
      [30, 40, 50],
      [300, 400, 500],
    ]);
  });
});

describe("ring", () => {
  test("keeps the newest items up to its capacity, newest first", () => {
    const ring = new Ring<number>(3);
    ring.push([1, 2]);
    ring.push([3, 4, 5]);
    expect(ring.newestFirst()).toEqual([5, 4, 3]);
    expect(ring.newest).toBe(5);
    expect(ring.size).toBe(3);
    expect(() => new Ring(0)).toThrow(RangeError);
  });
});

describe("backoff", () => {
  test("doubles from the base up to the cap, with jitter within ±20%", () => {
    for (let i = 0; i < 50; i += 1) {
      expect(backoff(1, 250, 4_000)).toBeGreaterThanOrEqual(200);
      expect(backoff(1, 250, 4_000)).toBeLessThanOrEqual(300);
      expect(backoff(3, 250, 4_000)).toBeGreaterThanOrEqual(800);
      expect(backoff(20, 250, 4_000)).toBeLessThanOrEqual(4_800);
    }
  });
});

describe("format", () => {
  test("bytes read as text when printable, else hex", () => {
    expect(bytesText(new TextEncoder().encode("hello"))).toBe("hello");
    expect(bytesText(new Uint8Array([0, 255, 1]))).toBe("0x00ff01");
    expect(bytesText(new Uint8Array([0xc3, 0x28]))).toBe("0xc328");
  });

  test("durations, codes and hashes", () => {
    expect(duration(850)).toBe("850 µs");
    expect(duration(1_420)).toBe("1.42 ms");
    expect(duration(2_100_000)).toBe("2.10 s");
    expect(codeLabel("MVCC_READ_CONFLICT")).toBe("MVCC read conflict");
    expect(codeLabel("VALID")).toBe("valid");
    expect(shortHex("0123456789abcdef0123")).toBe("01234567…0123");
  });
});

describe("search", () => {
  const id = "f".repeat(64);
  test("a transaction id, a block number, a key in a named contract or in any", () => {
    expect(lookups(id.toUpperCase(), ["kv"])).toEqual([
      { kind: "transaction", id },
      { kind: "key", namespace: undefined, key: id.toUpperCase() },
    ]);
    expect(lookups("#12", [])).toEqual([
      { kind: "block", number: 12n },
      { kind: "key", namespace: undefined, key: "#12" },
    ]);
    expect(lookups("kv:greeting", ["kv", "token"])).toEqual([{ kind: "key", namespace: "kv", key: "greeting" }]);
    expect(lookups("other:greeting", ["kv"])).toEqual([{ kind: "key", namespace: undefined, key: "other:greeting" }]);
    expect(lookups("   ", ["kv"])).toEqual([]);
    expect(lookups("0", [])).toEqual([{ kind: "key", namespace: undefined, key: "0" }]);
  });
});

describe("router", () => {
  test("every page has a deep link that routes back to it", () => {
    expect(match(paths.dashboard()).page).toBe("dashboard");
    expect(match(paths.block(7n))).toMatchObject({ page: "block", params: { number: "7" } });
    expect(match(paths.transaction("ab"))).toMatchObject({ page: "transaction", params: { id: "ab" } });
    const key = match(paths.key("kv", "a/b c"));
    expect(key).toMatchObject({ page: "key", params: { namespace: "kv", key: "a/b c" } });
    const [path, query] = paths.transactions({ contract: "kv", status: "invalid" }).split("?");
    const filtered = match(path ?? "", query);
    expect(filtered.page).toBe("transactions");
    expect(filtered.query.get("status")).toBe("invalid");
    expect(match("/nope/1/2").page).toBe("not-found");
  });
});

describe("metrics", () => {
  test("transactions by code, queue depths and the mean commit latency from Prometheus text", () => {
    const text = [
      "# HELP runnel_transactions_total transactions committed, by validation code",
      "# TYPE runnel_transactions_total counter",
      'runnel_transactions_total{code="VALID"} 1500',
      'runnel_transactions_total{code="MVCC_READ_CONFLICT"} 3',
      'runnel_queue_depth{queue="verify"} 7',
      'runnel_commit_latency_seconds_bucket{le="0.005"} 10',
      "runnel_commit_latency_seconds_sum 3.0",
      "runnel_commit_latency_seconds_count 1500",
      "garbage line",
      'runnel_queue_depth{queue="commit"} NaN',
    ].join("\n");
    const metrics = parseMetrics(text);
    expect([...metrics.transactionsByCode]).toEqual([
      ["VALID", 1500],
      ["MVCC_READ_CONFLICT", 3],
    ]);
    expect([...metrics.queueDepth]).toEqual([["verify", 7]]);
    expect(metrics.commitLatencyMeanUs).toBeCloseTo(2_000);
    expect(parseMetrics("").commitLatencyMeanUs).toBeUndefined();
  });
});

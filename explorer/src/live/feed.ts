/**
 * The live-data layer: the one module that owns the node's streams. Views never open a
 * stream; they subscribe to the feed and read its snapshot.
 *
 * - Streams: committed transactions (Deliver.Transactions), sealed blocks
 *   (Deliver.Blocks) and traces (Trace.TraceStream), through @runnel/sdk over gRPC-web,
 *   plus a poll of the node's info, /healthz and /metrics every `pollMs` (1 s).
 * - Reconnect: any stream or poll failing ends the session; the state becomes
 *   "reconnecting" (the banner shows) and the feed retries with exponential backoff and
 *   jitter. Once the node answers again the streams reopen where they stopped (the next
 *   seq and block), so the lists have no gaps. Traces cannot be replayed (the node keeps
 *   no cursor for them): a missed one is fetched by id when its page opens.
 * - Batching: items pile up in pending arrays and are applied in an animation frame, at
 *   most every `flushIntervalMs` (50 ms), so 1,000 transactions a second cost 20 renders
 *   a second, not 1,000.
 * - Bounds: every buffer has a capacity; the oldest items go first.
 */

import { Code, GatewayError, QueryError, type Block, type CloseableAsyncIterable, type Gateway, type NetworkInfo, type Trace } from "@runnel/sdk";
import { decodeProposal, type ProposalSummary } from "../model/decode";
import { parseMetrics, type NodeMetrics } from "../model/metrics";
import { STEPS, stepDurations } from "../model/stages";
import { percentile, Series } from "../model/stats";
import { Ring } from "./ring";
import { READ_DENIED } from "./reader";

/** Where the feed is with the node. */
export type ConnectionState = "connecting" | "live" | "reconnecting";

/** A committed transaction as the lists show it. */
export interface LiveTransaction extends ProposalSummary {
  readonly seq: bigint;
  readonly transactionId: string;
  /** The validation code's name: `VALID`, `MVCC_READ_CONFLICT`, ... */
  readonly code: string;
  /** The orderer's clock when it ordered it, Unix ms. */
  readonly timestampMs: bigint;
}

/** The node's health as /healthz tells it. */
export interface NodeHealth {
  readonly url: string;
  readonly healthy: boolean;
  /** /healthz's text: `ok`, or the reason it is not. */
  readonly detail: string;
  /** When it was last asked, Unix ms. */
  readonly checkedAtMs: number;
}

/** What views read: a new object after every change, so a view can compare by identity. */
export interface FeedSnapshot {
  readonly connection: ConnectionState;
  /** The last failure, while reconnecting. */
  readonly lastError: string | undefined;
  /**
   * Why the node refused the last reads, when it serves members only and the explorer
   * has no identity it accepts: `IDENTITY_REQUIRED` or `BAD_READ_GRANT`.
   */
  readonly readDenied: string | undefined;
  /** How many times the feed has reconnected since it started. */
  readonly reconnects: number;
  readonly info: NetworkInfo | undefined;
  readonly health: NodeHealth | undefined;
  /** The node's /metrics figures, polled with the health. */
  readonly metrics: NodeMetrics | undefined;
  /** Newest first, at most `transactionCapacity`. */
  readonly transactions: readonly LiveTransaction[];
  /** Newest first, at most `blockCapacity`. */
  readonly blocks: readonly Block[];
  /** Transactions seen by validation code, since the page loaded (the backlog included). */
  readonly codeCounts: ReadonlyMap<string, number>;
  /** Per second: valid and invalid transactions delivered. */
  readonly throughput: Series;
  /** Per second: each step's p50 then p99, in µs (columns: STEPS × [p50, p99]). */
  readonly latency: Series;
  /** Transactions per second over the last full second. */
  readonly ratePerSecond: number;
  /** Traces received so far: changes when new ones arrived (rows showing them re-render). */
  readonly tracesSeen: number;
}

/** The feed's limits and pace. */
export interface FeedOptions {
  /** Transactions kept for the lists. */
  transactionCapacity: number;
  /** Blocks kept for the list. */
  blockCapacity: number;
  /** Traces kept by transaction id. */
  traceCapacity: number;
  /** Traces asked for by id at once, at most (for rows the stream brought no trace for). */
  traceFetchesMax: number;
  /** Stored transactions loaded on the first connection, so the lists do not start empty. */
  backlogTransactions: number;
  /** Stored blocks loaded on the first connection. */
  backlogBlocks: number;
  /** Points each chart keeps (one per second). */
  chartPoints: number;
  /** How often the node's info and health are polled, ms. */
  pollMs: number;
  /** The first retry's delay, ms; doubled per failure up to `retryMaxMs`. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** How long a poll may take before the node counts as unreachable, ms. */
  pollTimeoutMs: number;
  /** The least time between two applied batches, ms: 50 ms is 20 renders a second at most, still live to the eye. */
  flushIntervalMs: number;
  /** Runs `flush` before the next paint; tests pass their own. */
  schedule: (flush: () => void) => void;
  /** Fetches /healthz; tests pass their own. */
  fetch: typeof fetch;
}

const DEFAULTS: FeedOptions = {
  transactionCapacity: 5_000,
  blockCapacity: 1_000,
  traceCapacity: 5_000,
  traceFetchesMax: 4,
  backlogTransactions: 500,
  backlogBlocks: 100,
  chartPoints: 120,
  pollMs: 1_000,
  flushIntervalMs: 50,
  retryBaseMs: 250,
  retryMaxMs: 4_000,
  pollTimeoutMs: 3_000,
  schedule: (flush) => (typeof requestAnimationFrame === "function" ? requestAnimationFrame(() => flush()) : setTimeout(flush, 16)),
  fetch: (input, init) => fetch(input, init),
};

type Listener = (snapshot: FeedSnapshot) => void;

/** The feed: call `start()` once; `subscribe` to hear of every batch of changes. */
export class LiveFeed {
  readonly #gateway: Gateway;
  readonly #options: FeedOptions;
  readonly #listeners = new Set<Listener>();
  readonly #transactions: Ring<LiveTransaction>;
  readonly #blocks: Ring<Block>;
  readonly #traces = new Map<string, Trace>();
  readonly #traceWanted = new Set<string>();
  readonly #traceMissing = new Set<string>();
  readonly #traceListeners = new Map<string, Set<(trace: Trace) => void>>();
  readonly #codeCounts = new Map<string, number>();
  readonly #throughput: Series;
  readonly #latency: Series;

  #pendingTransactions: LiveTransaction[] = [];
  #pendingBlocks: Block[] = [];
  #secondValid = 0;
  #secondInvalid = 0;
  #secondDurations: number[][] = STEPS.map(() => []);
  #ratePerSecond = 0;
  #tracesSeen = 0;

  #connection: ConnectionState = "connecting";
  #lastError: string | undefined;
  #readDenied: string | undefined;
  #reconnects = 0;
  #info: NetworkInfo | undefined;
  #health: NodeHealth | undefined;
  #metrics: NodeMetrics | undefined;
  /** The next seq and block to ask for; undefined until the first connection. */
  #nextSeq: bigint | undefined;
  #nextBlock: bigint | undefined;
  /** Transactions at or below this seq were stored before the page loaded: not counted as throughput. */
  #liveFromSeq = 0n;

  #scheduled = false;
  #lastFlushMs = 0;
  #snapshot: FeedSnapshot;
  #closed = false;
  #session: AbortController | undefined;
  #ticker: ReturnType<typeof setInterval> | undefined;

  constructor(gateway: Gateway, options: Partial<FeedOptions> = {}) {
    this.#gateway = gateway;
    this.#options = { ...DEFAULTS, ...options };
    this.#transactions = new Ring(this.#options.transactionCapacity);
    this.#blocks = new Ring(this.#options.blockCapacity);
    this.#throughput = new Series(2, this.#options.chartPoints);
    this.#latency = new Series(STEPS.length * 2, this.#options.chartPoints);
    this.#snapshot = this.#makeSnapshot();
  }

  /** The node's URL. */
  get url(): string {
    return this.#gateway.getUrl();
  }

  /** The gateway, for the point queries views make (blocks, transactions, keys). */
  get gateway(): Gateway {
    return this.#gateway;
  }

  /** Connects and keeps connecting until `close()`. */
  start(): void {
    this.#ticker = setInterval(() => this.#tick(), 1_000);
    void this.#run();
  }

  /** Stops every stream and timer. */
  close(): void {
    this.#closed = true;
    this.#session?.abort();
    if (this.#ticker !== undefined) clearInterval(this.#ticker);
  }

  getSnapshot(): FeedSnapshot {
    return this.#snapshot;
  }

  /** Calls `listener` after every applied batch; returns the unsubscribe. */
  subscribe(listener: Listener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The trace of `transactionId` if the feed has seen it. */
  traceOf(transactionId: string): Trace | undefined {
    return this.#traces.get(transactionId);
  }

  /**
   * Asks the node for the trace of a transaction the stream did not bring (one stored
   * before the page loaded): at most `traceFetchesMax` at once, each id once. The answer
   * lands in `traceOf` (and a re-render); an id the node has no trace for is remembered
   * in `traceMissing`.
   */
  wantTrace(transactionId: string): void {
    if (this.#traces.has(transactionId) || this.#traceMissing.has(transactionId) || this.#traceWanted.has(transactionId)) return;
    if (this.#traceWanted.size >= this.#options.traceFetchesMax || this.#connection !== "live") return;
    this.#traceWanted.add(transactionId);
    this.#gateway.trace(transactionId, { timeoutMs: this.#options.pollTimeoutMs }).then(
      (trace) => {
        if (trace.stages.length > 0) this.#storeTrace(trace);
        else this.#markMissing(transactionId);
      },
      (error: unknown) => {
        // Only the node saying it has none makes a trace missing; a failed call is asked again later.
        if (error instanceof QueryError && error.grpcCode === Code.NotFound) this.#markMissing(transactionId);
      },
    ).finally(() => {
      this.#traceWanted.delete(transactionId);
      this.#tracesSeen += 1;
      this.#scheduleFlush();
    });
  }

  /** Whether the node had no trace of `transactionId` when asked. */
  traceMissing(transactionId: string): boolean {
    return this.#traceMissing.has(transactionId);
  }

  /** Calls `listener` once when the trace of `transactionId` arrives; returns the cancel. */
  onTrace(transactionId: string, listener: (trace: Trace) => void): () => void {
    const listeners = this.#traceListeners.get(transactionId) ?? new Set();
    listeners.add(listener);
    this.#traceListeners.set(transactionId, listeners);
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0) this.#traceListeners.delete(transactionId);
    };
  }

  // --- the connection ------------------------------------------------------------------

  async #run(): Promise<void> {
    let failures = 0;
    while (!this.#closed) {
      const session = new AbortController();
      this.#session = session;
      try {
        const info = await this.#gateway.getQuery().getNetworkInfo({ timeoutMs: this.#options.pollTimeoutMs });
        await this.#checkHealth();
        this.#onInfo(info);
        if (this.#nextSeq === undefined) {
          this.#nextSeq = max(1n, info.committedHeight - BigInt(this.#options.backlogTransactions) + 1n);
          this.#liveFromSeq = info.committedHeight;
        }
        this.#nextBlock ??= max(1n, info.blockHeight - BigInt(this.#options.backlogBlocks) + 1n);
        if (this.#connection === "reconnecting") this.#reconnects += 1;
        this.#readDenied = undefined;
        this.#setConnection("live", undefined);
        failures = 0;
        await this.#follow(info.channel, session.signal);
      } catch (error) {
        if (this.#closed) return;
        this.#readDenied = readDenied(error);
        this.#setConnection("reconnecting", describe(error));
      } finally {
        session.abort();
      }
      failures += 1;
      await sleep(backoff(failures, this.#options.retryBaseMs, this.#options.retryMaxMs));
    }
  }

  /** Runs the streams and the poll until one fails; always throws (or returns on close). */
  async #follow(channel: string, signal: AbortSignal): Promise<void> {
    const network = this.#gateway.getNetwork(channel);
    const opened = new Set<CloseableAsyncIterable<unknown>>();
    signal.addEventListener("abort", () => opened.forEach((stream) => stream.close()), { once: true });
    // A stream that opens after the session ended (another failed meanwhile) closes at once.
    const track = <T>(stream: CloseableAsyncIterable<T>): CloseableAsyncIterable<T> => {
      if (signal.aborted) stream.close();
      else opened.add(stream);
      return stream;
    };
    const transactions = async () => {
      const stream = track(await network.getTransactionEvents({ startSeq: this.#nextSeq, reconnect: false }));
      for await (const tx of stream) {
        if (signal.aborted) return;
        // Never twice: a stream reopened at the cursor starts after the last one seen.
        if (this.#nextSeq !== undefined && tx.seq < this.#nextSeq) continue;
        this.#nextSeq = tx.seq + 1n;
        this.#onTransaction({
          seq: tx.seq,
          transactionId: tx.transactionId,
          code: tx.code,
          timestampMs: tx.timestampMs,
          ...decodeProposal(tx.bytes),
        });
      }
      throw new Error("the transaction stream ended");
    };
    const blocks = async () => {
      const stream = track(await network.getBlockEvents({ startBlock: this.#nextBlock, reconnect: false }));
      for await (const block of stream) {
        if (signal.aborted) return;
        if (this.#nextBlock !== undefined && block.number < this.#nextBlock) continue;
        this.#nextBlock = block.number + 1n;
        this.#pendingBlocks.push(block);
        this.#scheduleFlush();
      }
      throw new Error("the block stream ended");
    };
    const traces = async () => {
      // A reader that falls behind is cut off (RESOURCE_EXHAUSTED); open it again.
      while (!signal.aborted) {
        const stream = track(this.#gateway.traceStream());
        try {
          for await (const trace of stream) {
            if (signal.aborted) return;
            this.#onTrace(trace);
          }
          throw new Error("the trace stream ended");
        } catch (error) {
          if (!(error instanceof QueryError && error.grpcCode === Code.ResourceExhausted)) throw error;
        } finally {
          opened.delete(stream);
        }
      }
    };
    const poll = async () => {
      while (!signal.aborted) {
        await sleep(this.#options.pollMs);
        if (signal.aborted) return;
        this.#onInfo(await this.#gateway.getQuery().getNetworkInfo({ timeoutMs: this.#options.pollTimeoutMs }));
        await Promise.all([this.#checkHealth(), this.#readMetrics()]);
      }
    };
    const runs = [transactions(), blocks(), traces(), poll()];
    // The first failure ends the session; the others fail in turn as it closes them.
    for (const run of runs) run.catch(() => undefined);
    await Promise.race(runs);
  }

  async #checkHealth(): Promise<void> {
    const url = `${this.url}/healthz`;
    let healthy = false;
    let detail: string;
    try {
      const response = await this.#options.fetch(url, { signal: AbortSignal.timeout(this.#options.pollTimeoutMs) });
      healthy = response.ok;
      detail = (await response.text()).trim() || String(response.status);
    } catch (error) {
      detail = `unreachable: ${describe(error)}`;
    }
    this.#health = { url: this.url, healthy, detail, checkedAtMs: Date.now() };
    this.#scheduleFlush();
  }

  /** Reads /metrics; a node without them (or an old one) just shows none. */
  async #readMetrics(): Promise<void> {
    try {
      const response = await this.#options.fetch(`${this.url}/metrics`, { signal: AbortSignal.timeout(this.#options.pollTimeoutMs) });
      this.#metrics = response.ok ? parseMetrics(await response.text()) : undefined;
    } catch {
      this.#metrics = undefined;
    }
  }

  #setConnection(state: ConnectionState, error: string | undefined): void {
    if (state === this.#connection && error === this.#lastError) return;
    this.#connection = state;
    this.#lastError = error;
    this.#scheduleFlush();
  }

  // --- incoming items --------------------------------------------------------------------

  #onInfo(info: NetworkInfo): void {
    this.#info = info;
    this.#scheduleFlush();
  }

  #onTransaction(tx: LiveTransaction): void {
    this.#pendingTransactions.push(tx);
    // A hidden tab gets no animation frames: keep the pending batch bounded too.
    if (this.#pendingTransactions.length > this.#options.transactionCapacity) {
      this.#pendingTransactions.splice(0, this.#pendingTransactions.length - this.#options.transactionCapacity);
    }
    this.#codeCounts.set(tx.code, (this.#codeCounts.get(tx.code) ?? 0) + 1);
    if (tx.seq > this.#liveFromSeq) {
      if (tx.code === "VALID") this.#secondValid += 1;
      else this.#secondInvalid += 1;
    }
    this.#scheduleFlush();
  }

  #onTrace(trace: Trace): void {
    this.#storeTrace(trace);
    this.#tracesSeen += 1;
    this.#scheduleFlush();
    const durations = stepDurations(trace);
    STEPS.forEach((step, i) => {
      const us = durations[step];
      if (us !== undefined) this.#secondDurations[i]?.push(us);
    });
  }

  /** Keeps a trace by id (the oldest go past capacity) and hands it to whoever waits for it. */
  #storeTrace(trace: Trace): void {
    this.#traces.set(trace.transactionId, trace);
    if (this.#traces.size > this.#options.traceCapacity) {
      const oldest = this.#traces.keys().next().value;
      if (oldest !== undefined) this.#traces.delete(oldest);
    }
    const listeners = this.#traceListeners.get(trace.transactionId);
    if (listeners !== undefined) {
      this.#traceListeners.delete(trace.transactionId);
      for (const listener of listeners) listener(trace);
    }
  }

  #markMissing(transactionId: string): void {
    this.#traceMissing.add(transactionId);
    if (this.#traceMissing.size > this.#options.traceCapacity) {
      const oldest = this.#traceMissing.values().next().value;
      if (oldest !== undefined) this.#traceMissing.delete(oldest);
    }
  }

  /** Once a second: close the second's throughput and latency points. */
  #tick(): void {
    const second = Math.floor(Date.now() / 1000);
    this.#ratePerSecond = this.#secondValid + this.#secondInvalid;
    this.#throughput.push(second, [this.#secondValid, this.#secondInvalid]);
    const points: number[] = [];
    for (const durations of this.#secondDurations) points.push(percentile(durations, 0.5), percentile(durations, 0.99));
    this.#latency.push(second, points);
    this.#secondValid = 0;
    this.#secondInvalid = 0;
    this.#secondDurations = STEPS.map(() => []);
    this.#scheduleFlush();
  }

  // --- batching ---------------------------------------------------------------------------

  #scheduleFlush(): void {
    if (this.#scheduled || this.#closed) return;
    this.#scheduled = true;
    // Under load, at most one batch per `flushIntervalMs`, still applied in an animation frame.
    const wait = this.#lastFlushMs + this.#options.flushIntervalMs - Date.now();
    if (wait > 0) setTimeout(() => this.#options.schedule(() => this.#flush()), wait);
    else this.#options.schedule(() => this.#flush());
  }

  #flush(): void {
    this.#scheduled = false;
    this.#lastFlushMs = Date.now();
    this.#transactions.push(this.#pendingTransactions);
    this.#pendingTransactions = [];
    this.#blocks.push(this.#pendingBlocks);
    this.#pendingBlocks = [];
    this.#snapshot = this.#makeSnapshot();
    for (const listener of this.#listeners) listener(this.#snapshot);
  }

  #makeSnapshot(): FeedSnapshot {
    const previous = this.#snapshot as FeedSnapshot | undefined;
    return {
      connection: this.#connection,
      lastError: this.#lastError,
      readDenied: this.#readDenied,
      reconnects: this.#reconnects,
      info: this.#info,
      health: this.#health,
      metrics: this.#metrics,
      // Reuse the arrays when nothing new arrived, so list views can skip work.
      transactions:
        previous !== undefined && previous.transactions.length === this.#transactions.size && previous.transactions[0] === this.#transactions.newest
          ? previous.transactions
          : this.#transactions.newestFirst(),
      blocks:
        previous !== undefined && previous.blocks.length === this.#blocks.size && previous.blocks[0] === this.#blocks.newest
          ? previous.blocks
          : this.#blocks.newestFirst(),
      codeCounts: new Map(this.#codeCounts),
      throughput: this.#throughput,
      latency: this.#latency,
      ratePerSecond: this.#ratePerSecond,
      tracesSeen: this.#tracesSeen,
    };
  }
}

function max(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

/** The wait before retry number `failures` (1, 2, ...): exponential, capped, with ±20% jitter. */
export function backoff(failures: number, baseMs: number, maxMs: number): number {
  const exact = Math.min(maxMs, baseMs * 2 ** Math.max(0, failures - 1));
  return Math.round(exact * (0.8 + Math.random() * 0.4));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The node's reason for refusing a read for want of an identity, if that was it. */
function readDenied(error: unknown): string | undefined {
  const name = error instanceof GatewayError ? error.errorName : undefined;
  return name !== undefined && (READ_DENIED as readonly string[]).includes(name) ? name : undefined;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

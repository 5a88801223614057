/**
 * The few figures the dashboard takes from the node's Prometheus text (/metrics;
 * node/server/src/metrics.rs lists them): transactions by validation code since the node
 * started, the validator's queue depths, and the mean commit latency.
 *
 * Parsed here, not by a library: npm's one browser-ready parser of the text format,
 * parse-prometheus-text-format, has had no change to its source since 2019, ships no
 * types, and reads the older 0.0.4 format rather than the OpenMetrics text the node
 * writes, throwing on a histogram whose `_sum` and `_count` come before its buckets (as
 * the node writes them) where the dashboard must skip what it does not know.
 */

/** What the dashboard shows of /metrics. */
export interface NodeMetrics {
  /** `runnel_transactions_total` by `code`: committed since the node process started. */
  readonly transactionsByCode: ReadonlyMap<string, number>;
  /** `runnel_queue_depth` by `queue`: items waiting at a validator stage. */
  readonly queueDepth: ReadonlyMap<string, number>;
  /** `runnel_commit_latency_seconds` sum / count, in µs; undefined before the first commit. */
  readonly commitLatencyMeanUs: number | undefined;
}

/** One sample line: `name{label="value",...} number`. */
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Reads the figures from Prometheus / OpenMetrics text; unknown lines are skipped. */
export function parseMetrics(text: string): NodeMetrics {
  const transactionsByCode = new Map<string, number>();
  const queueDepth = new Map<string, number>();
  let latencySum: number | undefined;
  let latencyCount: number | undefined;
  for (const line of text.split("\n")) {
    if (line.startsWith("#")) continue;
    const sample = SAMPLE.exec(line);
    if (sample === null) continue;
    const [, name, labelText, valueText] = sample;
    const value = Number(valueText);
    if (!Number.isFinite(value)) continue;
    const labels = new Map<string, string>();
    for (const label of (labelText ?? "").matchAll(LABEL)) labels.set(label[1] ?? "", label[2] ?? "");
    if (name === "runnel_transactions_total") transactionsByCode.set(labels.get("code") ?? "?", value);
    else if (name === "runnel_queue_depth") queueDepth.set(labels.get("queue") ?? "?", value);
    else if (name === "runnel_commit_latency_seconds_sum") latencySum = value;
    else if (name === "runnel_commit_latency_seconds_count") latencyCount = value;
  }
  const commitLatencyMeanUs =
    latencySum !== undefined && latencyCount !== undefined && latencyCount > 0 ? (latencySum / latencyCount) * 1_000_000 : undefined;
  return { transactionsByCode, queueDepth, commitLatencyMeanUs };
}

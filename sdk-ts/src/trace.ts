/**
 * Traces: when a transaction passed each stage of the flow on the node (endorse →
 * ordered → validated → committed → notified). The node keeps the latest 100,000 in
 * memory; the live stream cannot replay what a reader missed.
 */

import { callOptions, type CallOptions, type Clients } from "./client.js";
import { QueryError } from "./errors.js";
import { resumable, type CloseableAsyncIterable } from "./events.js";
import { Stage, type TransactionTrace } from "./gen/runnel/v1/api_pb.js";

/** A stage's name: `"ENDORSE_START"`, `"ORDERED"`, `"COMMITTED"`, ... */
export type StageName = Exclude<keyof typeof Stage, number>;

/** When a transaction passed one stage. */
export interface StageStamp {
  readonly stage: StageName;
  /** Unix microseconds, the clock of the process that saw it. */
  readonly atUs: bigint;
}

/** A transaction's trace. */
export interface Trace {
  readonly transactionId: string;
  /** The stages seen, in flow order. */
  readonly stages: readonly StageStamp[];
}

function stageName(stage: Stage): StageName {
  const name: unknown = (Stage as unknown as Record<number, string>)[stage];
  return typeof name === "string" ? (name as StageName) : "UNSPECIFIED";
}

/** A {@link Trace} from the node's message. */
export function toTrace(trace: TransactionTrace): Trace {
  return {
    transactionId: trace.txId,
    stages: trace.stages.map((stamp) => ({ stage: stageName(stamp.stage), atUs: stamp.atUs })),
  };
}

/** The trace of a recent transaction. */
export async function getTrace(clients: Clients, transactionId: string, options?: CallOptions): Promise<Trace> {
  try {
    const response = await clients.trace.getTrace(
      { txId: transactionId },
      callOptions(options, clients.timeouts.queryMs),
    );
    return toTrace(response.trace ?? { $typeName: "runnel.v1.TransactionTrace", txId: transactionId, stages: [] });
  } catch (cause) {
    throw new QueryError("trace", { url: clients.url, transactionId, cause });
  }
}

/** Each transaction's trace as it completes, live; ends with an error if the reader falls too far behind. */
export function traceStream(clients: Clients): CloseableAsyncIterable<Trace> {
  return resumable(
    clients,
    "trace stream",
    { reconnect: false },
    (signal) => clients.trace.traceStream({}, { signal }),
    (response) => (response.trace === undefined ? undefined : toTrace(response.trace)),
  );
}

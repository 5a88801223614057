/**
 * A transaction's path through the pipeline, from its trace's stage stamps (the node's
 * Unix-µs clock readings, sdk-ts/src/trace.ts): the spans of the waterfall and the
 * per-stage durations the dashboard charts.
 */

import type { StageName, Trace } from "@runnel/sdk";

/** A span of the waterfall: what the user sees as one bar. */
export interface Span {
  /** The pipeline step: `endorse`, `order`, `validate`, `commit`, `notify`. */
  readonly step: Step;
  /** What it covers, for the tooltip. */
  readonly covers: string;
  /** µs from the trace's first stamp to the span's start. */
  readonly startUs: number;
  /** µs from start to end. */
  readonly durationUs: number;
}

/** The pipeline's steps, in flow order. */
export const STEPS = ["endorse", "order", "validate", "commit", "notify"] as const;
export type Step = (typeof STEPS)[number];

/** Each step runs from one stamp to another. */
const STEP_BOUNDS: Record<Step, readonly [StageName, StageName, string]> = {
  endorse: ["ENDORSE_START", "ENDORSE_END", "endorsement started → endorsements gathered"],
  order: ["RECEIVED", "ORDERED", "the orderer received it → gave it a seq"],
  validate: ["ORDERED", "VALIDATED", "ordered → delivered, signatures checked, validation code given"],
  commit: ["VALIDATED", "COMMITTED", "validated → durable on disk"],
  notify: ["COMMITTED", "NOTIFIED", "durable → its submitter told"],
};

/** The stamps of a trace by stage, in µs as numbers (Unix µs fit a double exactly until 2255). */
export function stampsOf(trace: Trace): Map<StageName, number> {
  const stamps = new Map<StageName, number>();
  for (const stamp of trace.stages) stamps.set(stamp.stage, Number(stamp.atUs));
  return stamps;
}

/** The waterfall's spans: every step whose two stamps the trace has, in flow order. */
export function waterfall(trace: Trace): Span[] {
  const stamps = stampsOf(trace);
  const origin = Math.min(...stamps.values());
  const spans: Span[] = [];
  for (const step of STEPS) {
    const [from, to, covers] = STEP_BOUNDS[step];
    const start = stamps.get(from);
    const end = stamps.get(to);
    if (start === undefined || end === undefined) continue;
    spans.push({ step, covers, startUs: start - origin, durationUs: Math.max(0, end - start) });
  }
  return spans;
}

/** The µs from the trace's first stamp to its last: the transaction's whole time on the node. */
export function totalUs(trace: Trace): number {
  const values = [...stampsOf(trace).values()];
  return values.length === 0 ? 0 : Math.max(...values) - Math.min(...values);
}

/** Each step's duration in µs, for the steps the trace has. */
export function stepDurations(trace: Trace): Partial<Record<Step, number>> {
  const out: Partial<Record<Step, number>> = {};
  for (const span of waterfall(trace)) out[span.step] = span.durationUs;
  return out;
}

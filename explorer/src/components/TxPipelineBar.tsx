import type { Trace } from "@runnel/sdk";
import type { JSX } from "preact";
import { duration } from "../model/format";
import { STEPS, stepDurations, totalUs } from "../model/stages";

/** The four steps a row's bar shows; notify is too short to see at this size. */
const SHOWN = STEPS.slice(0, 4);

/**
 * A transaction's path through the pipeline in one line of a list: a stacked bar of its
 * endorse, order, validate and commit durations, and its whole time on the node. The
 * bar's length is the step's share of the transaction's own time.
 */
export function TxPipelineBar(props: { trace: Trace | undefined; missing?: boolean }): JSX.Element {
  if (props.trace === undefined) {
    return props.missing ? (
      <span class="muted" title="The node no longer keeps this transaction's trace">
        —
      </span>
    ) : (
      <span class="muted pipeline-pending" title="Waiting for the trace">
        …
      </span>
    );
  }
  const durations = stepDurations(props.trace);
  const total = totalUs(props.trace);
  const sum = SHOWN.reduce((acc, step) => acc + (durations[step] ?? 0), 0) || 1;
  const title = SHOWN.map((step) => `${step} ${duration(durations[step] ?? 0)}`).join(", ");
  return (
    <span class="pipeline" title={`${title}; total ${duration(total)}`} data-total-us={total}>
      <span class="pipeline-bar" aria-hidden="true">
        {SHOWN.map((step) => (
          <span key={step} class={`step-${step}`} style={{ width: `${((durations[step] ?? 0) / sum) * 100}%` }} />
        ))}
      </span>
      <span class="pipeline-total">{duration(total)}</span>
    </span>
  );
}

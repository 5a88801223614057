import type { Trace } from "@runnel/sdk";
import type { JSX } from "preact";
import { duration } from "../model/format";
import { totalUs, waterfall } from "../model/stages";

/**
 * A transaction's path through the pipeline: one bar per step (endorse, order, validate,
 * commit, notify), placed at its start and as long as it took, from the node's stage
 * stamps. The gap before "order" is the client signing and submitting.
 */
export function TxWaterfall(props: { trace: Trace }): JSX.Element {
  const spans = waterfall(props.trace);
  const total = totalUs(props.trace);
  const scale = total > 0 ? total : 1;
  return (
    <figure class="waterfall">
      <table aria-label="Stage waterfall">
        <thead>
          <tr>
            <th scope="col">Stage</th>
            <th scope="col">Starts at</th>
            <th scope="col">Duration</th>
            <th scope="col" class="bar-col">
              <span class="visually-hidden">Timeline</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {spans.map((span) => (
            <tr key={span.step} data-step={span.step} data-duration-us={span.durationUs} data-start-us={span.startUs}>
              <th scope="row" title={span.covers}>
                {span.step}
              </th>
              <td class="num">+{duration(span.startUs)}</td>
              <td class="num duration">{duration(span.durationUs)}</td>
              <td class="bar-col">
                <div class="bar-track">
                  <div
                    class={`bar step-${span.step}`}
                    style={{ left: `${(span.startUs / scale) * 100}%`, width: `max(2px, ${(span.durationUs / scale) * 100}%)` }}
                  />
                </div>
              </td>
            </tr>
          ))}
        </tbody>
        <tfoot>
          <tr>
            <th scope="row">total</th>
            <td />
            <td class="num" data-total-us={total}>
              {duration(total)}
            </td>
            <td />
          </tr>
        </tfoot>
      </table>
      <figcaption class="muted">
        From the node's stage stamps (µs): endorse = endorsements gathered, order = received → seq given, validate = ordered →
        validation code, commit = durable, notify = submitter told.
      </figcaption>
    </figure>
  );
}

import { Fragment, type JSX } from "preact";
import { useEffect } from "preact/hooks";
import type { LiveTransaction } from "../live/feed";
import { useFeed, useSnapshot } from "../live/hooks";
import { clockTime } from "../model/format";
import { Link, paths } from "../router";
import { markedText } from "../model/text";
import { CodeBadge } from "./CodeBadge";
import { Hash } from "./Hash";
import { LedgerText } from "./LedgerText";
import { TxPipelineBar } from "./TxPipelineBar";
import { VirtualList } from "./VirtualList";

const ROW_HEIGHT = 40;

/** How long a row waits for the trace stream before asking the node for its trace. */
const TRACE_GRACE_MS = 2_000;

/**
 * A row's pipeline bar: the trace the stream brought, else (for a transaction stored
 * before the page loaded, or one whose trace the stream missed) asked for once the row is
 * in view.
 */
function PipelineCell(props: { tx: LiveTransaction }): JSX.Element {
  const feed = useFeed();
  const { transactionId, timestampMs } = props.tx;
  const trace = feed.traceOf(transactionId);
  useEffect(() => {
    if (trace === undefined && Date.now() - Number(timestampMs) > TRACE_GRACE_MS) feed.wantTrace(transactionId);
  });
  return <TxPipelineBar trace={trace} missing={feed.traceMissing(transactionId)} />;
}

/**
 * Transactions, newest first, virtualised: a live stream of thousands stays smooth. Each
 * row shows its path through the pipeline as soon as its trace arrives.
 */
export function TxList(props: { transactions: readonly LiveTransaction[]; height?: number; label?: string; compact?: boolean }): JSX.Element {
  // Re-render when traces arrive, so visible rows pick theirs up.
  useSnapshot();
  return (
    <VirtualList
      label={props.label ?? "Transactions"}
      items={props.transactions}
      rowHeight={ROW_HEIGHT}
      height={props.height ?? 480}
      rowKey={(tx) => `${tx.seq}`}
      empty={<p class="muted">No transactions yet. They appear here as the node commits them.</p>}
      header={
        <>
          <span role="columnheader" class="c-seq">Seq</span>
          <span role="columnheader" class="c-id">Transaction</span>
          <span role="columnheader" class="c-call">Call</span>
          <span role="columnheader" class="c-code">Status</span>
          <span role="columnheader" class="c-pipe">Pipeline</span>
          {!props.compact && (
            <span role="columnheader" class="c-time">
              Ordered
            </span>
          )}
        </>
      }
      renderRow={(tx) => (
        <>
          <span role="cell" class="c-seq">{tx.seq.toString()}</span>
          <span role="cell" class="c-id">
            <Link href={paths.transaction(tx.transactionId)} data-tx={tx.transactionId}>
              <Hash value={tx.transactionId} />
            </Link>
          </span>
          <span role="cell" class="c-call" title={markedText(`${tx.contract}.${tx.fn}(${tx.args.join(", ")})`)}>
            <strong>
              <LedgerText text={tx.contract} />
            </strong>
            .<LedgerText text={tx.fn} />
            <span class="muted">
              ({tx.args.map((arg, i) => (
                <Fragment key={i}>
                  {i > 0 && ", "}
                  <LedgerText text={arg} />
                </Fragment>
              ))})
            </span>
          </span>
          <span role="cell" class="c-code">
            <CodeBadge code={tx.code} />
          </span>
          <span role="cell" class="c-pipe">
            <PipelineCell tx={tx} />
          </span>
          {!props.compact && <span role="cell" class="c-time">{tx.timestampMs > 0n ? clockTime(tx.timestampMs) : "—"}</span>}
        </>
      )}
    />
  );
}

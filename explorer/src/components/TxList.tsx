import type { JSX } from "preact";
import type { LiveTransaction } from "../live/feed";
import { clockTime } from "../model/format";
import { Link, paths } from "../router";
import { CodeBadge } from "./CodeBadge";
import { Hash } from "./Hash";
import { VirtualList } from "./VirtualList";

const ROW_HEIGHT = 40;

/** Transactions, newest first, virtualised: a live stream of thousands stays smooth. */
export function TxList(props: { transactions: readonly LiveTransaction[]; height?: number; label?: string }): JSX.Element {
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
          <span role="columnheader" class="c-time">Ordered</span>
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
          <span role="cell" class="c-call" title={`${tx.contract}.${tx.fn}(${tx.args.join(", ")})`}>
            <strong>{tx.contract}</strong>.{tx.fn}
            <span class="muted">({tx.args.join(", ")})</span>
          </span>
          <span role="cell" class="c-code">
            <CodeBadge code={tx.code} />
          </span>
          <span role="cell" class="c-time">{tx.timestampMs > 0n ? clockTime(tx.timestampMs) : "—"}</span>
        </>
      )}
    />
  );
}

import type { Trace } from "@runnel/sdk";
import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { CodeBadge } from "../components/CodeBadge";
import { Endorsements } from "../components/Endorsements";
import { Hash } from "../components/Hash";
import { InclusionProofCheck } from "../components/InclusionProofCheck";
import { LedgerText } from "../components/LedgerText";
import { RwSet } from "../components/RwSet";
import { TxWaterfall } from "../components/TxWaterfall";
import { useFeed, useLoad, useSnapshot, useThrottled } from "../live/hooks";
import { bytesPreview, dateTime } from "../model/format";
import { Link, paths } from "../router";

/** The least time between two reloads of a transaction not yet sealed, ms. */
const DETAIL_RELOAD_MS = 1_000;

/** One transaction in full: status, proposal, decoded arguments, rw-set, endorsements, waterfall. */
export function TransactionPage(props: { id: string }): JSX.Element {
  const feed = useFeed();
  // Reloaded (at most once a second) while it may still change: not found yet, or not sealed yet.
  const newestSeq = useThrottled(Number(useSnapshot().transactions[0]?.seq ?? 0n), DETAIL_RELOAD_MS);
  const [settled, setSettled] = useState(false);
  const detail = useLoad(() => feed.gateway.getQuery().getTransaction(props.id), [props.id], settled ? 0 : newestSeq);
  useEffect(() => setSettled(detail.state === "ready" && detail.value.block > 0n && detail.value.phaseName === "durable"), [detail]);
  return (
    <>
      <h1>
        Transaction <Hash value={props.id} />
      </h1>
      {detail.state === "loading" && <p aria-busy="true">Loading the transaction…</p>}
      {detail.state === "failed" && (
        <p class="error">
          <LedgerText text={detail.error} />
        </p>
      )}
      {detail.state === "ready" && (
        <>
          <dl class="facts">
            <dt>Status</dt>
            <dd data-testid="tx-code">
              <CodeBadge code={detail.value.codeName} />
            </dd>
            <dt>Id</dt>
            <dd>
              <code class="wrap">
                <LedgerText text={detail.value.txId} />
              </code>
            </dd>
            <dt>Seq</dt>
            <dd>{detail.value.seq.toString()}</dd>
            <dt>Block</dt>
            <dd>
              {detail.value.block > 0n ? <Link href={paths.block(detail.value.block)}>#{detail.value.block.toString()}</Link> : <span class="muted">not sealed yet</span>}
            </dd>
            <dt>Phase</dt>
            <dd>{detail.value.phaseName}</dd>
            <dt>Ordered at</dt>
            <dd>{detail.value.timestampMs > 0n ? dateTime(detail.value.timestampMs) : "—"}</dd>
            <dt>Creator</dt>
            <dd data-testid="creator">
              {detail.value.creator ? (
                <>
                  <LedgerText text={detail.value.creator.name} /> (<LedgerText text={detail.value.creator.org} /> <LedgerText text={detail.value.creator.role} />)
                </>
              ) : (
                "—"
              )}
            </dd>
          </dl>
          <section aria-labelledby="waterfall-heading">
            <h2 id="waterfall-heading">Path through the pipeline</h2>
            <TraceSection id={props.id} />
          </section>
          <section aria-labelledby="proposal-heading">
            <h2 id="proposal-heading">Proposal</h2>
            {detail.value.proposal === undefined ? (
              <p class="muted">The transaction's bytes do not decode.</p>
            ) : (
              <dl class="facts" data-testid="proposal">
                <dt>Contract</dt>
                <dd>
                  <Link href={paths.contract(detail.value.proposal.contract)}>
                    <LedgerText text={detail.value.proposal.contract} />
                  </Link>
                </dd>
                <dt>Function</dt>
                <dd>
                  <code>
                    <LedgerText text={detail.value.proposal.function} />
                  </code>
                </dd>
                <dt>Arguments</dt>
                <dd>
                  <ol class="args">
                    {detail.value.proposal.args.map((arg, i) => (
                      <li key={i}>
                        <code>
                          <LedgerText text={pretty(arg)} />
                        </code>
                      </li>
                    ))}
                  </ol>
                </dd>
                <dt>Result</dt>
                <dd>
                  <code>
                    <LedgerText text={pretty(detail.value.payload?.result ?? new Uint8Array()) || "—"} />
                  </code>
                </dd>
                <dt>Channel</dt>
                <dd>
                  <LedgerText text={detail.value.proposal.channel} />
                </dd>
                <dt>Proposed at</dt>
                <dd>{dateTime(detail.value.proposal.timestampMs)}</dd>
              </dl>
            )}
          </section>
          <section aria-labelledby="rwset-heading">
            <h2 id="rwset-heading">Read/write set</h2>
            <RwSet rwsets={detail.value.payload?.rwsets ?? []} />
          </section>
          {(detail.value.payload?.events.length ?? 0) > 0 && (
            <section aria-labelledby="events-heading">
              <h2 id="events-heading">Events</h2>
              <ul>
                {detail.value.payload?.events.map((event, i) => (
                  <li key={i}>
                    <code>
                      <LedgerText text={event.contract} />.<LedgerText text={event.name} />
                    </code>{" "}
                    <LedgerText text={pretty(event.payload)} />
                  </li>
                ))}
              </ul>
            </section>
          )}
          {detail.value.block > 0n && (
            <section aria-labelledby="inclusion-heading">
              <h2 id="inclusion-heading">Inclusion proof</h2>
              <ProofSection id={props.id} />
            </section>
          )}
          <section aria-labelledby="endorsements-heading">
            <h2 id="endorsements-heading">Endorsements</h2>
            <Endorsements endorsements={detail.value.endorsements} />
          </section>
        </>
      )}
    </>
  );
}

/** The waterfall: from the live feed if it saw the trace, else asked of the node, else awaited. */
function TraceSection(props: { id: string }): JSX.Element {
  const feed = useFeed();
  const [trace, setTrace] = useState<Trace | undefined>(() => feed.traceOf(props.id));
  const [missing, setMissing] = useState(false);
  useEffect(() => {
    let current = true;
    const known = feed.traceOf(props.id);
    setTrace(known);
    setMissing(false);
    if (known !== undefined) return;
    const cancel = feed.onTrace(props.id, (arrived) => current && setTrace(arrived));
    feed.gateway.trace(props.id).then(
      (asked) => {
        if (!current) return;
        if (asked.stages.length > 0) setTrace((live) => live ?? asked);
        else setMissing(true);
      },
      () => current && setMissing(true),
    );
    return () => {
      current = false;
      cancel();
    };
  }, [props.id]);
  if (trace !== undefined && trace.stages.length > 0) return <TxWaterfall trace={trace} />;
  return missing ? (
    <p class="muted">The node keeps the traces of its latest transactions only; this one's is gone.</p>
  ) : (
    <p aria-busy="true">Waiting for the trace…</p>
  );
}

/** A button that fetches the transaction's inclusion proof and checks it in the browser. */
function ProofSection(props: { id: string }): JSX.Element {
  const [shown, setShown] = useState(false);
  useEffect(() => setShown(false), [props.id]);
  return shown ? (
    <InclusionProofCheck transactionId={props.id} />
  ) : (
    <button type="button" class="outline" onClick={() => setShown(true)}>
      Verify inclusion in this browser
    </button>
  );
}

/** Bytes as text (the first 2,000 characters), JSON re-indented on one line when it is JSON. */
function pretty(bytes: Uint8Array): string {
  const text = bytesPreview(bytes, 2_000);
  try {
    return JSON.stringify(JSON.parse(text));
  } catch {
    return text;
  }
}

import type { JSX } from "preact";
import { useMemo } from "preact/hooks";
import { KeyHistory } from "../components/KeyHistory";
import { useFeed, useLoad, useSnapshot, useThrottled } from "../live/hooks";
import { bytesText, count } from "../model/format";
import { Link, paths } from "../router";

/** The least time between two reloads of a key's value and history, ms. */
const KEY_RELOAD_MS = 1_000;

/** A key: its current value and version, and its history; reloads when its contract commits. */
export function KeyPage(props: { namespace: string; keyName: string }): JSX.Element {
  const feed = useFeed();
  const { transactions } = useSnapshot();
  // The newest seq of this contract's transactions: a change means the key may have moved.
  // Throttled: a busy contract reloads the key once a second, not at every batch.
  const newest = useThrottled(
    useMemo(() => transactions.find((tx) => tx.contract === props.namespace)?.seq ?? 0n, [transactions, props.namespace]),
    KEY_RELOAD_MS,
  );
  const loaded = useLoad(
    async () => {
      const query = feed.gateway.getQuery();
      const [value, history] = await Promise.all([query.getKey(props.namespace, props.keyName), query.getKeyHistory(props.namespace, props.keyName, { limit: 100 })]);
      return { value, history };
    },
    [props.namespace, props.keyName],
    Number(newest),
  );
  return (
    <>
      <h1>
        Key <code>{props.keyName}</code>
      </h1>
      <p>
        in <Link href={paths.contract(props.namespace)}>{props.namespace}</Link>
      </p>
      {loaded.state === "loading" && <p aria-busy="true">Loading the key…</p>}
      {loaded.state === "failed" && <p class="error">{loaded.error}</p>}
      {loaded.state === "ready" && (
        <>
          <section aria-labelledby="current-heading">
            <h2 id="current-heading">Current value</h2>
            {loaded.value.value.found ? (
              <dl class="facts" data-testid="key-current">
                <dt>Value</dt>
                <dd>
                  <code data-testid="key-value">{bytesText(loaded.value.value.value)}</code>
                </dd>
                <dt>Version</dt>
                <dd>seq {loaded.value.value.version?.toString()}</dd>
                <dt>Read at height</dt>
                <dd>{count(loaded.value.value.height)}</dd>
              </dl>
            ) : (
              <p data-testid="key-current">The key does not exist (read at height {count(loaded.value.value.height)}).</p>
            )}
          </section>
          <section aria-labelledby="history-heading">
            <h2 id="history-heading">History</h2>
            <KeyHistory entries={loaded.value.history} />
          </section>
        </>
      )}
    </>
  );
}

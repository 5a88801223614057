import type { JSX } from "preact";
import type { KeyModification } from "@runnel/sdk";
import { useEffect, useMemo, useState } from "preact/hooks";
import { KeyHistory } from "../components/KeyHistory";
import { LedgerText } from "../components/LedgerText";
import { useFeed, useLoad, useSnapshot, useThrottled } from "../live/hooks";
import { bytesText, count, hexBytes } from "../model/format";
import { Link, paths } from "../router";

/** The least time between two reloads of a key's value and history, ms. */
const KEY_RELOAD_MS = 1_000;
/** History entries per page (the node answers at most 1,000). */
const HISTORY_PAGE = 100;

/**
 * A key: its current value and version, and its history; reloads when its contract
 * commits. `keyName` is the key's text, or with `hex` its bytes in hex (a key that is not
 * UTF-8, as `paths.key` links it).
 */
export function KeyPage(props: { namespace: string; keyName: string; hex?: boolean }): JSX.Element {
  const feed = useFeed();
  const key = useMemo(() => (props.hex === true ? hexBytes(props.keyName) : props.keyName), [props.keyName, props.hex]);
  const { transactions } = useSnapshot();
  // The newest seq of this contract's transactions: a change means the key may have moved.
  // Throttled: a busy contract reloads the key once a second, not at every batch.
  const newest = useThrottled(
    useMemo(() => transactions.find((tx) => tx.contract === props.namespace)?.seq ?? 0n, [transactions, props.namespace]),
    KEY_RELOAD_MS,
  );
  const loaded = useLoad(
    async () => {
      if (key === undefined) throw new Error("the key's hex in this address is not hex (an even number of digits 0-9, a-f)");
      const query = feed.gateway.getQuery();
      const [value, history] = await Promise.all([query.getKey(props.namespace, key), query.getKeyHistory(props.namespace, key, { limit: HISTORY_PAGE })]);
      return { value, history };
    },
    [props.namespace, key],
    Number(newest),
  );
  // Older pages, asked for with "Show older": before the oldest seq shown.
  const [older, setOlder] = useState<KeyModification[]>([]);
  const [olderDone, setOlderDone] = useState(false);
  useEffect(() => {
    setOlder([]);
    setOlderDone(false);
  }, [props.namespace, key]);
  const firstPage = loaded.state === "ready" ? loaded.value.history : [];
  const history = [...firstPage, ...older.filter((entry) => entry.seq < (firstPage[firstPage.length - 1]?.seq ?? 0n))];
  const more = !olderDone && firstPage.length === HISTORY_PAGE;
  const showOlder = async () => {
    const before = history[history.length - 1]?.seq;
    if (before === undefined || key === undefined) return;
    const page = await feed.gateway.getQuery().getKeyHistory(props.namespace, key, { beforeSeq: before, limit: HISTORY_PAGE });
    setOlder((kept) => [...kept, ...page]);
    if (page.length < HISTORY_PAGE) setOlderDone(true);
  };
  return (
    <>
      <h1>
        Key{" "}
        <code>
          <LedgerText text={props.hex === true ? `0x${props.keyName}` : props.keyName} />
        </code>
      </h1>
      <p>
        in{" "}
        <Link href={paths.contract(props.namespace)}>
          <LedgerText text={props.namespace} />
        </Link>
      </p>
      {loaded.state === "loading" && <p aria-busy="true">Loading the key…</p>}
      {loaded.state === "failed" && (
        <p class="error">
          <LedgerText text={loaded.error} />
        </p>
      )}
      {loaded.state === "ready" && (
        <>
          <section aria-labelledby="current-heading">
            <h2 id="current-heading">Current value</h2>
            {loaded.value.value.found ? (
              <dl class="facts" data-testid="key-current">
                <dt>Value</dt>
                <dd>
                  <code data-testid="key-value">
                    <LedgerText text={bytesText(loaded.value.value.value)} />
                  </code>
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
            <KeyHistory entries={history} />
            {more && (
              <button type="button" class="outline" onClick={() => void showOlder()}>
                Show older
              </button>
            )}
          </section>
        </>
      )}
    </>
  );
}

import type { JSX } from "preact";
import { useMemo, useState } from "preact/hooks";
import { Hash } from "../components/Hash";
import { LedgerText } from "../components/LedgerText";
import { LifecycleApprovals } from "../components/LifecycleApprovals";
import { TxList } from "../components/TxList";
import { useFeed, useLoad, useSnapshot, useThrottled } from "../live/hooks";
import { decodeContractDefinition } from "../model/decode";
import { hex } from "../model/format";
import { markedText } from "../model/text";
import { Link, navigate, paths } from "../router";

/** The namespace of approvals and deploys. */
const LIFECYCLE = "_lifecycle";
/** The lifecycle key a contract's definitions are kept under. */
const definitionKey = (name: string) => `contracts/${name}`;
/** The least time between two reloads of the approvals, ms. */
const APPROVALS_RELOAD_MS = 1_000;

/**
 * One contract: its definitions over time (from `_lifecycle`), which organisations
 * approved them (reloaded when a lifecycle transaction commits), a key lookup, its live
 * transactions.
 */
export function ContractPage(props: { name: string }): JSX.Element {
  const feed = useFeed();
  const { transactions } = useSnapshot();
  const versions = useLoad(async () => {
    const history = await feed.gateway.getQuery().getKeyHistory(LIFECYCLE, definitionKey(props.name));
    return history.map((entry) => ({ entry, definition: entry.isDelete ? undefined : decodeContractDefinition(entry.value) }));
  }, [props.name]);
  // Any organisation's approval or a deploy is a lifecycle transaction: reload on the newest.
  const newestLifecycle = useThrottled(
    useMemo(() => transactions.find((tx) => tx.contract === LIFECYCLE)?.seq ?? 0n, [transactions]),
    APPROVALS_RELOAD_MS,
  );
  const approvals = useLoad(() => feed.gateway.getQuery().getContractApprovals(props.name), [props.name], Number(newestLifecycle));
  const mine = useMemo(() => transactions.filter((tx) => tx.contract === props.name), [transactions, props.name]);
  const [key, setKey] = useState("");
  return (
    <>
      <h1>
        Contract{" "}
        <code>
          <LedgerText text={props.name} />
        </code>
      </h1>
      <section aria-labelledby="versions-heading">
        <h2 id="versions-heading">Versions</h2>
        {versions.state === "loading" && <p aria-busy="true">Loading…</p>}
        {versions.state === "failed" && (
          <p class="error">
            <LedgerText text={versions.error} />
          </p>
        )}
        {versions.state === "ready" &&
          (versions.value.length === 0 ? (
            <p class="muted">No contract of this name has been deployed.</p>
          ) : (
            <table class="striped" aria-label="Contract versions">
              <thead>
                <tr>
                  <th scope="col">Sequence</th>
                  <th scope="col">Version</th>
                  <th scope="col">Policy</th>
                  <th scope="col">Code hash</th>
                  <th scope="col">Deployed by</th>
                </tr>
              </thead>
              <tbody>
                {versions.value.map(({ entry, definition }) => (
                  <tr key={entry.seq.toString()}>
                    <td class="num">{definition?.sequence.toString() ?? "?"}</td>
                    <td>
                      <LedgerText text={definition?.version ?? "?"} />
                    </td>
                    <td>
                      <code>
                        <LedgerText text={definition?.policy ?? ""} />
                      </code>
                    </td>
                    <td>{definition ? <Hash value={hex(definition.codeHash)} /> : ""}</td>
                    <td>
                      <Link href={paths.transaction(entry.transactionId)}>
                        <Hash value={entry.transactionId} />
                      </Link>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          ))}
      </section>
      <section aria-labelledby="approvals-heading">
        <h2 id="approvals-heading">Approvals</h2>
        {approvals.state === "loading" && <p aria-busy="true">Loading…</p>}
        {approvals.state === "failed" && (
          <p class="error">
            <LedgerText text={approvals.error} />
          </p>
        )}
        {approvals.state === "ready" && <LifecycleApprovals contract={approvals.value} />}
      </section>
      <section aria-labelledby="key-heading">
        <h2 id="key-heading">Look up a key</h2>
        <form
          role="search"
          class="inline-form"
          onSubmit={(event) => {
            event.preventDefault();
            if (key.trim()) navigate(paths.key(props.name, key.trim()));
          }}
        >
          <input aria-label={`Key in ${markedText(props.name)}`} placeholder="key" value={key} onInput={(event) => setKey(event.currentTarget.value)} />
          <button type="submit">Show key</button>
        </form>
      </section>
      <section aria-labelledby="contract-tx-heading">
        <h2 id="contract-tx-heading">Latest transactions</h2>
        <TxList transactions={mine} height={360} label={`Transactions of ${markedText(props.name)}`} />
      </section>
    </>
  );
}

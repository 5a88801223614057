import type { JSX } from "preact";
import { useMemo, useState } from "preact/hooks";
import { TxList } from "../components/TxList";
import type { LiveTransaction } from "../live/feed";
import { useSnapshot } from "../live/hooks";
import { codeLabel, count } from "../model/format";
import { markedText } from "../model/text";
import { navigate, paths, type Route } from "../router";

const CODES = [
  "VALID",
  "MVCC_READ_CONFLICT",
  "PHANTOM_READ_CONFLICT",
  "ENDORSEMENT_POLICY_FAILURE",
  "BAD_CREATOR_SIGNATURE",
  "BAD_ENDORSER_SIGNATURE",
  "DUPLICATE_TXID",
  "CONTRACT_NOT_FOUND",
  "EXPIRED_CERTIFICATE",
  "BAD_PAYLOAD",
  "ENDORSEMENT_MISMATCH",
  "ILLEGAL_WRITESET",
  "BAD_RWSET",
  "TIMESTAMP_OUT_OF_WINDOW",
  "REVOKED_CERTIFICATE",
  "BAD_CONFIG_UPDATE",
  "UNUSABLE_POLICY",
];

/** The live transaction stream, filtered by contract and status (kept in the URL). */
export function TransactionsPage(props: { route: Route }): JSX.Element {
  const { transactions: live } = useSnapshot();
  // Paused, the list holds still (to read or click a row at 1,000 tx/s) while the feed goes on.
  const [frozen, setFrozen] = useState<readonly LiveTransaction[] | undefined>(undefined);
  const transactions = frozen ?? live;
  const arrived = frozen === undefined ? 0 : (live[0]?.seq ?? 0n) - (frozen[0]?.seq ?? 0n);
  const contract = props.route.query.get("contract") ?? "";
  const status = props.route.query.get("status") ?? "";
  const contracts = useMemo(() => [...new Set(transactions.map((tx) => tx.contract))].sort(), [transactions]);
  const shown = useMemo(
    () =>
      transactions.filter(
        (tx) =>
          (contract === "" || tx.contract === contract) &&
          (status === "" || (status === "invalid" ? tx.code !== "VALID" : tx.code === status)),
      ),
    [transactions, contract, status],
  );
  const setFilter = (next: { contract?: string; status?: string }) =>
    navigate(paths.transactions({ contract, status, ...next }), { replace: true });
  return (
    <>
      <h1>Transactions</h1>
      <form class="filters" onSubmit={(event) => event.preventDefault()}>
        <label>
          Contract
          <select name="contract" value={contract} onChange={(event) => setFilter({ contract: event.currentTarget.value })}>
            <option value="">all</option>
            {[...new Set([...contracts, ...(contract ? [contract] : [])])].map((name) => (
              <option key={name} value={name}>
                {markedText(name)}
              </option>
            ))}
          </select>
        </label>
        <label>
          Status
          <select name="status" value={status} onChange={(event) => setFilter({ status: event.currentTarget.value })}>
            <option value="">all</option>
            <option value="invalid">invalid (any code)</option>
            {CODES.map((code) => (
              <option key={code} value={code}>
                {codeLabel(code)}
              </option>
            ))}
          </select>
        </label>
        <button type="button" class="outline secondary pause" aria-pressed={frozen !== undefined} onClick={() => setFrozen(frozen === undefined ? live : undefined)}>
          {frozen === undefined ? "Pause" : `Resume (${count(arrived)} new)`}
        </button>
        <p class="muted" aria-live="off">
          <span data-testid="tx-shown">{count(shown.length)}</span> of {count(transactions.length)} kept in the page
          {frozen !== undefined && ", paused"}
        </p>
      </form>
      <TxList transactions={shown} height={600} />
    </>
  );
}

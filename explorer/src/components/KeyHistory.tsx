import type { KeyModification } from "@runnel/sdk";
import type { JSX } from "preact";
import { bytesText } from "../model/format";
import { Link, paths } from "../router";
import { Hash } from "./Hash";
import { LedgerText } from "./LedgerText";

/** A key's committed writes, newest first. */
export function KeyHistory(props: { entries: readonly KeyModification[] }): JSX.Element {
  if (props.entries.length === 0) return <p class="muted">No committed writes.</p>;
  return (
    <table class="striped" aria-label="Key history">
      <thead>
        <tr>
          <th scope="col">Version (seq)</th>
          <th scope="col">Transaction</th>
          <th scope="col">Value</th>
        </tr>
      </thead>
      <tbody>
        {props.entries.map((entry) => (
          <tr key={entry.seq.toString()} data-seq={entry.seq.toString()}>
            <td class="num">{entry.seq.toString()}</td>
            <td>
              <Link href={paths.transaction(entry.transactionId)}>
                <Hash value={entry.transactionId} />
              </Link>
            </td>
            <td class="value">
              {entry.isDelete ? (
                <em class="muted">deleted</em>
              ) : (
                <code>
                  <LedgerText text={bytesText(entry.value)} />
                </code>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

import type { TransactionDetail } from "@runnel/sdk";
import type { JSX } from "preact";
import { endorsementsByOrg } from "../model/endorsements";
import { hex, plural } from "../model/format";
import { Hash } from "./Hash";
import { LedgerText } from "./LedgerText";

/**
 * The endorsers who signed the transaction's payload, under a heading per organisation
 * (a row group each), so a policy across organisations reads at a glance.
 */
export function Endorsements(props: { endorsements: TransactionDetail["endorsements"] }): JSX.Element {
  if (props.endorsements.length === 0) return <p class="muted">No endorsements.</p>;
  return (
    <table aria-label="Endorsements">
      <thead>
        <tr>
          <th scope="col">Organisation</th>
          <th scope="col">Role</th>
          <th scope="col">Name</th>
          <th scope="col">Signature</th>
        </tr>
      </thead>
      {endorsementsByOrg(props.endorsements).map((group) => (
        <tbody key={group.org} class="org-group">
          <tr>
            <th scope="rowgroup" colSpan={4}>
              <LedgerText text={group.org} /> <small class="muted">{plural(group.endorsements.length, "endorsement")}</small>
            </th>
          </tr>
          {group.endorsements.map((endorsement, i) => (
            <tr key={i}>
              <td>
                <LedgerText text={endorsement.endorser?.org ?? "?"} />
              </td>
              <td>
                <LedgerText text={endorsement.endorser?.role ?? "?"} />
              </td>
              <td>
                <LedgerText text={endorsement.endorser?.name ?? "?"} />
              </td>
              <td>
                <Hash value={hex(endorsement.signature)} />
              </td>
            </tr>
          ))}
        </tbody>
      ))}
    </table>
  );
}

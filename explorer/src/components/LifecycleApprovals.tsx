import type { ContractApprovals } from "@runnel/sdk";
import type { JSX } from "preact";
import { approvalsBySequence, type ApprovalStanding, type SequenceApprovals } from "../model/approvals";
import { Hash } from "./Hash";
import { LedgerText } from "./LedgerText";

const STANDING: Record<ApprovalStanding, { text: string; class: string }> = {
  matches: { text: "✓ matches the definition in force", class: "badge valid" },
  differs: { text: "✕ differs from the definition in force", class: "badge invalid" },
  pending: { text: "awaiting commit of this sequence", class: "badge" },
  earlier: { text: "for an earlier definition", class: "badge muted" },
};

/** Which organisations approved which definition of a contract, by sequence, held against the one in force. */
export function LifecycleApprovals(props: { contract: ContractApprovals }): JSX.Element {
  const { definition, definitionHash } = props.contract;
  const sequences = approvalsBySequence(props.contract);
  return (
    <>
      <p data-testid="definition-in-force">
        {definition === undefined ? (
          <span class="muted">No definition of this contract is in force.</span>
        ) : (
          <>
            In force: sequence {definition.sequence.toString()}, version <LedgerText text={definition.version} />, definition sha256{" "}
            <Hash value={definitionHash} />
          </>
        )}
      </p>
      {sequences.length === 0 ? (
        <p class="muted">No organisation has approved a definition of this contract.</p>
      ) : (
        <ApprovalTable sequences={sequences} />
      )}
    </>
  );
}

function ApprovalTable(props: { sequences: readonly SequenceApprovals[] }): JSX.Element {
  return (
    <table aria-label="Lifecycle approvals">
      <thead>
        <tr>
          <th scope="col">Organisation</th>
          <th scope="col">Definition approved (sha256)</th>
          <th scope="col">Standing</th>
        </tr>
      </thead>
      {props.sequences.map((group) => (
        <tbody key={group.sequence.toString()}>
          <tr>
            <th scope="rowgroup" colSpan={3}>
              Sequence {group.sequence.toString()} {group.inForce && <small class="muted">in force</small>}
            </th>
          </tr>
          {group.approvals.map((approval) => (
            <tr key={approval.org} data-standing={approval.standing}>
              <td>
                <LedgerText text={approval.org} />
              </td>
              <td>
                <Hash value={approval.definitionHash} />
              </td>
              <td>
                <span class={STANDING[approval.standing].class}>{STANDING[approval.standing].text}</span>
              </td>
            </tr>
          ))}
        </tbody>
      ))}
    </table>
  );
}

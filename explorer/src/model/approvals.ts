/**
 * A contract's lifecycle approvals as its page shows them: by sequence, each
 * organisation's approval held against the definition in force. An approval counts only
 * for the definition it hashes; at the committed sequence, one whose hash differs
 * approved something else than what was committed.
 */

import type { ContractApproval, ContractApprovals } from "@runnel/sdk";

/**
 * Where an approval stands: for the committed sequence, `matches` or `differs` from the
 * definition in force; `pending` for a sequence not committed yet; `earlier` for one an
 * upgrade replaced.
 */
export type ApprovalStanding = "matches" | "differs" | "pending" | "earlier";

/** One sequence's approvals. */
export interface SequenceApprovals {
  readonly sequence: bigint;
  /** Whether this sequence is the one in force. */
  readonly inForce: boolean;
  readonly approvals: readonly (ContractApproval & { readonly standing: ApprovalStanding })[];
}

/** The approvals by sequence, newest first; organisations in the node's order. */
export function approvalsBySequence(contract: ContractApprovals): SequenceApprovals[] {
  const committed = contract.definition?.sequence;
  const bySequence = new Map<bigint, (ContractApproval & { standing: ApprovalStanding })[]>();
  for (const approval of contract.approvals) {
    const standing: ApprovalStanding =
      committed === undefined || approval.sequence > committed
        ? "pending"
        : approval.sequence < committed
          ? "earlier"
          : approval.definitionHash === contract.definitionHash
            ? "matches"
            : "differs";
    const group = bySequence.get(approval.sequence) ?? [];
    group.push({ ...approval, standing });
    bySequence.set(approval.sequence, group);
  }
  return [...bySequence]
    .sort(([a], [b]) => (a > b ? -1 : a < b ? 1 : 0))
    .map(([sequence, approvals]) => ({ sequence, inForce: sequence === committed, approvals }));
}

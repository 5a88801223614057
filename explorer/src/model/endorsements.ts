/** A transaction's endorsements grouped by the organisation of each endorser's certificate. */

import type { TransactionDetail } from "@runnel/sdk";

export type Endorsement = TransactionDetail["endorsements"][number];

/** One organisation and its endorsements, in the transaction's order. */
export interface EndorsingOrg {
  /** The endorser certificate's organisation; `?` when the node sent no endorser. */
  readonly org: string;
  readonly endorsements: readonly Endorsement[];
}

/** The endorsements by organisation, organisations in the order they first endorse. */
export function endorsementsByOrg(endorsements: readonly Endorsement[]): EndorsingOrg[] {
  const groups = new Map<string, Endorsement[]>();
  for (const endorsement of endorsements) {
    const org = endorsement.endorser?.org ?? "?";
    const group = groups.get(org);
    if (group === undefined) groups.set(org, [endorsement]);
    else group.push(endorsement);
  }
  return [...groups].map(([org, grouped]) => ({ org, endorsements: grouped }));
}

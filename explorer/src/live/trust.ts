/**
 * What the explorer's seal and inclusion checks trust: the membership followed from the
 * pinned genesis hash when there is one; else the network CAs the user gave (the
 * signature and certificate checked, not who is a member now nor a BFT quorum); else
 * nothing, and no check is verified.
 */

import {
  MembershipError,
  verifyInclusionProof,
  verifySeal,
  type Block,
  type InclusionCheck,
  type InclusionProof,
  type SealCheck,
  type VerifyOptions,
} from "@runnel/sdk";
import type { LiveFeed } from "./feed";
import { pinnedMembership } from "./genesis-pin";
import { trustedCas } from "./network-ca";

/** A check's result and what it trusted. */
export interface TrustedResult<T> {
  readonly result: T;
  /** `pinned`: the membership from the genesis hash; `cas`: the CAs given alone; `none`. */
  readonly trust: "pinned" | "cas" | "none";
}

/** The options a check runs with, or the membership's failure as a check's result. */
async function options(
  feed: LiveFeed,
  hash: string,
  ca: string,
  seq: bigint,
): Promise<{ options: VerifyOptions; trust: TrustedResult<unknown>["trust"] } | { failure: SealCheck }> {
  if (hash === "") return { options: { trustedCas: trustedCas(ca) }, trust: ca.trim() === "" ? "none" : "cas" };
  try {
    return { options: { membership: await pinnedMembership(feed, hash, seq) }, trust: "pinned" };
  } catch (error) {
    if (!(error instanceof MembershipError)) throw error;
    const failure: SealCheck = {
      valid: false,
      reason: `the membership from the pinned genesis hash: ${error.code}: ${error.reason}${error.seq === undefined ? "" : ` (the update at seq ${error.seq})`}`,
      orderer: new Uint8Array(),
    };
    return { failure };
  }
}

/** Checks `block`'s seal against what the user pinned or gave. */
export async function checkSeal(feed: LiveFeed, block: Block, hash: string, ca: string): Promise<TrustedResult<SealCheck>> {
  const trust = await options(feed, hash, ca, block.lastSeq);
  if ("failure" in trust) return { result: trust.failure, trust: "pinned" };
  return { result: await verifySeal(block, trust.options), trust: trust.trust };
}

/** Checks `proof` of `transactionId` against what the user pinned or gave. */
export async function checkProof(
  feed: LiveFeed,
  proof: InclusionProof,
  transactionId: string,
  hash: string,
  ca: string,
): Promise<TrustedResult<InclusionCheck>> {
  const trust = await options(feed, hash, ca, proof.block.lastSeq);
  if ("failure" in trust) {
    return { result: { ...trust.failure, leaf: "", computedRoot: "", transactionId: "" }, trust: "pinned" };
  }
  return { result: await verifyInclusionProof(proof, transactionId, trust.options), trust: trust.trust };
}

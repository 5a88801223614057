/**
 * What a seal or inclusion check shows. A ✓ only when the check holds against the
 * network CAs the user gave; without them, a neutral "not verified", never a ✓; a ✗ with
 * the reason when the answer is wrong whatever the CA (a bad hash, path or signature, or
 * an orderer of another CA).
 */

import { NO_TRUSTED_CA } from "@runnel/sdk";

/** `verified` (✓), `failed` (✕) or `unverified` (no network CA given). */
export type Verdict = "verified" | "failed" | "unverified";

/** The verdict of a check's result. */
export function verdict(check: { readonly valid: boolean; readonly reason?: string }): Verdict {
  if (check.valid) return "verified";
  return check.reason === NO_TRUSTED_CA ? "unverified" : "failed";
}

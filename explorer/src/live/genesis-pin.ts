/**
 * The network's genesis hash, as the user pinned it on the Settings page, kept in this
 * browser (localStorage), and the membership followed from it. With a pin, seal and
 * inclusion checks trust only what the SDK's `TrustedMembership` proves from that genesis:
 * the definition in force at each seal's seq, its orderers, CAs, revocations and quorum.
 * The hash never comes from the node being checked (`runnel config genesis-hash` prints
 * it from any copy of network.json).
 */

import { TrustedMembership } from "@runnel/sdk";
import { useEffect, useState } from "preact/hooks";
import type { LiveFeed } from "./feed";

const STORAGE_KEY = "runnel-explorer-genesis-hash";
const CHANGED = "runnel:genesis-hash";

/** The hash pinned, lowercase hex; empty when none. */
export function savedGenesisHash(): string {
  try {
    return localStorage.getItem(STORAGE_KEY) ?? "";
  } catch {
    // Storage refused (a privacy mode): nothing pinned.
    return "";
  }
}

/**
 * Pins `hash` (64 hex digits; empty: unpins) and tells the views.
 *
 * @throws TypeError if it is not 64 hex digits.
 */
export function saveGenesisHash(hash: string): void {
  const text = hash.trim().toLowerCase();
  if (text !== "" && !/^[0-9a-f]{64}$/.test(text)) {
    throw new TypeError("a genesis hash is 64 hex digits (runnel config genesis-hash prints it)");
  }
  if (text === "") localStorage.removeItem(STORAGE_KEY);
  else localStorage.setItem(STORAGE_KEY, text);
  memberships.clear();
  window.dispatchEvent(new Event(CHANGED));
}

/** The hash pinned; re-renders when it changes, here or in another tab. */
export function useGenesisHash(): string {
  const [hash, setHash] = useState(savedGenesisHash);
  useEffect(() => {
    const update = () => setHash(savedGenesisHash());
    window.addEventListener(CHANGED, update);
    window.addEventListener("storage", update);
    return () => {
      window.removeEventListener(CHANGED, update);
      window.removeEventListener("storage", update);
    };
  }, []);
  return hash;
}

/** Memberships followed, by node and hash: one fetch shared by every check on the page. */
const memberships = new Map<string, Promise<TrustedMembership>>();

/**
 * The membership followed from `hash` through the feed's node, fetched again when the
 * one held does not reach `seq` (updates may have committed since).
 *
 * @throws MembershipError when the node's answers do not prove a membership from `hash`.
 */
export async function pinnedMembership(feed: LiveFeed, hash: string, seq: bigint): Promise<TrustedMembership> {
  const key = `${feed.url} ${hash}`;
  const held = memberships.get(key);
  if (held !== undefined) {
    const membership = await held;
    if (membership.covers(seq)) return membership;
  }
  const fetched = TrustedMembership.fetch(feed.gateway.getQuery(), hash);
  memberships.set(key, fetched);
  fetched.catch(() => {
    if (memberships.get(key) === fetched) memberships.delete(key);
  });
  return fetched;
}

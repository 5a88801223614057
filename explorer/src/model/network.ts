/**
 * The network page's rows: every organisation of the network definition with its peers
 * and orderers, each with its health and heights as the node serving the explorer knows
 * them. The browser asks that node only; it checks the other peers itself (every two
 * seconds, `NetworkInfo.peers`) and says nothing of the orderers' health.
 */

import type { NetworkDefinition, NetworkInfo } from "@runnel/sdk";

/** A node's health as the serving node knows it. */
export type NodeHealthState =
  | { readonly state: "alive"; readonly checkedMsAgo: number | undefined }
  | { readonly state: "unreachable"; readonly error: string; readonly checkedMsAgo: number | undefined }
  /** Not asked (yet): `reason` says why. */
  | { readonly state: "unchecked"; readonly reason: string };

/** One node of the network, as a row shows it. */
export interface NetworkNode {
  readonly name: string;
  readonly org: string;
  readonly role: "peer" | "orderer";
  readonly endpoint: string;
  /** The node serving this explorer. */
  readonly serving: boolean;
  /** Whether the network definition names it (a dev node is in none). */
  readonly inDefinition: boolean;
  readonly health: NodeHealthState;
  readonly committedHeight: bigint | undefined;
  /** Known for the serving node only. */
  readonly validatedHeight: bigint | undefined;
  /** Known for the serving node only: the last seq its orderer assigned. */
  readonly orderedHeight: bigint | undefined;
}

/** One organisation and its nodes. */
export interface NetworkOrg {
  readonly name: string;
  /** Whether the serving node endorses for it. */
  readonly serving: boolean;
  /** Whether the network definition names it. */
  readonly inDefinition: boolean;
  /** How many of its certificates the definition revokes. */
  readonly revoked: number;
  /** Its peers, then its orderers. */
  readonly nodes: readonly NetworkNode[];
}

/** The serving node: where the explorer reached it and how it answers. */
export interface ServingNode {
  readonly url: string;
  readonly health: NodeHealthState;
}

/** The serving node's health from the live feed: its connection and its /healthz. */
export function servingHealth(feed: { live: boolean; healthy: boolean | undefined; detail: string | undefined; lastError: string | undefined }): NodeHealthState {
  if (!feed.live) return { state: "unreachable", error: feed.lastError ?? "not connected", checkedMsAgo: undefined };
  if (feed.healthy === true) return { state: "alive", checkedMsAgo: undefined };
  if (feed.healthy === false) return { state: "unreachable", error: feed.detail ?? "unhealthy", checkedMsAgo: undefined };
  return { state: "unchecked", reason: "not checked yet" };
}

const NOT_CHECKED_HERE = "not checked by this node";

/**
 * The organisations of `definition` in its order, each with its peers and orderers.
 *
 * Peers the serving node checks (`info.peers`, every peer but itself) carry what it last
 * saw. The serving node is the definition's peer of one of its own organisations
 * (`info.ownOrgs`) that it does not check, or among several such, the one at `here.url`;
 * when the definition names none (a dev node), it gets a row of its own. A peer the node
 * checks but the definition no longer names (an update removed it) still shows, marked.
 */
export function networkOrgs(definition: NetworkDefinition, info: NetworkInfo, here: ServingNode): NetworkOrg[] {
  const checked = new Map(info.peers.map((peer) => [peerKey(peer.org, peer.name), peer]));
  const ownOrgs = new Set(info.ownOrgs);
  const servingName = servingPeer(definition, here.url, checked, ownOrgs);
  const servingRow = (name: string, org: string, endpoint: string, inDefinition: boolean): NetworkNode => ({
    name,
    org,
    role: "peer",
    endpoint,
    serving: true,
    inDefinition,
    health: here.health,
    committedHeight: info.committedHeight,
    validatedHeight: info.validatedHeight,
    orderedHeight: info.orderedHeight,
  });

  const orgs: { name: string; inDefinition: boolean; revoked: number; nodes: NetworkNode[] }[] = definition.orgs.map((org) => ({
    name: org.name,
    inDefinition: true,
    revoked: org.revoked.length,
    nodes: org.peers.map((peer): NetworkNode => {
      const key = peerKey(org.name, peer.name);
      if (key === servingName) return servingRow(peer.name, org.name, peer.endpoint, true);
      const seen = checked.get(key);
      checked.delete(key);
      return {
        name: peer.name,
        org: org.name,
        role: "peer",
        endpoint: peer.endpoint,
        serving: false,
        inDefinition: true,
        health: seen === undefined ? { state: "unchecked", reason: NOT_CHECKED_HERE } : peerHealth(seen),
        committedHeight: seenHeight(seen),
        validatedHeight: undefined,
        orderedHeight: undefined,
      };
    }),
  }));
  const orgNamed = (name: string) => {
    let org = orgs.find((candidate) => candidate.name === name);
    if (org === undefined) {
      org = { name, inDefinition: false, revoked: 0, nodes: [] };
      orgs.push(org);
    }
    return org;
  };
  // Peers the node checks that the definition does not name.
  for (const peer of checked.values()) {
    orgNamed(peer.org).nodes.push({
      name: peer.name,
      org: peer.org,
      role: "peer",
      endpoint: peer.endpoint,
      serving: false,
      inDefinition: false,
      health: peerHealth(peer),
      committedHeight: seenHeight(peer),
      validatedHeight: undefined,
      orderedHeight: undefined,
    });
  }
  if (servingName === undefined) {
    const org = info.ownOrgs[0] ?? info.orgs[0] ?? definition.orgs[0]?.name ?? "?";
    orgNamed(org).nodes.unshift(servingRow("this node", org, here.url, false));
  }
  for (const orderer of definition.orderers) {
    orgNamed(orderer.org).nodes.push({
      name: orderer.name,
      org: orderer.org,
      role: "orderer",
      endpoint: orderer.endpoint,
      serving: false,
      inDefinition: true,
      health: { state: "unchecked", reason: NOT_CHECKED_HERE },
      committedHeight: undefined,
      validatedHeight: undefined,
      orderedHeight: undefined,
    });
  }
  return orgs.map((org) => ({ ...org, serving: ownOrgs.has(org.name) }));
}

type CheckedPeer = NetworkInfo["peers"][number];

/** The key of the serving node's peer in the definition; undefined when it is not there. */
function servingPeer(definition: NetworkDefinition, url: string, checked: ReadonlyMap<string, CheckedPeer>, ownOrgs: ReadonlySet<string>): string | undefined {
  const candidates = definition.orgs.flatMap((org) =>
    ownOrgs.has(org.name) ? org.peers.filter((peer) => !checked.has(peerKey(org.name, peer.name))).map((peer) => ({ org: org.name, peer })) : [],
  );
  const chosen = candidates.length === 1 ? candidates[0] : candidates.find((candidate) => sameOrigin(candidate.peer.endpoint, url));
  return chosen === undefined ? undefined : peerKey(chosen.org, chosen.peer.name);
}

function peerHealth(peer: CheckedPeer): NodeHealthState {
  if (peer.checkedMsAgo === 0n) return { state: "unchecked", reason: "not checked yet" };
  const checkedMsAgo = Number(peer.checkedMsAgo);
  return peer.alive ? { state: "alive", checkedMsAgo } : { state: "unreachable", error: peer.error || "no answer", checkedMsAgo };
}

/** A checked peer's committed height: what it said when it last answered (an unreachable one too), if it ever did. */
function seenHeight(peer: CheckedPeer | undefined): bigint | undefined {
  if (peer === undefined || peer.checkedMsAgo === 0n) return undefined;
  return peer.alive || peer.committedHeight > 0n ? peer.committedHeight : undefined;
}

function peerKey(org: string, name: string): string {
  return `${org}\u0000${name}`;
}

function sameOrigin(a: string, b: string): boolean {
  try {
    return new URL(a).origin === new URL(b).origin;
  } catch {
    return false;
  }
}

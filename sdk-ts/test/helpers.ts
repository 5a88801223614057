/** What the tests share: gateways to the shared node as its identities. */

import { inject } from "vitest";
import { connect, loadNetworkIdentity, type ConnectOptions, type Gateway, type Protocol } from "../src/index.js";

/** The channel `runnel dev` serves. */
export const CHANNEL = "main";

/** A gateway to the shared node (or `url`/`dir`) as Org1's `role`. */
export async function gatewayAs(
  role = "client",
  options: Partial<ConnectOptions> & { protocol?: Protocol; dir?: string } = {},
): Promise<Gateway> {
  const dir = options.dir ?? inject("runnelDir");
  const { identity, signer } = await loadNetworkIdentity(dir, "Org1", role);
  return connect({ url: inject("runnelUrl"), identity, signer, ...options });
}

/** A key no other test uses. */
export function uniqueKey(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

/** JSON of a result's bytes. */
export function json(bytes: Uint8Array): unknown {
  return JSON.parse(new TextDecoder().decode(bytes));
}

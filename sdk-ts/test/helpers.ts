/** What the SDK's tests share: gateways to the shared node as its identities. */

import { inject } from "vitest";
import { connect, loadNetworkIdentity, type ConnectOptions, type Gateway, type Protocol } from "../src/index.js";

export { CHANNEL, uniqueKey } from "./node.js";

/** A gateway to the shared node (or `url`/`dir`) as Org1's `role`. */
export async function gatewayAs(
  role = "client",
  options: Partial<ConnectOptions> & { protocol?: Protocol; dir?: string } = {},
): Promise<Gateway> {
  const dir = options.dir ?? inject("runnelDir");
  const { identity, signer } = await loadNetworkIdentity(dir, "Org1", role);
  return connect({ url: inject("runnelUrl"), identity, signer, ...options });
}

/** JSON of a result's bytes. */
export function json(bytes: Uint8Array): unknown {
  return JSON.parse(new TextDecoder().decode(bytes));
}

/**
 * @runnel/sdk for Node.js: a Fabric-Gateway-like client of a Runnel node over gRPC
 * (HTTP/2) or gRPC-web. Browsers import `@runnel/sdk/browser` (the bundler's `browser`
 * condition picks it for `@runnel/sdk` too).
 *
 * ```ts
 * import { connect, identities, signers } from "@runnel/sdk";
 * using gateway = connect({
 *   url: "http://127.0.0.1:7051",
 *   identity: await identities.fromPemFile(".runnel/dev/identities/Org1/client.pem"),
 *   signer: await signers.fromPemFile(".runnel/dev/identities/Org1/client.key"),
 * });
 * const token = gateway.getNetwork("main").getContract("token");
 * await token.submitTransaction("transfer", "Org1/bob", "10");
 * ```
 *
 * @packageDocumentation
 */

import { createHash } from "node:crypto";
import { setSha256 } from "./crypto.js";
import { checkUrl, connectWithTransport, type Gateway, type GatewayOptions } from "./gateway.js";
import { nodeTransport, type NodeTransportOptions } from "./node/transport.js";

export * from "./common.js";
export type { NodeTransportOptions, Protocol, TlsOptions } from "./node/transport.js";
export { nodeTransport } from "./node/transport.js";
export { fileCheckpointer } from "./node/checkpoint.js";
export {
  identities,
  signers,
  checkpointers,
  loadNetworkCas,
  loadNetworkFile,
  loadNetworkIdentity,
  NETWORK_FILE,
  type NetworkFile,
} from "./node/files.js";
export type { NetworkIdentity } from "./node/files.js";
export { newNodeCryptoSigner } from "./node/signer.js";

// node:crypto's hash is synchronous and ~10x cheaper than crypto.subtle.digest here.
setSha256((data) => createHash("sha256").update(data).digest());

/** Options of {@link connect} in Node.js. */
export interface ConnectOptions extends GatewayOptions, NodeTransportOptions {}

/**
 * Connects to a node: a {@link Gateway} over gRPC (HTTP/2, the default) or gRPC-web.
 * No call is made until the first request; a node that cannot be reached fails that
 * request with an error naming the URL.
 */
export function connect(options: ConnectOptions): Gateway {
  checkUrl(options.url);
  const { transport, close } = nodeTransport(options);
  return connectWithTransport({ ...options, transport, closeTransport: close });
}

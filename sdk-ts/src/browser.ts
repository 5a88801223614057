/**
 * @runnel/sdk for browsers: the same API as in Node.js, over gRPC-web (fetch), with
 * WebCrypto for hashes and signatures. Identities and keys come as PEM text or bytes
 * (from a file input, a wallet, ...), not files.
 *
 * ```ts
 * import { connect, identityFromPem, newPrivateKeySigner } from "@runnel/sdk/browser";
 * const gateway = connect({ url: "http://127.0.0.1:7051", identity: identityFromPem(certPem), signer: newPrivateKeySigner(keyPem) });
 * ```
 *
 * @packageDocumentation
 */

import type { Transport } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { checkUrl, connectWithTransport, type Gateway, type GatewayOptions } from "./gateway.js";

export * from "./common.js";

/** Options of {@link connect} in a browser. */
export interface ConnectOptions extends GatewayOptions {
  /** A transport of your own instead of gRPC-web over `fetch`. */
  transport?: Transport;
}

/** Connects to a node over gRPC-web; no call is made until the first request. */
export function connect(options: ConnectOptions): Gateway {
  checkUrl(options.url);
  const transport =
    options.transport ?? createGrpcWebTransport({ baseUrl: options.url, useBinaryFormat: true });
  return connectWithTransport({ ...options, transport });
}

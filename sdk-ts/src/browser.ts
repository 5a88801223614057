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

import type { Interceptor, Transport } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import type { Timeouts } from "./client.js";
import { checkUrl, connectWithTransport, type Gateway, type GatewayOptions } from "./gateway.js";

export * from "./common.js";

/** Options of {@link connect} in a browser. */
export interface ConnectOptions extends GatewayOptions {
  /** Connect interceptors, run around every call. */
  interceptors?: Interceptor[];
  /** A transport of your own instead of gRPC-web over `fetch` (then `interceptors` are ignored). */
  transport?: Transport;
}

/** Connects to a node over gRPC-web; no call is made until the first request. */
export function connect(options: ConnectOptions): Gateway {
  checkUrl(options.url);
  const transport =
    options.transport ??
    createGrpcWebTransport({ baseUrl: options.url, useBinaryFormat: true, interceptors: options.interceptors ?? [] });
  return connectWithTransport({ ...options, transport });
}

/** Options of {@link connectReadOnly}. */
export interface ReadOnlyConnectOptions {
  /** The node's API, e.g. `http://127.0.0.1:7051`. */
  url: string;
  /** Call deadlines. */
  timeouts?: Timeouts;
  /** Connect interceptors, run around every call. */
  interceptors?: Interceptor[];
  /** A transport of your own instead of gRPC-web over `fetch` (then `interceptors` are ignored). */
  transport?: Transport;
}

/**
 * Connects to a node for reads only, without an identity: queries (`getQuery()`), traces,
 * and the block, transaction and event streams, which the node serves unsigned
 * (docs/api.md). What an explorer or a dashboard needs. Anything that must be signed
 * (evaluate, submit, deploy) is refused with a `TypeError` before any call.
 */
export function connectReadOnly(options: ReadOnlyConnectOptions): Gateway {
  return connect({ ...options, identity: READ_ONLY_IDENTITY, signer: refuseToSign });
}

/** No certificate: what a read-only gateway presents (and never sends, since it cannot sign). */
const READ_ONLY_IDENTITY = { credentials: new Uint8Array(0) };

async function refuseToSign(): Promise<Uint8Array> {
  throw new TypeError("a read-only gateway (connectReadOnly) cannot sign: connect with an identity and a signer");
}

/**
 * Node.js transports: gRPC over one HTTP/2 connection (default), or gRPC-web over
 * HTTP/1.1 keep-alive connections. docs/benchmarks.md has the measurements behind the
 * default.
 */

import type { Transport } from "@connectrpc/connect";
import { createGrpcTransport, createGrpcWebTransport, Http2SessionManager } from "@connectrpc/connect-node";
import * as http from "node:http";
import * as https from "node:https";
import { createFastUnaryTransport } from "./fast-unary.js";
import { createFastUnaryWebTransport } from "./fast-unary-web.js";

/** The wire protocol: gRPC over HTTP/2, or gRPC-web over HTTP/1.1. */
export type Protocol = "grpc" | "grpc-web";

/** TLS settings for an `https://` URL. */
export interface TlsOptions {
  /** CA certificates (PEM) to trust, e.g. `identities/<org>/tls/ca.pem`; default: the system's. */
  ca?: string | Uint8Array;
  /** A client certificate (PEM) for mutual TLS, e.g. `identities/<org>/tls/client.pem`. */
  cert?: string | Uint8Array;
  /** Its private key (PEM). */
  key?: string | Uint8Array;
  /** The name the node's certificate must hold, instead of the URL's host. */
  serverName?: string;
}

/** How the Node.js entry point reaches the node. */
export interface NodeTransportOptions {
  /** The node's URL. */
  url: string;
  /** `"grpc"` (default) or `"grpc-web"`. */
  protocol?: Protocol;
  /** TLS settings, for an `https://` URL. */
  tls?: TlsOptions;
  /**
   * Make unary calls straight over node:http2 (gRPC) or node:http (gRPC-web) rather than
   * through connect-node's transport (streams always use connect-node); default true. It
   * saves ~0.5 ms of client CPU per call (docs/benchmarks.md).
   */
  directUnary?: boolean;
  /** A transport of your own instead (then `protocol` and `tls` are ignored). */
  transport?: Transport;
}

function buffer(value: string | Uint8Array | undefined): Buffer | undefined {
  if (value === undefined) return undefined;
  return typeof value === "string" ? Buffer.from(value) : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}

function tlsOptions(tls: TlsOptions | undefined) {
  if (tls === undefined) return {};
  return Object.fromEntries(
    Object.entries({
      ca: buffer(tls.ca),
      cert: buffer(tls.cert),
      key: buffer(tls.key),
      servername: tls.serverName,
    }).filter(([, value]) => value !== undefined),
  );
}

/** A transport to `options.url` and the function that releases its connections. */
export function nodeTransport(options: NodeTransportOptions): { transport: Transport; close: () => void } {
  if (options.transport !== undefined) return { transport: options.transport, close: () => undefined };
  const baseUrl = options.url;
  const secure = baseUrl.startsWith("https://");
  if ((options.protocol ?? "grpc") === "grpc") {
    const sessionManager = new Http2SessionManager(
      baseUrl,
      // Pings find a dead connection before a call waits on it.
      { pingIntervalMs: 10_000, pingTimeoutMs: 5_000, idleConnectionTimeoutMs: 60_000 },
      tlsOptions(options.tls),
    );
    const streams = createGrpcTransport({ baseUrl, sessionManager });
    if (options.directUnary === false) return { transport: streams, close: () => sessionManager.abort() };
    const direct = createFastUnaryTransport({ baseUrl, nodeOptions: tlsOptions(options.tls), streams });
    return {
      transport: direct.transport,
      close: () => {
        direct.close();
        sessionManager.abort();
      },
    };
  }
  // Keep-alive, and Nagle off: each small request must leave at once.
  const agentOptions = { keepAlive: true, noDelay: true, ...tlsOptions(options.tls) };
  const agent = secure ? new https.Agent(agentOptions) : new http.Agent(agentOptions);
  const streams = createGrpcWebTransport({ baseUrl, httpVersion: "1.1", nodeOptions: { agent } });
  if (options.directUnary === false) return { transport: streams, close: () => agent.destroy() };
  const direct = createFastUnaryWebTransport({ baseUrl, tls: tlsOptions(options.tls), streams });
  return {
    transport: direct.transport,
    close: () => {
      direct.close();
      agent.destroy();
    },
  };
}

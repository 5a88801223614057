/**
 * Node.js transports: gRPC over one HTTP/2 connection per gateway (default), or gRPC-web
 * over HTTP/1.1 keep-alive connections through connect-node. docs/benchmarks.md has the
 * measurements behind the default.
 */

import type { Interceptor, Transport } from "@connectrpc/connect";
import { createGrpcTransport, createGrpcWebTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { createPrivateKey } from "node:crypto";
import * as http from "node:http";
import * as https from "node:https";
import { ed25519Pkcs8 } from "../signing.js";
import { createGrpcUnaryTransport } from "./grpc-unary.js";

/** Most HTTP/1.1 connections one gateway opens to the node at once (gRPC-web); calls beyond wait for one. */
export const CONNECTIONS_MAX = 64;

/** Keep-alive of the HTTP/2 connection: pings find a dead connection before a call waits on it. */
const HTTP2_KEEPALIVE = { pingIntervalMs: 10_000, pingTimeoutMs: 5_000, idleConnectionTimeoutMs: 60_000 };

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
  /** Connect interceptors, run around every call, unary and streaming. */
  interceptors?: Interceptor[];
  /**
   * gRPC only: make unary calls straight over the gateway's HTTP/2 connection rather than
   * through connect-node's transport (streams always use connect-node, on the same
   * connection); default true. It saves ~0.5 ms of client CPU per call (docs/benchmarks.md).
   */
  directUnary?: boolean;
  /** A transport of your own instead (then `protocol`, `tls` and `interceptors` are ignored). */
  transport?: Transport;
}

function buffer(value: string | Uint8Array | undefined): Buffer | undefined {
  if (value === undefined) return undefined;
  return typeof value === "string" ? Buffer.from(value) : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}

/**
 * A private key as OpenSSL takes it. An identity's Ed25519 key from `runnel init` is
 * PKCS#8 v2 (RFC 5958, with the public key), which OpenSSL refuses for TLS: it is
 * re-wrapped as v1, so that a member's own certificate and key serve for mutual TLS.
 */
function tlsKey(key: string | Uint8Array | undefined): Buffer | undefined {
  const bytes = buffer(key);
  if (bytes === undefined) return undefined;
  try {
    createPrivateKey(bytes);
    return bytes;
  } catch {
    try {
      const text = bytes.toString("latin1");
      const der = Buffer.from(ed25519Pkcs8(text.includes("-----BEGIN") ? text : new Uint8Array(bytes)));
      return Buffer.from(createPrivateKey({ key: der, format: "der", type: "pkcs8" }).export({ format: "pem", type: "pkcs8" }));
    } catch {
      // Not an Ed25519 key either: let TLS say what is wrong with it.
      return bytes;
    }
  }
}

function tlsOptions(tls: TlsOptions | undefined) {
  if (tls === undefined) return {};
  return Object.fromEntries(
    Object.entries({
      ca: buffer(tls.ca),
      cert: buffer(tls.cert),
      key: tlsKey(tls.key),
      servername: tls.serverName,
    }).filter(([, value]) => value !== undefined),
  );
}

/** A transport to `options.url` and the function that releases its connections. */
export function nodeTransport(options: NodeTransportOptions): { transport: Transport; close: () => void } {
  if (options.transport !== undefined) return { transport: options.transport, close: () => undefined };
  const baseUrl = options.url;
  const interceptors = options.interceptors ?? [];
  if ((options.protocol ?? "grpc") === "grpc") {
    // Node.js's HTTP/2 client turns Nagle off on the connection itself (TCP_NODELAY,
    // plain and TLS alike): each request leaves at once.
    const sessionManager = new Http2SessionManager(baseUrl, HTTP2_KEEPALIVE, tlsOptions(options.tls));
    const close = () => sessionManager.abort();
    const streams = createGrpcTransport({ baseUrl, sessionManager, interceptors });
    if (options.directUnary === false) return { transport: streams, close };
    return { transport: createGrpcUnaryTransport({ baseUrl, sessionManager, interceptors, streams }), close };
  }
  // Keep-alive, and Nagle off: each small request must leave at once.
  const agentOptions = { keepAlive: true, noDelay: true, maxSockets: CONNECTIONS_MAX, ...tlsOptions(options.tls) };
  const agent = baseUrl.startsWith("https://") ? new https.Agent(agentOptions) : new http.Agent(agentOptions);
  const transport = createGrpcWebTransport({ baseUrl, httpVersion: "1.1", nodeOptions: { agent }, interceptors });
  return { transport, close: () => agent.destroy() };
}

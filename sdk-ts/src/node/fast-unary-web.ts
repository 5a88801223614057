/**
 * gRPC-web unary calls straight over keep-alive `node:http` connections, behind
 * Connect's `Transport` interface: the HTTP/1.1 twin of `fast-unary.ts`, which explains
 * why. Node.js's HTTP/1.1 client (its parser is C) costs less per call than its HTTP/2
 * client (JavaScript streams); docs/benchmarks.md compares the two.
 */

import { create, fromBinary, isMessage, toBinary, type DescMessage, type DescMethodUnary, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, type Transport, type UnaryResponse } from "@connectrpc/connect";
import { findTrailerError } from "@connectrpc/connect/protocol-grpc";
import * as http from "node:http";
import * as https from "node:https";
import { RESPONSE_BYTES_MAX } from "./fast-unary.js";

/** Most connections one gateway opens to the node at once; calls beyond wait for one. */
export const CONNECTIONS_MAX = 64;

/** Options of {@link createFastUnaryWebTransport}. */
export interface FastUnaryWebOptions {
  /** The node's URL. */
  baseUrl: string;
  /** The agent's TLS options (ca, cert, key, servername). */
  tls?: https.AgentOptions;
  /** The transport for streaming calls. */
  streams: Transport;
}

/** A transport whose unary calls are gRPC-web over keep-alive HTTP/1.1, and the function that closes it. */
export function createFastUnaryWebTransport(options: FastUnaryWebOptions): { transport: Transport; close: () => void } {
  const url = new URL(options.baseUrl);
  const secure = url.protocol === "https:";
  const pathPrefix = url.pathname.replace(/\/+$/, "");
  // Keep-alive, and Nagle off: each request is one small write that must leave at once.
  const agentOptions = { keepAlive: true, noDelay: true, maxSockets: CONNECTIONS_MAX, ...options.tls };
  const agent = secure ? new https.Agent(agentOptions) : new http.Agent(agentOptions);
  const request = secure ? https.request : http.request;

  function unary<I extends DescMessage, O extends DescMessage>(
    method: DescMethodUnary<I, O>,
    signal: AbortSignal | undefined,
    timeoutMs: number | undefined,
    header: HeadersInit | undefined,
    input: MessageInitShape<I>,
  ): Promise<UnaryResponse<I, O>> {
    return new Promise((resolve, reject) => {
      let settled = false;
      let timer: ReturnType<typeof setTimeout> | undefined;
      let req: http.ClientRequest | undefined;
      const finish = (error: ConnectError | undefined, response?: UnaryResponse<I, O>) => {
        if (settled) return;
        settled = true;
        if (timer !== undefined) clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        if (error !== undefined) {
          req?.destroy();
          reject(error);
        } else if (response !== undefined) {
          resolve(response);
        }
      };
      const onAbort = () => finish(ConnectError.from(signal?.reason ?? "the call was canceled", Code.Canceled));
      if (signal?.aborted === true) return onAbort();
      signal?.addEventListener("abort", onAbort, { once: true });

      let body: Uint8Array;
      try {
        const message = isMessage(input, method.input) ? input : create(method.input, input);
        const bytes = toBinary(method.input, message);
        body = new Uint8Array(5 + bytes.length);
        new DataView(body.buffer).setUint32(1, bytes.length);
        body.set(bytes, 5);
      } catch (error) {
        return finish(ConnectError.from(error, Code.Internal));
      }
      const headers: http.OutgoingHttpHeaders = {
        "content-type": "application/grpc-web+proto",
        "x-grpc-web": "1",
        "content-length": body.length,
      };
      if (timeoutMs !== undefined && timeoutMs > 0) {
        headers["grpc-timeout"] = `${Math.ceil(timeoutMs)}m`;
        timer = setTimeout(
          () => finish(new ConnectError(`the call timed out after ${timeoutMs} ms`, Code.DeadlineExceeded)),
          timeoutMs,
        );
      }
      if (header !== undefined) {
        new Headers(header).forEach((value, key) => {
          headers[key] = value;
        });
      }
      req = request({
        agent,
        protocol: url.protocol,
        hostname: url.hostname.replace(/^\[|\]$/g, ""),
        port: url.port,
        path: `${pathPrefix}/${method.parent.typeName}/${method.name}`,
        method: "POST",
        headers,
      });
      req.on("error", (error) => finish(new ConnectError(error.message, Code.Unavailable, undefined, undefined, error)));
      req.on("response", (res) => {
        const chunks: Buffer[] = [];
        let received = 0;
        res.on("data", (chunk: Buffer) => {
          received += chunk.length;
          if (received > RESPONSE_BYTES_MAX + 1024) {
            finish(new ConnectError(`the response exceeds ${RESPONSE_BYTES_MAX} bytes`, Code.ResourceExhausted));
            return;
          }
          chunks.push(chunk);
        });
        res.on("error", (error) => finish(new ConnectError(error.message, Code.Unavailable, undefined, undefined, error)));
        res.on("end", () => {
          if (settled) return;
          const all = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
          let message: Uint8Array | undefined;
          let trailer: string | undefined;
          for (let at = 0; at + 5 <= all.length; ) {
            const flags = all[at]!;
            const length = all.readUInt32BE(at + 1);
            const payload = all.subarray(at + 5, at + 5 + length);
            if (payload.length !== length) break;
            if ((flags & 0x80) !== 0) trailer = payload.toString("latin1");
            else if ((flags & 0x01) !== 0) return finish(new ConnectError("a compressed response message", Code.Internal));
            else if (message === undefined) message = payload;
            else return finish(new ConnectError("a response with more than one message", Code.Unimplemented));
            at += 5 + length;
          }
          // The status is in the trailer frame, or in the headers of a trailers-only response.
          const metadata = new Headers();
          for (const [key, value] of Object.entries(res.headers)) {
            if (value !== undefined) metadata.set(key, Array.isArray(value) ? value.join(", ") : value);
          }
          for (const line of (trailer ?? "").split("\r\n")) {
            const colon = line.indexOf(":");
            if (colon > 0) metadata.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
          }
          const failed = findTrailerError(metadata);
          if (failed !== undefined) return finish(failed);
          if (res.statusCode !== 200 || !metadata.has("grpc-status")) {
            const code = res.statusCode === 200 ? Code.Internal : res.statusCode === 404 ? Code.Unimplemented : Code.Unavailable;
            return finish(new ConnectError(`HTTP ${res.statusCode ?? "?"} without a gRPC status`, code));
          }
          if (message === undefined) return finish(new ConnectError("a response without a message", Code.Unimplemented));
          let decoded;
          try {
            decoded = fromBinary(method.output, message);
          } catch (error) {
            return finish(ConnectError.from(error, Code.Internal));
          }
          finish(undefined, {
            stream: false,
            service: method.parent,
            method,
            header: new Headers(),
            message: decoded,
            trailer: new Headers(),
          });
        });
      });
      req.end(body);
    });
  }

  return {
    transport: {
      unary,
      stream: (method, signal, timeoutMs, header, input, contextValues) =>
        options.streams.stream(method, signal, timeoutMs, header, input, contextValues),
    },
    close: () => agent.destroy(),
  };
}

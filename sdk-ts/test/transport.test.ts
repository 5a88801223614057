/**
 * The Node.js transport against a real node: one HTTP/2 connection per gateway for unary
 * calls and streams alike, and interceptors that see what Connect's own transports show
 * them (request, response headers and trailers, errors with the node's metadata). Then,
 * against a server on loopback that answers badly on purpose: every malformed response
 * is the error connect-node's own transport makes of it.
 */

import { createServer as createHttp2Server, type Http2Server } from "node:http2";
import { createServer, connect as tcpConnect, type Server, type Socket } from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import { ConnectError, createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import {
  Code,
  connect,
  ERROR_CODE_HEADER,
  loadNetworkIdentity,
  nodeTransport,
  proto,
  type ConnectOptions,
  type Interceptor,
  type Protocol,
} from "../src/index.js";
import { CHANNEL, uniqueKey } from "./helpers.js";

/** A TCP relay to the node on 127.0.0.1 that counts the connections made through it. */
async function relay(target: URL): Promise<{ url: string; connections: () => number; close: () => Promise<void> }> {
  let connections = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    connections += 1;
    const upstream = tcpConnect({ host: target.hostname, port: Number(target.port) });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("error", () => socket.destroy());
      socket.on("close", () => sockets.delete(socket));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("the relay has no port");
  return {
    url: `http://127.0.0.1:${address.port}`,
    connections: () => connections,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((closed) => server.close(closed));
    },
  };
}

/** What an interceptor saw of one call. */
interface Seen {
  method: string;
  stream: boolean;
  contentType: string | null;
  grpcStatus: string | null;
  errorName: string | null;
}

/** An interceptor that records each call it sees into `seen`. */
function recorder(seen: Seen[]): Interceptor {
  return (next) => async (request) => {
    const record: Seen = {
      method: request.method.name,
      stream: request.stream,
      contentType: null,
      grpcStatus: null,
      errorName: null,
    };
    seen.push(record);
    try {
      const response = await next(request);
      record.contentType = response.header.get("content-type");
      if (!response.stream) record.grpcStatus = response.trailer.get("grpc-status");
      return response;
    } catch (error) {
      record.errorName = ConnectError.from(error).metadata.get(ERROR_CODE_HEADER);
      throw error;
    }
  };
}

async function gatewayWith(options: Partial<ConnectOptions>) {
  const { identity, signer } = await loadNetworkIdentity(inject("runnelDir"), "Org1", "client");
  return connect({ url: inject("runnelUrl"), identity, signer, ...options });
}

describe("one HTTP/2 connection per gateway", () => {
  let through: Awaited<ReturnType<typeof relay>>;
  beforeAll(async () => {
    through = await relay(new URL(inject("runnelUrl")));
  });
  afterAll(() => through.close());

  test.each([true, false])("unary calls and streams share it (direct unary: %s)", async (directUnary) => {
    const before = through.connections();
    const { identity, signer } = await loadNetworkIdentity(inject("runnelDir"), "Org1", "client");
    using gateway = connect({ url: through.url, identity, signer, directUnary });
    const network = gateway.getNetwork(CHANNEL);
    const info = await gateway.getQuery().getNetworkInfo();
    const stream = await network.getTransactionEvents({ startSeq: info.committedHeight + 1n });
    const submitted = await network.getContract("kv").submitAsync("put", { arguments: [uniqueKey("shared"), "v"] });
    const iterator = stream[Symbol.asyncIterator]();
    let seen = false;
    while (!seen) seen = (await iterator.next()).value?.transactionId === submitted.getTransactionId();
    await submitted.getStatus();
    await network.getContract("kv").evaluateTransaction("get", "anything");
    stream.close();
    expect(through.connections() - before).toBe(1);
  });
});

describe("interceptors", () => {
  test.each<[string, Protocol, boolean]>([
    ["gRPC, direct unary", "grpc", true],
    ["gRPC, connect-node unary", "grpc", false],
    ["gRPC-web", "grpc-web", false],
  ])("see unary and streaming calls with their headers, trailers and errors (%s)", async (_, protocol, directUnary) => {
    const seen: Seen[] = [];
    using gateway = await gatewayWith({ protocol, directUnary, interceptors: [recorder(seen)] });
    const network = gateway.getNetwork(CHANNEL);
    const info = await gateway.getQuery().getNetworkInfo();
    const events = await network.getTransactionEvents({ startSeq: info.committedHeight + 1n });
    const submitted = await network.getContract("kv").submitAsync("put", { arguments: [uniqueKey("intercepted"), "v"] });
    await submitted.getStatus();
    await (await events[Symbol.asyncIterator]().next()).value;
    events.close();
    await expect(network.getContract("kv").evaluateTransaction("nope")).rejects.toThrow();

    expect(seen.filter((call) => call.stream).map((call) => call.method)).toEqual(["Transactions"]);
    const unary = seen.filter((call) => !call.stream);
    // Besides the test's own GetNetworkInfo, the gateway asks for the channel once, for
    // the read grant it signs before its first read.
    expect(unary.map((call) => call.method).filter((method) => method !== "GetNetworkInfo")).toEqual(["Endorse", "Submit", "CommitStatus", "Evaluate"]);
    expect(unary.filter((call) => call.method === "GetNetworkInfo")).toHaveLength(2);
    for (const call of unary.slice(0, -1)) {
      expect(call.contentType).toMatch(/^application\/grpc/);
      expect(call.grpcStatus).toBe("0");
    }
    expect(unary.at(-1)?.errorName).toBe("FUNCTION_NOT_FOUND");
  });

  test("run in order, the first outermost, and may add request headers and cancel", async () => {
    const order: string[] = [];
    const tag = (name: string): Interceptor => (next) => async (request) => {
      order.push(`${name} in`);
      request.header.set(`x-runnel-test-${name}`, "1");
      const response = await next(request);
      order.push(`${name} out`);
      return response;
    };
    const refuse: Interceptor = () => async () => {
      throw new ConnectError("refused by the client", Code.PermissionDenied);
    };
    using gateway = await gatewayWith({ interceptors: [tag("a"), tag("b")] });
    // The first call that carries a read grant asks the node its channel first (one more
    // GetNetworkInfo through the same interceptors); the next carries the grant it signed.
    await gateway.getQuery().getNetworkInfo();
    order.length = 0;
    await gateway.getQuery().getNetworkInfo();
    expect(order).toEqual(["a in", "b in", "b out", "a out"]);
    using refusing = await gatewayWith({ interceptors: [refuse] });
    await expect(refusing.getQuery().getNetworkInfo()).rejects.toMatchObject({ grpcCode: Code.PermissionDenied });
  });
});

describe("malformed responses", () => {
  /** What a misbehaving server answers: status, headers, body frames, trailers. */
  interface Answer {
    status?: number;
    headers?: Record<string, string>;
    body?: Uint8Array[];
    trailers?: Record<string, string>;
  }
  const envelope = (flags: number, payload: Uint8Array) => {
    const out = new Uint8Array(5 + payload.length);
    out[0] = flags;
    new DataView(out.buffer).setUint32(1, payload.length);
    out.set(payload, 5);
    return out;
  };
  const info = toBinary(proto.GetNetworkInfoResponseSchema, create(proto.GetNetworkInfoResponseSchema, { channel: "main" }));
  const grpc = { "content-type": "application/grpc+proto" };
  const ok = { "grpc-status": "0" };
  const answers: [string, Answer, Code][] = [
    ["an HTTP 503", { status: 503 }, Code.Unavailable],
    ["no message", { headers: grpc, trailers: ok }, Code.Unimplemented],
    ["two messages", { headers: grpc, body: [envelope(0, info), envelope(0, info)], trailers: ok }, Code.Unimplemented],
    ["no status", { headers: grpc, body: [envelope(0, info)] }, Code.Internal],
    ["a truncated message", { headers: grpc, body: [envelope(0, info).subarray(0, 7)], trailers: ok }, Code.InvalidArgument],
    ["a compressed message", { headers: grpc, body: [envelope(1, info)], trailers: ok }, Code.Internal],
    ["a message that does not decode", { headers: grpc, body: [envelope(0, Uint8Array.of(0xff))], trailers: ok }, Code.Internal],
    ["an unknown content type", { headers: { "content-type": "text/html" }, body: [envelope(0, info)] }, Code.Unknown],
    [
      "an error status with the node's metadata",
      { headers: grpc, trailers: { "grpc-status": "5", "grpc-message": "gone", [ERROR_CODE_HEADER]: "KEY_NOT_FOUND" } },
      Code.NotFound,
    ],
  ];
  let server: Http2Server;
  let url: string;
  const pending = new Map<string, Answer>();
  beforeAll(async () => {
    server = createHttp2Server((request, response) => {
      request.resume();
      request.on("end", () => {
        const answer = pending.get(String(request.headers["x-answer"])) ?? {};
        response.writeHead(answer.status ?? 200, answer.headers ?? {});
        for (const frame of answer.body ?? []) response.write(frame);
        if (answer.trailers !== undefined) response.addTrailers(answer.trailers);
        response.end();
      });
    });
    await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening));
    const address = server.address();
    if (address === null || typeof address === "string") throw new Error("the server has no port");
    url = `http://127.0.0.1:${address.port}`;
  });
  afterAll(() => new Promise((closed) => server.close(closed)));

  test.each(answers)("%s is the error Connect's own transport gives", async (name, answer, code) => {
    pending.set(name, answer);
    const codes = [];
    for (const directUnary of [true, false]) {
      const { transport, close } = nodeTransport({ url, directUnary });
      try {
        const query = createClient(proto.Query, transport);
        const error = await query.getNetworkInfo({}, { headers: { "x-answer": name } }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(ConnectError);
        codes.push((error as ConnectError).code);
        if (code === Code.NotFound) expect((error as ConnectError).metadata.get(ERROR_CODE_HEADER)).toBe("KEY_NOT_FOUND");
      } finally {
        close();
      }
    }
    expect(codes).toEqual([code, code]);
  });
});

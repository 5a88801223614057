// Client-side cost of a submitted transaction, from one Node.js process, one client:
// latency of submit -> durable status and client CPU per transaction, for the SDK over
// gRPC (HTTP/2: unary calls direct, the default, or through connect-node) and gRPC-web
// (HTTP/1.1, connect-node), against hand-written gRPC over node:http2 (and gRPC-web over
// node:http) doing the same calls. Then one unary call alone, to see what the transports
// themselves cost. The last line is the SDK's added latency, measured within this run.
//
//   npm run -w sdk-ts build && npm run -w sdk-ts bench [-- transactions unary-calls]
//
// Starts its own `runnel dev` (RUNNEL_BIN, RUNNEL_CONTRACTS as for the tests) unless
// RUNNEL_URL and RUNNEL_DIR name a running one. Workload: kv put, 1 KB values, as the
// Rust load generator (node/benches/grpc.rs).

import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import * as http from "node:http";
import * as http2 from "node:http2";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { connect, loadNetworkIdentity, newNodeCryptoSigner, newPrivateKeySigner, nodeTransport } from "../dist/index.js";
import * as api from "../dist/gen/runnel/v1/api_pb.js";
import * as txpb from "../dist/gen/runnel/v1/transaction_pb.js";
import { encodeProposal, newProposalMessage, proposalMessage, transactionMessage } from "../dist/tx.js";
import { readFile } from "node:fs/promises";

const TRANSACTIONS = Number(process.argv[2] ?? 1000);
const UNARY_CALLS = Number(process.argv[3] ?? 3000);
const WARMUP = 100;
const ROUND = 50;
const CONCURRENCY = 32;
const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

async function freePort() {
  return new Promise((done) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

async function startNode() {
  if (process.env.RUNNEL_URL && process.env.RUNNEL_DIR) {
    return { url: process.env.RUNNEL_URL, dir: process.env.RUNNEL_DIR, stop: async () => {} };
  }
  const bin = process.env.RUNNEL_BIN ?? join(repo, "target", "debug", "runnel");
  const contracts = process.env.RUNNEL_CONTRACTS ?? join(repo, "target", "wasm32-unknown-unknown", "contract");
  const dir = join(mkdtempSync(join(tmpdir(), "runnel-bench-")), "net");
  const port = await freePort();
  const child = spawn(bin, ["dev", "--dir", dir, "--listen", `127.0.0.1:${port}`, "--contracts", contracts, "--log", "warn"], {
    stdio: "ignore",
  });
  process.once("exit", () => child.kill("SIGKILL"));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 1200; i++) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    dir,
    stop: async () => {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
    },
  };
}

const value = "v".repeat(1024);
let counter = 0;
const nextKey = () => `bench-${process.pid}-${counter++}`;

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

/**
 * Runs each case's `once` n times after a warm-up, the cases interleaved in rounds of
 * ROUND calls so that background noise falls on all of them alike; returns latency
 * percentiles (ms) and client CPU (µs) per call of each.
 */
async function measure(cases, n) {
  const state = cases.map(() => ({ times: [], cpu: 0, wall: 0 }));
  for (const c of cases) for (let i = 0; i < Math.min(WARMUP, n); i++) await c.once();
  for (let done = 0; done < n; done += ROUND) {
    for (const [i, c] of cases.entries()) {
      const s = state[i];
      const cpu0 = process.cpuUsage();
      const start = performance.now();
      for (let k = 0; k < Math.min(ROUND, n - done); k++) {
        const t0 = performance.now();
        await c.once();
        s.times.push(performance.now() - t0);
      }
      s.wall += performance.now() - start;
      const cpu = process.cpuUsage(cpu0);
      s.cpu += cpu.user + cpu.system;
    }
  }
  return cases.map((c, i) => {
    const { times, cpu, wall } = state[i];
    times.sort((a, b) => a - b);
    const row = {
      name: c.name,
      n: times.length,
      p50_ms: +percentile(times, 50).toFixed(3),
      p99_ms: +percentile(times, 99).toFixed(3),
      mean_ms: +(wall / times.length).toFixed(3),
      cpu_us: Math.round(cpu / times.length),
    };
    console.log(JSON.stringify(row));
    return row;
  });
}

// ---- hand-written gRPC over node:http2 and gRPC-web over node:http -------------------

function frame(bytes) {
  const out = new Uint8Array(5 + bytes.length);
  new DataView(out.buffer).setUint32(1, bytes.length);
  out.set(bytes, 5);
  return out;
}

function rawHttp2(url) {
  const session = http2.connect(url);
  session.on("error", () => {});
  return {
    call(path, bytes) {
      return new Promise((done, fail) => {
        const req = session.request({
          ":method": "POST",
          ":path": path,
          "content-type": "application/grpc+proto",
          te: "trailers",
        });
        const chunks = [];
        req.on("data", (c) => chunks.push(c));
        req.on("trailers", (t) => {
          if (t["grpc-status"] !== "0") fail(new Error(`${path}: ${t["grpc-status"]} ${t["grpc-message"]}`));
        });
        req.on("end", () => done(Buffer.concat(chunks).subarray(5)));
        req.on("error", fail);
        req.end(frame(bytes));
      });
    },
    close: () => session.close(),
  };
}

function rawHttp1(url) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const { hostname, port } = new URL(url);
  return {
    call(path, bytes) {
      return new Promise((done, fail) => {
        const req = http.request(
          {
            agent,
            hostname,
            port,
            path,
            method: "POST",
            headers: { "content-type": "application/grpc-web+proto", "x-grpc-web": "1" },
          },
          (res) => {
            const chunks = [];
            res.on("data", (c) => chunks.push(c));
            res.on("end", () => {
              const body = Buffer.concat(chunks);
              const length = body.readUInt32BE(1);
              done(body.subarray(5, 5 + length));
            });
          },
        );
        req.on("error", fail);
        req.end(frame(bytes));
      });
    },
    close: () => agent.destroy(),
  };
}

/** A transaction the way node/benches/grpc.rs does it: three calls in sequence. */
async function rawSubmit(client, identity, signer) {
  const message = newProposalMessage({
    channel: "main",
    contract: "kv",
    function: "put",
    args: [new TextEncoder().encode(nextKey()), new TextEncoder().encode(value)],
    creator: identity.credentials,
  });
  const bytes = encodeProposal(message);
  const proposal = create(txpb.SignedProposalSchema, { proposal: bytes, signature: await signer(await proposalMessage(bytes)) });
  const endorsed = fromBinary(
    api.EndorseResponseSchema,
    await client.call("/runnel.v1.Gateway/Endorse", toBinary(api.EndorseRequestSchema, create(api.EndorseRequestSchema, { proposal }))),
  );
  const signature = await signer(await transactionMessage(endorsed.transaction));
  const signed = toBinary(txpb.SignedTransactionSchema, create(txpb.SignedTransactionSchema, { transaction: endorsed.transaction, signature }));
  await client.call("/runnel.v1.Gateway/Submit", toBinary(api.SubmitRequestSchema, create(api.SubmitRequestSchema, { transaction: signed })));
  const status = fromBinary(
    api.CommitStatusResponseSchema,
    await client.call(
      "/runnel.v1.Gateway/CommitStatus",
      toBinary(api.CommitStatusRequestSchema, create(api.CommitStatusRequestSchema, { txId: endorsed.txId, waitFor: api.TxPhase.COMMITTED })),
    ),
  );
  if (status.code !== api.ValidationCode.VALID) throw new Error(`invalid: ${status.code}`);
}

// ---- run -------------------------------------------------------------------------------

const node = await startNode();
const { identity } = await loadNetworkIdentity(node.dir, "Org1", "client");
const key = await readFile(join(node.dir, "identities", "Org1", "client.key"), "utf8");
const signer = newPrivateKeySigner(key);
const nodeSigner = newNodeCryptoSigner(key);
console.log(`# ${TRANSACTIONS} transactions and ${UNARY_CALLS} unary calls per row, 1 client, node ${node.url}, ${process.version}`);
const rows = [];
const splits = [];
const DEFAULT = "gRPC, direct unary (default)";
const transports = [
  [DEFAULT, { protocol: "grpc" }],
  ["gRPC, connect-node unary", { protocol: "grpc", directUnary: false }],
  ["gRPC-web, connect-node", { protocol: "grpc-web" }],
];

console.log("# one unary call (Query.GetNetworkInfo)");
const infoRequest = toBinary(api.GetNetworkInfoRequestSchema, create(api.GetNetworkInfoRequestSchema, {}));
const closers = [];
const unaryCases = [];
for (const [name, make] of [
  ["raw node:http2 gRPC", () => rawHttp2(node.url)],
  ["raw node:http gRPC-web", () => rawHttp1(node.url)],
]) {
  const client = make();
  closers.push(client);
  unaryCases.push({ name: `unary ${name}`, once: () => client.call("/runnel.v1.Query/GetNetworkInfo", infoRequest) });
}
for (const [name, options] of transports) {
  const gateway = connect({ url: node.url, identity, signer, ...options });
  closers.push(gateway);
  const query = gateway.getQuery();
  unaryCases.push({ name: `unary SDK ${name}`, once: () => query.getNetworkInfo() });
}
rows.push(...(await measure(unaryCases, UNARY_CALLS)));

console.log("# submit -> durable status (kv put, 1 KB)");
const submitCases = [];
for (const [name, make] of [
  ["raw node:http2 gRPC, 3 calls in sequence", () => rawHttp2(node.url)],
  ["raw node:http gRPC-web, 3 calls in sequence", () => rawHttp1(node.url)],
]) {
  const client = make();
  closers.push(client);
  submitCases.push({ name: `submit ${name}`, once: () => rawSubmit(client, identity, nodeSigner) });
}
for (const [name, options] of transports) {
  for (const [signerName, s] of [["node:crypto", nodeSigner], ["WebCrypto", signer]]) {
    const gateway = connect({ url: node.url, identity, signer: s, ...options });
    closers.push(gateway);
    const kv = gateway.getNetwork("main").getContract("kv");
    submitCases.push({
      name: `submit SDK ${name}, ${signerName} signer`,
      once: () => kv.submitTransaction("put", nextKey(), value),
    });
  }
}
rows.push(...(await measure(submitCases, TRANSACTIONS)));

// Where a transaction's time goes: in the calls (wire, node, and the transport's framing)
// or in the client around them (proposal, hashes, signatures, protobuf, Connect's client).
console.log("# time per transaction outside the calls (client work on the critical path)");
const timed = (inner) => {
  const t = { inCalls: 0 };
  const wrap = (fn) => async (...args) => {
    const t0 = performance.now();
    try {
      return await fn(...args);
    } finally {
      t.inCalls += performance.now() - t0;
    }
  };
  return { t, transport: { unary: wrap(inner.unary.bind(inner)), stream: inner.stream.bind(inner) } };
};
const sdkInner = nodeTransport({ url: node.url });
const sdkTimed = timed(sdkInner.transport);
const sdkGateway = connect({ url: node.url, identity, signer: nodeSigner, transport: sdkTimed.transport });
closers.push(sdkGateway, { close: sdkInner.close });
const sdkKv = sdkGateway.getNetwork("main").getContract("kv");
const rawClient = rawHttp2(node.url);
closers.push(rawClient);
const rawTimed = { t: { inCalls: 0 } };
const rawTimedClient = {
  call: async (path, bytes) => {
    const t0 = performance.now();
    try {
      return await rawClient.call(path, bytes);
    } finally {
      rawTimed.t.inCalls += performance.now() - t0;
    }
  },
};
for (const [name, t, once] of [
  ["SDK gRPC (default), node:crypto signer", sdkTimed.t, () => sdkKv.submitTransaction("put", nextKey(), value)],
  ["raw node:http2 gRPC", rawTimed.t, () => rawSubmit(rawTimedClient, identity, nodeSigner)],
]) {
  for (let i = 0; i < WARMUP; i++) await once();
  t.inCalls = 0;
  const start = performance.now();
  for (let i = 0; i < TRANSACTIONS; i++) await once();
  const total = (performance.now() - start) / TRANSACTIONS;
  const inCalls = t.inCalls / TRANSACTIONS;
  const row = { name: `split ${name}`, total_ms: +total.toFixed(3), in_calls_ms: +inCalls.toFixed(3), outside_us: Math.round((total - inCalls) * 1000) };
  console.log(JSON.stringify(row));
  splits.push(row);
}
// Many transactions at once through one gateway: what HTTP/2's one multiplexed
// connection and HTTP/1.1's pool of connections cost when calls overlap.
console.log(`# ${CONCURRENCY} submitters sharing one gateway, ${TRANSACTIONS * 2} transactions`);
const concurrent = [];
for (const [name, options] of transports) {
  const gateway = connect({ url: node.url, identity, signer: nodeSigner, ...options });
  closers.push(gateway);
  const kv = gateway.getNetwork("main").getContract("kv");
  const run = async (count) => {
    let left = count;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (left-- > 0) await kv.submitTransaction("put", nextKey(), value);
      }),
    );
  };
  await run(WARMUP * 2);
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  await run(TRANSACTIONS * 2);
  const seconds = (performance.now() - start) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const row = { name, tps: Math.round((TRANSACTIONS * 2) / seconds), cpu_us: Math.round((cpu.user + cpu.system) / (TRANSACTIONS * 2)) };
  console.log(JSON.stringify(row));
  concurrent.push(row);
}
for (const closer of closers) closer.close();
await node.stop();
console.log("\n| what | p50 ms | p99 ms | mean ms | client CPU µs/call |\n|---|---|---|---|---|");
for (const r of rows) console.log(`| ${r.name} | ${r.p50_ms} | ${r.p99_ms} | ${r.mean_ms} | ${r.cpu_us} |`);
console.log(`\n| ${CONCURRENCY} submitters, one gateway | tx/s | client CPU µs/tx |\n|---|---|---|`);
for (const r of concurrent) console.log(`| ${r.name} | ${r.tps} | ${r.cpu_us} |`);
console.log("\n| client | mean ms per transaction | in the 3 calls | outside them, µs |\n|---|---|---|---|");
for (const r of splits) console.log(`| ${r.name.replace("split ", "")} | ${r.total_ms} | ${r.in_calls_ms} | ${r.outside_us} |`);
const p50 = (name) => rows.find((r) => r.name === name).p50_ms;
const added = p50(`submit SDK ${DEFAULT}, node:crypto signer`) - p50("submit raw node:http2 gRPC, 3 calls in sequence");
const addedUnary = p50(`unary SDK ${DEFAULT}`) - p50("unary raw node:http2 gRPC");
console.log(`\nSDK added latency, p50: ${added.toFixed(3)} ms per transaction, ${addedUnary.toFixed(3)} ms per unary call (${DEFAULT}, node:crypto signer, against raw node:http2 gRPC in this run)`);
process.exit(0);

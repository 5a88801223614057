/**
 * Read grants: how a client proves it is an identity of the network to a node whose
 * reads are for members only (`[api] read_access = "members"`, docs/security.md).
 *
 * A grant names the reader's certificate, the channel and a validity of at most 15
 * minutes, and is signed with the reader's key (`runnel.read.v1` ‖ SHA-256 of the grant).
 * A gateway with a signer sends one in the `runnel-read-grant-bin` header of every read
 * (queries, deliveries, traces, commit statuses, contract events) and signs a new one
 * before the last runs out, so one signature serves minutes of reads. A node whose reads
 * are open ignores the header. Over mutual TLS with the member's own certificate
 * (`tls: { cert, key }` in Node.js) the node needs no grant.
 */

import { create, toBinary } from "@bufbuild/protobuf";
import type { DescMethod } from "@bufbuild/protobuf";
import { createClient, encodeBinaryHeader, type Transport } from "@connectrpc/connect";
import { concat, utf8Bytes } from "./bytes.js";
import { sha256 } from "./crypto.js";
import { Query, ReadGrantSchema, SignedReadGrantSchema } from "./gen/runnel/v1/api_pb.js";
import type { Identity } from "./identity.js";
import type { Signer } from "./signing.js";

/** The request header a read grant travels in (gRPC binary metadata: base64). */
export const READ_GRANT_HEADER = "runnel-read-grant-bin";

/** The domain tag of a reader's signature over a grant. */
export const READ_GRANT_DOMAIN = utf8Bytes("runnel.read.v1");

/** The longest validity a node takes, and what the SDK signs: 15 minutes. */
export const READ_GRANT_LIFETIME_MS = 15 * 60 * 1000;

/** The calls that are not reads: each carries a signature of its own, or is open to all. */
const NOT_READS = new Set([
  "runnel.v1.Gateway/Endorse",
  "runnel.v1.Gateway/Evaluate",
  "runnel.v1.Gateway/Submit",
  "runnel.v1.Query/GetNetworkInfo",
]);

/** Whether a call of `method` is a read, which a members-only node serves to members only. */
export function isRead(method: DescMethod): boolean {
  const service = method.parent.typeName;
  return service !== "runnel.v1.Admin" && !NOT_READS.has(`${service}/${method.name}`);
}

/**
 * Whether a call of `method` is open to all but tells a member more: `GetNetworkInfo`, whose
 * heights and peers a node under `ops_access = "members"` gives to members only.
 */
function tellsMembersMore(method: DescMethod): boolean {
  return method.parent.typeName === "runnel.v1.Query" && method.name === "GetNetworkInfo";
}

/** What a grant says. */
export interface ReadGrantOptions {
  /** The reader. */
  identity: Identity;
  /** Signs for the reader. */
  signer: Signer;
  /** The channel the node serves (`Query.getNetworkInfo().channel`). */
  channel: string;
  /** Start of validity, Unix milliseconds; default: a minute ago (clocks differ). */
  notBeforeMs?: number;
  /** How long it is valid from then; default and most: {@link READ_GRANT_LIFETIME_MS}. */
  lifetimeMs?: number;
}

/** A signed read grant (an encoded `SignedReadGrant`), for the {@link READ_GRANT_HEADER} header. */
export async function newReadGrant(options: ReadGrantOptions): Promise<Uint8Array> {
  const lifetimeMs = options.lifetimeMs ?? READ_GRANT_LIFETIME_MS;
  const notBeforeMs = options.notBeforeMs ?? Date.now() - 60_000;
  const grant = toBinary(
    ReadGrantSchema,
    create(ReadGrantSchema, {
      creator: options.identity.credentials,
      channel: options.channel,
      notBeforeMs: BigInt(notBeforeMs),
      notAfterMs: BigInt(notBeforeMs + lifetimeMs),
    }),
  );
  const signature = await options.signer(concat(READ_GRANT_DOMAIN, await sha256(grant)));
  return toBinary(SignedReadGrantSchema, create(SignedReadGrantSchema, { grant, signature }));
}

/**
 * `transport`, with a read grant of `identity` in every read's headers, and in
 * `GetNetworkInfo`'s (a members-only node tells members its heights and peers). The channel
 * is asked of the node once (`GetNetworkInfo`, open to all); a grant is signed on the first
 * call that carries one and again once half its life has gone.
 */
export function withReadGrants(transport: Transport, identity: Identity, signer: Signer): Transport {
  let current: { header: string; renewAt: number } | undefined;
  let signing: Promise<string> | undefined;
  let channel: string | undefined;
  const query = createClient(Query, transport);
  const sign = async (): Promise<string> => {
    channel ??= (await query.getNetworkInfo({})).channel;
    const notBeforeMs = Date.now() - 60_000;
    const grant = await newReadGrant({ identity, signer, channel, notBeforeMs });
    current = { header: encodeBinaryHeader(grant), renewAt: notBeforeMs + READ_GRANT_LIFETIME_MS / 2 };
    return current.header;
  };
  const header = (): Promise<string> => {
    if (current !== undefined && Date.now() < current.renewAt) return Promise.resolve(current.header);
    signing ??= sign().finally(() => {
      signing = undefined;
    });
    return signing;
  };
  const withGrant = async (method: DescMethod, init: HeadersInit | undefined): Promise<HeadersInit | undefined> => {
    if (!isRead(method) && !tellsMembersMore(method)) return init;
    const headers = new Headers(init);
    headers.set(READ_GRANT_HEADER, await header());
    return headers;
  };
  return {
    async unary(method, signal, timeoutMs, init, message, contextValues) {
      return transport.unary(method, signal, timeoutMs, await withGrant(method, init), message, contextValues);
    },
    async stream(method, signal, timeoutMs, init, input, contextValues) {
      return transport.stream(method, signal, timeoutMs, await withGrant(method, init), input, contextValues);
    },
  };
}

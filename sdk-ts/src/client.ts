/**
 * The node's services as Connect clients over one transport, and what every call
 * shares: the URL (for error messages) and the default deadlines.
 */

import { createClient, type Client, type Transport } from "@connectrpc/connect";
import { Admin, Deliver, Gateway, Query, Trace } from "./gen/runnel/v1/api_pb.js";

/** Deadlines of the calls, in milliseconds. A commit status call waits up to its deadline. */
export interface Timeouts {
  /** `Evaluate`; default 30,000. */
  evaluateMs?: number;
  /** `Endorse`; default 30,000. */
  endorseMs?: number;
  /** `Submit`; default 30,000. */
  submitMs?: number;
  /** `CommitStatus`; default 60,000. */
  commitStatusMs?: number;
  /** Queries, traces and admin calls; default 30,000. */
  queryMs?: number;
}

/** The defaults of {@link Timeouts}. */
export const DEFAULT_TIMEOUTS: Required<Timeouts> = {
  evaluateMs: 30_000,
  endorseMs: 30_000,
  submitMs: 30_000,
  commitStatusMs: 60_000,
  queryMs: 30_000,
};

/** Options of one call. */
export interface CallOptions {
  /** The call's deadline in milliseconds, instead of the gateway's default. */
  timeoutMs?: number;
  /** Cancels the call. */
  signal?: AbortSignal;
}

/** The node's services, as one gateway uses them. */
export interface Clients {
  readonly url: string;
  readonly transport: Transport;
  readonly gateway: Client<typeof Gateway>;
  readonly deliver: Client<typeof Deliver>;
  readonly query: Client<typeof Query>;
  readonly admin: Client<typeof Admin>;
  readonly trace: Client<typeof Trace>;
  readonly timeouts: Required<Timeouts>;
}

/** Clients of every service over `transport`. */
export function newClients(url: string, transport: Transport, timeouts: Timeouts = {}): Clients {
  return {
    url,
    transport,
    gateway: createClient(Gateway, transport),
    deliver: createClient(Deliver, transport),
    query: createClient(Query, transport),
    admin: createClient(Admin, transport),
    trace: createClient(Trace, transport),
    timeouts: { ...DEFAULT_TIMEOUTS, ...definedOnly(timeouts) },
  };
}

function definedOnly(timeouts: Timeouts): Timeouts {
  return Object.fromEntries(Object.entries(timeouts).filter(([, value]) => value !== undefined));
}

/** Connect's per-call options from ours, with `defaultMs` as the deadline unless given. */
export function callOptions(
  options: CallOptions | undefined,
  defaultMs: number,
): { timeoutMs: number; signal?: AbortSignal } {
  const timeoutMs = options?.timeoutMs ?? defaultMs;
  return options?.signal === undefined ? { timeoutMs } : { timeoutMs, signal: options.signal };
}

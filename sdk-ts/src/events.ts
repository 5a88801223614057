/**
 * Contract events, transactions and blocks as async iterables that resume by themselves. Each stream
 * keeps a cursor just past the last item it handed out; when the connection breaks (the
 * node restarts, the network blips) it reopens from the cursor, so the reader sees every
 * item exactly once and in order. The node guarantees the same across its own switch
 * from stored to live items (docs/api.md, "Streams").
 */

import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { toHex, utf8 } from "./bytes.js";
import type { Checkpointer } from "./checkpoint.js";
import type { Clients } from "./client.js";
import { QueryError, validationCodeName } from "./errors.js";
import { EventCheckpointSchema, type Block as BlockMessage, type ContractEventsRequest } from "./gen/runnel/v1/api_pb.js";

/** An async iterable that can be closed; closing ends a `for await` loop over it. */
export interface CloseableAsyncIterable<T> extends AsyncIterable<T> {
  /** Ends the stream and releases its call. */
  close(): void;
}

/** A place in a contract's event stream: the event at `index` among those of the transaction at `seq`. */
export interface EventCheckpoint {
  /** The seq of the transaction that emitted the event. */
  readonly seq: bigint;
  /** The event's place among that transaction's events, from 0. */
  readonly index: number;
}

/** An event a contract emitted in a committed, valid transaction. */
export interface ContractEvent {
  /** The transaction that emitted it. */
  readonly transactionId: string;
  /** The contract that emitted it. */
  readonly contractName: string;
  /** The event's name. */
  readonly eventName: string;
  /** The event's payload (often JSON; see {@link ContractEvent.payloadText}). */
  readonly payload: Uint8Array;
  /** The payload as UTF-8 text. */
  readonly payloadText: string;
  /** Where it is: resume after it with a checkpointer or `Checkpointer.checkpoint`. */
  readonly checkpoint: EventCheckpoint;
}

/** A transaction in a block's list. */
export interface BlockTransaction {
  /** Its place in the ordered stream. */
  readonly seq: bigint;
  /** Its id. */
  readonly transactionId: string;
  /** Its validation code's name: `"VALID"`, `"MVCC_READ_CONFLICT"`, ... */
  readonly code: string;
}

/** A sealed (virtual) block: a signed boundary over a range of the ordered stream. */
export interface Block {
  /** 1 for the first block, +1 per block. */
  readonly number: bigint;
  /** The seq of its first transaction. */
  readonly firstSeq: bigint;
  /** The seq of its last transaction, inclusive. */
  readonly lastSeq: bigint;
  /** Hex sha256 of the previous block's seal; zeros for block 1. */
  readonly previousHash: string;
  /** Hex sha256 of this block's seal: the next block's `previousHash`. */
  readonly hash: string;
  /** Hex RFC 6962 Merkle root over its transactions. */
  readonly txRoot: string;
  /** The orderer's clock when it sealed, Unix milliseconds. */
  readonly timestampMs: bigint;
  /** The encoded `SignedSeal`, exactly as the orderer signed it. */
  readonly signedSeal: Uint8Array;
  /** Its transactions, when asked for (`withTransactions`). */
  readonly transactions: readonly BlockTransaction[];
}

/** A committed transaction, valid or not, as the node's ordered stream delivers it. */
export interface CommittedTransaction {
  /** Its place in the ordered stream. */
  readonly seq: bigint;
  /** Its id. */
  readonly transactionId: string;
  /** Its validation code's name: `"VALID"`, `"MVCC_READ_CONFLICT"`, ... */
  readonly code: string;
  /** The orderer's clock when it ordered it, Unix milliseconds (its block's seal covers it). */
  readonly timestampMs: bigint;
  /** The encoded `SignedTransaction`, exactly as ordered. */
  readonly bytes: Uint8Array;
}

/** Where a transaction stream starts. */
export interface TransactionEventsOptions extends ReconnectOptions {
  /** The first seq; default: the next transaction committed after the call. */
  startSeq?: bigint;
}

/** How a stream reconnects after the connection breaks. */
export interface ReconnectOptions {
  /** Reconnect at all; default true. */
  reconnect?: boolean;
  /** Give up (the iterator throws) after failing to reconnect for this long; default 60,000 ms. */
  reconnectTimeoutMs?: number;
  /** Wait between attempts; default 250 ms. */
  reconnectDelayMs?: number;
}

/** Where a contract event stream starts. */
export interface ContractEventsOptions extends ReconnectOptions {
  /** Resume after this checkpointer's event, when it has one (wins over the start options). */
  checkpoint?: Checkpointer;
  /** Start after this event. */
  after?: EventCheckpoint;
  /** Start with the transactions from this seq on (1: every event). */
  startSeq?: bigint;
  /** Start with this block's first transaction (the block must be sealed). */
  startBlock?: bigint;
}

/** Where a block stream starts. */
export interface BlockEventsOptions extends ReconnectOptions {
  /** Resume after this checkpointer's block, when it has one. */
  checkpoint?: Checkpointer;
  /** The first block; default: the next block sealed after the call. */
  startBlock?: bigint;
  /** List each block's transactions; default false. */
  withTransactions?: boolean;
}

/** Whether a stream that failed with `error` may be reopened. */
function transient(error: QueryError): boolean {
  return error.unreachable || error.grpcCode === Code.Unavailable;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

/**
 * A stream that reopens itself: `open` starts the call from the cursor it keeps; `take`
 * turns a response into the items to hand out and moves the cursor past them.
 */
export function resumable<R, T>(
  clients: Clients,
  what: string,
  options: ReconnectOptions,
  open: (signal: AbortSignal) => AsyncIterable<R>,
  take: (response: R) => T | undefined,
): CloseableAsyncIterable<T> {
  const abort = new AbortController();
  const reconnect = options.reconnect ?? true;
  const timeoutMs = options.reconnectTimeoutMs ?? 60_000;
  const delayMs = options.reconnectDelayMs ?? 250;
  async function* run(): AsyncGenerator<T> {
    let failingSince: number | undefined;
    while (!abort.signal.aborted) {
      try {
        for await (const response of open(abort.signal)) {
          failingSince = undefined;
          const item = take(response);
          if (item !== undefined) yield item;
        }
        return;
      } catch (cause) {
        if (abort.signal.aborted) return;
        const error = new QueryError(what, { url: clients.url, cause });
        if (!reconnect || !transient(error)) throw error;
        failingSince ??= Date.now();
        if (Date.now() - failingSince > timeoutMs) throw error;
        await sleep(delayMs, abort.signal);
      }
    }
  }
  const generator = run();
  return {
    [Symbol.asyncIterator]: () => generator,
    close: () => {
      abort.abort();
      void generator.return(undefined);
    },
  };
}

/** Opens a contract's event stream (see `Network.getContractEvents`). */
export async function contractEvents(
  clients: Clients,
  contract: string,
  options: ContractEventsOptions,
): Promise<CloseableAsyncIterable<ContractEvent>> {
  let start: ContractEventsRequest["start"];
  const checkpoint = options.checkpoint?.getCheckpoint() ?? options.after;
  if (checkpoint !== undefined) {
    start = { case: "after", value: create(EventCheckpointSchema, { seq: checkpoint.seq, index: checkpoint.index }) };
  } else if (options.startSeq !== undefined) {
    start = { case: "startSeq", value: options.startSeq };
  } else if (options.startBlock !== undefined) {
    start = { case: "startSeq", value: await blockFirstSeq(clients, options.startBlock) };
  } else {
    // "From now" made explicit, so that a reconnection before the first event misses nothing.
    start = { case: "startSeq", value: (await committedHeight(clients)) + 1n };
  }
  return resumable(
    clients,
    `contract events of ${contract}`,
    options,
    (signal) => clients.gateway.contractEvents({ contract, start }, { signal }),
    (response) => {
      start = { case: "after", value: create(EventCheckpointSchema, { seq: response.seq, index: response.index }) };
      const event = response.event;
      const payload = event?.payload ?? new Uint8Array();
      return {
        transactionId: response.txId,
        contractName: event?.contract ?? contract,
        eventName: event?.name ?? "",
        payload,
        payloadText: utf8(payload),
        checkpoint: { seq: response.seq, index: response.index },
      };
    },
  );
}

/** Opens the block stream (see `Network.getBlockEvents`). */
export async function blockEvents(
  clients: Clients,
  options: BlockEventsOptions,
): Promise<CloseableAsyncIterable<Block>> {
  const last = options.checkpoint?.getBlockNumber();
  let next =
    last !== undefined ? last + 1n : (options.startBlock ?? (await networkInfo(clients)).blockHeight + 1n);
  const withTransactions = options.withTransactions ?? false;
  return resumable(
    clients,
    "block events",
    options,
    (signal) => clients.deliver.blocks({ startBlock: next, withTransactions }, { signal }),
    (response) => {
      if (response.block === undefined) return undefined;
      const block = toBlock(response.block);
      next = block.number + 1n;
      return block;
    },
  );
}

/** Opens the committed transaction stream (see `Network.getTransactionEvents`). */
export async function transactionEvents(
  clients: Clients,
  options: TransactionEventsOptions,
): Promise<CloseableAsyncIterable<CommittedTransaction>> {
  let next = options.startSeq ?? (await committedHeight(clients)) + 1n;
  return resumable(
    clients,
    "transaction events",
    options,
    (signal) => clients.deliver.transactions({ startSeq: next }, { signal }),
    (response) => {
      const tx = response.transaction;
      if (tx === undefined) return undefined;
      next = tx.seq + 1n;
      return {
        seq: tx.seq,
        transactionId: tx.txId,
        code: validationCodeName(tx.code),
        timestampMs: tx.timestampMs,
        bytes: tx.transaction,
      };
    },
  );
}

/** A {@link Block} from the node's message. */
export function toBlock(block: BlockMessage): Block {
  const seal = block.seal;
  return {
    number: seal?.number ?? 0n,
    firstSeq: seal?.firstSeq ?? 0n,
    lastSeq: seal?.lastSeq ?? 0n,
    previousHash: toHex(seal?.previousHash ?? new Uint8Array()),
    hash: toHex(block.hash),
    txRoot: toHex(seal?.txRoot ?? new Uint8Array()),
    timestampMs: seal?.timestampMs ?? 0n,
    signedSeal: block.signedSeal,
    transactions: block.transactions.map((tx) => ({
      seq: tx.seq,
      transactionId: tx.txId,
      code: validationCodeName(tx.code),
    })),
  };
}

async function networkInfo(clients: Clients) {
  try {
    return await clients.query.getNetworkInfo({}, { timeoutMs: clients.timeouts.queryMs });
  } catch (cause) {
    throw new QueryError("network info", { url: clients.url, cause });
  }
}

async function committedHeight(clients: Clients): Promise<bigint> {
  return (await networkInfo(clients)).committedHeight;
}

async function blockFirstSeq(clients: Clients, number: bigint): Promise<bigint> {
  try {
    const response = await clients.query.getBlock({ number }, { timeoutMs: clients.timeouts.queryMs });
    return response.block?.seal?.firstSeq ?? 1n;
  } catch (cause) {
    throw new QueryError(`block ${number}`, { url: clients.url, cause });
  }
}

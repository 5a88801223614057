/**
 * The gateway: one connection to one node, for one identity. As in fabric-gateway,
 * `connect` gives a {@link Gateway}; `getNetwork(channel)` a {@link Network};
 * `getContract(name)` a {@link Contract} to evaluate and submit with.
 */

import { withReadGrants } from "./readers.js";
import type { Transport } from "@connectrpc/connect";
import { approveContract, deployContract, type Deployed, type DeployOptions } from "./admin.js";
import { newClients, type CallOptions, type Clients, type Timeouts } from "./client.js";
import { Contract, type ContractContext } from "./contract.js";
import {
  blockEvents,
  contractEvents,
  transactionEvents,
  type Block,
  type BlockEventsOptions,
  type CloseableAsyncIterable,
  type CommittedTransaction,
  type ContractEvent,
  type ContractEventsOptions,
  type TransactionEventsOptions,
} from "./events.js";
import type { Identity } from "./identity.js";
import { Commit, Proposal, Transaction, type TransactionOptions } from "./proposal.js";
import { Query } from "./query.js";
import type { Signer } from "./signing.js";
import { getTrace, traceStream, type Trace } from "./trace.js";

// Node.js 20 and some browsers lack Symbol.dispose; `using` needs it.
(Symbol as { dispose?: symbol }).dispose ??= Symbol.for("Symbol.dispose");

/** What every `connect` takes. */
export interface GatewayOptions {
  /** The node's API, e.g. `http://127.0.0.1:7051` (`https://` for a node serving TLS). */
  url: string;
  /** Who the client is: its certificate. */
  identity: Identity;
  /** Signs for the identity. Without one, sign offline (`getDigest()`, `Gateway.newSignedProposal`). */
  signer?: Signer;
  /** Call deadlines. */
  timeouts?: Timeouts;
  /**
   * Send a read grant signed by the identity with every read (default: yes, when there is
   * a signer): what a node whose reads are for members needs (docs/security.md). One
   * signature serves several minutes of reads. `false` never signs one: for reads over
   * mutual TLS with the identity's own certificate, or a signer that asks a person.
   */
  readGrants?: boolean;
}

/** {@link GatewayOptions} with the transport to use: what the platform entry points build. */
export interface TransportGatewayOptions extends GatewayOptions {
  /** A Connect transport to the node (gRPC or gRPC-web). */
  transport: Transport;
  /** Releases the transport's connections; called by `Gateway.close`. */
  closeTransport?: () => void;
}

/** A channel of the network, as `Gateway.getNetwork` returns it. */
export class Network {
  readonly #gateway: Gateway;
  readonly #context: ContractContext;

  /** @internal Use `Gateway.getNetwork`. */
  constructor(gateway: Gateway, context: ContractContext) {
    this.#gateway = gateway;
    this.#context = context;
  }

  /** The channel's name. */
  getName(): string {
    return this.#context.channel;
  }

  /** The contract named `name` on this channel. */
  getContract(name: string): Contract {
    return new Contract(this.#context, name);
  }

  /**
   * The events of contract `name` from committed, valid transactions: stored ones from
   * the start given (a checkpointer's position, `after`, `startSeq` or `startBlock`;
   * default: the next transaction committed), then live, each exactly once, in order.
   * The stream reconnects by itself if the connection breaks, resuming after the last
   * event it handed out. Close it (or `break` out of `for await`) when done.
   */
  async getContractEvents(
    name: string,
    options: ContractEventsOptions = {},
  ): Promise<CloseableAsyncIterable<ContractEvent>> {
    return contractEvents(this.#context.clients, name, options);
  }

  /** Committed blocks from `startBlock` (or after a checkpointer's block) on, then live; reconnects like contract events. */
  async getBlockEvents(options: BlockEventsOptions = {}): Promise<CloseableAsyncIterable<Block>> {
    return blockEvents(this.#context.clients, options);
  }

  /** Every committed transaction, valid or not, from `startSeq` (default: the next one) on, then live; reconnects like contract events. */
  async getTransactionEvents(
    options: TransactionEventsOptions = {},
  ): Promise<CloseableAsyncIterable<CommittedTransaction>> {
    return transactionEvents(this.#context.clients, options);
  }

  /** The gateway this network belongs to. */
  getGateway(): Gateway {
    return this.#gateway;
  }
}

/** A connection to a node for one identity. Close it when done (or `using gateway = connect(...)`). */
export class Gateway implements Disposable {
  readonly #clients: Clients;
  readonly #identity: Identity;
  readonly #signer: Signer | undefined;
  readonly #closeTransport: (() => void) | undefined;
  readonly #query: Query;

  /** @internal Use `connect`. */
  constructor(options: TransportGatewayOptions) {
    const signer = options.signer;
    const grants = signer !== undefined && options.identity.credentials.length > 0 && options.readGrants !== false;
    const transport = grants ? withReadGrants(options.transport, options.identity, signer) : options.transport;
    this.#clients = newClients(options.url, transport, options.timeouts);
    this.#identity = options.identity;
    this.#signer = options.signer;
    this.#closeTransport = options.closeTransport;
    this.#query = new Query(this.#clients);
  }

  /** The identity the gateway acts as. */
  getIdentity(): Identity {
    return this.#identity;
  }

  /** The node's URL. */
  getUrl(): string {
    return this.#clients.url;
  }

  #context(channel: string): ContractContext {
    return { clients: this.#clients, signer: this.#signer, identity: this.#identity, channel };
  }

  /** The network on `channel` (the node serves one; `Query.getNetworkInfo()` names it). */
  getNetwork(channel: string): Network {
    return new Network(this, this.#context(channel));
  }

  /** Queries of blocks, transactions, keys, key histories, contracts and the network. */
  getQuery(): Query {
    return this.#query;
  }

  /**
   * An unsigned proposal from its bytes (`Proposal.getBytes`), e.g. made by another
   * process: read its digest (`getDigest`) to sign it, then use {@link Gateway.newSignedProposal}.
   */
  async newProposal(bytes: Uint8Array): Promise<Proposal> {
    return Proposal.fromBytes(this.#context(""), bytes);
  }

  /**
   * An unsigned transaction from its bytes (`Transaction.getBytes`); see
   * {@link Gateway.newProposal}. Before it hands out a digest to sign, it checks that the
   * payload was endorsed for the proposal embedded, that this proposal's creator is the
   * gateway's identity and, given `options.proposal`, that it is exactly that proposal;
   * otherwise it throws a `TransactionMismatchError`.
   */
  async newTransaction(bytes: Uint8Array, options?: TransactionOptions): Promise<Transaction> {
    return Transaction.fromBytes(this.#context(""), bytes, undefined, options);
  }

  /** A proposal signed offline: its bytes (`Proposal.getBytes`) and the signature of its digest. */
  async newSignedProposal(bytes: Uint8Array, signature: Uint8Array): Promise<Proposal> {
    return Proposal.fromBytes(this.#context(""), bytes, signature);
  }

  /**
   * A transaction signed offline: its bytes (`Transaction.getBytes`) and the signature of
   * its digest, checked as {@link Gateway.newTransaction} checks them.
   */
  async newSignedTransaction(bytes: Uint8Array, signature: Uint8Array, options?: TransactionOptions): Promise<Transaction> {
    return Transaction.fromBytes(this.#context(""), bytes, signature, options);
  }

  /** A handle on the status of a transaction submitted earlier (by any client). */
  newCommit(transactionId: string): Commit {
    return new Commit(this.#clients, transactionId);
  }

  /** When a recent transaction passed each stage on the node. */
  async trace(transactionId: string, options?: CallOptions): Promise<Trace> {
    return getTrace(this.#clients, transactionId, options);
  }

  /** Each transaction's trace as it completes, live. */
  traceStream(): CloseableAsyncIterable<Trace> {
    return traceStream(this.#clients);
  }

  /** Deploys or upgrades a contract on `channel`; the gateway's identity must be an organisation's admin. */
  async deployContract(channel: string, options: DeployOptions): Promise<Deployed> {
    return deployContract(this.#context(channel), options);
  }

  /**
   * Approves a contract definition for this gateway's (admin) identity's organisation:
   * a commit ({@link Gateway.deployContract}) needs the approvals of as many
   * organisations as the network's lifecycle policy names (by default a majority).
   */
  async approveContract(channel: string, options: DeployOptions): Promise<Deployed> {
    return approveContract(this.#context(channel), options);
  }

  /** Releases the connection. Calls in flight fail. */
  close(): void {
    this.#closeTransport?.();
  }

  /** {@link Gateway.close}, for `using`. */
  [Symbol.dispose](): void {
    this.close();
  }
}

/** A gateway over a transport the caller built. The platform entry points' `connect` build one for you. */
export function connectWithTransport(options: TransportGatewayOptions): Gateway {
  checkUrl(options.url);
  return new Gateway(options);
}

/** Throws a TypeError unless `url` is an http:// or https:// URL. */
export function checkUrl(url: string): void {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) {
    throw new TypeError(`url must be an http:// or https:// URL, got ${JSON.stringify(url)}`);
  }
}

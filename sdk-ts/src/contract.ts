/** A contract on a network: evaluate (query) and submit (write) its functions. */

import type { CallOptions } from "./client.js";
import { argumentBytes, type Argument } from "./bytes.js";
import type { Status } from "./errors.js";
import type { Identity } from "./identity.js";
import { checkStatus, Proposal, type CommitStatusOptions, type CommitWait, type EndorseOptions, type StepContext } from "./proposal.js";
import { encodeProposal, newProposalMessage, proposalMessage, transactionId } from "./tx.js";

/** Options of a proposal: the function's arguments. */
export interface ProposalOptions {
  /** The arguments, each sent as bytes (text as UTF-8). Contracts decode them as JSON, or as text. */
  arguments?: Argument[];
}

/** Options of an evaluation. */
export interface EvaluateOptions extends ProposalOptions, CallOptions {}

/** Options of a submission. */
export interface SubmitOptions extends ProposalOptions, CallOptions {
  /** The organisations whose peers endorse; default: as the contract's policy needs (see `Proposal.endorse`). */
  endorsingOrganizations?: string[];
  /** How far the transaction must get before `submit` returns; default `"durable"`. */
  commitWait?: CommitWait;
}

/** A transaction submitted by {@link Contract.submitAsync}: its result at once, its status later. */
export interface SubmittedTransaction {
  /** The transaction's id. */
  getTransactionId(): string;
  /** The function's return value, as endorsed. */
  getResult(): Uint8Array;
  /** Waits for its status (see {@link Commit.getStatus}); valid or not. */
  getStatus(options?: CommitStatusOptions): Promise<Status>;
}

/** What a contract needs from its network. */
export interface ContractContext extends StepContext {
  readonly identity: Identity;
  readonly channel: string;
}

/** One contract on one network, as `Network.getContract` returns it. */
export class Contract {
  readonly #context: ContractContext;
  readonly #name: string;

  /** @internal Use `Network.getContract`. */
  constructor(context: ContractContext, name: string) {
    this.#context = context;
    this.#name = name;
  }

  /** The contract's name. */
  getContractName(): string {
    return this.#name;
  }

  /**
   * Runs `name(...args)` on the node's current state and returns its result; nothing is
   * ordered. Throws an `EvaluateError` (the contract's message in `nodeMessage`).
   */
  async evaluateTransaction(name: string, ...args: Argument[]): Promise<Uint8Array> {
    return this.evaluate(name, { arguments: args });
  }

  /** {@link Contract.evaluateTransaction} with options. */
  async evaluate(name: string, options: EvaluateOptions = {}): Promise<Uint8Array> {
    const proposal = await this.newProposal(name, options);
    return proposal.evaluate(options);
  }

  /**
   * Endorses, submits and waits until `name(...args)` is durable; returns its result.
   * Throws `EndorseError`, `SubmitError`, `CommitStatusError`, or `CommitError` when the
   * transaction was ordered but is invalid (its `code`, e.g. `"MVCC_READ_CONFLICT"`).
   */
  async submitTransaction(name: string, ...args: Argument[]): Promise<Uint8Array> {
    return this.submit(name, { arguments: args });
  }

  /** {@link Contract.submitTransaction} with options (e.g. `commitWait: "validated"`). */
  async submit(name: string, options: SubmitOptions = {}): Promise<Uint8Array> {
    const proposal = await this.newProposal(name, options);
    const transaction = await proposal.endorse(options);
    // Submit waits for the status itself: one round trip (docs/api.md).
    checkStatus(await transaction.submitAndWait({ ...options, wait: options.commitWait ?? "durable" }));
    return transaction.getResult();
  }

  /** Endorses and submits `name`; returns once it is ordered, with its result, without waiting for its status. */
  async submitAsync(name: string, options: ProposalOptions & EndorseOptions = {}): Promise<SubmittedTransaction> {
    const proposal = await this.newProposal(name, options);
    const transaction = await proposal.endorse(options);
    const commit = await transaction.submit(options);
    return {
      getTransactionId: () => commit.getTransactionId(),
      getResult: () => transaction.getResult(),
      getStatus: (statusOptions) => commit.getStatus(statusOptions),
    };
  }

  /** A proposal for `name`, to evaluate or endorse step by step (or to sign offline: `getDigest()`). */
  async newProposal(name: string, options: ProposalOptions = {}): Promise<Proposal> {
    const context = this.#context;
    const message = newProposalMessage({
      channel: context.channel,
      contract: this.#name,
      function: name,
      args: (options.arguments ?? []).map(argumentBytes),
      creator: context.identity.credentials,
    });
    const bytes = encodeProposal(message);
    const [digest, id] = await Promise.all([
      proposalMessage(bytes),
      transactionId(message.nonce, message.creator),
    ]);
    return new Proposal(context, bytes, digest, id, undefined);
  }
}

/**
 * The steps of a transaction, as fabric-gateway names them: a {@link Proposal} is
 * endorsed into a {@link Transaction}, which is submitted as a {@link Commit} whose
 * status tells the outcome. Each step can be signed offline: take `getBytes()` and
 * `getDigest()`, sign the digest elsewhere, and rebuild the step with
 * `Gateway.newSignedProposal` / `Gateway.newSignedTransaction`.
 */

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { callOptions, type CallOptions, type Clients } from "./client.js";
import { mismatch, readTransaction, type Expected } from "./endorsed.js";
import {
  CommitError,
  CommitStatusError,
  EndorseError,
  EvaluateError,
  SubmitError,
  TransactionMismatchError,
  validationCodeName,
  type Status,
} from "./errors.js";
import { TxPhase, ValidationCode, type CommitStatusResponse } from "./gen/runnel/v1/api_pb.js";
import { ProposalSchema, SignedProposalSchema, SignedTransactionSchema } from "./gen/runnel/v1/transaction_pb.js";
import type { Identity } from "./identity.js";
import type { Signer } from "./signing.js";
import { proposalMessage, transactionId, transactionMessage } from "./tx.js";

/**
 * How far a transaction must get before a commit status returns: `"durable"` (the
 * default: on the node's disk) or `"validated"` (its validation code is final and its
 * writes are visible to new endorsements; earlier, not yet durable).
 */
export type CommitWait = "validated" | "durable";

/** What a step needs from its gateway. */
export interface StepContext {
  readonly clients: Clients;
  readonly signer: Signer | undefined;
  /** The gateway's identity: the creator of the proposals it may sign transactions for. */
  readonly identity?: Identity;
}

/** Options of `Gateway.newTransaction` and `Gateway.newSignedTransaction`. */
export interface TransactionOptions {
  /**
   * The proposal the transaction must embed, byte for byte (and its signature, when it
   * was signed): the one that was endorsed. Without it, only what the bytes say of
   * themselves is checked (the payload is endorsed for the embedded proposal, whose
   * creator is the gateway's identity).
   */
  proposal?: Proposal;
}

/** The answer of an endorsement: the transaction to sign, its id and result as the node says. */
export interface EndorsedAnswer {
  readonly txId: string;
  readonly transaction: Uint8Array;
  /** The result beside the transaction; undefined where the call has none (deploy). */
  readonly result?: Uint8Array;
}

async function sign(context: StepContext, message: Uint8Array, what: string): Promise<Uint8Array> {
  if (context.signer === undefined) {
    throw new TypeError(
      `the ${what} is not signed and the gateway has no signer: sign getDigest() and use Gateway.newSigned${what[0]?.toUpperCase()}${what.slice(1)}`,
    );
  }
  return context.signer(message);
}

/** `read()`, or a TypeError saying that the bytes are not an encoded `what`. */
function decode<T>(what: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    throw new TypeError(`not an encoded ${what}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** A proposal to run one contract function: evaluate it (a query) or endorse it (a write). */
export class Proposal {
  readonly #context: StepContext;
  readonly #bytes: Uint8Array;
  readonly #digest: Uint8Array;
  readonly #transactionId: string;
  #signature: Uint8Array | undefined;

  /** @internal Use `Contract.newProposal` or `Gateway.newSignedProposal`. */
  constructor(
    context: StepContext,
    bytes: Uint8Array,
    digest: Uint8Array,
    id: string,
    signature: Uint8Array | undefined,
  ) {
    this.#context = context;
    this.#bytes = bytes;
    this.#digest = digest;
    this.#transactionId = id;
    this.#signature = signature;
  }

  /** @internal A proposal from its encoding (and signature, if signed offline). */
  static async fromBytes(
    context: StepContext,
    bytes: Uint8Array,
    signature?: Uint8Array,
  ): Promise<Proposal> {
    const message = decode("Proposal", () => fromBinary(ProposalSchema, bytes));
    const [digest, id] = await Promise.all([
      proposalMessage(bytes),
      transactionId(message.nonce, message.creator),
    ]);
    return new Proposal(context, bytes, digest, id, signature);
  }

  /** The id the transaction will have: `sha256(nonce ‖ creator)`, lowercase hex. */
  getTransactionId(): string {
    return this.#transactionId;
  }

  /** The encoded `Proposal`, exactly the bytes signed. */
  getBytes(): Uint8Array {
    return this.#bytes;
  }

  /** What the creator signs: `"runnel.proposal.v1" ‖ sha256(getBytes())`. */
  getDigest(): Uint8Array {
    return this.#digest;
  }

  /** @internal What an endorsed transaction must embed: these bytes, and the signature once signed. */
  expected(): Expected {
    const expected = { proposal: this.#bytes, transactionId: this.#transactionId };
    return this.#signature === undefined ? expected : { ...expected, signature: this.#signature };
  }

  async #signed(): Promise<{ proposal: Uint8Array; signature: Uint8Array }> {
    this.#signature ??= await sign(this.#context, this.#digest, "proposal");
    return create(SignedProposalSchema, { proposal: this.#bytes, signature: this.#signature });
  }

  /** Runs the proposal on the node's current state and returns the function's result. Nothing is written. */
  async evaluate(options?: CallOptions): Promise<Uint8Array> {
    const clients = this.#context.clients;
    const proposal = await this.#signed();
    try {
      const response = await clients.gateway.evaluate(
        { proposal },
        callOptions(options, clients.timeouts.evaluateMs),
      );
      return response.result;
    } catch (cause) {
      throw new EvaluateError("evaluate", { url: clients.url, transactionId: this.#transactionId, cause });
    }
  }

  /**
   * Gathers the endorsements the contract's policy needs: the gateway's peer endorses
   * for its own organisation and asks a peer of each other organisation the policy
   * needs (or of each of `endorsingOrganizations`, when given). Returns the transaction
   * to submit. Throws an `EndorseError` whose `errorName` says what failed and whose
   * message names the organisation: `ENDORSER_UNAVAILABLE` (no peer of it answered),
   * `ENDORSEMENT_REFUSED` (its peer refused), `ENDORSEMENT_MISMATCH` (its peer endorsed a
   * different payload) or `ENDORSEMENT_POLICY_FAILURE` (no set of organisations
   * satisfies the policy); a `TransactionMismatchError` if the node's transaction is not
   * this proposal's (see {@link Transaction.endorsed}).
   */
  async endorse(options?: EndorseOptions): Promise<Transaction> {
    const clients = this.#context.clients;
    const proposal = await this.#signed();
    let response;
    try {
      response = await clients.gateway.endorse(
        { proposal, endorsingOrgs: options?.endorsingOrganizations ?? [] },
        callOptions(options, clients.timeouts.endorseMs),
      );
    } catch (cause) {
      throw new EndorseError("endorse", { url: clients.url, transactionId: this.#transactionId, cause });
    }
    return Transaction.endorsed(this.#context, "endorse", this.expected(), response);
  }
}

/** Options of an endorsement. */
export interface EndorseOptions extends CallOptions {
  /**
   * The organisations whose peers endorse (fabric-gateway's `endorsingOrganizations`);
   * default: as many as the contract's endorsement policy needs, chosen by the gateway.
   */
  endorsingOrganizations?: string[];
}

/** An endorsed transaction: sign it and submit it for ordering. */
export class Transaction {
  readonly #context: StepContext;
  readonly #bytes: Uint8Array;
  readonly #digest: Uint8Array;
  readonly #transactionId: string;
  readonly #result: Uint8Array;
  #signature: Uint8Array | undefined;

  /** @internal Use `Proposal.endorse` or `Gateway.newSignedTransaction`. */
  constructor(
    context: StepContext,
    bytes: Uint8Array,
    digest: Uint8Array,
    id: string,
    result: Uint8Array,
    signature: Uint8Array | undefined,
  ) {
    this.#context = context;
    this.#bytes = bytes;
    this.#digest = digest;
    this.#transactionId = id;
    this.#result = result;
    this.#signature = signature;
  }

  /**
   * @internal The transaction a node answered an endorsement with, once checked: it
   * embeds exactly the signed proposal sent, under that proposal's id, with a payload
   * endorsed for it (its `proposal_hash`) and the result the node answered with. Nothing
   * is signed before this holds: a node could otherwise have the client sign another
   * function, other arguments, or someone else's proposal.
   *
   * @throws TransactionMismatchError if it does not hold.
   */
  static async endorsed(
    context: StepContext,
    step: string,
    sent: Expected,
    answer: EndorsedAnswer,
  ): Promise<Transaction> {
    const url = context.clients.url;
    const id = sent.transactionId ?? answer.txId;
    let transaction;
    try {
      transaction = await readTransaction(answer.transaction);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new TransactionMismatchError({ step, url, transactionId: id, reason });
    }
    const expected = { ...sent, answeredId: answer.txId };
    const reason = await mismatch(
      transaction,
      answer.result === undefined ? expected : { ...expected, answeredResult: answer.result },
    );
    if (reason !== undefined) throw new TransactionMismatchError({ step, url, transactionId: id, reason });
    const digest = await transactionMessage(answer.transaction);
    return new Transaction(context, answer.transaction, digest, transaction.transactionId, transaction.result, undefined);
  }

  /**
   * @internal A transaction from its encoding (and signature, if signed offline), checked
   * before its digest is handed out: its payload is endorsed for the proposal it embeds,
   * that proposal's creator is the gateway's identity, and, given `options.proposal`, it
   * is exactly that proposal.
   *
   * @throws TypeError if the bytes are not an encoded `Transaction`.
   * @throws TransactionMismatchError if the check fails.
   */
  static async fromBytes(
    context: StepContext,
    bytes: Uint8Array,
    signature?: Uint8Array,
    options: TransactionOptions = {},
  ): Promise<Transaction> {
    const transaction = await readTransaction(bytes);
    const creator = context.identity?.credentials;
    const expected: Expected = {
      ...(options.proposal?.expected() ?? {}),
      ...(creator === undefined || creator.length === 0 ? {} : { creator }),
    };
    const reason = await mismatch(transaction, expected);
    if (reason !== undefined) {
      const id = expected.transactionId ?? transaction.transactionId;
      throw new TransactionMismatchError({ step: "transaction", url: "", transactionId: id, reason });
    }
    const digest = await transactionMessage(bytes);
    return new Transaction(context, bytes, digest, transaction.transactionId, transaction.result, signature);
  }

  /** The transaction's id. */
  getTransactionId(): string {
    return this.#transactionId;
  }

  /** The function's return value, as endorsed. */
  getResult(): Uint8Array {
    return this.#result;
  }

  /** The encoded `Transaction`, exactly the bytes signed. */
  getBytes(): Uint8Array {
    return this.#bytes;
  }

  /** What the creator signs: `"runnel.transaction.v1" ‖ sha256(getBytes())`. */
  getDigest(): Uint8Array {
    return this.#digest;
  }

  async #signedBytes(): Promise<Uint8Array> {
    this.#signature ??= await sign(this.#context, this.#digest, "transaction");
    return toBinary(
      SignedTransactionSchema,
      create(SignedTransactionSchema, { transaction: this.#bytes, signature: this.#signature }),
    );
  }

  /** Submits the transaction for ordering; returns once it has its place in the stream. */
  async submit(options?: CallOptions): Promise<Commit> {
    const clients = this.#context.clients;
    const transaction = await this.#signedBytes();
    try {
      await clients.gateway.submit({ transaction }, callOptions(options, clients.timeouts.submitMs));
    } catch (cause) {
      throw new SubmitError("submit", { url: clients.url, transactionId: this.#transactionId, cause });
    }
    return new Commit(clients, this.#transactionId);
  }

  /**
   * Submits the transaction and, in the same call, waits until it is validated or
   * durable (`options.wait`, default `"durable"`); returns its status, valid or not. One
   * round trip instead of {@link Transaction.submit} then {@link Commit.getStatus}.
   * Throws `SubmitError` when the node refuses it or the call fails (then, as with a
   * failed status call, its outcome is unknown: {@link Gateway.newCommit} asks again).
   */
  async submitAndWait(options?: CommitStatusOptions): Promise<Status> {
    const clients = this.#context.clients;
    const transaction = await this.#signedBytes();
    const waitFor = options?.wait === "validated" ? TxPhase.VALIDATED : TxPhase.COMMITTED;
    const context = { url: clients.url, transactionId: this.#transactionId };
    let response;
    try {
      response = await clients.gateway.submit(
        { transaction, waitFor },
        callOptions(options, clients.timeouts.commitStatusMs),
      );
    } catch (cause) {
      throw new SubmitError("submit", { ...context, cause });
    }
    if (response.status === undefined) {
      const cause = new Error("the node answered Submit without the status asked for (a node older than this SDK?)");
      throw new SubmitError("submit", { ...context, cause });
    }
    return toStatus(response.status);
  }
}

/** Options of {@link Commit.getStatus}. */
export interface CommitStatusOptions extends CallOptions {
  /** How far the transaction must get; default `"durable"`. */
  wait?: CommitWait;
}

/** A submitted transaction, whose outcome {@link Commit.getStatus} waits for. */
export class Commit {
  readonly #clients: Clients;
  readonly #transactionId: string;

  /** @internal Use `Transaction.submit` or `Gateway.newCommit`. */
  constructor(clients: Clients, id: string) {
    this.#clients = clients;
    this.#transactionId = id;
  }

  /** The transaction's id. */
  getTransactionId(): string {
    return this.#transactionId;
  }

  /**
   * Waits until the transaction is validated or durable (`options.wait`) on the node and
   * returns its status, valid or not (see `Status.successful`).
   */
  async getStatus(options?: CommitStatusOptions): Promise<Status> {
    const clients = this.#clients;
    const waitFor = options?.wait === "validated" ? TxPhase.VALIDATED : TxPhase.COMMITTED;
    try {
      const response = await clients.gateway.commitStatus(
        { txId: this.#transactionId, waitFor },
        callOptions(options, clients.timeouts.commitStatusMs),
      );
      return toStatus(response);
    } catch (cause) {
      throw new CommitStatusError("commit status", { url: clients.url, transactionId: this.#transactionId, cause });
    }
  }
}

/** A `Status` from the node's answer. */
export function toStatus(response: CommitStatusResponse): Status {
  return {
    transactionId: response.txId,
    code: response.code,
    codeName: validationCodeName(response.code),
    successful: response.code === ValidationCode.VALID,
    seq: response.seq,
    blockNumber: response.block,
    phase: response.phase === TxPhase.COMMITTED ? "durable" : "validated",
    timestampMs: response.timestampMs,
  };
}

/** Throws a {@link CommitError} unless `status` is valid. */
export function checkStatus(status: Status): Status {
  if (!status.successful) throw new CommitError(status);
  return status;
}

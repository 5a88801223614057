/**
 * Typed errors, as fabric-gateway's: an error says which step failed (endorse, submit,
 * commit status, commit), for which transaction, with the node's own message and the
 * stable error name the node puts in the `runnel-error-code` header (docs/api.md).
 * A call that never reached the node says which URL could not be reached.
 */

import { Code, ConnectError } from "@connectrpc/connect";
import { ValidationCode } from "./gen/runnel/v1/api_pb.js";

/** The name of a validation code, as Fabric names it: `"VALID"`, `"MVCC_READ_CONFLICT"`, ... */
export type ValidationCodeName = Exclude<keyof typeof ValidationCode, number>;

/** The name of a validation code number (`"UNKNOWN(n)"` for a number this SDK does not know). */
export function validationCodeName(code: number): string {
  const name: unknown = (ValidationCode as unknown as Record<number, string>)[code];
  return typeof name === "string" ? name : `UNKNOWN(${code})`;
}

/** The response header that names a node error. */
export const ERROR_CODE_HEADER = "runnel-error-code";
/** The response header that holds the validation code a node error amounts to. */
export const VALIDATION_CODE_HEADER = "runnel-validation-code";
/** The response header that names the organisation an endorsement failure is about. */
export const ERROR_ORG_HEADER = "runnel-error-org";

/** What {@link GatewayError} is made from. */
export interface GatewayErrorDetails {
  /** The node's URL. */
  url: string;
  /** The transaction concerned, when there is one. */
  transactionId?: string;
  /** The error underneath (a `ConnectError` for a failed call). */
  cause: unknown;
}

/**
 * A call to the node failed. `grpcCode` tells what to do about it (retry on
 * `UNAVAILABLE`, ...), `errorName` which error the node meant, `message` what happened.
 */
export class GatewayError extends Error {
  /** The gRPC status code (`@connectrpc/connect`'s `Code`); `Code.Unknown` if none. */
  readonly grpcCode: Code;
  /** The node's stable error name (`"CONTRACT_ERROR"`, ...); undefined if the call never reached it. */
  readonly errorName: string | undefined;
  /** The validation code the error amounts to (`"DUPLICATE_TXID"`, ...), when it does. */
  readonly validationCode: string | undefined;
  /**
   * The organisation an endorsement failure is about, when the gateway asked another
   * organisation's peers: `ENDORSER_UNAVAILABLE` (none of its peers answered),
   * `ENDORSEMENT_REFUSED` (its peer refused), `ENDORSEMENT_MISMATCH` (its peer endorsed
   * another payload).
   */
  readonly organization: string | undefined;
  /** The node's own message (for a contract's error, it holds the contract's message). */
  readonly nodeMessage: string;
  /** The transaction concerned, when there is one. */
  readonly transactionId: string | undefined;
  /** The URL of the node called. */
  readonly url: string;
  /** Whether the call failed to reach the node at all (refused, reset, not a Runnel node). */
  readonly unreachable: boolean;

  /** @param step - what failed, for the message: "endorse", "submit", ... */
  constructor(step: string, details: GatewayErrorDetails) {
    const connect = ConnectError.from(details.cause);
    const errorName = connect.metadata.get(ERROR_CODE_HEADER) ?? undefined;
    const validationCode = connect.metadata.get(VALIDATION_CODE_HEADER) ?? undefined;
    const unreachable =
      errorName === undefined &&
      (connect.code === Code.Unavailable || connect.code === Code.Unknown || connect.code === Code.Internal);
    const tx = details.transactionId === undefined ? "" : ` of transaction ${details.transactionId}`;
    const why = unreachable
      ? `cannot reach the node at ${details.url}: ${connect.rawMessage || Code[connect.code]}`
      : connect.rawMessage;
    super(`${step}${tx} failed: ${why}`, { cause: details.cause });
    this.name = new.target.name;
    this.grpcCode = callCode(connect);
    this.errorName = errorName;
    this.validationCode = validationCode;
    this.organization = connect.metadata.get(ERROR_ORG_HEADER) ?? undefined;
    this.nodeMessage = connect.rawMessage;
    this.transactionId = details.transactionId;
    this.url = details.url;
    this.unreachable = unreachable;
  }
}

/**
 * The gRPC code a call ended with. A node answers a call whose deadline (`timeoutMs`) ran
 * out on its side with CANCELLED "Timeout expired" (its gRPC library's way), where gRPC
 * says DEADLINE_EXCEEDED, racing the client's own deadline: either way the call timed out.
 */
function callCode(connect: ConnectError): Code {
  const serverDeadline = connect.code === Code.Canceled && connect.rawMessage === "Timeout expired";
  return serverDeadline ? Code.DeadlineExceeded : connect.code;
}

/** Evaluating a proposal failed: the contract's error, a missing contract, the node down, ... */
export class EvaluateError extends GatewayError {}

/** Endorsing a proposal failed: the contract's error, no endorsers for its policy, ... */
export class EndorseError extends GatewayError {}

/** Submitting an endorsed transaction for ordering failed. */
export class SubmitError extends GatewayError {}

/** Asking for a transaction's commit status failed (its outcome is unknown, not invalid). */
export class CommitStatusError extends GatewayError {}

/** A query, stream or admin call failed. */
export class QueryError extends GatewayError {}

/** What {@link TransactionMismatchError} is made from. */
export interface TransactionMismatchDetails {
  /** The step that was given the transaction: "endorse", "deploy", "upgrade", "transaction". */
  step: string;
  /** The node's URL; empty for bytes handed to `Gateway.newTransaction`. */
  url: string;
  /** The id of the proposal the client sent (or, for bytes given offline, the one embedded). */
  transactionId: string;
  /** What differs, for the message. */
  reason: string;
}

/**
 * The transaction a node returned for signing is not the one the client asked for: it
 * embeds another proposal or another signature of it, answers with another id, or carries
 * a payload endorsed for another proposal. Nothing was signed or submitted. A node that
 * answers so is broken or hostile; retrying against it is pointless.
 */
export class TransactionMismatchError extends Error {
  /** Always `"TRANSACTION_MISMATCH"`. */
  readonly code = "TRANSACTION_MISMATCH";
  /** The step that was given the transaction: "endorse", "deploy", "upgrade", "transaction". */
  readonly step: string;
  /** The node's URL; empty for bytes handed to `Gateway.newTransaction`. */
  readonly url: string;
  /** The id of the proposal the client sent. */
  readonly transactionId: string;
  /** What differs. */
  readonly reason: string;

  constructor(details: TransactionMismatchDetails) {
    const from = details.url === "" ? "" : ` from ${details.url}`;
    super(
      `${details.step} of transaction ${details.transactionId}: refused to sign the transaction${from}: ${details.reason}`,
    );
    this.name = "TransactionMismatchError";
    this.step = details.step;
    this.url = details.url;
    this.transactionId = details.transactionId;
    this.reason = details.reason;
  }
}

/** The status of a committed transaction, as {@link Commit.getStatus} returns it. */
export interface Status {
  /** The transaction's id, lowercase hex. */
  readonly transactionId: string;
  /** Its validation code number (`ValidationCode`). */
  readonly code: ValidationCode;
  /** The validation code's name: `"VALID"`, `"MVCC_READ_CONFLICT"`, ... */
  readonly codeName: string;
  /** Whether it is valid (its writes are in the state). */
  readonly successful: boolean;
  /** Its place in the ordered stream. */
  readonly seq: bigint;
  /** The sealed block holding it; 0n while none does yet. */
  readonly blockNumber: bigint;
  /** Whether it is durable on the node (`"durable"`) or only validated (`"validated"`). */
  readonly phase: "validated" | "durable";
  /** The orderer's clock when it ordered the transaction, Unix milliseconds. */
  readonly timestampMs: bigint;
}

/**
 * A transaction was ordered but is invalid: it is recorded in the ledger with its
 * validation code (`code`, e.g. `"MVCC_READ_CONFLICT"`), and its writes were not applied.
 */
export class CommitError extends Error {
  /** The transaction's id. */
  readonly transactionId: string;
  /** The validation code's name: `"MVCC_READ_CONFLICT"`, `"ENDORSEMENT_POLICY_FAILURE"`, ... */
  readonly code: string;
  /** The status the node reported. */
  readonly status: Status;

  /** @param status - the invalid transaction's status. */
  constructor(status: Status) {
    super(`transaction ${status.transactionId} failed to commit with status code ${status.code} (${status.codeName})`);
    this.name = "CommitError";
    this.transactionId = status.transactionId;
    this.code = status.codeName;
    this.status = status;
  }
}

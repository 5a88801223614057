/**
 * Decoding a transaction's exact bytes (an encoded `SignedTransaction`) into what a list
 * shows: the contract, function and arguments of its proposal. The node sends these bytes
 * with every committed transaction; decoding here spares a query per row.
 */

import { fromBinary } from "@bufbuild/protobuf";
import { txProto } from "@runnel/sdk";
import { bytesPreview, count } from "./format";

/** A transaction's proposal, decoded. */
export interface ProposalSummary {
  readonly contract: string;
  readonly fn: string;
  /** Each argument as text, or `0x…` hex when binary. */
  readonly args: readonly string[];
}

/** What a transaction that does not decode (BAD_PAYLOAD) shows. */
export const UNDECODABLE: ProposalSummary = { contract: "?", fn: "?", args: [] };

/** The proposal inside an encoded `SignedTransaction`; {@link UNDECODABLE} when it does not decode. */
export function decodeProposal(signedTransaction: Uint8Array): ProposalSummary {
  try {
    const signed = fromBinary(txProto.SignedTransactionSchema, signedTransaction);
    const transaction = fromBinary(txProto.TransactionSchema, signed.transaction);
    const proposal = fromBinary(txProto.ProposalSchema, transaction.proposal?.proposal ?? new Uint8Array());
    if (proposal.contract === LIFECYCLE && proposal.args.length === 1) {
      return { contract: proposal.contract, fn: proposal.function, args: lifecycleArgs(proposal.args[0] ?? new Uint8Array()) };
    }
    return { contract: proposal.contract, fn: proposal.function, args: proposal.args.map((arg) => bytesPreview(arg, ARG_CHARS_MAX)) };
  } catch {
    return UNDECODABLE;
  }
}

/** The lifecycle namespace: its deploy and upgrade take one encoded `DeployRequest`. */
const LIFECYCLE = "_lifecycle";
/** What a list shows of one argument at most. */
const ARG_CHARS_MAX = 80;

/** A deploy's or upgrade's argument as its name, version and module size, not 100 KB of hex. */
function lifecycleArgs(arg: Uint8Array): string[] {
  try {
    const request = fromBinary(txProto.DeployRequestSchema, arg);
    return [request.name, request.version, `${count(request.code.length)} bytes of Wasm`];
  } catch {
    return [bytesPreview(arg, ARG_CHARS_MAX)];
  }
}

/** A contract definition stored in `_lifecycle` (a version of a contract), decoded. */
export function decodeContractDefinition(bytes: Uint8Array): txProto.ContractDefinition | undefined {
  try {
    return fromBinary(txProto.ContractDefinitionSchema, bytes);
  } catch {
    return undefined;
  }
}

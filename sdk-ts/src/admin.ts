/**
 * Contract lifecycle, organisation by organisation: each organisation's admin approves a
 * contract definition for its organisation ({@link approveContract}); once the
 * organisations the lifecycle policy needs (by default a majority) have approved it, an
 * admin commits it ({@link deployContract}, which is its own organisation's approval
 * too). Each is a `_lifecycle` transaction like any other, signed by the admin (the
 * gateway's identity must be an admin's) and endorsed through the gateway by peers.
 */

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { argumentBytes, toHex, type Argument } from "./bytes.js";
import { callOptions, type CallOptions } from "./client.js";
import { EndorseError } from "./errors.js";
import {
  ContractDefinitionSchema,
  DeployRequestSchema,
  SignedProposalSchema,
  type ContractDefinition as ContractDefinitionMessage,
} from "./gen/runnel/v1/transaction_pb.js";
import type { ContractContext } from "./contract.js";
import { checkStatus, Transaction, type CommitWait } from "./proposal.js";
import type { ContractDefinition } from "./query.js";
import { encodeProposal, newProposalMessage, proposalMessage, transactionId } from "./tx.js";
import type { Status } from "./errors.js";

/** The namespace of contract definitions and lifecycle calls. */
export const LIFECYCLE_NAMESPACE = "_lifecycle";

/** What to deploy. */
export interface DeployOptions extends CallOptions {
  /** The contract's name (its namespace). */
  name: string;
  /** The Wasm module. */
  code: Uint8Array;
  /** The author's version label; default "1". */
  version?: string;
  /** The endorsement policy, Fabric syntax; default: a majority of the organisations' peers. */
  policy?: string;
  /** A function to run in the same transaction. */
  initFunction?: string;
  /** Its arguments. */
  initArgs?: Argument[];
  /** Upgrade a deployed contract instead; default false. */
  upgrade?: boolean;
  /** {@link approveContract} only: the sequence approved; default the next one. */
  sequence?: bigint;
  /** How far the transaction must get; default `"durable"`. */
  commitWait?: CommitWait;
}

/** What a deployment put in force, or an approval approved. */
export interface Deployed {
  /** The contract definition now in force (approved, for an approval). */
  readonly definition: ContractDefinition;
  /** The status of the lifecycle transaction. */
  readonly status: Status;
}

/**
 * Commits (deploys or upgrades) a contract definition, signed by the context's (admin)
 * identity, once enough organisations approved it; waits for it to commit. Fails with
 * `NOT_APPROVED`, naming the organisations whose approval is missing, before that.
 */
export async function deployContract(context: ContractContext, options: DeployOptions): Promise<Deployed> {
  return lifecycleCall(context, options.upgrade === true ? "upgrade" : "deploy", options);
}

/** Approves a contract definition for the context's (admin) identity's organisation; waits for it to commit. */
export async function approveContract(context: ContractContext, options: DeployOptions): Promise<Deployed> {
  return lifecycleCall(context, "approve", options);
}

async function lifecycleCall(
  context: ContractContext,
  fn: "approve" | "deploy" | "upgrade",
  options: DeployOptions,
): Promise<Deployed> {
  const clients = context.clients;
  const request = create(DeployRequestSchema, {
    name: options.name,
    version: options.version ?? "1",
    policy: options.policy ?? "",
    code: options.code,
    initFunction: options.initFunction ?? "",
    initArgs: (options.initArgs ?? []).map(argumentBytes),
    sequence: options.sequence ?? 0n,
  });
  const message = newProposalMessage({
    channel: context.channel,
    contract: LIFECYCLE_NAMESPACE,
    function: fn,
    args: [toBinary(DeployRequestSchema, request)],
    creator: context.identity.credentials,
  });
  const bytes = encodeProposal(message);
  const id = await transactionId(message.nonce, message.creator);
  if (context.signer === undefined) throw new TypeError(`${fn} of a contract needs a signer`);
  const signature = await context.signer(await proposalMessage(bytes));
  const proposal = create(SignedProposalSchema, { proposal: bytes, signature });
  let response: { txId: string; transaction: Uint8Array; definition?: ContractDefinitionMessage };
  try {
    const call = callOptions(options, clients.timeouts.endorseMs);
    if (fn === "approve") {
      const endorsed = await clients.gateway.endorse({ proposal, endorsingOrgs: [] }, call);
      response = {
        txId: endorsed.txId,
        transaction: endorsed.transaction,
        definition: fromBinary(ContractDefinitionSchema, endorsed.result),
      };
    } else {
      response = fn === "upgrade" ? await clients.admin.upgradeContract({ proposal }, call) : await clients.admin.deployContract({ proposal }, call);
    }
  } catch (cause) {
    throw new EndorseError(fn, { url: clients.url, transactionId: id, cause });
  }
  // The admin signs only the lifecycle transaction it proposed (as for any endorsement).
  const transaction = await Transaction.endorsed(
    context,
    fn,
    { proposal: bytes, signature, transactionId: id },
    { txId: response.txId, transaction: response.transaction },
  );
  const commit = await transaction.submit(options);
  const status = checkStatus(await commit.getStatus({ ...options, wait: options.commitWait ?? "durable" }));
  const definition = response.definition;
  return {
    status,
    definition: {
      name: definition?.name ?? options.name,
      version: definition?.version ?? "",
      sequence: definition?.sequence ?? 0n,
      codeHash: toHex(definition?.codeHash ?? new Uint8Array()),
      policy: definition?.policy ?? "",
    },
  };
}

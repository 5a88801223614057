/**
 * Contract lifecycle: deploy or upgrade a contract. It is a `_lifecycle` transaction
 * like any other, which an organisation's admin signs (the gateway's identity must be
 * an admin's); the node endorses it with the organisations' admins.
 */

import { create, toBinary } from "@bufbuild/protobuf";
import { argumentBytes, toHex, type Argument } from "./bytes.js";
import { callOptions, type CallOptions } from "./client.js";
import { EndorseError } from "./errors.js";
import { DeployRequestSchema, SignedProposalSchema } from "./gen/runnel/v1/transaction_pb.js";
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
  /** How far the transaction must get; default `"durable"`. */
  commitWait?: CommitWait;
}

/** What a deployment put in force. */
export interface Deployed {
  /** The contract definition now in force. */
  readonly definition: ContractDefinition;
  /** The status of the lifecycle transaction. */
  readonly status: Status;
}

/** Deploys or upgrades a contract, signed by the context's (admin) identity; waits for it to commit. */
export async function deployContract(context: ContractContext, options: DeployOptions): Promise<Deployed> {
  const clients = context.clients;
  const request = create(DeployRequestSchema, {
    name: options.name,
    version: options.version ?? "1",
    policy: options.policy ?? "",
    code: options.code,
    initFunction: options.initFunction ?? "",
    initArgs: (options.initArgs ?? []).map(argumentBytes),
  });
  const message = newProposalMessage({
    channel: context.channel,
    contract: LIFECYCLE_NAMESPACE,
    function: options.upgrade === true ? "upgrade" : "deploy",
    args: [toBinary(DeployRequestSchema, request)],
    creator: context.identity.credentials,
  });
  const bytes = encodeProposal(message);
  const id = await transactionId(message.nonce, message.creator);
  if (context.signer === undefined) throw new TypeError("deploying a contract needs a signer");
  const signature = await context.signer(await proposalMessage(bytes));
  const proposal = create(SignedProposalSchema, { proposal: bytes, signature });
  let response;
  try {
    const call = callOptions(options, clients.timeouts.endorseMs);
    response =
      options.upgrade === true
        ? await clients.admin.upgradeContract({ proposal }, call)
        : await clients.admin.deployContract({ proposal }, call);
  } catch (cause) {
    throw new EndorseError(options.upgrade === true ? "upgrade" : "deploy", { url: clients.url, transactionId: id, cause });
  }
  // The admin signs only the lifecycle transaction it proposed (as for any endorsement).
  const transaction = await Transaction.endorsed(
    context,
    options.upgrade === true ? "upgrade" : "deploy",
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

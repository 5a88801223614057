/**
 * Point reads of the ledger and the state: blocks, transactions, keys, key histories,
 * contracts, the network. Reads are not signed (docs/api.md).
 */

import { argumentBytes, toHex, type Argument } from "./bytes.js";
import { callOptions, type CallOptions, type Clients } from "./client.js";
import { QueryError, validationCodeName } from "./errors.js";
import { toBlock, type Block } from "./events.js";
import type { InclusionProof } from "./proof.js";
import { TxPhase, type GetNetworkInfoResponse, type GetTransactionResponse } from "./gen/runnel/v1/api_pb.js";

/** A key's value as of the last validated transaction. */
export interface KeyValue {
  /** Whether the key exists. */
  readonly found: boolean;
  /** Its value (empty when not found). */
  readonly value: Uint8Array;
  /** The seq of the transaction that last wrote it; undefined when not found. */
  readonly version: bigint | undefined;
  /** The validated height the read was made at. */
  readonly height: bigint;
}

/** One committed write of a key. */
export interface KeyModification {
  /** The seq of the transaction that wrote it. */
  readonly seq: bigint;
  /** That transaction's id. */
  readonly transactionId: string;
  /** Whether the write deleted the key. */
  readonly isDelete: boolean;
  /** The value written (empty for a delete). */
  readonly value: Uint8Array;
}

/** A contract definition in force. */
export interface ContractDefinition {
  readonly name: string;
  readonly version: string;
  /** 1 for the first definition, +1 per upgrade. */
  readonly sequence: bigint;
  /** Hex sha256 of the Wasm module. */
  readonly codeHash: string;
  /** The endorsement policy, Fabric syntax. */
  readonly policy: string;
}

/** A transaction in full, as `Query.getTransaction` returns it (the node's message, decoded). */
export type TransactionDetail = GetTransactionResponse & {
  /** The validation code's name. */
  readonly codeName: string;
  /** `"durable"` or `"validated"`. */
  readonly phaseName: "validated" | "durable";
};

/**
 * The network and the node's heights, as `Query.getNetworkInfo` returns it; `peers` are
 * the other organisations' peers as this node last checked them (every two seconds).
 */
export type NetworkInfo = GetNetworkInfoResponse;

/** A peer of an organisation in the network definition. */
export interface NetworkPeerDefinition {
  readonly name: string;
  /** Its API, `https://host:port`. */
  readonly endpoint: string;
}

/** An organisation of the network. */
export interface OrgDefinition {
  readonly name: string;
  /** Its CA's certificate, PEM. */
  readonly ca: string;
  /** Its TLS CA's certificate, PEM. */
  readonly tlsCa: string;
  readonly peers: readonly NetworkPeerDefinition[];
  /** Its revoked identities, by key: `ed25519:` and the public key in hex. */
  readonly revoked: readonly string[];
}

/** The network definition in force, as `Query.getNetworkDefinition` returns it. */
export interface NetworkDefinition {
  readonly channel: string;
  /** 0 for the genesis definition; +1 per configuration update. */
  readonly sequence: bigint;
  /** The seq of the update that wrote it; 0n for the genesis one. */
  readonly writtenAtSeq: bigint;
  readonly orgs: readonly OrgDefinition[];
  readonly orderers: readonly { readonly name: string; readonly org: string; readonly endpoint: string }[];
  /** Whose approvals put a contract definition in force. */
  readonly lifecyclePolicy: string;
  /** Whose signatures change this definition. */
  readonly configPolicy: string;
}

/** One organisation's approval of one definition of a contract. */
export interface ContractApproval {
  readonly sequence: bigint;
  readonly org: string;
  /** Hex sha256 of the definition approved. */
  readonly definitionHash: string;
}

/** A contract's definition in force and the approvals recorded for it. */
export interface ContractApprovals {
  /** The definition in force; undefined before the first commit. */
  readonly definition: ContractDefinition | undefined;
  /** Hex sha256 of the definition in force: what its approvals hold. */
  readonly definitionHash: string;
  /** By sequence, then organisation. */
  readonly approvals: readonly ContractApproval[];
}

/** Options of a key history page. */
export interface KeyHistoryOptions extends CallOptions {
  /** Only writes at seqs below this (page on with the last entry's seq); default: from the newest. */
  beforeSeq?: bigint;
  /** At most this many entries; default 100, at most 1000. */
  limit?: number;
}

/** Options of a contract list page. */
export interface ListContractsOptions extends CallOptions {
  /** Page on after this name. */
  startAfter?: string;
  /** At most this many; default 100, at most 1000. */
  limit?: number;
}

/** The `Query` service, as `Gateway.getQuery()` returns it. */
export class Query {
  readonly #clients: Clients;

  /** @internal Use `Gateway.getQuery`. */
  constructor(clients: Clients) {
    this.#clients = clients;
  }

  async #call<T>(what: string, call: (ms: number) => Promise<T>): Promise<T> {
    try {
      return await call(this.#clients.timeouts.queryMs);
    } catch (cause) {
      throw new QueryError(what, { url: this.#clients.url, cause });
    }
  }

  /** A sealed block with its transactions (1 for the first). */
  async getBlock(number: bigint, options?: CallOptions): Promise<Block> {
    const response = await this.#call(`block ${number}`, (ms) =>
      this.#clients.query.getBlock({ number }, callOptions(options, ms)),
    );
    if (response.block === undefined) {
      throw new TypeError(`the node sent no block for number ${number}`);
    }
    return toBlock(response.block);
  }

  /** A transaction in full: proposal, read/write sets, events, endorsements, status. */
  async getTransaction(transactionId: string, options?: CallOptions): Promise<TransactionDetail> {
    const response = await this.#call(`transaction ${transactionId}`, (ms) =>
      this.#clients.query.getTransaction({ txId: transactionId }, callOptions(options, ms)),
    );
    return Object.assign(response, {
      codeName: validationCodeName(response.code),
      phaseName: response.phase === TxPhase.COMMITTED ? ("durable" as const) : ("validated" as const),
    });
  }

  /**
   * The proof that a sealed transaction is in its block; check it with
   * `verifyInclusionProof(proof, transactionId, { trustedCas })`, which trusts only what
   * an orderer of the network's CAs signed. Fails with
   * NOT_FOUND (`TX_NOT_SEALED`) until the transaction's block is sealed.
   */
  async getInclusionProof(transactionId: string, options?: CallOptions): Promise<InclusionProof> {
    const response = await this.#call(`inclusion proof of ${transactionId}`, (ms) =>
      this.#clients.query.getInclusionProof({ txId: transactionId }, callOptions(options, ms)),
    );
    if (response.block === undefined || response.proof === undefined) {
      throw new TypeError(`the node sent an incomplete inclusion proof for ${transactionId}`);
    }
    return {
      block: toBlock(response.block),
      transaction: response.transaction,
      seq: response.proof.seq,
      timestampMs: response.proof.timestampMs,
      path: response.proof.path,
    };
  }

  /** A key's value and version in `namespace` (a contract's name, or `"_lifecycle"`). */
  async getKey(namespace: string, key: Argument, options?: CallOptions): Promise<KeyValue> {
    const response = await this.#call(`key of ${namespace}`, (ms) =>
      this.#clients.query.getKey({ namespace, key: argumentBytes(key) }, callOptions(options, ms)),
    );
    return {
      found: response.found,
      value: response.value,
      version: response.found ? response.version?.seq : undefined,
      height: response.height,
    };
  }

  /** A key's committed writes, newest first, one page. */
  async getKeyHistory(namespace: string, key: Argument, options: KeyHistoryOptions = {}): Promise<KeyModification[]> {
    const response = await this.#call(`key history of ${namespace}`, (ms) =>
      this.#clients.query.getKeyHistory(
        {
          namespace,
          key: argumentBytes(key),
          beforeSeq: options.beforeSeq ?? 0n,
          limit: options.limit ?? 0,
        },
        callOptions(options, ms),
      ),
    );
    return response.entries.map((entry) => ({
      seq: entry.seq,
      transactionId: entry.txId,
      isDelete: entry.isDelete,
      value: entry.value,
    }));
  }

  /** The contracts deployed, by name, one page. */
  async listContracts(options: ListContractsOptions = {}): Promise<ContractDefinition[]> {
    const response = await this.#call("contracts", (ms) =>
      this.#clients.query.listContracts(
        { startAfter: options.startAfter ?? "", limit: options.limit ?? 0 },
        callOptions(options, ms),
      ),
    );
    return response.contracts.map((definition) => ({
      name: definition.name,
      version: definition.version,
      sequence: definition.sequence,
      codeHash: toHex(definition.codeHash),
      policy: definition.policy,
    }));
  }

  /** The network (channel, organisations) and the node's heights and limits. */
  async getNetworkInfo(options?: CallOptions): Promise<NetworkInfo> {
    return this.#call("network info", (ms) => this.#clients.query.getNetworkInfo({}, callOptions(options, ms)));
  }

  /**
   * The network definition in force (or, with `genesis`, the genesis one) as the node
   * sends it: its canonical bytes, its sequence and the seq of the update that wrote it
   * (0n for the genesis one). What `TrustedMembership.fetch` hashes and checks.
   */
  async getNetworkDefinitionBytes(
    options: CallOptions & { genesis?: boolean } = {},
  ): Promise<{ definition: Uint8Array; sequence: bigint; version: bigint }> {
    const genesis = options.genesis ?? false;
    const response = await this.#call(genesis ? "genesis network definition" : "network definition", (ms) =>
      this.#clients.query.getNetworkDefinition({ genesis }, callOptions(options, ms)),
    );
    if (genesis && (response.sequence !== 0n || response.version !== 0n)) {
      throw new TypeError(`the node sent a definition of sequence ${response.sequence} for the genesis one`);
    }
    return { definition: response.definition, sequence: response.sequence, version: response.version };
  }

  /** The network definition in force: organisations with their CAs and peers, orderers, policies. */
  async getNetworkDefinition(options?: CallOptions): Promise<NetworkDefinition> {
    const response = await this.#call("network definition", (ms) =>
      this.#clients.query.getNetworkDefinition({}, callOptions(options, ms)),
    );
    const json = JSON.parse(new TextDecoder().decode(response.definition)) as {
      channel: string;
      orgs: { name: string; ca: string; tls_ca: string; peers?: NetworkPeerDefinition[]; revoked?: string[] }[];
      orderers?: { name: string; org: string; endpoint: string }[];
      lifecycle_policy: string;
      config_policy: string;
    };
    return {
      channel: json.channel,
      sequence: response.sequence,
      writtenAtSeq: response.version,
      orgs: json.orgs.map((org) => ({
        name: org.name,
        ca: org.ca,
        tlsCa: org.tls_ca,
        peers: org.peers ?? [],
        revoked: org.revoked ?? [],
      })),
      orderers: json.orderers ?? [],
      lifecyclePolicy: json.lifecycle_policy,
      configPolicy: json.config_policy,
    };
  }

  /** Contract `name`'s definition in force and which organisations approved which of its definitions. */
  async getContractApprovals(name: string, options?: CallOptions): Promise<ContractApprovals> {
    const response = await this.#call("contract approvals", (ms) =>
      this.#clients.query.getContractApprovals({ name }, callOptions(options, ms)),
    );
    const definition = response.definition;
    return {
      definition:
        definition === undefined
          ? undefined
          : {
              name: definition.name,
              version: definition.version,
              sequence: definition.sequence,
              codeHash: toHex(definition.codeHash),
              policy: definition.policy,
            },
      definitionHash: toHex(response.definitionHash),
      approvals: response.approvals.map((approval) => ({
        sequence: approval.sequence,
        org: approval.org,
        definitionHash: toHex(approval.definitionHash),
      })),
    };
  }

  /**
   * A SHA-256 over the node's whole durable state (`hash`, hex), the committed `height`
   * it is of, and how many `keys` the state holds. Commits wait while it is computed.
   */
  async getStateHash(options?: CallOptions): Promise<{ height: bigint; hash: string; keys: bigint }> {
    const response = await this.#call("state hash", (ms) =>
      this.#clients.query.getStateHash({}, callOptions(options, ms)),
    );
    return { height: response.height, hash: toHex(response.hash), keys: response.keys };
  }
}

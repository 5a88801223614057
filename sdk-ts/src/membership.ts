/**
 * The network's membership, followed from a pinned genesis without trusting the node that
 * answers: who may sign each seal, which CAs and revocations hold, at every seq.
 *
 * The caller pins the genesis network definition by its hash (sha256 of its canonical
 * bytes, which `runnel init` and `runnel config genesis-hash` print). From the node it
 * asks, {@link TrustedMembership.fetch} reads the genesis definition
 * (`GetNetworkDefinition`, `genesis`), the `_config` updates (`GetKeyHistory` of
 * `_config`/`network`), and each update's transaction with its inclusion proof
 * (`GetInclusionProof`, `GetTransaction`). {@link verifyConfigHistory} then checks, as a
 * peer's validator does (node/ledger/src/netconfig.rs `valid_update`), with each
 * definition judged by the one in force before it, never by itself:
 *
 * - the genesis bytes hash to the pinned hash;
 * - each update is a `_config` `update` of the same channel whose payload reads the key at
 *   the version in force and writes the next definition (the next sequence), which is
 *   what the key's history holds;
 * - its proposer is an admin whose signature over the transaction verifies, and the
 *   admins who signed its payload (valid at the orderer's time under the CAs in force,
 *   not revoked, one per key) meet the `config_policy` in force (policy.ts);
 * - it is at its seq in a block whose seal verifies under the definition in force at the
 *   block's last seq (the node's rule, node/ledger/src/seal_trust.rs), with the
 *   quorum of that definition.
 *
 * What it cannot see: an update the node leaves out of the history altogether (the
 * membership is then the one before it, as far as the node's answers go). Each update
 * must read the version its predecessor wrote, so a node can drop only the newest ones;
 * ask more than one node, or compare {@link TrustedMembership.current}'s sequence with
 * what the network's admins say. It does not repeat every check of the node's
 * `check_next` (it keeps the ordering protocol and a BFT cluster's members, and needs the
 * next sequence and the channel); a definition the admins signed is taken as they signed
 * it.
 */

import { fromBinary } from "@bufbuild/protobuf";
import { toHex, utf8 } from "./bytes.js";
import { sha256 } from "./crypto.js";
import { ValidationCode } from "./gen/runnel/v1/api_pb.js";
import {
  ProposalSchema,
  ResponsePayloadSchema,
  SignedTransactionSchema,
  TransactionSchema,
  type ResponsePayload,
  type SignedTransaction,
  type Transaction,
} from "./gen/runnel/v1/transaction_pb.js";
import { parseTrustedCas, verifyIdentity, type TrustedCa } from "./msp.js";
import { Policy, PolicyError, type PolicySigner } from "./policy.js";
import { sealQuorum, verifyInclusionProof, type InclusionProof, type SealSigner } from "./proof.js";
import type { Query } from "./query.js";
import { endorsementMessage, transactionId as idOf, transactionMessage } from "./tx.js";
import { ED25519 } from "./x509.js";

/** The system namespace of the network's configuration. */
export const CONFIG_NAMESPACE = "_config";
/** The key every update writes the whole next definition under. */
export const NETWORK_KEY = "network";
/** The one `_config` function. */
export const CONFIG_UPDATE_FUNCTION = "update";

/** Most configuration updates a membership follows; past it, fetching refuses. */
export const CONFIG_UPDATES_MAX = 10_000;
/** Key-history entries asked for per page (the node's own maximum). */
const HISTORY_PAGE_MAX = 1000;
/**
 * Largest definition taken, in bytes: 64 organisations with their CAs, TLS CAs and peers
 * take well under 1 MiB.
 */
export const DEFINITION_BYTES_MAX = 4 << 20;
/** Most endorsements an update carries (the node's `ENDORSEMENTS_MAX`). */
export const ENDORSEMENTS_MAX = 64;
/** Times a fetch starts over when updates commit while it reads them. */
const FETCH_ATTEMPTS_MAX = 3;

/** Why a membership was refused: the rule that failed, as a stable code. */
export type MembershipErrorCode =
  /** The pinned hash is not 64 hex digits. */
  | "BAD_PINNED_HASH"
  /** The node's genesis definition does not hash to the pinned hash. */
  | "GENESIS_HASH_MISMATCH"
  /** A definition (genesis or written by an update) does not parse. */
  | "BAD_DEFINITION"
  /** An update is not the next one: its shape, channel, sequence, version read, or what it writes. */
  | "BAD_CONFIG_UPDATE"
  /** An update's proposer or one of its admins' signatures does not verify. */
  | "BAD_CONFIG_SIGNATURE"
  /** The admins who signed an update do not meet the `config_policy` in force. */
  | "CONFIG_POLICY_NOT_MET"
  /** An update's transaction is not shown VALID at its seq under a seal that verifies. */
  | "CONFIG_UPDATE_NOT_SEALED"
  /** The node's answers disagree with each other (history, transactions, definition in force). */
  | "INCONSISTENT_ANSWERS"
  /** More than {@link CONFIG_UPDATES_MAX} updates. */
  | "TOO_MANY_CONFIG_UPDATES";

/** A membership could not be trusted: which rule failed, and for which update. */
export class MembershipError extends Error {
  readonly code: MembershipErrorCode;
  /** The sequence of the definition concerned (0n for the genesis one), when one is. */
  readonly sequence: bigint | undefined;
  /** The seq of the update concerned, when one is. */
  readonly seq: bigint | undefined;
  /** Why, in words. */
  readonly reason: string;

  constructor(code: MembershipErrorCode, reason: string, at: { sequence?: bigint; seq?: bigint } = {}) {
    const where = at.seq !== undefined ? ` (the update at seq ${at.seq})` : at.sequence !== undefined ? ` (definition ${at.sequence})` : "";
    super(`${code}: ${reason}${where}`);
    this.name = "MembershipError";
    this.code = code;
    this.sequence = at.sequence;
    this.seq = at.seq;
    this.reason = reason;
  }
}

/** An orderer a definition names. */
export interface OrdererDefinition {
  readonly name: string;
  readonly org: string;
  readonly endpoint: string;
  /** Its id in the ordering cluster; 0 for a solo orderer. */
  readonly raftId: bigint;
  /** Its Ed25519 key, hex; named for every orderer of a BFT cluster, else empty. */
  readonly key: string;
}

/** An organisation a definition names. */
export interface MemberOrgDefinition {
  readonly name: string;
  /** Its CA's certificate, PEM. */
  readonly ca: string;
  /** Its TLS CA's certificate, PEM. */
  readonly tlsCa: string;
  readonly peers: readonly { readonly name: string; readonly endpoint: string }[];
  /** Its revoked identities: `ed25519:` and a public key in hex. */
  readonly revoked: readonly string[];
}

/** A network definition, decoded from its canonical bytes. */
export interface MemberDefinition {
  readonly channel: string;
  readonly sequence: bigint;
  readonly orgs: readonly MemberOrgDefinition[];
  readonly orderers: readonly OrdererDefinition[];
  readonly ordering: "raft" | "bft";
  readonly lifecyclePolicy: string;
  readonly configPolicy: string;
}

/** A definition in force from one seq on, with what a seal check needs of it. */
export interface DefinitionInForce {
  readonly definition: MemberDefinition;
  /** Its canonical bytes (what the update wrote, or the genesis). */
  readonly bytes: Uint8Array;
  /** The seq of the update that put it in force; 0n for the genesis one. */
  readonly fromSeq: bigint;
  /** That update's transaction id; empty for the genesis one. */
  readonly transactionId: string;
  /** Its organisations' CAs. */
  readonly cas: readonly TrustedCa[];
  /** Every revoked key of every organisation. */
  readonly revoked: readonly string[];
  /** The orderers that may sign a seal while it is in force (each with its key, when named). */
  readonly orderers: readonly SealSigner[];
  /** Distinct orderers a seal needs ({@link sealQuorum}). */
  readonly quorum: number;
}

/** One update as the node shows it, the evidence {@link verifyConfigHistory} checks. */
export interface ConfigUpdateEvidence {
  /** Its seq, as the key's history gives it. */
  readonly seq: bigint;
  /** Its transaction id, as the key's history gives it. */
  readonly transactionId: string;
  /** The value the history says it wrote. */
  readonly value: Uint8Array;
  /** The validation code the node reports for its transaction. */
  readonly code: ValidationCode;
  /** Its proof of inclusion: the transaction's bytes, its seq and timestamp, the sealed block. */
  readonly proof: InclusionProof;
}

/** What a node answers about the configuration, oldest update first. */
export interface ConfigHistory {
  /** The genesis definition's bytes. */
  readonly genesis: Uint8Array;
  /** Every update, oldest first. */
  readonly updates: readonly ConfigUpdateEvidence[];
  /** The definition the node says is in force, and the seq that wrote it (0n: genesis). */
  readonly inForce?: { readonly definition: Uint8Array; readonly version: bigint };
  /** The seq up to which the node had validated when it was asked: the membership covers it. */
  readonly validatedHeight: bigint;
}

/**
 * The definitions in force seq by seq, each checked from the pinned genesis on. Made by
 * {@link TrustedMembership.fetch} or {@link verifyConfigHistory}; give it to
 * `verifySeal`/`verifyInclusionProof` as `{ membership }`.
 */
export class TrustedMembership {
  /** The pinned genesis hash, lowercase hex. */
  readonly genesisHash: string;
  /** Every definition, oldest first; the first is the genesis one. */
  readonly definitions: readonly DefinitionInForce[];
  /**
   * The last seq whose definition this membership knows: the node's validated height when
   * asked (or the last update, if later). A seal over later seqs needs a fresh membership.
   */
  readonly coveredThrough: bigint;

  /** @internal Made by {@link verifyConfigHistory}. */
  constructor(genesisHash: string, definitions: readonly DefinitionInForce[], coveredThrough: bigint) {
    if (definitions.length === 0) throw new TypeError("a membership has at least its genesis definition");
    this.genesisHash = genesisHash;
    this.definitions = definitions;
    this.coveredThrough = coveredThrough;
  }

  /**
   * Reads the genesis definition and every `_config` update from the node `query` talks
   * to, and checks them from `genesisHash` on ({@link verifyConfigHistory}).
   *
   * @throws MembershipError naming the rule that failed; QueryError when a call fails.
   */
  static async fetch(query: Query, genesisHash: string): Promise<TrustedMembership> {
    checkPinnedHash(genesisHash);
    for (let attempt = 1; ; attempt += 1) {
      const history = await readConfigHistory(query);
      // Updates that commit while this reads are taken next time round: the newest entry
      // must still be the one read, so that no update up to the height read is missed.
      const newest = await query.getKeyHistory(CONFIG_NAMESPACE, NETWORK_KEY, { limit: 1 });
      const last = history.updates[history.updates.length - 1];
      const sealedPast = history.updates.some((u) => u.proof.block.lastSeq > history.validatedHeight);
      if ((newest[0]?.seq ?? 0n) === (last?.seq ?? 0n) && !sealedPast) return verifyConfigHistory(history, genesisHash);
      if (attempt === FETCH_ATTEMPTS_MAX) {
        throw new MembershipError("INCONSISTENT_ANSWERS", `the configuration kept changing over ${FETCH_ATTEMPTS_MAX} reads`);
      }
    }
  }

  /** The definition in force once `seq` is applied (0n: the genesis one). */
  at(seq: bigint): DefinitionInForce {
    let found = this.definitions[0]!;
    for (const entry of this.definitions) {
      if (entry.fromSeq <= seq) found = entry;
      else break;
    }
    return found;
  }

  /** Whether this membership knows the definition in force at `seq`. */
  covers(seq: bigint): boolean {
    return seq <= this.coveredThrough;
  }

  /** The newest definition. */
  get current(): DefinitionInForce {
    return this.definitions[this.definitions.length - 1]!;
  }
}

function checkPinnedHash(genesisHash: string): void {
  if (!/^[0-9a-fA-F]{64}$/.test(genesisHash)) {
    throw new MembershipError("BAD_PINNED_HASH", `the pinned genesis hash is not 64 hex digits: ${JSON.stringify(genesisHash.slice(0, 80))}`);
  }
}

/**
 * Everything {@link verifyConfigHistory} needs, as the node `query` talks to answers it:
 * the genesis definition, every update with its transaction's code and inclusion proof,
 * the definition in force and the validated height. Nothing in it is checked yet.
 */
export async function readConfigHistory(query: Query): Promise<ConfigHistory> {
  const info = await query.getNetworkInfo();
  const genesis = await query.getNetworkDefinitionBytes({ genesis: true });
  const entries = [];
  let beforeSeq = 0n;
  for (;;) {
    const page = await query.getKeyHistory(CONFIG_NAMESPACE, NETWORK_KEY, { beforeSeq, limit: HISTORY_PAGE_MAX });
    entries.push(...page);
    if (entries.length > CONFIG_UPDATES_MAX) {
      throw new MembershipError("TOO_MANY_CONFIG_UPDATES", `more than ${CONFIG_UPDATES_MAX} configuration updates`);
    }
    const oldest = page[page.length - 1];
    if (page.length < HISTORY_PAGE_MAX || oldest === undefined) break;
    beforeSeq = oldest.seq;
  }
  entries.reverse();
  const updates: ConfigUpdateEvidence[] = [];
  for (const entry of entries) {
    const [proof, detail] = await Promise.all([
      query.getInclusionProof(entry.transactionId),
      query.getTransaction(entry.transactionId),
    ]);
    if (entry.isDelete) {
      throw new MembershipError("BAD_CONFIG_UPDATE", "the history shows the definition deleted", { seq: entry.seq });
    }
    updates.push({ seq: entry.seq, transactionId: entry.transactionId, value: entry.value, code: detail.code, proof });
  }
  const inForce = await query.getNetworkDefinitionBytes();
  return {
    genesis: genesis.definition,
    updates,
    inForce: { definition: inForce.definition, version: inForce.version },
    validatedHeight: info.validatedHeight,
  };
}

/**
 * Checks what a node answered about the configuration (see the module doc) from the
 * pinned `genesisHash` on, and returns the membership it proves.
 *
 * @throws MembershipError naming the rule that failed and the update it failed at.
 */
export async function verifyConfigHistory(history: ConfigHistory, genesisHash: string): Promise<TrustedMembership> {
  checkPinnedHash(genesisHash);
  const pinned = genesisHash.toLowerCase();
  const hash = toHex(await sha256(history.genesis));
  if (hash !== pinned) {
    throw new MembershipError("GENESIS_HASH_MISMATCH", `the node's genesis definition hashes to ${hash}, not the pinned ${pinned}`, {
      sequence: 0n,
    });
  }
  const genesis = decodeDefinition(history.genesis, 0n);
  if (genesis.sequence !== 0n) {
    throw new MembershipError("BAD_DEFINITION", `the genesis definition has sequence ${genesis.sequence}, not 0`, { sequence: 0n });
  }
  if (history.updates.length > CONFIG_UPDATES_MAX) {
    throw new MembershipError("TOO_MANY_CONFIG_UPDATES", `more than ${CONFIG_UPDATES_MAX} configuration updates`);
  }
  const definitions = [await inForce(genesis, history.genesis, 0n, "")];
  for (const update of history.updates) {
    const current = definitions[definitions.length - 1]!;
    if (update.seq <= current.fromSeq) {
      throw new MembershipError("INCONSISTENT_ANSWERS", `updates out of order: seq ${update.seq} after ${current.fromSeq}`, {
        seq: update.seq,
      });
    }
    const [next, bytes] = await checkUpdate(current, update);
    definitions.push(await inForce(next, bytes, update.seq, update.transactionId));
  }
  const last = definitions[definitions.length - 1]!;
  const coveredThrough = history.validatedHeight > last.fromSeq ? history.validatedHeight : last.fromSeq;
  const membership = new TrustedMembership(pinned, definitions, coveredThrough);
  // Each update's place: at its seq, VALID, under a seal of the definition in force at
  // its block's end (which may be the update's own, as a peer decides).
  for (const update of history.updates) await checkSealed(membership, update);
  if (history.inForce !== undefined) {
    const { definition, version } = history.inForce;
    if (version !== last.fromSeq || toHex(definition) !== toHex(last.bytes)) {
      throw new MembershipError(
        "INCONSISTENT_ANSWERS",
        `the node says the definition in force was written at seq ${version}; its history ends at seq ${last.fromSeq}`,
      );
    }
  }
  return membership;
}

/** Checks `update` against `current`, as a peer validates it; the definition it puts in force. */
async function checkUpdate(current: DefinitionInForce, update: ConfigUpdateEvidence): Promise<[MemberDefinition, Uint8Array]> {
  const at = { seq: update.seq };
  const refuse = (code: MembershipErrorCode, reason: string) => new MembershipError(code, reason, at);
  const { proof } = update;
  if (proof.seq !== update.seq) throw refuse("INCONSISTENT_ANSWERS", `its proof is for seq ${proof.seq}`);
  let signed, transaction, signedProposal, proposal, payload;
  try {
    signed = fromBinary(SignedTransactionSchema, proof.transaction);
    transaction = fromBinary(TransactionSchema, signed.transaction);
    signedProposal = transaction.proposal;
    if (signedProposal === undefined) throw new Error("no proposal");
    proposal = fromBinary(ProposalSchema, signedProposal.proposal);
    payload = fromBinary(ResponsePayloadSchema, transaction.payload);
  } catch (error) {
    throw refuse("BAD_CONFIG_UPDATE", `its transaction does not decode: ${error instanceof Error ? error.message : String(error)}`);
  }
  const id = await idOf(proposal.nonce, proposal.creator);
  if (id !== update.transactionId.toLowerCase()) throw refuse("INCONSISTENT_ANSWERS", `its proof is for transaction ${id}`);
  const was = current.definition;
  if (proposal.contract !== CONFIG_NAMESPACE || proposal.function !== CONFIG_UPDATE_FUNCTION) {
    throw refuse("BAD_CONFIG_UPDATE", `a \`${proposal.contract}\` \`${proposal.function}\` proposal, not a \`_config\` \`update\``);
  }
  if (proposal.channel !== was.channel) throw refuse("BAD_CONFIG_UPDATE", `it is for channel ${JSON.stringify(proposal.channel)}`);
  const [arg] = proposal.args;
  if (proposal.args.length !== 1 || arg === undefined) throw refuse("BAD_CONFIG_UPDATE", "an update takes exactly one argument, the definition");
  const written = onlyWrite(payload, current, toHex(await sha256(signedProposal.proposal)));
  if (typeof written === "string") throw refuse("BAD_CONFIG_UPDATE", written);
  if (toHex(written) !== toHex(arg)) throw refuse("BAD_CONFIG_UPDATE", "its payload writes another definition than its proposal's");
  if (toHex(written) !== toHex(update.value)) throw refuse("INCONSISTENT_ANSWERS", "the key's history holds another value than the update wrote");
  const next = decodeDefinition(written, was.sequence + 1n, update.seq);
  if (next.sequence !== was.sequence + 1n) {
    throw refuse("BAD_CONFIG_UPDATE", `it writes sequence ${next.sequence}; the next one is ${was.sequence + 1n}`);
  }
  if (next.channel !== was.channel) throw refuse("BAD_CONFIG_UPDATE", "the channel cannot change");
  if (next.ordering !== was.ordering) throw refuse("BAD_CONFIG_UPDATE", "the ordering protocol cannot change by an update");
  if (was.ordering === "bft" && JSON.stringify(next.orderers, bigints) !== JSON.stringify(was.orderers, bigints)) {
    throw refuse("BAD_CONFIG_UPDATE", "a Byzantine-fault-tolerant cluster's orderers cannot change by an update");
  }
  await checkSignatures(current, update, signed, transaction, signedProposal.proposal, proposal.creator, refuse);
  return [next, written];
}

const bigints = (_: string, value: unknown) => (typeof value === "bigint" ? value.toString() : value);

/**
 * The definition `payload` writes, checked to be an update's payload: for the proposal
 * hashing to `proposalHash`, reading the key at `current`'s version and writing it alone;
 * else why not.
 */
function onlyWrite(payload: ResponsePayload, current: DefinitionInForce, proposalHash: string): Uint8Array | string {
  if (toHex(payload.proposalHash) !== proposalHash) return "its payload is for another proposal";
  if (payload.result.length > 0 || payload.events.length > 0) return "its payload holds a result or events";
  const [set] = payload.rwsets;
  if (payload.rwsets.length !== 1 || set === undefined || set.namespace !== CONFIG_NAMESPACE || set.rangeReads.length > 0) {
    return "it reads or writes more than the definition's key of `_config`";
  }
  const [read] = set.reads;
  const [write] = set.writes;
  if (set.reads.length !== 1 || read === undefined || utf8(read.key) !== NETWORK_KEY) return "it does not read the definition's key alone";
  if (set.writes.length !== 1 || write === undefined || utf8(write.key) !== NETWORK_KEY || write.isDelete) {
    return "it does not write the definition's key alone";
  }
  const expected = current.fromSeq === 0n ? undefined : current.fromSeq;
  const version = read.version?.seq;
  if (version !== expected) {
    return `it reads the definition at version ${version ?? "none"}; the one in force was written at ${expected ?? "genesis (none)"}`;
  }
  return write.value;
}

/** The proposer's signature, and the admins' signatures against the policy in force. */
async function checkSignatures(
  current: DefinitionInForce,
  update: ConfigUpdateEvidence,
  signed: SignedTransaction,
  transaction: Transaction,
  proposalBytes: Uint8Array,
  creator: Uint8Array,
  refuse: (code: MembershipErrorCode, reason: string) => MembershipError,
): Promise<void> {
  const at = update.proof.timestampMs;
  const proposer = await admin(current, creator, at);
  if (typeof proposer === "string") throw refuse("BAD_CONFIG_SIGNATURE", `its proposer: ${proposer}`);
  if (!(await verifies(proposer.key, signed.signature, await transactionMessage(signed.transaction)))) {
    throw refuse("BAD_CONFIG_SIGNATURE", "its proposer's signature over the transaction does not verify");
  }
  if (transaction.endorsements.length > ENDORSEMENTS_MAX) {
    throw refuse("BAD_CONFIG_UPDATE", `it carries ${transaction.endorsements.length} signatures, more than ${ENDORSEMENTS_MAX}`);
  }
  const message = await endorsementMessage(proposalBytes, transaction.payload);
  const keys = new Set<string>();
  const signers: PolicySigner[] = [];
  for (const endorsement of transaction.endorsements) {
    // As a peer: a certificate not valid here, not an admin's, or a key seen already
    // does not count; a signature that does not verify refuses the update.
    const signer = await admin(current, endorsement.endorser, at);
    if (typeof signer === "string" || keys.has(signer.hex)) continue;
    keys.add(signer.hex);
    if (!(await verifies(signer.key, endorsement.signature, message))) {
      throw refuse("BAD_CONFIG_SIGNATURE", `the signature of ${signer.org}'s admin ${signer.name} does not verify`);
    }
    signers.push({ org: signer.org, role: "admin" });
  }
  let policy: Policy;
  try {
    policy = Policy.parse(current.definition.configPolicy, current.definition.orgs.map((org) => org.name));
  } catch (error) {
    const why = error instanceof PolicyError ? error.message : String(error);
    throw refuse("CONFIG_POLICY_NOT_MET", `the config policy in force does not parse: ${why}`);
  }
  if (!policy.isSatisfiedBy(signers)) {
    const who = signers.length === 0 ? "no admin" : signers.map((s) => `${s.org}'s admin`).join(", ");
    throw refuse("CONFIG_POLICY_NOT_MET", `signed by ${who}; the config policy in force is ${policy.toString()}`);
  }
}

/** An admin of `current` at `atMs`, not revoked, with its key; else why not. */
async function admin(
  current: DefinitionInForce,
  der: Uint8Array,
  atMs: bigint,
): Promise<{ org: string; name: string; key: CryptoKey; hex: string } | string> {
  const checked = await verifyIdentity(der, current.cas, atMs, "admin");
  if (!checked.valid) return checked.reason;
  const { org, name, certificate } = checked.identity;
  const hex = toHex(certificate.ed25519PublicKey ?? new Uint8Array());
  const revoked = current.definition.orgs.find((o) => o.name === org)?.revoked ?? [];
  if (revoked.includes(`ed25519:${hex}`)) return `${org}/${name} is revoked (ed25519:${hex})`;
  return { org, name, key: await certificate.ed25519Key(), hex };
}

async function verifies(key: CryptoKey, signature: Uint8Array, message: Uint8Array): Promise<boolean> {
  try {
    return await globalThis.crypto.subtle.verify(
      { name: ED25519 },
      key,
      signature as Uint8Array<ArrayBuffer>,
      message as Uint8Array<ArrayBuffer>,
    );
  } catch {
    return false;
  }
}

/** The update's transaction is VALID at its seq in a block whose seal the membership accepts. */
async function checkSealed(membership: TrustedMembership, update: ConfigUpdateEvidence): Promise<void> {
  const at = { seq: update.seq };
  if (update.code !== ValidationCode.VALID) {
    throw new MembershipError("CONFIG_UPDATE_NOT_SEALED", `the node reports its transaction as code ${update.code}, not VALID`, at);
  }
  const check = await verifyInclusionProof(update.proof, update.transactionId, { membership });
  if (!check.valid) {
    throw new MembershipError("CONFIG_UPDATE_NOT_SEALED", `its inclusion proof: ${check.reason ?? "not valid"}`, at);
  }
}

/** `definition` with what a seal check needs of it. */
async function inForce(definition: MemberDefinition, bytes: Uint8Array, fromSeq: bigint, transactionId: string): Promise<DefinitionInForce> {
  let cas: TrustedCa[];
  try {
    cas = await parseTrustedCas(definition.orgs.map((org) => org.ca));
  } catch (error) {
    throw new MembershipError("BAD_DEFINITION", `its CAs: ${error instanceof Error ? error.message : String(error)}`, {
      sequence: definition.sequence,
    });
  }
  for (const [index, ca] of cas.entries()) {
    const org = definition.orgs[index]!;
    if (ca.org !== org.name) {
      throw new MembershipError("BAD_DEFINITION", `organisation ${org.name}'s CA names organisation ${ca.org}`, {
        sequence: definition.sequence,
      });
    }
  }
  return {
    definition,
    bytes,
    fromSeq,
    transactionId,
    cas,
    revoked: definition.orgs.flatMap((org) => org.revoked),
    orderers: definition.orderers.map((o) => (o.key === "" ? { org: o.org, name: o.name } : { org: o.org, name: o.name, key: o.key })),
    quorum: sealQuorum(definition),
  };
}

/**
 * A definition's JSON bytes, read as the node's `NetworkDefinition` (serde, unknown
 * fields refused, defaults for absent ones).
 *
 * @throws MembershipError (`BAD_DEFINITION`).
 */
export function decodeDefinition(bytes: Uint8Array, sequence: bigint, seq?: bigint): MemberDefinition {
  const bad = (reason: string) => new MembershipError("BAD_DEFINITION", reason, seq === undefined ? { sequence } : { seq });
  if (bytes.length > DEFINITION_BYTES_MAX) throw bad(`${bytes.length} bytes, more than ${DEFINITION_BYTES_MAX}`);
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (error) {
    throw bad(`not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  const object = (value: unknown, what: string, fields: readonly string[]): Record<string, unknown> => {
    if (typeof value !== "object" || value === null || Array.isArray(value)) throw bad(`${what} is not an object`);
    const unknown = Object.keys(value).find((key) => !fields.includes(key));
    if (unknown !== undefined) throw bad(`${what} has an unknown field ${JSON.stringify(unknown)}`);
    return value as Record<string, unknown>;
  };
  const text = (value: unknown, what: string, fallback?: string): string => {
    if (value === undefined && fallback !== undefined) return fallback;
    if (typeof value !== "string") throw bad(`${what} is not a string`);
    return value;
  };
  const list = (value: unknown, what: string): unknown[] => {
    if (value === undefined) return [];
    if (!Array.isArray(value)) throw bad(`${what} is not a list`);
    return value;
  };
  const number = (value: unknown, what: string): bigint => {
    if (value === undefined) return 0n;
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) throw bad(`${what} is not a whole number`);
    return BigInt(value);
  };
  const top = object(json, "the definition", ["channel", "sequence", "orgs", "orderers", "ordering", "lifecycle_policy", "config_policy"]);
  const orgs = list(top.orgs, "orgs").map((value, i) => {
    const org = object(value, `org ${i + 1}`, ["name", "ca", "tls_ca", "peers", "revoked"]);
    return {
      name: text(org.name, `org ${i + 1}'s name`),
      ca: text(org.ca, `org ${i + 1}'s ca`),
      tlsCa: text(org.tls_ca, `org ${i + 1}'s tls_ca`),
      peers: list(org.peers, "peers").map((p, j) => {
        const peer = object(p, `peer ${j + 1}`, ["name", "endpoint"]);
        return { name: text(peer.name, "a peer's name"), endpoint: text(peer.endpoint, "a peer's endpoint") };
      }),
      revoked: list(org.revoked, "revoked").map((r) => text(r, "a revoked entry")),
    };
  });
  if (orgs.length === 0) throw bad("no organisation");
  const names = orgs.map((org) => org.name);
  if (new Set(names).size !== names.length) throw bad("an organisation's name is repeated");
  const orderers = list(top.orderers, "orderers").map((value, i) => {
    const o = object(value, `orderer ${i + 1}`, ["name", "org", "endpoint", "raft_id", "key"]);
    const orderer = {
      name: text(o.name, "an orderer's name"),
      org: text(o.org, "an orderer's org"),
      endpoint: text(o.endpoint, "an orderer's endpoint"),
      raftId: number(o.raft_id, "an orderer's raft_id"),
      // Kept as written: a peer compares it with the certificate's key in lowercase hex.
      key: text(o.key, "an orderer's key", ""),
    };
    if (!names.includes(orderer.org)) throw bad(`orderer ${orderer.name} belongs to ${orderer.org}, not an organisation of the network`);
    return orderer;
  });
  const ordering = text(top.ordering, "ordering", "raft");
  if (ordering !== "raft" && ordering !== "bft") throw bad(`ordering ${JSON.stringify(ordering)} is neither raft nor bft`);
  if (ordering === "bft" && orderers.some((o) => !/^[0-9a-fA-F]{64}$/.test(o.key))) {
    throw bad("a Byzantine-fault-tolerant cluster names each orderer's Ed25519 key, 64 hex digits");
  }
  return {
    channel: text(top.channel, "channel"),
    sequence: number(top.sequence, "sequence"),
    orgs,
    orderers,
    ordering,
    lifecyclePolicy: text(top.lifecycle_policy, "lifecycle_policy", "MAJORITY admin"),
    configPolicy: text(top.config_policy, "config_policy", "MAJORITY admin"),
  };
}

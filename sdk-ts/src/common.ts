/** What both entry points (Node.js and browser) export. */

export { Code } from "@connectrpc/connect";
export type { Interceptor } from "@connectrpc/connect";
export type { Argument } from "./bytes.js";
export { toHex, utf8 } from "./bytes.js";
export type { CallOptions, Timeouts } from "./client.js";
export { DEFAULT_TIMEOUTS } from "./client.js";
export type { Checkpointer, CheckpointState } from "./checkpoint.js";
export { inMemoryCheckpointer, parseCheckpoint, serializeCheckpoint, StateCheckpointer } from "./checkpoint.js";
export type { EvaluateOptions, ProposalOptions, SubmitOptions, SubmittedTransaction } from "./contract.js";
export { Contract } from "./contract.js";
export type { Sha256 } from "./crypto.js";
export type { GatewayErrorDetails, Status, TransactionMismatchDetails, ValidationCodeName } from "./errors.js";
export {
  CommitError,
  CommitStatusError,
  EndorseError,
  ERROR_CODE_HEADER,
  EvaluateError,
  GatewayError,
  QueryError,
  SubmitError,
  TransactionMismatchError,
  VALIDATION_CODE_HEADER,
  validationCodeName,
} from "./errors.js";
export type {
  Block,
  BlockEventsOptions,
  BlockTransaction,
  CloseableAsyncIterable,
  CommittedTransaction,
  ContractEvent,
  ContractEventsOptions,
  EventCheckpoint,
  ReconnectOptions,
  TransactionEventsOptions,
} from "./events.js";
export type { GatewayOptions, TransportGatewayOptions } from "./gateway.js";
export { connectWithTransport, Gateway, Network } from "./gateway.js";
export type { Identity } from "./identity.js";
export { identityCertificate, identityFromDer, identityFromPem } from "./identity.js";
export type { CommitStatusOptions, CommitWait, EndorseOptions, TransactionOptions } from "./proposal.js";
export { Commit, Proposal, Transaction } from "./proposal.js";
export type {
  ContractApproval,
  ContractApprovals,
  ContractDefinition,
  KeyHistoryOptions,
  KeyModification,
  KeyValue,
  ListContractsOptions,
  NetworkDefinition,
  NetworkInfo,
  NetworkPeerDefinition,
  OrgDefinition,
  TransactionDetail,
} from "./query.js";
export { Query } from "./query.js";
export type { ReadGrantOptions } from "./readers.js";
export { isRead, newReadGrant, READ_GRANT_DOMAIN, READ_GRANT_HEADER, READ_GRANT_LIFETIME_MS, withReadGrants } from "./readers.js";
export type { InclusionCheck, InclusionProof, SealCheck, SealCheckCode, SealSigner, VerifyOptions } from "./proof.js";
export type {
  ConfigHistory,
  ConfigUpdateEvidence,
  DefinitionInForce,
  MemberDefinition,
  MemberOrgDefinition,
  MembershipErrorCode,
  OrdererDefinition,
} from "./membership.js";
export {
  CONFIG_NAMESPACE,
  CONFIG_UPDATES_MAX,
  decodeDefinition,
  MembershipError,
  NETWORK_KEY,
  readConfigHistory,
  TrustedMembership,
  verifyConfigHistory,
} from "./membership.js";
export type { PolicyErrorCode, PolicyEvaluation, PolicyExpr, PolicySigner, Principal, RoleMatch } from "./policy.js";
export {
  Policy,
  POLICY_DEPTH_MAX,
  POLICY_ENDORSERS_MAX,
  POLICY_EVAL_STEPS_MAX,
  POLICY_PRINCIPALS_MAX,
  POLICY_TEXT_BYTES_MAX,
  PolicyError,
} from "./policy.js";
export {
  LEAF_DOMAIN,
  NO_TRUSTED_CA,
  SEAL_DOMAIN,
  SEAL_SIGNATURES_MAX,
  SEAL_SIGNERS_REQUIRED,
  BFT_ORDERERS_MIN,
  sealQuorum,
  verifyInclusionProof,
  verifySeal,
} from "./proof.js";
export type { CaCertificates, IdentityCheck, Role, TrustedCa, VerifiedIdentity } from "./msp.js";
export { parseTrustedCas, ROLES, TRUSTED_CAS_MAX, verifyIdentity } from "./msp.js";
export type { Certificate } from "./x509.js";
export { CERTIFICATE_BYTES_MAX, parseCertificate } from "./x509.js";
export type { Signer } from "./signing.js";
export { ed25519Pkcs8, newPrivateKeySigner } from "./signing.js";
export type { StageName, StageStamp, Trace } from "./trace.js";
export type { Deployed, DeployOptions } from "./admin.js";
export { LIFECYCLE_NAMESPACE } from "./admin.js";
export { ENDORSEMENT_DOMAIN, endorsementMessage, PROPOSAL_DOMAIN, TRANSACTION_DOMAIN } from "./tx.js";
/** The generated protobuf messages and services (from node/proto), for what the helpers do not cover. */
export * as proto from "./gen/runnel/v1/api_pb.js";
/** The generated transaction messages (Proposal, Transaction, ...), to inspect signed bytes. */
export * as txProto from "./gen/runnel/v1/transaction_pb.js";

//! The stable error names a node puts in the [`ERROR_CODE_HEADER`] of a refusal, all of
//! them, in one list. Each error type of the node (runnel-ledger's, runnel-runtime's,
//! runnel-server's own refusals) names itself with one of these; the server asserts it
//! in debug builds as it makes the status. Clients switch on these names, so a name is
//! never renamed or reused for another meaning: add a name here first, and the golden
//! vectors (`node/api/vectors/codes.json`) and docs/api.md's table with it.
//!
//! The validation codes' names ([`crate::ids::ValidationCode`]) other than `VALID` are
//! error names too: the embedding API refuses an invalid transaction with its code.
//!
//! [`ERROR_CODE_HEADER`]: crate::headers::ERROR_CODE_HEADER

/// Every name a node may put in [`crate::headers::ERROR_CODE_HEADER`], grouped by what
/// went wrong (docs/api.md gives each its gRPC code).
pub const ERROR_NAMES: &[&str] = &[
    // The request or a message in it is malformed.
    "BAD_REQUEST",
    "BAD_PAYLOAD",
    "WRONG_CHANNEL",
    "BAD_TX_ID",
    "BAD_NAMESPACE",
    "BAD_CONTRACT_NAME",
    "BAD_CONTRACT_VERSION",
    "BAD_BLOCK_NUMBER",
    "BAD_POLICY",
    "UNSATISFIABLE_POLICY",
    "INVALID_CODE",
    "CODE_HASH_MISMATCH",
    "NOT_ENDORSED",
    "TOO_MANY_ENDORSEMENTS",
    // Who is asking: certificates, signatures, roles.
    "BAD_CREATOR",
    "BAD_CREATOR_SIGNATURE",
    "BAD_ENDORSER_SIGNATURE",
    "EXPIRED_CERTIFICATE",
    "REVOKED_CERTIFICATE",
    "IDENTITY_REQUIRED",
    "BAD_READ_GRANT",
    "ACCESS_DENIED",
    // No such thing here.
    "CONTRACT_NOT_FOUND",
    "FUNCTION_NOT_FOUND",
    "TX_NOT_FOUND",
    "TX_NOT_SEALED",
    "BLOCK_NOT_FOUND",
    "TRACE_NOT_FOUND",
    // Already there.
    "DUPLICATE_TXID",
    "ALREADY_DEPLOYED",
    // The contract failed, or hit a limit of the sandbox.
    "CONTRACT_ERROR",
    "CONTRACT_TRAP",
    "ABI_VIOLATION",
    "INSTANTIATE_FAILED",
    "FUEL_EXHAUSTED",
    "MEMORY_LIMIT",
    "TABLE_LIMIT",
    "STACK_EXHAUSTED",
    "WALL_CLOCK_LIMIT",
    "KEY_TOO_LARGE",
    "VALUE_TOO_LARGE",
    "TOO_MANY_WRITES",
    "TOO_MANY_EVENTS",
    "EVENT_TOO_LARGE",
    "RANGE_SCAN_LIMIT",
    "TOO_MANY_RANGES",
    "RESULT_TOO_LARGE",
    "ARGS_TOO_LARGE",
    // Endorsement, lifecycle and the proposal window.
    "ENDORSEMENT_POLICY_FAILURE",
    "ENDORSEMENT_MISMATCH",
    "ENDORSEMENT_REFUSED",
    "ENDORSER_UNAVAILABLE",
    "CODE_NOT_STORED",
    "NOT_APPROVED",
    "STALE_SEQUENCE",
    "TIMESTAMP_OUT_OF_WINDOW",
    // Validation codes that only the validator decides.
    "MVCC_READ_CONFLICT",
    "PHANTOM_READ_CONFLICT",
    "ILLEGAL_WRITESET",
    "BAD_RWSET",
    "BAD_CONFIG_UPDATE",
    "UNUSABLE_POLICY",
    // A limit of the node: sizes, counts, queues, waits.
    "PROPOSAL_TOO_LARGE",
    "TOO_LARGE",
    "MESSAGE_TOO_LARGE",
    "TOO_MANY_ITEMS",
    "TOO_MANY_STREAMS",
    "TOO_MANY_WAITS",
    "QUEUE_FULL",
    "STREAM_LAGGED",
    "SUBMITTER_QUOTA_EXCEEDED",
    "WAIT_TIMEOUT",
    // The node cannot serve this now: retry.
    "SHUTTING_DOWN",
    "CLOSED",
    "VALIDATOR_STOPPED",
    "STATE_UNAVAILABLE",
    "LOG_FAILURE",
    "LOCKED",
    "BUSY",
    "ORDERER_UNAVAILABLE",
    "ORDERER_BEHIND",
    // Stored data does not decode.
    "STATE_CORRUPT",
    "LOG_CORRUPT",
    // Seals and inclusion proofs.
    "BAD_SEAL",
    "BAD_ORDERER",
    "BAD_SEAL_SIGNATURE",
    "ORDERER_NOT_MEMBER",
    "BLOCK_OUT_OF_ORDER",
    "SEQ_GAP",
    "PREVIOUS_HASH_MISMATCH",
    "TX_COUNT_MISMATCH",
    "TX_ROOT_MISMATCH",
    "NOT_IN_BLOCK",
    "BAD_PROOF",
    // A bug, or a configuration the node should have refused.
    "INTERNAL",
    "BAD_RESULT",
    "IDENTITY",
    "RUNTIME",
    "UNIMPLEMENTED",
];

/// Whether `name` is one of [`ERROR_NAMES`].
pub fn is_error_name(name: &str) -> bool {
    ERROR_NAMES.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_distinct_screaming_snake_case() {
        let mut seen = std::collections::HashSet::new();
        for name in ERROR_NAMES {
            assert!(seen.insert(name), "{name} is listed twice");
            assert!(
                !name.is_empty()
                    && name
                        .chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'),
                "{name}"
            );
        }
    }

    #[cfg(feature = "identity")]
    #[test]
    fn every_validation_code_but_valid_is_an_error_name() {
        use crate::ids::ValidationCode;
        for code in ValidationCode::ALL {
            assert_eq!(is_error_name(code.as_str()), !code.is_valid(), "{code}");
        }
    }
}

//! Errors as gRPC statuses: every ledger, endorser and orderer error gets the gRPC code
//! that tells a client what to do about it, a message that starts with the error's stable
//! name (its `code()`), and that name in the `runnel-error-code` header; a name that is
//! also a validation code goes in `runnel-validation-code` too.
//!
//! | gRPC code | when |
//! |---|---|
//! | `INVALID_ARGUMENT` | the request is malformed: bytes that do not decode, a wrong channel, a bad name, id, namespace or key |
//! | `UNAUTHENTICATED` | a certificate the MSP refuses, or a signature that does not verify |
//! | `PERMISSION_DENIED` | a valid identity whose role may not do this |
//! | `NOT_FOUND` | no such contract, function, transaction, block or trace |
//! | `ALREADY_EXISTS` | a replayed transaction (`DUPLICATE_TXID`), a contract deployed twice |
//! | `FAILED_PRECONDITION` | the contract's own error, trap or limit; no endorsers satisfy the policy |
//! | `ABORTED` | ordered but invalid (MVCC conflict...): endorse again |
//! | `RESOURCE_EXHAUSTED` | a size limit, too many streams or waits, a stream that fell behind |
//! | `UNAVAILABLE` | the node is closing or its state cannot be read now; retry |
//! | `DATA_LOSS` | stored data does not decode |
//! | `INTERNAL` | a bug or a configuration the node should have refused |

use std::fmt::Display;

use runnel_runtime::{InvokeError, LimitExceeded};
use tonic::metadata::MetadataValue;
use tonic::{Code, Status};

use runnel_ledger::endorser::EndorseError;
use runnel_ledger::gather::GatherError;
use runnel_ledger::identity::IdentityError;
use runnel_ledger::ids::ValidationCode;
use runnel_ledger::ledger::LedgerError;
use runnel_ledger::lifecycle::LifecycleError;
use runnel_ledger::orderer::OrderError;
use runnel_ledger::store::StoreError;

pub use runnel_api::headers::{ERROR_CODE_HEADER, ERROR_ORG_HEADER, VALIDATION_CODE_HEADER};

/// `status` as a whole HTTP answer (headers only, gRPC's trailers-only form): what a
/// middleware in front of the services answers with when it refuses a call.
pub fn response(status: Status) -> axum::response::Response {
    let (parts, ()) = status.into_http::<()>().into_parts();
    axum::response::Response::from_parts(parts, axum::body::Body::empty())
}

/// A status with `code`, the message `"{name}: {message}"` and the headers above. `name`
/// is one of [`runnel_api::codes::ERROR_NAMES`], the list clients read.
pub fn error(code: Code, name: &str, message: impl Display) -> Status {
    debug_assert!(
        runnel_api::codes::is_error_name(name),
        "invariant broken: error name {name} is not in runnel_api::codes::ERROR_NAMES"
    );
    let mut status = Status::new(code, format!("{name}: {message}"));
    if let Ok(value) = MetadataValue::try_from(name) {
        status
            .metadata_mut()
            .insert(ERROR_CODE_HEADER, value.clone());
        if ValidationCode::ALL.iter().any(|c| c.as_str() == name) {
            status.metadata_mut().insert(VALIDATION_CODE_HEADER, value);
        }
    }
    status
}

/// A status another node sent in parts (an `EndorseRefusal`): its code, name and
/// message (which starts with the name), with the name in [`ERROR_CODE_HEADER`].
pub fn from_parts(code: i32, name: &str, message: &str) -> Status {
    let mut status = Status::new(Code::from(code), message);
    if let Ok(value) = MetadataValue::try_from(name) {
        status.metadata_mut().insert(ERROR_CODE_HEADER, value);
    }
    status
}

/// [`error`] about organisation `org` ([`ERROR_ORG_HEADER`]).
pub fn org_error(code: Code, name: &str, org: &str, message: impl Display) -> Status {
    let mut status = error(code, name, format_args!("{org}: {message}"));
    if let Ok(value) = MetadataValue::try_from(org) {
        status.metadata_mut().insert(ERROR_ORG_HEADER, value);
    }
    status
}

/// The status of a ledger error.
pub fn from_ledger(error: &LedgerError) -> Status {
    let name = match error {
        // The ledger names every store error alike; a client needs to tell its own bad
        // namespace from the node's trouble.
        LedgerError::Store(StoreError::BadNamespace(_)) => "BAD_NAMESPACE",
        LedgerError::Store(StoreError::KeyTooLong { .. }) => "KEY_TOO_LARGE",
        LedgerError::Store(StoreError::Corrupt { .. }) => "STATE_CORRUPT",
        _ => error.code(),
    };
    self::error(ledger_code(error), name, error)
}

/// The status of an endorser error.
pub fn from_endorse(error: &EndorseError) -> Status {
    self::error(endorse_code(error), error.code(), error)
}

/// Endorsements that disagree, naming the organisation whose peer endorsed another payload.
pub fn from_gather(error: &GatherError) -> Status {
    match error {
        GatherError::Mismatch { org, .. } => {
            org_error(Code::Aborted, "ENDORSEMENT_MISMATCH", org, error)
        }
    }
}

fn ledger_code(error: &LedgerError) -> Code {
    match error {
        LedgerError::Store(error) => store_code(error),
        LedgerError::Order(error) => order_code(error),
        LedgerError::Endorse(error) => endorse_code(error),
        LedgerError::Validator(_) | LedgerError::Closed(_) => Code::Unavailable,
        LedgerError::Unendorsable(_) => Code::FailedPrecondition,
        LedgerError::Rejected { .. } | LedgerError::Gather(_) => Code::Aborted,
        LedgerError::DuplicateTxId { .. } => Code::AlreadyExists,
        LedgerError::Identity(_)
        | LedgerError::Policy(_)
        | LedgerError::BadResult(_)
        | LedgerError::Runtime(_) => Code::Internal,
    }
}

fn store_code(error: &StoreError) -> Code {
    match error {
        StoreError::Sled(_) | StoreError::Locked { .. } | StoreError::SnapshotTooOld { .. } => {
            Code::Unavailable
        }
        StoreError::Corrupt { .. } => Code::DataLoss,
        StoreError::BadNamespace(_) | StoreError::KeyTooLong { .. } => Code::InvalidArgument,
        _ => Code::Internal,
    }
}

pub fn order_code(error: &OrderError) -> Code {
    match error {
        OrderError::TooLarge { .. } => Code::ResourceExhausted,
        OrderError::Malformed(_) | OrderError::WrongChannel { .. } => Code::InvalidArgument,
        OrderError::Submitter(error) => identity_code(error),
        OrderError::BadSignature | OrderError::BadEndorsement { .. } => Code::Unauthenticated,
        OrderError::TooManyEndorsements { .. } | OrderError::NotEndorsed { .. } => {
            Code::InvalidArgument
        }
        OrderError::QuotaExceeded { .. } => Code::ResourceExhausted,
        OrderError::OutsideWindow(_) | OrderError::BeyondReplayMemory { .. } => {
            Code::FailedPrecondition
        }
        OrderError::Duplicate(_) => Code::AlreadyExists,
        OrderError::Locked(_) | OrderError::Closed | OrderError::Log(_) => Code::Unavailable,
        OrderError::Corrupt(_) | OrderError::Behind { .. } => Code::DataLoss,
        OrderError::Unavailable(_) | OrderError::NotLeader => Code::Unavailable,
        OrderError::Remote { grpc, .. } => Code::from_i32(*grpc),
    }
}

fn endorse_code(error: &EndorseError) -> Code {
    match error {
        EndorseError::TooLarge { .. } => Code::ResourceExhausted,
        EndorseError::Malformed(_) | EndorseError::WrongChannel { .. } => Code::InvalidArgument,
        EndorseError::Creator(error) => identity_code(error),
        EndorseError::DuplicateTxId(_) => Code::AlreadyExists,
        EndorseError::OutsideWindow(_) => Code::FailedPrecondition,
        EndorseError::ContractNotFound(_) => Code::NotFound,
        EndorseError::Contract { error, .. } => invoke_code(error),
        EndorseError::Lifecycle(error) => lifecycle_code(error),
        EndorseError::Store(_) => Code::Unavailable,
    }
}

fn identity_code(error: &IdentityError) -> Code {
    match error {
        IdentityError::WrongRole { .. } => Code::PermissionDenied,
        IdentityError::Issue(_) => Code::Internal,
        _ => Code::Unauthenticated,
    }
}

fn invoke_code(error: &InvokeError) -> Code {
    match error {
        InvokeError::FunctionNotFound { .. } => Code::NotFound,
        InvokeError::Limit(LimitExceeded::ArgsSize { .. }) => Code::InvalidArgument,
        // Deterministic: the same call fails the same way until the state changes.
        InvokeError::Limit(_)
        | InvokeError::Contract { .. }
        | InvokeError::Trap { .. }
        | InvokeError::Abi { .. } => Code::FailedPrecondition,
        InvokeError::State(_) | InvokeError::Busy { .. } => Code::Unavailable,
        InvokeError::Instantiate(_) => Code::Internal,
    }
}

fn lifecycle_code(error: &LifecycleError) -> Code {
    match error {
        LifecycleError::BadRequest(_)
        | LifecycleError::BadName(_)
        | LifecycleError::BadVersion(_)
        | LifecycleError::BadPolicy(_)
        | LifecycleError::UnsatisfiablePolicy(_)
        | LifecycleError::CodeHashMismatch { .. }
        | LifecycleError::InvalidCode(_) => Code::InvalidArgument,
        LifecycleError::UnknownFunction(_) | LifecycleError::NotDeployed(_) => Code::NotFound,
        LifecycleError::AlreadyDeployed { .. } => Code::AlreadyExists,
        LifecycleError::CodeNotStored(_)
        | LifecycleError::NotApproved { .. }
        | LifecycleError::StaleSequence { .. } => Code::FailedPrecondition,
        LifecycleError::Init { error, .. } => invoke_code(error),
        LifecycleError::State(_) => Code::Unavailable,
        LifecycleError::Corrupt { .. } => Code::DataLoss,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runnel_ledger::ids::{Seq, TxId};

    #[test]
    fn a_replay_is_already_exists_with_its_validation_code() {
        let status = from_ledger(&LedgerError::DuplicateTxId {
            tx_id: TxId([7; 32]),
            seq: Seq(3),
        });
        assert_eq!(status.code(), Code::AlreadyExists);
        assert!(status.message().starts_with("DUPLICATE_TXID: "));
        assert_eq!(
            status.metadata().get(VALIDATION_CODE_HEADER).unwrap(),
            "DUPLICATE_TXID"
        );
        assert_eq!(
            status.metadata().get(ERROR_CODE_HEADER).unwrap(),
            "DUPLICATE_TXID"
        );
    }

    #[test]
    fn a_contract_error_keeps_its_message_and_no_validation_code() {
        let status = from_endorse(&EndorseError::Contract {
            contract: "token".into(),
            error: InvokeError::Contract {
                message: "only an admin may mint".into(),
            },
        });
        assert_eq!(status.code(), Code::FailedPrecondition);
        assert!(status.message().contains("only an admin may mint"));
        assert_eq!(
            status.metadata().get(ERROR_CODE_HEADER).unwrap(),
            "CONTRACT_ERROR"
        );
        assert!(status.metadata().get(VALIDATION_CODE_HEADER).is_none());
    }

    #[test]
    fn refused_identities_are_unauthenticated_or_denied() {
        let wrong_role = IdentityError::WrongRole {
            who: "Org1/peer0".into(),
            role: runnel_ledger::identity::Role::Peer,
            needed: "client".into(),
        };
        let status = from_endorse(&EndorseError::Creator(wrong_role));
        assert_eq!(status.code(), Code::PermissionDenied);
        let forged = IdentityError::BadSignature {
            who: "Org1/user1".into(),
        };
        let status = from_endorse(&EndorseError::Creator(forged));
        assert_eq!(status.code(), Code::Unauthenticated);
        assert_eq!(
            status.metadata().get(VALIDATION_CODE_HEADER).unwrap(),
            "BAD_CREATOR_SIGNATURE"
        );
    }
}

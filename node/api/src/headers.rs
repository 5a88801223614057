//! The names of the metadata headers nodes and clients exchange beside the messages (the
//! read grant's is [`crate::grant`]'s). The SDK's `errors.ts` reads the same names.

/// The response header holding an error's stable name (`CONTRACT_ERROR`, ...).
pub const ERROR_CODE_HEADER: &str = "runnel-error-code";
/// The response header holding the validation code an error amounts to.
pub const VALIDATION_CODE_HEADER: &str = "runnel-validation-code";
/// The response header that names the organisation an endorsement failure is about
/// (ENDORSER_UNAVAILABLE, ENDORSEMENT_REFUSED, ENDORSEMENT_MISMATCH).
pub const ERROR_ORG_HEADER: &str = "runnel-error-org";
/// The request header that marks a request one gateway forwarded to another
/// organisation's peer.
pub const FORWARDED_HEADER: &str = "runnel-forwarded";

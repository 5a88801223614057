//! Read grants: what a reader signs to read a node under `read_access = "members"`
//! without mutual TLS (browsers cannot present client certificates reliably). The node's
//! check is runnel-server's `readers`; the SDK builds the same bytes.

use prost::Message as _;

use crate::identity::Signer;
use crate::proto::{ReadGrant, SignedReadGrant};
use crate::tx;

/// The request header that carries a [`SignedReadGrant`], base64 (gRPC binary metadata).
pub const READ_GRANT_HEADER: &str = "runnel-read-grant-bin";
/// Largest read grant header taken, base64: a certificate and a signature fit many
/// times over. A bigger one is refused before it is decoded.
pub const READ_GRANT_HEADER_BYTES_MAX: usize = 8 << 10;
/// Whether a call to `path` (`/runnel.v1.Query/GetBlock`) is a read that needs a
/// reader. Everything is, but the calls that carry a signature of their own and
/// `GetNetworkInfo`; a method added later is a read until named here.
pub fn is_read(path: &str) -> bool {
    !matches!(
        path,
        "/runnel.v1.Gateway/Endorse"
            | "/runnel.v1.Gateway/Evaluate"
            | "/runnel.v1.Gateway/Submit"
            | "/runnel.v1.Query/GetNetworkInfo"
    ) && !path.starts_with("/runnel.v1.Admin/")
}

/// Longest validity of a read grant: 15 minutes, the proposal window's default.
pub const READ_GRANT_LIFETIME_MAX_MS: u64 = 15 * 60 * 1000;
/// How far ahead of a node's clock a grant may start: clocks differ.
pub const READ_GRANT_CLOCK_SKEW_MS: u64 = 60 * 1000;

/// A signed read grant (an encoded [`SignedReadGrant`]) for `signer` on `channel`, valid
/// from `not_before_ms` for `lifetime_ms`: what a Rust client sends, base64, in
/// [`READ_GRANT_HEADER`].
pub fn signed_grant(
    signer: &Signer,
    channel: &str,
    not_before_ms: u64,
    lifetime_ms: u64,
) -> Vec<u8> {
    let grant = ReadGrant {
        creator: signer.cert_der().to_vec(),
        channel: channel.to_string(),
        not_before_ms,
        not_after_ms: not_before_ms.saturating_add(lifetime_ms),
    }
    .encode_to_vec();
    let signature = signer
        .sign(&tx::read_grant_message(&tx::sha256(&grant)))
        .to_vec();
    SignedReadGrant { grant, signature }.encode_to_vec()
}

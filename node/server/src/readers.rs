//! Who may read the ledger: `[api] read_access`, like Fabric's channel Readers policy.
//!
//! Under [`ReadAccess::Members`] every read — `Query` (but `GetNetworkInfo`), `Deliver`,
//! `Trace`, `Gateway.CommitStatus`, `Gateway.ContractEvents` — needs a caller identity
//! of the network, checked by the same MSP as writes:
//!
//! - a client certificate of the network's MSP, presented over mutual TLS (the node then
//!   trusts the MSP's CAs for client certificates as well as `client_ca`); or
//! - a signed read grant in the `runnel-read-grant-bin` request header: the reader's
//!   certificate, the channel, and a validity of at most [`READ_GRANT_LIFETIME_MAX_MS`],
//!   signed with the reader's key (`api.proto` `SignedReadGrant`). Browsers use this:
//!   gRPC-web cannot present client certificates reliably.
//!
//! Calls that carry their own signature (`Endorse`, `Evaluate`, `Submit`, `Admin`) are
//! checked by that signature instead, and `GetNetworkInfo` stays open so that a client
//! can learn the channel its grant names. A grant is a bearer credential for its short
//! life: it travels over TLS like any other. Grants found valid are remembered, so a
//! client that reuses its grant costs a hash and a lookup per call; a configuration
//! update (a revocation) ends every remembered grant at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use prost::Message as _;
use tonic::transport::server::{TcpConnectInfo, TlsConnectInfo};
use tonic::{Code, Status};

use crate::proto::{ReadGrant, SignedReadGrant};
use crate::status;
use runnel_ledger::identity::{Identity, Msp};
use runnel_ledger::tx;

pub use runnel_api::grant::{
    READ_GRANT_CLOCK_SKEW_MS, READ_GRANT_HEADER, READ_GRANT_HEADER_BYTES_MAX,
    READ_GRANT_LIFETIME_MAX_MS, is_read, signed_grant,
};
/// Grants remembered as valid; the memory is emptied when it would grow past this.
pub const READ_GRANT_CACHE_MAX: usize = 4096;

/// Who may read: `[api] read_access`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReadAccess {
    /// Anyone who can reach the API: a local dev node, or a ledger meant to be public.
    Open,
    /// Identities of the network only (the default).
    #[default]
    Members,
}

impl ReadAccess {
    /// The name used in runnel.toml.
    pub fn as_str(self) -> &'static str {
        match self {
            ReadAccess::Open => "open",
            ReadAccess::Members => "members",
        }
    }
}

impl std::fmt::Display for ReadAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ReadAccess {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "open" => Ok(ReadAccess::Open),
            "members" => Ok(ReadAccess::Members),
            _ => Err(format!("`{s}` is not a read access: open or members")),
        }
    }
}

/// The path of `GetNetworkInfo`, which anyone may call.
const NETWORK_INFO_PATH: &str = "/runnel.v1.Query/GetNetworkInfo";

/// The member of `msp` whose certificate the request's connection presented for mutual
/// TLS, if it did and the MSP knows it (valid at `now_s`, Unix seconds).
pub fn tls_member<B>(request: &http::Request<B>, msp: &Msp, now_s: i64) -> Option<Arc<Identity>> {
    let certs = request
        .extensions()
        .get::<TlsConnectInfo<TcpConnectInfo>>()
        .and_then(TlsConnectInfo::peer_certs)?;
    msp.verify(certs.first()?.as_ref(), now_s).ok()
}

/// The identity a read was allowed for, in the request's extensions.
#[derive(Debug, Clone)]
pub struct Reader(pub Arc<Identity>);

/// A grant remembered as valid, until its end or until the trust changes.
struct Granted {
    identity: Arc<Identity>,
    not_after_ms: u64,
    /// The MSP's epoch it was checked in: a configuration update (a revocation) since
    /// means it is checked again before it is served.
    epoch: u64,
}

/// Checks readers for one node.
pub struct Readers {
    access: ReadAccess,
    msp: Arc<Msp>,
    channel: String,
    /// Valid grants by the SHA-256 of their header.
    granted: Mutex<HashMap<tx::Hash, Granted>>,
}

impl std::fmt::Debug for Readers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Readers")
            .field("access", &self.access)
            .field("channel", &self.channel)
            .finish_non_exhaustive()
    }
}

/// Base64 as gRPC metadata sends it: standard alphabet, padded or not.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

impl Readers {
    /// Readers of `channel` under `access`, identities checked by `msp`.
    pub fn new(access: ReadAccess, msp: Arc<Msp>, channel: String) -> Readers {
        Readers {
            access,
            msp,
            channel,
            granted: Mutex::new(HashMap::new()),
        }
    }

    /// The identity `request` reads as: its mutual-TLS certificate if the MSP knows it,
    /// else its read grant. `UNAUTHENTICATED` with `IDENTITY_REQUIRED` when it has
    /// neither, `BAD_READ_GRANT` when its grant does not hold.
    pub fn reader<B>(&self, request: &http::Request<B>, now_ms: u64) -> Result<Reader, Status> {
        let now_s = i64::try_from(now_ms / 1000).unwrap_or(i64::MAX);
        if let Some(identity) = tls_member(request, &self.msp, now_s) {
            return Ok(Reader(identity));
        }
        let Some(header) = request.headers().get(READ_GRANT_HEADER) else {
            return Err(status::error(
                Code::Unauthenticated,
                "IDENTITY_REQUIRED",
                format_args!(
                    "this node serves reads to identities of the network only \
                     (read_access = \"members\"): present a client certificate of the \
                     network over mutual TLS, or a signed read grant in the \
                     `{READ_GRANT_HEADER}` header"
                ),
            ));
        };
        self.granted(header.as_bytes(), now_ms).map(Reader)
    }

    /// The identity of a read grant header, checked or remembered.
    fn granted(&self, header: &[u8], now_ms: u64) -> Result<Arc<Identity>, Status> {
        if header.len() > READ_GRANT_HEADER_BYTES_MAX {
            return Err(bad_grant(format_args!(
                "the header holds {} bytes, more than the {READ_GRANT_HEADER_BYTES_MAX} taken",
                header.len()
            )));
        }
        let key = tx::sha256(header);
        // Read before the grant is checked: a change of trust meanwhile shows at the
        // next call, which checks it again.
        let epoch = self.msp.epoch();
        if let Some(granted) = self.lock().get(&key)
            && now_ms <= granted.not_after_ms
            && granted.epoch == epoch
        {
            return Ok(granted.identity.clone());
        }
        let (identity, not_after_ms) = self.check(header, now_ms)?;
        let mut granted = self.lock();
        if granted.len() >= READ_GRANT_CACHE_MAX {
            granted.clear();
        }
        granted.insert(
            key,
            Granted {
                identity: identity.clone(),
                not_after_ms,
                epoch,
            },
        );
        Ok(identity)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<tx::Hash, Granted>> {
        self.granted.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Checks a read grant header from its bytes: the reader and the grant's end.
    fn check(&self, header: &[u8], now_ms: u64) -> Result<(Arc<Identity>, u64), Status> {
        let bytes = BASE64
            .decode(header)
            .map_err(|e| bad_grant(format_args!("the header is not base64: {e}")))?;
        let signed = SignedReadGrant::decode(bytes.as_slice())
            .map_err(|e| bad_grant(format_args!("not a SignedReadGrant: {e}")))?;
        let grant = ReadGrant::decode(signed.grant.as_slice())
            .map_err(|e| bad_grant(format_args!("not a ReadGrant: {e}")))?;
        if grant.channel != self.channel {
            return Err(bad_grant(format_args!(
                "the grant is for channel `{}`; this node serves `{}`",
                crate::quote(&grant.channel),
                self.channel
            )));
        }
        if grant.not_after_ms < grant.not_before_ms
            || grant.not_after_ms - grant.not_before_ms > READ_GRANT_LIFETIME_MAX_MS
        {
            return Err(bad_grant(format_args!(
                "a grant may be valid for {READ_GRANT_LIFETIME_MAX_MS} ms at most; this one \
                 runs from {} to {}",
                grant.not_before_ms, grant.not_after_ms
            )));
        }
        if now_ms.saturating_add(READ_GRANT_CLOCK_SKEW_MS) < grant.not_before_ms {
            return Err(bad_grant(format_args!(
                "the grant starts at {} ms, ahead of this node's clock ({now_ms} ms)",
                grant.not_before_ms
            )));
        }
        if now_ms > grant.not_after_ms {
            return Err(bad_grant(format_args!(
                "the grant ended at {} ms; this node's clock reads {now_ms} ms: sign a new one",
                grant.not_after_ms
            )));
        }
        let now_s = i64::try_from(now_ms / 1000).unwrap_or(i64::MAX);
        let identity = self
            .msp
            .verify(&grant.creator, now_s)
            .map_err(|e| bad_grant(format_args!("its certificate: {e}")))?;
        identity
            .verify(
                &tx::read_grant_message(&tx::sha256(&signed.grant)),
                &signed.signature,
            )
            .map_err(bad_grant)?;
        // Remembered no longer than the grant, nor than the certificate, holds.
        let cert_ends_ms = u64::try_from(identity.not_after)
            .unwrap_or(0)
            .saturating_mul(1000);
        let not_after_ms = grant.not_after_ms.min(cert_ends_ms);
        Ok((identity, not_after_ms))
    }
}

fn bad_grant(message: impl std::fmt::Display) -> Status {
    status::error(Code::Unauthenticated, "BAD_READ_GRANT", message)
}

/// The middleware in front of the services: a read goes on only with a [`Reader`].
pub async fn check(
    State(readers): State<Arc<Readers>>,
    mut request: Request,
    next: Next,
) -> Response {
    if request.uri().path() == NETWORK_INFO_PATH {
        // Open to anyone, but a member is told more ([`crate::ops::OpsAccess`]).
        if let Ok(reader) = readers.reader(&request, tx::now_ms()) {
            request.extensions_mut().insert(reader);
        }
        return next.run(request).await;
    }
    if readers.access == ReadAccess::Open || !is_read(request.uri().path()) {
        return next.run(request).await;
    }
    match readers.reader(&request, tx::now_ms()) {
        Ok(reader) => {
            request.extensions_mut().insert(reader);
            next.run(request).await
        }
        Err(status) => {
            // Read what the client sends before answering: over HTTP/1.1 (gRPC-web), an
            // answer before the request's end would close the connection under a client
            // still writing, which would see a broken pipe instead of the status. Reads'
            // requests are small; past the largest, the connection may go.
            let mut body = request.into_body();
            let mut read = 0;
            while read <= crate::QUERY_REQUEST_BYTES_MAX {
                match http_body_util::BodyExt::frame(&mut body).await {
                    Some(Ok(frame)) => read += frame.data_ref().map_or(0, |data| data.len()),
                    _ => break,
                }
            }
            status::response(status)
        }
    }
}

/// [`signed_grant`] as the header's value.
pub fn grant_header(
    signer: &runnel_ledger::identity::Signer,
    channel: &str,
    not_before_ms: u64,
    lifetime_ms: u64,
) -> String {
    BASE64.encode(signed_grant(signer, channel, not_before_ms, lifetime_ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use runnel_ledger::identity::{NetworkIdentities, Role, Signer};

    #[test]
    fn a_grant_is_remembered_no_longer_than_its_certificate_holds() {
        let network = NetworkIdentities::generate(&["Org1"], time::Duration::days(1)).unwrap();
        let org = &network.orgs[0];
        // A certificate that ends within the grant's life.
        let brief = org
            .ca
            .issue(Role::Client, "brief.Org1", time::Duration::minutes(2))
            .unwrap();
        let signer = Signer::new(&brief).unwrap();
        let readers = Readers::new(
            ReadAccess::Members,
            Arc::new(network.msp().unwrap()),
            "main".into(),
        );
        let now_ms = tx::now_ms();
        let header = grant_header(&signer, "main", now_ms, READ_GRANT_LIFETIME_MAX_MS);
        let identity = readers.granted(header.as_bytes(), now_ms).unwrap();
        let cert_ends_ms = u64::try_from(identity.not_after).unwrap() * 1000;
        assert!(cert_ends_ms < now_ms + READ_GRANT_LIFETIME_MAX_MS);
        // Still inside the grant, past the certificate: checked again, and refused.
        let after = cert_ends_ms + 1000;
        let refused = readers.granted(header.as_bytes(), after).unwrap_err();
        assert_eq!(refused.code(), Code::Unauthenticated);
        assert!(
            refused.message().starts_with("BAD_READ_GRANT"),
            "{refused:?}"
        );
    }

    #[test]
    fn a_remembered_grant_is_checked_again_after_the_trust_changes() {
        let network = NetworkIdentities::generate(&["Org1"], time::Duration::days(1)).unwrap();
        let org = &network.orgs[0];
        let alice = org
            .ca
            .issue(Role::Client, "alice.Org1", time::Duration::days(1))
            .unwrap();
        let signer = Signer::new(&alice).unwrap();
        let msp = Arc::new(network.msp().unwrap());
        let readers = Readers::new(ReadAccess::Members, msp.clone(), "main".into());
        let now_ms = tx::now_ms();
        let header = grant_header(&signer, "main", now_ms, READ_GRANT_LIFETIME_MAX_MS);
        let identity = readers.granted(header.as_bytes(), now_ms).unwrap();
        assert!(
            readers.granted(header.as_bytes(), now_ms).is_ok(),
            "remembered"
        );
        // A configuration update revokes alice: her grant, still inside its life, ends
        // at once.
        msp.reconfigure([org.ca.cert_der()], [("Org1".to_string(), identity.key)])
            .unwrap();
        let refused = readers.granted(header.as_bytes(), now_ms).unwrap_err();
        assert!(refused.message().contains("revoked"), "{refused:?}");
    }
}

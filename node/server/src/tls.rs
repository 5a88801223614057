//! TLS for the API's port (rustls, ring): one certificate and key, optionally client
//! certificates checked against a CA (mutual TLS).
//!
//! The listener does the handshakes itself rather than through tonic's `ServerTlsConfig`,
//! which offers only `h2` by ALPN: a client that asks for `http/1.1` alone (gRPC-web from
//! an HTTP/1.1 stack, `curl --http1.1`) would be refused. Here ALPN offers `h2` and
//! `http/1.1`, and the connection then speaks whichever the client chose (the server
//! tells HTTP/2 from HTTP/1.1 by the first bytes either way), so gRPC, gRPC-web and the
//! operations routes all work over TLS on the one port.
//!
//! Everything is read and checked when the server is bound ([`TlsConfig::server_config`]),
//! so a missing, unreadable or mismatched file stops the node at start with the file's
//! name, never at its first connection.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::crypto::CryptoProvider;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::sign::CertifiedKey;
use tokio_rustls::rustls::{self, RootCertStore, ServerConfig};
use tokio_rustls::server::TlsStream;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::Connected;

use crate::connections::{Caller, Connections, Limited};
use runnel_ledger::identity::{Msp, Role};

/// The protocols offered by ALPN, preferred first.
pub const ALPN_PROTOCOLS: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// Whether clients must present a certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientAuth {
    /// No client certificate is asked for.
    #[default]
    None,
    /// A client may present a certificate; one that does not chain to the client CA is
    /// refused, a client without one is served.
    Optional,
    /// Every client must present a certificate that chains to the client CA.
    Required,
}

impl ClientAuth {
    /// The name used in runnel.toml and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            ClientAuth::None => "none",
            ClientAuth::Optional => "optional",
            ClientAuth::Required => "required",
        }
    }
}

impl std::fmt::Display for ClientAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ClientAuth {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(ClientAuth::None),
            "optional" => Ok(ClientAuth::Optional),
            "required" => Ok(ClientAuth::Required),
            _ => Err(format!(
                "`{s}` is not a client authentication mode: none, optional or required"
            )),
        }
    }
}

/// How the API serves TLS: PEM files read when the server is bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsConfig {
    /// The server's certificate chain, PEM: its own certificate first, then any
    /// intermediates.
    pub cert: PathBuf,
    /// The server's private key, PEM (PKCS#8, SEC1 or PKCS#1).
    pub key: PathBuf,
    /// Whether clients must present a certificate.
    pub client_auth: ClientAuth,
    /// The CA certificates (PEM, one or more) client certificates must chain to; needed
    /// unless `client_auth` is [`ClientAuth::None`] or `member_cas` has some.
    pub client_ca: Option<PathBuf>,
    /// The network's MSP CA certificates (DER), trusted for client certificates too, so
    /// that a member's own certificate identifies it over mutual TLS
    /// ([`crate::readers`]). The server fills them in when reads are for members.
    pub member_cas: Vec<Vec<u8>>,
    /// How long a client may take over its handshake before the connection is dropped.
    pub handshake_timeout: Duration,
}

impl TlsConfig {
    /// A server certificate and key, no client authentication.
    pub fn new(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> TlsConfig {
        TlsConfig {
            cert: cert.into(),
            key: key.into(),
            client_auth: ClientAuth::None,
            client_ca: None,
            member_cas: Vec::new(),
            handshake_timeout: Duration::from_secs(10),
        }
    }

    /// Mutual TLS: client certificates checked against the CA certificates in
    /// `client_ca`, as `client_auth` says.
    pub fn with_client_auth(self, client_auth: ClientAuth, client_ca: impl Into<PathBuf>) -> Self {
        TlsConfig {
            client_auth,
            client_ca: Some(client_ca.into()),
            ..self
        }
    }

    /// Reads and checks the files: the rustls configuration the API serves with.
    pub fn server_config(&self) -> Result<Arc<ServerConfig>, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let certs = read_certs(&self.cert, "certificate")?;
        let key = read_key(&self.key)?;
        check_pair(
            &provider,
            &self.cert,
            &self.key,
            certs.clone(),
            key.clone_key(),
        )?;
        warn_if_outside_validity(&self.cert, &certs[0]);

        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Config(e.to_string()))?;
        let builder = match self.client_auth {
            ClientAuth::None => builder.with_no_client_auth(),
            mode => {
                let what = "client CA";
                let mut roots = RootCertStore::empty();
                let (path, files) = match &self.client_ca {
                    Some(path) => (path.clone(), read_certs(path, what)?),
                    None if self.member_cas.is_empty() => {
                        return Err(TlsError::ClientCaMissing { mode });
                    }
                    None => (PathBuf::from("(the network's CAs)"), Vec::new()),
                };
                let malformed = |e: rustls::Error| TlsError::Malformed {
                    what,
                    path: path.clone(),
                    message: e.to_string(),
                };
                for cert in files {
                    roots.add(cert).map_err(malformed)?;
                }
                for der in &self.member_cas {
                    roots
                        .add(CertificateDer::from(der.clone()))
                        .map_err(malformed)?;
                }
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone());
                let verifier = match mode {
                    ClientAuth::Optional => verifier.allow_unauthenticated(),
                    _ => verifier,
                };
                let verifier = verifier.build().map_err(|e| TlsError::Malformed {
                    what,
                    path: path.clone(),
                    message: e.to_string(),
                })?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut config = builder
            .with_single_cert(certs, key)
            .map_err(|e| TlsError::Config(e.to_string()))?;
        config.alpn_protocols = ALPN_PROTOCOLS.map(<[u8]>::to_vec).to_vec();
        Ok(Arc::new(config))
    }
}

/// Why TLS could not be set up. Each names the file at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error("cannot read the TLS {what} {path}: {message}")]
    Read {
        /// "certificate", "private key" or "client CA".
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The system's reason.
        message: String,
    },
    /// A file holds nothing of what it should.
    #[error("the TLS {what} {path} holds no PEM {expected}")]
    Empty {
        /// "certificate", "private key" or "client CA".
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The PEM section looked for.
        expected: &'static str,
    },
    /// A file does not parse.
    #[error("the TLS {what} {path} is malformed: {message}")]
    Malformed {
        /// "certificate", "private key" or "client CA".
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
    /// The key is of a kind rustls cannot sign with.
    #[error(
        "the TLS private key {path} cannot be used: {message} (ECDSA P-256 or P-384, Ed25519 or RSA)"
    )]
    UnusableKey {
        /// The file.
        path: PathBuf,
        /// rustls's message.
        message: String,
    },
    /// The key is not the certificate's.
    #[error("the TLS private key {key} does not belong to the certificate {cert}")]
    Mismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },
    /// Client authentication without a CA to check clients against.
    #[error(
        "TLS client_auth = \"{mode}\" needs a client CA (api.tls.client_ca, --tls-client-ca): \
         the CA certificates client certificates must chain to"
    )]
    ClientCaMissing {
        /// The mode asked for.
        mode: ClientAuth,
    },
    /// rustls refused the configuration.
    #[error("setting up TLS: {0}")]
    Config(String),
}

fn read(path: &Path, what: &'static str) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|e| TlsError::Read {
        what,
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Every certificate in a PEM file, in order; at least one.
fn read_certs(path: &Path, what: &'static str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read(path, what)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Malformed {
            what,
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::Empty {
            what,
            path: path.to_path_buf(),
            expected: "CERTIFICATE",
        });
    }
    Ok(certs)
}

/// The first private key in a PEM file.
fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let what = "private key";
    let pem = read(path, what)?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => TlsError::Empty {
            what,
            path: path.to_path_buf(),
            expected: "PRIVATE KEY",
        },
        e => TlsError::Malformed {
            what,
            path: path.to_path_buf(),
            message: e.to_string(),
        },
    })
}

/// Checks that `key` can sign and is the key of the first certificate of `certs`.
fn check_pair(
    provider: &CryptoProvider,
    cert_path: &Path,
    key_path: &Path,
    certs: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<(), TlsError> {
    let signing_key =
        provider
            .key_provider
            .load_private_key(key)
            .map_err(|e| TlsError::UnusableKey {
                path: key_path.to_path_buf(),
                message: e.to_string(),
            })?;
    match CertifiedKey::new(certs, signing_key).keys_match() {
        Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => Ok(()),
        Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => {
            Err(TlsError::Mismatch {
                cert: cert_path.to_path_buf(),
                key: key_path.to_path_buf(),
            })
        }
        Err(e) => Err(TlsError::Malformed {
            what: "certificate",
            path: cert_path.to_path_buf(),
            message: e.to_string(),
        }),
    }
}

/// Warns when the server's certificate is expired or not yet valid: clients will refuse
/// it (the node still starts, its clock may be the one that is wrong).
fn warn_if_outside_validity(path: &Path, cert: &CertificateDer<'_>) {
    let Ok((_, parsed)) = x509_parser::parse_x509_certificate(cert.as_ref()) else {
        return;
    };
    if !parsed.validity().is_valid() {
        tracing::warn!(
            cert = %path.display(),
            not_before = %parsed.validity().not_before,
            not_after = %parsed.validity().not_after,
            "the TLS certificate is outside its validity period: clients will refuse it"
        );
    }
}

/// Connections from `listener` once their TLS handshake is done, each admitted as a
/// member (a peer's or an orderer's certificate of `members`, presented for mutual TLS)
/// or a client, within `connections`' bounds ([`crate::connections`]). Handshakes run
/// concurrently, each bounded by `timeout`, so a slow or silent client holds up no one;
/// a failed one is logged and dropped. The listener closes when the stream is dropped.
pub fn incoming(
    listener: TcpListener,
    connections: Arc<Connections>,
    members: Option<Arc<Msp>>,
    config: Arc<ServerConfig>,
    timeout: Duration,
) -> ReceiverStream<io::Result<TlsStream<Limited<TcpStream>>>> {
    let (ready, incoming) = mpsc::channel(64);
    tokio::spawn(async move {
        let acceptor = TlsAcceptor::from(config);
        let mut tcp = crate::connections::accept(listener, connections, true);
        loop {
            let stream = tokio::select! {
                _ = ready.closed() => break,
                next = tcp.next() => match next {
                    Some(Ok(stream)) => stream,
                    Some(Err(_)) => continue,
                    None => break,
                },
            };
            let (acceptor, ready, members) = (acceptor.clone(), ready.clone(), members.clone());
            tokio::spawn(async move {
                let peer = stream.connect_info().remote_addr();
                match tokio::time::timeout(timeout, acceptor.accept(stream)).await {
                    Ok(Ok(mut tls)) => {
                        let caller = caller(&tls, members.as_deref());
                        if !tls.get_mut().0.admit(caller) {
                            tracing::debug!(
                                ?peer,
                                ?caller,
                                "no room for another connection; closed"
                            );
                            return;
                        }
                        let _ = ready.send(Ok(tls)).await;
                    }
                    Ok(Err(e)) => {
                        tracing::debug!(?peer, error = %e, "TLS handshake failed");
                    }
                    Err(_) => {
                        tracing::debug!(?peer, "TLS handshake timed out");
                    }
                }
            });
        }
    });
    ReceiverStream::new(incoming)
}

/// A member when the connection presented a peer's or an orderer's certificate that
/// `members` trusts now; a client otherwise.
fn caller<IO>(tls: &TlsStream<IO>, members: Option<&Msp>) -> Caller {
    let (Some(msp), Some(cert)) = (
        members,
        tls.get_ref().1.peer_certificates().and_then(<[_]>::first),
    ) else {
        return Caller::Client;
    };
    match msp.verify(cert.as_ref(), runnel_ledger::tx::now_seconds()) {
        Ok(identity) if matches!(identity.role, Role::Peer | Role::Orderer) => Caller::Member,
        _ => Caller::Client,
    }
}

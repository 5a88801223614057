//! The API over TLS end to end: a real server on loopback with the certificates a network
//! is made with (identities/<org>/tls/), called by tonic's TLS client, by hand-made
//! rustls clients for gRPC-web and the operations routes over HTTP/1.1, with and without
//! client certificates; and the start-time errors for bad TLS files.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::{Buf, Bytes};
use http_body_util::{BodyExt, Full};
use prost::Message;
use runnel_ledger::identity::{
    NetworkIdentities, TLS_CA_FILE, TLS_CLIENT_CERT_FILE, TLS_CLIENT_KEY_FILE,
    TLS_SERVER_CERT_FILE, TLS_SERVER_KEY_FILE,
};
use runnel_ledger::proto::{
    CommitStatusRequest, EndorseRequest, EvaluateRequest, GetNetworkInfoRequest,
    GetNetworkInfoResponse, SignedTransaction, SubmitRequest, TxPhase, ValidationCode,
};
use runnel_ledger::tx;
use runnel_server::proto::gateway_client::GatewayClient;
use runnel_server::proto::query_client::QueryClient;
use runnel_server::{ApiConfig, ApiError, ClientAuth, Server, TlsConfig, TlsError};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Identity};

use runnel_testing::kv_wasm;

use crate::node::{Node, WAIT, open_api, open_ledger};

// ---------------------------------------------------------------------------------------
// A TLS node on loopback

/// A file of `org`'s TLS material in `dir`.
pub(crate) fn tls_file(dir: &Path, org: &str, file: &str) -> PathBuf {
    dir.join("identities").join(org).join(file)
}

/// Org1's node's TLS server certificate and key.
pub(crate) fn server_tls(dir: &Path) -> TlsConfig {
    TlsConfig::new(
        tls_file(dir, "Org1", TLS_SERVER_CERT_FILE),
        tls_file(dir, "Org1", TLS_SERVER_KEY_FILE),
    )
}

impl Node {
    /// A node of Org1 and Org2 serving the API and the operations routes over TLS as
    /// `tls` says.
    async fn start_tls(tls: impl FnOnce(&Path) -> TlsConfig) -> Node {
        let api = |dir: &Path| ApiConfig {
            tls: Some(tls(dir)),
            ..open_api()
        };
        Node::serve(&["Org1", "Org2"], api, true).await
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The PEM of one of this network's TLS files.
    pub(crate) fn pem(&self, org: &str, file: &str) -> Vec<u8> {
        std::fs::read(tls_file(self.path(), org, file)).unwrap()
    }

    /// Org `org`'s TLS client certificate and key, for tonic.
    pub(crate) fn client_identity(&self, org: &str) -> Identity {
        Identity::from_pem(
            self.pem(org, TLS_CLIENT_CERT_FILE),
            self.pem(org, TLS_CLIENT_KEY_FILE),
        )
    }

    /// A tonic channel over TLS trusting `ca` (PEM), with `tls` on top.
    pub(crate) async fn channel_with(
        &self,
        ca: Vec<u8>,
        tls: impl FnOnce(ClientTlsConfig) -> ClientTlsConfig,
    ) -> Result<Channel, String> {
        let config = tls(ClientTlsConfig::new().ca_certificate(Certificate::from_pem(ca)));
        Channel::from_shared(format!("https://{}", self.addr))
            .unwrap()
            .timeout(WAIT)
            .tls_config(config)
            .map_err(|e| chain(&e))?
            .connect()
            .await
            .map_err(|e| chain(&e))
    }

    /// A tonic channel trusting Org1's TLS CA.
    pub(crate) async fn tls_channel(&self) -> Channel {
        self.channel_with(self.pem("Org1", TLS_CA_FILE), |tls| tls)
            .await
            .unwrap()
    }

    async fn deploy_kv(&self) {
        let ledger = self.ledger.clone();
        tokio::task::spawn_blocking(move || ledger.deploy("kv", "1", kv_wasm(), "").unwrap())
            .await
            .unwrap();
    }
}

/// An error and every error under it, on one line.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

/// GetNetworkInfo over a channel that may not have connected; any failure as text.
async fn network_info(channel: Result<Channel, String>) -> Result<GetNetworkInfoResponse, String> {
    let channel = channel?;
    tokio::time::timeout(
        WAIT,
        QueryClient::new(channel).get_network_info(GetNetworkInfoRequest {}),
    )
    .await
    .expect("an answer or an error in time")
    .map(tonic::Response::into_inner)
    .map_err(|status| {
        use std::error::Error as _;
        match status.source() {
            Some(source) => format!("{status}: {}", chain(source)),
            None => status.to_string(),
        }
    })
}

// ---------------------------------------------------------------------------------------
// gRPC over TLS

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evaluate_and_submit_over_tls_trusting_the_network_tls_ca() {
    let node = Node::start_tls(server_tls).await;
    node.deploy_kv().await;
    let client = node.client();
    let mut gateway = GatewayClient::new(node.tls_channel().await);

    let proposal = |function: &str, args: Vec<Vec<u8>>| {
        let proposal = tx::new_proposal(node.ledger.channel(), "kv", function, args, &client);
        tx::sign_proposal(&client, &proposal)
    };
    let endorsed = gateway
        .endorse(EndorseRequest {
            endorsing_orgs: Vec::new(),
            proposal: Some(proposal("put", vec![b"colour".to_vec(), b"blue".to_vec()])),
        })
        .await
        .unwrap()
        .into_inner();
    let message = tx::transaction_message(&tx::sha256(&endorsed.transaction));
    let signed = SignedTransaction {
        signature: client.sign(&message).to_vec(),
        transaction: endorsed.transaction,
    };
    let submitted = gateway
        .submit(SubmitRequest {
            transaction: signed.encode_to_vec(),
            ..SubmitRequest::default()
        })
        .await
        .unwrap()
        .into_inner();
    let status = gateway
        .commit_status(CommitStatusRequest {
            tx_id: submitted.tx_id,
            wait_for: TxPhase::Committed as i32,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(status.code(), ValidationCode::Valid);

    let value = gateway
        .evaluate(EvaluateRequest {
            proposal: Some(proposal("get", vec![b"colour".to_vec()])),
        })
        .await
        .unwrap()
        .into_inner()
        .result;
    assert_eq!(value, b"\"blue\"");

    // The certificate also holds localhost and ::1 besides 127.0.0.1.
    let by_name = node
        .channel_with(node.pem("Org1", TLS_CA_FILE), |tls| {
            tls.domain_name("localhost")
        })
        .await;
    assert_eq!(network_info(by_name).await.unwrap().orgs, ["Org1", "Org2"]);
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_and_untrusting_clients_are_refused() {
    let node = Node::start_tls(server_tls).await;

    // Plain HTTP/2 to the TLS port.
    let plain = Channel::from_shared(format!("http://{}", node.addr))
        .unwrap()
        .timeout(WAIT)
        .connect()
        .await
        .map_err(|e| chain(&e));
    assert!(network_info(plain).await.is_err());

    // A client trusting another network's TLS CA, of the same name: the node's
    // certificate does not verify against it.
    let other = NetworkIdentities::generate(&["Org1"], time::Duration::days(1)).unwrap();
    let foreign_ca = other.orgs[0].tls.ca.cert_pem().as_bytes().to_vec();
    let refused = network_info(node.channel_with(foreign_ca, |tls| tls).await)
        .await
        .unwrap_err();
    assert!(
        refused.contains("invalid peer certificate: BadSignature"),
        "{refused}"
    );

    // Org2's TLS CA did not issue Org1's node's certificate either.
    let org2 = network_info(
        node.channel_with(node.pem("Org2", TLS_CA_FILE), |tls| tls)
            .await,
    )
    .await
    .unwrap_err();
    assert!(org2.contains("UnknownIssuer"), "{org2}");

    // The right CA, but a name the certificate does not hold.
    let wrong_name = network_info(
        node.channel_with(node.pem("Org1", TLS_CA_FILE), |tls| {
            tls.domain_name("elsewhere.example")
        })
        .await,
    )
    .await
    .unwrap_err();
    assert!(wrong_name.contains("not valid for name"), "{wrong_name}");

    // The node goes on serving the clients that trust it.
    assert_eq!(
        network_info(Ok(node.tls_channel().await))
            .await
            .unwrap()
            .channel,
        "main"
    );
    node.stop().await;
}

// ---------------------------------------------------------------------------------------
// gRPC-web and the operations routes over HTTP/1.1 through TLS

/// A rustls client trusting `ca` (PEM), offering `alpn`, with an optional client
/// certificate.
fn rustls_client(ca: &[u8], alpn: &[&[u8]], identity: Option<(&[u8], &[u8])>) -> ClientConfig {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca) {
        roots.add(cert.unwrap()).unwrap();
    }
    let builder =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots);
    let mut config = match identity {
        Some((cert, key)) => builder
            .with_client_auth_cert(
                CertificateDer::pem_slice_iter(cert)
                    .map(Result::unwrap)
                    .collect(),
                PrivateKeyDer::from_pem_slice(key).unwrap(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    config
}

type TlsStream = tokio_rustls::client::TlsStream<tokio::net::TcpStream>;

/// A TLS connection to `addr` as `127.0.0.1`.
async fn tls_connect(addr: SocketAddr, config: ClientConfig) -> std::io::Result<TlsStream> {
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let name = ServerName::try_from("127.0.0.1").unwrap();
    tokio::time::timeout(WAIT, connector.connect(name, tcp))
        .await
        .expect("a handshake in time")
}

/// One HTTP/1.1 exchange on `stream`.
async fn http1(
    stream: TlsStream,
    request: http::Request<Full<Bytes>>,
) -> Result<(http::response::Parts, Bytes), String> {
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| chain(&e))?;
    tokio::spawn(connection);
    let response = tokio::time::timeout(WAIT, sender.send_request(request))
        .await
        .expect("an answer in time")
        .map_err(|e| chain(&e))?;
    let (parts, body) = response.into_parts();
    let body = body.collect().await.map_err(|e| chain(&e))?.to_bytes();
    Ok((parts, body))
}

fn get(addr: SocketAddr, path: &str) -> http::Request<Full<Bytes>> {
    http::Request::get(format!("https://{addr}{path}"))
        .header("host", addr.to_string())
        .body(Full::new(Bytes::new()))
        .unwrap()
}

/// A gRPC-web unary call with an empty message.
fn grpc_web(addr: SocketAddr, path: &str) -> http::Request<Full<Bytes>> {
    http::Request::post(format!("https://{addr}{path}"))
        .header("host", addr.to_string())
        .header("content-type", "application/grpc-web+proto")
        .header("x-grpc-web", "1")
        .header("origin", "https://localhost:5173")
        .body(Full::new(Bytes::from_static(&[0, 0, 0, 0, 0])))
        .unwrap()
}

/// The frames of a gRPC-web body: flag and payload.
fn frames(mut body: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    while !body.is_empty() {
        let flag = body.get_u8();
        let len = body.get_u32() as usize;
        out.push((flag, body[..len].to_vec()));
        body.advance(len);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_web_and_ops_routes_over_http1_through_tls() {
    let node = Node::start_tls(server_tls).await;
    let ca = node.pem("Org1", TLS_CA_FILE);

    // A client that speaks only HTTP/1.1 says so by ALPN, and is served.
    let stream = tls_connect(node.addr, rustls_client(&ca, &[b"http/1.1"], None))
        .await
        .unwrap();
    assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let (parts, body) = http1(
        stream,
        grpc_web(node.addr, "/runnel.v1.Query/GetNetworkInfo"),
    )
    .await
    .unwrap();
    assert_eq!(parts.status, 200);
    assert_eq!(parts.headers["content-type"], "application/grpc-web+proto");
    let reply = frames(&body);
    assert_eq!(reply.len(), 2, "{reply:?}");
    let info = GetNetworkInfoResponse::decode(reply[0].1.as_slice()).unwrap();
    assert_eq!(info.orgs, ["Org1", "Org2"]);
    assert_eq!(reply[1].0, 0x80);
    assert!(String::from_utf8_lossy(&reply[1].1).contains("grpc-status:0"));

    // The operations routes, on the same port.
    let stream = tls_connect(node.addr, rustls_client(&ca, &[b"http/1.1"], None))
        .await
        .unwrap();
    let (parts, body) = http1(stream, get(node.addr, "/healthz")).await.unwrap();
    assert_eq!((parts.status.as_u16(), &body[..]), (200, &b"ok\n"[..]));
    let stream = tls_connect(node.addr, rustls_client(&ca, &[b"http/1.1"], None))
        .await
        .unwrap();
    let (parts, body) = http1(stream, get(node.addr, "/metrics")).await.unwrap();
    assert_eq!(parts.status, 200);
    assert!(String::from_utf8_lossy(&body).contains("runnel_height"));

    // No ALPN at all (many HTTP/1.1 clients): HTTP/1.1 too.
    let stream = tls_connect(node.addr, rustls_client(&ca, &[], None))
        .await
        .unwrap();
    assert_eq!(stream.get_ref().1.alpn_protocol(), None);
    let (parts, _) = http1(stream, get(node.addr, "/healthz")).await.unwrap();
    assert_eq!(parts.status, 200);

    // A client offering both (a browser) gets HTTP/2.
    let stream = tls_connect(node.addr, rustls_client(&ca, &[b"h2", b"http/1.1"], None))
        .await
        .unwrap();
    assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    node.stop().await;
}

// ---------------------------------------------------------------------------------------
// Mutual TLS

/// Org1's node's certificate; clients must present one Org1's TLS CA issued.
fn mutual(client_auth: ClientAuth) -> impl FnOnce(&Path) -> TlsConfig {
    move |dir| server_tls(dir).with_client_auth(client_auth, tls_file(dir, "Org1", TLS_CA_FILE))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_required_refuses_clients_without_a_certificate_from_the_client_ca() {
    let node = Node::start_tls(mutual(ClientAuth::Required)).await;
    let ca = node.pem("Org1", TLS_CA_FILE);

    // Refused once the server has seen that no certificate came (the client learns it
    // from the server's alert, or only from the connection closing).
    let anonymous = network_info(node.channel_with(ca.clone(), |tls| tls).await).await;
    assert!(anonymous.is_err(), "{anonymous:?}");

    // Org2's TLS CA is not the client CA.
    let org2 = network_info(
        node.channel_with(ca.clone(), |tls| tls.identity(node.client_identity("Org2")))
            .await,
    )
    .await;
    assert!(org2.is_err(), "{org2:?}");

    let accepted = network_info(
        node.channel_with(ca.clone(), |tls| tls.identity(node.client_identity("Org1")))
            .await,
    )
    .await
    .unwrap();
    assert_eq!(accepted.channel, "main");

    // The same over HTTP/1.1: no certificate, no answer.
    let stream = tls_connect(node.addr, rustls_client(&ca, &[b"http/1.1"], None)).await;
    let refused = match stream {
        Ok(stream) => http1(stream, get(node.addr, "/healthz")).await.map(|_| ()),
        Err(e) => Err(e.to_string()),
    };
    assert!(refused.is_err());
    let (cert, key) = (
        node.pem("Org1", TLS_CLIENT_CERT_FILE),
        node.pem("Org1", TLS_CLIENT_KEY_FILE),
    );
    let stream = tls_connect(
        node.addr,
        rustls_client(&ca, &[b"http/1.1"], Some((&cert, &key))),
    )
    .await
    .unwrap();
    let (parts, _) = http1(stream, get(node.addr, "/healthz")).await.unwrap();
    assert_eq!(parts.status, 200);
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_optional_serves_clients_without_a_certificate_but_checks_one_given() {
    let node = Node::start_tls(mutual(ClientAuth::Optional)).await;
    let ca = node.pem("Org1", TLS_CA_FILE);
    let anonymous = network_info(node.channel_with(ca.clone(), |tls| tls).await).await;
    assert_eq!(anonymous.unwrap().channel, "main");
    let member = network_info(
        node.channel_with(ca.clone(), |tls| tls.identity(node.client_identity("Org1")))
            .await,
    )
    .await;
    assert_eq!(member.unwrap().channel, "main");
    let stranger = network_info(
        node.channel_with(ca, |tls| tls.identity(node.client_identity("Org2")))
            .await,
    )
    .await;
    assert!(stranger.is_err(), "{stranger:?}");
    node.stop().await;
}

// ---------------------------------------------------------------------------------------
// Bad files: refused when the server is bound, naming the file

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tls_files_are_refused_at_bind_naming_the_file() {
    let (ledger, dir) = open_ledger(&["Org1", "Org2"]).await;
    let dir = dir.path();
    let bind = |tls: TlsConfig| {
        let ledger = ledger.clone();
        async move {
            let api = ApiConfig {
                listen: "127.0.0.1:0".parse().unwrap(),
                tls: Some(tls),
                ..open_api()
            };
            match Server::bind(ledger, api).await {
                Ok(_) => panic!("bound with bad TLS files"),
                Err(ApiError::Tls(e)) => e,
                Err(e) => panic!("not a TLS error: {e}"),
            }
        }
    };
    let cert = tls_file(dir, "Org1", TLS_SERVER_CERT_FILE);
    let key = tls_file(dir, "Org1", TLS_SERVER_KEY_FILE);

    let missing = dir.join("no-such.pem");
    let error = bind(TlsConfig::new(&missing, &key)).await;
    assert!(matches!(&error, TlsError::Read { path, .. } if *path == missing));
    assert!(error.to_string().contains("no-such.pem"), "{error}");

    // Org2's node's key with Org1's node's certificate.
    let org2_key = tls_file(dir, "Org2", TLS_SERVER_KEY_FILE);
    let error = bind(TlsConfig::new(&cert, &org2_key)).await;
    assert_eq!(
        error,
        TlsError::Mismatch {
            cert: cert.clone(),
            key: org2_key.clone()
        }
    );
    assert!(error.to_string().contains(&*org2_key.to_string_lossy()));

    // A certificate where the key should be, and the other way round.
    let error = bind(TlsConfig::new(&cert, &cert)).await;
    assert!(
        matches!(&error, TlsError::Empty { path, .. } if *path == cert),
        "{error}"
    );
    let error = bind(TlsConfig::new(&key, &key)).await;
    assert!(
        matches!(&error, TlsError::Empty { path, .. } if *path == key),
        "{error}"
    );

    // Client authentication needs a client CA, and one that reads.
    let error = bind(TlsConfig {
        client_auth: ClientAuth::Required,
        ..TlsConfig::new(&cert, &key)
    })
    .await;
    assert_eq!(
        error,
        TlsError::ClientCaMissing {
            mode: ClientAuth::Required
        }
    );
    let error =
        bind(TlsConfig::new(&cert, &key).with_client_auth(ClientAuth::Optional, &key)).await;
    assert!(
        matches!(&error, TlsError::Empty { path, .. } if *path == key),
        "{error}"
    );

    // The files as written are fine.
    let api = ApiConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        tls: Some(TlsConfig::new(&cert, &key)),
        ..open_api()
    };
    assert!(Server::bind(ledger.clone(), api).await.unwrap().is_tls());
    tokio::task::spawn_blocking(move || drop(ledger))
        .await
        .unwrap();
}

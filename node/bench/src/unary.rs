//! A lean unary gRPC client for `runnel bench`: one HTTP/2 connection (the `h2` crate),
//! shared by clones, with each call sent and awaited by the task that makes it.
//!
//! `runnel bench` shares the machine with the node it measures, so what its calls cost
//! is taken from the node. A tonic channel passes each call through a buffer task, and
//! hyper's client through a dispatch task and a task per response: three hand-offs per
//! call before the connection's own task. Here a call queues its HEADERS and DATA
//! frames at once and waits for the answer in place; on a single-threaded runtime the
//! two frames then leave in one write. The wire is plain gRPC (the same requests any
//! client sends, over TLS for an https:// --url), so the node cannot tell this client
//! from another. It is kept for that one measured reason: against tonic's client it
//! cut the load generator's CPU from ~120 to ~81 µs a transaction and gave the node 7%
//! more tx/s (eight interleaved pairs, docs/perf-log.md, 2026-11-25); the other tools
//! use tonic.

use std::sync::Arc;

use anyhow::{Context as _, Result, anyhow};
use bytes::{BufMut, Bytes, BytesMut};
use http::header::{CONTENT_TYPE, TE};
use http::{Method, Request, Uri};
use prost::Message;
use runnel_api::proto::{
    CommitStatusRequest, CommitStatusResponse, EndorseRequest, EndorseResponse, EvaluateRequest,
    EvaluateResponse, SubmitRequest, SubmitResponse,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::rustls::{self, RootCertStore};
use tonic::{Code, Status};

use runnel_client::{CALL_TIMEOUT, Connection, ReadGrants, TlsFiles, tls_files};

/// Flow-control windows: large enough that a stream never waits for a window update,
/// and the connection's window is topped up rarely.
const STREAM_WINDOW: u32 = 1 << 20;
const CONNECTION_WINDOW: u32 = 8 << 20;

/// The largest answer a call accepts: the node's own limit (`api.message_bytes_max`)
/// at its default, with room to spare.
const ANSWER_BYTES_MAX: usize = 64 << 20;

/// Where and how to connect: the node's URL, and for https:// the TLS client set up once
/// from the network directory (the same trust and client certificate as the other
/// commands). Clones share it.
#[derive(Clone)]
pub(crate) struct Dialer {
    /// Read grants for the calls that are reads (`CommitStatus`), for a node whose reads
    /// are for members.
    grants: ReadGrants,
    url: String,
    scheme: http::uri::Scheme,
    authority: http::uri::Authority,
    /// For https: the connector and the name the node's certificate must hold.
    tls: Option<(TlsConnector, ServerName<'static>)>,
}

impl Dialer {
    /// Reads what `connection` names: its URL, and its TLS files for an https:// one.
    pub(crate) fn new(connection: &Connection, grants: ReadGrants) -> Result<Dialer> {
        let url = connection.url.clone();
        let uri: Uri = url.parse().map_err(|e| anyhow!("bad --url {url}: {e}"))?;
        let authority = uri
            .authority()
            .cloned()
            .ok_or_else(|| anyhow!("bad --url {url}: no host"))?;
        let scheme = uri.scheme().cloned().unwrap_or(http::uri::Scheme::HTTP);
        let tls = if scheme == http::uri::Scheme::HTTPS {
            let files = tls_files(connection)?;
            let name = files
                .server_name
                .clone()
                .unwrap_or_else(|| host(&authority).to_string());
            let name = ServerName::try_from(name.clone())
                .map_err(|e| anyhow!("`{name}` is not a name a certificate can hold: {e}"))?;
            Some((TlsConnector::from(rustls_config(files)?), name))
        } else {
            None
        };
        Ok(Dialer {
            grants,
            url,
            scheme,
            authority,
            tls,
        })
    }

    /// Opens a connection and starts its task on the current runtime.
    pub(crate) async fn connect(&self) -> Result<Unary> {
        let url = &self.url;
        let port = self
            .authority
            .port_u16()
            .unwrap_or(if self.tls.is_some() { 443 } else { 80 });
        let tcp = TcpStream::connect((host(&self.authority), port))
            .await
            .with_context(|| format!("cannot reach the node at {url}"))?;
        tcp.set_nodelay(true)?;
        let send = match &self.tls {
            Some((connector, name)) => {
                let stream = connector
                    .connect(name.clone(), tcp)
                    .await
                    .with_context(|| format!("TLS handshake with {url}"))?;
                start(stream, url).await?
            }
            None => start(tcp, url).await?,
        };
        Ok(Unary {
            send,
            scheme: self.scheme.clone(),
            authority: self.authority.clone(),
            grants: self.grants.clone(),
        })
    }
}

/// The host of `authority`, an IPv6 address without its brackets.
fn host(authority: &http::uri::Authority) -> &str {
    authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']')
}

/// A connection to a node's gRPC API; clones share it.
#[derive(Clone)]
pub(crate) struct Unary {
    send: h2::client::SendRequest<Bytes>,
    scheme: http::uri::Scheme,
    authority: http::uri::Authority,
    grants: ReadGrants,
}

impl Unary {
    /// Calls the unary method at `path` (`/package.Service/Method`), giving up after
    /// [`CALL_TIMEOUT`] as the other commands do.
    pub(crate) async fn call<Q: Message, A: Message + Default>(
        &self,
        path: &str,
        request: &Q,
    ) -> Result<A, Status> {
        tokio::time::timeout(CALL_TIMEOUT, self.exchange(path, request))
            .await
            .unwrap_or_else(|_| {
                Err(Status::deadline_exceeded(format!(
                    "{path}: no answer in {} s",
                    CALL_TIMEOUT.as_secs()
                )))
            })
    }

    async fn exchange<Q: Message, A: Message + Default>(
        &self,
        path: &str,
        request: &Q,
    ) -> Result<A, Status> {
        let transport = |e: h2::Error| Status::unavailable(format!("HTTP/2: {e}"));
        let mut send = self.send.clone().ready().await.map_err(transport)?;
        let mut head = Request::builder();
        if runnel_api::grant::is_read(path)
            && let Some(grant) = self.grants.current()
        {
            head = head.header(
                runnel_api::grant::READ_GRANT_HEADER,
                grant.as_encoded_bytes(),
            );
        }
        let head = head
            .method(Method::POST)
            .uri(
                Uri::builder()
                    .scheme(self.scheme.clone())
                    .authority(self.authority.clone())
                    .path_and_query(path)
                    .build()
                    .map_err(|e| Status::internal(format!("bad path {path}: {e}")))?,
            )
            .header(CONTENT_TYPE, "application/grpc")
            .header(TE, "trailers")
            .body(())
            .map_err(|e| Status::internal(e.to_string()))?;
        let length = request.encoded_len();
        let mut message = BytesMut::with_capacity(5 + length);
        message.put_u8(0);
        message.put_u32(u32::try_from(length).map_err(|_| Status::internal("request over 4 GiB"))?);
        request
            .encode(&mut message)
            .map_err(|e| Status::internal(e.to_string()))?;
        let (response, mut stream) = send.send_request(head, false).map_err(transport)?;
        stream
            .send_data(message.freeze(), true)
            .map_err(transport)?;

        let (head, mut body) = response.await.map_err(transport)?.into_parts();
        if head.status != http::StatusCode::OK {
            return Err(Status::unknown(format!("HTTP status {}", head.status)));
        }
        // A trailers-only answer carries its status in the headers.
        if let Some(status) = Status::from_header_map(&head.headers)
            && status.code() != Code::Ok
        {
            return Err(status);
        }
        let mut data = BytesMut::new();
        while let Some(chunk) = body.data().await {
            let chunk = chunk.map_err(transport)?;
            let _ = body.flow_control().release_capacity(chunk.len());
            if data.len() + chunk.len() > ANSWER_BYTES_MAX {
                return Err(Status::resource_exhausted(format!(
                    "the answer is over {ANSWER_BYTES_MAX} bytes"
                )));
            }
            data.extend_from_slice(&chunk);
        }
        let trailers = body.trailers().await.map_err(transport)?;
        if let Some(status) = trailers.as_ref().and_then(Status::from_header_map)
            && status.code() != Code::Ok
        {
            return Err(status);
        }
        if data.len() < 5 || data[0] != 0 {
            return Err(Status::internal(
                "the answer is not one uncompressed message",
            ));
        }
        let length = u32::from_be_bytes([data[1], data[2], data[3], data[4]]) as usize;
        let message = data
            .get(5..5 + length)
            .ok_or_else(|| Status::internal("the answer is shorter than its length"))?;
        A::decode(message).map_err(|e| Status::internal(format!("undecodable answer: {e}")))
    }
}

/// The HTTP/2 handshake over `io`; the connection's task runs on the current runtime.
async fn start<T>(io: T, url: &str) -> Result<h2::client::SendRequest<Bytes>>
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (send, connection) = h2::client::Builder::new()
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .handshake::<_, Bytes>(io)
        .await
        .with_context(|| format!("HTTP/2 handshake with {url}"))?;
    tokio::spawn(async move {
        if let Err(error) = connection.await {
            tracing::debug!(%error, "bench connection closed");
        }
    });
    Ok(send)
}

/// A rustls client trusting `files`' CAs and presenting its client certificate, if any.
fn rustls_config(files: TlsFiles) -> Result<Arc<rustls::ClientConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = RootCertStore::empty();
    for pem in &files.cas {
        for cert in CertificateDer::pem_slice_iter(pem) {
            roots
                .add(cert.context("a TLS CA certificate")?)
                .context("a TLS CA certificate")?;
        }
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_root_certificates(roots);
    let mut config = match files.identity {
        Some((cert, key)) => builder
            .with_client_auth_cert(
                CertificateDer::pem_slice_iter(&cert)
                    .collect::<Result<Vec<_>, _>>()
                    .context("the TLS client certificate")?,
                PrivateKeyDer::from_pem_slice(&key).context("the TLS client key")?,
            )
            .context("the TLS client certificate and key")?,
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
}

/// The Gateway service's unary calls over a [`Unary`] connection.
#[derive(Clone)]
pub(crate) struct Gateway(pub(crate) Unary);

impl Gateway {
    pub(crate) async fn evaluate(
        &self,
        request: EvaluateRequest,
    ) -> Result<EvaluateResponse, Status> {
        self.0.call("/runnel.v1.Gateway/Evaluate", &request).await
    }

    pub(crate) async fn endorse(&self, request: EndorseRequest) -> Result<EndorseResponse, Status> {
        self.0.call("/runnel.v1.Gateway/Endorse", &request).await
    }

    pub(crate) async fn submit(&self, request: SubmitRequest) -> Result<SubmitResponse, Status> {
        self.0.call("/runnel.v1.Gateway/Submit", &request).await
    }

    pub(crate) async fn commit_status(
        &self,
        request: CommitStatusRequest,
    ) -> Result<CommitStatusResponse, Status> {
        self.0
            .call("/runnel.v1.Gateway/CommitStatus", &request)
            .await
    }
}

//! `runnel` processes for the tests that run the real binary: start one on loopback,
//! wait for its banner, run client commands against it, stop it with SIGTERM.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use serde_json::Value;
use tokio_rustls::rustls::{self, pki_types::CertificateDer, pki_types::pem::PemObject};

pub const RUNNEL: &str = env!("CARGO_BIN_EXE_runnel");

/// How long a node may take to start (the first start compiles contracts).
pub const START_TIMEOUT: Duration = Duration::from_secs(120);

/// A node process; killed if the test ends without stopping it.
pub struct Node {
    pub child: Child,
    pub url: String,
    pub dir: PathBuf,
    /// The directory client commands take their identities from: the node's own (a
    /// one-node network, a dev node) or its organisation's people's.
    pub client_dir: PathBuf,
}

impl Node {
    /// Runs `runnel <args>` and waits for its banner's URL.
    pub fn start(args: &[&str], dir: &Path) -> Node {
        Node::start_on(args, dir, "127.0.0.1:0")
    }

    /// [`Node::start`] listening on `listen`.
    pub fn start_on(args: &[&str], dir: &Path, listen: &str) -> Node {
        let mut child = Command::new(RUNNEL)
            .args(args)
            .args(["--dir", dir.to_str().unwrap(), "--listen", listen])
            .env("RUNNEL_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("runnel starts");
        let stdout = child.stdout.take().unwrap();
        let (found, url) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let line = line.trim();
                let url = line
                    .strip_prefix("gRPC and gRPC-web")
                    .or_else(|| line.strip_prefix("ordering service"));
                if let Some(url) = url {
                    let _ = found.send(url.trim().to_string());
                }
            }
        });
        let url = match url.recv_timeout(START_TIMEOUT) {
            Ok(url) => url,
            Err(_) => {
                let _ = child.kill();
                let mut stderr = String::new();
                let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
                panic!("runnel {args:?} did not start:\n{stderr}");
            }
        };
        Node {
            child,
            url,
            dir: dir.to_path_buf(),
            client_dir: dir.to_path_buf(),
        }
    }

    /// This node, with client commands signed by the identities in `dir`.
    pub fn clients_from(mut self, dir: &Path) -> Node {
        self.client_dir = dir.to_path_buf();
        self
    }

    /// Runs a client command against this node.
    pub fn run(&self, args: &[&str]) -> Output {
        self.run_at(&self.url, args)
    }

    /// Runs a client command against this node at `url`.
    pub fn run_at(&self, url: &str, args: &[&str]) -> Output {
        let (command, rest) = args.split_first().unwrap();
        Command::new(RUNNEL)
            .arg(command)
            .args(["--url", url, "--dir", self.client_dir.to_str().unwrap()])
            .args(rest)
            .output()
            .expect("runnel runs")
    }

    /// Runs a client command that must fail; its error output.
    pub fn fails(&self, url: &str, args: &[&str]) -> String {
        let output = self.run_at(url, args);
        assert!(!output.status.success(), "{args:?} succeeded");
        String::from_utf8(output.stderr).unwrap()
    }

    /// A plain HTTP/1.1 request to the node, over TLS when its URL is https (trusting
    /// Org1's TLS CA, as the client commands do); status and body.
    pub fn http(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        match self.url.strip_prefix("https://") {
            Some(addr) => {
                let mut ca = self.dir.join("identities/Org1/tls/ca.pem");
                if !ca.is_file() {
                    // A node of a network of organisations apart: the TLS CAs are in
                    // its network definition.
                    let definition = runnel_ledger::identity::NetworkDefinition::load(&self.dir)
                        .expect("the node's network.json");
                    ca = self.dir.join("tls-cas.pem");
                    std::fs::write(&ca, definition.tls_ca_pems().collect::<String>()).unwrap();
                }
                https(addr, &ca, method, path, body)
            }
            None => http(&self.url, method, path, body),
        }
    }

    /// Runs a client command that must succeed and print JSON.
    pub fn json(&self, args: &[&str]) -> Value {
        let output = self.run(args);
        assert!(
            output.status.success(),
            "{args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).expect("JSON")
    }

    pub fn text(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(
            output.status.success(),
            "{args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap().trim().to_string()
    }

    /// SIGTERM, then the exit status.
    pub fn stop(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill runs");
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(std::time::Instant::now() < deadline, "node did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A plain HTTP/1.1 request to the node; status and body.
pub fn http(url: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let addr = url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    exchange(&mut stream, addr, "", method, path, body)
}

/// An HTTP/1.1 request over TLS to `addr` (as 127.0.0.1), trusting the CA in `ca`, with
/// ALPN http/1.1 as curl --http1.1 offers it; status and body.
pub fn https(addr: &str, ca: &Path, method: &str, path: &str, body: &str) -> (u16, String) {
    https_with(addr, ca, "", method, path, body)
}

/// [`https`] with more request headers (`headers`: lines, each ended by `\r\n`).
pub fn https_with(
    addr: &str,
    ca: &Path,
    headers: &str,
    method: &str,
    path: &str,
    body: &str,
) -> (u16, String) {
    https_as(addr, ca, None, headers, (method, path, body))
}

/// `GET path` over TLS to `addr` presenting the certificate `cert` (PEM, with its key
/// `key`) for mutual TLS, as a member of the network; status and body.
pub fn https_member(addr: &str, ca: &Path, cert: &Path, key: &Path, path: &str) -> (u16, String) {
    https_as(addr, ca, Some((cert, key)), "", ("GET", path, ""))
}

fn https_as(
    addr: &str,
    ca: &Path,
    client: Option<(&Path, &Path)>,
    headers: &str,
    (method, path, body): (&str, &str, &str),
) -> (u16, String) {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots);
    let mut config = match client {
        None => config.with_no_client_auth(),
        Some((cert, key)) => {
            let certs = CertificateDer::pem_file_iter(cert)
                .unwrap()
                .map(Result::unwrap)
                .collect();
            let key = rustls::pki_types::PrivateKeyDer::from_pem_file(key).unwrap();
            config.with_client_auth_cert(certs, key).unwrap()
        }
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let connection = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let tcp = std::net::TcpStream::connect(addr).expect("connect");
    let mut stream = rustls::StreamOwned::new(connection, tcp);
    exchange(&mut stream, addr, headers, method, path, body)
}

/// Writes one request and reads the response to the end of the connection; status and
/// body.
fn exchange(
    stream: &mut (impl Read + std::io::Write),
    addr: &str,
    headers: &str,
    method: &str,
    path: &str,
    body: &str,
) -> (u16, String) {
    let response = raw_exchange(stream, addr, headers, method, path, body);
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// A plain HTTP/1.1 request to `url` with `host` as its Host and `headers` (whole lines,
/// each ending in CRLF) added; the whole response (status line, headers, body) as text.
pub fn raw_http(
    url: &str,
    method: &str,
    path: &str,
    host: &str,
    headers: &str,
    body: &str,
) -> String {
    let addr = url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    raw_exchange(&mut stream, host, headers, method, path, body)
}

/// Writes one request and reads the response to the end of the connection, as text.
fn raw_exchange(
    stream: &mut (impl Read + std::io::Write),
    host: &str,
    headers: &str,
    method: &str,
    path: &str,
    body: &str,
) -> String {
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    stream.flush().unwrap();
    let mut bytes = Vec::new();
    let mut chunk = [0; 4096];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            // A TLS peer may close without close_notify once the response is out.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => panic!("reading the response: {e}"),
        }
    }
    String::from_utf8(bytes).unwrap()
}

/// Copies directory `from` to `to`, files and subdirectories.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

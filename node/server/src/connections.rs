//! Bounds on the connections a server holds, so that no client can lock others out and
//! no flood can lock the network's own members out.
//!
//! A connection goes through two stages, each with permits of its own:
//!
//! | stage | bound | per address | ends |
//! |---|---|---|---|
//! | before its first bytes and TLS handshake | [`HANDSHAKES_MAX`] | `connections_per_address_max` | [`FIRST_BYTES_TIMEOUT`], then the handshake timeout |
//! | a client's connection | `connections_max` | `connections_per_address_max` (the same share) | idle for `idle_timeout`, or closed |
//! | a member's connection (a peer's or orderer's certificate of the network over mutual TLS) | `member_connections_max`, then `connections_max` | none | idle for `idle_timeout`, or closed |
//!
//! The first permit is taken before anything is done for a connection (no TLS handshake,
//! no HTTP/2 state); at [`HANDSHAKES_MAX`] the server stops accepting and clients wait in
//! the kernel's backlog. One address holds at most its share of the handshakes and of the
//! clients' connections together, so it can neither fill the handshakes nor the clients'
//! room. Once the handshake shows who connected, the connection takes its place among
//! the clients or the members, or is closed at once when there is none: anonymous
//! connections never take the members' room.
//!
//! A connection that has no stream (an HTTP/2 stream or an HTTP/1.1 request) open for
//! `idle_timeout` is closed: answering pings does not keep it. Dead peers are found by
//! HTTP/2 and TCP keep-alives ([`KEEPALIVE_INTERVAL`]). The streams a connection has open
//! are counted by [`track`], a layer over every route, which finds the connection by its
//! remote address.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::time::Sleep;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::{Connected, TcpIncoming};

/// How often an idle connection is pinged (HTTP/2) and probed (TCP), and how long a ping
/// may go unanswered before the connection is closed.
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(30);
pub const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// How long a new connection may stay silent before it is closed.
pub const FIRST_BYTES_TIMEOUT: Duration = Duration::from_secs(10);

/// Most connections at once before their first bytes and TLS handshake are done: a
/// handshake costs a task and rustls's buffers (tens of KiB), and takes milliseconds, so
/// 256 let hundreds of clients connect at once while bounding what silent ones cost.
pub const HANDSHAKES_MAX: usize = 256;

/// Defaults of [`ConnectionLimits`].
pub const CONNECTIONS_MAX_DEFAULT: usize = 4096;
/// One address's share: 1/32 of the clients' room. `runnel bench --connections 64` (the
/// most any script opens) and its pressure connections fit, with room to spare.
pub const CONNECTIONS_PER_ADDRESS_MAX_DEFAULT: usize = 128;
/// The network's members hold a few links each (a peer: one to its orderer, one to each
/// other org's peer it asks for endorsements; an orderer: one to each other orderer):
/// 256 is room for a network of a hundred nodes.
pub const MEMBER_CONNECTIONS_MAX_DEFAULT: usize = 256;
/// Long enough that a client between bursts keeps its connection (tonic and grpc-js
/// reconnect when it goes), short enough that held, idle connections come back.
pub const IDLE_TIMEOUT_MS_DEFAULT: u64 = 60_000;

/// The bounds a server's connections keep to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Most clients' connections open at once (after their handshake).
    pub connections_max: usize,
    /// Most connections from one address, handshakes and clients' connections together.
    pub connections_per_address_max: usize,
    /// Connections kept for the network's peers and orderers (mutual TLS with a member's
    /// certificate), beyond `connections_max`.
    pub member_connections_max: usize,
    /// How long a connection may have no stream open before it is closed.
    pub idle_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            connections_max: CONNECTIONS_MAX_DEFAULT,
            connections_per_address_max: CONNECTIONS_PER_ADDRESS_MAX_DEFAULT,
            member_connections_max: MEMBER_CONNECTIONS_MAX_DEFAULT,
            idle_timeout: Duration::from_millis(IDLE_TIMEOUT_MS_DEFAULT),
        }
    }
}

/// Who a connection turned out to be, once its handshake is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// A peer or an orderer of the network, by its certificate over mutual TLS.
    Member,
    /// Anyone else.
    Client,
}

/// The permits and open connections of one server.
#[derive(Debug)]
pub struct Connections {
    limits: ConnectionLimits,
    handshakes: Arc<Semaphore>,
    clients: Arc<Semaphore>,
    members: Arc<Semaphore>,
    addresses: Arc<PerAddress>,
    /// The open connections' activity, by remote address ([`track`] finds them there).
    open: Mutex<HashMap<SocketAddr, Arc<Activity>>>,
}

impl Connections {
    /// Permits for `limits`.
    pub fn new(limits: ConnectionLimits) -> Arc<Connections> {
        let permits = |n: usize| Arc::new(Semaphore::new(n.min(Semaphore::MAX_PERMITS)));
        Arc::new(Connections {
            limits,
            handshakes: permits(HANDSHAKES_MAX),
            clients: permits(limits.connections_max.max(1)),
            members: permits(limits.member_connections_max),
            addresses: Arc::new(PerAddress::default()),
            open: Mutex::new(HashMap::new()),
        })
    }

    fn activity(&self, remote: SocketAddr) -> Option<Arc<Activity>> {
        let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.get(&remote).cloned()
    }
}

/// The streams one connection has open, and when the last one ended.
#[derive(Debug)]
struct Activity {
    born: Instant,
    streams: AtomicUsize,
    /// Nanoseconds from `born` to the end of the last stream.
    last_end_ns: AtomicU64,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            born: Instant::now(),
            streams: AtomicUsize::new(0),
            last_end_ns: AtomicU64::new(0),
        }
    }

    /// Since when the connection has had no stream open; `None` while one is.
    fn idle_since(&self) -> Option<Instant> {
        if self.streams.load(Ordering::Acquire) > 0 {
            return None;
        }
        let ns = self.last_end_ns.load(Ordering::Acquire);
        Some(self.born + Duration::from_nanos(ns))
    }
}

/// One stream of a connection, counted until dropped.
struct Stream(Arc<Activity>);

impl Stream {
    fn open(activity: Arc<Activity>) -> Stream {
        activity.streams.fetch_add(1, Ordering::AcqRel);
        Stream(activity)
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let ns = u64::try_from(self.0.born.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.0.last_end_ns.fetch_max(ns, Ordering::AcqRel);
        self.0.streams.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The middleware over every route of a server: counts the request's stream on its
/// connection until the response's body is done, so that an idle connection is told from
/// a busy one.
pub async fn track(
    axum::extract::State(connections): axum::extract::State<Arc<Connections>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let activity = crate::ops::remote_addr(&request).and_then(|addr| connections.activity(addr));
    let Some(activity) = activity else {
        return next.run(request).await;
    };
    let stream = Stream::open(activity);
    let response = next.run(request).await;
    response.map(move |body| {
        axum::body::Body::new(Counted {
            body,
            _stream: stream,
        })
    })
}

/// A response body that holds its stream's place in its connection's count until it is
/// dropped; otherwise the body itself (its size too, so that a short answer keeps its
/// `content-length`).
struct Counted {
    body: axum::body::Body,
    _stream: Stream,
}

impl http_body::Body for Counted {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// The permits a connection holds: its handshake's until it is admitted, then a
/// client's or a member's place; its address's share unless it is a member's.
#[derive(Debug, Default)]
struct Permits {
    handshake: Option<OwnedSemaphorePermit>,
    client: Option<OwnedSemaphorePermit>,
    member: Option<OwnedSemaphorePermit>,
    address: Option<AddressShare>,
}

/// A connection holding its permits until it is dropped, and closed once it has had no
/// stream open for the idle timeout.
#[derive(Debug)]
pub struct Limited<IO> {
    io: IO,
    permits: Permits,
    remote: Option<SocketAddr>,
    /// Set once admitted: the connection's streams, and when it may be closed as idle.
    idle: Option<Idle>,
    connections: Arc<Connections>,
}

#[derive(Debug)]
struct Idle {
    activity: Arc<Activity>,
    timer: Pin<Box<Sleep>>,
}

impl<IO> Limited<IO> {
    /// Moves the connection from its handshake to the clients' or the members' room, as
    /// `caller` says; false when there is no room for it (it should be closed).
    pub fn admit(&mut self, caller: Caller) -> bool {
        if self.idle.is_some() {
            return true;
        }
        let connections = self.connections.clone();
        let member = match caller {
            Caller::Member => connections.members.clone().try_acquire_owned().ok(),
            Caller::Client => None,
        };
        match member {
            Some(permit) => {
                self.permits.member = Some(permit);
                self.permits.address = None;
            }
            // A member past the members' room takes a client's place, as anyone would.
            None => match connections.clients.clone().try_acquire_owned() {
                Ok(permit) => self.permits.client = Some(permit),
                Err(_) => return false,
            },
        }
        self.permits.handshake = None;
        let activity = Arc::new(Activity::new());
        if let Some(remote) = self.remote {
            let mut open = connections
                .open
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            open.insert(remote, activity.clone());
        }
        self.idle = Some(Idle {
            activity,
            timer: Box::pin(tokio::time::sleep(connections.limits.idle_timeout)),
        });
        true
    }

    /// Whether the connection has had no stream open for the idle timeout; if not, the
    /// timer is set for when it might have.
    fn idle_out(&mut self, cx: &mut Context<'_>) -> bool {
        let timeout = self.connections.limits.idle_timeout;
        let Some(idle) = self.idle.as_mut() else {
            return false;
        };
        while idle.timer.as_mut().poll(cx).is_ready() {
            let now = Instant::now();
            let deadline = match idle.activity.idle_since() {
                None => now + timeout,
                Some(since) if since + timeout > now => since + timeout,
                Some(_) => return true,
            };
            idle.timer.as_mut().reset(deadline.into());
        }
        false
    }
}

impl<IO> Drop for Limited<IO> {
    fn drop(&mut self) {
        if let (Some(remote), Some(idle)) = (self.remote, &self.idle) {
            let mut open = self
                .connections
                .open
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            // Only its own: a later connection from the same address and port keeps its.
            if open
                .get(&remote)
                .is_some_and(|activity| Arc::ptr_eq(activity, &idle.activity))
            {
                open.remove(&remote);
            }
        }
    }
}

/// The connections open from each address.
#[derive(Debug, Default)]
struct PerAddress {
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// One connection's place in its address's share; given back when dropped.
#[derive(Debug)]
struct AddressShare {
    table: Arc<PerAddress>,
    address: IpAddr,
}

impl PerAddress {
    /// A place for one more connection from `address`, unless it holds `max` already.
    fn take(self: &Arc<Self>, address: IpAddr, max: usize) -> Option<AddressShare> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let count = open.entry(address).or_insert(0);
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(AddressShare {
            table: self.clone(),
            address,
        })
    }
}

impl Drop for AddressShare {
    fn drop(&mut self) {
        let mut open = self
            .table
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = open.get_mut(&self.address) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.address);
            }
        }
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Limited<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let read = Pin::new(&mut self.io).poll_read(cx, buf);
        // Checked only while nothing comes: bytes alone (a ping's answer) keep no
        // connection, and the timer wakes the reader when it is due.
        if read.is_pending() && self.idle_out(cx) {
            tracing::debug!(peer = ?self.remote, "a connection had no stream open in time; closed");
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no stream open for the idle timeout",
            )));
        }
        read
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Limited<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

impl<IO: Connected> Connected for Limited<IO> {
    type ConnectInfo = IO::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.io.connect_info()
    }
}

/// TCP connections from `listener` that sent their first bytes, each holding its
/// handshake permits: [`Limited::admit`] moves it on once its caller is known (`tls`
/// does after the handshake). Without `handshake`, every connection is admitted as a
/// client here. The listener closes when the stream is dropped.
pub fn accept(
    listener: TcpListener,
    connections: Arc<Connections>,
    handshake: bool,
) -> ReceiverStream<io::Result<Limited<TcpStream>>> {
    let (ready, incoming) = mpsc::channel(16);
    tokio::spawn(async move {
        let mut tcp = TcpIncoming::from(listener)
            .with_nodelay(Some(true))
            .with_keepalive(Some(KEEPALIVE_INTERVAL));
        let per_address_max = connections.limits.connections_per_address_max;
        loop {
            // Room first: at the bound, nothing more is accepted until a handshake ends.
            let permit = tokio::select! {
                _ = ready.closed() => break,
                permit = connections.handshakes.clone().acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => break,
                },
            };
            let io = tokio::select! {
                _ = ready.closed() => break,
                next = tcp.next() => match next {
                    Some(Ok(io)) => io,
                    Some(Err(e)) => {
                        // Out of descriptors and the like: wait a moment, do not spin.
                        tracing::warn!(error = %e, "accepting a connection failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                    None => break,
                },
            };
            let remote = io.peer_addr().ok();
            let Some(address) =
                remote.and_then(|peer| connections.addresses.take(peer.ip(), per_address_max))
            else {
                tracing::debug!(
                    peer = ?remote,
                    per_address_max,
                    "an address holds all the connections it may; closed"
                );
                continue;
            };
            let (ready, connections) = (ready.clone(), connections.clone());
            tokio::spawn(async move {
                // Handed on once the client says something (`readable` alone may answer
                // before any byte came).
                let mut first = [0u8; 1];
                match tokio::time::timeout(FIRST_BYTES_TIMEOUT, io.peek(&mut first)).await {
                    Ok(Ok(n)) if n > 0 => {
                        let mut connection = Limited {
                            io,
                            permits: Permits {
                                handshake: Some(permit),
                                address: Some(address),
                                ..Permits::default()
                            },
                            remote,
                            idle: None,
                            connections,
                        };
                        if !handshake && !connection.admit(Caller::Client) {
                            tracing::debug!(?remote, "no room for another client; closed");
                            return;
                        }
                        let _ = ready.send(Ok(connection)).await;
                    }
                    _ => tracing::debug!(
                        peer = ?remote,
                        "a connection sent nothing in time; closed"
                    ),
                }
            });
        }
    });
    ReceiverStream::new(incoming)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_address_holds_at_most_its_share_of_the_connections() {
        let table = Arc::new(PerAddress::default());
        let greedy: IpAddr = "10.0.0.1".parse().unwrap();
        let other: IpAddr = "10.0.0.2".parse().unwrap();
        let held: Vec<AddressShare> = (0..3).map(|_| table.take(greedy, 3).unwrap()).collect();
        assert!(table.take(greedy, 3).is_none(), "past its share");
        let theirs = table.take(other, 3).expect("another address is let in");
        drop(held);
        assert!(table.take(greedy, 3).is_some(), "given back");
        drop(theirs);
        assert!(table.open.lock().unwrap().is_empty(), "forgotten at zero");
    }
}

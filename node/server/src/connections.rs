//! A bound on the connections a server holds at once. Each accepted TCP connection takes
//! a permit before anything is done for it (no TLS handshake, no HTTP/2 state) and gives
//! it back when it closes; at the bound the server stops accepting, and further clients
//! wait in the kernel's backlog until one closes. A connection that sends nothing within
//! [`FIRST_BYTES_TIMEOUT`] is closed; dead peers are found by HTTP/2 and TCP keep-alives
//! ([`KEEPALIVE_INTERVAL`]); so silent clients cannot keep the permits. One address
//! holds at most its share of them: a connection from an address at its share is closed
//! at once, so one client cannot take every permit from the others.

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::{Connected, TcpIncoming};

/// How often an idle connection is pinged (HTTP/2) and probed (TCP), and how long a ping
/// may go unanswered before the connection is closed.
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(30);
pub const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// How long a new connection may stay silent before it is closed.
pub const FIRST_BYTES_TIMEOUT: Duration = Duration::from_secs(10);

/// A connection holding one of the server's permits, and one of its address's, until it
/// is dropped.
#[derive(Debug)]
pub(crate) struct Limited<IO> {
    io: IO,
    _permit: OwnedSemaphorePermit,
    _address: AddressShare,
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
        Pin::new(&mut self.io).poll_read(cx, buf)
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

/// TCP connections from `listener`, at most `max` open at once and `per_address_max`
/// from one address, each holding its permits. The listener closes when the stream is
/// dropped.
pub(crate) fn accept(
    listener: TcpListener,
    (max, per_address_max): (usize, usize),
) -> ReceiverStream<io::Result<Limited<TcpStream>>> {
    let permits = Arc::new(Semaphore::new(max.clamp(1, Semaphore::MAX_PERMITS)));
    let addresses = Arc::new(PerAddress::default());
    let (ready, connections) = mpsc::channel(16);
    tokio::spawn(async move {
        let mut tcp = TcpIncoming::from(listener)
            .with_nodelay(Some(true))
            .with_keepalive(Some(KEEPALIVE_INTERVAL));
        loop {
            // Room first: at the bound, nothing more is accepted until a connection closes.
            let permit = tokio::select! {
                _ = ready.closed() => break,
                permit = permits.clone().acquire_owned() => match permit {
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
            let Some(address) = io
                .peer_addr()
                .ok()
                .and_then(|peer| addresses.take(peer.ip(), per_address_max))
            else {
                tracing::debug!(
                    peer = ?io.peer_addr().ok(),
                    per_address_max,
                    "an address holds all the connections it may; closed"
                );
                continue;
            };
            let ready = ready.clone();
            tokio::spawn(async move {
                // Handed to the server once the client says something (`readable` alone
                // may answer before any byte came).
                let mut first = [0u8; 1];
                match tokio::time::timeout(FIRST_BYTES_TIMEOUT, io.peek(&mut first)).await {
                    Ok(Ok(n)) if n > 0 => {
                        let connection = Limited {
                            io,
                            _permit: permit,
                            _address: address,
                        };
                        let _ = ready.send(Ok(connection)).await;
                    }
                    _ => tracing::debug!(
                        peer = ?io.peer_addr().ok(),
                        "a connection sent nothing in time; closed"
                    ),
                }
            });
        }
    });
    ReceiverStream::new(connections)
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

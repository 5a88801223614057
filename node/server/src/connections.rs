//! A bound on the connections a server holds at once. Each accepted TCP connection takes
//! a permit before anything is done for it (no TLS handshake, no HTTP/2 state) and gives
//! it back when it closes; at the bound the server stops accepting, and further clients
//! wait in the kernel's backlog until one closes. A connection that sends nothing within
//! [`FIRST_BYTES_TIMEOUT`] is closed; dead peers are found by HTTP/2 and TCP keep-alives
//! ([`KEEPALIVE_INTERVAL`]); so silent clients cannot keep the permits.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
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

/// A connection holding one of the server's permits until it is dropped.
#[derive(Debug)]
pub(crate) struct Limited<IO> {
    io: IO,
    _permit: OwnedSemaphorePermit,
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

/// TCP connections from `listener`, at most `max` open at once, each holding its permit.
/// The listener closes when the stream is dropped.
pub(crate) fn accept(
    listener: TcpListener,
    max: usize,
) -> ReceiverStream<io::Result<Limited<TcpStream>>> {
    let permits = Arc::new(Semaphore::new(max.clamp(1, Semaphore::MAX_PERMITS)));
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

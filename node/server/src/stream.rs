//! Server streams: one task per stream feeds a bounded queue that tonic drains as the
//! client reads. The task holds a permit of [`super::ApiConfig::streams_max`] for its
//! life, and ends when the client goes, when its work fails (the reader gets the
//! status), or when the server shuts down (`UNAVAILABLE`).
//!
//! Streams of stored things (transactions, blocks) follow one pattern, so that nothing
//! is missed or sent twice at the switch from stored to live: register a wait for the
//! next height ([`super::heights`]); read the store from a cursor up to its durable
//! height; if nothing was new, wait, then read again from the cursor. A wake-up that
//! finds nothing new (every stream is woken when a broadcast overflowed) only costs a
//! read: the store has everything.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Response, Status};

use super::{Shared, shutting_down, stopped};

/// What a stream handler returns.
pub(super) type Items<T> = ReceiverStream<Result<T, Status>>;

/// Items read from the store per blocking call.
pub(super) const PAGE_ITEMS: usize = 16;

/// How long a stream's last status may wait for room in a full queue before the stream
/// is cut without it.
const LAST_STATUS_WAIT: Duration = Duration::from_secs(1);

/// Where a stream task sends its items.
pub(super) struct Sink<T> {
    tx: mpsc::Sender<Result<T, Status>>,
}

impl<T> Sink<T> {
    /// Sends `item`, waiting while the reader's queue is full. False once the reader is
    /// gone: the task should end.
    pub async fn send(&self, item: T) -> bool {
        self.tx.send(Ok(item)).await.is_ok()
    }
}

/// Starts a stream: `run` produces its items into the sink; an error it returns is the
/// stream's final status.
pub(super) fn start<T, F, Fut>(
    shared: &Arc<Shared>,
    caller: super::shares::Caller,
    run: F,
) -> Result<Response<Items<T>>, Status>
where
    T: Send + 'static,
    F: FnOnce(Sink<T>) -> Fut,
    Fut: Future<Output = Result<(), Status>> + Send + 'static,
{
    let permit = shared.stream_permit(caller)?;
    let (tx, rx) = mpsc::channel(shared.config.stream_queue_depth.max(1));
    let work = run(Sink { tx: tx.clone() });
    let stopping = shared.stopping.clone();
    tokio::spawn(async move {
        let _permit = permit;
        let outcome = tokio::select! {
            outcome = work => outcome,
            () = tx.closed() => Ok(()),
            () = stopped(stopping) => Err(shutting_down()),
        };
        if let Err(status) = outcome {
            let _ = tokio::time::timeout(LAST_STATUS_WAIT, tx.send(Err(status))).await;
        }
    });
    Ok(Response::new(ReceiverStream::new(rx)))
}

#[cfg(test)]
pub(super) fn sink<T>(depth: usize) -> (Sink<T>, mpsc::Receiver<Result<T, Status>>) {
    let (tx, rx) = mpsc::channel(depth);
    (Sink { tx }, rx)
}

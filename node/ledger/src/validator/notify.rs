//! What the validator tells the world: each transaction's status as it is validated and
//! committed, contract events after commit, and blocks as their seals are committed.
//!
//! A submitter watches one transaction ([`Hub::watch`], registered before it submits, so
//! nothing can be missed); anyone may subscribe to every status, event or block
//! ([`Hub::statuses`], [`Hub::events`], [`Hub::blocks`]). Subscriptions are tokio
//! broadcast channels: usable from async code and, with `blocking_recv`, from threads;
//! a subscriber that falls more than [`BROADCAST_CAPACITY`] items behind is told how
//! many it missed (it can read them back from the store).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use tokio::sync::{broadcast, mpsc};

use crate::ids::{BlockNumber, Seq, TxId, ValidationCode};

/// Items a broadcast subscriber may fall behind by before it misses some.
pub const BROADCAST_CAPACITY: usize = 16_384;

/// How far a transaction has got, in the order it gets there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Its validation code is final and, if valid, its writes are visible to new
    /// endorsements; not yet durable.
    Validated,
    /// Durable on this peer.
    Committed,
}

/// A transaction's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxStatus {
    /// Its id.
    pub tx_id: TxId,
    /// Its place in the stream.
    pub seq: Seq,
    /// Its validation code (final from [`Phase::Validated`] on).
    pub code: ValidationCode,
    /// How far it has got.
    pub phase: Phase,
    /// When the orderer ordered it (Unix milliseconds).
    pub timestamp_ms: u64,
}

/// A contract event of a committed, valid transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedEvent {
    /// The emitting transaction.
    pub tx_id: TxId,
    /// Its seq.
    pub seq: Seq,
    /// The emitting contract.
    pub contract: String,
    /// The event's name.
    pub name: String,
    /// The event's payload.
    pub payload: Vec<u8>,
}

/// A block whose seal was verified and committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockEvent {
    /// The block's number.
    pub number: BlockNumber,
    /// Its first seq.
    pub first: Seq,
    /// Its last seq.
    pub last: Seq,
    /// SHA-256 of the seal (what the next block chains to).
    pub hash: [u8; 32],
}

/// Statuses of one watched transaction, in phase order.
#[derive(Debug)]
pub struct TxWatch {
    rx: mpsc::UnboundedReceiver<TxStatus>,
}

impl TxWatch {
    /// The next status (async).
    pub async fn next(&mut self) -> Option<TxStatus> {
        self.rx.recv().await
    }

    /// The next status, blocking the thread (not for use inside an async runtime).
    pub fn next_blocking(&mut self) -> Option<TxStatus> {
        self.rx.blocking_recv()
    }

    /// The next status if one is already there.
    pub fn try_next(&mut self) -> Option<TxStatus> {
        self.rx.try_recv().ok()
    }
}

/// Who waits for which transaction; none once the hub is closed.
#[derive(Default)]
struct Watchers {
    by_tx: HashMap<TxId, Vec<Watcher>>,
    closed: bool,
}

/// One watch's sending end.
struct Watcher {
    tx: mpsc::UnboundedSender<TxStatus>,
    /// Whether it wants validated statuses too, or committed ones only.
    validated: bool,
}

/// Where the validator's news goes.
pub struct Hub {
    watchers: Mutex<Watchers>,
    statuses: broadcast::Sender<TxStatus>,
    events: broadcast::Sender<CommittedEvent>,
    blocks: broadcast::Sender<BlockEvent>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub").finish_non_exhaustive()
    }
}

impl Default for Hub {
    fn default() -> Self {
        Hub {
            watchers: Mutex::new(Watchers::default()),
            statuses: broadcast::channel(BROADCAST_CAPACITY).0,
            events: broadcast::channel(BROADCAST_CAPACITY).0,
            blocks: broadcast::channel(BROADCAST_CAPACITY).0,
        }
    }
}

impl Hub {
    /// Watches `tx_id`: its validated and committed statuses (and those of any later
    /// transaction with the same id, which is a `DUPLICATE_TXID`). The watch ends after
    /// the first committed status.
    pub fn watch(&self, tx_id: TxId) -> TxWatch {
        self.watch_from(tx_id, true)
    }

    /// Like [`Hub::watch`], but only the committed status comes: a waiter that has no
    /// use for the validated one is not woken for it.
    pub fn watch_commit(&self, tx_id: TxId) -> TxWatch {
        self.watch_from(tx_id, false)
    }

    fn watch_from(&self, tx_id: TxId, validated: bool) -> TxWatch {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut watchers = self.watchers();
        // On a closed hub the sender is dropped here: the watch ends at once.
        if !watchers.closed {
            watchers
                .by_tx
                .entry(tx_id)
                .or_default()
                .push(Watcher { tx, validated });
        }
        TxWatch { rx }
    }

    /// Stops watching `tx_id` (a submission that failed before ordering).
    pub fn unwatch(&self, tx_id: &TxId) {
        self.watchers().by_tx.remove(tx_id);
    }

    /// Ends every watch, present and future: the validator stopped, so no status will
    /// come and nobody may wait for one.
    pub(crate) fn close(&self) {
        let mut watchers = self.watchers();
        watchers.closed = true;
        watchers.by_tx.clear();
    }

    fn watchers(&self) -> std::sync::MutexGuard<'_, Watchers> {
        self.watchers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every status, validated and committed, of every transaction.
    pub fn statuses(&self) -> broadcast::Receiver<TxStatus> {
        self.statuses.subscribe()
    }

    /// Contract events, after their transaction commits.
    pub fn events(&self) -> broadcast::Receiver<CommittedEvent> {
        self.events.subscribe()
    }

    /// Blocks, as their seals commit.
    pub fn blocks(&self) -> broadcast::Receiver<BlockEvent> {
        self.blocks.subscribe()
    }

    pub(crate) fn status(&self, status: TxStatus) {
        let mut watchers = self.watchers();
        let done = status.phase == Phase::Committed;
        if let Some(list) = watchers.by_tx.get_mut(&status.tx_id) {
            list.retain(|w| (!done && !w.validated) || w.tx.send(status.clone()).is_ok());
            if done || list.is_empty() {
                watchers.by_tx.remove(&status.tx_id);
            }
        }
        drop(watchers);
        // No subscriber is not an error.
        let _ = self.statuses.send(status);
    }

    pub(crate) fn event(&self, event: CommittedEvent) {
        let _ = self.events.send(event);
    }

    pub(crate) fn block(&self, block: BlockEvent) {
        let _ = self.blocks.send(block);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(phase: Phase) -> TxStatus {
        TxStatus {
            tx_id: TxId([1; 32]),
            seq: Seq(1),
            code: ValidationCode::Valid,
            phase,
            timestamp_ms: 1_000,
        }
    }

    #[test]
    fn a_watch_sees_both_phases_then_ends() {
        let hub = Hub::default();
        let mut watch = hub.watch(TxId([1; 32]));
        hub.status(status(Phase::Validated));
        hub.status(status(Phase::Committed));
        assert_eq!(watch.next_blocking(), Some(status(Phase::Validated)));
        assert_eq!(watch.next_blocking(), Some(status(Phase::Committed)));
        assert_eq!(watch.next_blocking(), None);
    }

    #[test]
    fn a_commit_watch_is_told_the_committed_status_only() {
        let hub = Hub::default();
        let mut watch = hub.watch_commit(TxId([1; 32]));
        hub.status(status(Phase::Validated));
        assert_eq!(watch.try_next(), None);
        hub.status(status(Phase::Committed));
        assert_eq!(watch.next_blocking(), Some(status(Phase::Committed)));
        assert_eq!(watch.next_blocking(), None);
    }

    #[test]
    fn closing_the_hub_ends_every_watch_instead_of_leaving_it_waiting() {
        let hub = Hub::default();
        let mut before = hub.watch(TxId([1; 32]));
        hub.close();
        assert_eq!(before.next_blocking(), None);
        let mut after = hub.watch(TxId([1; 32]));
        assert_eq!(after.next_blocking(), None);
    }
}

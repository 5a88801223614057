//! `CommitStatus` calls waiting for a transaction's status.
//!
//! One task ([`dispatch`]) reads the ledger's status broadcast and wakes the calls waiting
//! for that transaction with the status. The status answers the call unless it is a
//! `DUPLICATE_TXID`: an id ordered twice is the first transaction's, which only the
//! ledger knows, so the call reads it there. A call registers before it first reads the
//! ledger, so a status that arrives between the two still wakes it. When the broadcast
//! overflows, every call is woken with no status, to look in the ledger.
//!
//! A call waiting for its transaction to be committed is not woken by the transaction's
//! validated status, only by its committed one: it would have nothing to do with it.
//!
//! A waiting call costs one map entry, removed when it is woken or gives up (its client
//! went, or its deadline passed); at most [`super::ApiConfig::commit_waits_max`] wait.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::{broadcast, oneshot};
use tonic::{Code, Status};

use super::heights::Mark;
use super::{Shared, status};
use runnel_ledger::ids::TxId;
use runnel_ledger::validator::{Phase, TxStatus};

/// A registered call: its id, the phase it waits for, and how to wake it (with the
/// status, or with none to make it look in the ledger).
type Entry = (u64, Phase, oneshot::Sender<Option<TxStatus>>);

#[derive(Default)]
struct Inner {
    by_tx: HashMap<TxId, Vec<Entry>>,
    waiting: usize,
    next_id: u64,
}

/// The calls waiting, by transaction.
pub(super) struct Waiters {
    inner: Mutex<Inner>,
    limit: usize,
}

/// One waiting call; deregisters when dropped.
pub(super) struct Waiter<'a> {
    waiters: &'a Waiters,
    tx_id: TxId,
    id: u64,
    woken: oneshot::Receiver<Option<TxStatus>>,
}

impl Waiter<'_> {
    /// Completes when a status of the transaction arrives, with it; with `None` when
    /// everyone must look in the ledger.
    pub async fn woken(&mut self) -> Option<TxStatus> {
        // A dropped sender also means "look again".
        (&mut self.woken).await.ok().flatten()
    }
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        let mut inner = self.waiters.lock();
        if let Some(list) = inner.by_tx.get_mut(&self.tx_id) {
            let before = list.len();
            list.retain(|(id, _, _)| *id != self.id);
            let removed = before - list.len();
            if list.is_empty() {
                inner.by_tx.remove(&self.tx_id);
            }
            inner.waiting -= removed;
        }
    }
}

impl Waiters {
    /// Room for `limit` waiting calls.
    pub fn new(limit: usize) -> Waiters {
        Waiters {
            inner: Mutex::new(Inner::default()),
            limit,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a call waiting for `tx_id` to reach `phase`.
    pub fn register(&self, tx_id: TxId, phase: Phase) -> Result<Waiter<'_>, Status> {
        let mut inner = self.lock();
        if inner.waiting >= self.limit {
            return Err(status::error(
                Code::ResourceExhausted,
                "TOO_MANY_WAITS",
                format_args!(
                    "{} calls are waiting for a status, the most this node serves \
                     (commit_waits_max); retry later",
                    self.limit
                ),
            ));
        }
        let (tx, woken) = oneshot::channel();
        let id = inner.next_id;
        inner.next_id += 1;
        inner.waiting += 1;
        inner.by_tx.entry(tx_id).or_default().push((id, phase, tx));
        Ok(Waiter {
            waiters: self,
            tx_id,
            id,
            woken,
        })
    }

    /// Wakes the calls waiting for `status`'s transaction to reach its phase or an
    /// earlier one.
    fn wake(&self, status: &TxStatus) {
        let mut inner = self.lock();
        let Some(list) = inner.by_tx.get_mut(&status.tx_id) else {
            return;
        };
        let mut woken = 0;
        for (_, _, tx) in list.extract_if(.., |(_, waits_for, _)| *waits_for <= status.phase) {
            let _ = tx.send(Some(status.clone()));
            woken += 1;
        }
        if list.is_empty() {
            inner.by_tx.remove(&status.tx_id);
        }
        inner.waiting -= woken;
    }

    /// Wakes every waiting call.
    fn wake_all(&self) {
        let mut inner = self.lock();
        inner.waiting = 0;
        for (_, list) in inner.by_tx.drain() {
            for (_, _, tx) in list {
                let _ = tx.send(None);
            }
        }
    }

    #[cfg(test)]
    fn waiting(&self) -> usize {
        self.lock().waiting
    }
}

/// Wakes waiting calls, and the streams waiting for a committed seq
/// ([`super::heights`]), as statuses arrive, until the server stops.
pub(super) async fn dispatch(shared: Arc<Shared>, mut statuses: broadcast::Receiver<TxStatus>) {
    loop {
        match statuses.recv().await {
            Ok(status) => {
                shared.waiters.wake(&status);
                if status.phase == Phase::Committed {
                    shared.heights.reached(Mark::Committed, status.seq.0);
                }
            }
            Err(broadcast::error::RecvError::Lagged(_)) => {
                shared.waiters.wake_all();
                shared.heights.wake_all();
            }
            Err(broadcast::error::RecvError::Closed) => {
                shared.waiters.wake_all();
                shared.heights.wake_all();
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runnel_ledger::ids::{Seq, ValidationCode};

    fn status(tx_id: TxId, phase: Phase) -> TxStatus {
        TxStatus {
            tx_id,
            seq: Seq(3),
            code: ValidationCode::Valid,
            phase,
            timestamp_ms: 1_000,
        }
    }

    #[tokio::test]
    async fn waiters_are_woken_by_transaction_and_leave_no_trace() {
        let waiters = Waiters::new(2);
        let mut a = waiters.register(TxId([1; 32]), Phase::Validated).unwrap();
        let b = waiters.register(TxId([2; 32]), Phase::Committed).unwrap();
        let refused = waiters
            .register(TxId([3; 32]), Phase::Validated)
            .err()
            .unwrap();
        assert_eq!(refused.code(), Code::ResourceExhausted);
        let validated = status(TxId([1; 32]), Phase::Validated);
        waiters.wake(&validated);
        assert_eq!(a.woken().await, Some(validated), "woken with the status");
        assert_eq!(waiters.waiting(), 1);
        drop(a);
        drop(b);
        assert_eq!(waiters.waiting(), 0);
        let mut c = waiters.register(TxId([3; 32]), Phase::Committed).unwrap();
        waiters.wake_all();
        assert_eq!(c.woken().await, None, "woken to look in the ledger");
        drop(c);
        assert_eq!(waiters.waiting(), 0);
    }

    #[tokio::test]
    async fn a_call_waiting_for_the_commit_sleeps_through_the_validation() {
        let waiters = Waiters::new(4);
        let tx_id = TxId([7; 32]);
        let mut validated = waiters.register(tx_id, Phase::Validated).unwrap();
        let mut committed = waiters.register(tx_id, Phase::Committed).unwrap();
        waiters.wake(&status(tx_id, Phase::Validated));
        validated.woken().await;
        assert_eq!(waiters.waiting(), 1, "the committed waiter still waits");
        assert!(
            committed.woken.try_recv().is_err(),
            "not woken by the validated status"
        );
        waiters.wake(&status(tx_id, Phase::Committed));
        assert_eq!(
            committed.woken().await.map(|s| s.phase),
            Some(Phase::Committed)
        );
        assert_eq!(waiters.waiting(), 0);
        drop((validated, committed));
        assert_eq!(waiters.waiting(), 0);
    }
}

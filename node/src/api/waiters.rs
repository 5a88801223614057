//! `CommitStatus` calls waiting for a transaction's status.
//!
//! One task ([`dispatch`]) reads the ledger's status broadcast and wakes the calls waiting
//! for that transaction; a woken call reads the status from the ledger again, since the
//! ledger, not the broadcast, says which transaction holds an id that was ordered twice.
//! A call registers before it first reads the ledger, so a status that arrives between
//! the two still wakes it. When the broadcast overflows, every call is woken to look.
//!
//! A waiting call costs one map entry, removed when it is woken or gives up (its client
//! went, or its deadline passed); at most [`super::ApiConfig::commit_waits_max`] wait.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::{broadcast, oneshot};
use tonic::{Code, Status};

use super::{Shared, status};
use crate::ids::TxId;
use crate::validator::TxStatus;

#[derive(Default)]
struct Inner {
    by_tx: HashMap<TxId, Vec<(u64, oneshot::Sender<()>)>>,
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
    woken: oneshot::Receiver<()>,
}

impl Waiter<'_> {
    /// Completes when a status of the transaction arrives (or when everyone must look).
    pub async fn woken(&mut self) {
        // A dropped sender also means "look again".
        let _ = (&mut self.woken).await;
    }
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        let mut inner = self.waiters.lock();
        if let Some(list) = inner.by_tx.get_mut(&self.tx_id) {
            let before = list.len();
            list.retain(|(id, _)| *id != self.id);
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

    /// Registers a call waiting for `tx_id`.
    pub fn register(&self, tx_id: TxId) -> Result<Waiter<'_>, Status> {
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
        inner.by_tx.entry(tx_id).or_default().push((id, tx));
        Ok(Waiter {
            waiters: self,
            tx_id,
            id,
            woken,
        })
    }

    /// Wakes the calls waiting for `tx_id`.
    fn wake(&self, tx_id: &TxId) {
        let mut inner = self.lock();
        if let Some(list) = inner.by_tx.remove(tx_id) {
            inner.waiting -= list.len();
            for (_, tx) in list {
                let _ = tx.send(());
            }
        }
    }

    /// Wakes every waiting call.
    fn wake_all(&self) {
        let mut inner = self.lock();
        inner.waiting = 0;
        for (_, list) in inner.by_tx.drain() {
            for (_, tx) in list {
                let _ = tx.send(());
            }
        }
    }

    #[cfg(test)]
    fn waiting(&self) -> usize {
        self.lock().waiting
    }
}

/// Wakes waiting calls as statuses arrive, until the server stops.
pub(super) async fn dispatch(shared: Arc<Shared>, mut statuses: broadcast::Receiver<TxStatus>) {
    loop {
        match statuses.recv().await {
            Ok(status) => shared.waiters.wake(&status.tx_id),
            Err(broadcast::error::RecvError::Lagged(_)) => shared.waiters.wake_all(),
            Err(broadcast::error::RecvError::Closed) => {
                shared.waiters.wake_all();
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waiters_are_woken_by_transaction_and_leave_no_trace() {
        let waiters = Waiters::new(2);
        let mut a = waiters.register(TxId([1; 32])).unwrap();
        let b = waiters.register(TxId([2; 32])).unwrap();
        let refused = waiters.register(TxId([3; 32])).err().unwrap();
        assert_eq!(refused.code(), Code::ResourceExhausted);
        waiters.wake(&TxId([1; 32]));
        a.woken().await;
        assert_eq!(waiters.waiting(), 1);
        drop(a);
        drop(b);
        assert_eq!(waiters.waiting(), 0);
        let mut c = waiters.register(TxId([3; 32])).unwrap();
        waiters.wake_all();
        c.woken().await;
        drop(c);
        assert_eq!(waiters.waiting(), 0);
    }
}

//! Streams waiting for the ledger to reach a height: a delivery of transactions waits
//! for its next seq to be committed, a delivery of blocks for its next block to be
//! sealed. One task per broadcast of the ledger (statuses: [`super::waiters::dispatch`],
//! which wakes `CommitStatus` calls too; blocks: [`dispatch_blocks`]) wakes only the
//! streams whose height was reached, so an idle stream (one far ahead, or one whose
//! reader is slow to come back) costs nothing per transaction; a thousand of them once
//! cost a thousand wake-ups per transaction.
//!
//! When a broadcast overflows, every stream is woken to read the store again, which
//! has everything the broadcast dropped.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::{broadcast, oneshot};

use super::Shared;
use runnel_ledger::validator::BlockEvent;

/// What a stream waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mark {
    /// A seq committed here.
    Committed,
    /// A block sealed here.
    Sealed,
}

impl Mark {
    fn index(self) -> usize {
        match self {
            Mark::Committed => 0,
            Mark::Sealed => 1,
        }
    }
}

#[derive(Default)]
struct Inner {
    /// The highest of each mark seen.
    reached: [u64; 2],
    /// The streams waiting, by (height wanted, registration id).
    waiting: [BTreeMap<(u64, u64), oneshot::Sender<()>>; 2],
    next_id: u64,
}

/// The streams waiting for heights.
#[derive(Default)]
pub(super) struct Heights {
    inner: Mutex<Inner>,
}

/// One stream's wait; deregisters when dropped.
pub(super) struct Wait<'a> {
    heights: &'a Heights,
    mark: Mark,
    key: Option<(u64, u64)>,
    woken: Option<oneshot::Receiver<()>>,
}

impl Wait<'_> {
    /// Completes once the height is reached, or when every stream must read again.
    pub async fn done(&mut self) {
        if let Some(woken) = &mut self.woken {
            // A dropped sender also means "read again".
            let _ = woken.await;
        }
    }
}

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key {
            self.heights.lock().waiting[self.mark.index()].remove(&key);
        }
    }
}

impl Heights {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A wait for `mark` to reach `height`: done at once if it has.
    pub fn wait(&self, mark: Mark, height: u64) -> Wait<'_> {
        let mut inner = self.lock();
        if inner.reached[mark.index()] >= height {
            return Wait {
                heights: self,
                mark,
                key: None,
                woken: None,
            };
        }
        let key = (height, inner.next_id);
        inner.next_id += 1;
        let (wake, woken) = oneshot::channel();
        inner.waiting[mark.index()].insert(key, wake);
        Wait {
            heights: self,
            mark,
            key: Some(key),
            woken: Some(woken),
        }
    }

    /// `mark` reached `height`: wakes the streams waiting for it or below.
    pub fn reached(&self, mark: Mark, height: u64) {
        let mut inner = self.lock();
        let i = mark.index();
        inner.reached[i] = inner.reached[i].max(height);
        let later = inner.waiting[i].split_off(&(height + 1, 0));
        let due = std::mem::replace(&mut inner.waiting[i], later);
        drop(inner);
        for (_, wake) in due {
            let _ = wake.send(());
        }
    }

    /// Wakes every stream, to read the store again.
    pub fn wake_all(&self) {
        let due = std::mem::take(&mut self.lock().waiting);
        for (_, wake) in due.into_iter().flatten() {
            let _ = wake.send(());
        }
    }

    /// Streams waiting now.
    #[cfg(test)]
    fn waiting(&self) -> usize {
        self.lock().waiting.iter().map(BTreeMap::len).sum()
    }
}

/// Feeds sealed blocks from the ledger's broadcast to the waiting streams.
pub(super) async fn dispatch_blocks(
    shared: Arc<Shared>,
    mut blocks: broadcast::Receiver<BlockEvent>,
) {
    loop {
        match blocks.recv().await {
            Ok(block) => shared.heights.reached(Mark::Sealed, block.number.0),
            Err(broadcast::error::RecvError::Lagged(_)) => shared.heights.wake_all(),
            Err(broadcast::error::RecvError::Closed) => {
                shared.heights.wake_all();
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_the_streams_whose_height_was_reached_wake_and_gone_ones_leave_no_trace() {
        let heights = Heights::default();
        let mut near = heights.wait(Mark::Committed, 5);
        let far = heights.wait(Mark::Committed, 1 << 60);
        let block = heights.wait(Mark::Sealed, 2);
        heights.reached(Mark::Committed, 4);
        assert_eq!(heights.waiting(), 3);
        heights.reached(Mark::Committed, 6);
        near.done().await;
        assert_eq!(heights.waiting(), 2, "far and the block wait");
        // A height already reached is done at once.
        heights.wait(Mark::Committed, 6).done().await;
        drop(far);
        drop(block);
        assert_eq!(heights.waiting(), 0);
        let mut far = heights.wait(Mark::Sealed, 1 << 60);
        heights.wake_all();
        far.done().await;
    }
}

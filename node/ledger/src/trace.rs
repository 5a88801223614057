//! Per-transaction traces: when a transaction passed each stage of the flow, kept for
//! the most recent transactions and queryable by id (the explorer's waterfall).
//!
//! Stages stamp a transaction as it passes ([`TraceBook::mark`]); a stamp is Unix
//! microseconds from the clock of the process that saw the stage. The book holds the
//! last [`TraceBook::capacity`] transactions and forgets the oldest first.
//!
//! Each trace is also broadcast once, when its transaction is complete
//! ([`TraceBook::completed`]): when its "committed" status goes out ([`Stage::Notified`]).
//! A transaction whose endorsement this process stamped is complete only once its
//! orderer stages are stamped too, since the submitting side stamps those when the
//! orderer answers, which may be after the validator has already notified.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};

use tokio::sync::broadcast;

use crate::ids::TxId;

/// Transactions whose traces a book keeps by default.
pub const TRACES_KEPT: usize = 100_000;

/// Completed traces a [`TraceBook::completed`] subscriber may fall behind by before it
/// misses some.
pub const COMPLETED_CAPACITY: usize = 4096;

/// A stage of the flow, in the order a transaction meets them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stage {
    /// The endorser started on the proposal.
    EndorseStart = 0,
    /// The endorser signed the response.
    EndorseEnd,
    /// The orderer received the transaction.
    Received,
    /// The orderer gave it a seq.
    Ordered,
    /// The peer took it from the orderer's stream.
    Delivered,
    /// Stage 1 decoded it and checked its signatures.
    Verified,
    /// Stage 2 gave it a validation code and staged its writes.
    Validated,
    /// Stage 3 made it durable.
    Committed,
    /// Its "committed" status went out: stamped as the status is sent, before anyone can
    /// see the transaction durable.
    Notified,
}

impl Stage {
    /// Every stage, in flow order.
    pub const ALL: [Stage; 9] = [
        Stage::EndorseStart,
        Stage::EndorseEnd,
        Stage::Received,
        Stage::Ordered,
        Stage::Delivered,
        Stage::Verified,
        Stage::Validated,
        Stage::Committed,
        Stage::Notified,
    ];

    /// The stage's name in APIs: `endorse_start`, `ordered`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::EndorseStart => "endorse_start",
            Stage::EndorseEnd => "endorse_end",
            Stage::Received => "received",
            Stage::Ordered => "ordered",
            Stage::Delivered => "delivered",
            Stage::Verified => "verified",
            Stage::Validated => "validated",
            Stage::Committed => "committed",
            Stage::Notified => "notified",
        }
    }
}

/// When a transaction passed each stage (Unix microseconds; `None`: not seen here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Trace {
    stamps: [Option<u64>; Stage::ALL.len()],
}

impl Trace {
    /// When the transaction passed `stage`.
    pub fn at(&self, stage: Stage) -> Option<u64> {
        self.stamps[stage as usize]
    }

    /// The stages seen, in flow order, with their stamps.
    pub fn stages(&self) -> Vec<(Stage, u64)> {
        Stage::ALL
            .iter()
            .filter_map(|&stage| self.at(stage).map(|at| (stage, at)))
            .collect()
    }

    /// Complete: the submitter was told and, if this process stamped the endorsement, the
    /// orderer's stages are in too.
    fn is_complete(&self) -> bool {
        self.at(Stage::Notified).is_some()
            && (self.at(Stage::EndorseStart).is_none() || self.at(Stage::Ordered).is_some())
    }
}

/// A transaction's trace once it is complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletedTrace {
    /// The transaction.
    pub tx_id: TxId,
    /// Its stamps.
    pub trace: Trace,
}

struct Book {
    traces: HashMap<TxId, Trace>,
    /// Ids in the order they were first stamped: the oldest is forgotten first.
    order: VecDeque<TxId>,
}

/// The traces of recent transactions.
pub struct TraceBook {
    capacity: usize,
    book: Mutex<Book>,
    completed: broadcast::Sender<CompletedTrace>,
}

impl std::fmt::Debug for TraceBook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceBook")
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

impl Default for TraceBook {
    fn default() -> Self {
        TraceBook::new(TRACES_KEPT)
    }
}

impl TraceBook {
    /// A book keeping the traces of the last `capacity` transactions (at least one).
    pub fn new(capacity: usize) -> TraceBook {
        TraceBook {
            capacity: capacity.max(1),
            book: Mutex::new(Book {
                traces: HashMap::new(),
                order: VecDeque::new(),
            }),
            completed: broadcast::channel(COMPLETED_CAPACITY).0,
        }
    }

    /// How many transactions' traces are kept.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Stamps `tx_id` as having passed `stage` at `at_us`. The first stamp of a stage
    /// stays: a transaction delivered twice (a duplicate) keeps its first times.
    pub fn mark(&self, tx_id: TxId, stage: Stage, at_us: u64) {
        let mut book = self.book.lock().unwrap_or_else(PoisonError::into_inner);
        if !book.traces.contains_key(&tx_id) {
            if book.order.len() >= self.capacity
                && let Some(oldest) = book.order.pop_front()
            {
                book.traces.remove(&oldest);
            }
            book.order.push_back(tx_id);
        }
        let trace = book.traces.entry(tx_id).or_default();
        let was_complete = trace.is_complete();
        trace.stamps[stage as usize].get_or_insert(at_us);
        let completed = (!was_complete && trace.is_complete()).then_some(*trace);
        drop(book);
        if let Some(trace) = completed {
            // No subscriber is not an error.
            let _ = self.completed.send(CompletedTrace { tx_id, trace });
        }
    }

    /// Each transaction's trace, once, as it completes (see the module doc). A
    /// subscriber more than [`COMPLETED_CAPACITY`] traces behind is told how many it
    /// missed.
    pub fn completed(&self) -> broadcast::Receiver<CompletedTrace> {
        self.completed.subscribe()
    }

    /// The trace of `tx_id`, if it is recent enough to be kept.
    pub fn get(&self, tx_id: &TxId) -> Option<Trace> {
        let book = self.book.lock().unwrap_or_else(PoisonError::into_inner);
        book.traces.get(tx_id).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> TxId {
        TxId([n; 32])
    }

    #[test]
    fn stamps_are_kept_per_stage_first_one_wins() {
        let book = TraceBook::new(10);
        book.mark(id(1), Stage::Ordered, 20);
        book.mark(id(1), Stage::Received, 10);
        book.mark(id(1), Stage::Ordered, 99);
        let trace = book.get(&id(1)).unwrap();
        assert_eq!(
            trace.stages(),
            vec![(Stage::Received, 10), (Stage::Ordered, 20)]
        );
        assert_eq!(trace.at(Stage::Committed), None);
        assert_eq!(book.get(&id(2)), None);
    }

    #[test]
    fn a_trace_is_broadcast_once_when_complete() {
        let book = TraceBook::new(10);
        let mut completed = book.completed();
        // Submitted elsewhere: complete when notified.
        book.mark(id(1), Stage::Delivered, 1);
        book.mark(id(1), Stage::Notified, 2);
        book.mark(id(1), Stage::Notified, 3);
        assert_eq!(completed.try_recv().unwrap().tx_id, id(1));
        assert!(completed.try_recv().is_err());
        // Endorsed here: the orderer's stamps may come after the notification.
        book.mark(id(2), Stage::EndorseStart, 1);
        book.mark(id(2), Stage::Notified, 5);
        assert!(completed.try_recv().is_err());
        book.mark(id(2), Stage::Received, 2);
        book.mark(id(2), Stage::Ordered, 3);
        let done = completed.try_recv().unwrap();
        assert_eq!(
            (done.tx_id, done.trace.at(Stage::Ordered)),
            (id(2), Some(3))
        );
        assert!(completed.try_recv().is_err());
    }

    #[test]
    fn the_oldest_transaction_is_forgotten_first() {
        let book = TraceBook::new(3);
        for n in 0..5 {
            book.mark(id(n), Stage::Delivered, u64::from(n));
        }
        assert_eq!(book.get(&id(0)), None);
        assert_eq!(book.get(&id(1)), None);
        for n in 2..5 {
            assert!(book.get(&id(n)).is_some());
        }
    }
}

//! Per-transaction traces: when a transaction passed each stage of the flow, kept for
//! the most recent transactions and queryable by id (the explorer's waterfall).
//!
//! Stages stamp a transaction as it passes ([`TraceBook::mark`]); a stamp is Unix
//! microseconds from the clock of the process that saw the stage. The book holds the
//! last [`TraceBook::capacity`] transactions and forgets the oldest first.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};

use crate::ids::TxId;

/// Transactions whose traces a book keeps by default.
pub const TRACES_KEPT: usize = 100_000;

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
    /// Its submitter was told.
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
        let stamp = &mut book.traces.entry(tx_id).or_default().stamps[stage as usize];
        stamp.get_or_insert(at_us);
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

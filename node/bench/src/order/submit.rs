//! The submitters: `--in-flight` tasks, each sending the next batch of the signed
//! transactions (`BroadcastBatch`, as a peer batches its clients' submits) and waiting
//! for its answer before the next, so at most `in_flight × batch` are outstanding. Each
//! batch goes to the orderers a peer would send it to (the Raft leader; under BFT `f + 1`
//! of them, each submitter starting at another). With `--rate`, transaction `i` is due
//! `i / rate` seconds after the start and no batch takes one before it is due (an open
//! loop, its latency counted from when it was due).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use runnel_api::proto::broadcast_batch_response::result::Outcome;
use runnel_api::proto::ordering_client::OrderingClient;
use runnel_api::proto::{BroadcastBatchRequest, BroadcastBatchResponse};
use tonic::transport::Channel;

/// A seq of 0: not ordered (yet, or ever).
const UNORDERED: u64 = 0;

/// The transactions and what became of each.
pub(super) struct Outbox {
    pub transactions: Vec<Vec<u8>>,
    /// The next transaction no batch has taken.
    next: AtomicUsize,
    /// When each was sent (with a rate: when it was due), µs since the start.
    pub sent_us: Vec<AtomicU64>,
    /// The seq each was ordered at.
    pub seq: Vec<AtomicU64>,
    /// Refusals by error name, and batches that failed whole (the first error kept).
    pub refused: Mutex<BTreeMap<String, u64>>,
    pub failed: Mutex<(u64, Option<String>)>,
}

impl Outbox {
    pub fn new(transactions: Vec<Vec<u8>>) -> Outbox {
        let count = transactions.len();
        Outbox {
            transactions,
            next: AtomicUsize::new(0),
            sent_us: (0..count).map(|_| AtomicU64::new(0)).collect(),
            seq: (0..count).map(|_| AtomicU64::new(UNORDERED)).collect(),
            refused: Mutex::default(),
            failed: Mutex::default(),
        }
    }

    /// How many were taken by a batch.
    pub fn sent(&self) -> usize {
        self.next
            .load(Ordering::Relaxed)
            .min(self.transactions.len())
    }

    /// Up to `max` of the next transactions that are due by `due`: their range.
    fn take(&self, max: usize, due: usize) -> std::ops::Range<usize> {
        let due = due.min(self.transactions.len());
        let mut first = self.next.load(Ordering::Relaxed);
        loop {
            let end = (first + max).min(due).max(first);
            match self
                .next
                .compare_exchange(first, end, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return first..end,
                Err(now) => first = now,
            }
        }
    }
}

/// How the submitters pace and send.
#[derive(Clone)]
pub(super) struct Plan {
    pub batch: usize,
    pub rate: Option<f64>,
    pub start: Instant,
    pub stop_at: Instant,
}

/// One submitter: batches to `targets` until the stop time or the transactions run out.
pub(super) async fn submitter(
    outbox: Arc<Outbox>,
    targets: Vec<OrderingClient<Channel>>,
    plan: Plan,
) {
    loop {
        let now = Instant::now();
        if now >= plan.stop_at {
            return;
        }
        let elapsed = now - plan.start;
        let due = match plan.rate {
            Some(rate) => (elapsed.as_secs_f64() * rate) as usize + 1,
            None => usize::MAX,
        };
        let range = outbox.take(plan.batch, due);
        if range.is_empty() {
            if outbox.sent() >= outbox.transactions.len() {
                return;
            }
            // Nothing due yet: wait for the next one.
            let next = outbox.sent() as f64 / plan.rate.unwrap_or(f64::MAX);
            let wait = Duration::from_secs_f64(next).saturating_sub(elapsed);
            tokio::time::sleep(wait.max(Duration::from_micros(100))).await;
            continue;
        }
        let sent_us = elapsed.as_micros() as u64;
        for i in range.clone() {
            let due_us = plan
                .rate
                .map_or(sent_us, |rate| (i as f64 / rate * 1e6) as u64);
            outbox.sent_us[i].store(due_us, Ordering::Relaxed);
        }
        let request = BroadcastBatchRequest {
            signed_transactions: outbox.transactions[range.clone()].to_vec(),
        };
        let answers = send(&targets, request).await;
        record(&outbox, range, answers);
    }
}

/// The batch sent to every target at once; each one's answer, or why it failed.
async fn send(
    targets: &[OrderingClient<Channel>],
    request: BroadcastBatchRequest,
) -> Vec<Result<BroadcastBatchResponse, String>> {
    let mut calls = tokio::task::JoinSet::new();
    for (i, target) in targets.iter().enumerate() {
        let (mut target, request) = (target.clone(), request.clone());
        calls.spawn(async move {
            (
                i,
                target
                    .broadcast_batch(request)
                    .await
                    .map(tonic::Response::into_inner)
                    .map_err(|e| runnel_client::status(e).to_string()),
            )
        });
    }
    let mut answers: Vec<Option<Result<BroadcastBatchResponse, String>>> =
        (0..targets.len()).map(|_| None).collect();
    while let Some(joined) = calls.join_next().await {
        match joined {
            Ok((i, answer)) => answers[i] = Some(answer),
            Err(e) => return vec![Err(e.to_string())],
        }
    }
    answers
        .into_iter()
        .map(|a| a.unwrap_or_else(|| Err("no answer".into())))
        .collect()
}

/// Each transaction of `range` takes the seq the first orderer to order it gave (as a
/// peer fanning out takes the first place answered); one no orderer ordered counts as
/// refused by the first orderer's reason.
fn record(
    outbox: &Outbox,
    range: std::ops::Range<usize>,
    answers: Vec<Result<BroadcastBatchResponse, String>>,
) {
    let count = range.len();
    let mut reasons: Vec<Option<String>> = vec![None; count];
    let mut ordered = vec![false; count];
    for answer in answers {
        match answer {
            Ok(response) if response.results.len() == count => {
                for (k, result) in response.results.into_iter().enumerate() {
                    match result.outcome {
                        Some(Outcome::Ordered(o)) if !ordered[k] => {
                            ordered[k] = true;
                            outbox.seq[range.start + k].store(o.seq, Ordering::Relaxed);
                        }
                        Some(Outcome::Refused(r)) => {
                            reasons[k].get_or_insert(r.error_code);
                        }
                        _ => {}
                    }
                }
            }
            Ok(response) => fail(
                outbox,
                format!(
                    "{} results for {count} transactions",
                    response.results.len()
                ),
            ),
            Err(error) => fail(outbox, error),
        }
    }
    let mut refused = outbox
        .refused
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    for (k, reason) in reasons.into_iter().enumerate() {
        if !ordered[k] {
            *refused
                .entry(reason.unwrap_or_else(|| "FAILED".into()))
                .or_default() += 1;
        }
    }
}

fn fail(outbox: &Outbox, error: String) {
    let mut failed = outbox.failed.lock().unwrap_or_else(PoisonError::into_inner);
    failed.0 += 1;
    failed.1.get_or_insert(error);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_take_each_transaction_once_and_none_before_it_is_due() {
        let outbox = Outbox::new(vec![vec![0]; 10]);
        assert_eq!(outbox.take(4, usize::MAX), 0..4);
        assert_eq!(outbox.take(4, 6), 4..6);
        assert_eq!(outbox.take(4, 6), 6..6);
        assert_eq!(outbox.take(100, usize::MAX), 6..10);
        assert_eq!(outbox.take(4, usize::MAX), 10..10);
        assert_eq!(outbox.sent(), 10);
    }
}

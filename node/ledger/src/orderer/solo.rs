//! The solo orderer: one sequencer and a sealer on top of the ordered stream's log
//! ([`super::stream`], which keeps the log, its index, the flusher and the deliveries).
//!
//! # Threads
//!
//! - Callers of [`SoloOrderer::submit`] check their transaction in parallel, then take
//!   the log's lock only to refuse replays, assign the seqs and append.
//! - The log's flusher makes what was appended durable in group commits.
//! - The sealer cuts a block when `seal_max_txs` transactions are unsealed, their bytes
//!   reach `SEAL_TX_BYTES_MAX` (16 MiB), or the oldest has waited `seal_max_delay`, signs
//!   its seal and appends it to the log.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use super::replay::Seen;
use super::stream::{Cut, Ids, Inner, StreamLog, StreamOptions, StreamTx};
use super::{Admitted, Delivery, OrderError, Ordered, Orderer, OrdererConfig, admit, admit_batch};
use crate::guard::guarded;
use crate::identity::{Msp, Signer};
use crate::ids::{BlockNumber, Seq};
use crate::metrics::Histogram;
use crate::tx;

/// The sealer: cuts a block when it is full or its oldest transaction has waited
/// long enough.
fn run_sealer(inner: &Inner) {
    let mut state = inner.lock();
    loop {
        if state.failed.is_some() || state.closed {
            return;
        }
        match inner.cut(&state, &inner.signer, tx::now_ms()) {
            Cut::Seal(sealed) => match inner.append_seal(&mut state, sealed, None) {
                Ok(wake) => inner.wake(wake),
                Err(error) => {
                    inner.fail(&mut state, format!("sealing: {error}"));
                    return;
                }
            },
            Cut::Barred(error) => {
                // Replaced by a configuration update: no peer accepts this orderer's
                // seals past it, so it orders nothing more.
                inner.fail(
                    &mut state,
                    format!(
                        "this orderer may no longer seal the stream ({error}); it stops \
                         ordering: point the peers at the orderers the network now names"
                    ),
                );
                return;
            }
            Cut::Wait(Some(wait)) => {
                state = inner
                    .for_sealer
                    .wait_timeout(state, wait)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            Cut::Wait(None) => {
                state = inner
                    .for_sealer
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        }
    }
}

/// The embedded ordering service (see the module doc).
pub struct SoloOrderer {
    stream: StreamLog,
    /// Each submitter's share of the bytes admitted.
    quotas: super::quota::Quotas,
    /// The sealer thread, joined on close.
    sealer: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for SoloOrderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SoloOrderer")
            .field("mode", &self.stream.inner().config.mode)
            .field("height", &self.height())
            .finish_non_exhaustive()
    }
}

impl SoloOrderer {
    /// Opens (or creates) the log in `dir` and starts ordering, signing seals with
    /// `signer` (an orderer identity) and checking submitters against `msp`.
    pub fn open(
        dir: &Path,
        config: OrdererConfig,
        msp: Arc<Msp>,
        signer: Signer,
    ) -> Result<SoloOrderer, OrderError> {
        let quotas = super::quota::Quotas::new(config.submitter_bytes_per_s_max);
        let stream = StreamLog::open(dir, config, msp, signer, StreamOptions::default())?;
        let sealer = {
            let inner = stream.inner().clone();
            let stopped = inner.clone();
            let run = move || run_sealer(&inner);
            std::thread::Builder::new()
                .name("runnel-order-seal".to_string())
                .spawn(guarded("runnel-order-seal".into(), run, move |why| {
                    let mut state = stopped.lock();
                    stopped.fail(&mut state, why);
                }))
                .map_err(|e| OrderError::Log(format!("starting runnel-order-seal: {e}")))?
        };
        Ok(SoloOrderer {
            stream,
            quotas,
            sealer: Mutex::new(Some(sealer)),
        })
    }

    /// The durations of the log's flushes so far, in seconds; the handle shares
    /// the live histogram.
    pub fn flush_seconds(&self) -> Arc<Histogram> {
        self.stream.flush_seconds()
    }

    /// Stops ordering: refuses new submissions, flushes what was ordered, stops the
    /// threads. Deliveries end with [`OrderError::Closed`] once drained. Idempotent.
    pub fn close(&self) {
        self.stream.close();
        let sealer = self
            .sealer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(sealer) = sealer {
            let _ = sealer.join();
        }
    }

    /// Refuses replays among the admitted transactions, then gives the others the next
    /// seqs and appends them to the log, all under one lock, and wakes the flusher, the
    /// deliveries and the sealer once for all.
    fn sequence(
        &self,
        admitted: Vec<(Vec<u8>, Result<Admitted, OrderError>)>,
        received_us: u64,
    ) -> Vec<Result<Ordered, OrderError>> {
        let inner = self.stream.inner();
        let mut answers = Vec::with_capacity(admitted.len());
        let mut batch = Vec::with_capacity(admitted.len());
        let mut state = inner.lock();
        let now_ms = tx::now_ms();
        for (signed_transaction, admitted) in admitted {
            let checked = admitted.and_then(|(tx_id, proposal_ms, config_update)| {
                inner.check(&state)?;
                match state.replays.insert(&tx_id, proposal_ms, now_ms) {
                    Seen::New => Ok((tx_id, proposal_ms, config_update)),
                    Seen::Replay => Err(OrderError::Duplicate(tx_id)),
                    Seen::BeyondMemory { floor_ms } => Err(OrderError::BeyondReplayMemory {
                        proposal_ms,
                        floor_ms,
                    }),
                }
            });
            match checked {
                Ok((tx_id, proposal_ms, config_update)) => {
                    answers.push(Ok(Ordered {
                        seq: Seq::ZERO,
                        tx_id,
                        received_us,
                        ordered_us: 0,
                    }));
                    batch.push(StreamTx {
                        signed_transaction,
                        timestamp_ms: now_ms,
                        tx_id,
                        proposal_ms,
                        config_update,
                    });
                }
                Err(error) => answers.push(Err(error)),
            }
        }
        if batch.is_empty() {
            return answers;
        }
        match inner.append_txs(&mut state, batch, Ids::Checked, None) {
            Ok((seqs, wake)) => {
                // Stamped before the lock goes: a delivery, which takes it, is never
                // stamped before the ordering it follows.
                let ordered_us = tx::now_us();
                drop(state);
                inner.wake(wake);
                for (answer, seq) in answers.iter_mut().flatten().zip(seqs) {
                    answer.seq = seq;
                    answer.ordered_us = ordered_us;
                }
            }
            Err(error) => {
                // The log stopped: none of the batch is ordered.
                drop(state);
                for answer in &mut answers {
                    if answer.is_ok() {
                        *answer = Err(error.clone());
                    }
                }
            }
        }
        answers
    }
}

impl Drop for SoloOrderer {
    fn drop(&mut self) {
        self.close();
    }
}

impl Orderer for SoloOrderer {
    fn submit(&self, signed_transaction: Vec<u8>) -> Result<Ordered, OrderError> {
        let received_us = tx::now_us();
        let inner = self.stream.inner();
        let admitted = admit(&inner.config, &inner.msp, &self.quotas, &signed_transaction)?;
        let mut ordered = self.sequence(vec![(signed_transaction, Ok(admitted))], received_us);
        ordered.pop().unwrap_or(Err(OrderError::Closed))
    }

    fn submit_batch(&self, signed_transactions: Vec<Vec<u8>>) -> Vec<Result<Ordered, OrderError>> {
        let received_us = tx::now_us();
        let inner = self.stream.inner();
        let admitted = admit_batch(
            &inner.config,
            &inner.msp,
            &self.quotas,
            &signed_transactions,
        );
        self.sequence(
            signed_transactions.into_iter().zip(admitted).collect(),
            received_us,
        )
    }

    fn submits_in_batches(&self) -> bool {
        true
    }

    fn deliver(&self, from: Seq, next_block: BlockNumber) -> Result<Box<dyn Delivery>, OrderError> {
        self.stream.deliver(from, next_block)
    }

    fn height(&self) -> Seq {
        self.stream.height()
    }

    fn durable_height(&self) -> Seq {
        self.stream.durable_height()
    }

    fn failure(&self) -> Option<String> {
        self.stream.failure()
    }

    fn flush_seconds(&self) -> Option<Arc<Histogram>> {
        Some(SoloOrderer::flush_seconds(self))
    }

    fn close(&self) {
        SoloOrderer::close(self);
    }
}

//! Stage 3: adaptive group commit, seal verification, notifications.

use std::collections::{BTreeMap, VecDeque};

use crossbeam_channel::{Receiver, Sender, select};

use super::check::Checked;
use super::{
    BlockEvent, CommittedEvent, POLL, Phase, Shared, TxStatus, ValidatorError, send, stamp,
};
use crate::block::{self, SealChain, SignedSealed};
use crate::ids::Seq;
use crate::netconfig::{CONFIG_NAMESPACE, NETWORK_KEY};
use crate::seal_trust::SealTrust;
use crate::store::SealRecord;
use crate::trace::Stage;
use crate::tx::{self, Hash};

/// What intake passes straight to stage 3.
pub(crate) enum Control {
    /// The orderer has made everything up to this seq durable.
    Durable(Seq),
    /// The next seal, to verify against the transactions it covers.
    Seal(SignedSealed),
}

/// Batches stage 3 may have written that the flusher has not yet taken. One flush takes
/// all of them, so a few are enough to keep writing and flushing overlapped.
pub(crate) const WRITES_AHEAD_MAX: usize = 4;

/// What one write put in the store, for the flusher to make durable and tell.
pub(crate) struct Notice {
    /// The transactions written, in seq order.
    txs: Vec<Checked>,
    /// The blocks whose seals were written, in order.
    blocks: Vec<BlockEvent>,
}

/// The flusher: makes what stage 3 wrote durable, then tells the world — statuses, then
/// contract events, then blocks — in commit order. One flush covers every write handed
/// over before it began, and it runs while stage 3 writes the next batch, so writing
/// and flushing overlap; waking the waiters (a system call each) overlaps too.
pub(crate) fn flush_and_notify(shared: &Shared, notices: &Receiver<Notice>) {
    let txs_max = match shared.config.commit_txs_max {
        0 => usize::MAX,
        max => max,
    };
    while let Ok(first) = crate::queue::recv(notices) {
        let mut txs = first.txs.len();
        let mut written = vec![first];
        // Each write holds at most txs_max transactions, so a bounded flush may still
        // take one whole write.
        while txs < txs_max
            && let Ok(next) = notices.try_recv()
        {
            txs = txs.saturating_add(next.txs.len());
            written.push(next);
        }
        // Stamped after the flush and before the durable height moves, so that a trace
        // read by anyone who has seen the transaction durable (a status, or the height)
        // is complete.
        let stamped = shared.world.flush_then(|| {
            let committed_us = tx::now_us();
            for checked in written.iter().flat_map(|notice| &notice.txs) {
                stamp(shared, checked.tx_id, Stage::Committed, committed_us);
                stamp(shared, checked.tx_id, Stage::Notified, tx::now_us());
            }
        });
        if let Err(error) = stamped {
            shared.fail(store_error(error));
            return;
        }
        for notice in written {
            for checked in notice.txs {
                shared.hub.status(TxStatus {
                    tx_id: checked.tx_id,
                    seq: checked.seq,
                    code: checked.code,
                    phase: Phase::Committed,
                    timestamp_ms: checked.timestamp_ms,
                });
                for event in checked.events {
                    shared.hub.event(CommittedEvent {
                        tx_id: checked.tx_id,
                        seq: checked.seq,
                        contract: event.contract,
                        name: event.name,
                        payload: event.payload,
                    });
                }
            }
            for block in notice.blocks {
                shared.hub.block(block);
            }
        }
    }
}

/// Stage 3's bookkeeping between commits.
struct Committer {
    /// The seq stage 2 hands on next.
    next: Seq,
    /// Validated transactions not yet durable, in seq order.
    staged: VecDeque<Checked>,
    /// The orderer's durable mark.
    orderer_durable: Seq,
    /// Merkle leaves (bytes with timestamp) of transactions not yet covered by a
    /// verified seal.
    leaves: BTreeMap<Seq, Hash>,
    /// Seals received, not yet verified (their transactions are still coming).
    seals: VecDeque<SignedSealed>,
    /// Seals verified, waiting for their last transaction to be committed, with the
    /// seal's hash (what block events report).
    verified: VecDeque<(SealRecord, Hash)>,
    /// The chain the next seal must continue.
    chain: SealChain,
    /// Who may sign each seal: the definitions in force from the chain's next seq on.
    trust: SealTrust,
}

/// Stage 3: commits everything it has whenever it can, one sled batch per round, so a
/// lone transaction pays one sync and a burst shares one.
pub(crate) fn run(
    shared: &Shared,
    next: Seq,
    last_seal: Option<SealRecord>,
    rx: &Receiver<Checked>,
    control: &Receiver<Control>,
    notices: &Sender<Notice>,
) {
    match Committer::resume(shared, next, last_seal) {
        Ok(mut committer) => {
            if let Err(error) = committer.run(shared, rx, control, notices) {
                shared.fail(error);
            }
        }
        Err(error) => shared.fail(error),
    }
}

fn store_error(error: impl std::fmt::Display) -> ValidatorError {
    ValidatorError::Store(error.to_string())
}

/// Who may sign the seals from `first` on ([`SealTrust::since`]), from the updates stored
/// back to the one in force at `first` (read back from the key's history, newest first),
/// so that a restarted peer checks the seals still to come as it would have before. Any
/// orderer of the MSP for a validator given no network definition.
pub(super) fn seal_trust(shared: &Shared, first: Seq) -> Result<SealTrust, ValidatorError> {
    let Some(genesis) = &shared.config.genesis else {
        return Ok(SealTrust::any_orderer(shared.msp.clone()));
    };
    let store = shared.world.store();
    let mut updates = Vec::new();
    let mut before = None;
    'pages: loop {
        let page = store
            .history(CONFIG_NAMESPACE, NETWORK_KEY, before, 64)
            .map_err(store_error)?;
        let Some(oldest) = page.last() else {
            break;
        };
        before = Some(oldest.seq);
        for entry in page {
            let definition = entry
                .value
                .as_deref()
                .ok_or_else(|| store_error("the network definition was deleted"))
                .and_then(|bytes| {
                    crate::identity::NetworkDefinition::from_bytes(bytes).map_err(|e| {
                        store_error(format!("the stored network definition is corrupt: {e}"))
                    })
                })?;
            updates.push((entry.seq, definition));
            if entry.seq <= first {
                break 'pages;
            }
        }
    }
    updates.reverse();
    SealTrust::since(first, genesis, &updates).map_err(store_error)
}

impl Committer {
    /// Picks up after the last committed seal: the leaves of the durable transactions
    /// after it are read back (bytes and timestamps as stored), since the next seal
    /// covers them.
    fn resume(
        shared: &Shared,
        next: Seq,
        last_seal: Option<SealRecord>,
    ) -> Result<Committer, ValidatorError> {
        let chain = match &last_seal {
            None => SealChain::genesis(),
            Some(record) => {
                SealChain::after(&block::decode_signed_seal(&record.bytes).map_err(store_error)?)
            }
        };
        let mut leaves = BTreeMap::new();
        let store = shared.world.store();
        let mut from = chain.next_first();
        loop {
            let page = store.transactions(from, 1024).map_err(store_error)?;
            let Some(last) = page.last() else {
                break;
            };
            from = last.seq.next();
            for tx in &page {
                leaves.insert(tx.seq, block::leaf(tx.timestamp_ms, &tx.bytes));
            }
        }
        let trust = seal_trust(shared, chain.next_first())?;
        Ok(Committer {
            next,
            staged: VecDeque::new(),
            orderer_durable: Seq::ZERO,
            leaves,
            seals: VecDeque::new(),
            verified: VecDeque::new(),
            chain,
            trust,
        })
    }

    fn take(&mut self, mut item: Checked) -> Result<(), ValidatorError> {
        super::take_in_turn(&mut self.next, item.seq);
        self.leaves.insert(item.seq, item.leaf);
        if let Some(definition) = item.reconfigured.take() {
            self.trust.push(item.seq, definition).map_err(store_error)?;
        }
        self.staged.push_back(item);
        Ok(())
    }

    fn control(&mut self, item: Control) {
        match item {
            Control::Durable(seq) => self.orderer_durable = self.orderer_durable.max(seq),
            Control::Seal(sealed) => self.seals.push_back(sealed),
        }
    }

    fn run(
        &mut self,
        shared: &Shared,
        rx: &Receiver<Checked>,
        control: &Receiver<Control>,
        notices: &Sender<Notice>,
    ) -> Result<(), ValidatorError> {
        let staged_max = shared.config.queue.max(1) * 4;
        while !shared.stopping() {
            // Wait for anything, then take everything already there.
            select! {
                recv(rx) -> item => match item {
                    Ok(item) => self.take(item)?,
                    Err(_) => return Ok(()),
                },
                recv(control) -> item => match item {
                    Ok(item) => self.control(item),
                    Err(_) => return Ok(()),
                },
                default(POLL) => continue,
            }
            while let Ok(item) = control.try_recv() {
                self.control(item);
            }
            while self.staged.len() < staged_max {
                match rx.try_recv() {
                    Ok(item) => self.take(item)?,
                    Err(_) => break,
                }
            }
            self.verify_seals()?;
            // The bytes' sync overlaps the wait for the orderer's durability.
            if let Some(last) = self.staged.back()
                && last.seq > self.orderer_durable
            {
                shared.world.write_ahead(last.seq).map_err(store_error)?;
            }
            // A bounded group commit may leave some of what is staged for the next.
            while self.commit(shared, notices)? {}
        }
        Ok(())
    }

    /// Verifies every received seal whose transactions have all been validated, over
    /// the leaves of the bytes and timestamps they were validated with, and signed by an
    /// orderer of the definition in force at its last seq: a seal that does not cover
    /// exactly those, or that another signed, stops the peer.
    fn verify_seals(&mut self) -> Result<(), ValidatorError> {
        while let Some(sealed) = self.seals.front() {
            let (first, last) = (sealed.seal.first, sealed.seal.last);
            if !self.leaves.contains_key(&last) {
                return Ok(());
            }
            let range: Vec<Hash> = self
                .leaves
                .range(first..=last)
                .map(|(_, leaf)| *leaf)
                .collect();
            let accepted = self
                .chain
                .accept(&sealed.bytes, &range, &self.trust.after(last))
                .map_err(|e| ValidatorError::Stream(format!("seal {}: {e}", sealed.seal.number)))?;
            self.leaves = self.leaves.split_off(&last.next());
            self.trust.forget_before(last.next());
            self.verified.push_back((
                SealRecord {
                    number: accepted.seal.number,
                    first,
                    last,
                    bytes: accepted.bytes,
                },
                accepted.hash,
            ));
            self.seals.pop_front();
        }
        Ok(())
    }

    /// Writes everything staged that the orderer holds durable (at most
    /// `commit_txs_max` transactions), with the seals that fall inside, and hands it to
    /// the flusher. True when it wrote and more may be ready.
    fn commit(
        &mut self,
        shared: &Shared,
        notices: &Sender<Notice>,
    ) -> Result<bool, ValidatorError> {
        let written = shared.world.written_height();
        let staged = self.staged.back().map_or(written, |c| c.seq);
        let mut through = staged.min(self.orderer_durable);
        let bounded = shared.config.commit_txs_max > 0;
        if bounded {
            let most = u64::try_from(shared.config.commit_txs_max).unwrap_or(u64::MAX);
            through = through.min(Seq(written.0.saturating_add(most)));
        }
        let sealable = self
            .verified
            .iter()
            .take_while(|(seal, _)| seal.last <= through.max(written))
            .count();
        if through <= written && sealable == 0 {
            return Ok(false);
        }
        let (seals, blocks): (Vec<SealRecord>, Vec<BlockEvent>) = self
            .verified
            .drain(..sealable)
            .map(|(seal, hash)| {
                let block = BlockEvent {
                    number: seal.number,
                    first: seal.first,
                    last: seal.last,
                    hash,
                };
                (seal, block)
            })
            .unzip();
        shared
            .world
            .write_staged(through.max(written), seals)
            .map_err(store_error)?;
        let mut txs = Vec::new();
        while self.staged.front().is_some_and(|c| c.seq <= through) {
            let Some(checked) = self.staged.pop_front() else {
                break;
            };
            txs.push(checked);
        }
        // Waits while the flusher is WRITES_AHEAD_MAX batches behind; false only when
        // the pipeline is stopping, which the caller's loop then sees.
        let more = bounded
            && self
                .staged
                .front()
                .is_some_and(|c| c.seq <= self.orderer_durable);
        Ok(send(shared, notices, Notice { txs, blocks }) && more)
    }
}

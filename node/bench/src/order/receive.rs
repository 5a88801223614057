//! A receiver: one stream from one orderer, read as a peer reads it. Each transaction's
//! seq must be the next; its leaf is hashed as it arrives; each seal is checked over the
//! leaves of the transactions it covers ([`SealCheck`]: the chain, the Merkle root, the signatures
//! the ordering service's seals need). What it keeps is when each seal passed, and what
//! it covered.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use prost::Message;
use runnel_api::merkle::leaf;
use runnel_api::proto::ordering_client::OrderingClient;
use runnel_api::proto::ordering_item::Item;
use runnel_api::proto::{BlockSeal, OrderedTx, OrderingItems, SignedSeal, StreamRequest};
use runnel_api::tx::Hash;
use tokio::sync::watch;
use tonic::transport::Channel;

use super::SealCheck;

/// How long a receiver asks an orderer for its stream, and how often.
const OPEN_PATIENCE: Duration = Duration::from_secs(10);
const OPEN_RETRY: Duration = Duration::from_millis(100);

/// A seal a receiver checked: when (µs since the run's start), and its seqs.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sealed {
    pub at_us: u64,
    pub first: u64,
    pub last: u64,
}

/// What one receiver saw.
#[derive(Debug, Default)]
pub(super) struct Received {
    pub seals: Vec<Sealed>,
    /// Encoded `SignedTransaction` bytes of the transactions sealed.
    pub tx_bytes: u64,
}

/// The transactions received that no seal has covered yet, from the seq after the last
/// seal on: a seal follows its transactions in the stream, but not at once (the stream
/// never waits for a seal), so several blocks' transactions may be waiting.
#[derive(Default)]
struct Unsealed {
    leaves: VecDeque<Hash>,
    bytes: VecDeque<u64>,
}

impl Unsealed {
    fn push(&mut self, ordered: &OrderedTx) {
        self.leaves
            .push_back(leaf(ordered.timestamp_ms, &ordered.transaction));
        self.bytes.push_back(ordered.transaction.len() as u64);
    }

    /// How many of the waiting transactions `seal` covers, read from its header (the
    /// check proper is [`SealCheck::accept`]'s): it must start at `next`, the seq after
    /// the last seal, and end at a transaction received.
    fn covered(&self, seal: &[u8], next: u64) -> Result<usize> {
        let header = BlockSeal::decode(SignedSeal::decode(seal)?.seal.as_slice())?;
        let count = header
            .last_seq
            .saturating_sub(header.first_seq)
            .saturating_add(1);
        if header.first_seq != next || count > self.leaves.len() as u64 {
            bail!(
                "a seal over seqs {} to {} where {next} to {} are unsealed",
                header.first_seq,
                header.last_seq,
                next + self.leaves.len() as u64 - 1
            );
        }
        Ok(count as usize)
    }

    /// Drops the first `count`: their encoded bytes.
    fn take(&mut self, count: usize) -> u64 {
        self.leaves.drain(..count);
        self.bytes.drain(..count).sum()
    }
}

/// Where a receiver starts, and when it may stop: once its seals cover the seq `until`
/// sends (the last one the run had ordered).
pub(super) struct Receiver {
    pub client: OrderingClient<Channel>,
    pub endpoint: String,
    pub next_seq: u64,
    pub next_block: u64,
    pub check: Box<dyn SealCheck>,
    pub start: Instant,
    pub until: watch::Receiver<Option<u64>>,
}

impl Receiver {
    /// Reads the stream until its seals cover `until`'s seq.
    pub async fn run(mut self) -> Result<Received> {
        let endpoint = self.endpoint.clone();
        let mut stream = self.open().await?;
        let mut received = Received::default();
        let mut unsealed = Unsealed::default();
        let mut sealed_to = self.next_seq - 1;
        loop {
            if self.until.borrow().is_some_and(|until| sealed_to >= until) {
                return Ok(received);
            }
            let message = tokio::select! {
                message = stream.message() => message,
                changed = self.until.changed() => {
                    changed.map_err(|_| anyhow!("the run ended before {endpoint}'s stream did"))?;
                    continue;
                }
            };
            let message = message
                .map_err(|e| anyhow!("stream from {endpoint}: {}", runnel_client::status(e)))?
                .ok_or_else(|| anyhow!("{endpoint} ended its stream"))?;
            for item in message.items {
                match item.item {
                    Some(Item::Transaction(encoded)) => {
                        let ordered = OrderedTx::decode(encoded.as_slice())?;
                        if ordered.seq != self.next_seq {
                            bail!(
                                "{endpoint} sent seq {} where {} was next",
                                ordered.seq,
                                self.next_seq
                            );
                        }
                        self.next_seq += 1;
                        unsealed.push(&ordered);
                    }
                    Some(Item::Seal(seal)) => {
                        let count = unsealed.covered(&seal, sealed_to + 1)?;
                        let (first, last) = self
                            .check
                            .accept(&seal, &unsealed.leaves.make_contiguous()[..count])
                            .map_err(|e| anyhow!("a seal from {endpoint}: {e}"))?;
                        let at_us = self.start.elapsed().as_micros() as u64;
                        received.seals.push(Sealed { at_us, first, last });
                        received.tx_bytes += unsealed.take(count);
                        sealed_to = last;
                    }
                    Some(Item::Durable(_)) | None => {}
                }
            }
        }
    }

    /// The stream from where the receiver starts. An orderer that has not applied the
    /// last seal yet refuses it (`ORDERER_BEHIND`): asked again until [`OPEN_PATIENCE`].
    async fn open(&mut self) -> Result<tonic::Streaming<OrderingItems>> {
        let deadline = Instant::now() + OPEN_PATIENCE;
        loop {
            let request = StreamRequest {
                from_seq: self.next_seq,
                next_block: self.next_block,
            };
            match self.client.stream(request).await {
                Ok(response) => return Ok(response.into_inner()),
                Err(status) if Instant::now() < deadline => {
                    tracing::debug!(endpoint = %self.endpoint, %status, "stream refused; asking again");
                    tokio::time::sleep(OPEN_RETRY).await;
                }
                Err(status) => {
                    bail!(
                        "stream from {}: {}",
                        self.endpoint,
                        runnel_client::status(status)
                    )
                }
            }
        }
    }
}

//! `Deliver`: the ledger as this node committed it, as streams: transactions from a seq
//! on and blocks from a number on, first what is stored and then live. The store is the
//! source of every item; a stream waits for the height it needs next
//! ([`super::heights`]) and then reads it again.

use std::sync::Arc;

use tonic::{Request, Response, Status};

use super::heights::Mark;
use super::shares::Caller;
use super::stream::{self, Items, PAGE_ITEMS, Sink};
use super::{Shared, first_seq, validation_code};
use crate::proto::deliver_server::Deliver;
use crate::proto::{
    Block, BlockSeal, BlockTransaction, CommittedTransaction, DeliverBlocksRequest,
    DeliverBlocksResponse, DeliverTransactionsRequest, DeliverTransactionsResponse,
};
use runnel_ledger::block;
use runnel_ledger::ids::{BlockNumber, Seq};
use runnel_ledger::ledger::{Ledger, LedgerError, StoredTx};
use runnel_ledger::orderer::SEAL_TXS_MAX;
use runnel_ledger::store::SealRecord;

/// The `Deliver` service.
pub(super) struct DeliverService {
    shared: Arc<Shared>,
}

impl DeliverService {
    pub fn new(shared: Arc<Shared>) -> Self {
        DeliverService { shared }
    }
}

#[tonic::async_trait]
impl Deliver for DeliverService {
    type TransactionsStream = Items<DeliverTransactionsResponse>;

    async fn transactions(
        &self,
        request: Request<DeliverTransactionsRequest>,
    ) -> Result<Response<Self::TransactionsStream>, Status> {
        let caller = Caller::of(&request);
        let next = first_seq(request.into_inner().start_seq);
        let shared = self.shared.clone();
        stream::start(&self.shared, caller, move |sink| {
            transactions(shared, next, sink)
        })
    }

    type BlocksStream = Items<DeliverBlocksResponse>;

    async fn blocks(
        &self,
        request: Request<DeliverBlocksRequest>,
    ) -> Result<Response<Self::BlocksStream>, Status> {
        let caller = Caller::of(&request);
        let request = request.into_inner();
        let next = BlockNumber(request.start_block.max(1));
        let shared = self.shared.clone();
        stream::start(&self.shared, caller, move |sink| {
            blocks(shared, next, request.with_transactions, sink)
        })
    }
}

/// Committed transactions from `next` on.
async fn transactions(
    shared: Arc<Shared>,
    mut next: Seq,
    sink: Sink<DeliverTransactionsResponse>,
) -> Result<(), Status> {
    loop {
        // Registered before the store is read: a commit after the read wakes it.
        let mut wait = shared.heights.wait(Mark::Committed, next.0);
        let read_from = next;
        loop {
            let from = next;
            let page = shared
                .blocking(move |ledger| ledger.reader().committed_transactions(from, PAGE_ITEMS))
                .await?;
            let Some(last) = page.last() else {
                break;
            };
            next = last.seq.next();
            for tx in page {
                let item = DeliverTransactionsResponse {
                    transaction: Some(committed_transaction(tx)),
                };
                if !sink.send(item).await {
                    return Ok(());
                }
            }
        }
        if next == read_from {
            wait.done().await;
        }
    }
}

/// Committed blocks from `next` on.
async fn blocks(
    shared: Arc<Shared>,
    mut next: BlockNumber,
    with_transactions: bool,
    sink: Sink<DeliverBlocksResponse>,
) -> Result<(), Status> {
    loop {
        // Registered before the store is read: a seal after the read wakes it.
        let mut wait = shared.heights.wait(Mark::Sealed, next.0);
        let read_from = next;
        loop {
            let from = next;
            let page = shared
                .blocking(move |ledger| stored_blocks(ledger, from, with_transactions))
                .await?;
            let Some(last) = page.last().and_then(|block| block.seal.as_ref()) else {
                break;
            };
            next = BlockNumber(last.number + 1);
            for block in page {
                if !sink
                    .send(DeliverBlocksResponse { block: Some(block) })
                    .await
                {
                    return Ok(());
                }
            }
        }
        if next == read_from {
            wait.done().await;
        }
    }
}

/// Most transactions listed by one page of a block stream, unless its first block alone
/// holds more (at most [`SEAL_TXS_MAX`]): a page then holds that block alone.
const BLOCK_PAGE_TXS: usize = 256;

/// One page of stored blocks from `from` on: at most [`PAGE_ITEMS`] blocks, and with
/// their transactions, no more blocks than [`BLOCK_PAGE_TXS`] transactions fill.
fn stored_blocks(
    ledger: &Ledger,
    from: BlockNumber,
    with_transactions: bool,
) -> Result<Vec<Block>, LedgerError> {
    let mut blocks = Vec::new();
    let mut listed = 0;
    for seal in ledger.reader().seals(from, PAGE_ITEMS)? {
        let txs = usize::try_from(seal.last.0 - seal.first.0 + 1).unwrap_or(usize::MAX);
        if with_transactions && !blocks.is_empty() && listed + txs > BLOCK_PAGE_TXS {
            break;
        }
        listed += txs;
        blocks.push(block_message(ledger, seal, with_transactions)?);
    }
    Ok(blocks)
}

/// A stored block as the API sends it, with its transaction list if asked for.
pub(super) fn block_message(
    ledger: &Ledger,
    record: SealRecord,
    with_transactions: bool,
) -> Result<Block, LedgerError> {
    let sealed = block::decode_signed_seal(&record.bytes).map_err(|e| {
        LedgerError::BadResult(format!("stored seal of block {}: {e}", record.number))
    })?;
    let mut transactions = Vec::new();
    if with_transactions {
        // The ids and codes alone, never the transactions' bytes; a block holds at most
        // SEAL_TXS_MAX.
        let count = usize::try_from(record.last.0 - record.first.0 + 1).unwrap_or(usize::MAX);
        transactions = ledger
            .reader()
            .committed_tx_list(record.first, count.min(SEAL_TXS_MAX))?
            .into_iter()
            .take_while(|(seq, _, _)| *seq <= record.last)
            .map(|(seq, tx_id, code)| BlockTransaction {
                seq: seq.0,
                tx_id: tx_id.to_hex(),
                code: validation_code(code),
            })
            .collect();
    }
    Ok(Block {
        transactions,
        ..sealed_block(sealed)
    })
}

/// A block message for a signed seal, without its transaction list.
pub(super) fn sealed_block(sealed: block::SignedSealed) -> Block {
    let seal = &sealed.seal;
    Block {
        seal: Some(BlockSeal {
            number: seal.number.0,
            first_seq: seal.first.0,
            last_seq: seal.last.0,
            previous_hash: seal.previous_hash.to_vec(),
            tx_root: seal.tx_root.to_vec(),
            timestamp_ms: seal.timestamp_ms,
        }),
        hash: sealed.hash.to_vec(),
        signed_seal: sealed.bytes,
        transactions: Vec::new(),
    }
}

/// A stored transaction as the API sends it.
pub(super) fn committed_transaction(tx: StoredTx) -> CommittedTransaction {
    CommittedTransaction {
        seq: tx.seq.0,
        tx_id: tx.tx_id.to_hex(),
        code: validation_code(tx.code),
        timestamp_ms: tx.timestamp_ms,
        transaction: tx.bytes,
    }
}

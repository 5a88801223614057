//! What a ledger holds, read: the state and its history, transactions, blocks and their
//! proofs, the network definition in force, and what reading has cost.

use std::sync::Arc;

use super::gateway::transaction_id;
use super::{Ledger, LedgerError};
use crate::identity::NetworkDefinition;
use crate::ids::{BlockNumber, Seq, TxId, ValidationCode};
use crate::metrics::Histogram;
use crate::netconfig::{self, CONFIG_NAMESPACE};
use crate::store::{EventAt, HistoryEntry, SealRecord, Snapshot, StoredEvent, TxBytes, TxRecord};
use crate::tx;

/// A transaction as the ledger holds it at its place in the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredTx {
    /// Its place in the stream.
    pub seq: Seq,
    /// Its id (for bytes that do not decode, the SHA-256 of the bytes, as the validator
    /// records them).
    pub tx_id: TxId,
    /// Its validation code.
    pub code: ValidationCode,
    /// The orderer's clock when it ordered it, Unix milliseconds (what its block's seal
    /// covers with its bytes).
    pub timestamp_ms: u64,
    /// The encoded `SignedTransaction`, exactly as ordered.
    pub bytes: Vec<u8>,
}

/// A transaction's inclusion in a sealed block, checkable with
/// [`crate::block::verify_proof`] against the seal (whose orderer signature anyone can
/// check through the network's MSP).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proof {
    /// The block's seal, as the orderer signed it.
    pub seal: crate::block::SignedSealed,
    /// The transaction, exactly as ordered.
    pub transaction: Vec<u8>,
    /// The Merkle audit path.
    pub proof: crate::proto::InclusionProof,
}

/// Histograms of a node's flushes to disk, in seconds.
#[derive(Debug, Clone)]
pub struct FlushSeconds {
    /// Each commit's flush of the peer's store.
    pub peer: Arc<Histogram>,
    /// Each flush of the orderer's log, when the orderer runs in this process.
    pub orderer: Option<Arc<Histogram>>,
}

/// What a peer's store has read ([`Reader::store_reads`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreReads {
    /// Records met by the scans and lookups of history, events, transactions and ids,
    /// and reads of the transactions' file.
    pub records: u64,
    /// How many of `records` were reads of transactions' bytes.
    pub transactions: u64,
}

/// A ledger's reads ([`Ledger::reader`]).
#[derive(Clone, Copy)]
pub struct Reader<'a> {
    pub(super) ledger: &'a Ledger,
}

impl Reader<'_> {
    /// The last seq durable on this peer: every transaction up to it is committed.
    pub fn durable_height(&self) -> Seq {
        self.ledger.world.durable_height()
    }

    /// A consistent view of the state as of the last validated transaction; it keeps
    /// answering as of that height however far the ledger moves on.
    pub fn snapshot(&self) -> Snapshot {
        self.ledger.world.snapshot()
    }

    /// The changes to `key` in `namespace`, newest first: at most `limit`, from before
    /// seq `before` if given.
    pub fn key_history(
        &self,
        namespace: &str,
        key: &[u8],
        before: Option<Seq>,
        limit: usize,
    ) -> Result<Vec<HistoryEntry>, LedgerError> {
        Ok(self
            .ledger
            .world
            .store()
            .history(namespace, key, before, limit)?)
    }

    /// The sealed block `number`'s seal record, once committed here.
    pub fn seal(&self, number: BlockNumber) -> Result<Option<SealRecord>, LedgerError> {
        Ok(self.ledger.world.store().seal(number)?)
    }

    /// Up to `limit` committed seal records from block `from` on.
    pub fn seals(&self, from: BlockNumber, limit: usize) -> Result<Vec<SealRecord>, LedgerError> {
        Ok(self.ledger.world.store().seals(from, limit)?)
    }

    /// The block that seals `seq`, once its seal is committed here.
    pub fn block_of(&self, seq: Seq) -> Result<Option<BlockNumber>, LedgerError> {
        Ok(self.ledger.world.store().block_of(seq)?)
    }

    /// The transaction at `seq`, validated (staged) or durable.
    pub fn transaction_at(&self, seq: Seq) -> Result<Option<StoredTx>, LedgerError> {
        match self.ledger.world.transaction(seq)? {
            Some(tx) => self.stored(tx).map(Some),
            None => Ok(None),
        }
    }

    /// Up to `limit` durable transactions from seq `from` on, in seq order.
    pub fn committed_transactions(
        &self,
        from: Seq,
        limit: usize,
    ) -> Result<Vec<StoredTx>, LedgerError> {
        self.ledger
            .world
            .store()
            .transactions(from, limit)?
            .into_iter()
            .map(|tx| self.stored(tx))
            .collect()
    }

    /// Up to `limit` events that `contract` emitted in committed transactions, from the
    /// one at `from` on, in stream order, and the durable height they were read up to:
    /// every event of `contract` before that height's end and from `from` on is there,
    /// unless `limit` were returned. One range scan of the store's event index.
    pub fn committed_events(
        &self,
        contract: &str,
        from: EventAt,
        limit: usize,
    ) -> Result<(Vec<StoredEvent>, Seq), LedgerError> {
        let through = self.durable_height();
        let events = self
            .ledger
            .world
            .store()
            .events(contract, from, through, limit)?;
        Ok((events, through))
    }

    /// The transactions of a committed block, without their bytes: `(seq, id, code)` in
    /// seq order, up to `limit` of them from `from` on. Each costs a read of its id and
    /// one of its record, however large its bytes.
    pub fn committed_tx_list(
        &self,
        from: Seq,
        limit: usize,
    ) -> Result<Vec<(Seq, TxId, ValidationCode)>, LedgerError> {
        let durable = self.durable_height();
        let mut out = Vec::new();
        for (seq, tx_id) in self.ledger.world.store().tx_ids(from, limit)? {
            if seq > durable {
                break;
            }
            let code = self.code_at(seq, &tx_id)?;
            out.push((seq, tx_id, code));
        }
        Ok(out)
    }

    /// A transaction's record (seq, validation code, orderer time) and its block once
    /// sealed.
    pub fn transaction(
        &self,
        tx_id: &TxId,
    ) -> Result<Option<(TxRecord, Option<BlockNumber>)>, LedgerError> {
        let Some(record) = self.ledger.world.tx(tx_id)? else {
            return Ok(None);
        };
        let block = self.ledger.world.store().block_of(record.seq)?;
        Ok(Some((record, block)))
    }

    /// Proof that a sealed transaction is in its block: the block's signed seal, the
    /// transaction's bytes, and the Merkle audit path from its leaf (the bytes with the
    /// orderer's timestamp, which the proof carries) to the seal's root, built from the
    /// leaves the store keeps beside each transaction's place: of the block, only the
    /// proven transaction's bytes are read. `None` while the transaction is unknown or
    /// not yet sealed.
    pub fn prove(&self, tx_id: &TxId) -> Result<Option<Proof>, LedgerError> {
        let Some((record, Some(number))) = self.transaction(tx_id)? else {
            return Ok(None);
        };
        let store = self.ledger.world.store();
        let Some(seal) = store.seal(number)? else {
            return Ok(None);
        };
        let corrupt =
            |e: crate::block::BlockError| LedgerError::BadResult(format!("block {number}: {e}"));
        let sealed = crate::block::decode_signed_seal(&seal.bytes).map_err(corrupt)?;
        // The leaves stored with the block's places: the proven transaction's bytes are
        // the only ones read.
        let leaves = store.leaves(seal.first, seal.last)?;
        let proven = store.transaction(record.seq)?.ok_or_else(|| {
            LedgerError::BadResult(format!("block {number}: seq {} is not stored", record.seq))
        })?;
        let proof = crate::block::prove(&sealed, &leaves, proven.seq, proven.timestamp_ms)
            .map_err(corrupt)?;
        Ok(Some(Proof {
            seal: sealed,
            transaction: proven.bytes,
            proof,
        }))
    }

    /// A digest of the world state at the validated height: `(height, SHA-256, keys)`
    /// ([`WorldState::state_hash`]); commits go on while it is computed.
    pub fn state_hash(&self) -> Result<crate::store::StateHash, LedgerError> {
        Ok(self.ledger.world.state_hash()?)
    }

    /// The network's definition in force as of the last validated transaction: the
    /// genesis one (`network.json`) until a `_config` update commits.
    pub fn network(&self) -> Result<Arc<NetworkDefinition>, LedgerError> {
        let snapshot = self.ledger.world.snapshot();
        netconfig::current(&*snapshot.view(CONFIG_NAMESPACE), &self.ledger.genesis)
            .map(|(definition, _)| definition)
            .map_err(LedgerError::BadResult)
    }

    /// [`Reader::network`] and the version of its key (`None`: the genesis one): what
    /// the read of a `_config` update holds.
    pub fn network_version(
        &self,
    ) -> Result<(Arc<NetworkDefinition>, Option<runnel_runtime::Version>), LedgerError> {
        let snapshot = self.ledger.world.snapshot();
        netconfig::current(&*snapshot.view(CONFIG_NAMESPACE), &self.ledger.genesis)
            .map_err(LedgerError::BadResult)
    }

    /// The genesis definition (`network.json`).
    pub fn network_genesis(&self) -> &NetworkDefinition {
        &self.ledger.genesis
    }

    /// How long this node's flushes to disk take: the peer's store's, and the orderer's
    /// log's when the orderer runs in this process.
    pub fn flush_seconds(&self) -> FlushSeconds {
        FlushSeconds {
            peer: self.ledger.world.store().flush_seconds(),
            orderer: self.ledger.orderer.flush_seconds(),
        }
    }

    /// What the peer's store has read since it opened: records met by scans and lookups,
    /// and of those, reads of transactions' bytes. What calls cost, counted.
    pub fn store_reads(&self) -> StoreReads {
        let store = self.ledger.world.store();
        StoreReads {
            records: store.records_read(),
            transactions: store.transactions_read(),
        }
    }

    /// A stored transaction with its id, its code from the tx index and the orderer's
    /// timestamp of its seq.
    fn stored(&self, tx: TxBytes) -> Result<StoredTx, LedgerError> {
        let TxBytes {
            seq,
            timestamp_ms,
            bytes,
        } = tx;
        let tx_id = transaction_id(&bytes).unwrap_or_else(|_| TxId(tx::sha256(&bytes)));
        let code = self.code_at(seq, &tx_id)?;
        Ok(StoredTx {
            seq,
            tx_id,
            code,
            timestamp_ms,
            bytes,
        })
    }

    /// The code of the transaction `tx_id` at `seq`, from the id's record: the first
    /// transaction of an id has its own; a later one is a `DUPLICATE_TXID`.
    fn code_at(&self, seq: Seq, tx_id: &TxId) -> Result<ValidationCode, LedgerError> {
        let record = self.ledger.world.tx(tx_id)?.ok_or_else(|| {
            LedgerError::BadResult(format!("transaction {tx_id} at seq {seq} has no record"))
        })?;
        Ok(if record.seq == seq {
            record.code
        } else {
            ValidationCode::DuplicateTxid
        })
    }
}

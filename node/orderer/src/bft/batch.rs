//! What a BFT cluster orders: batches of transactions, named by a domain-tagged SHA-256 of
//! their bytes, and kept on disk by every orderer that vouches for one.
//!
//! A batch ([`Batch`], an `OrderingBatch`) names the consensus view it was proposed in,
//! the batch it builds on (its view and digest: so an orderer can apply every batch a
//! finalization makes final, oldest first) and the proposer's clock, which becomes each
//! of its transactions' timestamp and its block's seal's. Consensus orders digests only:
//! an orderer votes for a batch once it holds the bytes and has written them to its
//! [`BatchLog`] and synced it, so a batch that finalizes is on the disks of a quorum,
//! and so of at least one honest orderer, whatever crashes afterwards.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use commonware_cryptography::sha256::Digest;
use prost::Message as _;

use runnel_ledger::ids::TxId;
use runnel_ledger::netconfig::CONFIG_NAMESPACE;
use runnel_ledger::orderer::SEAL_TXS_MAX;
use runnel_ledger::proto::OrderingBatch;
use runnel_ledger::records::{RecordFile, RecordReader, SyncMode};
use runnel_ledger::tx::{decode_transaction, sha256, tx_id};

/// Domain tag of a batch's digest.
pub const BATCH_DOMAIN: &[u8] = b"runnel.batch.v1";

/// Transaction bytes a leader puts in one batch at most (one transaction larger than
/// this goes alone).
pub const BATCH_BYTES_TARGET: usize = 4 << 20;

/// Record kind of a batch in the log.
const BATCH: u8 = b'b';

/// The log's file name in the orderer's BFT directory.
pub const BATCH_LOG_FILE: &str = "batches.log";

/// The digest of the genesis "batch" every chain starts from, for `channel`.
pub fn genesis(channel: &str) -> Digest {
    let mut bytes = b"runnel.bft.genesis.v1".to_vec();
    bytes.extend_from_slice(channel.as_bytes());
    Digest::from(sha256(&bytes))
}

/// One batch, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    pub view: u64,
    pub parent_view: u64,
    pub parent: Digest,
    pub timestamp_ms: u64,
    pub transactions: Vec<Vec<u8>>,
}

/// What the orderers need of one transaction of a batch, read once when the batch is
/// made or received: its id, its proposal's timestamp, whether it is a `_config` update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxMeta {
    pub tx_id: TxId,
    pub proposal_ms: u64,
    pub config_update: bool,
}

/// A batch with its bytes and digest, and each transaction's [`TxMeta`] (`None` for one
/// that does not decode: ordered by no orderer).
#[derive(Debug, Clone)]
pub struct Held {
    pub batch: Arc<Batch>,
    pub bytes: Arc<Vec<u8>>,
    pub digest: Digest,
    pub txs: Arc<Vec<Option<TxMeta>>>,
}

/// The [`TxMeta`] of each of `transactions`.
fn metas(transactions: &[Vec<u8>]) -> Arc<Vec<Option<TxMeta>>> {
    Arc::new(
        transactions
            .iter()
            .map(|bytes| {
                let (_, _, proposal) = decode_transaction(bytes).ok()?;
                Some(TxMeta {
                    tx_id: tx_id(&proposal),
                    proposal_ms: proposal.timestamp_ms,
                    config_update: proposal.contract == CONFIG_NAMESPACE,
                })
            })
            .collect(),
    )
}

/// The digest of a batch's bytes.
pub fn digest(bytes: &[u8]) -> Digest {
    let mut tagged = Vec::with_capacity(BATCH_DOMAIN.len() + bytes.len());
    tagged.extend_from_slice(BATCH_DOMAIN);
    tagged.extend_from_slice(bytes);
    Digest::from(sha256(&tagged))
}

impl Batch {
    /// The batch encoded, with its digest.
    pub fn seal(self) -> Held {
        let bytes = OrderingBatch {
            view: self.view,
            parent_view: self.parent_view,
            parent: self.parent.as_ref().to_vec(),
            timestamp_ms: self.timestamp_ms,
            transactions: self.transactions.clone(),
        }
        .encode_to_vec();
        Held {
            digest: digest(&bytes),
            txs: metas(&self.transactions),
            batch: Arc::new(self),
            bytes: Arc::new(bytes),
        }
    }

    /// Decodes a batch another orderer sent, within bounds: at most [`SEAL_TXS_MAX`]
    /// transactions (a block's most), none empty, a 32-byte parent digest, a parent view
    /// before its own. Its size was bounded by the transport before it was read.
    pub fn decode(bytes: &[u8]) -> Result<Held, String> {
        let proto =
            OrderingBatch::decode(bytes).map_err(|e| format!("not an ordering batch: {e}"))?;
        if proto.transactions.len() > SEAL_TXS_MAX {
            return Err(format!(
                "{} transactions; a batch holds at most {SEAL_TXS_MAX}",
                proto.transactions.len()
            ));
        }
        if proto.transactions.iter().any(Vec::is_empty) {
            return Err("an empty transaction".into());
        }
        let parent: [u8; 32] = proto
            .parent
            .as_slice()
            .try_into()
            .map_err(|_| format!("a parent digest of {} bytes", proto.parent.len()))?;
        if proto.parent_view >= proto.view {
            return Err(format!(
                "view {} built on view {}",
                proto.view, proto.parent_view
            ));
        }
        let batch = Batch {
            view: proto.view,
            parent_view: proto.parent_view,
            parent: Digest::from(parent),
            timestamp_ms: proto.timestamp_ms,
            transactions: proto.transactions,
        };
        Ok(Held {
            digest: digest(bytes),
            txs: metas(&batch.transactions),
            batch: Arc::new(batch),
            bytes: Arc::new(bytes.to_vec()),
        })
    }
}

/// The batches this orderer voted for or proposed and has not yet applied, on disk.
pub struct BatchLog {
    file: RecordFile,
    reader: RecordReader,
}

impl BatchLog {
    /// Opens the log in `dir`, keeping the batches of views after `applied` (those still
    /// to apply) and writing it again with them alone.
    pub fn open(dir: &Path, applied: u64) -> Result<(BatchLog, HashMap<Digest, Held>), String> {
        let path = dir.join(BATCH_LOG_FILE);
        let opened = RecordFile::open(&path).map_err(|e| e.to_string())?;
        let reader = opened
            .file
            .handle(SyncMode::Full)
            .map_err(|e| e.to_string())?;
        let mut kept = HashMap::new();
        for at in opened.records {
            let bytes = reader.read(at).map_err(|e| e.to_string())?;
            let held = Batch::decode(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
            if held.batch.view > applied {
                kept.insert(held.digest, held);
            }
        }
        drop((opened.file, reader));
        // Written again with what is kept: a new file renamed into place.
        let staging = dir.join(format!("{BATCH_LOG_FILE}.new"));
        let _ = std::fs::remove_file(&staging);
        let mut file = RecordFile::open(&staging).map_err(|e| e.to_string())?.file;
        for held in kept.values() {
            file.append(BATCH, &held.bytes).map_err(|e| e.to_string())?;
        }
        let reader = file.handle(SyncMode::Full).map_err(|e| e.to_string())?;
        reader.sync().map_err(|e| e.to_string())?;
        std::fs::rename(&staging, &path).map_err(|e| e.to_string())?;
        file.renamed(&path);
        Ok((BatchLog { file, reader }, kept))
    }

    /// Appends `held` and syncs (`fdatasync`): it survives a power loss from then on.
    pub fn keep(&mut self, held: &Held) -> Result<(), String> {
        self.file
            .append(BATCH, &held.bytes)
            .map_err(|e| e.to_string())?;
        self.reader.sync().map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(view: u64) -> Batch {
        Batch {
            view,
            parent_view: view - 1,
            parent: genesis("main"),
            timestamp_ms: 1_800_000_000_000,
            transactions: vec![b"one".to_vec(), b"two".to_vec()],
        }
    }

    #[test]
    fn batches_round_trip_and_hostile_ones_are_refused() {
        let held = batch(3).seal();
        let decoded = Batch::decode(&held.bytes).unwrap();
        assert_eq!(decoded.batch, held.batch);
        assert_eq!(decoded.digest, held.digest);
        assert_ne!(batch(4).seal().digest, held.digest);

        let refused = |batch: OrderingBatch| Batch::decode(&batch.encode_to_vec()).unwrap_err();
        let proto = || OrderingBatch {
            view: 2,
            parent_view: 1,
            parent: vec![0; 32],
            timestamp_ms: 1,
            transactions: vec![b"tx".to_vec()],
        };
        assert!(
            refused(OrderingBatch {
                parent: vec![0; 31],
                ..proto()
            })
            .contains("parent")
        );
        assert!(
            refused(OrderingBatch {
                parent_view: 2,
                ..proto()
            })
            .contains("view")
        );
        assert!(
            refused(OrderingBatch {
                transactions: vec![Vec::new()],
                ..proto()
            })
            .contains("empty")
        );
        assert!(
            refused(OrderingBatch {
                transactions: vec![b"t".to_vec(); SEAL_TXS_MAX + 1],
                ..proto()
            })
            .contains("at most")
        );
        assert!(Batch::decode(b"\xff\xff garbage").is_err());
    }

    #[test]
    fn the_log_keeps_what_is_still_to_apply_across_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, kept) = BatchLog::open(dir.path(), 0).unwrap();
        assert!(kept.is_empty());
        let batches: Vec<Held> = (1..=4).map(|view| batch(view).seal()).collect();
        for held in &batches {
            log.keep(held).unwrap();
        }
        drop(log);
        let (log, kept) = BatchLog::open(dir.path(), 2).unwrap();
        let mut views: Vec<u64> = kept.values().map(|held| held.batch.view).collect();
        views.sort_unstable();
        assert_eq!(views, [3, 4]);
        assert_eq!(kept[&batches[3].digest].batch, batches[3].batch);
        drop(log);
        // Written again with the two kept: opening once more finds the same.
        let (_, kept) = BatchLog::open(dir.path(), 2).unwrap();
        assert_eq!(kept.len(), 2);
    }
}

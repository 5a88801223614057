//! The byte layout of every record in the store's one sled tree (see the module doc), and
//! the checked decoding of each record read back.

use runnel_runtime::{Version, VersionedValue};

use super::{KEY_BYTES_MAX, NAMESPACE_BYTES_MAX, SealRecord, StoreError, TxRecord};
use crate::ids::{BlockNumber, Seq, TxId, ValidationCode};
use crate::records::RecordAt;

/// Prefix of state records.
const STATE: u8 = b's';
/// [`STATE`] as a scan prefix.
pub(super) const STATE_PREFIX: [u8; 1] = [STATE];
/// Prefix of history records.
const HISTORY: u8 = b'h';
/// Prefix of tx-index records.
const TX: u8 = b't';
/// [`TX`] as a scan prefix.
pub(super) const TX_PREFIX: [u8; 1] = [TX];
/// Prefix of ordered-transaction records.
const TRANSACTION: u8 = b'o';
/// Prefix of seal records.
pub(super) const SEAL: u8 = b'b';
/// Prefix of seal-index records.
pub(super) const SEAL_INDEX: u8 = b'c';
/// Prefix of contract-event index records.
const EVENT: u8 = b'e';
/// Prefix of the records of the ids of each commit's transactions.
const TX_IDS: u8 = b'i';
/// Bounds the tx-id records from above.
pub(super) const TX_IDS_END: [u8; 1] = [TX_IDS + 1];
/// The metadata record holding the durable height.
pub(super) const HEIGHT_KEY: &[u8] = b"mheight";
/// The metadata record holding the store's format ([`FORMAT`]).
pub(super) const FORMAT_KEY: &[u8] = b"mformat";
/// The layout this code reads and writes; another is refused when the store opens,
/// never read. Format 1 (no format record) had neither the contract-event index nor the
/// tx-id records, kept no checksum beside a pointer to a value inside a transaction's
/// bytes, and kept no orderer's timestamp per seq (its seals' Merkle leaves held the
/// transactions' bytes alone). Format 2 had the index, the tx-id records and the
/// checksums, but no timestamps. Format 3 kept the timestamp beside each transaction's
/// place, as the leaves of its seals hold it, but its seals carried one orderer's
/// signature in fields of their own. Format 4 stored seals whose signatures are a list
/// (`SignedSeal.signatures`), but not each transaction's Merkle leaf: a proof read its
/// whole block. Format 5 keeps the leaf beside each transaction's place.
pub const FORMAT: u64 = 5;

/// Ends a namespace inside a key (namespaces never hold it).
const NS_END: u8 = 0x00;
/// The byte after [`NS_END`]: `prefix ns NS_AFTER` bounds all of a namespace's keys.
const NS_AFTER: u8 = 0x01;

/// Bytes of an encoded seq or block number.
const U64_BYTES: usize = 8;
/// Bytes of a transaction id.
const TX_ID_BYTES: usize = 32;
/// Bytes of an encoded tx-index record: seq, code, timestamp.
const TX_RECORD_BYTES: usize = U64_BYTES + 1 + U64_BYTES;
/// Bytes of a seal value before the seal itself: first and last seq.
const SEAL_HEADER_BYTES: usize = U64_BYTES + U64_BYTES;
/// Bytes of a seal-index value: block number and first seq.
const SEAL_INDEX_BYTES: usize = U64_BYTES + U64_BYTES;
/// Bytes of a history value before the value itself: tag and tx id.
const HISTORY_HEADER_BYTES: usize = 1 + TX_ID_BYTES;
/// Bytes of the place of a value inside a transaction's bytes: offset, length and
/// CRC-32 of the value, u32 big-endian each.
const VALUE_AT_BYTES: usize = 12;
/// History tag of a put.
const TAG_PUT: u8 = 0;
/// History tag of a delete.
const TAG_DELETE: u8 = 1;
/// A history record of a write whose value is not copied: it points at the value inside
/// the writing transaction's bytes ([`ValueAt`]).
const TAG_PUT_AT: u8 = 2;
/// Values shorter than this are copied into the history record: a pointer saves too
/// little to be worth a read of the transaction.
pub(super) const HISTORY_POINTER_MIN: usize = 64;
/// State values this long or longer are not copied into the state record either: it
/// points at the value inside the writing transaction's bytes. sled rewrites a whole
/// leaf (up to 16 records) whenever it consolidates one, so a large value (a contract's
/// code, ~100 KB) copied inline would be written again each time a key beside it changes.
pub(super) const STATE_POINTER_MIN: usize = 4096;
/// The high bit of a state record's seq: the record holds the value's place
/// ([`ValueAt`]) in the writing transaction's bytes, not the value. Seqs never reach it.
const STATE_AT: u64 = 1 << 63;

/// Where a value lies inside the bytes of the transaction that wrote it, with its
/// checksum: a reader reads those bytes alone, not the whole transaction, and still
/// knows them to be the ones written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ValueAt {
    /// Where the value starts in the transaction's bytes.
    pub offset: u32,
    /// Its length.
    pub len: u32,
    /// CRC-32 of the value.
    pub crc: u32,
}

impl ValueAt {
    /// The place of `value`, found at `offset` in a transaction's bytes.
    pub fn new(offset: u32, value: &[u8]) -> Option<ValueAt> {
        Some(ValueAt {
            offset,
            len: u32::try_from(value.len()).ok()?,
            crc: crc32fast::hash(value),
        })
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.offset.to_be_bytes());
        out.extend_from_slice(&self.len.to_be_bytes());
        out.extend_from_slice(&self.crc.to_be_bytes());
    }

    fn decode(bytes: &[u8]) -> Option<ValueAt> {
        let bytes = <[u8; VALUE_AT_BYTES]>::try_from(bytes).ok()?;
        let word = |at: usize| {
            u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        Some(ValueAt {
            offset: word(0),
            len: word(4),
            crc: word(8),
        })
    }
}

/// Refuses a namespace that is empty, too long, or holds the separator byte.
pub(crate) fn check_namespace(ns: &str) -> Result<(), StoreError> {
    let ok = !ns.is_empty() && ns.len() <= NAMESPACE_BYTES_MAX && !ns.as_bytes().contains(&NS_END);
    if ok {
        Ok(())
    } else {
        Err(StoreError::bad_namespace(ns))
    }
}

/// Refuses a key longer than [`KEY_BYTES_MAX`].
pub(crate) fn check_key(key: &[u8]) -> Result<(), StoreError> {
    if key.len() <= KEY_BYTES_MAX {
        Ok(())
    } else {
        Err(StoreError::KeyTooLong { bytes: key.len() })
    }
}

/// `prefix ns 0x00`: what every key of namespace `ns` under `prefix` starts with.
fn ns_prefix(prefix: u8, ns: &str, extra: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + ns.len() + extra);
    out.push(prefix);
    out.extend_from_slice(ns.as_bytes());
    out.push(NS_END);
    out
}

/// True for the state record key of a key in a system namespace (one whose name starts
/// with `_`, such as `_lifecycle`).
pub(super) fn is_system_state_key(state_key: &[u8]) -> bool {
    state_key.first() == Some(&STATE) && state_key.get(1) == Some(&b'_')
}

/// Length of the prefix of `ns`'s state keys, before the key itself.
pub(super) fn state_prefix_len(ns: &str) -> usize {
    2 + ns.len()
}

/// The state record key of `key` in `ns`. The overlay uses the same bytes, so both sort
/// alike and merge in one pass.
pub(super) fn state_key(ns: &str, key: &[u8]) -> Vec<u8> {
    let mut out = ns_prefix(STATE, ns, key.len());
    out.extend_from_slice(key);
    out
}

/// The state record keys bounding `start <= key < end` in `ns` (`end = None`: to the
/// namespace's end), or `None` when the range is empty.
pub(super) fn state_range(
    ns: &str,
    start: &[u8],
    end: Option<&[u8]>,
) -> Option<(Vec<u8>, Vec<u8>)> {
    let upper = match end {
        Some(end) if end <= start => return None,
        Some(end) => state_key(ns, end),
        None => {
            let mut upper = ns_prefix(STATE, ns, 0);
            // Only keys starting `ns 0x00` sort between `ns 0x00` and `ns 0x01`, and as no
            // namespace holds 0x00, those are exactly the keys of `ns`.
            if let Some(last) = upper.last_mut() {
                *last = NS_AFTER;
            }
            upper
        }
    };
    Some((state_key(ns, start), upper))
}

/// A state record's value: the writing seq, then the value.
pub(super) fn encode_state_value(seq: Seq, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(U64_BYTES + value.len());
    out.extend_from_slice(&seq.0.to_be_bytes());
    out.extend_from_slice(value);
    out
}

/// A state record's value for a value at `at` in the bytes of the transaction at `seq`.
pub(super) fn encode_state_value_at(seq: Seq, at: ValueAt) -> Vec<u8> {
    let mut out = Vec::with_capacity(U64_BYTES + VALUE_AT_BYTES);
    out.extend_from_slice(&(seq.0 | STATE_AT).to_be_bytes());
    at.encode(&mut out);
    out
}

/// What a state record holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum StateRecord {
    /// The value and its version.
    Inline(VersionedValue),
    /// The value lies at `at` in the bytes of the transaction at `seq`, which wrote it.
    At {
        /// The writing transaction, and so the version.
        seq: Seq,
        /// Where in its bytes.
        at: ValueAt,
    },
}

/// Decodes a state record's value.
pub(super) fn decode_state_record(bytes: &[u8]) -> Result<StateRecord, StoreError> {
    let corrupt = |detail: String| StoreError::corrupt("state value", detail);
    let (seq, value) = split_u64(bytes)
        .ok_or_else(|| corrupt(format!("{} bytes, fewer than a seq", bytes.len())))?;
    // Seq 0 means "before the first transaction": nothing can have written it.
    if seq & !STATE_AT == 0 {
        return Err(corrupt("version is seq 0".to_string()));
    }
    if seq & STATE_AT == 0 {
        return Ok(StateRecord::Inline(VersionedValue {
            value: value.to_vec(),
            version: Version::from_seq(seq),
        }));
    }
    let at = ValueAt::decode(value).ok_or_else(|| {
        corrupt(format!(
            "a value's place in {} bytes, not {VALUE_AT_BYTES}",
            value.len()
        ))
    })?;
    Ok(StateRecord::At {
        seq: Seq(seq & !STATE_AT),
        at,
    })
}

/// Decodes a state record's key into the contract key, given its namespace prefix length.
pub(super) fn state_key_suffix(record_key: &[u8], prefix_len: usize) -> Result<&[u8], StoreError> {
    record_key
        .get(prefix_len..)
        .ok_or_else(|| StoreError::corrupt("state key", "shorter than its namespace prefix"))
}

/// `'h' ns 0x00 len(key) key`: what every history record of `key` starts with.
pub(super) fn history_prefix(ns: &str, key: &[u8]) -> Vec<u8> {
    let mut out = ns_prefix(HISTORY, ns, 4 + key.len() + U64_BYTES);
    // `check_key` bounds keys far below u32::MAX; the conversion cannot fail after it.
    let len = u32::try_from(key.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(key);
    out
}

/// The history record key of the write of `key` at `seq`.
pub(super) fn history_key(ns: &str, key: &[u8], seq: Seq) -> Vec<u8> {
    let mut out = history_prefix(ns, key);
    out.extend_from_slice(&(u64::MAX - seq.0).to_be_bytes());
    out
}

/// The first history record key with a seq below `before`, for paging (`None` when no
/// seq is below it).
pub(super) fn history_start(prefix: &[u8], before: Option<Seq>) -> Option<Vec<u8>> {
    let mut start = prefix.to_vec();
    match before {
        None => {}
        Some(Seq(0)) => return None,
        // Seqs below `before` are inverted to values from u64::MAX - (before - 1) up.
        Some(Seq(before)) => start.extend_from_slice(&(u64::MAX - (before - 1)).to_be_bytes()),
    }
    Some(start)
}

/// The seq of a history record key found under `prefix`.
pub(super) fn decode_history_seq(record_key: &[u8], prefix_len: usize) -> Result<Seq, StoreError> {
    let tail = record_key.get(prefix_len..).unwrap_or_default();
    match <[u8; U64_BYTES]>::try_from(tail) {
        Ok(inverted) => Ok(Seq(u64::MAX - u64::from_be_bytes(inverted))),
        Err(_) => Err(StoreError::corrupt(
            "history key",
            format!("{} bytes after the key, not a seq", tail.len()),
        )),
    }
}

/// What a history record says of a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum HistoryWrite {
    /// The value written, copied into the record.
    Put(Vec<u8>),
    /// The value written lies here in the writing transaction's bytes.
    PutAt(ValueAt),
    /// The key was deleted.
    Delete,
}

/// A history record's value: tag, tx id, then the value, its place in the transaction's
/// bytes, or nothing for a delete.
pub(super) fn encode_history_value(tx_id: &TxId, write: &HistoryWrite) -> Vec<u8> {
    let mut out = Vec::with_capacity(HISTORY_HEADER_BYTES + VALUE_AT_BYTES);
    let tag = match write {
        HistoryWrite::Put(_) => TAG_PUT,
        HistoryWrite::PutAt(_) => TAG_PUT_AT,
        HistoryWrite::Delete => TAG_DELETE,
    };
    out.push(tag);
    out.extend_from_slice(tx_id.as_bytes());
    match write {
        HistoryWrite::Put(value) => out.extend_from_slice(value),
        HistoryWrite::PutAt(at) => at.encode(&mut out),
        HistoryWrite::Delete => {}
    }
    out
}

/// Decodes a history record's value into the writing tx id and the write.
pub(super) fn decode_history_value(bytes: &[u8]) -> Result<(TxId, HistoryWrite), StoreError> {
    let corrupt = |detail: String| StoreError::corrupt("history value", detail);
    if bytes.len() < HISTORY_HEADER_BYTES {
        return Err(corrupt(format!(
            "{} bytes, fewer than its header",
            bytes.len()
        )));
    }
    let (header, body) = bytes.split_at(HISTORY_HEADER_BYTES);
    let mut id = [0u8; TX_ID_BYTES];
    id.copy_from_slice(&header[1..]);
    match header[0] {
        TAG_PUT => Ok((TxId(id), HistoryWrite::Put(body.to_vec()))),
        TAG_PUT_AT => match ValueAt::decode(body) {
            Some(at) => Ok((TxId(id), HistoryWrite::PutAt(at))),
            None => Err(corrupt(format!(
                "a value's place in {} bytes, not {VALUE_AT_BYTES}",
                body.len()
            ))),
        },
        TAG_DELETE if body.is_empty() => Ok((TxId(id), HistoryWrite::Delete)),
        TAG_DELETE => Err(corrupt(format!("a delete carrying {} bytes", body.len()))),
        tag => Err(corrupt(format!("unknown tag {tag}"))),
    }
}

/// The tx-index record key of `tx_id`.
pub(super) fn tx_key(tx_id: &TxId) -> [u8; 1 + TX_ID_BYTES] {
    let mut out = [0u8; 1 + TX_ID_BYTES];
    out[0] = TX;
    out[1..].copy_from_slice(tx_id.as_bytes());
    out
}

/// A tx-index record's value.
pub(super) fn encode_tx_record(record: &TxRecord) -> [u8; TX_RECORD_BYTES] {
    let mut out = [0u8; TX_RECORD_BYTES];
    out[..8].copy_from_slice(&record.seq.0.to_be_bytes());
    out[8] = record.code as u8;
    out[9..].copy_from_slice(&record.timestamp_ms.to_be_bytes());
    out
}

/// Decodes the tx-index record of `tx_id`.
pub(super) fn decode_tx_record(tx_id: TxId, bytes: &[u8]) -> Result<TxRecord, StoreError> {
    let corrupt = |detail: String| StoreError::corrupt("tx record", detail);
    let bytes = <[u8; TX_RECORD_BYTES]>::try_from(bytes)
        .map_err(|_| corrupt(format!("{} bytes, not {TX_RECORD_BYTES}", bytes.len())))?;
    let code = ValidationCode::from_u8(bytes[8])
        .ok_or_else(|| corrupt(format!("unknown validation code {}", bytes[8])))?;
    let seq = u64_at(&bytes, 0);
    if seq == 0 {
        return Err(corrupt("seq 0".to_string()));
    }
    Ok(TxRecord {
        tx_id,
        seq: Seq(seq),
        code,
        timestamp_ms: u64_at(&bytes, 9),
    })
}

/// The ordered-transaction record key of `seq`.
pub(super) fn transaction_key(seq: Seq) -> [u8; 1 + U64_BYTES] {
    prefixed_u64(TRANSACTION, seq.0)
}

/// Bytes of an encoded length in the transactions' file.
const LEN_BYTES: usize = 4;
/// Bytes of a transaction's Merkle leaf.
const LEAF_BYTES: usize = 32;
/// Bytes of one ordered transaction's entry: `offset u64be ++ len u32be ++
/// timestamp_ms u64be ++ leaf`.
const PLACE_BYTES: usize = U64_BYTES + LEN_BYTES + U64_BYTES + LEAF_BYTES;

/// Where an ordered transaction's bytes lie in the transactions' file, and the orderer's
/// timestamp for its seq (what its Merkle leaf holds with the bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct TxPlace {
    /// Its bytes.
    pub at: RecordAt,
    /// The orderer's clock when it assigned the seq, Unix milliseconds.
    pub timestamp_ms: u64,
    /// Its Merkle leaf ([`crate::block::leaf`] of the bytes with the timestamp): what an
    /// inclusion proof needs of it, without its bytes.
    pub leaf: crate::tx::Hash,
}

/// The value of the ordered-transaction record of a run of seqs `first ..= first +
/// places.len() - 1` (keyed by the last): where each one's bytes lie in the store's
/// transaction file, and its timestamp. A run of one is its entry alone; a longer run is
/// `first u64be` followed by the entries in seq order.
pub(super) fn encode_transaction_run(first: Seq, places: &[TxPlace]) -> Vec<u8> {
    let mut value = Vec::with_capacity(U64_BYTES + places.len() * PLACE_BYTES);
    if places.len() > 1 {
        value.extend_from_slice(&first.0.to_be_bytes());
    }
    for place in places {
        value.extend_from_slice(&place.at.offset.to_be_bytes());
        value.extend_from_slice(&place.at.len.to_be_bytes());
        value.extend_from_slice(&place.timestamp_ms.to_be_bytes());
        value.extend_from_slice(&place.leaf);
    }
    value
}

/// A decoded ordered-transaction record: the entries of seqs `first ..= last`.
#[derive(Debug, Clone, Copy)]
pub(super) struct TransactionRun<'a> {
    pub first: Seq,
    pub last: Seq,
    places: &'a [u8],
}

impl TransactionRun<'_> {
    /// Where the bytes of `seq` lie and its timestamp, if the run holds it.
    pub fn place(&self, seq: Seq) -> Option<TxPlace> {
        if seq < self.first || seq > self.last {
            return None;
        }
        let at = usize::try_from(seq.0 - self.first.0).ok()? * PLACE_BYTES;
        let len_at = at + U64_BYTES;
        let mut len = [0u8; LEN_BYTES];
        len.copy_from_slice(&self.places[len_at..len_at + LEN_BYTES]);
        let leaf_at = len_at + LEN_BYTES + U64_BYTES;
        let mut leaf = [0u8; LEAF_BYTES];
        leaf.copy_from_slice(&self.places[leaf_at..leaf_at + LEAF_BYTES]);
        Some(TxPlace {
            at: RecordAt {
                kind: TRANSACTION,
                offset: u64_at(self.places, at),
                len: u32::from_be_bytes(len),
            },
            timestamp_ms: u64_at(self.places, len_at + LEN_BYTES),
            leaf,
        })
    }

    /// Each seq of the run with its entry, in order.
    pub fn iter(&self) -> impl Iterator<Item = (Seq, TxPlace)> + '_ {
        (self.first.0..=self.last.0).filter_map(|seq| Some((Seq(seq), self.place(Seq(seq))?)))
    }
}

/// Decodes an ordered-transaction record ([`encode_transaction_run`]).
pub(super) fn decode_transaction_run<'a>(
    key: &[u8],
    value: &'a [u8],
) -> Result<TransactionRun<'a>, StoreError> {
    let last = decode_transaction_key(key)?;
    let bad = || {
        StoreError::corrupt(
            "transaction record",
            format!("{} bytes for seq {last}", value.len()),
        )
    };
    if value.len() == PLACE_BYTES {
        return Ok(TransactionRun {
            first: last,
            last,
            places: value,
        });
    }
    let (head, places) = value.split_at_checked(U64_BYTES).ok_or_else(bad)?;
    let count = places.len() / PLACE_BYTES;
    let first = u64_at(head, 0);
    if count < 2
        || places.len() % PLACE_BYTES != 0
        || first == 0
        || first.checked_add(count as u64 - 1) != Some(last.0)
    {
        return Err(bad());
    }
    Ok(TransactionRun {
        first: Seq(first),
        last,
        places,
    })
}

/// Bounds the ordered-transaction records from above.
pub(super) const TRANSACTION_END: [u8; 1] = [TRANSACTION + 1];

/// The kind of the transaction file's records.
pub(super) const TRANSACTION_RECORD: u8 = TRANSACTION;

/// Decodes an ordered-transaction record key into its seq.
pub(super) fn decode_transaction_key(bytes: &[u8]) -> Result<Seq, StoreError> {
    match decode_prefixed_u64(TRANSACTION, bytes) {
        Some(0) | None => Err(StoreError::corrupt(
            "transaction key",
            format!("{} bytes, not a seq from 1", bytes.len()),
        )),
        Some(seq) => Ok(Seq(seq)),
    }
}

/// `'e' contract 0x00`: what every event-index record of `contract` starts with.
pub(super) fn event_prefix(contract: &str) -> Vec<u8> {
    ns_prefix(EVENT, contract, U64_BYTES + 4)
}

/// The event-index record key of the event at `index` among the events of the
/// transaction at `seq`, emitted by `contract`: a contract's events sort in stream order.
pub(super) fn event_key(contract: &str, seq: Seq, index: u32) -> Vec<u8> {
    let mut out = event_prefix(contract);
    out.extend_from_slice(&seq.0.to_be_bytes());
    out.extend_from_slice(&index.to_be_bytes());
    out
}

/// The event-index record keys bounding `contract`'s events from the one at `(seq,
/// index)` through the last one of seq `through`; `None` when that is empty.
pub(super) fn event_range(
    contract: &str,
    (seq, index): (Seq, u32),
    through: Seq,
) -> Option<(Vec<u8>, Vec<u8>)> {
    if seq > through {
        return None;
    }
    let upper = match through.0.checked_add(1) {
        Some(next) => event_key(contract, Seq(next), 0),
        None => {
            let mut upper = event_prefix(contract);
            if let Some(last) = upper.last_mut() {
                *last = NS_AFTER;
            }
            upper
        }
    };
    Some((event_key(contract, seq, index), upper))
}

/// The seq and index of an event-index record key found under a prefix `prefix_len`
/// bytes long.
pub(super) fn decode_event_key(
    record_key: &[u8],
    prefix_len: usize,
) -> Result<(Seq, u32), StoreError> {
    let tail = record_key.get(prefix_len..).unwrap_or_default();
    match split_u64(tail) {
        Some((seq, index)) if seq > 0 && index.len() == 4 => Ok((
            Seq(seq),
            u32::from_be_bytes([index[0], index[1], index[2], index[3]]),
        )),
        _ => Err(StoreError::corrupt(
            "event key",
            format!(
                "{} bytes after the contract, not a seq and an index",
                tail.len()
            ),
        )),
    }
}

/// Where an indexed event's payload is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum EventPayload<'a> {
    /// Copied into the record.
    Copied(&'a [u8]),
    /// Inside the emitting transaction's bytes.
    At(ValueAt),
}

/// An event-index record's value: tag, tx id, the event's name (length u32be, then the
/// name), then the payload or its place in the transaction's bytes.
pub(super) fn encode_event_value(tx_id: &TxId, name: &str, payload: EventPayload<'_>) -> Vec<u8> {
    let body = match payload {
        EventPayload::Copied(payload) => payload.len(),
        EventPayload::At(_) => VALUE_AT_BYTES,
    };
    let mut out = Vec::with_capacity(HISTORY_HEADER_BYTES + 4 + name.len() + body);
    out.push(match payload {
        EventPayload::Copied(_) => TAG_PUT,
        EventPayload::At(_) => TAG_PUT_AT,
    });
    out.extend_from_slice(tx_id.as_bytes());
    // A transaction's bytes bound its events' names far below u32::MAX.
    let name_len = u32::try_from(name.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&name_len.to_be_bytes());
    out.extend_from_slice(name.as_bytes());
    match payload {
        EventPayload::Copied(payload) => out.extend_from_slice(payload),
        EventPayload::At(at) => at.encode(&mut out),
    }
    out
}

/// Decodes an event-index record's value into the emitting tx id, the event's name and
/// its payload.
pub(super) fn decode_event_value(
    bytes: &[u8],
) -> Result<(TxId, String, EventPayload<'_>), StoreError> {
    let corrupt = |detail: String| StoreError::corrupt("event value", detail);
    let Some((header, rest)) = bytes.split_first_chunk::<HISTORY_HEADER_BYTES>() else {
        return Err(corrupt(format!(
            "{} bytes, fewer than its header",
            bytes.len()
        )));
    };
    let mut id = [0u8; TX_ID_BYTES];
    id.copy_from_slice(&header[1..]);
    let Some((name_len, rest)) = rest.split_first_chunk::<4>() else {
        return Err(corrupt("no name length".to_string()));
    };
    let Some((name, body)) = rest.split_at_checked(u32::from_be_bytes(*name_len) as usize) else {
        return Err(corrupt(format!(
            "a name of {} bytes in {}",
            u32::from_be_bytes(*name_len),
            rest.len()
        )));
    };
    let name = String::from_utf8(name.to_vec())
        .map_err(|_| corrupt("a name that is not UTF-8".to_string()))?;
    let payload = match header[0] {
        TAG_PUT => EventPayload::Copied(body),
        TAG_PUT_AT => EventPayload::At(ValueAt::decode(body).ok_or_else(|| {
            corrupt(format!(
                "a payload's place in {} bytes, not {VALUE_AT_BYTES}",
                body.len()
            ))
        })?),
        tag => return Err(corrupt(format!("unknown tag {tag}"))),
    };
    Ok((TxId(id), name, payload))
}

/// The tx-id record key of the commit whose last transaction is at `last`.
pub(super) fn tx_ids_key(last: Seq) -> [u8; 1 + U64_BYTES] {
    prefixed_u64(TX_IDS, last.0)
}

/// A tx-id record's value: the first seq of the commit, then the id of each of its
/// transactions in seq order.
pub(super) fn encode_tx_ids<'a>(
    first: Seq,
    ids: impl ExactSizeIterator<Item = &'a TxId>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(U64_BYTES + ids.len() * TX_ID_BYTES);
    out.extend_from_slice(&first.0.to_be_bytes());
    for id in ids {
        out.extend_from_slice(id.as_bytes());
    }
    out
}

/// A decoded tx-id record: the ids of the seqs from `first` on.
#[derive(Debug, Clone, Copy)]
pub(super) struct TxIdRun<'a> {
    first: Seq,
    ids: &'a [u8],
}

impl TxIdRun<'_> {
    /// Each seq of the run with its id, in order.
    pub fn iter(&self) -> impl Iterator<Item = (Seq, TxId)> + '_ {
        self.ids
            .chunks_exact(TX_ID_BYTES)
            .enumerate()
            .map(|(i, id)| {
                let mut bytes = [0u8; TX_ID_BYTES];
                bytes.copy_from_slice(id);
                (Seq(self.first.0 + i as u64), TxId(bytes))
            })
    }
}

/// Decodes a tx-id record ([`encode_tx_ids`]).
pub(super) fn decode_tx_ids<'a>(key: &[u8], value: &'a [u8]) -> Result<TxIdRun<'a>, StoreError> {
    let corrupt = |detail: String| StoreError::corrupt("tx-id record", detail);
    let last = match decode_prefixed_u64(TX_IDS, key) {
        Some(0) | None => {
            return Err(corrupt(format!(
                "key of {} bytes, not a seq from 1",
                key.len()
            )));
        }
        Some(last) => last,
    };
    let (first, ids) =
        split_u64(value).ok_or_else(|| corrupt(format!("{} bytes for seq {last}", value.len())))?;
    let count = (ids.len() / TX_ID_BYTES) as u64;
    if count == 0
        || ids.len() % TX_ID_BYTES != 0
        || first == 0
        || first.checked_add(count - 1) != Some(last)
    {
        return Err(corrupt(format!(
            "{} bytes from seq {first} for seq {last}",
            value.len()
        )));
    }
    Ok(TxIdRun {
        first: Seq(first),
        ids,
    })
}

/// The format record's value.
pub(super) fn encode_format(format: u64) -> [u8; U64_BYTES] {
    format.to_be_bytes()
}

/// Decodes the format record's value.
pub(super) fn decode_format(bytes: &[u8]) -> Result<u64, StoreError> {
    <[u8; U64_BYTES]>::try_from(bytes)
        .map(u64::from_be_bytes)
        .map_err(|_| StoreError::corrupt("format", format!("{} bytes, not a number", bytes.len())))
}

/// The seal record key of block `number`.
pub(super) fn seal_key(number: BlockNumber) -> [u8; 1 + U64_BYTES] {
    prefixed_u64(SEAL, number.0)
}

/// A seal record's value: the range it covers, then the seal.
pub(super) fn encode_seal_value(seal: &SealRecord) -> Vec<u8> {
    let mut out = Vec::with_capacity(SEAL_HEADER_BYTES + seal.bytes.len());
    out.extend_from_slice(&seal.first.0.to_be_bytes());
    out.extend_from_slice(&seal.last.0.to_be_bytes());
    out.extend_from_slice(&seal.bytes);
    out
}

/// Decodes a seal record (its key and value).
pub(super) fn decode_seal(key: &[u8], value: &[u8]) -> Result<SealRecord, StoreError> {
    let number = match decode_prefixed_u64(SEAL, key) {
        Some(0) | None => {
            return Err(StoreError::corrupt(
                "seal key",
                format!("{} bytes, not a block number from 1", key.len()),
            ));
        }
        Some(number) => BlockNumber(number),
    };
    let corrupt = |detail: String| StoreError::corrupt("seal", detail);
    let Some((header, bytes)) = value.split_first_chunk::<SEAL_HEADER_BYTES>() else {
        return Err(corrupt(format!(
            "{} bytes, fewer than its range",
            value.len()
        )));
    };
    let (first, last) = (u64_at(header, 0), u64_at(header, U64_BYTES));
    if first == 0 || last < first {
        return Err(corrupt(format!(
            "block {number} covers seqs {first}..={last}"
        )));
    }
    Ok(SealRecord {
        number,
        first: Seq(first),
        last: Seq(last),
        bytes: bytes.to_vec(),
    })
}

/// The seal-index record key of the seal ending at `last`.
pub(super) fn seal_index_key(last: Seq) -> [u8; 1 + U64_BYTES] {
    prefixed_u64(SEAL_INDEX, last.0)
}

/// A seal-index record's value.
pub(super) fn encode_seal_index(seal: &SealRecord) -> [u8; SEAL_INDEX_BYTES] {
    let mut out = [0u8; SEAL_INDEX_BYTES];
    out[..U64_BYTES].copy_from_slice(&seal.number.0.to_be_bytes());
    out[U64_BYTES..].copy_from_slice(&seal.first.0.to_be_bytes());
    out
}

/// Decodes a seal-index record into the seal's number and range `(number, first, last)`.
pub(super) fn decode_seal_index(
    key: &[u8],
    value: &[u8],
) -> Result<(BlockNumber, Seq, Seq), StoreError> {
    let corrupt = |detail: String| StoreError::corrupt("seal index", detail);
    let last = decode_prefixed_u64(SEAL_INDEX, key)
        .ok_or_else(|| corrupt(format!("key of {} bytes, not a seq", key.len())))?;
    let value = <[u8; SEAL_INDEX_BYTES]>::try_from(value)
        .map_err(|_| corrupt(format!("{} bytes, not {SEAL_INDEX_BYTES}", value.len())))?;
    let (number, first) = (u64_at(&value, 0), u64_at(&value, U64_BYTES));
    if number == 0 || first == 0 || last < first {
        return Err(corrupt(format!(
            "block {number} covers seqs {first}..={last}"
        )));
    }
    Ok((BlockNumber(number), Seq(first), Seq(last)))
}

/// `prefix ++ value u64be`.
fn prefixed_u64(prefix: u8, value: u64) -> [u8; 1 + U64_BYTES] {
    let mut out = [0u8; 1 + U64_BYTES];
    out[0] = prefix;
    out[1..].copy_from_slice(&value.to_be_bytes());
    out
}

/// The value of a `prefix ++ value u64be` key, if `bytes` is one.
fn decode_prefixed_u64(prefix: u8, bytes: &[u8]) -> Option<u64> {
    match bytes.split_first() {
        Some((&first, rest)) if first == prefix => <[u8; U64_BYTES]>::try_from(rest)
            .ok()
            .map(u64::from_be_bytes),
        _ => None,
    }
}

/// The big-endian u64 at `at` in `bytes`, which holds it.
fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; U64_BYTES];
    word.copy_from_slice(&bytes[at..at + U64_BYTES]);
    u64::from_be_bytes(word)
}

/// The height record's value.
pub(super) fn encode_height(height: Seq) -> [u8; U64_BYTES] {
    height.0.to_be_bytes()
}

/// Decodes the height record's value.
pub(super) fn decode_height(bytes: &[u8]) -> Result<Seq, StoreError> {
    <[u8; U64_BYTES]>::try_from(bytes)
        .map(|word| Seq(u64::from_be_bytes(word)))
        .map_err(|_| StoreError::corrupt("height", format!("{} bytes, not a seq", bytes.len())))
}

/// Splits a leading big-endian u64 off `bytes`.
fn split_u64(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let (word, rest) = bytes.split_first_chunk::<U64_BYTES>()?;
    Some((u64::from_be_bytes(*word), rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_are_checked() {
        assert!(check_namespace("token").is_ok());
        assert!(check_namespace(&"n".repeat(NAMESPACE_BYTES_MAX)).is_ok());
        for bad in ["", "a\0b", "\0"] {
            assert_eq!(
                check_namespace(bad),
                Err(StoreError::BadNamespace(bad.to_string()))
            );
        }
        assert!(check_namespace(&"n".repeat(NAMESPACE_BYTES_MAX + 1)).is_err());
    }

    #[test]
    fn state_keys_of_different_namespaces_never_collide() {
        // ns "a" key "b\0c" against ns "ab" key "c"; ns "a\0b" key "c" would be the same
        // bytes, which is why `check_namespace` refuses it.
        assert_ne!(state_key("a", b"b\0c"), state_key("ab", b"c"));
        assert_eq!(state_key("a", b"b\0c"), state_key("a\0b", b"c"));
        assert!(check_namespace("a\0b").is_err());
        // Every key of `a` sorts inside `a`'s range, every key of `ab` or `a\x01` outside.
        let (lo, hi) = state_range("a", b"", None).unwrap();
        for key in [&b""[..], b"\0", b"\xff\xff", b"b\0c"] {
            let k = state_key("a", key);
            assert!(lo <= k && k < hi);
        }
        for (ns, key) in [
            ("ab", &b""[..]),
            ("a\u{1}", b""),
            ("a\u{1}x", b"\xff"),
            ("b", b""),
        ] {
            let k = state_key(ns, key);
            assert!(!(lo <= k && k < hi), "{ns:?} {key:?}");
        }
        assert_eq!(state_range("a", b"b", Some(b"b")), None);
        assert_eq!(state_range("a", b"c", Some(b"b")), None);
    }

    #[test]
    fn history_keys_sort_newest_first_and_stay_within_their_key() {
        let newer = history_key("ns", b"k", Seq(9));
        let older = history_key("ns", b"k", Seq(3));
        assert!(newer < older);
        let prefix = history_prefix("ns", b"k");
        assert!(newer.starts_with(&prefix));
        // The longer key "k\0..." shares the byte prefix of "k" but not its length.
        assert!(!history_key("ns", b"k\0\0\0\0\0\0\0\0", Seq(1)).starts_with(&prefix));
        assert_eq!(decode_history_seq(&newer, prefix.len()), Ok(Seq(9)));
        assert!(decode_history_seq(&prefix, prefix.len()).is_err());
        let start = history_start(&prefix, Some(Seq(9))).unwrap();
        assert!(start > newer && start <= older);
        assert_eq!(history_start(&prefix, Some(Seq(0))), None);
    }

    #[test]
    fn a_run_of_transaction_places_round_trips_and_a_damaged_one_is_corrupt() {
        let at = |offset: u64, len: u32, timestamp_ms: u64| TxPlace {
            at: RecordAt {
                kind: TRANSACTION,
                offset,
                len,
            },
            timestamp_ms,
            leaf: crate::tx::sha256(&offset.to_be_bytes()),
        };
        let places = [
            at(10, 100, 1_700_000_000_000),
            at(130, 7, 1_700_000_000_000),
            at(5_000_000_000, 70_000, u64::MAX),
        ];
        let key = transaction_key(Seq(9));
        let value = encode_transaction_run(Seq(7), &places);
        let run = decode_transaction_run(&key, &value).unwrap();
        assert_eq!((run.first, run.last), (Seq(7), Seq(9)));
        assert_eq!(
            run.iter().collect::<Vec<_>>(),
            vec![
                (Seq(7), places[0]),
                (Seq(8), places[1]),
                (Seq(9), places[2])
            ]
        );
        assert_eq!(run.place(Seq(6)), None);
        assert_eq!(run.place(Seq(10)), None);
        // A run of one is its place alone.
        let one = encode_transaction_run(Seq(4), &places[..1]);
        assert_eq!(one.len(), PLACE_BYTES);
        let run = decode_transaction_run(&transaction_key(Seq(4)), &one).unwrap();
        assert_eq!(run.iter().collect::<Vec<_>>(), vec![(Seq(4), places[0])]);
        // The run must end at its key's seq, start at 1 or later, and hold whole places.
        for (key, value) in [
            (transaction_key(Seq(8)), value.clone()),
            (transaction_key(Seq(9)), value[..value.len() - 1].to_vec()),
            (transaction_key(Seq(9)), value[..PLACE_BYTES - 1].to_vec()),
            (
                transaction_key(Seq(2)),
                encode_transaction_run(Seq(0), &places),
            ),
            (transaction_key(Seq(0)), one.clone()),
            (seal_key(BlockNumber(9)), value.clone()),
        ] {
            assert!(matches!(
                decode_transaction_run(&key, &value),
                Err(StoreError::Corrupt { .. })
            ));
        }
    }

    #[test]
    fn values_round_trip_and_garbage_is_corrupt() {
        let StateRecord::Inline(v) =
            decode_state_record(&encode_state_value(Seq(7), b"hello")).unwrap()
        else {
            panic!("inline")
        };
        assert_eq!(v.value, b"hello");
        assert_eq!(v.version, Version::from_seq(7));
        assert!(matches!(
            decode_state_record(b"short"),
            Err(StoreError::Corrupt { .. })
        ));
        assert!(decode_state_record(&encode_state_value(Seq(0), b"x")).is_err());
        let at = ValueAt {
            offset: 70_000,
            len: 5000,
            crc: 0xdead_beef,
        };
        assert_eq!(
            decode_state_record(&encode_state_value_at(Seq(9), at)),
            Ok(StateRecord::At { seq: Seq(9), at })
        );
        assert!(decode_state_record(&encode_state_value_at(Seq(0), at)).is_err());
        let mut torn = encode_state_value_at(Seq(9), at);
        torn.pop();
        assert!(decode_state_record(&torn).is_err());

        let id = TxId([7; 32]);
        for write in [
            HistoryWrite::Put(b"v".to_vec()),
            HistoryWrite::PutAt(at),
            HistoryWrite::Delete,
        ] {
            assert_eq!(
                decode_history_value(&encode_history_value(&id, &write)),
                Ok((id, write))
            );
        }
        let mut short = encode_history_value(&id, &HistoryWrite::PutAt(at));
        short.pop();
        assert!(decode_history_value(&short).is_err());
        let mut bad = encode_history_value(&id, &HistoryWrite::Delete);
        bad.push(1);
        assert!(decode_history_value(&bad).is_err());
        bad[0] = 9;
        assert!(decode_history_value(&bad).is_err());
        assert!(decode_history_value(&[0; 5]).is_err());

        let record = TxRecord {
            tx_id: id,
            seq: Seq(5),
            code: ValidationCode::MvccReadConflict,
            timestamp_ms: 1_700_000_000_000,
        };
        assert_eq!(
            decode_tx_record(id, &encode_tx_record(&record)),
            Ok(record.clone())
        );
        let mut bad = encode_tx_record(&record);
        bad[8] = 200;
        assert!(decode_tx_record(id, &bad).is_err());
        assert!(decode_tx_record(id, &bad[..10]).is_err());
        assert!(decode_tx_record(id, &[0; TX_RECORD_BYTES]).is_err());

        assert_eq!(decode_transaction_key(&transaction_key(Seq(9))), Ok(Seq(9)));
        assert!(decode_transaction_key(&transaction_key(Seq(0))).is_err());
        assert!(decode_transaction_key(&seal_key(BlockNumber(9))).is_err());

        let seal = SealRecord {
            number: BlockNumber(42),
            first: Seq(7),
            last: Seq(9),
            bytes: b"signed".to_vec(),
        };
        let key = seal_key(seal.number);
        assert_eq!(
            decode_seal(&key, &encode_seal_value(&seal)),
            Ok(seal.clone())
        );
        assert!(decode_seal(b"b123", &encode_seal_value(&seal)).is_err());
        assert!(decode_seal(&seal_key(BlockNumber(0)), &encode_seal_value(&seal)).is_err());
        assert!(decode_seal(&key, &[0; SEAL_HEADER_BYTES - 1]).is_err());
        let backwards = SealRecord {
            first: Seq(10),
            ..seal.clone()
        };
        assert!(decode_seal(&key, &encode_seal_value(&backwards)).is_err());
        let index_key = seal_index_key(seal.last);
        assert_eq!(
            decode_seal_index(&index_key, &encode_seal_index(&seal)),
            Ok((seal.number, seal.first, seal.last))
        );
        assert!(decode_seal_index(&index_key, &encode_seal_index(&backwards)).is_err());
        assert!(decode_seal_index(&key, &encode_seal_index(&seal)).is_err());
        assert!(decode_seal_index(&index_key, &[0; 3]).is_err());
        assert_eq!(decode_height(&encode_height(Seq(11))), Ok(Seq(11)));
        assert!(decode_height(b"1234").is_err());
    }

    #[test]
    fn event_keys_sort_in_stream_order_and_stay_within_their_contract() {
        let key = |contract: &str, seq: u64, index: u32| event_key(contract, Seq(seq), index);
        assert!(key("c", 1, 9) < key("c", 2, 0));
        assert!(key("c", 2, 0) < key("c", 2, 1));
        assert!(key("c", u64::MAX, u32::MAX) < key("c\u{1}", 1, 0));
        let (lo, hi) = event_range("c", (Seq(2), 1), Seq(5)).unwrap();
        for inside in [key("c", 2, 1), key("c", 3, 0), key("c", 5, u32::MAX)] {
            assert!(lo <= inside && inside < hi);
        }
        for outside in [
            key("c", 2, 0),
            key("c", 6, 0),
            key("cd", 3, 0),
            key("b", 3, 0),
        ] {
            assert!(!(lo <= outside && outside < hi));
        }
        assert_eq!(event_range("c", (Seq(6), 0), Seq(5)), None);
        let (lo, hi) = event_range("c", (Seq(1), 0), Seq(u64::MAX)).unwrap();
        let last = key("c", u64::MAX, u32::MAX);
        assert!(lo <= last && last < hi && key("cd", 1, 0) >= hi);
        let prefix_len = event_prefix("c").len();
        assert_eq!(
            decode_event_key(&key("c", 7, 3), prefix_len),
            Ok((Seq(7), 3))
        );
        assert!(decode_event_key(&key("c", 0, 3), prefix_len).is_err());
        assert!(decode_event_key(&event_prefix("c"), prefix_len).is_err());
    }

    #[test]
    fn event_values_and_tx_id_runs_round_trip_and_garbage_is_corrupt() {
        let id = TxId([9; 32]);
        let at = ValueAt::new(40, b"a payload").unwrap();
        for payload in [
            EventPayload::Copied(b"small"),
            EventPayload::Copied(b""),
            EventPayload::At(at),
        ] {
            let value = encode_event_value(&id, "minted", payload);
            assert_eq!(
                decode_event_value(&value),
                Ok((id, "minted".to_string(), payload))
            );
        }
        let value = encode_event_value(&id, "minted", EventPayload::At(at));
        assert!(decode_event_value(&value[..value.len() - 1]).is_err());
        assert!(decode_event_value(&value[..HISTORY_HEADER_BYTES + 2]).is_err());
        let mut bad = value.clone();
        bad[0] = 7;
        assert!(decode_event_value(&bad).is_err());
        let mut long_name = value.clone();
        long_name[HISTORY_HEADER_BYTES..HISTORY_HEADER_BYTES + 4]
            .copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(decode_event_value(&long_name).is_err());
        let not_utf8 = encode_event_value(&id, "\u{e9}", EventPayload::Copied(b""));
        let mut not_utf8 = not_utf8.clone();
        not_utf8[HISTORY_HEADER_BYTES + 4] = 0xff;
        assert!(decode_event_value(&not_utf8).is_err());

        let ids = [TxId([1; 32]), TxId([2; 32]), TxId([3; 32])];
        let value = encode_tx_ids(Seq(7), ids.iter());
        let run = decode_tx_ids(&tx_ids_key(Seq(9)), &value).unwrap();
        assert_eq!(
            run.iter().collect::<Vec<_>>(),
            vec![(Seq(7), ids[0]), (Seq(8), ids[1]), (Seq(9), ids[2])]
        );
        for (key, value) in [
            (tx_ids_key(Seq(8)), value.clone()),
            (tx_ids_key(Seq(9)), value[..value.len() - 1].to_vec()),
            (tx_ids_key(Seq(9)), value[..U64_BYTES].to_vec()),
            (tx_ids_key(Seq(2)), encode_tx_ids(Seq(0), ids.iter())),
            (tx_ids_key(Seq(0)), encode_tx_ids(Seq(0), ids[..1].iter())),
            (seal_key(BlockNumber(9)), value.clone()),
        ] {
            assert!(matches!(
                decode_tx_ids(&key, &value),
                Err(StoreError::Corrupt { .. })
            ));
        }
        assert_eq!(decode_format(&encode_format(FORMAT)), Ok(FORMAT));
        assert!(decode_format(b"2").is_err());
    }
}

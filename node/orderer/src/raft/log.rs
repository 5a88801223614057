//! [`RaftLog`]: an orderer's durable Raft log, and Raft's view of it ([`raft::Storage`]).
//!
//! # Layout
//!
//! One [`RecordFile`] (`raft.log` in the orderer's directory) holds, in the order they
//! were written:
//!
//! | kind | payload |
//! |---|---|
//! | `'e'` | an entry: index and term (u64 little-endian each), entry type (u8), context length (u32 little-endian), context, data |
//! | `'h'` | Raft's hard state: term, vote and commit (u64 little-endian each) |
//! | `'c'` | the membership in force (an encoded `RaftConfState`) |
//! | `'s'` | a snapshot: the entries up to its index are gone ([`Snapshotted`]; first record of a compacted log) |
//!
//! Raft overwrites the tail of a follower's log that a new leader does not hold. The file
//! is only ever appended to: an entry record at an index the log already holds replaces
//! that entry and every later one, as the records are read back in file order (the way
//! etcd's write-ahead log does it). The latest hard state and membership records win.
//! Nothing is cut, so a crash can never lose a vote already on disk.
//!
//! Appends become durable at [`RaftLog::sync`]; the Ready loop syncs once for everything
//! one Ready persists (group commit), before it sends the messages that depend on it. A
//! crash leaves at most a torn tail of unsynced records, which [`RecordFile::open`] cuts:
//! nothing Raft was told is durable.
//!
//! # Compaction
//!
//! The entries up to an index every orderer has applied can go ([`RaftLog::compact`]): the
//! log is written again, from a snapshot record (that index, its term, the membership then
//! and what the orderer's stream held then) and the entries after it, into a new file
//! that replaces the old one (synced, renamed, the directory synced), so a crash leaves
//! one or the other. A follower too far behind is sent the snapshot and starts its log
//! afresh from it ([`RaftLog::install`]).
//!
//! The latest entries are also kept decoded in memory (up to [`CACHE_BYTES_MAX`]), since
//! Raft reads them again at once, to send them to followers and to apply them.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use prost::Message as _;
use prost::bytes::Bytes;
use raft::eraftpb::{ConfState, Entry, HardState, Snapshot};
use raft::{GetEntriesContext, RaftState, StorageError};

use super::wire;
use runnel_ledger::proto::RaftConfState;
use runnel_ledger::records::{Opened, RecordAt, RecordError, RecordFile, RecordReader, SyncMode};

/// The log's file name in the orderer's directory.
pub const RAFT_LOG_FILE: &str = "raft.log";

const ENTRY: u8 = b'e';
const HARD_STATE: u8 = b'h';
const CONF_STATE: u8 = b'c';
const SNAPSHOT: u8 = b's';

/// What a log compacted up to an index holds of what came before: that index and its
/// term, the membership then, and the application's data (what the orderer's stream held
/// then).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshotted {
    /// The last entry compacted away.
    pub index: u64,
    /// Its term.
    pub term: u64,
    /// The membership in force once it was applied.
    pub conf_state: ConfState,
    /// The application's data.
    pub data: Vec<u8>,
}

impl Snapshotted {
    fn encode(&self) -> Vec<u8> {
        let conf = wire::conf_state_to_wire(&self.conf_state).encode_to_vec();
        let mut bytes = Vec::with_capacity(20 + conf.len() + self.data.len());
        bytes.extend_from_slice(&self.index.to_le_bytes());
        bytes.extend_from_slice(&self.term.to_le_bytes());
        bytes.extend_from_slice(&(conf.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&conf);
        bytes.extend_from_slice(&self.data);
        bytes
    }

    fn decode(bytes: &[u8]) -> Result<Snapshotted, LogError> {
        let bad = || LogError::Corrupt(format!("a snapshot record of {} bytes", bytes.len()));
        if bytes.len() < 20 {
            return Err(bad());
        }
        let conf_len = u32::from_le_bytes([bytes[16], bytes[17], bytes[18], bytes[19]]) as usize;
        let data_at = 20usize
            .checked_add(conf_len)
            .filter(|end| *end <= bytes.len())
            .ok_or_else(bad)?;
        let conf = RaftConfState::decode(&bytes[20..data_at])
            .map_err(|e| LogError::Corrupt(format!("a snapshot's membership: {e}")))?;
        Ok(Snapshotted {
            index: u64_at(bytes, 0),
            term: u64_at(bytes, 8),
            conf_state: wire::conf_state_from_wire(conf),
            data: bytes[data_at..].to_vec(),
        })
    }

    /// As Raft sends it.
    pub fn to_snapshot(&self) -> Snapshot {
        let mut snapshot = Snapshot::default();
        snapshot.data = Bytes::from(self.data.clone());
        let metadata = snapshot.mut_metadata();
        metadata.index = self.index;
        metadata.term = self.term;
        metadata.set_conf_state(self.conf_state.clone());
        snapshot
    }

    /// As Raft received it.
    pub fn of(snapshot: &Snapshot) -> Snapshotted {
        let metadata = snapshot.get_metadata();
        Snapshotted {
            index: metadata.index,
            term: metadata.term,
            conf_state: metadata.get_conf_state().clone(),
            data: snapshot.data.to_vec(),
        }
    }
}

/// An entry record's fixed part: index, term, type, context length.
const ENTRY_HEADER_BYTES: usize = 8 + 8 + 1 + 4;

/// The entry bytes kept decoded in memory.
pub const CACHE_BYTES_MAX: usize = 16 << 20;

/// Why the Raft log could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// The file could not be read or written.
    #[error("the Raft log: {0}")]
    Io(#[from] RecordError),
    /// The file holds something no Raft log written by Runnel holds.
    #[error("the Raft log is corrupt: {0}")]
    Corrupt(String),
}

/// An orderer's Raft log: cheap to clone, every clone the same log. Raft reads it through
/// [`raft::Storage`]; the Ready loop writes it.
#[derive(Clone)]
pub struct RaftLog {
    core: Arc<RwLock<Core>>,
}

struct Core {
    path: std::path::PathBuf,
    sync: SyncMode,
    file: RecordFile,
    reader: RecordReader,
    /// What the log was compacted up to (index 0: never compacted).
    snapshot: Snapshotted,
    /// Changes each time the log is started afresh from a snapshot or compacted: a
    /// compaction planned before another one ended is given up.
    generation: u64,
    /// The index of `entries[0]`.
    first: u64,
    /// Where each entry lies, from `first` on.
    entries: Vec<RecordAt>,
    /// Each entry's term, from `first` on.
    terms: Vec<u64>,
    /// The latest entries, decoded, oldest first; the last is the log's last.
    cache: VecDeque<Entry>,
    cache_bytes: usize,
    hard_state: HardState,
    conf_state: ConfState,
}

impl Core {
    /// Reads the log at `path` back (created empty, `genesis` its membership, if it is
    /// not there); whether it held a membership record.
    fn load(path: &Path, genesis: &ConfState, sync: SyncMode) -> Result<(Core, bool), LogError> {
        let Opened {
            file,
            records,
            torn_at,
        } = RecordFile::open(path)?;
        if let Some(offset) = torn_at {
            tracing::warn!(
                offset,
                "the Raft log ended in a torn record (a crash during a write); cut it"
            );
        }
        let reader = file.handle(sync)?;
        let mut core = Core {
            path: path.to_path_buf(),
            sync,
            file,
            reader,
            snapshot: Snapshotted::default(),
            generation: 0,
            first: 1,
            entries: Vec::new(),
            terms: Vec::new(),
            cache: VecDeque::new(),
            cache_bytes: 0,
            hard_state: HardState::default(),
            conf_state: genesis.clone(),
        };
        let mut conf_found = false;
        for (n, at) in records.into_iter().enumerate() {
            match at.kind {
                SNAPSHOT if n == 0 => {
                    core.snapshot = Snapshotted::decode(&core.reader.read(at)?)?;
                    core.first = core.snapshot.index + 1;
                    core.conf_state = core.snapshot.conf_state.clone();
                    conf_found = true;
                }
                ENTRY => {
                    let header = core.reader.read_part(at, 0, 16)?;
                    let (index, term) = (u64_at(&header, 0), u64_at(&header, 8));
                    if index < core.first || index > core.last() + 1 {
                        return Err(LogError::Corrupt(format!(
                            "entry {index} follows entry {} (byte {})",
                            core.last(),
                            at.offset
                        )));
                    }
                    core.truncate(index);
                    let before = core.terms.last().copied().unwrap_or(core.snapshot.term);
                    if term < before {
                        return Err(LogError::Corrupt(format!(
                            "entry {index} has term {term}, below the entry before it"
                        )));
                    }
                    core.entries.push(at);
                    core.terms.push(term);
                }
                HARD_STATE => core.hard_state = decode_hard_state(&core.reader.read(at)?)?,
                CONF_STATE => {
                    let conf = RaftConfState::decode(core.reader.read(at)?.as_slice())
                        .map_err(|e| LogError::Corrupt(format!("a membership record: {e}")))?;
                    core.conf_state = wire::conf_state_from_wire(conf);
                    conf_found = true;
                }
                other => {
                    return Err(LogError::Corrupt(format!(
                        "a record of unknown kind {other} at byte {}",
                        at.offset
                    )));
                }
            }
        }
        if core.hard_state.commit > core.last() {
            return Err(LogError::Corrupt(format!(
                "commit index {} past the last entry, {}",
                core.hard_state.commit,
                core.last()
            )));
        }
        Ok((core, conf_found))
    }

    fn last(&self) -> u64 {
        self.first + self.entries.len() as u64 - 1
    }

    fn read(&self, index: u64) -> Result<Entry, LogError> {
        if let Some(oldest) = self.cache.front()
            && index >= oldest.index
            && let Some(entry) = self.cache.get((index - oldest.index) as usize)
        {
            return Ok(entry.clone());
        }
        let at = self
            .entries
            .get(index.wrapping_sub(self.first) as usize)
            .ok_or_else(|| LogError::Corrupt(format!("entry {index} is missing")))?;
        let entry = decode_entry(&self.reader.read(*at)?)?;
        if entry.index != index {
            return Err(LogError::Corrupt(format!(
                "the record for entry {index} holds entry {}",
                entry.index
            )));
        }
        Ok(entry)
    }

    /// Drops entries from `index` on (a new leader's entries replace them).
    fn truncate(&mut self, index: u64) {
        let keep = index.saturating_sub(self.first) as usize;
        self.entries.truncate(keep);
        self.terms.truncate(keep);
        while self.cache.back().is_some_and(|entry| entry.index >= index) {
            if let Some(entry) = self.cache.pop_back() {
                self.cache_bytes -= entry.data.len() + entry.context.len();
            }
        }
    }

    fn remember(&mut self, entry: Entry) {
        self.cache_bytes += entry.data.len() + entry.context.len();
        self.cache.push_back(entry);
        while self.cache_bytes > CACHE_BYTES_MAX && self.cache.len() > 1 {
            if let Some(oldest) = self.cache.pop_front() {
                self.cache_bytes -= oldest.data.len() + oldest.context.len();
            }
        }
    }
}

fn encode_entry(entry: &Entry) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(ENTRY_HEADER_BYTES + entry.context.len() + entry.data.len());
    bytes.extend_from_slice(&entry.index.to_le_bytes());
    bytes.extend_from_slice(&entry.term.to_le_bytes());
    bytes.push(entry.get_entry_type() as u8);
    bytes.extend_from_slice(&(entry.context.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&entry.context);
    bytes.extend_from_slice(&entry.data);
    bytes
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

fn decode_entry(bytes: &[u8]) -> Result<Entry, LogError> {
    let short = || LogError::Corrupt(format!("an entry record of {} bytes", bytes.len()));
    if bytes.len() < ENTRY_HEADER_BYTES {
        return Err(short());
    }
    let mut entry = Entry::default();
    entry.index = u64_at(bytes, 0);
    entry.term = u64_at(bytes, 8);
    entry.set_entry_type(
        wire::entry_type(i32::from(bytes[16])).map_err(|e| LogError::Corrupt(e.to_string()))?,
    );
    let context_len = u32::from_le_bytes([bytes[17], bytes[18], bytes[19], bytes[20]]) as usize;
    let data_at = ENTRY_HEADER_BYTES
        .checked_add(context_len)
        .filter(|end| *end <= bytes.len())
        .ok_or_else(short)?;
    entry.context = Bytes::copy_from_slice(&bytes[ENTRY_HEADER_BYTES..data_at]);
    entry.data = Bytes::copy_from_slice(&bytes[data_at..]);
    Ok(entry)
}

fn encode_hard_state(hard_state: &HardState) -> Vec<u8> {
    [hard_state.term, hard_state.vote, hard_state.commit]
        .iter()
        .flat_map(|word| word.to_le_bytes())
        .collect()
}

fn decode_hard_state(bytes: &[u8]) -> Result<HardState, LogError> {
    if bytes.len() != 24 {
        return Err(LogError::Corrupt(format!(
            "a hard state record of {} bytes",
            bytes.len()
        )));
    }
    let mut hard_state = HardState::default();
    hard_state.term = u64_at(bytes, 0);
    hard_state.vote = u64_at(bytes, 8);
    hard_state.commit = u64_at(bytes, 16);
    Ok(hard_state)
}

/// The error of a file operation on `path`.
fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> LogError {
    let path = path.display().to_string();
    move |source| LogError::Io(RecordError::Io { path, source })
}

/// A new, empty file beside the log at `path` to write it again into (`raft.log.new`),
/// any left by a crash removed.
fn staging(path: &Path) -> Result<(std::path::PathBuf, RecordFile), LogError> {
    let staging = path.with_extension("log.new");
    match std::fs::remove_file(&staging) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_error(&staging)(e)),
    }
    let Opened { file, .. } = RecordFile::open(&staging)?;
    Ok((staging, file))
}

/// Syncs `file`, written at `staging`, moves it over the log at `path` and syncs the
/// directory: after a crash the log is the old file or the new one, whole.
fn replace(mut file: RecordFile, staging: &Path, path: &Path) -> Result<RecordFile, LogError> {
    file.handle(SyncMode::Full)?.sync()?;
    std::fs::rename(staging, path).map_err(io_error(path))?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)
            .and_then(|dir| dir.sync_all())
            .map_err(io_error(dir))?;
    }
    file.renamed(path);
    Ok(file)
}

impl RaftLog {
    /// Opens the log in `dir`, or creates it empty with `genesis` as its membership (the
    /// voters a new cluster starts with). A log that exists keeps the membership it holds.
    pub fn open(dir: &Path, genesis: &ConfState, sync: SyncMode) -> Result<RaftLog, LogError> {
        let (mut core, conf_found) = Core::load(&dir.join(RAFT_LOG_FILE), genesis, sync)?;
        if !conf_found {
            // Written once, so that a restart with another genesis cannot change it.
            let bytes = wire::conf_state_to_wire(genesis).encode_to_vec();
            core.file.append(CONF_STATE, &bytes)?;
            core.reader.sync()?;
        }
        Ok(RaftLog {
            core: Arc::new(RwLock::new(core)),
        })
    }

    fn read(&self) -> RwLockReadGuard<'_, Core> {
        self.core.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Core> {
        self.core.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends `entries` (consecutive, the first at most one past the last held), replacing
    /// any the log holds from the first one's index on. Durable at the next sync.
    pub fn append(&self, entries: &[Entry]) -> Result<(), LogError> {
        let Some(first) = entries.first() else {
            return Ok(());
        };
        let mut core = self.write();
        if first.index < core.first || first.index > core.last() + 1 {
            return Err(LogError::Corrupt(format!(
                "appending entry {} to a log of entries {} to {}",
                first.index,
                core.first,
                core.last()
            )));
        }
        for (i, entry) in entries.iter().enumerate() {
            assert_eq!(
                entry.index,
                first.index + i as u64,
                "Raft appends consecutive entries"
            );
        }
        let records: Vec<Vec<u8>> = entries.iter().map(encode_entry).collect();
        let places = core
            .file
            .append_all(ENTRY, records.iter().map(Vec::as_slice))?;
        core.truncate(first.index);
        for (at, entry) in places.into_iter().zip(entries) {
            core.entries.push(at);
            core.terms.push(entry.term);
            core.remember(entry.clone());
        }
        Ok(())
    }

    /// Records Raft's hard state (term, vote, commit). Durable at the next sync.
    pub fn set_hard_state(&self, hard_state: &HardState) -> Result<(), LogError> {
        let mut core = self.write();
        core.file
            .append(HARD_STATE, &encode_hard_state(hard_state))?;
        core.hard_state = hard_state.clone();
        Ok(())
    }

    /// Records a commit index Raft learnt after the last hard state it gave.
    pub fn set_commit(&self, commit: u64) -> Result<(), LogError> {
        let mut hard_state = self.read().hard_state.clone();
        hard_state.commit = commit;
        self.set_hard_state(&hard_state)
    }

    /// Records the membership in force (after a configuration change applied). Durable at
    /// the next sync.
    pub fn set_conf_state(&self, conf_state: &ConfState) -> Result<(), LogError> {
        let mut core = self.write();
        let bytes = wire::conf_state_to_wire(conf_state).encode_to_vec();
        core.file.append(CONF_STATE, &bytes)?;
        core.conf_state = conf_state.clone();
        Ok(())
    }

    /// Makes everything appended so far durable.
    pub fn sync(&self) -> Result<(), LogError> {
        // Under the read lock: Raft's reads go on meanwhile.
        Ok(self.read().reader.sync()?)
    }

    /// The index of the last entry (0 when there is none).
    pub fn last_index(&self) -> u64 {
        self.read().last()
    }

    /// The hard state last recorded.
    pub fn hard_state(&self) -> HardState {
        self.read().hard_state.clone()
    }

    /// The entry at `index`, if the log holds it.
    pub fn entry(&self, index: u64) -> Result<Option<Entry>, LogError> {
        let core = self.read();
        if index < core.first || index > core.last() {
            return Ok(None);
        }
        core.read(index).map(Some)
    }

    /// What the log was compacted up to (index 0: never compacted).
    pub fn snapshotted(&self) -> Snapshotted {
        self.read().snapshot.clone()
    }

    /// Drops the entries up to `index` (applied by this orderer, the membership then
    /// `conf_state`), keeping `data` in their place: see the module doc. The entries kept
    /// are copied to the new file while Raft goes on using this one (each read under a
    /// brief lock); the few appended meanwhile are copied under the write lock, which is
    /// held only for them, the sync and the rename. `false` when it gave up: the log was
    /// compacted or started afresh meanwhile, or a new leader replaced an entry it copied
    /// (the next try starts over). Durable when it returns `true`.
    pub fn compact(
        &self,
        index: u64,
        conf_state: &ConfState,
        data: Vec<u8>,
    ) -> Result<bool, LogError> {
        let (generation, term, copy_to, path) = {
            let core = self.read();
            if index < core.first || index > core.last() || index > core.hard_state.commit {
                return Err(LogError::Corrupt(format!(
                    "compacting up to entry {index}, in a log of entries {} to {}, committed to {}",
                    core.first,
                    core.last(),
                    core.hard_state.commit
                )));
            }
            let term = core.terms[(index - core.first) as usize];
            (core.generation, term, core.last(), core.path.clone())
        };
        let snapshot = Snapshotted {
            index,
            term,
            conf_state: conf_state.clone(),
            data,
        };
        let (staging, mut file) = staging(&path)?;
        file.append(SNAPSHOT, &snapshot.encode())?;
        let mut places = Vec::new();
        let mut terms = Vec::new();
        for at in index + 1..=copy_to {
            let entry = {
                let core = self.read();
                if core.generation != generation || at < core.first || at > core.last() {
                    return Ok(false);
                }
                core.read(at)?
            };
            places.push(file.append(ENTRY, &encode_entry(&entry))?);
            terms.push(entry.term);
        }
        let mut core = self.write();
        // Same generation: the log still starts at the same entry, so every index copied
        // is at or past `core.first`.
        if core.generation != generation {
            return Ok(false);
        }
        let copied_still_held = terms.iter().enumerate().all(|(k, copied)| {
            let at = index + 1 + k as u64;
            at <= core.last() && core.terms[(at - core.first) as usize] == *copied
        });
        if !copied_still_held {
            return Ok(false);
        }
        for at in copy_to + 1..=core.last() {
            let entry = core.read(at)?;
            places.push(file.append(ENTRY, &encode_entry(&entry))?);
            terms.push(entry.term);
        }
        let mut hard_state = core.hard_state.clone();
        hard_state.commit = hard_state.commit.max(index);
        file.append(HARD_STATE, &encode_hard_state(&hard_state))?;
        let conf = wire::conf_state_to_wire(&core.conf_state).encode_to_vec();
        file.append(CONF_STATE, &conf)?;
        let file = replace(file, &staging, &path)?;
        core.reader = file.handle(core.sync)?;
        core.file = file;
        core.snapshot = snapshot;
        core.generation += 1;
        core.first = index + 1;
        core.entries = places;
        core.terms = terms;
        core.hard_state = hard_state;
        while core.cache.front().is_some_and(|entry| entry.index <= index) {
            if let Some(entry) = core.cache.pop_front() {
                core.cache_bytes -= entry.data.len() + entry.context.len();
            }
        }
        Ok(true)
    }

    /// Starts the log afresh from `snapshot` (a follower too far behind, sent the
    /// leader's): every entry it held goes; its membership becomes the snapshot's. Durable
    /// when it returns.
    pub fn install(&self, snapshot: &Snapshotted) -> Result<(), LogError> {
        let mut core = self.write();
        let (staging, mut file) = staging(&core.path)?;
        file.append(SNAPSHOT, &snapshot.encode())?;
        let mut hard_state = core.hard_state.clone();
        hard_state.commit = hard_state.commit.max(snapshot.index);
        file.append(HARD_STATE, &encode_hard_state(&hard_state))?;
        drop(replace(file, &staging, &core.path)?);
        let (mut fresh, _) = Core::load(&core.path, &snapshot.conf_state, core.sync)?;
        fresh.generation = core.generation + 1;
        *core = fresh;
        Ok(())
    }

    /// The entry the log was compacted up to (0: never compacted).
    pub fn compacted_to(&self) -> u64 {
        self.read().snapshot.index
    }
}

fn storage_error(error: LogError) -> raft::Error {
    raft::Error::Store(StorageError::Other(Box::new(error)))
}

impl raft::Storage for RaftLog {
    fn initial_state(&self) -> raft::Result<RaftState> {
        let core = self.read();
        Ok(RaftState {
            hard_state: core.hard_state.clone(),
            conf_state: core.conf_state.clone(),
        })
    }

    fn entries(
        &self,
        low: u64,
        high: u64,
        max_size: impl Into<Option<u64>>,
        _context: GetEntriesContext,
    ) -> raft::Result<Vec<Entry>> {
        let core = self.read();
        if low < core.first {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        if high > core.last() + 1 {
            return Err(raft::Error::Store(StorageError::Unavailable));
        }
        let max_size = max_size.into().unwrap_or(raft::NO_LIMIT);
        let mut entries = Vec::new();
        let mut size = 0u64;
        for index in low..high {
            let entry = core.read(index).map_err(storage_error)?;
            size += (entry.data.len() + entry.context.len() + 32) as u64;
            // At least one, then no more than `max_size` in all.
            if !entries.is_empty() && size > max_size {
                break;
            }
            entries.push(entry);
        }
        Ok(entries)
    }

    fn term(&self, index: u64) -> raft::Result<u64> {
        let core = self.read();
        if index + 1 == core.first {
            // The entry before the first: the snapshot's (term 0 if never compacted).
            return Ok(core.snapshot.term);
        }
        if index < core.first {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        core.terms
            .get((index - core.first) as usize)
            .copied()
            .ok_or(raft::Error::Store(StorageError::Unavailable))
    }

    fn first_index(&self) -> raft::Result<u64> {
        Ok(self.read().first)
    }

    fn last_index(&self) -> raft::Result<u64> {
        Ok(self.read().last())
    }

    fn snapshot(&self, _request_index: u64, _to: u64) -> raft::Result<Snapshot> {
        let core = self.read();
        if core.snapshot.index == 0 {
            // Never compacted: a follower catches up from the entries themselves.
            return Err(raft::Error::Store(
                StorageError::SnapshotTemporarilyUnavailable,
            ));
        }
        Ok(core.snapshot.to_snapshot())
    }
}

#[cfg(test)]
mod tests {
    use raft::Storage as _;

    use super::*;

    fn entry(index: u64, term: u64, data: &str) -> Entry {
        let mut entry = Entry::default();
        entry.index = index;
        entry.term = term;
        entry.data = Bytes::from(data.to_string());
        entry
    }

    fn voters(ids: &[u64]) -> ConfState {
        let mut conf = ConfState::default();
        conf.voters = ids.to_vec();
        conf
    }

    fn all(log: &RaftLog) -> Vec<(u64, u64, String)> {
        let last = log.last_index();
        log.entries(1, last + 1, None, GetEntriesContext::empty(false))
            .unwrap()
            .into_iter()
            .map(|e| (e.index, e.term, String::from_utf8(e.data.to_vec()).unwrap()))
            .collect()
    }

    #[test]
    fn entries_hard_state_and_membership_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let log = RaftLog::open(dir.path(), &voters(&[1, 2, 3]), SyncMode::Data).unwrap();
        assert_eq!(log.initial_state().unwrap().conf_state, voters(&[1, 2, 3]));
        assert_eq!(log.first_index().unwrap(), 1);
        assert_eq!(log.last_index(), 0);
        assert_eq!(log.term(0).unwrap(), 0);
        log.append(&[entry(1, 1, "a"), entry(2, 1, "b"), entry(3, 2, "c")])
            .unwrap();
        let mut hard = HardState::default();
        hard.term = 2;
        hard.vote = 3;
        hard.commit = 2;
        log.set_hard_state(&hard).unwrap();
        log.set_conf_state(&voters(&[1, 2, 3, 4])).unwrap();
        log.sync().unwrap();
        drop(log);

        // Another genesis does not change the membership a log holds.
        let log = RaftLog::open(dir.path(), &voters(&[9]), SyncMode::Data).unwrap();
        let state = log.initial_state().unwrap();
        assert_eq!(state.hard_state, hard);
        assert_eq!(state.conf_state, voters(&[1, 2, 3, 4]));
        assert_eq!(
            all(&log),
            vec![
                (1, 1, "a".to_string()),
                (2, 1, "b".to_string()),
                (3, 2, "c".to_string())
            ]
        );
        assert_eq!(log.term(3).unwrap(), 2);
        assert!(matches!(
            log.term(4),
            Err(raft::Error::Store(StorageError::Unavailable))
        ));
    }

    #[test]
    fn a_new_leader_s_entries_replace_the_tail_in_memory_and_after_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let log = RaftLog::open(dir.path(), &voters(&[1, 2, 3]), SyncMode::Data).unwrap();
        log.append(&[entry(1, 1, "a"), entry(2, 1, "b"), entry(3, 1, "c")])
            .unwrap();
        // A leader of term 2 holds another entry 2: 2 and 3 go, 2' and 3' come.
        log.append(&[entry(2, 2, "B"), entry(3, 2, "C")]).unwrap();
        log.append(&[entry(4, 2, "D")]).unwrap();
        let expected = vec![
            (1, 1, "a".to_string()),
            (2, 2, "B".to_string()),
            (3, 2, "C".to_string()),
            (4, 2, "D".to_string()),
        ];
        assert_eq!(all(&log), expected);
        log.sync().unwrap();
        drop(log);
        let log = RaftLog::open(dir.path(), &voters(&[1, 2, 3]), SyncMode::Data).unwrap();
        assert_eq!(all(&log), expected);
        // A gap is refused, not papered over.
        assert!(log.append(&[entry(9, 2, "x")]).is_err());
    }

    #[test]
    fn entries_read_back_from_the_file_once_out_of_memory() {
        let dir = tempfile::tempdir().unwrap();
        let log = RaftLog::open(dir.path(), &voters(&[1]), SyncMode::Data).unwrap();
        let big = "x".repeat(1 << 20);
        let entries: Vec<Entry> = (1..=20).map(|i| entry(i, 1, &big)).collect();
        log.append(&entries).unwrap();
        assert!(log.read().cache.len() < 20, "the cache is bounded");
        let first = log.entry(1).unwrap().unwrap();
        assert_eq!(first.data.len(), 1 << 20);
        // max_size bounds a read, but never below one entry.
        let some = log
            .entries(1, 21, 3 << 20, GetEntriesContext::empty(false))
            .unwrap();
        assert_eq!(some.len(), 2);
        let one = log
            .entries(1, 21, 1, GetEntriesContext::empty(false))
            .unwrap();
        assert_eq!(one.len(), 1);
    }

    #[test]
    fn a_record_of_another_kind_or_out_of_place_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        drop(RaftLog::open(dir.path(), &voters(&[1]), SyncMode::Data).unwrap());
        {
            let Opened { mut file, .. } =
                RecordFile::open(&dir.path().join(RAFT_LOG_FILE)).unwrap();
            file.append(ENTRY, &encode_entry(&entry(5, 1, "x")))
                .unwrap();
            file.handle(SyncMode::Data).unwrap().sync().unwrap();
        }
        let error = RaftLog::open(dir.path(), &voters(&[1]), SyncMode::Data)
            .err()
            .unwrap();
        assert!(
            error.to_string().contains("entry 5 follows entry 0"),
            "{error}"
        );
    }

    #[test]
    fn a_compacted_log_keeps_the_entries_after_its_snapshot_and_reopens_so() {
        let dir = tempfile::tempdir().unwrap();
        let log = RaftLog::open(dir.path(), &voters(&[1, 2, 3]), SyncMode::Data).unwrap();
        let entries: Vec<Entry> = (1..=10)
            .map(|i| entry(i, 1 + i / 5, &format!("e{i}")))
            .collect();
        log.append(&entries).unwrap();
        let mut hard_state = HardState::default();
        hard_state.term = 3;
        hard_state.commit = 8;
        log.set_hard_state(&hard_state).unwrap();
        // Past the commit index: refused, and nothing changes.
        assert!(
            log.compact(9, &voters(&[1, 2, 3, 4]), b"later".to_vec())
                .is_err()
        );
        log.compact(6, &voters(&[1, 2, 3, 4]), b"stream at 6".to_vec())
            .unwrap();

        for log in [
            log.clone(),
            RaftLog::open(dir.path(), &voters(&[9]), SyncMode::Data).unwrap(),
        ] {
            assert_eq!(log.first_index().unwrap(), 7);
            assert_eq!(log.last_index(), 10);
            assert_eq!(log.term(6).unwrap(), 2);
            assert!(matches!(
                log.term(5),
                Err(raft::Error::Store(StorageError::Compacted))
            ));
            assert!(matches!(
                log.entries(5, 8, None, GetEntriesContext::empty(false)),
                Err(raft::Error::Store(StorageError::Compacted))
            ));
            let kept: Vec<u64> = log
                .entries(7, 11, None, GetEntriesContext::empty(false))
                .unwrap()
                .iter()
                .map(|e| e.index)
                .collect();
            assert_eq!(kept, vec![7, 8, 9, 10]);
            let snapshot = log.snapshot(0, 2).unwrap();
            assert_eq!(snapshot.get_metadata().index, 6);
            assert_eq!(snapshot.get_metadata().term, 2);
            assert_eq!(
                snapshot.get_metadata().get_conf_state().voters,
                vec![1, 2, 3, 4]
            );
            assert_eq!(&snapshot.data[..], b"stream at 6");
            assert_eq!(log.hard_state().commit, 8);
        }
    }

    #[test]
    fn a_follower_starts_afresh_from_an_installed_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let log = RaftLog::open(dir.path(), &voters(&[1, 2, 3]), SyncMode::Data).unwrap();
        log.append(&[entry(1, 1, "a"), entry(2, 1, "b")]).unwrap();
        // Never compacted: no snapshot to send.
        assert!(log.snapshot(0, 2).is_err());
        let snapshot = Snapshotted {
            index: 40,
            term: 5,
            conf_state: voters(&[1, 2, 4]),
            data: b"leader's stream".to_vec(),
        };
        log.install(&snapshot).unwrap();
        for log in [
            log.clone(),
            RaftLog::open(dir.path(), &voters(&[9]), SyncMode::Data).unwrap(),
        ] {
            assert_eq!((log.first_index().unwrap(), log.last_index()), (41, 40));
            assert_eq!(log.term(40).unwrap(), 5);
            assert_eq!(log.snapshotted(), snapshot);
            assert_eq!(
                log.initial_state().unwrap().conf_state.voters,
                vec![1, 2, 4]
            );
            assert_eq!(log.hard_state().commit, 40);
        }
        log.append(&[entry(41, 5, "next")]).unwrap();
        assert_eq!(log.last_index(), 41);
    }
}

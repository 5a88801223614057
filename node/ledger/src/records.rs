//! [`RecordFile`]: an append-only file of checksummed records, the layout Fabric uses
//! for its block files.
//!
//! Big, write-once records (transactions) belong in a file like this rather than in a
//! B-tree: appending costs one `write`, and a group of appends one sync, where
//! a tree would copy each value again every time it rewrites the page holding it. An
//! index elsewhere (memory, or a small sled record) maps a key to the record's place.
//!
//! # Format
//!
//! The file starts with [`MAGIC`] and the durable mark (u64 little-endian: the file was
//! durable at least up to this byte; see "Crashes"); then records, each
//!
//! | bytes | field |
//! |---|---|
//! | 4 | payload length, u32 little-endian |
//! | 4 | CRC-32 of kind and payload, u32 little-endian |
//! | 1 | kind (the caller's tag) |
//! | length | payload |
//!
//! # Space and syncs
//!
//! The file grows in steps of [`CHUNK_BYTES`] written as zeros and synced once, so an
//! append never changes the file's size and a sync has only data to write: the same
//! level of durability as sled's log, which Runnel's stores sit on. [`RecordReader::sync`]
//! makes the appended pages durable as its [`SyncMode`] says: by default written through
//! to the device and waited for (`sync_file_range`), so a record survives a crash of the
//! process or the kernel; with [`SyncMode::Full`], `fdatasync`, which also empties the
//! device's volatile write cache, so a record survives a power loss too.
//!
//! A thread of the file's own keeps zeros ahead of the appends (as much as the file
//! holds, at most [`AHEAD_BYTES`]), a step at a time, so an append does not wait for
//! zeros to be written unless it outruns that thread. (Growing by doubling chunks on the
//! appending thread stalled it, and the whole pipeline behind it, for 100-200 ms per
//! 64 MiB chunk; docs/perf-log.md.)
//!
//! # Crashes
//!
//! Records are only appended, and a sync covers everything appended before it. A crash
//! can therefore leave at most a torn tail: records written since the last sync, cut
//! short or with pages the disk never wrote. [`RecordFile::open`] checks every record,
//! stops at the first that is incomplete or fails its checksum (zeros, where nothing was
//! written yet, never pass), and zeroes what follows, reporting whether a torn record
//! was there.
//!
//! A damaged record inside what a sync had already made durable is no torn tail but
//! corruption, and cutting there would silently drop acknowledged records. Each sync
//! therefore first writes the durable mark: the end the previous completed sync covered
//! (a lower bound of what is durable, carried to the disk by the sync itself). Open
//! refuses a file damaged before its mark ([`RecordError::Corrupt`]) and changes
//! nothing in it. Files of format 1 (`RUNNEL1`, no mark) are still read, as before.

use std::fs::File;
use std::io::{BufReader, Read};
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// The first bytes of every record file written now (format version 2, with a durable
/// mark after it).
pub const MAGIC: &[u8; 8] = b"RUNNEL2\n";

/// The first bytes of a record file of format version 1 (no durable mark), still read.
pub const MAGIC_V1: &[u8; 8] = b"RUNNEL1\n";

/// Where the durable mark lies in a format-2 file.
const MARK_AT: u64 = 8;

/// Where a format-2 file's first record starts.
pub const FIRST_RECORD: u64 = 16;

/// Bytes before each payload: length, checksum, kind.
pub const HEADER: u64 = 9;

/// The file grows in zeros this much at a time.
pub const CHUNK_BYTES: u64 = 1 << 20;
/// How far ahead of the appends the file's thread keeps it zeroed, at most: about a
/// second of appends at the node's full rate. A smaller file keeps its own size ahead
/// (at least a chunk), so small files stay small. The thread starts again once less
/// than half is left.
pub const AHEAD_BYTES: u64 = 16 << 20;

/// The largest append buffer kept between appends; a larger batch's is freed.
const BUFFER_KEPT_BYTES: usize = 4 << 20;

/// Where a record's payload lies in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordAt {
    /// The caller's tag.
    pub kind: u8,
    /// The payload's first byte.
    pub offset: u64,
    /// The payload's length.
    pub len: u32,
}

/// How a sync makes written bytes durable (`[store] sync` in `runnel.toml`). It has no
/// default: every opener names it, so the weaker mode is never reached by omission
/// (`runnel.toml` and [`crate::LedgerConfig`] choose [`SyncMode::Full`]).
///
/// ```compile_fail
/// // No default to fall back on.
/// let _ = runnel_ledger::records::SyncMode::default();
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncMode {
    /// `sync_file_range`: the bytes are written through to the device and waited for;
    /// they survive a crash of the process or of the kernel, but not a power loss on a
    /// device with a volatile write cache.
    Data,
    /// `fdatasync`: the bytes, and the device's write cache, flushed; they survive a power
    /// loss too. Each sync costs a cache flush (milliseconds on many devices).
    Full,
}

/// What [`RecordFile::open`] found.
#[derive(Debug)]
pub struct Opened {
    /// The file, positioned to append after the last good record.
    pub file: RecordFile,
    /// Every good record, in file order.
    pub records: Vec<RecordAt>,
    /// Where a torn record was found and cut (`None` after a clean shutdown).
    pub torn_at: Option<u64>,
}

/// Why a record file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The operating system refused a read, write or sync.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What failed.
        source: std::io::Error,
    },
    /// The file is not a record file of this version.
    #[error("{path}: not a Runnel record file (it does not start with the format marker)")]
    NotRecordFile {
        /// The file.
        path: String,
    },
    /// A record the file had already made durable is damaged or missing: corruption of
    /// the disk or of the file, not a crash. The file was left as it was.
    #[error(
        "{path}: the record at byte {offset} is damaged or missing, but the file was durable up to byte {durable}: this is corruption, not a torn write, and the file was left as it is; restore this node's data from a backup or a replica"
    )]
    Corrupt {
        /// The file.
        path: String,
        /// Where the damaged record starts.
        offset: u64,
        /// The durable mark.
        durable: u64,
    },
    /// A record read back does not match its checksum or bounds.
    #[error("{path}: record at byte {offset} is damaged")]
    Damaged {
        /// The file.
        path: String,
        /// The payload's offset.
        offset: u64,
    },
    /// A payload too big for the format (4 GiB).
    #[error("{path}: record of {len} bytes is larger than a record may be")]
    TooLarge {
        /// The file.
        path: String,
        /// Its length.
        len: usize,
    },
}

/// An append-only file of checksummed records (see the module doc).
///
/// Appends take `&mut self`; reads and syncs take `&self` and may run on other threads
/// while appends go on (they use their own positioned reads and the file's inode).
#[derive(Debug)]
pub struct RecordFile {
    path: PathBuf,
    file: Arc<File>,
    /// Where the next record goes.
    len: u64,
    /// Shared with the thread that zeroes ahead.
    ahead: Arc<Ahead>,
    /// That thread, stopped and joined on drop.
    zeroer: Option<JoinHandle<()>>,
    /// Header and payload of the record being appended, reused.
    buffer: Vec<u8>,
}

/// What the appender and the thread zeroing ahead of it share.
#[derive(Debug)]
struct Ahead {
    /// The file's size, all of it zeros from the appends' end on and synced: appends
    /// may go up to here. Only [`extend`] moves it.
    allocated: AtomicU64,
    /// The appends' end, as the appender last published it.
    len: AtomicU64,
    /// The appends' end the last completed sync covered: the next sync writes it as the
    /// durable mark (0: none yet, or a format-1 file, which has no mark).
    synced: AtomicU64,
    /// Whether the file has a durable mark (format 2).
    marked: bool,
    /// Held by whoever extends the file.
    extending: Mutex<()>,
    /// Set by the appender when the lead is below half; cleared by the thread once it
    /// has restored it.
    wanted: AtomicBool,
    /// `true` once the file is being dropped; the thread waits on `wake` under it.
    stop: Mutex<bool>,
    wake: Condvar,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Extends `file` with zeros up to at least `to` (a whole number of chunks past its
/// size) and syncs the new size, unless it is that long already.
fn extend(file: &File, ahead: &Ahead, to: u64) -> std::io::Result<()> {
    let _extending = lock(&ahead.extending);
    let from = ahead.allocated.load(Ordering::Acquire);
    if from >= to {
        return Ok(());
    }
    let end = from + (to - from).div_ceil(CHUNK_BYTES) * CHUNK_BYTES;
    zero(file, from, end)?;
    file.sync_all()?;
    ahead.allocated.store(end, Ordering::Release);
    Ok(())
}

/// The zeroing thread: whenever asked (or every so often), zeroes chunk after chunk until
/// the file's zeros reach the lead it should keep ([`AHEAD_BYTES`] at most) past the
/// appends. On an error it logs it and stops; the appender then grows the file itself,
/// and reports the error if it happens again.
fn zero_ahead(path: &Path, file: &File, ahead: &Ahead) {
    loop {
        {
            let mut stop = lock(&ahead.stop);
            while !*stop && !ahead.wanted.load(Ordering::Acquire) {
                stop = ahead
                    .wake
                    .wait_timeout(stop, Duration::from_millis(100))
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
                if short(ahead) {
                    break;
                }
            }
            if *stop {
                return;
            }
        }
        while lead(ahead) < target_lead(ahead) {
            if *lock(&ahead.stop) {
                return;
            }
            let to = ahead.allocated.load(Ordering::Acquire) + CHUNK_BYTES;
            if let Err(error) = extend(file, ahead, to) {
                tracing::warn!(
                    file = %path.display(),
                    %error,
                    "zeroing ahead of the appends failed; appends will grow the file themselves"
                );
                return;
            }
        }
        ahead.wanted.store(false, Ordering::Release);
    }
}

/// How many zeroed bytes are left ahead of the appends.
fn lead(ahead: &Ahead) -> u64 {
    ahead
        .allocated
        .load(Ordering::Acquire)
        .saturating_sub(ahead.len.load(Ordering::Acquire))
}

/// The lead the thread keeps: the appends' length, at least a chunk and at most
/// [`AHEAD_BYTES`].
fn target_lead(ahead: &Ahead) -> u64 {
    ahead
        .len
        .load(Ordering::Acquire)
        .clamp(CHUNK_BYTES, AHEAD_BYTES)
}

/// True when less than half the lead is left: time to zero more.
fn short(ahead: &Ahead) -> bool {
    lead(ahead) < target_lead(ahead) / 2
}

fn checksum(kind: u8, payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&[kind]);
    hasher.update(payload);
    hasher.finalize()
}

/// Writes zeros over `from..to` of `file`.
fn zero(file: &File, from: u64, to: u64) -> std::io::Result<()> {
    let zeros = vec![0u8; 1 << 20];
    let mut at = from;
    while at < to {
        let n = (to - at).min(zeros.len() as u64) as usize;
        file.write_all_at(&zeros[..n], at)?;
        at += n as u64;
    }
    Ok(())
}

impl RecordFile {
    /// Opens (creating if needed) the record file at `path`, checks every record and
    /// cuts a torn tail.
    pub fn open(path: &Path) -> Result<Opened, RecordError> {
        let io = |source| RecordError::Io {
            path: path.display().to_string(),
            source,
        };
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        let size = file.metadata().map_err(io)?.len();
        if size < FIRST_RECORD {
            // New, or cut short while its marker was being written (a file with records
            // is longer: its first sync grew it by a chunk).
            file.set_len(0).map_err(io)?;
            let mut header = MAGIC.to_vec();
            header.extend_from_slice(&0u64.to_le_bytes());
            file.write_all_at(&header, 0).map_err(io)?;
            let file = RecordFile::at(path, file, FIRST_RECORD, FIRST_RECORD, Some(0))?;
            sync_parent(path).map_err(io)?;
            return Ok(Opened {
                file,
                records: Vec::new(),
                torn_at: None,
            });
        }
        let mut reader = BufReader::with_capacity(1 << 20, &file);
        let mut magic = [0u8; 8];
        reader.read_exact(&mut magic).map_err(io)?;
        let durable = if &magic == MAGIC {
            let mut mark = [0u8; 8];
            reader.read_exact(&mut mark).map_err(io)?;
            Some(u64::from_le_bytes(mark))
        } else if &magic == MAGIC_V1 {
            None
        } else {
            return Err(RecordError::NotRecordFile {
                path: path.display().to_string(),
            });
        };
        let mut records = Vec::new();
        let mut good = if durable.is_some() {
            FIRST_RECORD
        } else {
            MAGIC_V1.len() as u64
        };
        let mut payload = Vec::new();
        let torn = loop {
            let mut header = [0u8; HEADER as usize];
            if size - good < HEADER || reader.read_exact(&mut header).is_err() {
                break size > good;
            }
            let len = u32::from_le_bytes(header[0..4].try_into().expect("4 bytes"));
            let crc = u32::from_le_bytes(header[4..8].try_into().expect("4 bytes"));
            let kind = header[8];
            if header == [0u8; HEADER as usize] {
                break false;
            }
            if size - good - HEADER < u64::from(len) {
                break true;
            }
            payload.resize(len as usize, 0);
            if reader.read_exact(&mut payload).is_err() || checksum(kind, &payload) != crc {
                break true;
            }
            records.push(RecordAt {
                kind,
                offset: good + HEADER,
                len,
            });
            good += HEADER + u64::from(len);
        };
        drop(reader);
        if let Some(durable) = durable
            && good < durable
        {
            return Err(RecordError::Corrupt {
                path: path.display().to_string(),
                offset: good,
                durable,
            });
        }
        if torn {
            // Nothing after the torn record was ever acknowledged: zero it all, so no
            // stale bytes can pass for a record once appends overwrite part of it.
            zero(&file, good, size).map_err(io)?;
            file.sync_all().map_err(io)?;
        }
        Ok(Opened {
            file: RecordFile::at(path, file, good, size, durable)?,
            records,
            torn_at: torn.then_some(good),
        })
    }

    /// The file, appending at `len`, `allocated` long, durable up to `durable` (`None`: a
    /// format-1 file, without a mark), with its zeroing thread started and at least a
    /// chunk of zeros ahead.
    fn at(
        path: &Path,
        file: File,
        len: u64,
        allocated: u64,
        durable: Option<u64>,
    ) -> Result<RecordFile, RecordError> {
        let file = Arc::new(file);
        let ahead = Arc::new(Ahead {
            allocated: AtomicU64::new(allocated),
            len: AtomicU64::new(len),
            synced: AtomicU64::new(durable.unwrap_or(0)),
            marked: durable.is_some(),
            extending: Mutex::new(()),
            wanted: AtomicBool::new(false),
            stop: Mutex::new(false),
            wake: Condvar::new(),
        });
        let zeroer = {
            let (path, file, ahead) = (path.to_path_buf(), Arc::clone(&file), Arc::clone(&ahead));
            std::thread::Builder::new()
                .name("runnel-zeroer".into())
                .spawn(move || zero_ahead(&path, &file, &ahead))
        };
        let mut file = RecordFile {
            path: path.to_path_buf(),
            file,
            len,
            ahead,
            zeroer: None,
            buffer: Vec::new(),
        };
        file.zeroer = Some(zeroer.map_err(|e| file.io(e))?);
        file.grow(1)?;
        Ok(file)
    }

    fn io(&self, source: std::io::Error) -> RecordError {
        RecordError::Io {
            path: self.path.display().to_string(),
            source,
        }
    }

    /// Makes the file's zeros reach `more` bytes past `len`, extending it here if the
    /// zeroing thread has not got that far.
    fn grow(&mut self, more: u64) -> Result<(), RecordError> {
        let want = self.len + more;
        if self.ahead.allocated.load(Ordering::Acquire) < want {
            extend(&self.file, &self.ahead, want).map_err(|e| self.io(e))?;
        }
        Ok(())
    }

    /// Publishes the appends' end to the zeroing thread, waking it when the lead is below
    /// half.
    fn advanced(&self) {
        self.ahead.len.store(self.len, Ordering::Release);
        if short(&self.ahead) && !self.ahead.wanted.swap(true, Ordering::AcqRel) {
            let _stop = lock(&self.ahead.stop);
            self.ahead.wake.notify_one();
        }
    }

    /// Appends one record (one `write`); durable after the next [`RecordReader::sync`].
    pub fn append(&mut self, kind: u8, payload: &[u8]) -> Result<RecordAt, RecordError> {
        let mut at = self.append_all(kind, [payload])?;
        Ok(at.remove(0))
    }

    /// Appends a record of `kind` for each payload, in order, with one `write`; durable
    /// after the next [`RecordReader::sync`]. On an error none of them is appended.
    pub fn append_all<'a>(
        &mut self,
        kind: u8,
        payloads: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<Vec<RecordAt>, RecordError> {
        self.append_records(payloads.into_iter().map(|payload| (kind, payload)))
    }

    /// Appends each `(kind, payload)` as a record, in order, with one `write`; durable
    /// after the next [`RecordReader::sync`]. On an error none of them is appended; a
    /// crash during the write can leave only a prefix of them (whole records, then a torn
    /// one that [`RecordFile::open`] cuts).
    pub fn append_records<'a>(
        &mut self,
        records: impl IntoIterator<Item = (u8, &'a [u8])>,
    ) -> Result<Vec<RecordAt>, RecordError> {
        self.buffer.clear();
        let mut places = Vec::new();
        for (kind, payload) in records {
            let len = u32::try_from(payload.len()).map_err(|_| RecordError::TooLarge {
                path: self.path.display().to_string(),
                len: payload.len(),
            })?;
            places.push(RecordAt {
                kind,
                offset: self.len + self.buffer.len() as u64 + HEADER,
                len,
            });
            self.buffer.extend_from_slice(&len.to_le_bytes());
            self.buffer
                .extend_from_slice(&checksum(kind, payload).to_le_bytes());
            self.buffer.push(kind);
            self.buffer.extend_from_slice(payload);
        }
        let total = self.buffer.len() as u64;
        self.grow(total)?;
        if let Err(error) = self.file.write_all_at(&self.buffer, self.len) {
            // A partial write may have left part of a record: zero it, so the next
            // append starts on a clean boundary.
            let _ = zero(&self.file, self.len, self.len + total);
            return Err(self.io(error));
        }
        self.len += total;
        self.advanced();
        if self.buffer.capacity() > BUFFER_KEPT_BYTES {
            self.buffer = Vec::new();
        }
        Ok(places)
    }

    /// The file was renamed to `path` (a staging file moved into place): the name its
    /// errors and new handles give from now on.
    pub fn renamed(&mut self, path: &Path) {
        self.path = path.to_path_buf();
    }

    /// Drops every record from byte `at` on (a record's start, found by
    /// [`RecordFile::open`]): zeroes them, durably, and appends there next.
    pub fn cut(&mut self, at: u64) -> Result<(), RecordError> {
        let first = if self.ahead.marked {
            FIRST_RECORD
        } else {
            MAGIC_V1.len() as u64
        };
        if at < first || at > self.len {
            return Err(RecordError::Damaged {
                path: self.path.display().to_string(),
                offset: at,
            });
        }
        // The mark first, so that it never points past what is left.
        if self.ahead.marked && self.ahead.synced.fetch_min(at, Ordering::AcqRel) > at {
            self.file
                .write_all_at(&at.to_le_bytes(), MARK_AT)
                .map_err(|e| self.io(e))?;
            self.file.sync_data().map_err(|e| self.io(e))?;
        }
        zero(&self.file, at, self.len).map_err(|e| self.io(e))?;
        self.file.sync_data().map_err(|e| self.io(e))?;
        self.len = at;
        self.ahead.len.store(at, Ordering::Release);
        Ok(())
    }

    /// A handle that reads and syncs this file from another thread, syncing as `mode`
    /// says.
    pub fn handle(&self, mode: SyncMode) -> Result<RecordReader, RecordError> {
        Ok(RecordReader {
            path: self.path.clone(),
            file: self.file.try_clone().map_err(|e| self.io(e))?,
            ahead: Arc::clone(&self.ahead),
            mode,
        })
    }
}

impl Drop for RecordFile {
    fn drop(&mut self) {
        // A clean close leaves the mark at what the last sync covered (best effort: a
        // mark that lags only means less is checked at the next open).
        if self.ahead.marked {
            let mark = self.ahead.synced.load(Ordering::Acquire);
            if self.file.write_all_at(&mark.to_le_bytes(), MARK_AT).is_ok() {
                let _ = self.file.sync_data();
            }
        }
        *lock(&self.ahead.stop) = true;
        self.ahead.wake.notify_one();
        if let Some(zeroer) = self.zeroer.take() {
            let _ = zeroer.join();
        }
    }
}

/// Reads records and syncs the file, from any thread, while appends go on.
#[derive(Debug)]
pub struct RecordReader {
    path: PathBuf,
    file: File,
    /// Where the appends end: what a sync covers.
    ahead: Arc<Ahead>,
    /// How [`RecordReader::sync`] syncs.
    mode: SyncMode,
}

impl RecordReader {
    /// The payload of a record appended earlier, checked against its checksum.
    pub fn read(&self, at: RecordAt) -> Result<Vec<u8>, RecordError> {
        let damaged = || RecordError::Damaged {
            path: self.path.display().to_string(),
            offset: at.offset,
        };
        let start = at.offset.checked_sub(HEADER).ok_or_else(damaged)?;
        let mut record = vec![0u8; HEADER as usize + at.len as usize];
        self.file
            .read_exact_at(&mut record, start)
            .map_err(|source| RecordError::Io {
                path: self.path.display().to_string(),
                source,
            })?;
        let payload = record.split_off(HEADER as usize);
        let len = u32::from_le_bytes(record[0..4].try_into().expect("4 bytes"));
        let crc = u32::from_le_bytes(record[4..8].try_into().expect("4 bytes"));
        if len != at.len || record[8] != at.kind || checksum(at.kind, &payload) != crc {
            return Err(damaged());
        }
        Ok(payload)
    }

    /// `len` bytes at `offset` in the payload of a record appended earlier, read alone.
    /// Unlike [`RecordReader::read`], this cannot check the record's checksum, which
    /// covers the whole payload: the caller checks the bytes against its own.
    pub fn read_part(&self, at: RecordAt, offset: u32, len: u32) -> Result<Vec<u8>, RecordError> {
        if u64::from(offset) + u64::from(len) > u64::from(at.len) {
            return Err(RecordError::Damaged {
                path: self.path.display().to_string(),
                offset: at.offset,
            });
        }
        let mut part = vec![0u8; len as usize];
        self.file
            .read_exact_at(&mut part, at.offset + u64::from(offset))
            .map_err(|source| RecordError::Io {
                path: self.path.display().to_string(),
                source,
            })?;
        Ok(part)
    }

    /// Makes every record appended so far durable, as the handle's [`SyncMode`] says (the
    /// file's size is already durable, see the module doc).
    pub fn sync(&self) -> Result<(), RecordError> {
        let covered = self.ahead.len.load(Ordering::Acquire);
        if self.ahead.marked {
            // What the previous sync covered, made durable by this one: never more than
            // what is durable, whenever a crash comes.
            let mark = self.ahead.synced.load(Ordering::Acquire);
            self.file
                .write_all_at(&mark.to_le_bytes(), MARK_AT)
                .map_err(|source| RecordError::Io {
                    path: self.path.display().to_string(),
                    source,
                })?;
        }
        self.sync_pages()?;
        self.ahead.synced.fetch_max(covered, Ordering::AcqRel);
        Ok(())
    }

    fn sync_pages(&self) -> Result<(), RecordError> {
        if self.mode == SyncMode::Full {
            return self.file.sync_data().map_err(|source| RecordError::Io {
                path: self.path.display().to_string(),
                source,
            });
        }
        // SAFETY: a plain system call on a file descriptor this handle owns; it reads
        // no memory of this process.
        let done = unsafe {
            libc::sync_file_range(
                self.file.as_raw_fd(),
                0,
                // The appends, not the zeros the zeroing thread is writing past them
                // (it syncs those itself).
                libc::off64_t::try_from(self.ahead.len.load(Ordering::Acquire)).unwrap_or(0),
                libc::SYNC_FILE_RANGE_WAIT_BEFORE
                    | libc::SYNC_FILE_RANGE_WRITE
                    | libc::SYNC_FILE_RANGE_WAIT_AFTER,
            )
        };
        let result = if done == 0 {
            Ok(())
        } else {
            match std::io::Error::last_os_error() {
                // Not every file system has it: a full data sync is at least as strong.
                error if error.raw_os_error() == Some(libc::ENOSYS) => self.file.sync_data(),
                error => Err(error),
            }
        };
        result.map_err(|source| RecordError::Io {
            path: self.path.display().to_string(),
            source,
        })
    }
}

/// Makes a new file's directory entry durable.
fn sync_parent(path: &Path) -> std::io::Result<()> {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => File::open(parent)?.sync_all(),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payloads() -> Vec<Vec<u8>> {
        (0..20u8).map(|i| vec![i; i as usize * 37]).collect()
    }

    fn write(path: &Path) -> Vec<RecordAt> {
        let Opened { mut file, .. } = RecordFile::open(path).unwrap();
        let at: Vec<RecordAt> = payloads()
            .iter()
            .enumerate()
            .map(|(i, p)| file.append(i as u8 % 3, p).unwrap())
            .collect();
        file.handle(SyncMode::Data).unwrap().sync().unwrap();
        at
    }

    #[test]
    fn records_read_back_and_reopen_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let at = write(&path);
        let Opened {
            file,
            records,
            torn_at,
        } = RecordFile::open(&path).unwrap();
        assert_eq!(records, at);
        assert_eq!(torn_at, None);
        let reader = file.handle(SyncMode::Data).unwrap();
        for (at, payload) in at.iter().zip(payloads()) {
            assert_eq!(reader.read(*at).unwrap(), payload);
        }
    }

    #[test]
    fn records_appended_together_are_each_their_own_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let Opened { mut file, .. } = RecordFile::open(&path).unwrap();
        assert!(file.append_all(1, []).unwrap().is_empty());
        let first = file.append(2, b"alone").unwrap();
        let together = file
            .append_all(1, payloads().iter().map(Vec::as_slice))
            .unwrap();
        let last = file.append(2, b"after").unwrap();
        file.handle(SyncMode::Data).unwrap().sync().unwrap();
        drop(file);
        let Opened { file, records, .. } = RecordFile::open(&path).unwrap();
        let mut expected = vec![first];
        expected.extend(together.iter().copied());
        expected.push(last);
        assert_eq!(records, expected);
        let reader = file.handle(SyncMode::Data).unwrap();
        for (at, payload) in together.iter().zip(payloads()) {
            assert_eq!(at.kind, 1);
            assert_eq!(reader.read(*at).unwrap(), payload);
        }
        assert_eq!(reader.read(last).unwrap(), b"after");
    }

    #[test]
    fn records_of_several_kinds_appended_together_keep_their_kinds_and_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let Opened { mut file, .. } = RecordFile::open(&path).unwrap();
        assert!(file.append_records([]).unwrap().is_empty());
        let first = file.append(b'x', b"alone").unwrap();
        let mixed: Vec<(u8, Vec<u8>)> = payloads()
            .into_iter()
            .enumerate()
            .map(|(i, payload)| (b'a' + i as u8 % 4, payload))
            .collect();
        let together = file
            .append_records(
                mixed
                    .iter()
                    .map(|(kind, payload)| (*kind, payload.as_slice())),
            )
            .unwrap();
        assert_eq!(together.len(), mixed.len());
        // One write: each record starts where the one before it ends.
        for pair in together.windows(2) {
            assert_eq!(
                pair[1].offset,
                pair[0].offset + u64::from(pair[0].len) + HEADER
            );
        }
        assert_eq!(together[0].offset, first.offset + 5 + HEADER);
        file.handle(SyncMode::Data).unwrap().sync().unwrap();
        drop(file);
        let Opened { file, records, .. } = RecordFile::open(&path).unwrap();
        let mut expected = vec![first];
        expected.extend(together.iter().copied());
        assert_eq!(records, expected);
        let reader = file.handle(SyncMode::Data).unwrap();
        for (at, (kind, payload)) in together.iter().zip(&mixed) {
            assert_eq!(at.kind, *kind);
            assert_eq!(&reader.read(*at).unwrap(), payload);
        }
    }

    #[test]
    fn a_torn_tail_is_cut_at_the_last_good_record_and_appends_go_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let at = write(&path);
        let last = at[19];
        let start = last.offset - HEADER;
        // A record cut short, or with a byte the disk never wrote (zero).
        let full = last.offset + u64::from(last.len);
        for (cut, hole) in [
            (start + 1, None),
            (last.offset + 3, None),
            (full, Some(full - 5)),
        ] {
            let file = File::options().write(true).open(&path).unwrap();
            file.set_len(cut).unwrap();
            // The last record came after the last completed sync (the mark is before it):
            // a crash can tear it.
            file.write_all_at(&start.to_le_bytes(), MARK_AT).unwrap();
            if let Some(hole) = hole {
                file.write_all_at(&[0], hole).unwrap();
            }
            drop(file);
            let Opened {
                mut file,
                records,
                torn_at,
            } = RecordFile::open(&path).unwrap();
            assert_eq!(records, at[..19]);
            assert_eq!(torn_at, Some(start));
            let again = file.append(last.kind, &payloads()[19]).unwrap();
            assert_eq!(again, last);
            file.handle(SyncMode::Data).unwrap().sync().unwrap();
            let reopened = RecordFile::open(&path).unwrap();
            assert_eq!(reopened.records, at);
            assert_eq!(reopened.torn_at, None);
        }
    }

    #[test]
    fn a_damaged_record_after_the_last_sync_is_a_torn_tail_cut_there() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let mut at = write(&path);
        let Opened { mut file, .. } = RecordFile::open(&path).unwrap();
        let reader = file.handle(SyncMode::Data).unwrap();
        // Appended, never synced: what a crash can tear.
        at.extend((0..3u8).map(|i| file.append(1, &[i; 100]).unwrap()));
        std::mem::forget(file); // a crash: no clean close
        let raw = File::options().write(true).open(&path).unwrap();
        raw.write_all_at(&[0xff], at[21].offset + 2).unwrap();
        assert!(matches!(
            reader.read(at[21]),
            Err(RecordError::Damaged { .. })
        ));
        let Opened {
            records, torn_at, ..
        } = RecordFile::open(&path).unwrap();
        assert_eq!(records, at[..21]);
        assert_eq!(torn_at, Some(at[21].offset - HEADER));
    }

    #[test]
    fn a_damaged_record_the_file_had_made_durable_is_refused_and_nothing_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let at = write(&path);
        let raw = File::options().write(true).open(&path).unwrap();
        raw.write_all_at(&[0xff], at[7].offset + 2).unwrap();
        let before = std::fs::read(&path).unwrap();
        match RecordFile::open(&path) {
            Err(RecordError::Corrupt {
                offset, durable, ..
            }) => {
                assert_eq!(offset, at[7].offset - HEADER);
                assert!(durable > at[19].offset, "{durable}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(std::fs::read(&path).unwrap(), before, "nothing changed");
        // Records that vanished (zeros where the mark says records were) as well.
        raw.write_all_at(&before[..at[7].offset as usize - HEADER as usize], 0)
            .unwrap();
        let zeros = vec![0u8; (at[19].offset - at[7].offset) as usize];
        raw.write_all_at(&zeros, at[7].offset - HEADER).unwrap();
        assert!(matches!(
            RecordFile::open(&path),
            Err(RecordError::Corrupt { .. })
        ));
    }

    #[test]
    fn a_format_1_file_is_read_as_before() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let mut bytes = MAGIC_V1.to_vec();
        let payload = b"old";
        bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&checksum(4, payload).to_le_bytes());
        bytes.push(4);
        bytes.extend_from_slice(payload);
        std::fs::write(&path, &bytes).unwrap();
        let Opened {
            mut file,
            records,
            torn_at,
        } = RecordFile::open(&path).unwrap();
        assert_eq!(torn_at, None);
        assert_eq!(records.len(), 1);
        let reader = file.handle(SyncMode::Data).unwrap();
        assert_eq!(reader.read(records[0]).unwrap(), payload);
        let next = file.append(5, b"new").unwrap();
        reader.sync().unwrap();
        drop(file);
        let Opened { records, .. } = RecordFile::open(&path).unwrap();
        assert_eq!(records[1], next);
    }

    #[test]
    fn part_of_a_record_is_read_alone_and_never_past_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let Opened { mut file, .. } = RecordFile::open(&dir.path().join("log")).unwrap();
        file.append(1, b"before").unwrap();
        let at = file.append(1, b"0123456789").unwrap();
        file.append(1, b"after").unwrap();
        let reader = file.handle(SyncMode::Data).unwrap();
        assert_eq!(reader.read_part(at, 3, 4).unwrap(), b"3456");
        assert_eq!(reader.read_part(at, 0, 10).unwrap(), b"0123456789");
        assert_eq!(reader.read_part(at, 10, 0).unwrap(), b"");
        for (offset, len) in [(0, 11), (8, 3), (u32::MAX, 1)] {
            assert!(matches!(
                reader.read_part(at, offset, len),
                Err(RecordError::Damaged { .. })
            ));
        }
    }

    #[test]
    fn the_file_is_zeroed_ahead_of_the_appends_that_fill_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let Opened { mut file, .. } = RecordFile::open(&path).unwrap();
        let size = || std::fs::metadata(&path).unwrap().len();
        assert!(size() >= CHUNK_BYTES, "a chunk of zeros from the start");
        let big = vec![7u8; (CHUNK_BYTES / 3) as usize];
        let mut at: Vec<RecordAt> = (0..10).map(|_| file.append(1, &big).unwrap()).collect();
        // The zeroing thread catches up: it aims at as many zeros ahead as the file holds
        // records and starts again once less than half is left, so at least half stays
        // ahead (how much more depends on when its last pass ran). The appends alone
        // would leave less than a chunk.
        let half = file.len.clamp(CHUNK_BYTES, AHEAD_BYTES) / 2;
        assert!(half > CHUNK_BYTES);
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while size() < file.len + half && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(
            size() >= file.len + half,
            "zeroed ahead: {} of {} (at least {half} ahead)",
            size(),
            file.len
        );
        // One append longer than every zero ahead extends the file itself.
        let huge = vec![9u8; (4 * CHUNK_BYTES) as usize];
        at.push(file.append(2, &huge).unwrap());
        file.handle(SyncMode::Data).unwrap().sync().unwrap();
        drop(file);
        let Opened {
            records, torn_at, ..
        } = RecordFile::open(&path).unwrap();
        assert_eq!((records, torn_at), (at, None));
    }

    #[test]
    fn another_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, b"something else entirely").unwrap();
        assert!(matches!(
            RecordFile::open(&path),
            Err(RecordError::NotRecordFile { .. })
        ));
    }
}

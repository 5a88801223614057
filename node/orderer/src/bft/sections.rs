//! The consensus journal's files, made a few views ahead of the engine.
//!
//! The engine journals this orderer's votes before it sends them, in a file per view
//! (commonware's segmented journal: a section per view, named by the view). The first
//! vote of a view creates its file, and the runtime syncs the new file, its directory and
//! the storage root before the vote can go: three syncs on the path of every batch, at
//! the leader and then at each voter. Here each view's file is made ahead, off that
//! path: the bytes the runtime writes into a blob it creates (read from one it made for
//! the purpose), written to a staging file, linked under the section's name (never over
//! a file that exists), and the directory synced once for all the files made together.
//! They are made when fewer than [`MARGIN`] are left ahead of the engine, up to [`AHEAD`]:
//! one directory sync every few views, and no wake-up in the others. When the engine
//! reaches the view, its journal finds a file with a valid header, takes it as one it
//! made, and opens it without a sync.
//!
//! Durability: a file is linked at least [`MARGIN`] views ahead of the engine and its
//! name synced at once. Its header is not synced by itself: the first vote journaled into
//! it is synced with `fdatasync`, which writes every dirty page of the file, the header
//! among them, and on a journaling file system (ext4, XFS) commits the metadata changes
//! made before it. A crash before that vote leaves a file whose header may be torn,
//! which the runtime treats as a file a crash left half made and writes its own header
//! over (as it does should its header format change): the engine only loses the head
//! start, never a vote.

use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

/// The partition the runtime makes the model file in.
const TEMPLATE_PARTITION: &str = "runnel-bft-template";
/// The model blob's name.
const TEMPLATE_NAME: &[u8] = b"header";

/// How many views past the engine's the files reach.
const AHEAD: u64 = 16;
/// Views past the engine's nearest which a file is made: one nearer could be opened by
/// the journal while it is being linked.
pub const MARGIN: u64 = 3;

/// The bytes of an empty blob as the runtime writes one: it creates a blob in a partition
/// of its own and they are read back. `None` when they cannot be had (the journal then
/// makes every file itself).
pub async fn template<S: commonware_runtime::Storage>(storage: &S, root: &Path) -> Option<Vec<u8>> {
    let opened = storage.open(TEMPLATE_PARTITION, TEMPLATE_NAME).await;
    let size = match opened {
        Ok((blob, size)) => {
            drop(blob);
            size
        }
        Err(error) => {
            tracing::warn!("the consensus journal's files are not made ahead: {error}");
            return None;
        }
    };
    let path = root.join(TEMPLATE_PARTITION).join(hex(TEMPLATE_NAME));
    match fs::read(&path) {
        Ok(bytes) if size == 0 && !bytes.is_empty() => Some(bytes),
        Ok(_) => {
            tracing::warn!(
                "the consensus journal's files are not made ahead: {} is not an empty blob",
                path.display()
            );
            None
        }
        Err(error) => {
            tracing::warn!(
                "the consensus journal's files are not made ahead: {}: {error}",
                path.display()
            );
            None
        }
    }
}

/// The view the engine is at, as this orderer last saw it.
#[derive(Default)]
pub struct Views {
    latest: std::sync::atomic::AtomicU64,
    moved: Condvar,
    lock: Mutex<()>,
}

impl Views {
    /// Notes that the engine is at `view` (or past it).
    pub fn saw(&self, view: u64) {
        if self.latest.fetch_max(view, Ordering::Relaxed) < view {
            let _guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
            self.moved.notify_all();
        }
    }

    /// The highest view seen.
    pub fn latest(&self) -> u64 {
        self.latest.load(Ordering::Relaxed)
    }

    /// Waits until a view past `seen` is seen, or `timeout`.
    fn wait_past(&self, seen: u64, timeout: Duration) -> u64 {
        let guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        if self.latest() <= seen {
            let _ = self
                .moved
                .wait_timeout(guard, timeout)
                .unwrap_or_else(PoisonError::into_inner);
        }
        self.latest()
    }
}

/// Makes the files of the views ahead of the engine's in the journal's `partition` (a
/// directory of `root`), until `stopped` says so.
pub fn run(
    views: Arc<Views>,
    root: PathBuf,
    partition: &str,
    template: Vec<u8>,
    stopped: impl Fn() -> bool,
) {
    let dir = root.join(partition);
    let staging = root.join(format!("{partition}-staging"));
    if let Err(error) = fs::create_dir_all(&staging) {
        tracing::warn!(
            "the consensus journal's files are not made ahead: {}: {error}",
            staging.display()
        );
        return;
    }
    let mut made = 0;
    let mut seen = 0;
    while !stopped() {
        seen = views.wait_past(seen, Duration::from_secs(1));
        // The journal's directory is the runtime's to create (and sync) first.
        if seen == 0 || !dir.is_dir() {
            continue;
        }
        // Made again only once fewer than MARGIN are left ahead: the whole run at once.
        if made >= seen + MARGIN {
            continue;
        }
        let (from, to) = ((made + 1).max(seen + MARGIN), seen + AHEAD);
        match make(&dir, &staging, &template, from..=to) {
            Ok(()) => made = to,
            Err(error) => {
                tracing::warn!("making the consensus journal's files ahead: {error}; stopped");
                return;
            }
        }
    }
}

/// Makes the files of `views` that do not exist, then syncs the directory.
fn make(
    dir: &Path,
    staging: &Path,
    template: &[u8],
    views: std::ops::RangeInclusive<u64>,
) -> std::io::Result<()> {
    let mut linked = false;
    for view in views {
        let name = hex(&view.to_be_bytes());
        let target = dir.join(&name);
        if target.exists() {
            continue;
        }
        let staged = staging.join(&name);
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&staged)?;
        file.write_all(template)?;
        drop(file);
        // A link never replaces a file: one the journal made meanwhile stays.
        match fs::hard_link(&staged, &target) {
            Ok(()) => linked = true,
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(error) => {
                let _ = fs::remove_file(&staged);
                return Err(error);
            }
        }
        fs::remove_file(&staged)?;
    }
    if linked {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// How the runtime names a blob: its name's bytes in lower-case hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_is_named_as_the_runtime_names_it() {
        assert_eq!(hex(&968u64.to_be_bytes()), "00000000000003c8");
    }

    #[test]
    fn files_are_made_ahead_and_never_over_one_that_exists() {
        let root = tempfile::tempdir().unwrap();
        let (dir, staging) = (root.path().join("journal"), root.path().join("staging"));
        fs::create_dir_all(&dir).unwrap();
        fs::create_dir_all(&staging).unwrap();
        fs::write(dir.join(hex(&5u64.to_be_bytes())), b"votes").unwrap();
        make(&dir, &staging, b"HEAD", 4..=6).unwrap();
        assert_eq!(
            fs::read(dir.join(hex(&4u64.to_be_bytes()))).unwrap(),
            b"HEAD"
        );
        assert_eq!(
            fs::read(dir.join(hex(&5u64.to_be_bytes()))).unwrap(),
            b"votes"
        );
        assert_eq!(
            fs::read(dir.join(hex(&6u64.to_be_bytes()))).unwrap(),
            b"HEAD"
        );
        assert_eq!(
            fs::read_dir(&staging).unwrap().count(),
            0,
            "nothing left staged"
        );
    }
}

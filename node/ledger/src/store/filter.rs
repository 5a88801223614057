//! [`KeyFilter`]: which keys sled certainly does not hold, answered from memory.
//!
//! Most lookups that miss sled are of keys never written: a new transaction's id, looked
//! up for replays when it is endorsed, ordered and validated, and the key a transaction
//! creates, whose durable value stage 2 reads. A miss walks sled's tree under its shared
//! lock, which a commit holds exclusively while it applies its batch, so it costs as much
//! as a hit and waits as long. The filter answers most of those misses with one cache line
//! per segment.
//!
//! It is a blocked Bloom filter over every tx-index and state key in sled: a key sets
//! [`PROBES`] bits in one 512-bit block, about [`BITS_PER_KEY`] bits a key, so about 1%
//! of absent keys are "maybe" (a sled read, as without the filter). The last segment
//! full, a new one twice its size takes the next keys; a query looks in each. A deleted
//! key stays in (a false "maybe", nothing worse).
//!
//! Invariant: once [`KeyFilter::is_loaded`], every such key in sled is in the filter. The
//! store inserts a batch's keys before it applies the batch, and a loader thread inserts
//! the keys that were in sled when the store opened; until it is done, every answer is
//! "maybe".

use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{PoisonError, RwLock, RwLockReadGuard};

/// Bits each key sets, all in one block.
const PROBES: u32 = 6;
/// Bits of filter per key a segment is sized for.
const BITS_PER_KEY: usize = 12;
/// Bits in a block: one 64-byte cache line.
const BLOCK_BITS: usize = 512;
/// Keys the first segment holds (1.5 MiB of bits).
const FIRST_CAPACITY: usize = 1 << 20;

/// One cache line of bits.
#[repr(align(64))]
struct Block([AtomicU64; BLOCK_BITS / 64]);

/// Blocks sized for `capacity` keys.
struct Segment {
    blocks: Box<[Block]>,
    capacity: usize,
    len: AtomicUsize,
}

impl Segment {
    fn new(capacity: usize) -> Segment {
        let count = (capacity * BITS_PER_KEY).div_ceil(BLOCK_BITS).max(1);
        Segment {
            blocks: (0..count)
                .map(|_| Block(std::array::from_fn(|_| AtomicU64::new(0))))
                .collect(),
            capacity,
            len: AtomicUsize::new(0),
        }
    }

    /// The block of `hash` and the bit of each probe in it (word, mask).
    fn probes(&self, hash: u64) -> (&Block, impl Iterator<Item = (usize, u64)>) {
        // The block from the hash's high bits (multiply-shift onto the block count), the
        // probes from 9-bit pieces of a mix of the whole hash.
        let index = ((u128::from(hash) * self.blocks.len() as u128) >> 64) as usize;
        let mixed = mix(hash);
        let bits = (0..PROBES).map(move |i| {
            let bit = ((mixed >> (9 * i)) & 511) as usize;
            (bit / 64, 1u64 << (bit % 64))
        });
        (&self.blocks[index], bits)
    }

    fn insert(&self, hash: u64) {
        let (block, bits) = self.probes(hash);
        for (word, mask) in bits {
            block.0[word].fetch_or(mask, Ordering::Release);
        }
    }

    fn may_contain(&self, hash: u64) -> bool {
        let (block, mut bits) = self.probes(hash);
        bits.all(|(word, mask)| block.0[word].load(Ordering::Acquire) & mask != 0)
    }
}

/// The murmur3 finaliser: every output bit depends on every input bit.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// An approximate set of sled keys: "certainly absent" or "maybe there".
pub(crate) struct KeyFilter {
    /// Keyed per process, so that nobody can choose keys that all land in one block.
    hasher: RandomState,
    segments: RwLock<Vec<Segment>>,
    loaded: AtomicBool,
}

impl KeyFilter {
    /// An empty filter whose answers are all "maybe" until [`KeyFilter::set_loaded`].
    pub fn new() -> KeyFilter {
        KeyFilter {
            hasher: RandomState::new(),
            segments: RwLock::new(vec![Segment::new(FIRST_CAPACITY)]),
            loaded: AtomicBool::new(false),
        }
    }

    fn segments(&self) -> RwLockReadGuard<'_, Vec<Segment>> {
        self.segments.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds `key`.
    pub fn insert(&self, key: &[u8]) {
        let hash = self.hasher.hash_one(key);
        {
            let segments = self.segments();
            let last = segments.last().expect("a filter has a segment");
            if last.len.fetch_add(1, Ordering::Relaxed) < last.capacity {
                last.insert(hash);
                return;
            }
        }
        let mut segments = self
            .segments
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let last = segments.last().expect("a filter has a segment");
        // Another insert may have added the segment meanwhile.
        if last.len.load(Ordering::Relaxed) > last.capacity {
            let capacity = last.capacity.saturating_mul(2);
            segments.push(Segment::new(capacity));
        }
        let last = segments.last().expect("a filter has a segment");
        last.len.fetch_add(1, Ordering::Relaxed);
        last.insert(hash);
    }

    /// False only if `key` is certainly not in sled.
    pub fn may_contain(&self, key: &[u8]) -> bool {
        if !self.is_loaded() {
            return true;
        }
        let hash = self.hasher.hash_one(key);
        self.segments()
            .iter()
            .any(|segment| segment.may_contain(hash))
    }

    /// Whether the keys sled held at open are all in.
    pub fn is_loaded(&self) -> bool {
        self.loaded.load(Ordering::Acquire)
    }

    /// Marks the keys sled held at open as all in.
    pub fn set_loaded(&self) {
        self.loaded.store(true, Ordering::Release);
    }

    /// Bytes of bits held.
    pub fn bytes(&self) -> usize {
        self.segments()
            .iter()
            .map(|segment| segment.blocks.len() * BLOCK_BITS / 8)
            .sum()
    }
}

/// The thread that loads the keys sled held at open into a filter; stopped and joined when
/// dropped, so that it never outlives the store (and its hold on sled's files).
pub(crate) struct Loader {
    stop: std::sync::Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Loader {
    /// Starts loading the keys under each of `prefixes` in `db` into `filter`.
    pub fn start(
        db: sled::Db,
        prefixes: &'static [&'static [u8]],
        filter: std::sync::Arc<KeyFilter>,
    ) -> std::io::Result<Loader> {
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("runnel-keys".into())
            .spawn(move || {
                for prefix in prefixes {
                    for key in db.scan_prefix(prefix).keys() {
                        if stopping.load(Ordering::Relaxed) {
                            return;
                        }
                        match key {
                            Ok(key) => filter.insert(&key),
                            // Unreadable: the filter stays all "maybe", and sled reports
                            // the error to whoever reads the key.
                            Err(error) => {
                                tracing::warn!(%error, "cannot load the store's key filter");
                                return;
                            }
                        }
                    }
                }
                filter.set_loaded();
                tracing::debug!(bytes = filter.bytes(), "store key filter loaded");
            })?;
        Ok(Loader {
            stop,
            thread: Some(thread),
        })
    }

    /// Waits until the loader is done.
    #[cfg(test)]
    pub fn wait(&mut self) {
        if let Some(thread) = self.thread.take() {
            thread.join().expect("the loader does not panic");
        }
    }
}

impl Drop for Loader {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u64) -> Vec<u8> {
        let mut key = b"t".to_vec();
        key.extend_from_slice(&i.to_be_bytes());
        key.extend_from_slice(&[7; 24]);
        key
    }

    #[test]
    fn everything_is_maybe_until_loaded() {
        let filter = KeyFilter::new();
        assert!(filter.may_contain(b"never inserted"));
        filter.set_loaded();
        assert!(!filter.may_contain(b"never inserted"));
    }

    #[test]
    fn no_inserted_key_is_ever_absent_and_few_absent_ones_are_maybe() {
        let filter = KeyFilter::new();
        filter.set_loaded();
        // Past the first segment's capacity, so that the filter grows a second one.
        let n = (FIRST_CAPACITY + FIRST_CAPACITY / 2) as u64;
        for i in 0..n {
            filter.insert(&key(i));
        }
        assert!(filter.bytes() > FIRST_CAPACITY * BITS_PER_KEY / 8);
        assert!((0..n).all(|i| filter.may_contain(&key(i))));
        let absent = 100_000;
        let maybe = (n..n + absent)
            .filter(|&i| filter.may_contain(&key(i)))
            .count();
        // About 1% per segment is expected; two segments are looked in.
        assert!(
            maybe < 5_000,
            "{maybe} of {absent} absent keys answered maybe"
        );
    }

    #[test]
    fn concurrent_inserts_lose_nothing() {
        let filter = std::sync::Arc::new(KeyFilter::new());
        filter.set_loaded();
        let per_thread = FIRST_CAPACITY as u64;
        std::thread::scope(|scope| {
            for t in 0..2u64 {
                let filter = filter.clone();
                scope.spawn(move || {
                    for i in 0..per_thread {
                        filter.insert(&key(t * per_thread + i));
                    }
                });
            }
        });
        assert!((0..2 * per_thread).all(|i| filter.may_contain(&key(i))));
    }
}

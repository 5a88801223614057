//! The digest of the whole world state, to compare peers: computed from a snapshot in
//! pages, so commits go on while it runs, and by one caller at a time, at a bounded rate,
//! so any number of concurrent requests cost the commits little ([`DigestCache`]).

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::world::Snapshot;
use super::{StoreError, keys};
use crate::ids::Seq;

/// `(height, SHA-256, keys)`: see [`digest`].
pub type StateHash = (Seq, [u8; 32], u64);

/// State records read per page (the overlay's lock is held for one page at a time).
const PAGE_RECORDS: usize = 1024;

/// A SHA-256 digest of the state `snapshot` sees, the height it is of, and the number of
/// keys: every state record, key and value (version included) with their lengths, in
/// key order. Two peers at the same height hold the same state exactly when their
/// digests are equal; it is the digest `Store::state_hash` gives of a durable state.
pub(super) fn digest(snapshot: &Snapshot) -> Result<StateHash, StoreError> {
    let mut hasher = Sha256::new();
    let mut count = 0u64;
    let mut from = keys::STATE_PREFIX.to_vec();
    loop {
        let page = snapshot.scan_state(&from, PAGE_RECORDS)?;
        let Some((last, _)) = page.last() else {
            break;
        };
        from = last.clone();
        from.push(0);
        for (key, found) in &page {
            let value = keys::encode_state_value(Seq(found.version.seq), &found.value);
            hasher.update((key.len() as u64).to_be_bytes());
            hasher.update(key);
            hasher.update((value.len() as u64).to_be_bytes());
            hasher.update(&value);
            count += 1;
        }
    }
    Ok((snapshot.height(), hasher.finalize().into(), count))
}

/// The share of one core digests may take at most: after a computation that took `d`,
/// the next starts no sooner than `d * (1 / DUTY - 1)` later.
const DUTY: f64 = 0.1;

/// The shortest time between two computations on a ledger whose height moves.
const INTERVAL_MIN: Duration = Duration::from_secs(1);

/// The last digest, and whether one is being computed.
#[derive(Debug, Default)]
struct Last {
    digest: Option<StateHash>,
    /// When the last computation ended, and the earliest the next may start.
    next_at: Option<Instant>,
    computing: bool,
    /// Counts finished computations, so that a waiter knows when its one is done.
    finished: u64,
}

/// One digest computation at a time, and few: callers that arrive while one runs share
/// its answer; a caller at a height already digested gets it at once; and on a ledger
/// whose height keeps moving, a new computation starts only once the last is at least
/// [`INTERVAL_MIN`] old and digests have used no more than [`DUTY`] of a core, so that
/// any number of callers asking in a loop cost the commits a bounded share of the
/// machine. Callers meanwhile wait for the next computation, which answers them all.
#[derive(Debug, Default)]
pub(super) struct DigestCache {
    last: Mutex<Last>,
    done: Condvar,
}

impl DigestCache {
    /// The digest at `height` (the current one), computing it with `compute` unless it
    /// is known, being computed, or due later.
    pub fn get(
        &self,
        height: Seq,
        compute: impl FnOnce() -> Result<StateHash, StoreError>,
    ) -> Result<StateHash, StoreError> {
        let lock = || self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let mut last = lock();
        loop {
            if let Some(known) = last.digest.filter(|known| known.0 == height) {
                return Ok(known);
            }
            if last.computing {
                // Share the answer of the computation under way; if it failed, try again.
                let waiting_for = last.finished;
                while last.finished == waiting_for {
                    last = self.done.wait(last).unwrap_or_else(PoisonError::into_inner);
                }
                if let Some(known) = last.digest {
                    return Ok(known);
                }
                continue;
            }
            match last.next_at {
                Some(next_at) if Instant::now() < next_at => {
                    // Not yet: wait for the next computation (started by whoever wakes
                    // first), or for the time it may start.
                    let wait = next_at.saturating_duration_since(Instant::now());
                    let waiting_for = last.finished;
                    last = self
                        .done
                        .wait_timeout(last, wait)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                    if last.finished != waiting_for
                        && let Some(known) = last.digest
                    {
                        return Ok(known);
                    }
                }
                _ => break,
            }
        }
        last.computing = true;
        drop(last);
        let started = Instant::now();
        let computed = compute();
        let took = started.elapsed();
        let mut last = lock();
        last.computing = false;
        last.finished += 1;
        last.digest = computed.as_ref().ok().copied();
        let rest = took.mul_f64(1.0 / DUTY - 1.0).max(INTERVAL_MIN);
        last.next_at = Some(Instant::now() + rest);
        self.done.notify_all();
        computed
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn concurrent_callers_share_one_computation_and_a_known_height_is_not_recomputed() {
        let cache = Arc::new(DigestCache::default());
        let runs = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (cache, runs) = (cache.clone(), runs.clone());
                std::thread::spawn(move || {
                    cache
                        .get(Seq(5), || {
                            runs.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(100));
                            Ok((Seq(5), [1; 32], 3))
                        })
                        .unwrap()
                })
            })
            .collect();
        for thread in threads {
            assert_eq!(thread.join().unwrap(), (Seq(5), [1; 32], 3));
        }
        assert_eq!(runs.load(Ordering::SeqCst), 1, "one scan for eight callers");
        // The height moved: the next computation waits for its turn, then answers.
        let asked = Instant::now();
        let again = cache.get(Seq(6), || Ok((Seq(6), [2; 32], 4))).unwrap();
        assert_eq!(again.0, Seq(6));
        assert!(
            asked.elapsed() >= INTERVAL_MIN.mul_f64(0.9),
            "not sooner than its turn"
        );
        assert_eq!(
            cache.get(Seq(6), || unreachable!()).unwrap().0,
            Seq(6),
            "known"
        );
    }
}

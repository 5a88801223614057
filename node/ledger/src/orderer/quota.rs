//! Per-submitter byte quotas: what one identity can make the orderers, and so every peer,
//! store is bounded by time, not by how fast it can send.
//!
//! Each submitter, known by its public key (never by its certificate's bytes, which can
//! be re-encoded), has a bucket of bytes that refills at
//! [`OrdererConfig::submitter_bytes_per_s_max`](super::OrdererConfig) and holds twice
//! that. A transaction admitted takes its size from its submitter's bucket; one that
//! does not fit is refused with `SUBMITTER_QUOTA_EXCEEDED` and takes nothing. A full
//! bucket takes a transaction of any size, going into debt, so that a transaction larger
//! than the bucket is still admitted once its submitter has waited long enough. Only transactions whose signatures
//! verified are charged: anyone can copy a certificate, so charging before would let
//! anyone spend another's share.
//!
//! The quota never looks at what a transaction does, and never remembers more than
//! [`QUOTA_SUBMITTERS_MAX`] submitters: a full bucket says nothing, so those go first.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use super::OrderError;

/// Submitters whose buckets are remembered at most (about 64 bytes each). Past it, full
/// buckets are forgotten, then all: a forgotten submitter starts again with a full one.
pub const QUOTA_SUBMITTERS_MAX: usize = 1 << 16;

/// One submitter's bytes available, as of a time.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    bytes: f64,
    at_us: u64,
}

/// Every submitter's bucket.
#[derive(Debug)]
pub struct Quotas {
    rate_bytes_per_s: u64,
    burst_bytes: f64,
    buckets: Mutex<HashMap<[u8; 32], Bucket>>,
}

impl Quotas {
    /// Buckets refilling at `rate_bytes_per_s` and holding twice that.
    pub fn new(rate_bytes_per_s: u64) -> Quotas {
        let burst = rate_bytes_per_s.saturating_mul(2).max(1);
        Quotas {
            rate_bytes_per_s,
            burst_bytes: burst as f64,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes `bytes` from `key`'s bucket at `now_us`, or refuses them (taking nothing)
    /// with [`OrderError::QuotaExceeded`] naming `who`.
    pub fn take(
        &self,
        key: &[u8; 32],
        bytes: usize,
        now_us: u64,
        who: impl FnOnce() -> String,
    ) -> Result<(), OrderError> {
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        if buckets.len() >= QUOTA_SUBMITTERS_MAX && !buckets.contains_key(key) {
            let (rate, burst) = (self.rate_bytes_per_s as f64, self.burst_bytes);
            buckets.retain(|_, bucket| level(*bucket, now_us, rate, burst) < burst);
            if buckets.len() >= QUOTA_SUBMITTERS_MAX {
                buckets.clear();
            }
        }
        let bucket = buckets.entry(*key).or_insert(Bucket {
            bytes: self.burst_bytes,
            at_us: now_us,
        });
        let available = level(
            *bucket,
            now_us,
            self.rate_bytes_per_s as f64,
            self.burst_bytes,
        );
        let wanted = bytes as f64;
        if wanted > available && available < self.burst_bytes {
            let missing = wanted - available;
            let retry_ms = if self.rate_bytes_per_s == 0 {
                u64::MAX
            } else {
                (missing * 1000.0 / self.rate_bytes_per_s as f64).ceil() as u64
            };
            return Err(OrderError::QuotaExceeded {
                submitter: who(),
                size_bytes: bytes,
                rate_bytes_per_s: self.rate_bytes_per_s,
                retry_ms,
            });
        }
        *bucket = Bucket {
            bytes: available - wanted,
            at_us: now_us.max(bucket.at_us),
        };
        Ok(())
    }
}

/// A bucket's bytes at `now_us`: refilled at `rate` bytes a second since it was last
/// charged, up to `burst`.
fn level(bucket: Bucket, now_us: u64, rate: f64, burst: f64) -> f64 {
    let elapsed_s = now_us.saturating_sub(bucket.at_us) as f64 / 1e6;
    (bucket.bytes + elapsed_s * rate).min(burst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_submitter_spends_its_burst_then_its_rate_and_others_are_untouched() {
        // 1,000 bytes a second, 2,000 at once.
        let quotas = Quotas::new(1_000);
        let (alice, bob) = ([1; 32], [2; 32]);
        quotas.take(&alice, 1_500, 0, || "alice".into()).unwrap();
        let refused = quotas.take(&alice, 600, 0, || "alice".into()).unwrap_err();
        assert_eq!(refused.code(), "SUBMITTER_QUOTA_EXCEEDED");
        assert!(
            matches!(refused, OrderError::QuotaExceeded { retry_ms: 100, .. }),
            "{refused:?}"
        );
        // Refused bytes are not taken: 500 still fit.
        quotas.take(&alice, 500, 0, || "alice".into()).unwrap();
        // Bob's share is his own.
        quotas.take(&bob, 2_000, 0, || "bob".into()).unwrap();
        // Half a second refills 500 bytes, never past the burst.
        quotas
            .take(&alice, 500, 500_000, || "alice".into())
            .unwrap();
        assert!(quotas.take(&alice, 1, 500_000, || "alice".into()).is_err());
        quotas
            .take(&alice, 2_000, 100_000_000, || "alice".into())
            .unwrap();
        // A full bucket takes more than it holds, then nothing until it refills.
        quotas
            .take(&alice, 5_000, 200_000_000, || "alice".into())
            .unwrap();
        assert!(
            quotas
                .take(&alice, 1, 200_000_000, || "alice".into())
                .is_err()
        );
    }

    #[test]
    fn a_full_bucket_takes_a_transaction_larger_than_itself_and_then_waits() {
        // 10 bytes a second, 20 at once: 50 bytes leave a debt of 30, repaid in 3 s.
        let quotas = Quotas::new(10);
        let carol = [3; 32];
        quotas.take(&carol, 50, 0, || "carol".into()).unwrap();
        assert!(
            quotas
                .take(&carol, 1, 2_000_000, || "carol".into())
                .is_err()
        );
        quotas
            .take(&carol, 1, 3_100_000, || "carol".into())
            .unwrap();
    }
}

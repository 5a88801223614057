//! Figures the ledger records about itself, as plain numbers: no exporter, no registry.
//!
//! The ledger fills [`Histogram`]s on its hot paths (one atomic add per bucket hit);
//! whoever embeds it reads them with [`Histogram::snapshot`] and exports them as it likes
//! (the node's server turns them into Prometheus histograms).

use std::sync::atomic::{AtomicU64, Ordering};

/// A histogram with fixed, exponential bucket bounds, safe to fill from many threads.
#[derive(Debug)]
pub struct Histogram {
    /// Upper bounds of the buckets, increasing; a last, unbounded bucket follows.
    bounds: Vec<f64>,
    /// Observations per bucket (not cumulative); `bounds.len() + 1` of them.
    counts: Vec<AtomicU64>,
    /// Sum of the observations, in nanounits (an `f64` sum cannot be added atomically).
    sum_nanos: AtomicU64,
}

/// A histogram's figures at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSnapshot {
    /// `(upper bound, observations in that bucket)`, non-cumulative; the last bound is
    /// `f64::INFINITY`.
    pub buckets: Vec<(f64, u64)>,
    /// Observations in all.
    pub count: u64,
    /// Sum of the observations.
    pub sum: f64,
}

impl Histogram {
    /// Buckets with upper bounds `start`, `start * factor`, ... (`count` of them), then
    /// one unbounded bucket.
    pub fn exponential(start: f64, factor: f64, count: usize) -> Histogram {
        let mut bounds = Vec::with_capacity(count);
        let mut bound = start;
        for _ in 0..count {
            bounds.push(bound);
            bound *= factor;
        }
        let counts = (0..=count).map(|_| AtomicU64::new(0)).collect();
        Histogram {
            bounds,
            counts,
            sum_nanos: AtomicU64::new(0),
        }
    }

    /// Durations of a flush to disk, in seconds: 50 µs to about 1.6 s, doubling.
    pub fn flush_seconds() -> Histogram {
        Histogram::exponential(50e-6, 2.0, 16)
    }

    /// Records one observation (negative and NaN values count as zero).
    pub fn observe(&self, value: f64) {
        let value = if value.is_nan() { 0.0 } else { value.max(0.0) };
        let bucket = self.bounds.partition_point(|&bound| bound < value);
        self.counts[bucket].fetch_add(1, Ordering::Relaxed);
        self.sum_nanos
            .fetch_add((value * 1e9) as u64, Ordering::Relaxed);
    }

    /// The figures now. Concurrent observations may land in the buckets and not yet in
    /// the sum, or the other way round: each figure is exact on its own.
    pub fn snapshot(&self) -> HistogramSnapshot {
        let bounds = self.bounds.iter().copied().chain([f64::INFINITY]);
        let buckets: Vec<(f64, u64)> = bounds
            .zip(&self.counts)
            .map(|(bound, count)| (bound, count.load(Ordering::Relaxed)))
            .collect();
        HistogramSnapshot {
            count: buckets.iter().map(|&(_, count)| count).sum(),
            buckets,
            sum: self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_land_in_the_first_bucket_whose_bound_holds_them() {
        let histogram = Histogram::exponential(1.0, 2.0, 3); // 1, 2, 4, +inf
        for value in [0.5, 1.0, 1.5, 4.0, 9.0, f64::NAN, -3.0] {
            histogram.observe(value);
        }
        let snapshot = histogram.snapshot();
        let counts: Vec<u64> = snapshot.buckets.iter().map(|&(_, c)| c).collect();
        assert_eq!(counts, [4, 1, 1, 1]);
        assert_eq!(snapshot.count, 7);
        assert!((snapshot.sum - 16.0).abs() < 1e-6);
        assert_eq!(snapshot.buckets[3].0, f64::INFINITY);
    }
}

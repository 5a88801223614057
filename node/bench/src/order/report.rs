//! What a run of `runnel bench order` reports: sealed transactions a second at the
//! slowest receiver (the median of the measured seconds), submit → sealed-at-receiver
//! latency, bytes a second, and CPU per transaction of each process on this machine.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::receive::Received;
use crate::record::{nearest_rank, percentiles};

/// Microseconds per second.
const US: u64 = 1_000_000;

/// The measured part of a run: from the end of the warm-up to the last submit, µs since
/// the start.
#[derive(Debug, Clone, Copy)]
pub(super) struct Window {
    pub from_us: u64,
    pub to_us: u64,
}

impl Window {
    fn contains(&self, us: u64) -> bool {
        self.from_us <= us && us < self.to_us
    }

    fn seconds(&self) -> f64 {
        self.to_us.saturating_sub(self.from_us) as f64 / US as f64
    }

    /// The whole seconds inside it, as second numbers since the start.
    fn whole_seconds(&self) -> std::ops::Range<u64> {
        self.from_us.div_ceil(US)..self.to_us / US
    }
}

/// Transactions sealed in each whole second of `window`, and in all of it.
fn per_second(received: &Received, window: Window) -> (Vec<u64>, u64) {
    let seconds = window.whole_seconds();
    let mut counts = vec![0u64; seconds.end.saturating_sub(seconds.start) as usize];
    let mut total = 0;
    for seal in &received.seals {
        let count = seal.last - seal.first + 1;
        if window.contains(seal.at_us) {
            total += count;
        }
        let second = seal.at_us / US;
        if seconds.contains(&second) {
            counts[(second - seconds.start) as usize] += count;
        }
    }
    (counts, total)
}

/// Of each receiver, how many of the run's own transactions (`ordered`: their seqs,
/// sorted) its seals covered, over the whole run.
fn delivered(received: &Received, ordered: &[u64]) -> u64 {
    received
        .seals
        .iter()
        .map(|seal| {
            let from = ordered.partition_point(|&seq| seq < seal.first);
            let to = ordered.partition_point(|&seq| seq <= seal.last);
            (to - from) as u64
        })
        .sum()
}

/// Submit → sealed at each receiver, µs, of the transactions sent inside `window`.
fn latencies(receivers: &[Received], sent_us: &HashMap<u64, u64>, window: Window) -> Vec<u64> {
    let mut out = Vec::new();
    for received in receivers {
        for seal in &received.seals {
            for seq in seal.first..=seal.last {
                if let Some(&sent) = sent_us.get(&seq).filter(|&&sent| window.contains(sent)) {
                    out.push(seal.at_us.saturating_sub(sent));
                }
            }
        }
    }
    out
}

/// What the receivers saw, as the summary's figures: `sent_us` maps each of the run's
/// transactions that was ordered from its seq to when it was sent; `tx_bytes` is the
/// mean encoded transaction.
pub(super) fn delivery(
    receivers: &[Received],
    sent_us: &HashMap<u64, u64>,
    window: Window,
    tx_bytes: f64,
) -> (Value, f64) {
    let mut ordered: Vec<u64> = sent_us.keys().copied().collect();
    ordered.sort_unstable();
    let counted: Vec<(Vec<u64>, u64)> = receivers.iter().map(|r| per_second(r, window)).collect();
    let slowest = counted
        .iter()
        .enumerate()
        .min_by_key(|(_, (_, total))| *total)
        .map_or(0, |(i, _)| i);
    let (seconds, total) = counted.get(slowest).cloned().unwrap_or_default();
    let mut sorted = seconds.clone();
    sorted.sort_unstable();
    // Under a second measured there is no whole second: the mean stands in.
    let mean = total as f64 / window.seconds().max(f64::MIN_POSITIVE);
    let median = nearest_rank(&sorted, 0.5).map_or(mean, |v| v as f64);
    let figures = json!({
        "per_second_slowest": median,
        "per_second_slowest_min": sorted.first(),
        "per_second_slowest_max": sorted.last(),
        "seconds_slowest": seconds,
        "mean_per_second_slowest": mean,
        "bytes_per_second_slowest": median * tx_bytes,
        "slowest_receiver": slowest,
        "sealed_in_window": counted.iter().map(|(_, total)| total).collect::<Vec<_>>(),
        "delivered": receivers.iter().map(|r| delivered(r, &ordered)).collect::<Vec<_>>(),
        "seals": receivers.iter().map(|r| r.seals.len()).collect::<Vec<_>>(),
        "bytes_received": receivers.iter().map(|r| r.tx_bytes).collect::<Vec<_>>(),
        "latency_us": {"submit_to_sealed": percentiles(latencies(receivers, sent_us, window))},
    });
    (figures, total as f64)
}

/// The summary in a few lines.
pub(super) fn text(summary: &Value) -> String {
    let d = &summary["delivery"];
    let l = &d["latency_us"]["submit_to_sealed"];
    let ms = |v: &Value| {
        v.as_u64()
            .map_or("-".to_string(), |us| format!("{:.2}", us as f64 / 1e3))
    };
    let mut out = format!(
        "{} ordering, {} orderers, {} B payload ({:.0} B a transaction), {} receiver(s), {:.1} s measured\n\
         sealed at the slowest receiver: {:.0} tx/s (median of its seconds; {}-{}), {:.1} MB/s\n\
         submit -> sealed at a receiver (ms): p50 {} p99 {} max {}\n\
         sent {}, ordered {}, refused {}; delivered per receiver {}\n",
        summary["ordering"].as_str().unwrap_or("?"),
        summary["orderers"],
        summary["payload_bytes"],
        summary["tx_bytes"].as_f64().unwrap_or(0.0),
        summary["receivers"],
        summary["measured_seconds"].as_f64().unwrap_or(0.0),
        d["per_second_slowest"].as_f64().unwrap_or(0.0),
        d["per_second_slowest_min"],
        d["per_second_slowest_max"],
        d["bytes_per_second_slowest"].as_f64().unwrap_or(0.0) / 1e6,
        ms(&l["p50"]),
        ms(&l["p99"]),
        ms(&l["max"]),
        summary["transactions"]["sent"],
        summary["transactions"]["ordered"],
        summary["transactions"]["refused"],
        d["delivered"],
    );
    if let Some(cpu) = summary["cpu_us_per_tx"].as_object() {
        let parts: Vec<String> = cpu
            .iter()
            .map(|(name, us)| format!("{name} {:.0}", us.as_f64().unwrap_or(0.0)))
            .collect();
        out.push_str(&format!("CPU per sealed tx (µs): {}\n", parts.join(", ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::receive::Sealed;
    use super::*;

    fn seal(at_s: f64, first: u64, last: u64) -> Sealed {
        Sealed {
            at_us: (at_s * US as f64) as u64,
            first,
            last,
        }
    }

    #[test]
    fn the_slowest_receiver_sets_the_rate_and_every_receiver_counts_the_runs_own() {
        let window = Window {
            from_us: US,
            to_us: 4 * US,
        };
        let fast = Received {
            seals: vec![
                seal(0.5, 1, 10),
                seal(1.5, 11, 110),
                seal(2.5, 111, 210),
                seal(3.5, 211, 310),
            ],
            tx_bytes: 0,
        };
        let slow = Received {
            seals: vec![
                seal(1.5, 1, 60),
                seal(2.5, 61, 110),
                seal(3.5, 111, 160),
                seal(4.5, 161, 310),
            ],
            tx_bytes: 0,
        };
        // The run's own: seqs 11 to 310, each sent at 1.2 s.
        let sent: HashMap<u64, u64> = (11..=310).map(|seq| (seq, 1_200_000)).collect();
        let (figures, total) = delivery(&[fast, slow], &sent, window, 100.0);
        assert_eq!(figures["slowest_receiver"], 1);
        assert_eq!(total, 160.0);
        assert_eq!(figures["seconds_slowest"], json!([60, 50, 50]));
        assert_eq!(figures["per_second_slowest"], 50.0);
        assert_eq!(figures["bytes_per_second_slowest"], 5000.0);
        assert_eq!(figures["delivered"], json!([300, 300]));
        // 150 each sealed 0.3, 1.3, 2.3 and 3.3 s after they were sent.
        assert_eq!(
            figures["latency_us"]["submit_to_sealed"]["p50"].as_u64(),
            Some(1_300_000)
        );
    }
}

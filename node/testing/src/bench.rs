//! What the end-to-end benches share: latency percentiles and the progress of a
//! closed-loop throughput run.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

/// Prints the percentiles of `latencies` on one line; returns the median.
pub fn report(name: &str, mut latencies: Vec<Duration>) -> Duration {
    if latencies.is_empty() {
        println!("{name:<34} n=0");
        return Duration::ZERO;
    }
    latencies.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let p50 = percentile(&latencies, 0.5);
    println!(
        "{name:<34} n={:<6} p50 {:>8.3} ms  p90 {:>8.3} ms  p99 {:>8.3} ms  max {:>8.3} ms",
        latencies.len(),
        ms(p50),
        ms(percentile(&latencies, 0.9)),
        ms(percentile(&latencies, 0.99)),
        ms(*latencies.last().expect("some"))
    );
    p50
}

/// Waits `seconds` while clients count what they complete in `done`, printing the rate
/// every 10 s; returns the time taken and the count at the end.
pub fn watch(seconds: u64, done: &AtomicU64) -> (Duration, u64) {
    let start = Instant::now();
    let mut last = 0;
    for second in 1..=seconds {
        std::thread::sleep(Duration::from_secs(second).saturating_sub(start.elapsed()));
        let now = done.load(Ordering::Relaxed);
        if second % 10 == 0 || second == seconds {
            println!("  t={second:>3}s  {:>7} tx/s", now - last);
        }
        last = now;
    }
    (start.elapsed(), done.load(Ordering::Relaxed))
}

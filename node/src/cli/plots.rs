//! The plots `runnel bench` writes: plain SVG line charts, readable in any browser.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

use super::bench::Sample;

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 360.0;
const MARGIN: f64 = 56.0;

/// A line chart of `points` (x, y) with axis labels, as SVG.
fn chart(title: &str, x_label: &str, y_label: &str, points: &[(f64, f64)], log_x: bool) -> String {
    let fx = |x: f64| if log_x { x.max(1e-3).log10() } else { x };
    let (mut x_min, mut x_max, mut y_max) = (f64::MAX, f64::MIN, 0.0f64);
    for &(x, y) in points {
        x_min = x_min.min(fx(x));
        x_max = x_max.max(fx(x));
        y_max = y_max.max(y);
    }
    if points.is_empty() {
        (x_min, x_max, y_max) = (0.0, 1.0, 1.0);
    }
    if x_max <= x_min {
        x_max = x_min + 1.0;
    }
    let y_max = if y_max > 0.0 { y_max * 1.05 } else { 1.0 };
    let (w, h) = (WIDTH - 2.0 * MARGIN, HEIGHT - 2.0 * MARGIN);
    let px = |x: f64| MARGIN + (fx(x) - x_min) / (x_max - x_min) * w;
    let py = |y: f64| HEIGHT - MARGIN - y / y_max * h;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{}\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">{title}</text>\n\
         <line x1=\"{MARGIN}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n\
         <line x1=\"{MARGIN}\" y1=\"{MARGIN}\" x2=\"{MARGIN}\" y2=\"{}\" stroke=\"black\"/>\n\
         <text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{x_label}</text>\n\
         <text x=\"16\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {})\">{y_label}</text>\n",
        WIDTH / 2.0,
        HEIGHT - MARGIN,
        WIDTH - MARGIN,
        HEIGHT - MARGIN,
        HEIGHT - MARGIN,
        WIDTH / 2.0,
        HEIGHT - 16.0,
        HEIGHT / 2.0,
        HEIGHT / 2.0,
    );
    for i in 0..=4 {
        let y = y_max * f64::from(i) / 4.0;
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            MARGIN - 6.0,
            py(y) + 4.0,
            short(y)
        );
        let raw = x_min + (x_max - x_min) * f64::from(i) / 4.0;
        let x = if log_x { 10f64.powf(raw) } else { raw };
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            MARGIN + w * f64::from(i) / 4.0,
            HEIGHT - MARGIN + 16.0,
            short(x)
        );
    }
    let path: Vec<String> = points
        .iter()
        .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
        .collect();
    let _ = writeln!(
        svg,
        "<polyline fill=\"none\" stroke=\"#2563eb\" stroke-width=\"2\" points=\"{}\"/>\n</svg>",
        path.join(" ")
    );
    svg
}

/// A number in few characters: 1234 -> "1.2k", 0.25 -> "0.25".
fn short(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{:.0}k", v / 1e3)
    } else if v >= 1_000.0 {
        format!("{:.1}k", v / 1e3)
    } else if v >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// The distribution of submit -> durable latency of the measured, committed transactions.
pub fn latency_cdf(path: &Path, samples: &[Sample], measured_from: u64) -> Result<()> {
    let mut ms: Vec<f64> = samples
        .iter()
        .filter(|s| s.sent_us >= measured_from && s.committed_us > 0)
        .map(|s| (s.committed_us - s.sent_us) as f64 / 1e3)
        .collect();
    ms.sort_by(f64::total_cmp);
    let n = ms.len().max(1) as f64;
    // At most ~500 points: enough for the curve, small enough for the file.
    let step = (ms.len() / 500).max(1);
    let mut points: Vec<(f64, f64)> = ms
        .iter()
        .enumerate()
        .step_by(step)
        .map(|(i, &v)| (v, (i + 1) as f64 / n * 100.0))
        .collect();
    if let Some(&last) = ms.last() {
        points.push((last, 100.0));
    }
    let svg = chart(
        "submit → durable latency (CDF)",
        "latency, ms (log scale)",
        "% of transactions",
        &points,
        true,
    );
    std::fs::write(path, svg).with_context(|| format!("writing {}", path.display()))
}

/// Committed transactions per second over the run, by the second they committed in.
pub fn throughput(path: &Path, samples: &[Sample], start_us: u64, end_us: u64) -> Result<()> {
    let seconds = (end_us.saturating_sub(start_us) / 1_000_000 + 1) as usize;
    let mut per_second = vec![0u64; seconds];
    for s in samples.iter().filter(|s| s.committed_us > 0) {
        let at = (s.committed_us.saturating_sub(start_us) / 1_000_000) as usize;
        if let Some(count) = per_second.get_mut(at) {
            *count += 1;
        }
    }
    let points: Vec<(f64, f64)> = per_second
        .iter()
        .enumerate()
        .map(|(i, &c)| (i as f64 + 0.5, c as f64))
        .collect();
    let svg = chart(
        "committed transactions per second",
        "seconds into the run",
        "tx/s",
        &points,
        false,
    );
    std::fs::write(path, svg).with_context(|| format!("writing {}", path.display()))
}

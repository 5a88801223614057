//! The plots of the load generator, as SVG line charts drawn with `plotters`: each run's
//! latency distribution and throughput over time (`runnel bench`), a run's timeline around
//! an event (`runnel bench stall`), and a sweep's latency against throughput
//! (scripts/bench-sweep.sh).
//!
//! Plots only read what a run measured or a sweep wrote; they never change a figure.
//! Text is left to whatever shows the file: the SVG backend writes `<text>` elements and
//! plotters only estimates their size, so drawing needs no font files or font libraries.

use std::io::Read as _;
use std::path::Path;

use anyhow::{Context, Result, ensure};
use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use serde_json::Value;

use crate::record::{Sample, nearest_rank};

/// A run's plots, pixels (width, height).
const RUN_PLOT_PX: (u32, u32) = (720, 360);
/// The sweep's plot, pixels (width, height).
const SWEEP_PLOT_PX: (u32, u32) = (640, 400);
/// Points the CDF is drawn through at most: enough for the curve, small enough for the
/// file.
const CDF_POINTS_MAX: usize = 500;
/// Throughput buckets at most: a run longer than this many seconds gets buckets of
/// several seconds, so memory and file stay bounded whatever the timestamps say.
const THROUGHPUT_BUCKETS_MAX: u64 = 2_000;
/// The throughput plot's bucket, µs: a second.
const THROUGHPUT_BUCKET_US: u64 = 1_000_000;
/// The timeline, pixels (width, height): two panels of a run's plot's size, one above
/// the other.
const TIMELINE_PLOT_PX: (u32, u32) = (RUN_PLOT_PX.0, RUN_PLOT_PX.1 * 2);
/// The timeline's bucket, µs: fine enough to see a stall of a few hundred ms.
const TIMELINE_BUCKET_US: u64 = 100_000;
/// Timeline buckets at most: a run over 200 s gets buckets of several times 100 ms.
const TIMELINE_BUCKETS_MAX: u64 = 2_000;
/// The event marker's label, pixels: its font size and its offset from the line's top.
const MARK_LABEL_PX: (u32, i32) = (13, 4);
/// The smallest latency a log axis shows, ms (1 µs): a zero has no place on it.
const LATENCY_MS_MIN: f64 = 1e-3;
/// The sweep plot's latency axis covers at least these decades, ms, so that sweeps compare
/// at a glance; it widens to fit points outside.
const SWEEP_LATENCY_MS_RANGE: (f64, f64) = (0.1, 10_000.0);
/// The largest summary.json read, bytes (a run's is a few kB).
const SUMMARY_BYTES_MAX: u64 = 1 << 20;

/// The workload whose runs make the sweep plot, as scripts/bench-sweep.sh names them.
const SWEEP_WORKLOAD: &str = "kv-insert";
/// Client counts of the sweep's points, in the order a series' line joins them.
const SWEEP_CLIENTS: [u64; 4] = [1, 4, 16, 64];
/// The sweep's ordering modes: the name its run directories start with, the legend's
/// name and the colour.
const SWEEP_MODES: [(&str, &str, RGBColor); 3] = [
    ("streaming", "streaming", RGBColor(0x1f, 0x77, 0xb4)),
    ("blocks10", "blocks (10, 2 s)", RGBColor(0xd6, 0x27, 0x28)),
    ("blocks100", "blocks (100, 2 s)", RGBColor(0xff, 0x7f, 0x0e)),
];
/// Colours of series the sweep does not name, in turn.
const OTHER_COLOURS: [RGBColor; 4] = [
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0x7f, 0x7f, 0x7f),
];
/// A run's single line (on the timeline: commits, and each bucket's p99).
const RUN_COLOUR: RGBColor = RGBColor(0x25, 0x63, 0xeb);
/// The timeline's maximum latency.
const MAX_COLOUR: RGBColor = RGBColor(0xff, 0x7f, 0x0e);
/// The timeline's failed calls.
const FAILED_COLOUR: RGBColor = RGBColor(0xd6, 0x27, 0x28);
/// The event marker.
const MARK_COLOUR: RGBColor = RGBColor(0x44, 0x44, 0x44);

/// The distribution of submit → durable latency of the transactions sent from
/// `measured_from` (Unix µs, the end of the warm-up) that committed: an SVG line chart of
/// the share of transactions against latency in ms, on a log axis. The legend gives the
/// count, p50 and p99 (the summary's percentiles).
pub fn latency_cdf(path: &Path, samples: &[Sample], measured_from: u64) -> Result<()> {
    let mut ms: Vec<f64> = samples
        .iter()
        .filter(|s| s.sent_us >= measured_from && s.committed_us > 0)
        .map(|s| (s.committed_us.saturating_sub(s.sent_us) as f64 / 1e3).max(LATENCY_MS_MIN))
        .collect();
    ms.sort_by(f64::total_cmp);
    let label = match (nearest_rank(&ms, 0.5), nearest_rank(&ms, 0.99)) {
        (Some(p50), Some(p99)) => format!(
            "{} committed: p50 {} ms, p99 {} ms",
            ms.len(),
            short(p50),
            short(p99)
        ),
        _ => "no committed transactions".to_owned(),
    };
    let n = ms.len() as f64;
    let step = ms.len().div_ceil(CDF_POINTS_MAX).max(1);
    let mut points: Vec<(f64, f64)> = ms
        .iter()
        .enumerate()
        .step_by(step)
        .map(|(i, &v)| (v, (i + 1) as f64 / n * 100.0))
        .collect();
    if let Some(&last) = ms.last() {
        points.push((last, 100.0));
    }
    let (lo, hi) = decades(
        ms.first().copied().unwrap_or(1.0),
        ms.last().copied().unwrap_or(1.0),
    );
    let svg = render(
        &Frame {
            size: RUN_PLOT_PX,
            caption: "submit → durable latency (CDF)",
            x_desc: "latency, ms (log scale)",
            y_desc: "% of transactions",
            legend: SeriesLabelPosition::LowerRight,
        },
        (lo..hi).log_scale(),
        0.0..100.0,
        &[Series {
            label,
            colour: RUN_COLOUR,
            points,
            markers: false,
            join_within: None,
        }],
    )?;
    write(path, &svg)
}

/// Committed transactions per second over the run from `start_us` to `end_us` (Unix
/// µs), warm-up included: an SVG line chart of commits by the second they committed in,
/// the last second running to the end (a run over 2,000 s gets buckets of several
/// seconds).
pub fn throughput(path: &Path, samples: &[Sample], start_us: u64, end_us: u64) -> Result<()> {
    let buckets = Buckets::new(
        start_us,
        end_us,
        THROUGHPUT_BUCKET_US,
        THROUGHPUT_BUCKETS_MAX,
    );
    let mut counts = vec![0u64; buckets.len()];
    let mut committed = 0u64;
    for s in samples
        .iter()
        .filter(|s| s.committed_us > 0 && s.committed_us <= end_us)
    {
        if let Some(count) = counts.get_mut(buckets.of(s.committed_us)) {
            *count += 1;
            committed += 1;
        }
    }
    let points = buckets.rates(&counts);
    let y_max = points.iter().map(|&(_, y)| y).fold(0.0, f64::max);
    let bucket_s = buckets.width_us / THROUGHPUT_BUCKET_US;
    let label = if bucket_s == 1 {
        format!("{committed} committed, by the second")
    } else {
        format!("{committed} committed, by {bucket_s} s")
    };
    let svg = render(
        &THROUGHPUT_FRAME,
        0.0..buckets.run_s(),
        0.0..if y_max > 0.0 { y_max * 1.05 } else { 1.0 },
        &[Series {
            label,
            colour: RUN_COLOUR,
            points,
            markers: false,
            join_within: None,
        }],
    )?;
    write(path, &svg)
}

/// A run's timeline around an event at `at_us`, from `start_us` to `end_us` (Unix µs):
/// two panels sharing the x axis, seconds into the run, with a vertical line labelled
/// `label` at the event in both. On top, committed transactions per second by the bucket
/// they committed in, and (when any call failed) failed calls per second by the bucket
/// they failed in; below, the p99 and max submit → durable latency of the transactions
/// that committed in each bucket (ms, log axis), with no line through buckets where none
/// did. Buckets are 100 ms, or a multiple for runs over 200 s (at most
/// [`TIMELINE_BUCKETS_MAX`]); the last runs to the end.
pub fn timeline(
    path: &Path,
    samples: &[Sample],
    (start_us, end_us): (u64, u64),
    at_us: u64,
    label: &str,
) -> Result<()> {
    let buckets = Buckets::new(start_us, end_us, TIMELINE_BUCKET_US, TIMELINE_BUCKETS_MAX);
    let mut committed = vec![0u64; buckets.len()];
    let mut failed = vec![0u64; buckets.len()];
    let mut latencies: Vec<Vec<u64>> = vec![Vec::new(); buckets.len()];
    for s in samples {
        if s.committed_us > 0 && s.committed_us <= end_us {
            let i = buckets.of(s.committed_us);
            if let (Some(count), Some(bucket)) = (committed.get_mut(i), latencies.get_mut(i)) {
                *count += 1;
                bucket.push(s.committed_us.saturating_sub(s.sent_us));
            }
        } else if s.failed_us > 0
            && s.failed_us <= end_us
            && let Some(count) = failed.get_mut(buckets.of(s.failed_us))
        {
            *count += 1;
        }
    }
    let width = if buckets.width_us < 1_000_000 {
        format!("{} ms", buckets.width_us / 1_000)
    } else {
        format!("{} s", short(buckets.width_us as f64 / 1e6))
    };
    let mut rates = vec![Series {
        label: format!("{} committed, by {width}", committed.iter().sum::<u64>()),
        colour: RUN_COLOUR,
        points: buckets.rates(&committed),
        markers: false,
        join_within: None,
    }];
    let failures = failed.iter().sum::<u64>();
    if failures > 0 {
        rates.push(Series {
            label: format!("{failures} failed, by when they failed"),
            colour: FAILED_COLOUR,
            points: buckets.rates(&failed),
            markers: false,
            join_within: None,
        });
    }
    let (mut p99, mut max) = (Vec::new(), Vec::new());
    for (i, bucket) in latencies.iter_mut().enumerate() {
        bucket.sort_unstable();
        let (Some(q), Some(&top)) = (nearest_rank(bucket, 0.99), bucket.last()) else {
            continue;
        };
        let (mid_s, _) = buckets.span_s(i);
        let ms = |us: u64| (us as f64 / 1e3).max(LATENCY_MS_MIN);
        p99.push((mid_s, ms(q)));
        max.push((mid_s, ms(top)));
    }
    // Neighbouring buckets' middles are a bucket apart (the last's up to 1.25): further
    // apart, buckets without a commit lie between.
    let join_within = Some(buckets.width_us as f64 / 1e6 * 1.5);
    let (lo, hi) = decades(
        p99.iter().map(|&(_, y)| y).reduce(f64::min).unwrap_or(1.0),
        max.iter().map(|&(_, y)| y).reduce(f64::max).unwrap_or(1.0),
    );
    let latency = [
        Series {
            label: format!("p99 of each {width}"),
            colour: RUN_COLOUR,
            points: p99,
            markers: false,
            join_within,
        },
        Series {
            label: "max".to_owned(),
            colour: MAX_COLOUR,
            points: max,
            markers: false,
            join_within,
        },
    ];
    let y_max = rates
        .iter()
        .flat_map(|s| s.points.iter().map(|&(_, y)| y))
        .fold(0.0, f64::max);
    let x = 0.0..buckets.run_s();
    let mark = Mark {
        x: (i128::from(at_us) - i128::from(start_us)) as f64 / 1e6,
        label,
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, TIMELINE_PLOT_PX).into_drawing_area();
        root.fill(&WHITE)?;
        let (top, bottom) = root.split_vertically(TIMELINE_PLOT_PX.1 / 2);
        chart(
            &top,
            &THROUGHPUT_FRAME,
            x.clone(),
            0.0..if y_max > 0.0 { y_max * 1.05 } else { 1.0 },
            &rates,
            Some(&mark),
        )?;
        chart(
            &bottom,
            &Frame {
                size: RUN_PLOT_PX,
                caption: "submit → durable latency, by commit time",
                x_desc: "seconds into the run",
                y_desc: "ms (log scale)",
                legend: SeriesLabelPosition::UpperRight,
            },
            x,
            (lo..hi).log_scale(),
            &latency,
            Some(&Mark { label: "", ..mark }),
        )?;
        root.present()?;
    }
    write(path, &svg)
}

/// Equal time buckets over a run, for the plots by time: `step_us` wide, or the smallest
/// whole multiple of it that keeps them to `max`, so memory and file stay bounded
/// whatever the timestamps say. A tail shorter than half a bucket joins the bucket
/// before: no dip at the end of a run.
struct Buckets {
    /// Where the first starts, Unix µs.
    start_us: u64,
    /// The run's length, µs (at least 1).
    run_us: u64,
    /// Each one's width, µs (the last runs to the end).
    width_us: u64,
    /// How many: from 1 to the `max` asked for, so a `usize`.
    count: u64,
}

impl Buckets {
    /// The buckets of the run from `start_us` to `end_us` (Unix µs; an end before the
    /// start is a run of 1 µs), `step_us` wide or a multiple, `max` at most.
    fn new(start_us: u64, end_us: u64, step_us: u64, max: u64) -> Buckets {
        let run_us = end_us.saturating_sub(start_us).max(1);
        let step_us = step_us.max(1);
        let width_us = step_us.saturating_mul(run_us.div_ceil(step_us).div_ceil(max.max(1)).max(1));
        let count = (run_us / width_us + u64::from(run_us % width_us >= width_us / 2)).max(1);
        Buckets {
            start_us,
            run_us,
            width_us,
            count,
        }
    }

    /// How many.
    fn len(&self) -> usize {
        self.count as usize
    }

    /// The bucket of time `at_us`: before the start, the first; after the end, the last.
    fn of(&self, at_us: u64) -> usize {
        (at_us.saturating_sub(self.start_us) / self.width_us).min(self.count - 1) as usize
    }

    /// The run's length, seconds: at least one, so that a run of no time gets an axis.
    fn run_s(&self) -> f64 {
        (self.run_us as f64 / 1e6).max(1.0)
    }

    /// Bucket `i`'s middle, seconds into the run, and its length, seconds.
    fn span_s(&self, i: usize) -> (f64, f64) {
        let i = i as u64;
        let from_us = i.saturating_mul(self.width_us);
        let to_us = if i + 1 >= self.count {
            self.run_us
        } else {
            from_us.saturating_add(self.width_us)
        };
        let seconds = to_us.saturating_sub(from_us).max(1) as f64 / 1e6;
        ((from_us as f64 + to_us as f64) / 2e6, seconds)
    }

    /// Each bucket's count a second, at its middle.
    fn rates(&self, counts: &[u64]) -> Vec<(f64, f64)> {
        counts
            .iter()
            .enumerate()
            .map(|(i, &count)| {
                let (mid_s, seconds) = self.span_s(i);
                (mid_s, count as f64 / seconds)
            })
            .collect()
    }
}

/// One run of a sweep, as its summary.json tells it: a point of the latency-throughput
/// plot.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPoint {
    /// The series: the ordering mode as the sweep names it (`streaming`, `blocks10`,
    /// `blocks100`); any other name is drawn under itself.
    pub mode: String,
    /// Closed-loop clients (`clients`).
    pub clients: u64,
    /// Committed transactions per second (`transactions.committed_per_second`); None
    /// when the run measured no time.
    pub committed_per_second: Option<f64>,
    /// Median submit → durable latency, µs (`latency_us.submit_to_durable.p50`); None
    /// when nothing committed.
    pub p50_us: Option<u64>,
}

impl SweepPoint {
    /// The point of `mode` in a run's summary (the summary.json `runnel bench` writes).
    /// A summary without these fields is an error; a null figure is a point not drawn.
    pub fn from_summary(mode: &str, summary: &Value) -> Result<Self> {
        let field = |pointer: &str| {
            summary
                .pointer(pointer)
                .with_context(|| format!("the summary has no {pointer}"))
        };
        let clients = field("/clients")?
            .as_u64()
            .context("the summary's /clients is not a count")?;
        let rate = field("/transactions/committed_per_second")?;
        let p50 = field("/latency_us/submit_to_durable/p50")?;
        Ok(SweepPoint {
            mode: mode.to_owned(),
            clients,
            committed_per_second: if rate.is_null() {
                None
            } else {
                Some(
                    rate.as_f64().context(
                        "the summary's /transactions/committed_per_second is not a number",
                    )?,
                )
            },
            p50_us: if p50.is_null() {
                None
            } else {
                Some(
                    p50.as_u64().context(
                        "the summary's /latency_us/submit_to_durable/p50 is not a count",
                    )?,
                )
            },
        })
    }

    /// (committed tx/s, p50 ms), when both are there and can be drawn on the axes.
    fn xy(&self) -> Option<(f64, f64)> {
        let x = self.committed_per_second?;
        let y = self.p50_us? as f64 / 1e3;
        (x.is_finite() && x >= 0.0 && y > 0.0).then_some((x, y))
    }
}

/// Latency against throughput, one line per ordering mode through its points in order of
/// clients: what scripts/latency-throughput.py drew. An SVG line chart of p50 submit →
/// durable latency (ms, log axis) against committed tx/s; points without both figures
/// are left out.
pub fn latency_throughput(path: &Path, points: &[SweepPoint]) -> Result<()> {
    let mut modes: Vec<&str> = SWEEP_MODES.iter().map(|&(mode, _, _)| mode).collect();
    for p in points {
        if !modes.contains(&p.mode.as_str()) {
            modes.push(&p.mode);
        }
    }
    let mut others = OTHER_COLOURS.iter().cycle();
    let mut series = Vec::new();
    for mode in modes {
        let mut mine: Vec<&SweepPoint> = points.iter().filter(|p| p.mode == mode).collect();
        mine.sort_by_key(|p| p.clients);
        let xy: Vec<(f64, f64)> = mine.iter().filter_map(|p| p.xy()).collect();
        if xy.is_empty() {
            continue;
        }
        let known = SWEEP_MODES.iter().find(|&&(m, _, _)| m == mode);
        let (label, colour) = match known {
            Some(&(_, label, colour)) => (label.to_owned(), colour),
            None => (mode.to_owned(), *others.next().unwrap_or(&RUN_COLOUR)),
        };
        series.push(Series {
            label,
            colour,
            points: xy,
            markers: true,
            join_within: None,
        });
    }
    let all = series.iter().flat_map(|s| s.points.iter());
    let x_max = all.clone().map(|&(x, _)| x).fold(1.0, f64::max);
    let (y_min, y_max) = all.fold(SWEEP_LATENCY_MS_RANGE, |(lo, hi), &(_, y)| {
        (lo.min(y), hi.max(y))
    });
    let (y_lo, y_hi) = decades(y_min, y_max);
    let clients: Vec<String> = SWEEP_CLIENTS.iter().map(u64::to_string).collect();
    let x_desc = format!(
        "committed tx/s ({SWEEP_WORKLOAD}, {} clients)",
        clients.join(", ")
    );
    let svg = render(
        &Frame {
            size: SWEEP_PLOT_PX,
            caption: "latency against throughput",
            x_desc: &x_desc,
            y_desc: "p50 submit → durable, ms (log scale)",
            // Blocks sit top left, streaming low: top right is what is left free.
            legend: SeriesLabelPosition::UpperRight,
        },
        0.0..x_max * 1.1,
        (y_lo..y_hi).log_scale(),
        &series,
    )?;
    write(path, &svg)
}

/// The sweep's points under `dir`, an output directory of scripts/bench-sweep.sh: each
/// mode's `<mode>-kv-insert-c<clients>/summary.json` that is there, as
/// scripts/latency-throughput.py read them.
pub fn read_sweep(dir: &Path) -> Result<Vec<SweepPoint>> {
    ensure!(dir.is_dir(), "{} is not a directory", dir.display());
    let mut points = Vec::new();
    for (mode, _, _) in SWEEP_MODES {
        for clients in SWEEP_CLIENTS {
            let path = dir
                .join(format!("{mode}-{SWEEP_WORKLOAD}-c{clients}"))
                .join("summary.json");
            let Some(summary) = read_summary(&path)? else {
                continue;
            };
            let point = SweepPoint::from_summary(mode, &summary)
                .with_context(|| format!("reading {}", path.display()))?;
            points.push(point);
        }
    }
    Ok(points)
}

/// `runnel bench plot-sweep DIR OUT`: draws the sweep under `dir` (see [`read_sweep`]) to
/// `out` (see [`latency_throughput`]). A sweep with no point to draw is an error.
pub fn plot_sweep(dir: &Path, out: &Path) -> Result<()> {
    let points = read_sweep(dir)?;
    ensure!(
        points.iter().any(|p| p.xy().is_some()),
        "no point to draw: no <mode>-{SWEEP_WORKLOAD}-c<clients>/summary.json with a \
         throughput and a p50 under {}",
        dir.display()
    );
    latency_throughput(out, &points)
}

/// A summary.json, or None when the file is not there.
fn read_summary(path: &Path) -> Result<Option<Value>> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error).with_context(|| format!("opening {}", path.display())),
    };
    let mut text = String::new();
    file.take(SUMMARY_BYTES_MAX + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("reading {}", path.display()))?;
    ensure!(
        text.len() as u64 <= SUMMARY_BYTES_MAX,
        "{} is over {SUMMARY_BYTES_MAX} bytes: not a run's summary",
        path.display()
    );
    let summary =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    Ok(Some(summary))
}

/// What frames a chart: its size and text.
struct Frame<'a> {
    size: (u32, u32),
    caption: &'a str,
    x_desc: &'a str,
    y_desc: &'a str,
    /// Where the legend goes: a corner the lines leave free.
    legend: SeriesLabelPosition,
}

/// The frame of a run's throughput over time (`throughput.svg`, the top of
/// `timeline.svg`).
const THROUGHPUT_FRAME: Frame<'static> = Frame {
    size: RUN_PLOT_PX,
    caption: "committed transactions per second",
    x_desc: "seconds into the run",
    y_desc: "tx/s",
    legend: SeriesLabelPosition::LowerRight,
};

/// A line of a chart, with its legend.
struct Series {
    label: String,
    colour: RGBColor,
    points: Vec<(f64, f64)>,
    /// A dot on each point as well.
    markers: bool,
    /// Consecutive points further apart in x than this are not joined: there is no data
    /// between them. A point alone between gaps gets a dot. None: all joined.
    join_within: Option<f64>,
}

impl Series {
    /// The runs of points the line joins, in order; one, maybe empty, when nothing parts
    /// them.
    fn segments(&self) -> Vec<&[(f64, f64)]> {
        let Some(within) = self.join_within else {
            return vec![&self.points];
        };
        let mut segments = Vec::new();
        let mut from = 0;
        for i in 1..self.points.len() {
            if self.points[i].0 - self.points[i - 1].0 > within {
                segments.push(&self.points[from..i]);
                from = i;
            }
        }
        segments.push(&self.points[from..]);
        segments
    }
}

/// A vertical line across a chart at `x`, an event on a time axis, and its label by its
/// top (none when empty).
#[derive(Clone, Copy)]
struct Mark<'a> {
    x: f64,
    label: &'a str,
}

/// Draws `series` on axes `x` and `y` (linear or log) as an SVG document.
fn render<X, Y>(frame: &Frame, x: X, y: Y, series: &[Series]) -> Result<String>
where
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, frame.size).into_drawing_area();
        root.fill(&WHITE)?;
        chart(&root, frame, x, y, series, None)?;
        root.present()?;
    }
    Ok(svg)
}

/// Draws `series` on axes `x` and `y` (linear or log) in `area`, and `mark` across them
/// when it is on the x axis. The frame's size is the area's.
fn chart<X, Y>(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    frame: &Frame,
    x: X,
    y: Y,
    series: &[Series],
    mark: Option<&Mark>,
) -> Result<()>
where
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut chart = ChartBuilder::on(area)
        .caption(frame.caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(60)
        .build_cartesian_2d(x, y)?;
    let short_label = |v: &f64| short(*v);
    chart
        .configure_mesh()
        .x_desc(frame.x_desc)
        .y_desc(frame.y_desc)
        .x_label_formatter(&short_label)
        .y_label_formatter(&short_label)
        .bold_line_style(BLACK.mix(0.15))
        .light_line_style(BLACK.mix(0.05))
        .max_light_lines(4)
        .draw()?;
    if let Some(mark) = mark.filter(|m| chart.x_range().contains(&m.x)) {
        let y = chart.y_range();
        chart.draw_series(LineSeries::new(
            [(mark.x, y.start), (mark.x, y.end)],
            MARK_COLOUR.stroke_width(1),
        ))?;
        if !mark.label.is_empty() {
            let (size, offset) = MARK_LABEL_PX;
            let style = ("sans-serif", size).into_font().color(&MARK_COLOUR);
            chart.draw_series(std::iter::once(
                EmptyElement::at((mark.x, y.end))
                    + Text::new(mark.label.to_owned(), (offset, offset), style),
            ))?;
        }
    }
    for line in series {
        let colour = line.colour;
        for (i, segment) in line.segments().into_iter().enumerate() {
            let drawn = chart.draw_series(LineSeries::new(
                segment.iter().copied(),
                colour.stroke_width(2),
            ))?;
            if i == 0 {
                drawn.label(line.label.as_str()).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
                });
            }
            if let [alone] = segment
                && !line.markers
            {
                chart.draw_series(std::iter::once(Circle::new(*alone, 2, colour.filled())))?;
            }
        }
        if line.markers {
            chart.draw_series(
                line.points
                    .iter()
                    .map(|&point| Circle::new(point, 3, colour.filled())),
            )?;
        }
    }
    if !series.is_empty() {
        chart
            .configure_series_labels()
            .position(frame.legend.clone())
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK.mix(0.3))
            .draw()?;
    }
    Ok(())
}

/// Whole decades around `lo..=hi` (both > 0), widened by a hair so that plotters' log axis
/// labels both ends.
fn decades(lo: f64, hi: f64) -> (f64, f64) {
    let lo = lo.max(LATENCY_MS_MIN);
    let hi = hi.max(lo);
    let bottom = lo.log10().floor();
    let top = hi.log10().ceil().max(bottom + 1.0);
    (
        10f64.powf(bottom) * (1.0 - 1e-9),
        10f64.powf(top) * (1.0 + 1e-9),
    )
}

/// A number in few characters: 12345 -> "12k", 1234 -> "1.2k", 0.25 -> "0.25".
fn short(v: f64) -> String {
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s
        }
    };
    let a = v.abs();
    if a >= 10_000.0 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 1_000.0 {
        format!("{}k", trim(format!("{:.1}", v / 1e3)))
    } else if a >= 10.0 {
        format!("{v:.0}")
    } else {
        trim(format!("{v:.3}"))
    }
}

fn write(path: &Path, svg: &str) -> Result<()> {
    std::fs::write(path, svg).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    fn sample(sent_us: u64, committed_us: u64) -> Sample {
        Sample {
            sent_us,
            committed_us,
            ..Sample::default()
        }
    }

    /// Parses `path` as XML and checks it is an SVG document; returns its text.
    fn svg_at(path: &Path) -> String {
        let text = std::fs::read_to_string(path).unwrap();
        let doc = roxmltree::Document::parse(&text)
            .unwrap_or_else(|e| panic!("{} is not XML: {e}", path.display()));
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        text
    }

    /// The text of every `<text>` element.
    fn texts(svg: &str) -> Vec<String> {
        let doc = roxmltree::Document::parse(svg).unwrap();
        doc.descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text())
            .map(|t| t.trim().to_owned())
            .collect()
    }

    /// The points of each series stroke of `colour` (`#RRGGBB`), in drawing order: the
    /// series' line, then its legend's stroke.
    fn strokes(svg: &str, colour: &str) -> Vec<Vec<(f64, f64)>> {
        strokes_of(svg, colour, "2")
    }

    /// The points of each line of `colour` and `width` pixels, in drawing order.
    fn strokes_of(svg: &str, colour: &str, width: &str) -> Vec<Vec<(f64, f64)>> {
        let doc = roxmltree::Document::parse(svg).unwrap();
        doc.descendants()
            .filter(|n| n.has_tag_name("polyline"))
            .filter(|n| n.attribute("stroke") == Some(colour))
            .filter(|n| n.attribute("stroke-width") == Some(width))
            .filter_map(|n| n.attribute("points"))
            .map(|points| {
                points
                    .split_whitespace()
                    .filter_map(|p| {
                        let (x, y) = p.split_once(',')?;
                        Some((x.parse().ok()?, y.parse().ok()?))
                    })
                    .collect()
            })
            .collect()
    }

    /// The one series line drawn in `colour`.
    fn line(svg: &str, colour: &str) -> Vec<(f64, f64)> {
        let mut strokes = strokes(svg, colour);
        assert_eq!(
            strokes.len(),
            2,
            "not one series and its legend in {colour}"
        );
        strokes.swap_remove(0)
    }

    #[test]
    fn latency_cdf_draws_the_measured_committed_transactions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("latency-cdf.svg");
        let measured_from = 10_000_000;
        // 1000 measured commits from 1 to 100 ms, a warm-up one and an uncommitted one.
        let mut samples: Vec<Sample> = (0..1000u64)
            .map(|i| {
                let sent = measured_from + i * 1_000;
                sample(sent, sent + 1_000 + i * 99)
            })
            .collect();
        samples.push(sample(measured_from - 1, measured_from + 5_000_000));
        samples.push(sample(measured_from + 1, 0));
        latency_cdf(&path, &samples, measured_from).unwrap();

        let svg = svg_at(&path);
        let texts = texts(&svg);
        assert!(texts.contains(&"submit → durable latency (CDF)".to_owned()));
        assert!(texts.contains(&"1000 committed: p50 50 ms, p99 99 ms".to_owned()));
        for decade in ["1", "10", "100"] {
            assert!(
                texts.contains(&decade.to_owned()),
                "no {decade} on the axis"
            );
        }
        // A CDF (SVG's y grows downwards): the line never goes back, and it is thinned.
        let line = line(&svg, "#2563EB");
        assert!(line.len() > 100 && line.len() <= CDF_POINTS_MAX + 1);
        assert!(
            line.windows(2)
                .all(|w| w[1].0 >= w[0].0 && w[1].1 <= w[0].1)
        );
    }

    #[test]
    fn latency_cdf_of_nothing_is_an_empty_chart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("latency-cdf.svg");
        // A commit stamped before its send (clock trouble) is a 0 ms latency, not a panic.
        latency_cdf(&path, &[sample(5, 0), sample(5, 4)], 0).unwrap();
        let svg = svg_at(&path);
        assert!(texts(&svg).contains(&"1 committed: p50 0.001 ms, p99 0.001 ms".to_owned()));
        latency_cdf(&path, &[], 0).unwrap();
        let svg = svg_at(&path);
        assert!(texts(&svg).contains(&"no committed transactions".to_owned()));
    }

    #[test]
    fn throughput_counts_commits_by_the_second() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("throughput.svg");
        let start = 1_000_000_000;
        // 10.3 s at 100 commits a second, one commit after the end and one that failed.
        let mut samples: Vec<Sample> = (0..1030u64)
            .map(|i| sample(start, start + i * 10_000 + 1))
            .collect();
        samples.push(sample(start, start + 3_600_000_000));
        samples.push(sample(start, 0));
        throughput(&path, &samples, start, start + 10_300_000).unwrap();

        let svg = svg_at(&path);
        let texts = texts(&svg);
        assert!(texts.contains(&"committed transactions per second".to_owned()));
        assert!(texts.contains(&"1030 committed, by the second".to_owned()));
        // Ten seconds, the last 1.3 s long: flat, with no dip at the end.
        let line = line(&svg, "#2563EB");
        assert_eq!(line.len(), 10);
        assert!(line.windows(2).all(|w| (w[1].1 - w[0].1).abs() <= 1.0));
    }

    #[test]
    fn throughput_of_a_long_or_backward_run_stays_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("throughput.svg");
        throughput(&path, &[sample(1, u64::MAX)], 0, u64::MAX).unwrap();
        let svg = svg_at(&path);
        assert!(line(&svg, "#2563EB").len() <= THROUGHPUT_BUCKETS_MAX as usize);
        assert!(
            texts(&svg)
                .iter()
                .any(|t| t.starts_with("1 committed, by "))
        );
        throughput(&path, &[sample(1, 2)], 10, 0).unwrap();
        svg_at(&path);
    }

    /// The x of the marker line in each panel, top first, and its (top, bottom) pixel y.
    fn marks(svg: &str) -> Vec<(f64, f64, f64)> {
        strokes_of(svg, "#444444", "1")
            .into_iter()
            .map(|line| {
                assert_eq!(line.len(), 2, "a mark is one vertical line");
                assert_eq!(line[0].0, line[1].0, "a mark is vertical");
                (line[0].0, line[1].1, line[0].1)
            })
            .collect()
    }

    #[test]
    fn timeline_draws_throughput_over_latency_with_the_event() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("timeline.svg");
        let start = 1_000_000_000;
        let at = start + 3_000_000;
        // 6 s at 100 tx/s, committed 2 ms after they were sent; those due from 3 to 5 s
        // commit at 5 s instead, and one call fails 300 ms after it was sent, at 3.8 s.
        let samples: Vec<Sample> = (0..600u64)
            .map(|i| {
                let sent = start + i * 10_000;
                if i == 350 {
                    return Sample {
                        sent_us: sent,
                        failed_us: sent + 300_000,
                        ..Sample::default()
                    };
                }
                let due = sent + 2_000;
                let held = (at..at + 2_000_000).contains(&due);
                sample(sent, if held { at + 2_000_000 } else { due })
            })
            .collect();
        timeline(
            &path,
            &samples,
            (start, start + 6_000_000),
            at,
            "leader killed",
        )
        .unwrap();

        let svg = svg_at(&path);
        let texts = texts(&svg);
        for text in [
            "committed transactions per second",
            "submit → durable latency, by commit time",
            "599 committed, by 100 ms",
            "1 failed, by when they failed",
            "p99 of each 100 ms",
            "max",
        ] {
            assert!(texts.contains(&text.to_owned()), "no {text:?} in {texts:?}");
        }
        // The event's label once, its line in both panels at the same x: the panels
        // share the x axis, one above the other.
        assert_eq!(texts.iter().filter(|t| *t == "leader killed").count(), 1);
        let marks = marks(&svg);
        assert_eq!(marks.len(), 2);
        assert_eq!(marks[0].0, marks[1].0);
        assert!(marks[0].2 < marks[1].1, "the latency panel is below");
        // Throughput: 60 buckets of 100 ms, 10 commits each (100 tx/s), none in the 20
        // of the gap, and the burst: 199 held and 10 more (2,090 tx/s), the highest.
        let runs = strokes(&svg, "#2563EB");
        let rates = &runs[0];
        assert_eq!(rates.len(), 60);
        let zero = rates[30].1;
        assert!(rates[30..50].iter().all(|p| p.1 == zero));
        assert!(rates[..30].iter().all(|p| p.1 == rates[0].1 && p.1 < zero));
        let top = rates.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
        assert_eq!(rates[50].1, top);
        assert!(rates[0].0 < marks[0].0 && marks[0].0 < rates[30].0);
        // Latency: the p99 line stops over the gap (30 buckets before it, 10 after, then
        // the legend's stroke), and the max's highest point is the spike after it.
        let lens: Vec<usize> = runs[2..].iter().map(Vec::len).collect();
        assert_eq!(lens, [30, 10, 2]);
        let max = strokes(&svg, "#FF7F0E");
        assert_eq!(max.len(), 3);
        let highest = max[0]
            .iter()
            .chain(&max[1])
            .map(|p| p.1)
            .fold(f64::INFINITY, f64::min);
        assert_eq!(max[1][0].1, highest);
        assert!(max[1][0].1 < max[0][0].1);
        // The spike is 2 s: the log axis reaches 10k ms.
        assert!(texts.contains(&"10k".to_owned()));
        assert_eq!(strokes(&svg, "#D62728")[0].len(), 60);
    }

    #[test]
    fn timeline_of_a_long_backward_or_empty_run_stays_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("timeline.svg");
        timeline(&path, &[sample(1, u64::MAX)], (0, u64::MAX), 5, "event").unwrap();
        let svg = svg_at(&path);
        assert!(strokes(&svg, "#2563EB")[0].len() <= TIMELINE_BUCKETS_MAX as usize);
        assert_eq!(marks(&svg).len(), 2);
        // An event off the axis is not drawn; an empty run is two empty panels.
        timeline(&path, &[sample(1, 2)], (10, 0), 1 << 40, "event").unwrap();
        let svg = svg_at(&path);
        assert!(marks(&svg).is_empty() && !texts(&svg).contains(&"event".to_owned()));
        timeline(&path, &[], (0, 0), 0, "event").unwrap();
        assert!(texts(&svg_at(&path)).contains(&"0 committed, by 100 ms".to_owned()));
    }

    fn summary(clients: u64, rate: Value, p50_us: Value) -> Value {
        json!({
            "workload": "kv-insert",
            "clients": clients,
            "transactions": { "committed_per_second": rate },
            "latency_us": { "submit_to_durable": { "p50": p50_us, "p99": p50_us } },
        })
    }

    /// Writes a sweep directory as scripts/bench-sweep.sh leaves it.
    fn write_sweep(dir: &Path) {
        for (mode, scale) in [("streaming", 1u64), ("blocks10", 100), ("blocks100", 1000)] {
            for clients in SWEEP_CLIENTS {
                let run = dir.join(format!("{mode}-kv-insert-c{clients}"));
                std::fs::create_dir_all(&run).unwrap();
                let s = summary(
                    clients,
                    json!(clients as f64 * 500.0 / scale as f64),
                    json!(500 * scale * clients),
                );
                std::fs::write(run.join("summary.json"), s.to_string()).unwrap();
            }
        }
        // Points the plot leaves out: another workload, and a run with another setting.
        for other in ["streaming-kv-rmw-k100", "two-workers-kv-insert-c64"] {
            let run = dir.join(other);
            std::fs::create_dir_all(&run).unwrap();
            let s = summary(64, json!(1e6), json!(1));
            std::fs::write(run.join("summary.json"), s.to_string()).unwrap();
        }
    }

    #[test]
    fn plot_sweep_draws_a_line_per_mode() {
        let dir = tempfile::tempdir().unwrap();
        write_sweep(dir.path());
        let points = read_sweep(dir.path()).unwrap();
        assert_eq!(points.len(), 12);
        assert_eq!(
            points[1],
            SweepPoint {
                mode: "streaming".to_owned(),
                clients: 4,
                committed_per_second: Some(2000.0),
                p50_us: Some(2000),
            }
        );
        let out = dir.path().join("latency-throughput.svg");
        plot_sweep(dir.path(), &out).unwrap();

        let svg = svg_at(&out);
        let texts = texts(&svg);
        for label in ["streaming", "blocks (10, 2 s)", "blocks (100, 2 s)"] {
            assert!(
                texts.contains(&label.to_owned()),
                "no {label} in the legend"
            );
        }
        assert!(texts.contains(&"committed tx/s (kv-insert, 1, 4, 16, 64 clients)".to_owned()));
        for colour in ["#1F77B4", "#D62728", "#FF7F0E"] {
            assert_eq!(line(&svg, colour).len(), 4);
        }
        // A dot on each point, and none for the points left out.
        assert_eq!(svg.matches("<circle").count(), 12);
        // The latency axis keeps its decades from 0.1 ms, and widens to 32 s.
        for decade in ["0.1", "1", "10k", "100k"] {
            assert!(
                texts.contains(&decade.to_owned()),
                "no {decade} on the axis"
            );
        }
    }

    #[test]
    fn latency_throughput_leaves_out_points_it_cannot_draw() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("latency-throughput.svg");
        let point = |mode: &str, clients, rate, p50_us| SweepPoint {
            mode: mode.to_owned(),
            clients,
            committed_per_second: rate,
            p50_us,
        };
        let points = [
            point("streaming", 1, Some(100.0), Some(1_000)),
            point("streaming", 4, None, Some(1_000)),
            point("streaming", 16, Some(f64::NAN), Some(1_000)),
            point("streaming", 64, Some(300.0), Some(0)),
            point("blocks10", 1, Some(5.0), None),
            point("two-workers", 64, Some(4000.0), Some(3_000)),
            point("two-workers", 16, Some(2000.0), Some(2_000)),
            point("two-workers", 4, Some(-1.0), Some(2_000)),
        ];
        latency_throughput(&path, &points).unwrap();
        let svg = svg_at(&path);
        let texts = texts(&svg);
        assert!(texts.contains(&"streaming".to_owned()));
        assert!(texts.contains(&"two-workers".to_owned()));
        assert!(!texts.contains(&"blocks (10, 2 s)".to_owned()));
        assert_eq!(svg.matches("<circle").count(), 3);
        assert_eq!(line(&svg, "#1F77B4").len(), 1);
        // A series the sweep does not name gets a colour of its own, and its line goes by
        // clients: 16 first, to the left of 64.
        let other = line(&svg, "#2CA02C");
        assert_eq!(other.len(), 2);
        assert!(other[0].0 < other[1].0);
        latency_throughput(&path, &[]).unwrap();
        svg_at(&path);
    }

    #[test]
    fn a_sweep_with_bad_or_missing_summaries_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nowhere");
        assert!(read_sweep(&missing).is_err());
        let out = dir.path().join("out.svg");
        let error = plot_sweep(dir.path(), &out).unwrap_err();
        assert!(error.to_string().contains("no point to draw"), "{error}");
        assert!(!out.exists());

        let run = dir.path().join("streaming-kv-insert-c1");
        std::fs::create_dir_all(&run).unwrap();
        for (bad, says) in [
            ("{", "not JSON"),
            ("[]", "no /clients"),
            (r#"{"clients": 1}"#, "no /transactions/committed_per_second"),
            (
                r#"{"clients": 1, "transactions": {"committed_per_second": "fast"},
                   "latency_us": {"submit_to_durable": {"p50": 1}}}"#,
                "not a number",
            ),
            (
                r#"{"clients": -1, "transactions": {"committed_per_second": 1},
                   "latency_us": {"submit_to_durable": {"p50": 1}}}"#,
                "not a count",
            ),
        ] {
            std::fs::write(run.join("summary.json"), bad).unwrap();
            let error = format!("{:#}", read_sweep(dir.path()).unwrap_err());
            assert!(error.contains(says), "{bad}: {error}");
        }
        let huge = " ".repeat(SUMMARY_BYTES_MAX as usize + 1);
        std::fs::write(run.join("summary.json"), huge).unwrap();
        let error = format!("{:#}", read_sweep(dir.path()).unwrap_err());
        assert!(error.contains("over"), "{error}");
    }

    #[test]
    fn short_numbers() {
        for (v, s) in [
            (0.0, "0"),
            (0.001, "0.001"),
            (0.1, "0.1"),
            (0.25, "0.25"),
            (1.0, "1"),
            (2.5, "2.5"),
            (50.0, "50"),
            (1000.0, "1k"),
            (1234.0, "1.2k"),
            (12_345.0, "12k"),
        ] {
            assert_eq!(short(v), s);
        }
    }
}

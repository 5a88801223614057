//! `runnel bench stall`: what clients saw when something happened to the network at a
//! known moment of a run (an orderer killed, a node restarted). It reads the run's
//! transactions.csv back and measures, against the throughput before the event, how long
//! commits took to come back and what the transactions caught in between went through.
//!
//! It only reads what the run recorded: every time is on the clock of the machine that
//! ran `runnel bench`, the clock `--at` must be on. It never loads a node.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};

use crate::record::{Sample, TRANSACTIONS_CSV, nearest_rank, percentiles, read_csv};

/// The report, JSON, in the run's directory.
pub(crate) const STALL_JSON: &str = "stall.json";
/// The report, text, in the run's directory.
pub(crate) const STALL_TXT: &str = "stall.txt";
/// The timeline plot, in the run's directory.
pub(crate) const TIMELINE_SVG: &str = "timeline.svg";

/// The windows throughput is counted over, µs: a second, for the baseline and for the
/// recovery alike.
const WINDOW_US: u64 = 1_000_000;
/// How far apart the recovery windows start, µs.
const RECOVERY_STEP_US: u64 = 100_000;
/// The share of the baseline a second must commit to count as recovered, percent.
const RECOVERED_PERCENT: u64 = 90;
/// The longest run measured, µs (a day): bounds the windows counted, whatever the
/// timestamps say.
const RUN_US_MAX: u64 = 86_400_000_000;
/// The longest `--label`, characters.
const LABEL_CHARS_MAX: usize = 80;

/// What clients saw around an event at `at_us`. Every time is Unix µs on the clients'
/// clock.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Stall {
    /// When the event happened.
    pub at_us: u64,
    /// The run's first send.
    pub run_start_us: u64,
    /// The run's last event: a commit, a failure or a send.
    pub run_end_us: u64,
    /// Where the baseline's seconds start: the first send after the warm-up, or the
    /// first commit when every row is warm-up.
    pub measured_from_us: u64,
    /// Committed tx/s before the event: the median (nearest rank) of the commits in each
    /// whole second from `measured_from_us` that ends by `at_us`. Committed counts every
    /// transaction that got a validation code, valid or not, as the summary does.
    pub baseline_per_s: u64,
    /// How many seconds the baseline is the median of.
    pub baseline_seconds: usize,
    /// When the stall ended: of the one-second windows [t, t + 1 s) with t = `at_us`,
    /// `at_us` + 100 ms, `at_us` + 200 ms, ... that end by the run's end, the first to
    /// commit at least 90% of the baseline; the stall ends at that window's first
    /// commit. The second from then commits at least as many (it holds the window's
    /// commits), so throughput is back from there; no window before it was.
    /// Unlike the window's end (1 s or more even without a dip) or its start (which a
    /// burst of held-back commits pulls up to 900 ms early), this lands on the dip's
    /// end: after a gap with no commits, the first commit after it; without a dip, the
    /// first commit from `at_us`. None: the run ended before throughput came back.
    pub recovered_at_us: Option<u64>,
    /// The transactions caught in the stall [`at_us`, `recovered_at_us`), or up to the
    /// run's end when it did not recover.
    pub caught: Caught,
    /// Sent → committed (submit → durable, as the summary has it) of the transactions
    /// sent after the warm-up that committed before the event, µs: their percentiles.
    pub before_latency_us: Value,
}

/// The transactions caught in a stall: those sent before it ended that had not ended
/// (committed or failed) before it began, i.e. in flight at its start or sent during it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Caught {
    /// Where the stall window ends (excluded): the recovery, or the run's end.
    pub until_us: u64,
    /// How many transactions.
    pub transactions: u64,
    /// Of them, how many committed (got a validation code), whenever they did.
    pub committed: u64,
    /// Of the committed, how many were valid.
    pub valid: u64,
    /// Of them, how many failed (the client was told so, without a validation code).
    pub failed: u64,
    /// How many ended with each outcome: validation code, or the failed call's error.
    pub outcomes: BTreeMap<String, u64>,
    /// Each one's time from send to its end, µs: to its commit, or to its failure for
    /// those that failed. Their percentiles.
    pub latency_us: Value,
    /// Sent → committed of those that committed, µs: their percentiles.
    pub committed_latency_us: Value,
}

impl Stall {
    /// How long throughput took to come back, µs (see `recovered_at_us`); None when the
    /// run ended first.
    pub fn recovery_us(&self) -> Option<u64> {
        self.recovered_at_us.map(|at| at.saturating_sub(self.at_us))
    }

    /// Seconds from the run's first send to `at_us`.
    fn run_s(&self, at_us: u64) -> f64 {
        (i128::from(at_us) - i128::from(self.run_start_us)) as f64 / 1e6
    }

    /// stall.json: the figures, their times both in Unix µs and in seconds.
    fn json(&self, label: &str) -> Value {
        let c = &self.caught;
        json!({
            "label": label,
            "at_us": self.at_us,
            "at_s_into_run": self.run_s(self.at_us),
            "run": {
                "start_us": self.run_start_us,
                "end_us": self.run_end_us,
                "measured_from_us": self.measured_from_us,
            },
            "baseline_per_second": self.baseline_per_s,
            "baseline_seconds": self.baseline_seconds,
            "recovered_share": RECOVERED_PERCENT as f64 / 100.0,
            "recovered_at_us": self.recovered_at_us,
            "recovery_s": self.recovery_us().map(|us| us as f64 / 1e6),
            "stall": {
                "from_us": self.at_us,
                "until_us": c.until_us,
                "seconds": c.until_us.saturating_sub(self.at_us) as f64 / 1e6,
                "transactions": c.transactions,
                "committed": c.committed,
                "valid": c.valid,
                "failed": c.failed,
                "outcomes": c.outcomes,
                "latency_us": c.latency_us,
                "committed_latency_us": c.committed_latency_us,
            },
            "before": { "latency_us": self.before_latency_us },
        })
    }

    /// stall.txt: what the JSON says, for a reader.
    fn text(&self, label: &str) -> String {
        let c = &self.caught;
        let ms = |v: &Value| {
            v.as_u64()
                .map_or("-".to_string(), |us| format!("{:.3}", us as f64 / 1e3))
        };
        let at_s = self.run_s(self.at_us);
        let mut out = format!(
            "{label} at {at_s:.3} s into the run\n\
             baseline: {} tx/s committed (median of {} whole seconds from the end of the \
             warm-up, {:.3} s, to it)\n",
            self.baseline_per_s,
            self.baseline_seconds,
            self.run_s(self.measured_from_us),
        );
        match self.recovery_us() {
            Some(us) => out.push_str(&format!(
                "recovered after {:.3} s: the first commit of the first second back at \
                 {RECOVERED_PERCENT}% of the baseline or more\n",
                us as f64 / 1e6
            )),
            None => out.push_str(&format!(
                "not recovered by the end of the run, {:.3} s after it: no second from it \
                 committed {RECOVERED_PERCENT}% of the baseline\n",
                self.run_end_us.saturating_sub(self.at_us) as f64 / 1e6
            )),
        }
        out.push_str(&format!(
            "stall, {at_s:.3} to {:.3} s: {} transactions in flight or sent, {} committed \
             ({} valid), {} failed\n",
            self.run_s(c.until_us),
            c.transactions,
            c.committed,
            c.valid,
            c.failed,
        ));
        if !c.outcomes.is_empty() {
            let list: Vec<String> = c.outcomes.iter().map(|(k, v)| format!("{k} {v}")).collect();
            out.push_str(&format!("  outcomes: {}\n", list.join(", ")));
        }
        out.push_str(&format!(
            "  sent -> end (ms), a failure at its failure: p99 {} max {}\n",
            ms(&c.latency_us["p99"]),
            ms(&c.latency_us["max"]),
        ));
        out.push_str(&format!(
            "  submit -> durable (ms), committed only: p99 {} max {}\n",
            ms(&c.committed_latency_us["p99"]),
            ms(&c.committed_latency_us["max"]),
        ));
        out.push_str(&format!(
            "before it, submit -> durable (ms): p99 {} max {} ({} committed)\n",
            ms(&self.before_latency_us["p99"]),
            ms(&self.before_latency_us["max"]),
            self.before_latency_us["n"],
        ));
        out
    }
}

/// `runnel bench stall DIR --at UNIX_US --label TEXT`: measures the stall around `at_us`
/// in the run under `dir` (its transactions.csv, see [`measure`]) and writes stall.json,
/// stall.txt and timeline.svg there; returns the text.
pub fn stall(dir: &Path, at_us: u64, label: &str) -> Result<String> {
    ensure!(
        !label.is_empty()
            && label.chars().count() <= LABEL_CHARS_MAX
            && !label.chars().any(char::is_control),
        "--label is from 1 to {LABEL_CHARS_MAX} characters on one line"
    );
    let csv = dir.join(TRANSACTIONS_CSV);
    let recorded = read_csv(&csv)?;
    let stall = measure(&recorded.samples, recorded.measured_from_us, at_us)
        .with_context(|| format!("measuring the stall at {at_us} µs in {}", csv.display()))?;
    let text = stall.text(label);
    let json_path = dir.join(STALL_JSON);
    std::fs::write(
        &json_path,
        serde_json::to_string_pretty(&stall.json(label))?,
    )
    .with_context(|| format!("writing {}", json_path.display()))?;
    let text_path = dir.join(STALL_TXT);
    std::fs::write(&text_path, &text)
        .with_context(|| format!("writing {}", text_path.display()))?;
    crate::plots::timeline(
        &dir.join(TIMELINE_SVG),
        &recorded.samples,
        (stall.run_start_us, stall.run_end_us),
        at_us,
        label,
    )?;
    Ok(text)
}

/// The stall around `at_us` in a run's `samples`, whose measured window starts at
/// `measured_from_us` (None: at the first commit). See [`Stall`] for each figure. A run
/// with no whole second before `at_us` to take a baseline from, nothing committed in its
/// median second, `at_us` outside it or a span over a day is an error.
pub(crate) fn measure(
    samples: &[Sample],
    measured_from_us: Option<u64>,
    at_us: u64,
) -> Result<Stall> {
    let run_start_us = samples
        .iter()
        .map(|s| s.sent_us)
        .min()
        .context("no transactions: nothing to measure")?;
    let run_end_us = samples
        .iter()
        .map(|s| s.ended_us().max(s.sent_us))
        .max()
        .unwrap_or(run_start_us);
    ensure!(
        run_end_us - run_start_us <= RUN_US_MAX,
        "the run spans {} s, over the {} s measured: did its clock jump?",
        (run_end_us - run_start_us) / 1_000_000,
        RUN_US_MAX / 1_000_000
    );
    let mut commits: Vec<u64> = samples
        .iter()
        .map(|s| s.committed_us)
        .filter(|&c| c > 0)
        .collect();
    commits.sort_unstable();
    let measured_from_us = measured_from_us
        .or(commits.first().copied())
        .context("every transaction was sent in the warm-up and none committed: no baseline")?;
    ensure!(
        at_us >= run_start_us,
        "--at {at_us} is before the run's first send, {run_start_us} (both Unix µs)"
    );
    let into_run = |us: u64| (i128::from(us) - i128::from(run_start_us)) as f64 / 1e6;
    ensure!(
        at_us >= measured_from_us.saturating_add(WINDOW_US),
        "--at is {:.3} s into the run and the warm-up ends at {:.3} s: a baseline needs a \
         whole second between them",
        into_run(at_us),
        into_run(measured_from_us)
    );
    ensure!(
        at_us < run_end_us,
        "--at is {:.3} s into the run, after its last event at {:.3} s",
        into_run(at_us),
        into_run(run_end_us)
    );
    // Commits in [from, to).
    let count = |from: u64, to: u64| {
        (commits.partition_point(|&c| c < to) - commits.partition_point(|&c| c < from)) as u64
    };
    let mut seconds: Vec<u64> = (0u64..)
        .map(|k| measured_from_us + k * WINDOW_US)
        .take_while(|&from| from + WINDOW_US <= at_us)
        .map(|from| count(from, from + WINDOW_US))
        .collect();
    seconds.sort_unstable();
    let baseline_per_s = nearest_rank(&seconds, 0.5).unwrap_or(0);
    ensure!(
        baseline_per_s > 0,
        "nothing committed in the median second before --at: no baseline to recover to"
    );
    let recovered_at_us = (0u64..)
        .map(|k| at_us + k * RECOVERY_STEP_US)
        .take_while(|&t| t + WINDOW_US <= run_end_us)
        .find(|&t| count(t, t + WINDOW_US) * 100 >= baseline_per_s * RECOVERED_PERCENT)
        .and_then(|t| commits.get(commits.partition_point(|&c| c < t)).copied());
    let until_us = recovered_at_us.unwrap_or(run_end_us);

    let caught: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.sent_us < until_us && s.ended_us() >= at_us)
        .collect();
    let committed: Vec<&&Sample> = caught.iter().filter(|s| s.committed_us > 0).collect();
    let mut outcomes = BTreeMap::new();
    for s in &caught {
        *outcomes.entry(s.outcome.clone()).or_default() += 1;
    }
    let latency = |s: &Sample| s.ended_us().saturating_sub(s.sent_us);
    let before: Vec<u64> = samples
        .iter()
        .filter(|s| s.sent_us >= measured_from_us && s.committed_us > 0 && s.committed_us < at_us)
        .map(latency)
        .collect();
    Ok(Stall {
        at_us,
        run_start_us,
        run_end_us,
        measured_from_us,
        baseline_per_s,
        baseline_seconds: seconds.len(),
        recovered_at_us,
        caught: Caught {
            until_us,
            transactions: caught.len() as u64,
            committed: committed.len() as u64,
            valid: committed.iter().filter(|s| s.outcome == "VALID").count() as u64,
            failed: caught.iter().filter(|s| s.committed_us == 0).count() as u64,
            outcomes,
            latency_us: percentiles(caught.iter().map(|s| latency(s)).collect()),
            committed_latency_us: percentiles(committed.iter().map(|s| latency(s)).collect()),
        },
        before_latency_us: percentiles(before),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The run's start, Unix µs.
    const START: u64 = 1_750_000_000_000_000;
    /// The warm-up's end: a second in.
    const MEASURED_FROM: u64 = START + 1_000_000;
    /// The event: ten seconds in.
    const AT: u64 = START + 10_000_000;
    /// The transactions whose calls fail in [`Run::Gap`]: sent 100, 500, ... ms after
    /// the event.
    const FAILING: [u64; 5] = [1010, 1050, 1090, 1130, 1170];

    /// What happens from [`AT`] on.
    #[derive(Clone, Copy, PartialEq)]
    enum Run {
        /// Nothing: 100 tx/s throughout.
        Steady,
        /// No commit for 2 s: those due then commit together at `AT` + 2 s (their
        /// latency spikes to 2 s), but for five that fail 300 ms after they were sent.
        Gap,
        /// Every other call fails 300 ms after it was sent: 50 tx/s to the end.
        Halved,
    }

    /// 20 s at 100 tx/s: transaction `i` sent at `START` + `i` × 10 ms and committed
    /// 2 ms + (`i` mod 100) × 10 µs later, unless `run` says otherwise from `AT` on.
    fn run(run: Run) -> Vec<Sample> {
        (0..2000u64)
            .map(|i| {
                let sent_us = START + i * 10_000;
                let mut sample = Sample {
                    sent_us,
                    committed_us: sent_us + 2_000 + (i % 100) * 10,
                    outcome: "VALID".to_owned(),
                    ..Sample::default()
                };
                let fails = match run {
                    Run::Steady => false,
                    Run::Gap => FAILING.contains(&i),
                    Run::Halved => i >= 1000 && i % 2 == 1,
                };
                if fails {
                    sample.committed_us = 0;
                    sample.failed_us = sent_us + 300_000;
                    sample.outcome = "SUBMIT_UNAVAILABLE".to_owned();
                } else if run == Run::Gap && (AT..AT + 2_000_000).contains(&sample.committed_us) {
                    sample.committed_us = AT + 2_000_000;
                }
                sample
            })
            .collect()
    }

    #[test]
    fn a_two_second_gap_is_a_two_second_stall() {
        let stall = measure(&run(Run::Gap), Some(MEASURED_FROM), AT).unwrap();
        // Nine whole seconds from the warm-up's end to the event, 100 commits each.
        assert_eq!((stall.baseline_per_s, stall.baseline_seconds), (100, 9));
        // The window [AT + 1.1 s, AT + 2.1 s) is the first back over 90 commits; its
        // first commit is the burst that ends the gap.
        assert_eq!(stall.recovered_at_us, Some(AT + 2_000_000));
        assert_eq!(stall.recovery_us(), Some(2_000_000));
        let caught = &stall.caught;
        assert_eq!(caught.until_us, AT + 2_000_000);
        // Those sent in the gap, the first at AT itself; none was in flight before.
        assert_eq!(
            (
                caught.transactions,
                caught.committed,
                caught.valid,
                caught.failed
            ),
            (200, 195, 195, 5)
        );
        assert_eq!(
            caught.outcomes,
            BTreeMap::from([
                ("SUBMIT_UNAVAILABLE".to_owned(), 5),
                ("VALID".to_owned(), 195)
            ])
        );
        // The max is the spike: sent at AT, committed 2 s later. p99 is the 198th of 200,
        // the third longest (2 s - 20 ms); of the 195 committed, the 194th.
        assert_eq!(caught.latency_us["max"], 2_000_000);
        assert_eq!(caught.latency_us["p99"], 1_980_000);
        assert_eq!(caught.committed_latency_us["p99"], 1_990_000);
        assert_eq!(caught.committed_latency_us["max"], 2_000_000);
        // Before: 900 measured commits of 2.00 to 2.99 ms, nine of each.
        assert_eq!(stall.before_latency_us["n"], 900);
        assert_eq!(stall.before_latency_us["p99"], 2_980);
        assert_eq!(stall.before_latency_us["max"], 2_990);

        let text = stall.text("leader killed");
        assert!(
            text.starts_with("leader killed at 10.000 s into the run\n"),
            "{text}"
        );
        assert!(text.contains("baseline: 100 tx/s committed (median of 9 whole seconds"));
        assert!(text.contains("recovered after 2.000 s"), "{text}");
        assert!(
            text.contains("stall, 10.000 to 12.000 s: 200 transactions in flight or sent, 195 committed (195 valid), 5 failed"),
            "{text}"
        );
        assert!(text.contains("a failure at its failure: p99 1980.000 max 2000.000"));
        assert!(
            text.contains("before it, submit -> durable (ms): p99 2.980 max 2.990 (900 committed)")
        );
        let json = stall.json("leader killed");
        assert_eq!(json["recovery_s"], 2.0);
        assert_eq!(json["stall"]["seconds"], 2.0);
        assert_eq!(json["stall"]["failed"], 5);
    }

    #[test]
    fn a_run_that_never_dips_recovers_at_its_next_commit() {
        let stall = measure(&run(Run::Steady), Some(MEASURED_FROM), AT).unwrap();
        assert_eq!(stall.baseline_per_s, 100);
        // The first window is full: the stall ends at the first commit from AT, 2 ms
        // later, and catches the one transaction in flight.
        assert_eq!(stall.recovery_us(), Some(2_000));
        let caught = &stall.caught;
        assert_eq!(
            (caught.transactions, caught.committed, caught.failed),
            (1, 1, 0)
        );
        assert_eq!(caught.latency_us["max"], 2_000);
        assert!(stall.text("event").contains("recovered after 0.002 s"));
    }

    #[test]
    fn a_run_that_never_recovers_says_so() {
        let samples = run(Run::Halved);
        let stall = measure(&samples, Some(MEASURED_FROM), AT).unwrap();
        assert_eq!(stall.baseline_per_s, 100);
        assert_eq!((stall.recovered_at_us, stall.recovery_us()), (None, None));
        // The run's last event: the last failure, 300 ms after the last send.
        assert_eq!(stall.run_end_us, START + 19_990_000 + 300_000);
        let caught = &stall.caught;
        assert_eq!(caught.until_us, stall.run_end_us);
        assert_eq!(
            (caught.transactions, caught.committed, caught.failed),
            (1000, 500, 500)
        );
        assert_eq!(caught.latency_us["max"], 300_000);
        let text = stall.text("event");
        assert!(
            text.contains("not recovered by the end of the run, 10.290 s after it"),
            "{text}"
        );
        let json = stall.json("event");
        assert!(json["recovery_s"].is_null() && json["recovered_at_us"].is_null());
    }

    #[test]
    fn a_stall_without_a_baseline_or_an_event_in_the_run_is_an_error() {
        let samples = run(Run::Steady);
        for (at_us, says) in [
            (AT / 1_000, "before the run's first send"),
            (START + 1_500_000, "a baseline needs a whole second"),
            (START + 30_000_000, "after its last event"),
        ] {
            let error = format!(
                "{:#}",
                measure(&samples, Some(MEASURED_FROM), at_us).unwrap_err()
            );
            assert!(error.contains(says), "{error}");
        }
        // No warm-up flag: the baseline starts at the first commit.
        let stall = measure(&samples, None, AT).unwrap();
        assert_eq!(stall.measured_from_us, START + 2_000);
        let error = format!("{:#}", measure(&[], None, AT).unwrap_err());
        assert!(error.contains("no transactions"), "{error}");
        // Nothing committed before the event: nothing to recover to.
        let failed: Vec<Sample> = samples
            .iter()
            .map(|s| Sample {
                committed_us: 0,
                failed_us: s.sent_us + 1,
                ..s.clone()
            })
            .collect();
        let error = format!(
            "{:#}",
            measure(&failed, Some(MEASURED_FROM), AT).unwrap_err()
        );
        assert!(error.contains("no baseline to recover to"), "{error}");
        // A clock that jumped a year.
        let mut jumped = samples.clone();
        jumped[5].committed_us += 365 * 86_400_000_000;
        let error = format!(
            "{:#}",
            measure(&jumped, Some(MEASURED_FROM), AT).unwrap_err()
        );
        assert!(error.contains("did its clock jump?"), "{error}");
    }

    #[test]
    fn stall_reads_the_run_and_writes_its_report_and_timeline() {
        let dir = tempfile::tempdir().unwrap();
        crate::record::write_csv(
            &dir.path().join(TRANSACTIONS_CSV),
            &run(Run::Gap),
            &std::collections::HashMap::new(),
            MEASURED_FROM,
        )
        .unwrap();
        let text = stall(dir.path(), AT, "leader killed").unwrap();
        assert!(text.contains("recovered after 2.000 s"), "{text}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join(STALL_TXT)).unwrap(),
            text
        );
        let json: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join(STALL_JSON)).unwrap())
                .unwrap();
        assert_eq!(json["label"], "leader killed");
        assert_eq!(json["run"]["measured_from_us"], MEASURED_FROM);
        assert_eq!(json["baseline_per_second"], 100);
        assert_eq!(json["stall"]["transactions"], 200);
        let svg = std::fs::read_to_string(dir.path().join(TIMELINE_SVG)).unwrap();
        assert!(roxmltree::Document::parse(&svg).is_ok());
        assert!(svg.contains("leader killed"));

        for label in ["", "two\nlines", &"x".repeat(LABEL_CHARS_MAX + 1)] {
            let error = stall(dir.path(), AT, label).unwrap_err();
            assert!(error.to_string().contains("--label"), "{error}");
        }
        let error = format!(
            "{:#}",
            stall(&dir.path().join("none"), AT, "event").unwrap_err()
        );
        assert!(error.contains("opening"), "{error}");
    }
}

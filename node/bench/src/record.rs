//! What a run recorded: each transaction's [`Sample`], the per-transaction CSV that keeps
//! them ([`write_csv`], [`read_csv`]) with the node's stage stamps, and the quantiles every
//! figure of `runnel bench` is reported by ([`nearest_rank`], [`percentiles`]).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use runnel_api::proto::Stage;
use serde_json::{Value, json};

/// What one transaction went through, client side (Unix µs; 0: not reached). It ends
/// once: committed (with a validation code) or failed, never both.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sample {
    pub tx_id: String,
    pub client: usize,
    pub sent_us: u64,
    pub endorsed_us: u64,
    pub submitted_us: u64,
    pub committed_us: u64,
    /// When the client was told a call failed, before any validation code.
    pub failed_us: u64,
    /// The validation code's name, or what failed before one was given.
    pub outcome: String,
}

impl Sample {
    /// When the transaction ended for its client: committed or failed.
    pub fn ended_us(&self) -> u64 {
        self.committed_us.max(self.failed_us)
    }
}

/// Every node stage, in flow order: the CSV's node columns, and (from `Received` on,
/// `bench::SUMMARY_FROM`) the summary's node steps.
pub(crate) const NODE_STAGES: [(Stage, &str); 9] = [
    (Stage::EndorseStart, "endorse_start"),
    (Stage::EndorseEnd, "endorse_end"),
    (Stage::Received, "received"),
    (Stage::Ordered, "ordered"),
    (Stage::Delivered, "delivered"),
    (Stage::Verified, "verified"),
    (Stage::Validated, "validated"),
    (Stage::Committed, "committed"),
    (Stage::Notified, "notified"),
];

/// The per-transaction CSV in a run's output directory.
pub(crate) const TRANSACTIONS_CSV: &str = "transactions.csv";
/// The CSV's columns before the node's stages.
const CSV_CLIENT_COLUMNS: [&str; 6] = [
    "tx_id",
    "client",
    "warmup",
    "sent_us",
    "endorsed_us",
    "submitted_us",
];
/// The CSV's columns after the node's stages. The code stays last: scripts match
/// `,VALID$`.
const CSV_END_COLUMNS: [&str; 3] = ["client_committed_us", "failed_us", "code"];
/// The CSV's columns in all.
const CSV_COLUMNS: usize = CSV_CLIENT_COLUMNS.len() + NODE_STAGES.len() + CSV_END_COLUMNS.len();
/// The largest transactions.csv read back, bytes: ~3.5 million rows of ~300 bytes (over
/// ten minutes at 5,000 tx/s), under 1 GB once read.
const TRANSACTIONS_CSV_BYTES_MAX: u64 = 1 << 30;
/// The longest row read back, bytes: the numbers take ~300, a failure's message the rest.
const CSV_ROW_BYTES_MAX: u64 = 16 << 10;

/// The CSV's column names, in order.
fn csv_columns() -> Vec<String> {
    let stages = NODE_STAGES.iter().map(|(_, name)| format!("{name}_us"));
    CSV_CLIENT_COLUMNS
        .iter()
        .map(|c| c.to_string())
        .chain(stages)
        .chain(CSV_END_COLUMNS.iter().map(|c| c.to_string()))
        .collect()
}

/// Writes transactions.csv: a row a transaction, its client's stamps and the node's (empty
/// when its trace was not seen). [`read_csv`] reads it back.
pub(crate) fn write_csv(
    path: &Path,
    samples: &[Sample],
    stamps: &HashMap<String, BTreeMap<i32, u64>>,
    measured_from: u64,
) -> Result<()> {
    use std::fmt::Write as _;
    let mut out = csv_columns().join(",");
    out.push('\n');
    for s in samples {
        let node = stamps.get(&s.tx_id);
        let _ = write!(
            out,
            "{},{},{},{},{},{},",
            s.tx_id,
            s.client,
            s.sent_us < measured_from,
            s.sent_us,
            s.endorsed_us,
            s.submitted_us,
        );
        for (stage, _) in NODE_STAGES {
            if let Some(at) = node.and_then(|n| n.get(&(stage as i32))) {
                let _ = write!(out, "{at}");
            }
            out.push(',');
        }
        // A failure's message keeps to its field and its line.
        let outcome = s.outcome.replace(',', ";").replace(['\n', '\r'], " ");
        let _ = writeln!(out, "{},{},{outcome}", s.committed_us, s.failed_us);
    }
    std::fs::write(path, out).with_context(|| format!("writing {}", path.display()))
}

/// A run's transactions, read back from its transactions.csv.
#[derive(Debug)]
pub(crate) struct Recorded {
    /// Every row, in the file's order (the node's stamps are checked, not kept).
    pub samples: Vec<Sample>,
    /// The first send after the warm-up: where the summary's measured window starts, as
    /// near as the rows tell; None when every row is warm-up.
    pub measured_from_us: Option<u64>,
}

/// Reads back the transactions.csv at `path` that [`write_csv`] wrote. A file over
/// [`TRANSACTIONS_CSV_BYTES_MAX`], a row over [`CSV_ROW_BYTES_MAX`], another header, a
/// row that does not parse or a transaction that did not end once (committed or failed)
/// is an error naming the line.
pub(crate) fn read_csv(path: &Path) -> Result<Recorded> {
    read_csv_within(path, TRANSACTIONS_CSV_BYTES_MAX)
}

/// [`read_csv`], refusing a file over `bytes_max`.
fn read_csv_within(path: &Path, bytes_max: u64) -> Result<Recorded> {
    use std::io::{BufRead as _, Read as _};
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut reader = std::io::BufReader::new(file.take(bytes_max + 1));
    let header = csv_columns().join(",");
    let (mut samples, mut measured_from_us) = (Vec::new(), None::<u64>);
    let (mut line, mut bytes) = (String::new(), 0u64);
    for number in 1u64.. {
        line.clear();
        let read = (&mut reader)
            .take(CSV_ROW_BYTES_MAX + 1)
            .read_line(&mut line)
            .with_context(|| format!("reading {} line {number}", path.display()))?;
        if read == 0 {
            break;
        }
        bytes += read as u64;
        ensure!(
            bytes <= bytes_max,
            "{} is over {bytes_max} bytes: too large to read back",
            path.display()
        );
        ensure!(
            read as u64 <= CSV_ROW_BYTES_MAX,
            "{} line {number} is over {CSV_ROW_BYTES_MAX} bytes: not a row of runnel bench",
            path.display()
        );
        let row = line.trim_end_matches(['\n', '\r']);
        if number == 1 {
            ensure!(
                row == header,
                "{} is not a transactions.csv of this runnel bench (an older one wrote no \
                 failed_us): its header is {row:?}",
                path.display()
            );
            continue;
        }
        let (sample, warmup) =
            parse_row(row).with_context(|| format!("{} line {number}", path.display()))?;
        if !warmup {
            measured_from_us =
                Some(measured_from_us.map_or(sample.sent_us, |m| m.min(sample.sent_us)));
        }
        samples.push(sample);
    }
    ensure!(
        bytes > 0,
        "{} is empty: not a transactions.csv",
        path.display()
    );
    Ok(Recorded {
        samples,
        measured_from_us,
    })
}

/// One row of transactions.csv: the sample and whether it was sent in the warm-up.
fn parse_row(row: &str) -> Result<(Sample, bool)> {
    let fields: Vec<&str> = row.split(',').collect();
    ensure!(
        fields.len() == CSV_COLUMNS,
        "{} fields, not {CSV_COLUMNS}",
        fields.len()
    );
    let number = |i: usize| -> Result<u64> {
        fields[i].parse().with_context(|| {
            let columns = csv_columns();
            format!("{} is not a count of µs: {:?}", columns[i], fields[i])
        })
    };
    let warmup = match fields[2] {
        "true" => true,
        "false" => false,
        other => bail!("warmup is neither true nor false: {other:?}"),
    };
    for (i, stamp) in fields
        .iter()
        .enumerate()
        .skip(CSV_CLIENT_COLUMNS.len())
        .take(NODE_STAGES.len())
    {
        if !stamp.is_empty() {
            number(i)?;
        }
    }
    let end = CSV_COLUMNS - CSV_END_COLUMNS.len();
    let sample = Sample {
        tx_id: fields[0].to_string(),
        client: fields[1]
            .parse()
            .with_context(|| format!("client is not a number: {:?}", fields[1]))?,
        sent_us: number(3)?,
        endorsed_us: number(4)?,
        submitted_us: number(5)?,
        committed_us: number(end)?,
        failed_us: number(end + 1)?,
        outcome: fields[end + 2].to_string(),
    };
    ensure!(sample.sent_us > 0, "no time it was sent");
    ensure!(
        (sample.committed_us > 0) != (sample.failed_us > 0),
        "a transaction ends once, committed or failed: client_committed_us {} and \
         failed_us {}",
        sample.committed_us,
        sample.failed_us
    );
    Ok((sample, warmup))
}

/// The `q` quantile of `sorted` by nearest rank (the value at rank ⌈n·q⌉), as every
/// figure `runnel bench` reports it; `None` when there are no values.
pub(crate) fn nearest_rank<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    let rank = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len().max(1));
    sorted.get(rank - 1).copied()
}

/// p50, p95, p99, p99.7 and max of `values` (µs), and how many.
pub(crate) fn percentiles(mut values: Vec<u64>) -> Value {
    values.sort_unstable();
    let at = |q: f64| nearest_rank(&values, q);
    json!({
        "n": values.len(),
        "p50": at(0.5),
        "p95": at(0.95),
        "p99": at(0.99),
        "p99_7": at(0.997),
        "max": values.last(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let p = percentiles((1..=1000).collect());
        assert_eq!(
            (p["p50"].as_u64(), p["p99"].as_u64()),
            (Some(500), Some(990))
        );
        assert_eq!(
            (p["p99_7"].as_u64(), p["max"].as_u64()),
            (Some(997), Some(1000))
        );
        assert!(percentiles(Vec::new())["p50"].is_null());
    }

    /// A committed transaction, one that failed and one sent in the warm-up.
    fn recorded_samples() -> Vec<Sample> {
        vec![
            Sample {
                tx_id: "aa01".to_owned(),
                client: 3,
                sent_us: 2_000_100,
                endorsed_us: 2_000_400,
                committed_us: 2_001_900,
                outcome: "VALID".to_owned(),
                ..Sample::default()
            },
            Sample {
                client: 1,
                sent_us: 2_000_050,
                failed_us: 2_300_000,
                outcome: "UNAVAILABLE: connection refused, twice\nthen reset".to_owned(),
                ..Sample::default()
            },
            Sample {
                tx_id: "aa00".to_owned(),
                sent_us: 1_999_000,
                committed_us: 1_999_800,
                outcome: "MVCC_READ_CONFLICT".to_owned(),
                ..Sample::default()
            },
        ]
    }

    #[test]
    fn transactions_csv_reads_back_what_it_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TRANSACTIONS_CSV);
        let samples = recorded_samples();
        let stamps = HashMap::from([(
            "aa01".to_owned(),
            BTreeMap::from([
                (Stage::Received as i32, 2_000_500),
                (Stage::Notified as i32, 2_001_800),
            ]),
        )]);
        write_csv(&path, &samples, &stamps, 2_000_000).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        // A row a line, the code last (scripts match `,VALID$`), the node's stamps in place.
        assert_eq!(text.lines().count(), 4);
        assert!(text.lines().nth(1).unwrap().ends_with(",2001900,0,VALID"));
        assert!(text.contains(",2000500,,,,,,2001800,"));

        let read = read_csv(&path).unwrap();
        assert_eq!(read.measured_from_us, Some(2_000_050));
        assert_eq!(read.samples.len(), 3);
        for (got, wrote) in read.samples.iter().zip(&samples) {
            assert_eq!(
                (&got.tx_id, got.client, got.sent_us, got.endorsed_us),
                (&wrote.tx_id, wrote.client, wrote.sent_us, wrote.endorsed_us)
            );
            assert_eq!(
                (got.committed_us, got.failed_us, got.ended_us()),
                (wrote.committed_us, wrote.failed_us, wrote.ended_us())
            );
        }
        // A failure's message keeps to its field and its line.
        assert_eq!(
            read.samples[1].outcome,
            "UNAVAILABLE: connection refused; twice then reset"
        );
    }

    #[test]
    fn a_malformed_transactions_csv_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TRANSACTIONS_CSV);
        write_csv(&path, &recorded_samples()[..1], &HashMap::new(), 0).unwrap();
        let good = std::fs::read_to_string(&path).unwrap();
        let row = good.lines().nth(1).unwrap().to_owned();
        let with = |column: usize, value: &str| {
            let mut fields: Vec<&str> = row.split(',').collect();
            fields[column] = value;
            fields.join(",")
        };
        let error_of = |text: &str| {
            std::fs::write(&path, text).unwrap();
            format!("{:#}", read_csv(&path).unwrap_err())
        };
        for (bad, says) in [
            ("aa02,1,false,5".to_owned(), "4 fields, not 18"),
            (format!("{row},extra"), "19 fields, not 18"),
            (with(1, "-1"), "client is not a number: \"-1\""),
            (with(2, "maybe"), "warmup is neither true nor false"),
            (with(3, "soon"), "sent_us is not a count of µs: \"soon\""),
            (with(3, "0"), "no time it was sent"),
            (with(8, "x"), "received_us is not a count of µs"),
            (
                with(15, "18446744073709551616"),
                "client_committed_us is not a count",
            ),
            (with(16, "2001950"), "a transaction ends once"),
            (with(15, "0"), "a transaction ends once"),
            ("".to_owned(), "fields, not 18"),
        ] {
            let error = error_of(&format!("{good}{bad}\n"));
            assert!(error.contains("line 3"), "{bad}: {error}");
            assert!(error.contains(says), "{bad}: {error}");
        }
        // Another header (an older bench wrote no failed_us), nothing, or not text.
        let old = good.replace(",failed_us", "").replace(",0,VALID", ",VALID");
        assert!(error_of(&old).contains("not a transactions.csv of this runnel bench"));
        assert!(error_of("").contains("is empty"));
        std::fs::write(&path, [good.as_bytes(), b"aa\xff\n"].concat()).unwrap();
        let error = format!("{:#}", read_csv(&path).unwrap_err());
        assert!(error.contains("line 3"), "{error}");
        // Too long a row, too large a file, no file.
        let long = with(17, &"E".repeat(CSV_ROW_BYTES_MAX as usize));
        let error = error_of(&format!("{good}{long}\n{row}\n"));
        assert!(error.contains("line 3 is over 16384 bytes"), "{error}");
        std::fs::write(&path, format!("{good}{row}\n")).unwrap();
        assert_eq!(read_csv(&path).unwrap().samples.len(), 2);
        let error = format!(
            "{:#}",
            read_csv_within(&path, good.len() as u64).unwrap_err()
        );
        assert!(
            error.contains(&format!("is over {} bytes", good.len())),
            "{error}"
        );
        let error = format!("{:#}", read_csv(&dir.path().join("none.csv")).unwrap_err());
        assert!(error.contains("opening"), "{error}");
    }
}

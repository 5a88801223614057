//! Every fuzz target on stable: each file of `corpus/<target>/` (seeds, and the inputs
//! of crashes the fuzzer found once, kept as regressions), then a short smoke of inputs
//! mutated from them by a seeded xorshift generator (bit flips, truncations,
//! insertions, deletions, copies and splices), the same ones on every run. The long
//! runs are `scripts/fuzz.sh`'s.

use std::path::{Path, PathBuf};

use runnel_fuzz_targets::TARGETS;

/// Mutations each bounded to a few inputs per millisecond in a debug build; the record
/// file target writes and syncs a file per input and the Wasm and endorser targets
/// compile or sign, so they get fewer.
fn mutations(target: &str) -> usize {
    match target {
        "record_file" => 1_000,
        "wasm_module" | "signed_proposal" => 2_000,
        _ => 5_000,
    }
}

/// Largest input the mutator makes, in bytes.
const INPUT_BYTES_MAX: usize = 64 << 10;

/// xorshift64*: small, deterministic, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn new(name: &str) -> Rng {
        // FNV-1a of the target's name: each target gets its own fixed sequence.
        let seed = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        Rng(seed | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Values that sit on boundaries of lengths, tags and counts.
const INTERESTING: [u8; 8] = [0x00, 0x01, 0x02, 0x7f, 0x80, 0xfe, 0xff, 0x0a];

/// `input` changed by one to four mutations, some splicing in `other`.
fn mutate(rng: &mut Rng, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut bytes = input.to_vec();
    for _ in 0..=rng.below(4) {
        let len = bytes.len();
        match rng.below(7) {
            0 if len > 0 => {
                let at = rng.below(len);
                bytes[at] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let at = rng.below(len);
                bytes[at] = INTERESTING[rng.below(INTERESTING.len())];
            }
            2 => bytes.truncate(rng.below(len + 1)),
            3 => {
                let at = rng.below(len + 1);
                let count = 1 + rng.below(8);
                let inserted: Vec<u8> = (0..count).map(|_| rng.next() as u8).collect();
                bytes.splice(at..at, inserted);
            }
            4 if len > 0 => {
                let from = rng.below(len);
                let to = from + rng.below(len - from + 1).min(64);
                bytes.drain(from..to);
            }
            5 if len > 0 => {
                let from = rng.below(len);
                let to = from + rng.below(len - from + 1).min(64);
                let chunk = bytes[from..to].to_vec();
                let at = rng.below(len + 1);
                bytes.splice(at..at, chunk);
            }
            _ => {
                let cut = rng.below(len + 1);
                let from = rng.below(other.len() + 1);
                bytes.truncate(cut);
                bytes.extend_from_slice(&other[from..]);
            }
        }
        bytes.truncate(INPUT_BYTES_MAX);
    }
    bytes
}

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target)
}

/// The files of `target`'s corpus, sorted by name so every run mutates alike.
fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = corpus_dir(target);
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.expect("a directory entry").path();
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (path.display().to_string(), bytes)
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} holds no seed", dir.display());
    files
}

fn run(name: &str) {
    let target = TARGETS
        .iter()
        .find_map(|(n, target)| (*n == name).then_some(*target))
        .unwrap_or_else(|| panic!("no target {name}"));
    let files = corpus(name);
    for (path, bytes) in &files {
        eprintln!("{name}: {path}");
        target(bytes);
    }
    let mut rng = Rng::new(name);
    for i in 0..mutations(name) {
        let input = &files[rng.below(files.len())].1;
        let other = &files[rng.below(files.len())].1;
        let mutated = mutate(&mut rng, input, other);
        // The input is printed only if the target panics on it (the test then fails).
        let outcome = std::panic::catch_unwind(|| target(&mutated));
        if let Err(panic) = outcome {
            eprintln!("{name}: mutation {i} panicked on {} bytes:", mutated.len());
            eprintln!("{}", hex(&mutated));
            std::panic::resume_unwind(panic);
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn every_target_has_a_smoke_test() {
    let tested = [
        "transaction",
        "ordered_tx",
        "signed_proposal",
        "signed_seal",
        "byte_list",
        "policy",
        "record_file",
        "wasm_module",
        "rwset",
        "runnel_toml",
        "network_definition",
        "certificate",
    ];
    let targets: Vec<&str> = TARGETS.iter().map(|(name, _)| *name).collect();
    assert_eq!(targets, tested);
}

#[test]
fn transaction() {
    run("transaction");
}

#[test]
fn ordered_tx() {
    run("ordered_tx");
}

#[test]
fn signed_proposal() {
    run("signed_proposal");
}

#[test]
fn signed_seal() {
    run("signed_seal");
}

#[test]
fn byte_list() {
    run("byte_list");
}

#[test]
fn policy() {
    run("policy");
}

#[test]
fn record_file() {
    run("record_file");
}

#[test]
fn wasm_module() {
    run("wasm_module");
}

#[test]
fn rwset() {
    run("rwset");
}

#[test]
fn runnel_toml() {
    run("runnel_toml");
}

#[test]
fn network_definition() {
    run("network_definition");
}

#[test]
fn certificate() {
    run("certificate");
}

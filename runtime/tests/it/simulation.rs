//! What a call records: reads with versions, read-your-own-writes, range reads merged with
//! the call's own writes, events, context; the artifact cache; determinism across runtimes.

use std::sync::Arc;

use crate::common::*;
use runnel_runtime::{
    ContractEvent, InvokeError, KvRead, KvWrite, LimitExceeded, LoadError, MemoryState, RangeRead,
    StateView, Version, abi::encode_byte_list,
};

/// Constants at fixed offsets: "a"@0 "z"@1 "b"@2 "own"@3 "c"@6 "k1"@7 "v1"@9 "k2"@11.
const DATA: &str = r#"(data (i32.const 0) "azbownck1v1k2Ping")"#;

/// `scan`: iterate [a, z) to the end, writing `u32 len, entry` per entry at 4096.
/// `mixed`: put b=own, delete c, then scan. `first`: read one entry only.
/// `own_first`: put b=own, then read one entry of [b, z).
/// `rw`: put k1=v1, get k1 (own write), get k2, get a; return a's value.
const PROBE: &str = r#"
  (func $scan (result i32)
    (local $h i32) (local $len i64) (local $dst i32)
    (local.set $h (call $range_open (i32.const 0) (i32.const 1) (i32.const 1) (i32.const 1)))
    (local.set $dst (i32.const 4096))
    (block $done
      (loop $next
        (local.set $len (call $range_next (local.get $h)))
        (br_if $done (i64.eq (local.get $len) (i64.const -1)))
        (i32.store (local.get $dst) (i32.wrap_i64 (local.get $len)))
        (call $result_read (i32.add (local.get $dst) (i32.const 4)))
        (local.set $dst (i32.add (local.get $dst)
                          (i32.add (i32.const 4) (i32.wrap_i64 (local.get $len)))))
        (br $next)))
    (i32.sub (local.get $dst) (i32.const 4096)))
  (func (export "runnel_fn_scan") (param i32 i32)
    (call $return_value (i32.const 4096) (call $scan)))
  (func (export "runnel_fn_mixed") (param i32 i32)
    (call $state_put (i32.const 2) (i32.const 1) (i32.const 3) (i32.const 3))
    (call $state_delete (i32.const 6) (i32.const 1))
    (call $return_value (i32.const 4096) (call $scan)))
  (func (export "runnel_fn_first") (param i32 i32)
    (drop (call $range_next
      (call $range_open (i32.const 0) (i32.const 1) (i32.const 1) (i32.const 1)))))
  (func (export "runnel_fn_own_first") (param i32 i32)
    (call $state_put (i32.const 2) (i32.const 1) (i32.const 3) (i32.const 3))
    (drop (call $range_next
      (call $range_open (i32.const 2) (i32.const 1) (i32.const 1) (i32.const 1)))))
  (func (export "runnel_fn_rw") (param i32 i32)
    (local $len i64)
    (call $state_put (i32.const 7) (i32.const 2) (i32.const 9) (i32.const 2))
    (drop (call $state_get (i32.const 7) (i32.const 2)))
    (drop (call $state_get (i32.const 11) (i32.const 2)))
    (local.set $len (call $state_get (i32.const 0) (i32.const 1)))
    (call $result_read (i32.const 4096))
    (call $return_value (i32.const 4096) (i32.wrap_i64 (local.get $len))))
  (func (export "runnel_fn_ping") (param i32 i32)
    (call $event_emit (i32.const 13) (i32.const 4) (i32.const 0) (i32.const 1)))
  (func (export "runnel_fn_echo") (param $p i32) (param $l i32)
    (call $return_value (local.get $p) (local.get $l)))
  (func (export "runnel_fn_whoami") (param i32 i32)
    (local $len i64)
    (local.set $len (call $ctx_creator))
    (call $result_read (i32.const 4096))
    (call $return_value (i32.const 4096) (i32.wrap_i64 (local.get $len))))
  (func (export "runnel_fn_clock") (param i32 i32)
    (i64.store (i32.const 4096) (call $ctx_timestamp_ms))
    (call $return_value (i32.const 4096) (i32.const 8)))
"#;

fn probe() -> Vec<u8> {
    let imports = format!(
        r#"{IMPORTS}
  (import "runnel" "ctx_creator" (func $ctx_creator (result i64)))
  (import "runnel" "ctx_timestamp_ms" (func $ctx_timestamp_ms (result i64)))"#
    );
    module_with(
        &imports,
        r#"(func (export "runnel_abi_v1"))"#,
        &format!("{DATA}{PROBE}"),
    )
}

fn v(seq: u64) -> Option<Version> {
    Some(Version::from_seq(seq))
}

fn state() -> Arc<dyn StateView> {
    let mut s = MemoryState::new();
    s.insert("a", "1", Version::from_seq(1));
    s.insert("c", "3", Version::from_seq(2));
    s.insert("d", "4", Version::from_seq(3));
    s.insert("zz", "9", Version::from_seq(4));
    Arc::new(s)
}

/// Decodes the `scan` output into (key, value) pairs.
fn entries(mut out: &[u8]) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    while !out.is_empty() {
        let len = u32::from_le_bytes(out[..4].try_into().expect("len")) as usize;
        let entry = &out[4..4 + len];
        let key_len = u32::from_le_bytes(entry[..4].try_into().expect("key len")) as usize;
        let key = String::from_utf8(entry[4..4 + key_len].to_vec()).expect("utf8");
        let value = String::from_utf8(entry[4 + key_len..].to_vec()).expect("utf8");
        pairs.push((key, value));
        out = &out[4 + len..];
    }
    pairs
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn point_reads_record_versions_and_read_your_own_writes() {
    let rt = runtime(|_| {});
    let contract = rt.install(&probe()).expect("loads");
    let sim = call(&rt, &contract, "rw", &[], state()).expect("runs");
    assert_eq!(sim.result, b"1");
    // k1 was written before it was read: no read recorded. k2 is absent: no version.
    assert_eq!(
        sim.rwset.reads,
        vec![
            KvRead {
                key: b"a".to_vec(),
                version: v(1)
            },
            KvRead {
                key: b"k2".to_vec(),
                version: None
            },
        ]
    );
    assert_eq!(
        sim.rwset.writes,
        vec![KvWrite {
            key: b"k1".to_vec(),
            is_delete: false,
            value: b"v1".to_vec()
        }]
    );
    assert_eq!(sim.rwset.namespace, "test");
    assert!(sim.fuel_used > 0);
}

#[test]
fn range_reads_record_what_was_seen() {
    let rt = runtime(|_| {});
    let contract = rt.install(&probe()).expect("loads");
    let sim = call(&rt, &contract, "scan", &[], state()).expect("runs");
    assert_eq!(
        entries(&sim.result),
        pairs(&[("a", "1"), ("c", "3"), ("d", "4")])
    );
    assert_eq!(
        sim.rwset.range_reads,
        vec![RangeRead {
            start: b"a".to_vec(),
            end: Some(b"z".to_vec()),
            exhausted: true,
            last: Some(b"d".to_vec()),
            reads: vec![
                KvRead {
                    key: b"a".to_vec(),
                    version: v(1)
                },
                KvRead {
                    key: b"c".to_vec(),
                    version: v(2)
                },
                KvRead {
                    key: b"d".to_vec(),
                    version: v(3)
                },
            ],
        }]
    );

    let first = call(&rt, &contract, "first", &[], state()).expect("runs");
    let read = &first.rwset.range_reads[0];
    assert!(!read.exhausted, "stopped early");
    assert_eq!(
        read.reads,
        vec![KvRead {
            key: b"a".to_vec(),
            version: v(1)
        }]
    );
    assert_eq!(read.last.as_deref(), Some(&b"a"[..]));
}

#[test]
fn a_range_stopped_after_an_own_write_records_how_far_it_saw() {
    let rt = runtime(|_| {});
    let contract = rt.install(&probe()).expect("loads");
    // Writes b, then reads [b, z) once: the first entry is its own write, so no committed
    // key was read, but the call saw the range up to b and a re-check must cover it.
    let sim = call(&rt, &contract, "own_first", &[], state()).expect("runs");
    let read = &sim.rwset.range_reads[0];
    assert!(!read.exhausted);
    assert!(read.reads.is_empty());
    assert_eq!(read.start, b"b");
    assert_eq!(read.last.as_deref(), Some(&b"b"[..]));
}

#[test]
fn range_merges_the_calls_own_writes() {
    let rt = runtime(|_| {});
    let contract = rt.install(&probe()).expect("loads");
    let sim = call(&rt, &contract, "mixed", &[], state()).expect("runs");
    // b is the call's own write; c is deleted by the call, so hidden.
    assert_eq!(
        entries(&sim.result),
        pairs(&[("a", "1"), ("b", "own"), ("d", "4")])
    );
    // The committed keys seen, c included, are what a phantom check compares.
    let keys: Vec<&[u8]> = sim.rwset.range_reads[0]
        .reads
        .iter()
        .map(|r| r.key.as_slice())
        .collect();
    assert_eq!(keys, vec![&b"a"[..], b"c", b"d"]);
    assert_eq!(
        sim.rwset.writes,
        vec![
            KvWrite {
                key: b"b".to_vec(),
                is_delete: false,
                value: b"own".to_vec()
            },
            KvWrite {
                key: b"c".to_vec(),
                is_delete: true,
                value: vec![]
            },
        ]
    );
}

#[test]
fn range_scans_page_through_large_ranges_and_stop_at_the_limit() {
    let mut big = MemoryState::new();
    for i in 0..300u32 {
        big.insert(
            format!("k{i:04}"),
            format!("{i}"),
            Version::from_seq(u64::from(i) + 1),
        );
    }
    let big: Arc<dyn StateView> = Arc::new(big);
    let rt = runtime(|_| {});
    let contract = rt.install(&probe()).expect("loads");
    let sim = call(&rt, &contract, "scan", &[], big.clone()).expect("runs");
    assert_eq!(entries(&sim.result).len(), 300);
    assert_eq!(sim.rwset.range_reads[0].reads.len(), 300);

    let limited = runtime(|c| c.limits.range_scan_keys_max = 150);
    let contract = limited.install(&probe()).expect("loads");
    let err = call(&limited, &contract, "scan", &[], big).expect_err("over the limit");
    assert_eq!(
        err,
        InvokeError::Limit(LimitExceeded::RangeScan { limit: 150 })
    );
}

#[test]
fn events_arguments_and_context_reach_the_contract() {
    let rt = runtime(|_| {});
    let contract = rt.install(&probe()).expect("loads");
    let sim = call(&rt, &contract, "ping", &[], empty()).expect("runs");
    assert_eq!(
        sim.events,
        vec![ContractEvent {
            contract: "test".into(),
            name: "Ping".into(),
            payload: b"a".to_vec()
        }]
    );
    let echo = call(&rt, &contract, "echo", &[b"x", b"yz"], empty()).expect("runs");
    assert_eq!(echo.result, encode_byte_list(&[&b"x"[..], b"yz"]));
    let who = call(&rt, &contract, "whoami", &[], empty()).expect("runs");
    assert_eq!(
        who.result,
        encode_byte_list(&[&b"Org1"[..], b"client", b"alice", &[1, 2, 3]])
    );
    let clock = call(&rt, &contract, "clock", &[], empty()).expect("runs");
    assert_eq!(clock.result, 1_700_000_000_000u64.to_le_bytes());
}

#[test]
fn two_runtimes_produce_identical_payloads() {
    let a = runtime(|c| c.pooling = true);
    let b = runtime(|c| c.pooling = false);
    let ca = a.install(&probe()).expect("loads");
    let cb = b.install(&probe()).expect("loads");
    for function in ["rw", "scan", "mixed", "ping"] {
        let sa = call(&a, &ca, function, &[], state()).expect("runs");
        let sb = call(&b, &cb, function, &[], state()).expect("runs");
        assert_eq!(sa.payload_bytes(), sb.payload_bytes(), "{function}");
        assert_eq!(
            sa.fuel_used, sb.fuel_used,
            "{function}: fuel is deterministic"
        );
    }
}

#[test]
fn artifacts_are_reused_across_restarts_and_bad_ones_recompiled() {
    let dir = tempfile::tempdir().expect("tempdir");
    let wasm = probe();
    let hash = {
        let rt = runtime(|c| c.cache_dir = Some(dir.path().to_path_buf()));
        rt.install(&wasm).expect("compiles").hash()
    };
    let artifacts: Vec<_> = walk(dir.path())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    assert_eq!(artifacts.len(), 1, "one artifact written: {artifacts:?}");

    // A restarted runtime loads by hash alone, without the module's bytes.
    {
        let rt = runtime(|c| c.cache_dir = Some(dir.path().to_path_buf()));
        let contract = rt.load(&hash).expect("loaded from the cache");
        assert_eq!(contract.functions().len(), 9);
        call(&rt, &contract, "rw", &[], state()).expect("runs");
    }

    // A corrupted artifact is dropped and the module compiled again. (Artifacts are
    // mapped, so they are only ever replaced by rename, never rewritten in place.)
    let tmp = dir.path().join("garbage");
    std::fs::write(&tmp, b"garbage").expect("write");
    std::fs::rename(&tmp, &artifacts[0]).expect("corrupt");
    let rt = runtime(|c| c.cache_dir = Some(dir.path().to_path_buf()));
    assert_eq!(
        rt.load(&hash).expect_err("unusable"),
        LoadError::NotFound(hash)
    );
    let contract = rt.install(&wasm).expect("recompiled");
    call(&rt, &contract, "rw", &[], state()).expect("runs");
    assert!(std::fs::read(&artifacts[0]).expect("rewritten").len() > 100);

    // Another contract's valid artifact, with its digest, put under this one's name: its
    // digest binds it to its own code hash, so it is refused and this one recompiled.
    let other = module_with(
        &format!(
            r#"{IMPORTS}
  (import "runnel" "ctx_creator" (func $ctx_creator (result i64)))
  (import "runnel" "ctx_timestamp_ms" (func $ctx_timestamp_ms (result i64)))"#
        ),
        r#"(func (export "runnel_abi_v1"))"#,
        &format!(r#"{DATA}{PROBE}(func (export "runnel_fn_other") (param i32 i32))"#),
    );
    let other_hash = rt.install(&other).expect("compiles").hash();
    let other_artifact = artifacts[0].with_file_name(format!("{}.cwasm", other_hash.to_hex()));
    let digest = |artifact: &std::path::Path| artifact.with_extension("cwasm.sha256");
    assert!(
        digest(&artifacts[0]).is_file(),
        "a digest beside each artifact"
    );
    for (from, to) in [
        (digest(&other_artifact), digest(&artifacts[0])),
        (other_artifact.clone(), artifacts[0].clone()),
    ] {
        let tmp = dir.path().join("swap");
        std::fs::copy(&from, &tmp).expect("copy");
        std::fs::rename(&tmp, &to).expect("swap");
    }
    let rt = runtime(|c| c.cache_dir = Some(dir.path().to_path_buf()));
    assert_eq!(
        rt.load(&hash).expect_err("another contract's code"),
        LoadError::NotFound(hash)
    );
    let contract = rt.install(&wasm).expect("recompiled");
    assert_eq!(
        contract.functions().len(),
        9,
        "this contract, not the other"
    );

    // Without a cache directory nothing survives the runtime.
    let bare = runtime(|_| {});
    assert_eq!(
        bare.load(&hash).expect_err("not installed"),
        LoadError::NotFound(hash)
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

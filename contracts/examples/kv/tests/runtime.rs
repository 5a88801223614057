//! The built kv.wasm, run by the real runtime.

use runnel_runtime::testkit::TestChain;
use runnel_runtime::{InvokeError, KvRead, KvWrite, Version};

const ME: &str = "Org1/client/alice";

fn chain() -> TestChain {
    let wasm = runnel_wasm_build::wasm("kv").expect("kv builds");
    TestChain::new(&wasm, "kv").expect("kv loads")
}

#[test]
fn put_get_delete_through_the_runtime() {
    let mut chain = chain();
    let put = chain.submit(ME, "put", &["colour", "blue"]).expect("put");
    assert_eq!(
        put.rwset.writes,
        vec![KvWrite {
            key: b"colour".to_vec(),
            is_delete: false,
            value: b"blue".to_vec()
        }]
    );
    assert!(put.rwset.reads.is_empty(), "a blind write reads nothing");

    let get = chain.call(ME, "get", &["colour"]).expect("get");
    assert_eq!(get.result, br#""blue""#);
    assert_eq!(
        get.rwset.reads,
        vec![KvRead {
            key: b"colour".to_vec(),
            version: Some(Version::from_seq(1))
        }]
    );
    assert_eq!(
        chain.call(ME, "get", &["missing"]).expect("get").result,
        b"null"
    );

    let delete = chain.submit(ME, "delete", &["colour"]).expect("delete");
    assert!(delete.rwset.writes[0].is_delete);
    assert_eq!(
        chain.call(ME, "get", &["colour"]).expect("get").result,
        b"null"
    );
}

#[test]
fn range_returns_pairs_and_records_a_range_read() {
    let mut chain = chain();
    for (k, v) in [("a", "1"), ("b", "2"), ("c", "3"), ("d", "4")] {
        chain.submit(ME, "put", &[k, v]).expect("put");
    }
    let sim = chain.call(ME, "range", &["b", "d"]).expect("range");
    let text = String::from_utf8(sim.result.clone()).expect("utf8");
    assert_eq!(text, r#"[{"key":"b","value":"2"},{"key":"c","value":"3"}]"#);
    let read = &sim.rwset.range_reads[0];
    assert_eq!(
        (read.start.as_slice(), read.end.as_deref()),
        (&b"b"[..], Some(&b"d"[..]))
    );
    assert_eq!(read.last.as_deref(), Some(&b"c"[..]));
    assert_eq!(read.reads.len(), 2);
    assert!(read.exhausted);

    let all = chain.call(ME, "range", &["", ""]).expect("unbounded range");
    assert_eq!(all.rwset.range_reads[0].reads.len(), 4);
    assert_eq!(all.rwset.range_reads[0].end, None, "unbounded");
}

#[test]
fn bad_arguments_are_contract_errors() {
    let chain = chain();
    let err = chain
        .call(ME, "put", &["only-key"])
        .expect_err("one argument short");
    match err {
        InvokeError::Contract { message } => {
            assert!(message.contains("expected 2 arguments"), "{message}")
        }
        other => panic!("expected a contract error, got {other}"),
    }
    let err = chain.call(ME, "nope", &[]).expect_err("unknown function");
    assert!(matches!(err, InvokeError::FunctionNotFound { .. }));
}

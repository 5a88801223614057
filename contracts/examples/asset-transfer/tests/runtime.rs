//! The built asset_transfer.wasm, run by the real runtime.

use runnel_runtime::testkit::TestChain;
use runnel_runtime::{InvokeError, RuntimeConfig};

const ME: &str = "Org1/client/alice";

fn wasm() -> Vec<u8> {
    runnel_wasm_build::wasm("asset-transfer").expect("asset-transfer builds")
}

#[test]
fn fabric_basic_flow() {
    let mut chain = TestChain::new(&wasm(), "basic").expect("loads");
    let init = chain.submit(ME, "InitLedger", &[]).expect("init");
    assert_eq!(init.rwset.writes.len(), 6);

    let all = chain.call(ME, "GetAllAssets", &[]).expect("all");
    let text = String::from_utf8(all.result).expect("utf8");
    assert_eq!(text.matches(r#""ID":"#).count(), 6, "{text}");

    chain
        .submit(ME, "CreateAsset", &["asset7", "purple", "8", "Ana", "900"])
        .expect("create");
    let read = chain.call(ME, "ReadAsset", &["asset7"]).expect("read");
    assert_eq!(
        String::from_utf8(read.result).expect("utf8"),
        r#"{"AppraisedValue":900,"Color":"purple","ID":"asset7","Owner":"Ana","Size":8}"#
    );
    let old = chain
        .submit(ME, "TransferAsset", &["asset7", "Bo"])
        .expect("transfer");
    assert_eq!(old.result, br#""Ana""#);
    assert_eq!(
        chain
            .call(ME, "AssetExists", &["asset7"])
            .expect("exists")
            .result,
        b"true"
    );
    chain
        .submit(ME, "DeleteAsset", &["asset7"])
        .expect("delete");
    assert_eq!(
        chain
            .call(ME, "AssetExists", &["asset7"])
            .expect("exists")
            .result,
        b"false"
    );

    let err = chain.call(ME, "ReadAsset", &["asset7"]).expect_err("gone");
    assert_eq!(
        err,
        InvokeError::Contract {
            message: "the asset asset7 does not exist".into()
        }
    );
    let err = chain
        .call(ME, "CreateAsset", &["asset1", "red", "1", "X", "1"])
        .expect_err("exists");
    assert_eq!(
        err,
        InvokeError::Contract {
            message: "the asset asset1 already exists".into()
        }
    );
}

#[test]
fn endorsers_on_different_runtimes_agree_byte_for_byte() {
    let pooled = RuntimeConfig {
        pooling: true,
        ..RuntimeConfig::default()
    };
    let on_demand = RuntimeConfig {
        pooling: false,
        ..RuntimeConfig::default()
    };
    let mut a = TestChain::with_config(&wasm(), "basic", pooled).expect("loads");
    let mut b = TestChain::with_config(&wasm(), "basic", on_demand).expect("loads");
    for chain in [&mut a, &mut b] {
        chain.submit(ME, "InitLedger", &[]).expect("init");
    }
    for (function, args) in [
        ("GetAllAssets", &[][..]),
        ("TransferAsset", &["asset3", "Zoe"][..]),
        ("UpdateAsset", &["asset2", "red", "5", "Max", "100"][..]),
    ] {
        let x = a.call(ME, function, args).expect("a");
        let y = b.call(ME, function, args).expect("b");
        assert_eq!(x.payload_bytes(), y.payload_bytes(), "{function}");
        assert_eq!(x.fuel_used, y.fuel_used, "{function}");
    }
}

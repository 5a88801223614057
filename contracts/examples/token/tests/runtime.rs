//! The built token.wasm, run by the real runtime.

use runnel_runtime::InvokeError;
use runnel_runtime::testkit::TestChain;

const ADMIN: &str = "Org1/admin/minter";
const ALICE: &str = "Org1/client/alice";

fn chain() -> TestChain {
    let wasm = runnel_wasm_build::wasm("token").expect("token builds");
    TestChain::new(&wasm, "token").expect("token loads")
}

fn message(err: InvokeError) -> String {
    match err {
        InvokeError::Contract { message } => message,
        other => panic!("expected a contract error, got {other}"),
    }
}

#[test]
fn mint_transfer_and_balances() {
    let mut chain = chain();
    let mint = chain
        .submit(ADMIN, "mint", &["Org1/alice", "100"])
        .expect("mint");
    assert_eq!(mint.events.len(), 1);
    assert_eq!(mint.events[0].name, "Transfer");
    assert_eq!(mint.events[0].contract, "token");

    let transfer = chain
        .submit(ALICE, "transfer", &["Org1/bob", "30"])
        .expect("transfer");
    let payload = String::from_utf8(transfer.events[0].payload.clone()).expect("utf8");
    assert!(payload.contains(r#""from":"Org1/alice""#), "{payload}");
    assert!(payload.contains(r#""to":"Org1/bob""#), "{payload}");
    assert!(payload.contains(r#""amount":30"#), "{payload}");
    // A transfer reads both balances and writes both.
    assert_eq!(transfer.rwset.writes.len(), 2);

    assert_eq!(
        chain
            .call(ALICE, "balance", &["Org1/alice"])
            .expect("balance")
            .result,
        b"70"
    );
    assert_eq!(
        chain
            .call(ALICE, "balance", &["Org1/bob"])
            .expect("balance")
            .result,
        b"30"
    );
    assert_eq!(
        chain
            .call(ALICE, "total_supply", &[])
            .expect("supply")
            .result,
        b"100"
    );
    assert_eq!(
        chain.call(ALICE, "whoami", &[]).expect("whoami").result,
        br#""Org1/alice""#
    );
}

#[test]
fn refusals_are_contract_errors_with_their_reason() {
    let mut chain = chain();
    let err = chain
        .call(ALICE, "mint", &["Org1/alice", "5"])
        .expect_err("not an admin");
    assert!(message(err).contains("admin"));
    chain
        .submit(ADMIN, "mint", &["Org1/alice", "10"])
        .expect("mint");
    let err = chain
        .call(ALICE, "transfer", &["Org1/bob", "11"])
        .expect_err("too much");
    assert_eq!(message(err), "insufficient balance: have 10, need 11");
    let err = chain
        .call(ALICE, "transfer", &["Org1/bob", "0"])
        .expect_err("zero");
    assert!(message(err).contains("greater than 0"));
    let err = chain
        .call(ALICE, "transfer", &["Org1/bob", "lots"])
        .expect_err("not a number");
    assert!(message(err).contains("amount"));
    // Nothing of the refused calls reached the state.
    assert_eq!(
        chain
            .call(ALICE, "balance", &["Org1/alice"])
            .expect("balance")
            .result,
        b"10"
    );
}

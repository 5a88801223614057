//! Fixtures the node crates' integration tests share: one three-organisation network and
//! the example contracts built to Wasm, each made once per test binary.

pub mod bench;
pub mod certs;
pub mod orderer;

use std::sync::OnceLock;

use runnel_ledger::identity::{NetworkIdentities, Role, Signer};
use time::Duration;

/// The organisations of [`network`].
pub const ORGS: [&str; 3] = ["Org1", "Org2", "Org3"];

/// CAs and standard identities for [`ORGS`], valid for a day.
pub fn network() -> &'static NetworkIdentities {
    static NETWORK: OnceLock<NetworkIdentities> = OnceLock::new();
    NETWORK.get_or_init(|| NetworkIdentities::generate(&ORGS, Duration::days(1)).unwrap())
}

/// The signer of `org`'s identity with `role` in [`network`].
pub fn signer(org: &str, role: Role) -> Signer {
    network().org(org).unwrap().signer(role).unwrap()
}

/// The kv example contract, built to Wasm.
pub fn kv_wasm() -> &'static [u8] {
    static WASM: OnceLock<Vec<u8>> = OnceLock::new();
    WASM.get_or_init(|| runnel_wasm_build::wasm("kv").expect("kv builds"))
}

/// The token example contract, built to Wasm.
pub fn token_wasm() -> &'static [u8] {
    static WASM: OnceLock<Vec<u8>> = OnceLock::new();
    WASM.get_or_init(|| runnel_wasm_build::wasm("token").expect("token builds"))
}

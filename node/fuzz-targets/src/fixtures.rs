//! What the targets share, made once per process: the network, a runtime with small
//! limits, and an endorser on an empty state. A fuzzer runs millions of inputs in one
//! process, so nothing here may be built per input.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use runnel_ledger::endorser::{Endorser, EndorserConfig};
use runnel_ledger::identity::{Msp, Role, Signer};
use runnel_ledger::records::SyncMode;
use runnel_ledger::store::WorldState;
use runnel_runtime::{Limits, Runtime, RuntimeConfig};

/// The channel the endorser serves.
pub(crate) const CHANNEL: &str = "main";

/// The organisation whose identities sign and endorse.
const ORG: &str = "Org1";

/// Prefix of the state directories endorsers open, one per process.
const STATE_DIR_PREFIX: &str = "runnel-fuzz-state-";

/// The network's MSP (runnel-testing's three organisations), shared with the endorser.
pub(crate) fn msp() -> &'static Arc<Msp> {
    static MSP: OnceLock<Arc<Msp>> = OnceLock::new();
    MSP.get_or_init(|| Arc::new(runnel_testing::network().msp().expect("the network's MSP")))
}

/// Org1's signer with `role`.
pub(crate) fn signer(role: Role) -> &'static Signer {
    static SIGNERS: OnceLock<Vec<(Role, Signer)>> = OnceLock::new();
    let signers = SIGNERS.get_or_init(|| {
        Role::ALL
            .iter()
            .map(|&role| (role, runnel_testing::signer(ORG, role)))
            .collect()
    });
    signers
        .iter()
        .find_map(|(r, signer)| (*r == role).then_some(signer))
        .expect("every role has a signer")
}

/// The public key the endorser signs with (Org1's peer).
pub(crate) fn endorser_key() -> [u8; 32] {
    signer(Role::Peer).public_key()
}

/// A runtime with limits small enough that a fuzzed module cannot make one input slow:
/// no instance pool (no address space reserved per slot), 1 MiB of memory, a million
/// units of fuel per call.
pub(crate) fn runtime() -> &'static Arc<Runtime> {
    static RUNTIME: OnceLock<Arc<Runtime>> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        let config = RuntimeConfig {
            limits: Limits {
                fuel_per_call: 1_000_000,
                memory_bytes_max: 1 << 20,
                wall_clock_ms_max: 1_000,
                ..Limits::default()
            },
            module_bytes_max: 1 << 20,
            instances_max: 4,
            pooling: false,
            ..RuntimeConfig::default()
        };
        Arc::new(Runtime::new(config).expect("a runtime"))
    })
}

/// Org1's peer endorsing on an empty state kept in a directory of this process's own.
/// Endorsing writes nothing, so the state stays empty whatever the inputs.
pub(crate) fn endorser() -> &'static Endorser {
    static ENDORSER: OnceLock<Endorser> = OnceLock::new();
    ENDORSER.get_or_init(|| {
        let dir = state_dir();
        let state = WorldState::open(&dir, SyncMode::Data).expect("an empty state");
        Endorser::new(
            EndorserConfig::default(),
            msp().clone(),
            runnel_testing::signer(ORG, Role::Peer),
            runtime().clone(),
            Arc::new(state),
        )
        .expect("an endorser")
    })
}

/// A fresh state directory for this process. A static is never dropped, so the directory
/// outlives the process: the ones left by processes that have exited are removed first.
fn state_dir() -> PathBuf {
    let temp = std::env::temp_dir();
    if let Ok(entries) = std::fs::read_dir(&temp) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(STATE_DIR_PREFIX)) else {
                continue;
            };
            if !Path::new("/proc").join(pid).exists() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    let dir = temp.join(format!("{STATE_DIR_PREFIX}{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a state directory");
    dir
}
